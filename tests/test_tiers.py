"""Tiers (bigbn/plan/tiers.py): the tiered run against sums over tier-consistent orders and over
DAGs weighted by their tier-consistent linear extensions (tests/naive.py), the layout, the
scores and prior in it, the input files and the CLI."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import naive
from bigbn.api import load_dataset, score_families
from bigbn.cli.main import main
from bigbn.errors import DataError, OptionError, WorkdirError
from bigbn.kernels.families import family_masks, squeeze
from bigbn.scores.priors import log_prior
from bigbn.kernels import sampling as SK
from bigbn.outputs.samples import sample
from bigbn.scores.base import BUILTIN
from bigbn.scores.discrete import parent_sets_of
from bigbn.knowledge import Knowledge
from bigbn.plan.tiers import _tier_prior, layouts, read_tiers, tier_scores, tier_sizes_from_file


def random_table(seed: int, n: int, m: int, arity: int = 2) -> np.ndarray:
    """Data with dependence (each column a noisy copy of an earlier one), so that the
    posteriors are neither 0 nor 1."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, arity, size=(m, n))
    for j in range(1, n):
        src = rng.integers(0, j)
        keep = rng.random(m) < 0.7
        x[keep, j] = x[keep, src]
    return x


def names_of(n):
    return [f"V{j}" for j in range(n)]


def beta_of(data, k, score="bdeu", **kw):
    ds, _, _ = load_dataset(data, names=names_of(data.shape[1]), score=score)
    return score_families(ds, score, k, **kw)


def as_names(tiers):
    return [[f"V{v}" for v in t] for t in tiers]


def naive_family_score(data, arities, child, parents, score="bdeu", ess=1.0) -> float:
    """log p(x_child | x_parents) from the counts (Python Counters)."""
    rows = [tuple(r) for r in data.tolist()]
    r = int(arities[child])
    q = math.prod(int(arities[p]) for p in parents)
    n_ij = Counter(tuple(row[p] for p in parents) for row in rows)
    n_ijk = Counter((tuple(row[p] for p in parents), row[child]) for row in rows)
    a_ij, a_ijk = (float(r), 1.0) if score == "k2" else (ess / q, ess / (q * r))
    return (sum(math.lgamma(a_ij) - math.lgamma(a_ij + v) for v in n_ij.values())
            + sum(math.lgamma(a_ijk + v) - math.lgamma(a_ijk) for v in n_ijk.values()))


# ----------------------------------------------------------------------------- input

def parse_tiers(tiers, names):
    """The tiers as node indices: what learn and the finished-run reader use (one parser,
    bigbn.knowledge)."""
    return Knowledge(tiers=tiers).tier_ids(names)


def test_parse_tiers_mapping_and_lists_agree():
    names = ["a", "b", "c", "d"]
    assert parse_tiers({"a": 5, "b": 1, "c": 5, "d": 3}, names) == ((1,), (3,), (0, 2))
    assert parse_tiers([["b"], ["d"], ["c", "a"]], names) == ((1,), (3,), (0, 2))


