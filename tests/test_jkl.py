"""Local scores from .jkl files (bigbn.scores.jkl, `bigbn scores`, `bigbn run --scores`)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import naive
from bigbn.cli.main import main
from bigbn.errors import DataError, OptionError, WorkdirError
from bigbn.kernels.families import family_masks, unsqueeze
from bigbn.scores.jkl import read_jkl, write_jkl
from bigbn.store.workdir import Workdir
from test_cli import assert_one_line_error


def _discrete(tmp_path):
    rng = np.random.default_rng(8)
    m = 80
    a = rng.integers(0, 2, m)
    b = a ^ (rng.random(m) < 0.15)
    c = rng.integers(0, 3, m)
    d = (b + (c > 0)) % 2 ^ (rng.random(m) < 0.1)
    e = rng.integers(0, 2, m)
    path = tmp_path / "d.csv"
    np.savetxt(path, np.c_[a, b, c, d, e], fmt="%d", delimiter=",", header="a,b,c,d,e", comments="")
    return path


def _continuous(tmp_path):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(60, 4))
    X[:, 1] += X[:, 0]
    X[:, 2] += 0.5 * X[:, 1]
    path = tmp_path / "c.csv"
    np.savetxt(path, X, fmt="%.12f", delimiter=",", header="p,q,r,s", comments="")
    return path


@pytest.mark.parametrize("score, prior", [("bdeu", "koivisto-sood"), ("k2", "uniform"),
                                          ("bge", "koivisto-sood")])
def test_bigbn_scores_written_and_read_back_give_the_same_posterior_bit_for_bit(tmp_path, score, prior):
    data = _continuous(tmp_path) if score == "bge" else _discrete(tmp_path)
    out = tmp_path / "s.jkl"
    r = CliRunner().invoke(main, ["scores", str(data), "-k", "3", "--score", score,
                                  "--structure-prior", prior, "--out", str(out)])
    assert r.exit_code == 0, r.output
    ref = bigbn.learn(data, score=score, structure_prior=prior, max_parents=3, workdir=tmp_path / "a")
    got = bigbn.learn(scores=out, max_parents=3, workdir=tmp_path / "b")
    assert np.array_equal(got.posterior, ref.posterior)
    assert got.log_marginal == ref.log_marginal
    assert np.array_equal(got.parent_set_posterior, ref.parent_set_posterior)
    assert got.names == ref.names
    assert np.array_equal(Workdir(tmp_path / "a").read("beta", slice(None)),
                          Workdir(tmp_path / "b").read("beta", slice(None)))
    # families beyond k are impossible: the file of k = 3 read at k = 2 is the run at k = 2
    # (the Koivisto-Sood ρ depends on |G| and n only)
    ref2 = bigbn.learn(data, score=score, structure_prior=prior, max_parents=2)
    got2 = bigbn.learn(scores=out, max_parents=2)
    assert np.array_equal(got2.posterior, ref2.posterior)
    # and through the CLI: the same edges.csv
    for args, wd in ((["run", str(data), "--score", score, "--structure-prior", prior], "c"),
                     (["run", "--scores", str(out)], "d")):
        r = CliRunner().invoke(main, [*args, "-k", "3", "-q", "-w", str(tmp_path / wd)])
        assert r.exit_code == 0, r.output
    assert (tmp_path / "c" / "edges.csv").read_bytes() == (tmp_path / "d" / "edges.csv").read_bytes()
    # a run on a file resumes, reports its status and samples like any other
    again = CliRunner().invoke(main, ["run", "--scores", str(out), "-k", "3", "-w", str(tmp_path / "d")])
    assert again.exit_code == 0 and "already finished" in again.output, again.output
    status = CliRunner().invoke(main, ["status", "-w", str(tmp_path / "d")])
    assert status.exit_code == 0 and "score jkl" in status.output, status.output
    s = bigbn.sample(tmp_path / "d", samples=50, seed=1)
    assert s.parents.shape == (50, got.posterior.shape[0])


JKL = """3
A 3
-10.5 0
-7.25 1 B
-6.0 2 B C
B 2
-4.0 0
-5.5 1 C

