"""Local scores from .jkl files (bigbn.jkl, `bigbn scores`, `bigbn run --scores`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import naive
from bigbn.cli import main
from bigbn.errors import DataError, OptionError
from bigbn.families import family_masks, unsqueeze
from bigbn.jkl import read_jkl, write_jkl
from bigbn.workdir import Workdir
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