@pytest.mark.parametrize("tiers, message", [
    ({"a": 1, "b": 2}, "2 variable(s) in no tier (c, d)"),
    ([["a", "b"], ["c", "zz"], ["d"]], "unknown variable 'zz' in tier 2"),
    ([["a", "b"], ["b", "c", "d"]], "'b' is in tier 1 and tier 2"),
    ([["a", "b"], [], ["c", "d"]], "tier 2 is empty"),
    ({"a": 1, "b": 1.5, "c": 2, "d": 2}, "the tier of 'b' must be an integer"),
    ("a,b,c,d", "tiers must be a dict"),
])
def test_parse_tiers_refuses_with_the_name(tiers, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_tiers(tiers, ["a", "b", "c", "d"])


def test_read_tiers_with_and_without_header(tmp_path):
    names = ["a", "b", "c"]
    (tmp_path / "h.csv").write_text("node,tier\na,2\nb,1\nc,2\n")
    (tmp_path / "n.csv").write_text("a;2\nb;1\nc;2\n")
    assert read_tiers(tmp_path / "h.csv", names) == read_tiers(tmp_path / "n.csv", names) == {"a": 2, "b": 1, "c": 2}
    (tmp_path / "bad.csv").write_text("node,tier\na,2\nb,first\n")
    with pytest.raises(DataError, match=r"bad.csv, line 3, column tier: 'first' is not an integer"):
        read_tiers(tmp_path / "bad.csv", names)
    (tmp_path / "twice.csv").write_text("a,1\nb,1\na,2\n")
    with pytest.raises(DataError, match=r"twice.csv, line 3: node 'a' is listed again \(first on line 1\)"):
        read_tiers(tmp_path / "twice.csv", names)
    (tmp_path / "unknown.csv").write_text("node,tier\na,1\nq,2\n")
    with pytest.raises(DataError, match=r"unknown.csv, line 3, column node: unknown node 'q'"):
        read_tiers(tmp_path / "unknown.csv", names)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_tiers_file_that_is_a_pipe_without_writer_or_a_device_is_refused(tmp_path, what, command):
    """As every other input file: a named pipe that nothing writes to, or a device that never
    ends, is a one-line error, not a wait (the timeout turns a hang into a failure)."""
    import os
    import subprocess
    import sys

    from helpers import ASIA, env

    tiers = tmp_path / "fifo"
    if what == "fifo":
        os.mkfifo(tiers)
    else:
        tiers = what
    args = ["run", str(ASIA), "-k", "1", "-w", str(tmp_path / "w")] if command == "run" else ["plan"]
    r = subprocess.run([sys.executable, "-m", "bigbn.cli", *args, "--tiers", str(tiers)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, env=env())
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("[bigbn] ")]
    assert len(lines) == 1 and lines[0].startswith(f"Error: {tiers}: "), r.stderr
    assert ("nothing writes to" if what == "fifo" else "not a regular file or a pipe") in lines[0]
    assert not (tmp_path / "w").exists()


def test_a_short_row_of_a_headerless_tiers_file_names_that_file_and_line(tmp_path):
    (tmp_path / "t.csv").write_text("a,1\nb\nc,2\n")
    for read in (lambda p: read_tiers(p, ["a", "b", "c"]), tier_sizes_from_file):
        with pytest.raises(DataError) as e:
            read(tmp_path / "t.csv")
        assert str(e.value) == f"{tmp_path / 't.csv'}, line 2: expected 2 fields, found 1"


@pytest.mark.parametrize("label", ["1_0", "²", "١", "1.0", "0x1", "--1"])
def test_a_tier_label_must_be_a_plain_ascii_integer(tmp_path, label):
    """int() takes "1_0" (as 10) and other scripts' digits ("١" as 1); str.isdigit() takes
    "²". A tier label is ASCII digits, optionally signed."""
    from bigbn.plan.tiers import tier_sizes_option

    path = tmp_path / "t.csv"
    path.write_text(f"node,tier\na,1\nb,{label}\nc,-2\n", encoding="utf-8")
    message = f"{path}, line 3, column tier: {label!r} is not an integer (digits 0-9, optionally signed)"
    for read in (lambda p: read_tiers(p, ["a", "b", "c"]), tier_sizes_from_file):
        with pytest.raises(DataError) as e:
            read(path)
        assert str(e.value) == message
    path.write_text("node,tier\na,1\nb,+1\nc,-2\n")
    assert read_tiers(path, ["a", "b", "c"]) == {"a": 1, "b": 1, "c": -2}
    with pytest.raises(OptionError, match="give comma-separated positive integers"):
        tier_sizes_option(f"3,{label}")
    assert tier_sizes_option(" 3, +2") == (3, 2)


@pytest.mark.parametrize("head, message", [
    ("tier,node", "line 1: header tier,node: the header of a tiers file is node,tier (each node, then "
                  "its tier), in that order"),
    ("Node,Tier", "line 1: header Node,Tier: the header of a tiers file is node,tier (each node, then "
                  "its tier), in that order"),
    ("variable,level", "line 1, column tier: 'level' is not an integer (a header line must be node,tier)"),
])
def test_a_tiers_header_other_than_node_tier_is_not_read_as_a_row(tmp_path, head, message):
    """The header line is optional, so a first line that is not node,tier was read as the
    row of a node named 'tier' (unknown node 'tier')."""
    path = tmp_path / "t.csv"
    path.write_text(f"{head}\na,1\nb,2\n")
    for read in (lambda p: read_tiers(p, ["a", "b"]), tier_sizes_from_file):
        with pytest.raises(DataError) as e:
            read(path)
        assert str(e.value) == f"{path}, {message}"


# ----------------------------------------------------------------------------- layout

@pytest.mark.parametrize("sizes, k", [((3, 4), 2), ((2, 3, 2), 3), ((1, 5), 3), ((4,), 2), ((2, 2, 2, 2), 1)])
def test_layout_columns_are_every_family_once(sizes, k):
    """Every parent set of a node that the tiers allow (earlier tiers and its own, |G| ≤ k)
    has exactly one column, and the column decodes back to it."""
    tiers, start = [], 0
    for s in sizes:
        tiers.append(tuple(range(start, start + s)))
        start += s
    n = start
    ps = parent_sets_of(n, k)
    for lay in layouts(tuple(tiers), k):
        index = lay.column_index(ps)
        allowed = set(lay.pred) | set(lay.nodes)
        for b, v in enumerate(lay.nodes):
            cols = {}
            for g in range(ps.shape[0]):
                G = tuple(int(x) for x in ps[g] if x >= 0)
                ok = set(G) <= allowed - {v}
                assert (index[g, b] >= 0) == ok, (G, v)
                if ok:
                    cols[int(index[g, b])] = G
            assert sorted(cols) == list(range(lay.width))
            for c, G in cols.items():
                assert lay.parents(b, c) == G


def test_scores_and_prior_in_the_layout_against_the_formula_and_log_prior():
    """Scores from Python counters; the prior (koivisto-sood, soft edge probabilities,
    forbid, per-node limits) against priors.log_prior's untiered table."""
    n, k = 6, 2
    data = random_table(3, n, 300, arity=3)
    ds, _, _ = load_dataset(data, names=names_of(n), score="bdeu")
    rng = np.random.default_rng(0)
    edge_prob = np.where(rng.random((n, n)) < 0.3, rng.uniform(0.1, 0.9, (n, n)), np.nan)
    kw = {"edge_prob": edge_prob, "forbid": [(0, 4)], "max_parents": np.array([2, 2, 1, 2, 2, 2])}
    tiers = ((0, 3), (1, 2, 5), (4,))
    lays = layouts(tiers, k)
    betas = tier_scores(ds, lays, BUILTIN["bdeu"], k, {"ess": 2.0}, prior_kwargs=kw)
    rho = log_prior(n, k, "koivisto-sood", names=ds.names, **kw)
    fam = family_masks(n - 1, k)
    for lay, beta in zip(lays, betas):
        for b, v in enumerate(lay.nodes):
            for c in range(lay.width):
                G = lay.parents(b, c)
                f = int(np.searchsorted(fam, squeeze(sum(1 << u for u in G), v)))
                want = naive_family_score(ds.data, ds.arities, v, list(G), "bdeu", 2.0) + rho[v, f]
                if np.isinf(want):
                    assert beta[b, c] == want
                else:
                    assert beta[b, c] == pytest.approx(want, rel=1e-12, abs=1e-9)


def test_the_tiers_prior_is_log_prior_bit_for_bit():
    """One computation of the structure prior (`priors.family_log_prior`): in the tiers'
    layouts every family's log ρ has the bits of priors.log_prior's untiered table (soft
    edge probabilities, p = 0 and 1, forbid, require, limits, both base priors), and a
    family a tier rules out (a later-tier parent) has none."""
    n, k = 7, 3
    rng = np.random.default_rng(5)
    edge_prob = np.where(rng.random((n, n)) < 0.5, rng.uniform(0.05, 0.95, (n, n)), np.nan)
    edge_prob[0, 3], edge_prob[1, 2], edge_prob[6, 0] = 0.0, 1.0, 0.3  # 6 -> 0: a later tier's
    kw = {"edge_prob": edge_prob, "forbid": [(0, 4)], "require": [(2, 5)],
          "max_parents": np.array([3, 2, 1, 3, 2, 3, 3])}
    names = names_of(n)
    lays = layouts(((0, 1), (2, 3, 5), (4, 6)), k)
    fam = family_masks(n - 1, k)
    for kind in ("uniform", "koivisto-sood"):
        rho = _tier_prior(n, k, lays, kind, names, kw)
        full = log_prior(n, k, kind, names=names, **kw)
        for lay, r in zip(lays, rho):
            assert r.shape == (lay.m, lay.width)
            for b, v in enumerate(lay.nodes):
                for c in range(lay.width):
                    f = int(np.searchsorted(fam, squeeze(sum(1 << u for u in lay.parents(b, c)), v)))
                    assert r[b, c].tobytes() == full[v, f].tobytes(), (kind, v, lay.parents(b, c))


def test_required_edge_against_the_tiers_is_refused():
    data = random_table(1, 4, 50)
    with pytest.raises(OptionError, match="required edge V3 -> V0 points from tier 2 back to tier 1"):
        bigbn.learn(data, names=names_of(4), tiers=[["V0", "V1"], ["V2", "V3"]],
                    prior_kwargs={"require": [(3, 0)]})


# ----------------------------------------------------------------------------- the posterior

TIERED = [
    (5, 2, ((0, 1), (2, 3, 4))),
    (5, 3, ((4,), (0, 2), (1, 3))),
    (5, 4, ((1, 2, 3), (0, 4))),
]


@pytest.mark.parametrize("n, k, tiers", TIERED)
def test_against_dags_weighted_by_tier_consistent_extensions(n, k, tiers, tmp_path):
    data = random_table(n + k, n, 200)
    beta = beta_of(data, k)
    P, log_px = naive.edges_by_dags(beta, k, tiers)
    PS = naive.parent_sets_by_dags(beta, k, tiers)
    res = bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names(tiers), workdir=tmp_path / "w")
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    np.testing.assert_allclose(res.posterior, P, atol=1e-9)
    assert 0.05 < P[P > 0].max() and P[(P > 1e-3) & (P < 1 - 1e-3)].size  # not trivially 0 or 1
    fam = family_masks(n - 1, k)
    for v in range(n):
        got = {sum(1 << names_of(n).index(u) for u in ps): p for ps, p in res.parent_sets(v)}
        for f in range(fam.size):
            full = sum(1 << (j if j < v else j + 1) for j in range(n - 1) if fam[f] >> j & 1)
            assert got.get(full, 0.0) == pytest.approx(PS[v, f], abs=1e-9)