C 2
-3.0 0
-2.0 1 A
"""


def test_a_hand_written_file_against_enumeration(tmp_path):
    f = tmp_path / "h.jkl"
    f.write_text(JKL)
    sf = read_jkl(f)
    assert sf.names == ("A", "B", "C")
    beta = sf.local(2)
    masks = family_masks(2, 2)
    expect = {("A", ()): -10.5, ("A", ("B",)): -7.25, ("A", ("B", "C")): -6.0,
              ("B", ()): -4.0, ("B", ("C",)): -5.5, ("C", ()): -3.0, ("C", ("A",)): -2.0}
    for i, name in enumerate(sf.names):
        for fidx, sq in enumerate(masks.tolist()):
            ps = tuple(sf.names[b] for b in range(3) if unsqueeze(sq, i) >> b & 1)
            assert beta[i, fidx] == expect.get((name, ps), -np.inf)
    res = bigbn.learn(scores=f, max_parents=2, workdir=tmp_path / "w")
    P, log_px = naive.edges_by_dags(beta, 2)
    np.testing.assert_allclose(res.posterior, P, rtol=0, atol=1e-12)
    assert res.log_marginal == pytest.approx(log_px, rel=1e-14)
    assert res.posterior[1, 2] == res.posterior[0, 1] == 0.0  # absent = impossible
    assert 0.1 < res.posterior[0, 2] < 0.9 and 0.01 < res.posterior[2, 1] < 0.9
    # the same file by indices
    g = tmp_path / "i.jkl"
    g.write_text(JKL.replace("A", "0").replace("B", "1").replace("C", "2"))
    by_index = bigbn.learn(scores=g, max_parents=2)
    assert by_index.names == ("0", "1", "2")
    assert np.array_equal(by_index.posterior, res.posterior)
    # at k = 1 the two-parent family of A is impossible
    assert read_jkl(f).local(1)[0].tolist() == [-10.5, -7.25, -np.inf]


def test_names_with_leading_zeros_are_names_not_indices(tmp_path):
    """Blocks '00' and '01' were taken for indices 0 and 1 and the variables renamed "0" and
    "1": a knowledge file naming '00' was then refused, and the results named variables the
    file does not have. They are names; '0' and '1' are indices as before."""
    f = tmp_path / "z.jkl"
    f.write_text("2\n00 1\n-1 0\n01 2\n-2 0\n-1 1 00\n")
    assert read_jkl(f).names == ("00", "01")
    res = bigbn.learn(scores=f, max_parents=1, forbidden=[("00", "01")])
    assert res.names == ("00", "01") and res.posterior[0, 1] == 0.0
    g = tmp_path / "i.jkl"
    g.write_text("2\n1 1\n-1 0\n0 2\n-2 0\n-1 1 1\n")
    assert read_jkl(g).names == ("0", "1")


BAD = {
    "empty": ("", ["empty file"]),
    "bad count": ("x\n", ["line 1", "number of variables"]),
    "one variable": ("1\nA 1\n-1 0\n", ["line 1", "≥ 2"]),
    "missing block": ("3\nA 1\n-1 0\nB 1\n-2 0\n", ["2 blocks", "says 3 variables"]),
    "count too large": ("2\nA 3\n-1 0\n-2 1 B\nB 1\n-1 0\n", ["line 5", "block of 'A'"]),
    "count too small": ("2\nA 1\n-1 0\n-2 1 B\nB 1\n-1 0\n", ["line 4", "block header",
                                                              "block of 'A' on line 2"]),
    "file ends in a block": ("2\nA 1\n-1 0\nB 2\n-1 0\n", ["block of 'B' (line 4) declares 2",
                                                           "ends after 1"]),
    "zero count": ("2\nA 0\nB 1\n-1 0\n", ["line 2", "block of 'A' declares 0 parent sets"]),
    "superscript count": ("2\nA ²\n-1 0\nB 1\n-1 0\n", ["line 2", "block header", "A ²"]),
    "superscript variables": ("²\nA 1\n-1 0\nB 1\n-1 0\n", ["line 1", "number of variables"]),
    "superscript size": ("2\nA 1\n-1 ¹ B\nB 1\n-1 0\n", ["line 3", "score size parents"]),
    "underscore score": ("2\nA 1\n-1_0 0\nB 1\n-1 0\n", ["line 3", "'-1_0' is not a decimal number"]),
    "other digits": ("2\nA 1\n-١٢ 0\nB 1\n-1 0\n", ["line 3", "is not a decimal number"]),
    "text after": ("2\nA 1\n-1 0\nB 1\n-1 0\nC 1\n", ["line 6", "after the last of the 2 blocks"]),
    "NaN score": ("2\nA 1\nnan 0\nB 1\n-1 0\n", ["line 3", "'nan' is not a finite number"]),
    "inf score": ("2\nA 1\n-inf 0\nB 1\n-1 0\n", ["line 3", "not a finite number"]),
    "not a number": ("2\nA 1\nhigh 0\nB 1\n-1 0\n", ["line 3", "score size parents"]),
    "wrong size": ("2\nA 1\n-1 2 B\nB 1\n-1 0\n", ["line 3", "says 2 parents but lists 1"]),
    "wrong size 1": ("3\nA 1\n-1 1 B C\nB 1\n-1 0\nC 1\n-1 0\n", ["line 3", "says 1 parent but lists 2"]),
    "unknown name": ("2\nA 1\n-1 1 Z\nB 1\n-1 0\n", ["line 3", "unknown parent 'Z'"]),
    "unknown index": ("2\n0 1\n-1 1 5\n1 1\n-1 0\n", ["line 3", "unknown parent '5'", "0..1"]),
    "own parent": ("2\nA 1\n-1 1 A\nB 1\n-1 0\n", ["line 3", "its own parent"]),
    "parent twice": ("3\nA 1\n-1 2 B B\nB 1\n-1 0\nC 1\n-1 0\n", ["line 3", "parent 'B' listed twice"]),
    "set twice": ("2\nA 2\n-1 1 B\n-2 1 B\nB 1\n-1 0\n", ["line 4", "listed twice in its block"]),
    "block twice": ("2\nA 1\n-1 0\nA 1\n-1 0\n", ["line 4", "second block for variable 'A'"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_files_get_one_line_errors(tmp_path, case):
    text, needles = BAD[case]
    f = tmp_path / "bad.jkl"
    f.write_text(text)
    with pytest.raises(DataError):
        read_jkl(f)
    r = CliRunner().invoke(main, ["run", "--scores", str(f), "-w", str(tmp_path / "w"), "-q"])
    assert_one_line_error(r, str(f), *needles)
    assert not (tmp_path / "w").exists()


def test_options_that_do_not_apply_to_file_scores(tmp_path):
    f = tmp_path / "h.jkl"
    f.write_text(JKL)
    g = tmp_path / "g.jkl"
    g.write_text("2\nA 1\n-1 1 B\nB 1\n-1 0\n")
    data = _discrete(tmp_path)
    for args, needle in ((["--scores", str(f), str(data)], "not both"),
                         (["--scores", str(f), "--ess", "2"], "ess (--ess) is a parameter of the bdeu score"),
                         (["--scores", str(f), "--score", "k2"], "--score does not apply"),
                         (["--scores", str(f), "--structure-prior", "koivisto-sood"],
                          "bigbn adds no structure prior"),
                         (["--scores", str(g), "-k", "0"], "variable 'A' has no parent set of at most 0")):
        r = CliRunner().invoke(main, ["run", *args, "-w", str(tmp_path / "w"), "-q"])
        assert_one_line_error(r, needle)
    r = CliRunner().invoke(main, ["run", "-w", str(tmp_path / "w")])
    assert r.exit_code == 2 and "give DATA" in r.output
    with pytest.raises(OptionError, match="give data or scores"):
        bigbn.learn(data, scores=f)
    with pytest.raises(OptionError, match="whitespace"):
        write_jkl(tmp_path / "x.jkl", ["a b", "c"], np.zeros((2, 2)), 1)
    with pytest.raises(OptionError, match="causal effects need the data"):
        bigbn.effects(bigbn.learn(scores=f, max_parents=2, workdir=tmp_path / "e"), data)


def test_a_block_of_zero_parent_sets_is_blamed_on_its_own_variable(tmp_path):
    f = tmp_path / "z.jkl"
    f.write_text("3\nA 1\n-1 0\nB 0\nC 1\n-1 0\n")
    with pytest.raises(DataError) as e:
        read_jkl(f)
    assert "line 4" in str(e.value) and "'B' declares 0" in str(e.value)
    assert "'A'" not in str(e.value)  # 0f74746 asked whether A's block declared the right count


# ------------------------------------------------------------------ scores of any magnitude

def _wide_scores(rng, n=5, k=2):
    """Per node {full parent mask: decimal text}: every family of at most k parents, random
    scores with 6 decimals plus a random per-node constant up to 1e15 (with 6 decimals of its
    own: more digits than float64 holds there), and one huge score per node: +1e20 on A's
    empty set (A has no parents, with probability 1), and far below everything on one
    non-empty family of each other node (it cannot matter)."""
    from decimal import Decimal

    out = []
    for i in range(n):
        shift = Decimal(int(rng.integers(-10**15, 10**15))) + Decimal(int(rng.integers(0, 10**6))) / 10**6
        fam = {}
        for sq in family_masks(n - 1, k).tolist():
            fam[unsqueeze(sq, i)] = str(Decimal(int(rng.integers(-12_000_000, 0))) / 10**6 + shift)
        out.append(fam)
    out[0][0] = "1e20"
    for i, huge in zip(range(1, n), ("-1e300", "-3.5e17", "-7.25e200", "-1e50")):
        g = sorted(out[i])[-1 - i]  # some family with parents
        assert g != 0
        out[i][g] = huge
    return out


def _write(path, names, fams):
    lines = [str(len(names))]
    for i, fam in enumerate(fams):
        lines.append(f"{names[i]} {len(fam)}")
        for g, text in fam.items():
            ps = [names[b] for b in range(len(names)) if g >> b & 1]
            lines.append(" ".join([text, str(len(ps)), *ps]))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("tiers", [None, [["A", "B"], ["C", "D", "E"]]])
def test_scores_of_any_magnitude_against_exact_arithmetic(tmp_path, tiers):
    """The posterior of the file's scores as written, whatever their size: 0f74746 gave
    p(u→v) = p(v→u) = 1 here. The reference sums every DAG in 1300-bit arithmetic from the
    decimal text; bigbn must match it to 1e-12 (its float64 sums of e^(β+γ−L) over ≤ 5
    nodes), and log p(data) to float64's rounding of a number near 1e20."""
    names = ("A", "B", "C", "D", "E")
    fams = _wide_scores(np.random.default_rng(37))
    f = tmp_path / "wide.jkl"
    _write(f, names, fams)
    ids = None if tiers is None else [[names.index(v) for v in t] for t in tiers]
    P, fam_post, log_px = naive.exact_by_dags(fams, 2, tiers=ids)
    res = bigbn.learn(scores=f, max_parents=2, tiers=tiers, workdir=tmp_path / "w")
    np.testing.assert_allclose(res.posterior, P, rtol=0, atol=1e-12)
    assert np.all(res.posterior + res.posterior.T <= 1 + 1e-12)
    assert ((P > 0.05) & (P < 0.95)).sum() >= 4  # not an answer of 0s and 1s
    assert res.log_marginal == pytest.approx(float(log_px), rel=2e-16)
    assert res.parent_sets("A") == [((), 1.0)]
    for v, name in enumerate(names):
        got = {sum(1 << names.index(u) for u in ps): p for ps, p in res.parent_sets(name)}
        want = {g: p for (w, g), p in fam_post.items() if w == v and p > 0}
        assert set(got) <= set(want)
        for g, p in want.items():
            assert got.get(g, 0.0) == pytest.approx(p, rel=1e-9, abs=1e-13), (name, g)


