"""The MAP network (max-plus kernels on the chunk lattice) against brute force over all
DAGs and a plain subset DP (tests/naive.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import naive
from bigbn import maxplus as MP
from bigbn.families import family_masks, unsqueeze
from bigbn.mapdag import dag_score, map_in_memory
from bigbn.plan import Plan


def run_map(beta, k, c):
    return map_in_memory(SimpleNamespace(plan=Plan(beta.shape[0], k, c), beta=beta))


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
    from bigbn.engine import Job, execute
    from bigbn.workdir import Workdir

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