@pytest.mark.parametrize("n, k, tiers", [
    (7, 3, ((0, 1, 2), (3, 4), (5, 6))),
    (8, 2, ((2, 5, 7), (0, 1, 3, 4, 6))),
    (8, 3, ((0,), (1, 2, 3, 4), (5,), (6, 7))),
])
def test_against_the_sum_over_tier_consistent_orders(n, k, tiers):
    data = random_table(n * k, n, 400)
    beta = beta_of(data, k, structure_prior="koivisto-sood")
    P, log_px = naive.edges_by_orders(beta, k, tiers)
    PS = naive.parent_sets_by_orders(beta, k, tiers)
    res = bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names(tiers))
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    np.testing.assert_allclose(res.posterior, P, atol=1e-9)
    v = tiers[-1][-1]
    fam = family_masks(n - 1, k)
    top = res.parent_sets(v, top=3)
    for ps, p in top:
        f = int(np.searchsorted(fam, squeeze(sum(1 << names_of(n).index(u) for u in ps), v)))
        assert p == pytest.approx(PS[v, f], abs=1e-9)
    assert sum(p for _, p in res.parent_sets(v)) == pytest.approx(1.0, abs=1e-12)


def test_one_tier_is_the_untiered_run():
    data = random_table(11, 9, 500)
    plain = bigbn.learn(data, names=names_of(9), max_parents=3)
    one = bigbn.learn(data, names=names_of(9), max_parents=3, tiers=[names_of(9)])
    assert one.log_marginal == pytest.approx(plain.log_marginal, rel=1e-14)
    np.testing.assert_allclose(one.posterior, plain.posterior, atol=1e-12)
    a, b = one.parent_sets("V8", top=3), plain.parent_sets("V8", top=3)
    assert [ps for ps, _ in a] == [ps for ps, _ in b]
    np.testing.assert_allclose([p for _, p in a], [p for _, p in b], atol=1e-12)


def test_singleton_tiers_give_the_single_order_posterior():
    n, k = 6, 2
    data = random_table(5, n, 300)
    order = (3, 0, 5, 1, 4, 2)
    beta = beta_of(data, k)
    P, log_px = naive.edges_by_orders(beta, k, [[v] for v in order])
    res = bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names([[v] for v in order]))
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    np.testing.assert_allclose(res.posterior, P, atol=1e-9)
    back = [(u, v) for i, u in enumerate(order) for v in order[:i]]
    assert all(res.posterior[u, v] == 0.0 for u, v in back)


@pytest.mark.slow
def test_map_under_tiers_against_brute_force():
    n, k = 5, 2
    tiers = ((1, 3), (0, 2, 4))
    data = random_table(8, n, 300)
    beta = beta_of(data, k)
    dags, pm, _ = naive._dag_table(n, k)
    ok = np.isfinite(naive.log_tier_linear_extensions(pm, tiers))
    w = np.where(ok, beta[np.arange(n)[None, :], dags].sum(axis=1), -np.inf)
    best = float(w.max())
    res = bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names(tiers), map_dag=True)
    assert res.map_log_score == pytest.approx(best, rel=1e-12)
    got = tuple(int(m) for m in res.map_parents)
    assert got in {tuple(r) for r in pm[w == best].tolist()}


def test_a_tiered_run_resumes_only_what_is_missing(tmp_path):
    """Delete the third tier's tables and journal lines: the rerun computes that tier's
    tasks only, and the results are the same numbers."""
    data = random_table(2, 9, 300)
    tiers = as_names(((0, 1, 2), (3, 4, 5), (6, 7, 8)))
    first = bigbn.learn(data, names=names_of(9), tiers=tiers, workdir=tmp_path / "w")
    journal = tmp_path / "w" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    keep = [ln for ln in lines if not json.loads(ln)["task"].startswith("tier3/")]
    assert 0 < len(keep) < len(lines)
    journal.write_text("".join(ln + "\n" for ln in keep))
    import shutil

    shutil.rmtree(tmp_path / "w" / "tables.zarr" / "tier3")
    again = bigbn.learn(data, names=names_of(9), tiers=tiers, workdir=tmp_path / "w")
    redone = [json.loads(ln)["task"] for ln in journal.read_text().splitlines()[len(keep):]]
    assert redone and all(t.startswith("tier3/") for t in redone)
    assert len(redone) == len(lines) - len(keep)
    assert again.log_marginal == first.log_marginal
    np.testing.assert_array_equal(again.posterior, first.posterior)
    with pytest.raises(WorkdirError, match="tiers"):
        bigbn.learn(data, names=names_of(9), tiers=as_names(((0, 1), (2, 3, 4, 5, 6, 7, 8))),
                    workdir=tmp_path / "w")