def test_a_constant_added_to_every_score_changes_only_log_p(tmp_path):
    """Per-node constants leave the posterior as it is, exactly as the file says them."""
    from decimal import Decimal

    rng = np.random.default_rng(5)
    names = ("A", "B", "C", "D")
    base = [{unsqueeze(sq, i): Decimal(int(rng.integers(-9_000_000, 0))) / 10**6
             for sq in family_masks(3, 2).tolist()} for i in range(4)]
    runs = []
    for c in ("0", "123456789012.345678", "-98765432109876543.21"):
        f = tmp_path / f"c{len(runs)}.jkl"
        _write(f, names, [{g: str(x + Decimal(c)) for g, x in fam.items()} for fam in base])
        runs.append(bigbn.learn(scores=f, max_parents=2))
    for r, c in zip(runs[1:], (123456789012.345678, -98765432109876543.21)):
        np.testing.assert_allclose(r.posterior, runs[0].posterior, rtol=0, atol=1e-13)
        assert r.log_marginal == pytest.approx(runs[0].log_marginal + 4 * c, rel=1e-15)


def test_scores_float64_cannot_tell_apart_are_refused(tmp_path):
    """B's best parent set scores 1e20 and its empty set 0: B's other families are 1e20
    below its best but can still matter (its empty set is not far above them), and float64
    spaces numbers there 16384 apart. Refused with one line, at once."""
    f = tmp_path / "coarse.jkl"
    f.write_text("3\nA 1\n-1 0\nB 3\n0 0\n1e20 1 A\n-3.5 1 C\nC 1\n-2 0\n")
    with pytest.raises(DataError, match="scores of 'B' reach 1e\\+20 nats below its best"):
        bigbn.learn(scores=f, max_parents=1, workdir=tmp_path / "w")
    r = CliRunner().invoke(main, ["run", "--scores", str(f), "-k", "1", "-w", str(tmp_path / "w"), "-q"])
    assert_one_line_error(r, str(f), "too coarse for an exact answer")
    assert not (tmp_path / "w" / "run.json").exists()


