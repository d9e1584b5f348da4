"""The MAP network (max-plus kernels on the chunk lattice) against brute force over all
DAGs and a plain subset DP (tests/naive.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import naive
from bigbn.kernels import maxplus as MP
from bigbn.kernels.families import family_masks
from bigbn.kernels.mapdag import backtrack, dag_score, map_chunk
from bigbn.plan.lattice import Plan


def run_map(beta, k, c):
    """The plan's map tasks chunk by chunk in this process, tables in memory: the MAP log
    score M(V), the parent masks, and the M and sink tables."""
    p = Plan(beta.shape[0], k, c, map_dag=True, posterior=False)
    job = SimpleNamespace(plan=p, beta=beta)
    M = np.empty(1 << p.n)
    sinks = np.empty(1 << p.n, dtype=np.int8)
    size = p.chunk_size
    for spec in p.tasks():
        if spec.kind == "map":
            H = spec.chunk
            out, sink = map_chunk(job, H, spec.terms, lambda G: M[G * size:(G + 1) * size])
            M[H * size:(H + 1) * size] = out
            sinks[H * size:(H + 1) * size] = sink
    parents = backtrack(beta, p.families, p.n, lambda S: sinks[S])
    return float(M[-1]), parents, M, sinks


def is_dag(parents):
    left = (1 << len(parents)) - 1
    while left:
        sinks = [v for v in range(len(parents)) if left >> v & 1
                 and not any(left >> w & 1 and int(parents[w]) >> v & 1 for w in range(len(parents)))]
        if not sinks:
            return False
        left &= ~(1 << sinks[0])
    return True


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_against_all_dags(n, seed):
    rng = np.random.default_rng(seed)
    for k in range(n):
        beta = naive.random_beta(n, k, rng, spread=5, p_forbidden=0.2)
        best, optimal = naive.map_by_dags(beta, k)
        c = int(rng.integers(1, n + 1))
        score, parents, _, _ = run_map(beta, k, c)
        assert score == pytest.approx(best, abs=1e-12)
        assert tuple(parents.tolist()) in optimal
        assert dag_score(beta, family_masks(n - 1, k), parents) == pytest.approx(score, abs=1e-12)


def test_ties_any_optimal_dag_is_right():
    """Integer scores: many DAGs tie; the answer must be one of them, the same for every
    chunk size (ties go to the smallest node index)."""
    rng = np.random.default_rng(5)
    n, k = 5, 2
    beta = rng.integers(-3, 1, size=(n, family_masks(n - 1, k).size)).astype(float)
    best, optimal = naive.map_by_dags(beta, k)
    assert len(optimal) > 1
    answers = {tuple(run_map(beta, k, c)[1].tolist()) for c in range(1, n + 1)}
    assert len(answers) == 1 and answers <= optimal
    # the subset DP with the same rule (smallest sink, then first family, among equals)
    assert answers == {tuple(naive.map_by_subsets(beta, k)[1].tolist())}


@pytest.mark.parametrize("n,k", [(8, 2), (10, 3), (12, 2)])
def test_against_subset_dp_and_across_chunk_sizes(n, k):
    rng = np.random.default_rng(n + k)
    beta = naive.random_beta(n, k, rng, spread=30, dist="normal", p_forbidden=0.1)
    ref_score, ref_parents = naive.map_by_subsets(beta, k)
    fam = family_masks(n - 1, k)
    results = [run_map(beta, k, c) for c in (n, n - 3, 2)]
    for score, parents, M, sinks in results:
        assert score == pytest.approx(ref_score, rel=1e-13)
        assert is_dag(parents)
        assert dag_score(beta, fam, parents) == pytest.approx(score, rel=1e-13)
    # max and + along one path are exact: tables bit-identical whatever the chunk size
    for _, parents, M, sinks in results[1:]:
        np.testing.assert_array_equal(M, results[0][2])
        np.testing.assert_array_equal(sinks, results[0][3])
        np.testing.assert_array_equal(parents, results[0][1])


def test_best_chunk_against_brute_force():
    rng = np.random.default_rng(9)
    nb, k, d = 9, 3, 5
    fam = family_masks(nb, k)
    small = family_masks(d, min(k, d))
    beta_row = rng.normal(size=fam.size)
    beta_row[rng.random(fam.size) < 0.3] = -np.inf
    for chunk_id in range(1 << (nb - d)):
        out = np.empty(1 << d)
        MP.best_chunk(beta_row, fam, chunk_id, d, small, out)
        for o in range(1 << d):
            U = (chunk_id << d) | o
            inside = (fam & ~U) == 0
            assert out[o] == (beta_row[inside].max() if inside.any() else -np.inf)


def test_best_parents_and_sinks_kernel():
    fam = family_masks(4, 2)
    beta_row = np.linspace(-1, 0, fam.size)
    U = 0b1010
    f = MP.best_parents(beta_row, fam, np.int64(U))
    inside = np.flatnonzero((fam & ~U) == 0)
    assert f == inside[np.argmax(beta_row[inside])]
    # one chunk (c = 3, no high nodes): M(S) = max_i a_i(S−i) + M(S−i) with a ≡ 0 is 0
    acc = np.full(8, -np.inf)
    acc[0] = 0.0
    arg = np.full(8, -1, dtype=np.int8)
    out, sink = np.empty(8), np.empty(8, dtype=np.int8)
    MP.best_chunk_sinks(acc, arg, np.zeros((3, 4)), out, sink)
    assert out.tolist() == [0.0] * 8
    assert sink.tolist() == [-1, 0, 1, 0, 2, 0, 1, 0], "ties go to the smallest node"


# ----------------------------------------------------------------------- through the engine

def engine_map(beta, k, c, tmp_path, scheduler="threads"):
    from bigbn.engine.tasks import Job, execute
    from bigbn.store.workdir import Workdir

    n = beta.shape[0]
    plan = Plan(n, k, c, map_dag=True)
    wd = Workdir(tmp_path / f"c{c}-{scheduler}")
    wd.create_tables(plan)
    execute(Job(wd, plan, beta), scheduler=scheduler, workers=2)
    return wd.journal()["map_dag"]["log_score"], wd.read("map_parents", slice(None)).astype(np.int64)


@pytest.mark.parametrize("n,k", [(5, 2), (9, 3)])
def test_engine_stage_matches_the_references(n, k, tmp_path):
    rng = np.random.default_rng(n)
    beta = naive.random_beta(n, k, rng, spread=20, dist="normal", p_forbidden=0.1)
    ref, _ = naive.map_by_subsets(beta, k)
    answers = [engine_map(beta, k, c, tmp_path, s) for c, s in ((n, "sync"), (2, "threads"), (n - 2, "threads"))]
    for score, parents in answers:
        assert score == pytest.approx(ref, rel=1e-13) and is_dag(parents)
        assert dag_score(beta, family_masks(n - 1, k), parents) == pytest.approx(score, rel=1e-13)
        np.testing.assert_array_equal(parents, answers[0][1])


def test_learn_map_dag_files_and_resume(tmp_path):
    import csv

    import bigbn
    from bigbn.api import load_dataset, score_families

    path = Path(__file__).resolve().parent.parent / "examples" / "asia.csv"
    ds, score, _ = load_dataset(path)
    beta = score_families(ds, score, 2)
    ref, ref_parents = naive.map_by_subsets(beta, 2)
    w = tmp_path / "w"
    plain = bigbn.learn(path, max_parents=2, workdir=w)
    assert plain.map_parents is None and not (w / "map_dag.csv").exists()
    res = bigbn.learn(path, max_parents=2, workdir=w, map_dag=True)  # added to the finished run
    assert res.map_log_score == pytest.approx(ref, rel=1e-13)
    np.testing.assert_array_equal(res.posterior, plain.posterior)
    assert res.summary["stages"]["map"]["tasks_this_invocation"] == res.summary["plan"]["chunks"]
    assert res.summary["stages"]["forward"]["tasks_this_invocation"] == 0
    with open(w / "map_dag.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["parent", "child"] and [tuple(r) for r in rows[1:]] == res.map_arcs()
    assert res.summary["map_dag"]["log_score"] == res.map_log_score
    names = list(res.names)
    assert {(names.index(a), names.index(b)) for a, b in res.map_arcs()} == \
        {(u, v) for v in range(8) for u in range(8) if ref_parents[v] >> u & 1}
    again = bigbn.learn(path, max_parents=2, workdir=w, map_dag=True)  # finished: nothing runs
    assert again.summary["stages"]["map"]["tasks_this_invocation"] == 0
    assert again.map_arcs() == res.map_arcs()


def test_map_only_plan():
    p = Plan(12, 3, 6, "store", map_dag=True, posterior=False)
    assert {t.kind for t in p.tasks()} == {"scores", "map", "map_dag"}
    # in bytes (block 1); in blocks the chunk files of 2^6 entries take a block each
    assert set(p.tables()) == set(p.disk_bytes(None, 1)) | {"map_parents"} == {"beta", "map", "map_sink",
                                                                               "map_parents"}
    assert sum(p.disk_bytes(None, 1).values()) == 9 * 2**12 + 8 * 12 * p.n_families
    assert set(p.disk_bytes()) == {"beta", "map", "map_sink", "metadata"}
    assert p.disk_bytes()["map"] == p.disk_bytes()["map_sink"] == 4096 * p.n_chunks
    full = Plan(12, 3, 6, "store", map_dag=True)
    assert [t for t in full.tasks() if t.kind.startswith("map")] == \
        [t for t in p.tasks() if t.kind.startswith("map")]  # the same MAP tasks, the same I/O
    from bigbn.errors import OptionError
    from bigbn.plan.lattice import work_estimate

    assert set(work_estimate(p)) == {"map", "map_alpha"}
    with pytest.raises(OptionError, match="the posterior, the MAP network or both"):
        Plan(12, 3, 6, posterior=False)


def test_map_only_run_then_the_posterior_added(tmp_path):
    """--map-only computes exactly the MAP of a full run, writes no posterior tables or
    files; running again without it adds the posterior and leaves the MAP tasks alone."""
    import bigbn
    from bigbn.errors import OptionError, WorkdirError

    path = Path(__file__).resolve().parent.parent / "examples" / "asia.csv"
    w = tmp_path / "w"
    only = bigbn.learn(path, max_parents=2, workdir=w, chunk_bits=4, map_dag=True, posterior=False)
    full = bigbn.learn(path, max_parents=2, workdir=tmp_path / "full", chunk_bits=4, map_dag=True)
    assert only.map_log_score == full.map_log_score and only.map_arcs() == full.map_arcs()
    assert only.posterior is None and only.log_marginal is None
    assert only.summary["computed"] == ["map_dag"] and only.summary["log_marginal_likelihood"] is None
    assert "forward" not in only.summary["stages"] and "forward" not in only.summary["disk_bytes"]
    assert not (w / "edges.csv").exists() and not (w / "tables.zarr" / "forward").exists()
    with pytest.raises(OptionError, match="only the MAP network"):
        only.edges()
    with pytest.raises(WorkdirError, match="holds only the MAP network"):
        bigbn.sample(w, 10)
    with pytest.raises(OptionError, match="nothing to compute"):
        bigbn.learn(path, max_parents=2, workdir=w, posterior=False)
    both = bigbn.learn(path, max_parents=2, workdir=w, map_dag=True)
    assert both.summary["stages"]["map"]["tasks_this_invocation"] == 0
    assert both.summary["stages"]["forward"]["tasks_this_invocation"] == 2 ** (8 - 4)
    np.testing.assert_array_equal(both.posterior, full.posterior)
    assert both.map_arcs() == full.map_arcs() and (w / "edges.csv").exists()


def test_cli_map_only(tmp_path):
    from click.testing import CliRunner

    from bigbn.cli.main import main

    asia = Path(__file__).resolve().parent.parent / "examples" / "asia.csv"
    w = tmp_path / "w"
    r = CliRunner().invoke(main, ["run", str(asia), "-w", str(w), "--map-only", "-q"])
    assert r.exit_code == 0, r.output
    assert "MAP network (log score" in r.stdout and "log p(data)" not in r.stdout
    assert (w / "map_dag.csv").exists() and not (w / "edges.csv").exists()
    r = CliRunner().invoke(main, ["status", "-w", str(w)])
    assert "MAP network finished" in r.stdout and "without --map-only adds it" in r.stdout
    r = CliRunner().invoke(main, ["plan", "--n", "30", "--map-only"])
    assert "map 8.0 GiB, map_sink 1.0 GiB" in r.stdout and "forward" not in r.stdout


def test_backtrack_and_dag_score_refuse_impossible_tables():
    from bigbn.errors import EngineError
    from bigbn.kernels.mapdag import backtrack

    n, k = 4, 1
    fam = family_masks(n - 1, k)
    beta = np.zeros((n, fam.size))
    with pytest.raises(EngineError, match="no best sink for the node set 0xf"):
        backtrack(beta, fam, n, lambda S: -1)
    two_parents = np.array([0, 0, 0, 0b011], dtype=np.int64)  # node 3 ← 0, 1 with k = 1
    with pytest.raises(EngineError, match="node 3's parent set 0x3 is not one of its families"):
        dag_score(beta, fam, two_parents)
    assert dag_score(beta, fam, np.array([0, 0, 0, 0b001], dtype=np.int64)) == 0.0