def test_other_chunk_bits_on_resume_of_a_tiered_run_is_refused(tmp_path):
    """As for a run without tiers (tests/test_resume.py): another --chunk-bits on resume was
    silently ignored (the tiers' chunk bits came from run.json)."""
    data = random_table(3, 7, 200)
    tiers = as_names(((0, 1), (2, 3, 4, 5, 6)))
    first = bigbn.learn(data, names=names_of(7), tiers=tiers, workdir=tmp_path / "w", chunk_bits=3)
    with pytest.raises(WorkdirError) as e:
        bigbn.learn(data, names=names_of(7), tiers=tiers, workdir=tmp_path / "w", chunk_bits=4)
    assert str(e.value) == (f"{tmp_path / 'w'} was started with chunk_bits=3 (tier 2, 5 variables); "
                            "resume with the same value or use fresh=True")
    for same in (3, None):  # the same value, or none: the workdir's
        again = bigbn.learn(data, names=names_of(7), tiers=tiers, workdir=tmp_path / "w", chunk_bits=same)
        assert again.log_marginal == first.log_marginal
    fresh = bigbn.learn(data, names=names_of(7), tiers=tiers, workdir=tmp_path / "w", chunk_bits=4, fresh=True)
    assert fresh.log_marginal == pytest.approx(first.log_marginal, abs=1e-9)


def test_cli_run_and_plan_with_tiers(tmp_path):
    n = 7
    data = random_table(4, n, 300)
    csv = tmp_path / "d.csv"
    csv.write_text(",".join(names_of(n)) + "\n" + "\n".join(",".join(map(str, r)) for r in data) + "\n")
    (tmp_path / "t.csv").write_text("".join(f"V{v},{1 + (v >= 3)}\n" for v in range(n)))
    r = CliRunner().invoke(main, ["run", str(csv), "--tiers", str(tmp_path / "t.csv"), "-w",
                                  str(tmp_path / "w"), "-q", "-k", "2"])
    assert r.exit_code == 0, r.output
    assert "tiers: 2 (sizes 3, 4)" in r.output
    res = bigbn.learn(data, names=names_of(n), max_parents=2, tiers={f"V{v}": 1 + (v >= 3) for v in range(n)})
    edges = {(row.split(",")[0], row.split(",")[1]): float(row.split(",")[2])
             for row in (tmp_path / "w" / "edges.csv").read_text().splitlines()[1:]}
    assert edges[("V0", "V5")] == pytest.approx(res.posterior[0, 5], abs=1e-15)
    assert edges[("V5", "V0")] == 0.0
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert [t["nodes"] for t in summary["tiers"]] == [names_of(n)[:3], names_of(n)[3:]]
    (tmp_path / "short.csv").write_text("V0,1\nV1,1\n")
    r = CliRunner().invoke(main, ["run", str(csv), "--tiers", str(tmp_path / "short.csv"), "-w",
                                  str(tmp_path / "w2"), "-q"])
    assert r.exit_code != 0 and "5 variable(s) in no tier (V2, V3, V4, V5, V6)" in r.output
    assert not (tmp_path / "w2").exists()
    r = CliRunner().invoke(main, ["plan", "--tier-sizes", "25,25,25,25", "-k", "3"])
    assert r.exit_code == 0, r.output
    assert "n = 100 in 4 tiers (25,25,25,25), k = 3: 6284375 families" in r.output
    r = CliRunner().invoke(main, ["plan", "--tiers", str(tmp_path / "t.csv")])
    assert r.exit_code == 0 and "n = 7 in 2 tiers (3,4)" in r.output
    r = CliRunner().invoke(main, ["plan", "--tier-sizes", "41,3"])
    assert r.exit_code != 0 and "a tier holds at most 40" in r.output