@pytest.mark.parametrize("how", ["above k", "forbidden", "tiers", "max parents 0"])
def test_a_huge_score_of_a_family_the_run_cannot_use_leaves_the_others_exact(tmp_path, how):
    """A's largest score (1e20) is of a family the run rules out. The reader shifted A's
    scores by it, so -10 and -12.5 became the same float64 near -1e20 and the run gave
    p(A -> B) = 0.711 and log p(data) = -2.56 for 0.780 and -12.65, with no error. The run
    must be the run on the file without that line."""
    big = {"above k": "1e20 2 B C", "forbidden": "1e20 1 C", "tiers": "1e20 1 C",
           "max parents 0": "1e20 1 C"}[how]
    body = "A {}\n{}-10 0\n-12.5 1 B\nB 2\n-5 0\n-3 1 A\nC 2\n-1 0\n-1.5 1 A\n"
    f, ref = tmp_path / "big.jkl", tmp_path / "ref.jkl"
    f.write_text("3\n" + body.format(3, big + "\n"))
    ref.write_text("3\n" + body.format(2, ""))
    kw = {"forbidden": {"forbidden": [("C", "A")]}, "tiers": {"tiers": [["A", "B"], ["C"]]},
          "max parents 0": {"knowledge": bigbn.Knowledge(max_parents={"A": 0})}}.get(how, {})
    got = bigbn.learn(scores=f, max_parents=1, **kw)
    want = bigbn.learn(scores=ref, max_parents=1, **kw)
    np.testing.assert_allclose(got.posterior, want.posterior, rtol=0, atol=1e-14)
    assert got.log_marginal == pytest.approx(want.log_marginal, rel=1e-15)
    assert 0.05 < got.posterior[0, 1] < 0.95


def test_huge_scores_reach_the_finished_run_and_status(tmp_path):
    """log p(data) and the MAP score are the shifted engine's plus the constants taken off;
    they are journaled, so status and a rerun that finds the run finished say the same."""
    f = tmp_path / "h.jkl"
    f.write_text("3\nA 2\n1e20 0\n-1 1 B\nB 2\n-2 0\n-1 1 A\nC 2\n-3.25e15 0\n-3.25e15 1 A\n")
    first = bigbn.learn(scores=f, max_parents=1, map_dag=True, workdir=tmp_path / "w")
    want = 1e20 + (-3.25e15) + np.logaddexp(np.log(2) + np.log(2) - 1.0, np.log(2) + np.log(2) - 2.0)
    assert first.log_marginal == pytest.approx(want, rel=1e-16)
    assert first.map_log_score == 1e20 - 1.0 - 3.25e15
    again = bigbn.learn(scores=f, max_parents=1, map_dag=True, workdir=tmp_path / "w")
    assert again.summary["already_finished"] and again.log_marginal == first.log_marginal
    r = CliRunner().invoke(main, ["run", "--scores", str(f), "-k", "1", "-w", str(tmp_path / "w"), "--map"])
    assert r.exit_code == 0 and f"log p(data) = {first.log_marginal:.17g}\n" in r.output, r.output
    assert f"MAP network (log score {first.map_log_score:.17g}," in r.output
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["log_marginal_likelihood"] == first.log_marginal
    # the samples of the run: their scores and log p(data) as the file's, their exact
    # posteriors (e^(log #LE + score − log p), formed before the constants are added) sane
    from bigbn.outputs.samples import write_outputs

    s = bigbn.sample(tmp_path / "w", 400, seed=3)
    dags = s.dags()
    assert all(d["log_score"] == pytest.approx(1e20 - 3.25e15, rel=1e-15) for d in dags)
    assert 0.99 < sum(d["exact_order_modular"] for d in dags) <= 1 + 1e-12
    out = json.loads((write_outputs(s, tmp_path / "w") / "summary.json").read_text())
    assert out["log_marginal_likelihood"] == first.log_marginal