def test_status_and_sample_of_a_tiered_workdir(tmp_path):
    data = random_table(6, 6, 200)
    bigbn.learn(data, names=names_of(6), tiers=[["V0"], ["V1", "V2", "V3"], ["V4", "V5"]],
                workdir=tmp_path / "w")
    r = CliRunner().invoke(main, ["status", "-w", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    assert "tiers: 3 (sizes 1, 3, 2)" in r.output and "tier 1: 1 node, no lattice" in r.output
    assert "tier 2: 3 nodes, 5/5 tasks done" in r.output and "finished: results in" in r.output
    r = CliRunner().invoke(main, ["sample", "-w", str(tmp_path / "w"), "--samples", "500"])
    assert r.exit_code == 0, r.output
    assert "under the run's 3 tiers" in r.output
    dags = (tmp_path / "w" / "samples-order-modular" / "dags.csv").read_text()
    assert "V5" in dags and '["V5", "V1"]' not in dags  # never an edge into an earlier tier




def test_one_tier_of_every_variable_is_the_untiered_run_bit_for_bit(tmp_path):
    """One pipeline (#38): a run with one tier holding every variable is the run without
    tiers — the same edge posteriors, parent-set posteriors, log p(data), MAP network,
    journal CRCs and layout (tables at the workdir's root, a plain plan in run.json)."""
    data = random_table(11, 5, 300)
    kw = dict(names=names_of(5), max_parents=2, chunk_bits=3, map_dag=True, workers=1)
    plain = bigbn.learn(data, workdir=tmp_path / "plain", **kw)
    one = bigbn.learn(data, workdir=tmp_path / "one", tiers=[names_of(5)], **kw)
    assert one.posterior.tobytes() == plain.posterior.tobytes()
    assert one.parent_set_posterior.tobytes() == plain.parent_set_posterior.tobytes()
    assert one.log_marginal == plain.log_marginal and one.map_log_score == plain.map_log_score
    assert one.map_parents.tolist() == plain.map_parents.tolist()
    assert one.parent_sets("V3") == plain.parent_sets("V3") and one.tiered is None
    crcs = {w: {t: r["crc"] for t, r in bigbn.store.workdir.Workdir(tmp_path / w).journal().items()}
            for w in ("plain", "one")}
    assert crcs["one"] == crcs["plain"] and not any("/" in t for t in crcs["one"])
    plans = [json.loads((tmp_path / w / "run.json").read_text())["plan"] for w in ("plain", "one")]
    assert plans[0] == plans[1] and plans[1]["tiers"] == [{"nodes": 5, "chunk_bits": 3}]
    # the same run: a rerun of either on the other's workdir finds it finished
    again = bigbn.learn(data, workdir=tmp_path / "plain", tiers=[names_of(5)], **kw)
    assert again.summary["already_finished"] and again.posterior.tobytes() == plain.posterior.tobytes()



def test_a_tiered_run_calls_the_executor_once_over_every_tier(tmp_path, monkeypatch):
    """One executor call over the union of the tiers' tasks (their ids scoped), posterior
    and MAP lattices alike, so a cluster runs the tiers side by side; a resumed run calls it
    once over what is left; progress names each tier's stages."""
    import bigbn.engine.runner as runner

    calls = []

    def spy(jobs, **kw):
        calls.append(sorted({j.plan.scope for j in jobs}))
        return execute(jobs, **kw)

    execute = runner.execute
    monkeypatch.setattr(runner, "execute", spy)
    data = random_table(2, 6, 200)
    events = []
    kw = dict(names=names_of(6), max_parents=2, chunk_bits=2, map_dag=True, workdir=tmp_path / "w",
              tiers=[["V0", "V1", "V2"], ["V3"], ["V4", "V5"]])
    res = bigbn.learn(data, progress=lambda *e: events.append(e), **kw)
    assert calls == [["tier1", "tier1-map", "tier3", "tier3-map"]]
    assert {e[0] for e in events} >= {"scores", "tier 1/3 forward", "tier 3/3 map", "tier 1/3 edges"}
    assert events[-1][1] == events[-1][2]
    journal = bigbn.store.workdir.Workdir(tmp_path / "w").journal()
    assert {t.split("/")[0] for t in journal if not t.endswith("/family_beta")} == {
        "tier1", "tier1-map", "tier3", "tier3-map"}
    lines = (tmp_path / "w" / "journal.jsonl").read_text().splitlines()
    keep = [ln for ln in lines if '"task":"tier3/' not in ln.replace(" ", "")]
    assert len(keep) < len(lines)
    (tmp_path / "w" / "journal.jsonl").write_text("\n".join(keep) + "\n")  # tier 3 never ran
    calls.clear()
    again = bigbn.learn(data, **kw)
    assert calls == [["tier3"]] and again.posterior.tobytes() == res.posterior.tobytes()


def test_one_finished_run_reader_for_runs_with_and_without_tiers(tmp_path):
    """`FinishedRun` reads every finished run as a list of tiers: without tiers one tier
    (no earlier tiers) on the root-scope lattice with the plain β; with tiers one per tier."""
    from bigbn.store.rundir import FinishedRun, finished_run

    data = random_table(12, 5, 200)
    plain = bigbn.learn(data, names=names_of(5), max_parents=2, workdir=tmp_path / "plain")
    tiered = bigbn.learn(data, names=names_of(5), max_parents=2, tiers=[["V0"], ["V1", "V2", "V3", "V4"]],
                         map_dag=True, workdir=tmp_path / "tiered")
    run = finished_run(tmp_path / "plain")
    assert isinstance(run, FinishedRun) and not run.tiered and len(run.tiers) == 1
    [tier] = run.tiers
    assert tier.lay.nodes == tuple(range(5)) and tier.lay.pred == () and tier.lattice.plan.scope == ""
    assert tier.beta.tobytes() == tier.lattice.beta.tobytes() and tier.log_z == run.log_px
    assert run.posterior().tobytes() == plain.posterior.tobytes()
    assert run.log_px + run.log_offset == plain.log_marginal
    run = finished_run(tmp_path / "tiered")
    assert isinstance(run, FinishedRun) and run.tiered and [t.lay.m for t in run.tiers] == [1, 4]
    assert run.tiers[0].lattice is None and run.tiers[1].lattice.plan.scope == "tier2"
    assert np.allclose(run.posterior(), tiered.posterior, atol=1e-12)
    assert run.log_px + run.log_offset == pytest.approx(tiered.log_marginal, abs=1e-9)
    with pytest.raises(WorkdirError, match="map_dag.csv"):
        FinishedRun(tmp_path / "tiered", need="map")


def test_status_of_a_tiered_run_is_the_one_status(tmp_path):
    """One `status_lines` for runs with and without tiers: a tiered run with the MAP network
    says what it computes, bounds its tables and names its MAP network, as an untiered one."""
    data = random_table(7, 5, 200)
    bigbn.learn(data, names=names_of(5), tiers=[["V0", "V1"], ["V2", "V3", "V4"]], map_dag=True,
                workdir=tmp_path / "w")
    out = "\n".join(bigbn.api.workdir_status(tmp_path / "w"))
    assert "computes the posterior and the MAP network" in out
    assert "(the plan's tables: at most " in out and "MAP network: " in out
    assert "tier 2: 3 nodes, " in out and "finished: results in" in out
    assert "damaged" not in out
    again = bigbn.learn(data, names=names_of(5), tiers=[["V0", "V1"], ["V2", "V3", "V4"]], map_dag=True,
                        workdir=tmp_path / "w")
    assert again.summary["already_finished"] and not again.summary["recomputed_corrupt_tasks"]
    # a tier's family β gone: status says so (it stats the files the results are read from)
    [gone] = [f for f in (tmp_path / "w" / "tables.zarr").rglob("family_beta/c/*/*")][-1:]
    gone.unlink()
    out = "\n".join(bigbn.api.workdir_status(tmp_path / "w"))
    assert f"finished, but its tables are damaged: {gone} is missing" in out
    bigbn.learn(data, names=names_of(5), tiers=[["V0", "V1"], ["V2", "V3", "V4"]], map_dag=True,
                workdir=tmp_path / "w")
    assert gone.is_file() and "damaged" not in "\n".join(bigbn.api.workdir_status(tmp_path / "w"))


# ----------------------------------------------------------------------------- samples

def _tiered_dag_posteriors(beta, k, tiers):
    """Every DAG (n ≤ 5) as full parent masks with its exact posterior under tiers, for the
    order-modular prior (weight #tier-consistent LE × Π β) and the DAG-modular one (Π β
    over the DAGs with a tier-consistent order), and its log #tier-consistent LE."""
    _, n, dags, pm, w = naive._dag_weights(beta, k, tiers)
    lle = naive.log_tier_linear_extensions(pm, tiers)
    score = beta[np.arange(n)[None, :], dags].sum(axis=1)
    dag_w = np.where(np.isfinite(lle), score, -np.inf)
    return pm, np.exp(w - naive.logsumexp(w)), np.exp(dag_w - naive.logsumexp(dag_w)), lle


@pytest.mark.parametrize("k, tiers", [(2, ((0, 1), (2, 3, 4))), (3, ((4,), (0, 2), (1, 3)))])
def test_samples_under_tiers_against_enumeration(k, tiers, tmp_path):
    n, T = 5, 20000
    data = random_table(17 + k, n, 150)
    beta = beta_of(data, k)
    pm, p_order, p_dag, lle = _tiered_dag_posteriors(beta, k, tiers)
    index = {tuple(r): j for j, r in enumerate(pm.tolist())}
    bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names(tiers), workdir=tmp_path / "w")
    s = sample(tmp_path / "w", T, seed=11)
    assert s.log_marginal == pytest.approx(naive.edges_by_dags(beta, k, tiers)[1], rel=1e-12)
    assert s.info["edge_check"]["max_abs_z"] < 5 and s.info["edge_check"]["hard_edges_ok"]
    seen = 0
    for d in s.dags():
        j = index[tuple(d["parents"].tolist())]
        assert p_order[j] > 0  # only DAGs the tiers allow are drawn
        assert d["exact_order_modular"] == pytest.approx(p_order[j], rel=1e-9)
        assert d["log_linear_extensions"] == pytest.approx(lle[j], abs=1e-12)
        if T * p_order[j] * (1 - p_order[j]) >= 10:
            assert abs(d["probability"] - p_order[j]) < 5 * math.sqrt(p_order[j] * (1 - p_order[j]) / T)
            seen += 1
    assert seen >= 3 and 0.02 < p_order.max() < 0.9  # several DAGs compared, none certain
    # the sampled orders are tier-consistent and list each DAG's parents first
    rank = np.argsort(s.orders, axis=1)
    tier_of = {v: j for j, t in enumerate(tiers) for v in t}
    assert all(np.array_equal(np.sort([tier_of[v] for v in row]), [tier_of[v] for v in row])
               for row in s.orders.tolist())
    for v in range(n):
        for u in range(n):
            has = (s.parents[:, v] >> u) & 1 == 1
            assert np.all(rank[has, u] < rank[has, v])
    # DAG-modular: reweighting by 1/#LE(tier-consistent) against Π β over tier-consistent DAGs
    w = sample(tmp_path / "w", T, seed=11, prior="dag-modular")
    P, se = w.edge_probabilities(with_se=True)
    for v in range(n):
        for u in range(n):
            if u != v:
                exact = float(p_dag[(pm[:, v] >> u) & 1 == 1].sum())
                # se is 0 for an edge in every sample: then the binomial se of the exact p bounds it
                tol = 5 * max(se[u, v], math.sqrt(exact * (1 - exact) / T)) + 1e-12
                assert abs(P[u, v] - exact) < tol


def test_tiered_samples_need_the_family_scores(tmp_path):
    data = random_table(4, 6, 120)
    tiers = [["V0", "V1"], ["V2"], ["V3", "V4", "V5"]]
    bigbn.learn(data, names=names_of(6), max_parents=2, tiers=tiers, workdir=tmp_path / "w")
    first = sample(tmp_path / "w", 300, seed=2)
    chunks = [f for f in (tmp_path / "w" / "tables.zarr" / "tier3" / "family_beta").rglob("*")
              if f.is_file() and f.name != "zarr.json"]
    assert len(chunks) == 3  # a chunk per node
    chunks[1].write_bytes(b"\0" * 5)
    r = CliRunner().invoke(main, ["sample", "-w", str(tmp_path / "w")])
    assert r.exit_code == 1 and "family_beta is missing or damaged" in r.output
    assert "Traceback" not in r.output
    bigbn.learn(data, names=names_of(6), max_parents=2, tiers=tiers, workdir=tmp_path / "w")  # repairs
    np.testing.assert_array_equal(sample(tmp_path / "w", 300, seed=2).parents, first.parents)


@pytest.mark.slow
def test_samples_of_70_variables_in_tiers(tmp_path):
    """Past 63 variables a sample's parent sets are words (`sampling.as_words`): the edges
    against the exact ones, the ancestors against a search over each sample's arcs."""
    n, T = 70, 4000
    data = random_table(5, n, 80)
    keep = np.random.default_rng(1).random(80) < 0.9
    data[keep, 68] = data[keep, 64]  # an arc within the last tier, between nodes past bit 63
    tiers = [names_of(n)[j: j + 10] for j in range(0, n, 10)]
    bigbn.learn(data, names=names_of(n), max_parents=2, workdir=tmp_path / "w", tiers=tiers)
    s = sample(tmp_path / "w", T, seed=4)
    assert s.parents.shape == (T, n, 2)
    check = s.info["edge_check"]
    assert check["max_abs_z"] < 5 and check["hard_edges_ok"] and check["edges_compared"] > 20
    anc = SK.ancestors(s.parents, s._nodes())
    for t in range(0, T, 400):
        ps = [set() for _ in range(n)]
        for a, b in s.arcs(s.parents[t]):
            ps[names_of(n).index(b)].add(names_of(n).index(a))
        for v, want in enumerate(naive.ancestor_sets(ps)):
            assert {u for u in range(n) if anc[t, v, u // 63] >> (u % 63) & 1} == want
    assert (s.parents[:, :, 1] != 0).any(axis=1).mean() > 0.5  # most samples have a parent in the second word
    tier_of = {v: v // 10 for v in range(n)}
    P = s.edge_probabilities()
    assert all(P[u, v] == 0 for u in range(n) for v in range(n) if tier_of[u] > tier_of[v])
    r = CliRunner().invoke(main, ["sample", "-w", str(tmp_path / "w"), "--samples", "300"])
    assert r.exit_code == 0 and "under the run's 7 tiers" in r.output, r.output
    npz = np.load(tmp_path / "w" / "samples-order-modular" / "samples.npz")
    assert npz["parents"].shape == (300, n, 2)


@pytest.mark.slow
def test_plots_of_a_tiered_run_show_the_tiers(tmp_path):
    from bigbn.cli.tools import _run_tiers
    from bigbn.outputs.plot import _tier_order

    assert _tier_order(["a", "b", "c", "d", "e"], [["d", "b"], ["e"], ["c", "a"]]) == ([1, 3, 4, 0, 2], [2, 3])
    data = random_table(7, 5, 200)
    tiers = [["V3", "V1"], ["V0", "V2", "V4"]]
    bigbn.learn(data, names=names_of(5), tiers=tiers, workdir=tmp_path / "w")
    bigbn.learn(data, names=names_of(5), workdir=tmp_path / "plain")
    assert _run_tiers(str(tmp_path / "w" / "edges.csv"), names_of(5)) == [["V1", "V3"], ["V0", "V2", "V4"]]
    assert _run_tiers(str(tmp_path / "plain" / "edges.csv"), names_of(5)) is None
    r = CliRunner().invoke(main, ["plot", str(tmp_path / "w"), "--out", str(tmp_path / "h.png"),
                                  "--graph", str(tmp_path / "g.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "h.png").stat().st_size > 1000 and (tmp_path / "g.png").stat().st_size > 1000


# ----------------------------------------------------------------------------- causal effects

@pytest.mark.slow
def test_effects_under_tiers_against_all_dags(tmp_path):
    n, k, tiers = 4, 2, ((0, 1), (2,), (3,))
    data = random_table(23, n, 60)
    bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names(tiers), workdir=tmp_path / "w",
                score="k2")
    res = bigbn.learn(data, names=names_of(n), max_parents=k, tiers=as_names(tiers), score="k2")
    beta = beta_of(data, k, score="k2")
    pairs = [(0, 2), (2, 0), (1, 0), (2, 3), (1, 3)]
    from_dir = bigbn.effects(tmp_path / "w", data, pairs=pairs)
    from_result = bigbn.effects(res, data, pairs=pairs)
    spread = []
    for i, (x, y) in enumerate(pairs):
        table, p_zero = naive.discrete_effects_by_dags(data, [2] * n, beta, k, x, y, "k2", None, tiers)
        for e in (from_dir, from_result):
            np.testing.assert_allclose(e.table[i], table, rtol=0, atol=1e-10)
            assert e.p_zero[i] == pytest.approx(p_zero, abs=1e-10)
        spread.append(p_zero)
    assert sum(0.02 < p < 0.98 for p in spread) >= 1


# ----------------------------------------------------------------------------- other scores

def test_bge_family_scores_are_bge_scores_bit_for_bit():
    from bigbn.scores.bge import bge_family_scores, bge_scores
    from bigbn.scores.discrete import parent_set_index

    from test_interventions import continuous_experiments

    X, _ = continuous_experiments(8, m=50, n=6)
    ds, _, _ = load_dataset(X, names=names_of(6), score="bge")
    ps, index = parent_set_index(6, 3)
    want = bge_scores(ds, 3, alpha_mu=2.0)
    np.testing.assert_array_equal(bge_family_scores(ds, (ps, index, want.shape[1]), alpha_mu=2.0), want)


@pytest.mark.parametrize("score, n, tiers, route, experiments", [
    ("bge", 5, ((0, 1), (2, 3, 4)), "dags", False),
    ("bge", 7, ((0, 1, 2), (3,), (4, 5, 6)), "orders", True),
    ("bge", 5, ((3,), (0, 4), (1, 2)), "dags", True),
    ("bdeu", 7, ((0, 1), (2, 3, 4, 5, 6)), "orders", True),
])
def test_bge_and_interventions_under_tiers_against_enumeration(score, n, tiers, route, experiments, tmp_path):
    from test_interventions import continuous_experiments, discrete_experiments

    names = list("abcdefg")[:n]
    if score == "bge":
        X, T = continuous_experiments(5, m=60, n=n)
    else:
        X, T = discrete_experiments(6, n=n)
    T = T if experiments else np.zeros_like(T)
    if score == "bge":
        local = naive.interventional_bge_scores(X.tolist(), T.tolist(), 2)
    else:
        arities = [len(set(X[:, j].tolist())) for j in range(n)]
        local = naive.interventional_dirichlet_scores(X.tolist(), arities, T.tolist(), 2, score)
    kw = {"interventions": [{names[j] for j in np.flatnonzero(r)} for r in T]} if experiments else {}
    res = bigbn.learn(X, names=names, score=score, max_parents=2, structure_prior="uniform",
                      tiers=[[names[v] for v in t] for t in tiers], workdir=tmp_path / "w", **kw)
    P, log_px = (naive.edges_by_dags if route == "dags" else naive.edges_by_orders)(local, 2, tiers)
    np.testing.assert_allclose(res.posterior, P, rtol=0, atol=1e-9)
    assert res.log_marginal == pytest.approx(log_px, rel=1e-9)
    assert np.ptp(res.posterior[~np.eye(n, dtype=bool)]) > 0.3
    s = sample(tmp_path / "w", 3000, seed=1)
    assert s.info["edge_check"]["max_abs_z"] < 5 and s.info["edge_check"]["hard_edges_ok"]


def test_one_tier_of_bge_is_the_untiered_run():
    from test_interventions import continuous_experiments

    X, _ = continuous_experiments(9, m=80, n=7)
    plain = bigbn.learn(X, names=names_of(7), score="bge", max_parents=3)
    one = bigbn.learn(X, names=names_of(7), score="bge", max_parents=3, tiers=[names_of(7)])
    assert one.log_marginal == pytest.approx(plain.log_marginal, rel=1e-14)
    np.testing.assert_allclose(one.posterior, plain.posterior, atol=1e-12)


def test_scores_from_a_jkl_file_under_tiers(tmp_path):
    from bigbn.scores.jkl import write_jkl

    n, k = 6, 2
    data = random_table(12, n, 200)
    tiers = [["V0", "V3"], ["V1", "V2"], ["V4", "V5"]]
    write_jkl(tmp_path / "s.jkl", names_of(n), beta_of(data, k), k)
    from_data = bigbn.learn(data, names=names_of(n), max_parents=k, tiers=tiers)
    from_file = bigbn.learn(scores=tmp_path / "s.jkl", max_parents=k, tiers=tiers, workdir=tmp_path / "w")
    assert from_file.log_marginal == pytest.approx(from_data.log_marginal, rel=1e-14)
    np.testing.assert_allclose(from_file.posterior, from_data.posterior, atol=1e-12)
    assert sample(tmp_path / "w", 500, seed=3).info["edge_check"]["hard_edges_ok"]
    # a variable whose only parent sets in the file lie in a later tier
    (tmp_path / "late.jkl").write_text("3\na 1\n-1.5 1 c\nb 1\n-2.0 0\nc 1\n-3.0 0\n")
    r = CliRunner().invoke(main, ["run", "--scores", str(tmp_path / "late.jkl"), "-w", str(tmp_path / "late"),
                                  "--tiers", str(_write(tmp_path / "t.csv", "a,1\nb,1\nc,2\n"))])
    assert r.exit_code != 0 and "every parent set of 'a' that the tiers allow" in r.output
    assert "Traceback" not in r.output


def _write(path, text):
    path.write_text(text)
    return path


# ------------------------------------------------------------ the tiered plan's clock (#39)

def _plan_time(rows, workers=2, sizes=(9, 9, 9)):
    import re

    from bigbn.plan.tiers import plan_lines

    lines = plan_lines(sizes, 3, 2**30, workers, "recompute", False, True, None, None, rows=rows)
    fams = int(re.search(r"k = 3: (\d+) families", lines[0])[1])
    tiers = [float(re.search(r"≈ ([0-9.]+) s$", x)[1]) for x in lines if x.startswith("  tier")]
    t = next(x for x in lines if x.startswith("time:"))
    parts = {name: float(re.search(rf"{words} ([0-9.]+) s", t)[1])
             for name, words in [("lattices", "lattices"), ("scores", "scores stage"), ("start", "start")]}
    return fams, tiers, float(re.search(r"≈ ([0-9.]+) s", t)[1]), parts


def test_the_tiered_plan_adds_its_lattices_the_scores_stage_and_one_start():
    """The time line is the tiers' lattices (each without its own start), the scores
    stage (families × rows at the measured rate, on the workers) and one start; the
    scores stage grows with --rows, the lattices do not."""
    from bigbn.plan.lattice import SECONDS_PER_FAMILY_ROW, SECONDS_START

    fams, tiers, total, parts = _plan_time(10_000)
    assert len(tiers) == 3 and parts["lattices"] == pytest.approx(sum(tiers), abs=0.2)
    assert parts["start"] == SECONDS_START
    assert parts["scores"] == pytest.approx(fams * 10_000 * SECONDS_PER_FAMILY_ROW / 2, abs=0.06)
    assert total == pytest.approx(sum(parts.values()), abs=0.2)
    fams4, tiers4, _, parts4 = _plan_time(40_000)
    assert (fams4, tiers4, parts4["lattices"]) == (fams, tiers, parts["lattices"])
    assert parts4["scores"] == pytest.approx(4 * parts["scores"], rel=0.05)
    assert _plan_time(10_000, workers=1)[3]["scores"] == pytest.approx(2 * parts["scores"], rel=0.05)


@pytest.mark.parametrize("plan", [["--tier-sizes", "3,3"], ["--n", "5", "--lag", "1"], ["--n", "10"],
                                  ["--n", "10", "--disk-budget", "1G"]])
def test_plan_refuses_rows_below_one(plan):
    """Also for a plan without tiers or --lag, which used no --rows: 0 was taken silently."""
    out = CliRunner().invoke(main, ["plan", *plan, "--rows", "0"])
    assert out.exit_code != 0 and "--rows must be at least 1" in out.output


@pytest.mark.parametrize("score", ["bdeu", "bge"])
def test_families_the_prior_rules_out_are_not_scored(monkeypatch, score):
    """tier_scores asks the score only for the families whose prior is not 0 (a forbidden
    edge, a missing required one, more parents than a node's limit: β = −∞ whatever the
    score), and β is still the per-family formula: a node limited to 0 parents (a time
    series' lagged variable) is scored at ∅ alone, of its C(p, ≤ k) columns."""
    n, k = 6, 2
    data = random_table(11, n, 200, arity=2)
    if score == "bge":
        data = data + np.random.default_rng(1).normal(size=data.shape)
    ds, _, _ = load_dataset(data, names=names_of(n), score=score)
    kw = {"forbid": [(0, 4), (3, 5)], "require": [(1, 5)], "max_parents": np.array([2, 2, 0, 1, 2, 1])}
    lays = layouts(((0, 3), (1, 2), (4, 5)), k)
    asked = []
    real = type(BUILTIN[score]).family_scores
    monkeypatch.setattr(type(BUILTIN[score]), "family_scores",
                        lambda self, d, kk, o, sets: asked.append(sets[1].copy()) or real(self, d, kk, o, sets))
    opts = {"ess": 1.0} if score == "bdeu" else {"alpha_mu": 1.0, "alpha_w": n + 2.0}
    betas = tier_scores(ds, lays, BUILTIN[score], k, opts, prior_kwargs=kw)
    (index,) = asked
    rho = _tier_prior(n, k, lays, "koivisto-sood", ds.names, kw)
    where = {v: (j, b) for j, lay in enumerate(lays) for b, v in enumerate(lay.nodes)}
    for v in range(n):
        j, b = where[v]
        lay = lays[j]
        cols = index[:, v][index[:, v] >= 0]
        assert sorted(cols.tolist()) == np.flatnonzero(np.isfinite(rho[j][b])).tolist(), v
        for c in range(lay.width):
            G = list(lay.parents(b, c))
            if not np.isfinite(rho[j][b, c]):
                assert betas[j][b, c] == -np.inf
            elif score == "bdeu":
                want = naive_family_score(ds.data, ds.arities, v, G, "bdeu", 1.0) + rho[j][b, c]
                assert betas[j][b, c] == pytest.approx(want, rel=1e-12, abs=1e-9)
    assert (index[:, 2] >= 0).sum() == 1  # 0 parents: ∅ only
    if score == "bge":  # the same bits as when every family is scored (the untiered table)
        full = score_families(ds, score, k, structure_prior="uniform", **opts)
        fam = family_masks(n - 1, k)
        for v in range(n):
            j, b = where[v]
            for c in np.flatnonzero(np.isfinite(rho[j][b])).tolist():
                f = int(np.searchsorted(fam, squeeze(sum(1 << u for u in lays[j].parents(b, c)), v)))
                assert betas[j][b, c] == full[v, f] + rho[j][b, c]


def test_column_sizes_and_members_without_building_every_set():
    """TierLayout.column_sizes (counted, not read off pred_sets) and the prior's members are
    those of the parent sets the layout lists."""
    from bigbn.plan.tiers import _Members, _members

    for tiers, k in ((((0, 1), (2, 3, 4), (5,)), 3), (((0,), (1,), (2,), (3, 4, 5)), 2), (((0, 1, 2),), 2)):
        for lay in layouts(tiers, k):
            sizes = [len(lay.parents(b, c)) for b in range(lay.m) for c in range(lay.width)]
            assert sizes == lay.column_sizes.tolist() * lay.m
            for b in range(lay.m):
                lazy, eager = _Members(lay, b), _members(lay, b)
                for u in range(7):
                    h = lazy.get(u)
                    want = [u in lay.parents(b, c) for c in range(lay.width)]
                    assert (h is None) == (u not in eager) and (h is None or h.tolist() == want)