def test_scores_whose_sum_overflows_are_refused_without_a_numpy_warning(tmp_path):
    """Every score -1e308: each node is shifted to 0, but Σ_i c_i (log p(data)) is -inf. One
    DataError, and no numpy RuntimeWarning printed before it (it was a second and third
    line on the command line's stderr)."""
    import warnings

    f = tmp_path / "low.jkl"
    f.write_text("3\nA 1\n-1e308 0\nB 1\n-1e308 0\nC 1\n-1e308 0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataError, match="add up beyond float64's range"):
            bigbn.learn(scores=f, max_parents=1, workdir=tmp_path / "w")


def test_options_for_data_columns_are_refused_with_file_scores_in_python_too(tmp_path):
    """learn(scores=...) ignored names= and discrete= / continuous= (the command line refuses
    --discrete with --scores)."""
    f = tmp_path / "s.jkl"
    f.write_text("2\na 2\n0 0\n-1 1 b\nb 1\n0 0\n")
    with pytest.raises(OptionError, match="carry their variables' names; drop names="):
        bigbn.learn(scores=f, names=["x", "y"])
    for kw in ({"discrete": ["a"]}, {"continuous": ["b"]}):
        with pytest.raises(OptionError, match="type the columns of data; scores from a file have none"):
            bigbn.learn(scores=f, **kw)


def test_bigbn_scores_writes_utf8_whatever_the_locale(tmp_path):
    """In a C (ASCII) locale open() encoded the names in ASCII: a column 'Ωa' was a
    UnicodeEncodeError traceback, and a half-written s.jkl.tmp was left beside the output.
    The file is UTF-8, as read_jkl reads it."""
    import os
    import subprocess
    import sys

    data = tmp_path / "d.csv"
    data.write_text("Ωa,b\n0,1\n1,1\n0,0\n1,0\n", encoding="utf-8")
    out = tmp_path / "s.jkl"
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-m", "bigbn.cli", "scores", str(data), "-k", "1", "-o", str(out)],
                       capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    assert read_jkl(out).names == ("Ωa", "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "s.jkl"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    import os

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OptionError, match="cannot write .*s.jkl: No space left on device"):
        write_jkl(tmp_path / "s.jkl", ["a", "b"], np.zeros((2, 2)), 1)
    assert list(tmp_path.iterdir()) == []


def test_bigbn_scores_refuses_a_table_beyond_memory_at_once(tmp_path):
    """-k 12 on 30 columns: 3.7e9 families, a 110 GiB table; `bigbn scores` built it until
    memory ran out, many minutes deaf to Ctrl-C and SIGTERM. One line, at once."""
    rng = np.random.default_rng(0)
    data = tmp_path / "w.csv"
    np.savetxt(data, rng.integers(0, 2, (20, 30)), fmt="%d", delimiter=",",
               header=",".join(f"v{i}" for i in range(30)), comments="")
    out = tmp_path / "w.jkl"
    r = CliRunner().invoke(main, ["scores", str(data), "-k", "12", "-o", str(out)])
    assert_one_line_error(r, "--max-parents 12: 30 variables have", "above the memory budget",
                          "lower --max-parents or raise --memory")
    assert not out.exists()


def test_bigbn_scores_takes_a_memory_budget(tmp_path):
    """`bigbn scores` had no --memory (run, plan and sample have one): its table was held
    to the default budget (a quarter of the RAM, at most 8 GiB) whatever the machine could
    give. --memory reads sizes as theirs do: 3 variables' 12 families of at most 2 parents,
    a table of 384 bytes, fit 1K and not 300."""
    data = tmp_path / "d.csv"
    data.write_text("a,b,c\n" + "0,1,0\n1,1,0\n0,0,1\n1,0,1\n" * 3)
    out = tmp_path / "s.jkl"
    r = CliRunner().invoke(main, ["scores", str(data), "-k", "2", "-o", str(out), "--memory", "300"])
    assert_one_line_error(r, "--max-parents 2: 3 variables have 12 parent sets", "a table of 384 B",
                          "above the memory budget (300 B)", "raise --memory")
    assert not out.exists()
    r = CliRunner().invoke(main, ["scores", str(data), "-k", "2", "-o", str(out), "--memory", "lots"])
    assert_one_line_error(r, "--memory: cannot read size 'lots'")
    r = CliRunner().invoke(main, ["scores", str(data), "-k", "2", "-o", str(out), "--memory", "1K"])
    assert r.exit_code == 0, r.output
    ds = read_jkl(out)
    r = CliRunner().invoke(main, ["scores", str(data), "-k", "2", "-o", str(tmp_path / "t.jkl")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "t.jkl").read_bytes() == out.read_bytes() and ds.n == 3


def _as_jkl1(workdir):
    """The finished run's record as bigbn before jkl-2 wrote it (score numerics jkl-1)."""
    p = workdir / "run.json"
    rec = json.loads(p.read_text())
    rec["fingerprint"]["score_numerics"] = "jkl-1"
    p.write_text(json.dumps(rec))


@pytest.mark.parametrize("case", ["affected", "changed", "deleted", "constrained", "huge, usable", "ordinary"])
def test_a_finished_run_of_the_old_jkl_reader_opens_only_when_its_numbers_hold(tmp_path, case):
    """jkl-1 (bigbn before the reader shifted by the best usable family) gave wrong posteriors
    when a variable's largest score was of a family the run could not use. Resumes refuse it
    by the fingerprint; a finished run opened (bigbn.open, sample, report, effects) with its
    old numbers. It is checked against its file: refused, naming why, when it may be wrong
    or cannot be checked (its shifted scores' file changed, or deleted since); opened as
    before when its numbers are jkl-2's."""
    body = {"affected": "3\nA 3\n-10 0\n-12.5 1 B\n1e20 2 B C\nB 2\n-5 0\n-6 1 A\nC 1\n-7 0\n",
            "constrained": "3\nA 3\n-10 0\n-12.5 1 B\n1e20 1 C\nB 2\n-5 0\n-6 1 A\nC 1\n-7 0\n",
            "huge, usable": "3\nA 3\n99999999999999999998.5 0\n99999999999999999997 1 B\n"
                            "100000000000000000000 1 C\nB 2\n-5 0\n-6 1 A\nC 1\n-7 0\n",
            "ordinary": "3\nA 3\n-10 0\n-12.5 1 B\n-11 1 C\nB 2\n-5 0\n-6 1 A\nC 1\n-7 0\n"}
    f, wd = tmp_path / "s.jkl", tmp_path / "w"
    f.write_text(body.get(case, body["huge, usable"]))
    kw = {"forbidden": [("C", "A")]} if case == "constrained" else {}
    bigbn.learn(scores=f, max_parents=1, workdir=wd, **kw)
    _as_jkl1(wd)
    if case == "changed":
        f.write_text(body["ordinary"])
    if case == "deleted":
        f.unlink()
    why = {"affected": "variable 'A' has its largest score on a parent set of more than 1 parent",
           "changed": "has changed since the run, so it cannot be checked",
           "deleted": f"{f} cannot be read to check",
           "constrained": "variable 'A' has scores beyond"}.get(case)
    runner = CliRunner()
    for args in (["sample", "-w", str(wd), "--samples", "10"], ["report", str(wd), "-o", str(tmp_path / "r.html")]):
        r = runner.invoke(main, args)
        if why is None:
            assert r.exit_code == 0, r.output
        else:
            assert_one_line_error(r, str(wd), why)
            assert "score numerics jkl-1" in r.output
    if why is None:
        assert 0.05 < bigbn.open(wd).posterior[0, 1] < 0.95
    else:
        with pytest.raises(WorkdirError, match=re.escape(why) + ".*fresh"):
            bigbn.open(wd)


@pytest.mark.parametrize("then", ["deleted", "changed"])
def test_a_finished_old_jkl_run_of_ordinary_scores_opens_without_its_file(tmp_path, then):
    """jkl-1 shifted only a variable with a score beyond ±SAFE; a run whose scores all lie
    within it (the usual .jkl file: its scores task journaled no shift) holds jkl-2's
    numbers whatever became of its file. It was refused when the file was deleted or
    changed ("cannot be read to check"); it opens. One with a shift still needs its file."""
    body = "3\nA 3\n-10 0\n-12.5 1 B\n-11 1 C\nB 2\n-5 0\n-6 1 A\nC 1\n-7 0\n"
    f, wd = tmp_path / "s.jkl", tmp_path / "w"
    f.write_text(body)
    want = bigbn.learn(scores=f, max_parents=1, workdir=wd).posterior
    _as_jkl1(wd)
    if then == "deleted":
        f.unlink()
    else:
        f.write_text(body.replace("-7 0", "-8 0"))
    np.testing.assert_array_equal(bigbn.open(wd).posterior, want)
    runner = CliRunner()
    for args in (["sample", "-w", str(wd), "--samples", "10"], ["report", str(wd), "-o", str(tmp_path / "r.html")]):
        r = runner.invoke(main, args)
        assert r.exit_code == 0, r.output


def test_a_control_character_in_a_variable_name_is_refused(tmp_path):
    """inputs53 refused a control character in a name where data, DataFrames, arrays and
    BIF files name their variables; a .jkl file's names went on as they were: an ESC
    reached edges.csv and every printed list as it was. One line naming the file's line."""
    f = tmp_path / "esc.jkl"
    f.write_text("2\nA\x1bX 1\n-1.0 0\nB 1\n-2.0 0\n")
    with pytest.raises(DataError, match=re.escape(f"{f}, line 2: the variable name 'A\\x1bX' holds the control "
                                                  "character '\\x1b'")):
        read_jkl(f)
    r = CliRunner().invoke(main, ["run", "--scores", str(f), "-w", str(tmp_path / "w"), "-k", "1", "-q"])
    assert_one_line_error(r, f"{f}, line 2", "control character")
    assert not (tmp_path / "w" / "edges.csv").exists()


def test_the_best_usable_family_is_that_of_asking_every_family():
    """`_best_alive` asks alive() from the best float score down and stops after the first
    alive one's ties: the largest exact score of an alive family, as asking every family
    (naive.best_alive_score) finds it, also among scores float64 rounds together."""
    from decimal import Decimal

    from bigbn.scores.jkl import _best_alive

    rng = np.random.default_rng(7)
    for trial in range(300):
        F = int(rng.integers(1, 40))
        base = Decimal(int(rng.choice([10**6, 10**12, 10**20, 10**30]))) * (-1 if rng.random() < 0.5 else 1)
        # near ties below float64's resolution at that magnitude, and larger gaps
        exact = {int(g): base + Decimal(int(rng.integers(-5, 5))) * Decimal(10) ** int(rng.integers(-12, 3))
                 for g in rng.choice(1 << 12, size=F, replace=False)}
        top = max(exact.values())
        family = {g: float(x - top) for g, x in exact.items()}
        dead = {g for g in exact if rng.random() < rng.random()}
        got = _best_alive(family, exact, lambda g: g not in dead)
        assert got == naive.best_alive_score(exact, lambda g: g not in dead), trial


def test_a_shifted_file_whose_best_family_is_usable_is_scored_once(tmp_path, monkeypatch):
    """The check of ScoreFile.rebase computed the run's β once more (`_alive_families`) and
    asked alive() of every family (a family_rank each): scoring a shifted n = 22, k = 4 file
    took 3.4 s for 0.37 s. When the file's best family is usable, β is computed once and
    alive() is asked once per variable; the numbers are those of the run without the check."""
    from bigbn.scores import jkl

    n = 6
    beta = np.random.default_rng(3).normal(-5e6, 10.0, size=(n, family_masks(n - 1, 2).size))
    f = tmp_path / "big.jkl"
    write_jkl(f, [f"v{i}" for i in range(n)], beta, 2)  # every family usable at k = 2
    want = bigbn.learn(scores=f, max_parents=2)
    calls = {"local": 0, "alive": 0}
    local, best = jkl.ScoreFile.local, jkl._best_alive

    def counted_local(self, k):
        calls["local"] += 1
        return local(self, k)

    def counted_best(family, exact, alive):
        def asked(g):
            calls["alive"] += 1
            return alive(g)
        return best(family, exact, asked)

    monkeypatch.setattr(jkl.ScoreFile, "local", counted_local)
    monkeypatch.setattr(jkl, "_best_alive", counted_best)
    got = bigbn.learn(scores=f, max_parents=2)
    assert calls == {"local": 1, "alive": n}, calls
    assert np.array_equal(got.posterior, want.posterior) and got.log_marginal == want.log_marginal

