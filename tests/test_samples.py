"""The posterior beyond edges: parent-set posteriors, exact DAG samples, ancestors, Markov
blankets, the DAG-modular prior and linear-extension counts, each against the slow
references of tests/naive.py (enumeration of DAGs or orders, an in-memory sampler,
permutation counting).

Monte Carlo tests use fixed seeds, so they are deterministic; their bounds are a few
standard errors of the exact answer, so a sampler that is wrong by more than noise fails.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import helpers as h
import naive
from bigbn.kernels import sampling as SK
from bigbn.cli.main import main
from bigbn.engine.tasks import Job, execute
from bigbn.errors import EngineError, OptionError, WorkdirError
from bigbn.kernels.families import family_masks
from bigbn.kernels.linext import count_linear_extensions, log_linear_extensions
from bigbn.outputs.parentsets import parent_set_posteriors
from bigbn.plan.lattice import Plan
from bigbn.store.rundir import RunRecord, fingerprint, write_record
from bigbn.plan.tiers import RunPlan
from bigbn.store.workdir import Workdir

ROOT = Path(__file__).resolve().parent.parent
ASIA = ROOT / "examples" / "asia.csv"


def finished_workdir(path: Path, beta: np.ndarray, k: int, c: int, scheduler: str = "sync",
                     alpha_mode: str = "recompute") -> Path:
    """A work directory as `bigbn run` leaves it, for a given beta (engine run directly)."""
    n = beta.shape[0]
    plan = Plan(n, k, c, alpha_mode)
    path.mkdir(parents=True)
    write_record(path, RunRecord(fingerprint("test", n, 1, {}), RunPlan.of(plan),
                                 tuple(f"X{i}" for i in range(n))))
    wd = Workdir(path)
    wd.create_tables(plan)
    execute(Job(wd, plan, beta), scheduler=scheduler, workers=2)
    return path


def engine_parent_sets(path: Path) -> np.ndarray:
    wd = Workdir(path)
    n = wd.read("beta", slice(None)).shape[0]
    log_px = float(wd.read("forward", slice((1 << n) - 1, 1 << n))[0])
    return parent_set_posteriors(wd.read("beta", slice(None)), wd.read("gamma", slice(None)), log_px)


# ----------------------------------------------------------------------- parent sets

@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [2, 3, 4, pytest.param(5, marks=pytest.mark.slow)])
def test_parent_sets_against_all_dags(n, seed, tmp_path):
    rng = np.random.default_rng(seed)
    mid = 0
    for k in range(n):
        beta = naive.random_beta(n, k, rng, spread=4)
        ref = naive.parent_sets_by_dags(beta, k)
        c = int(rng.integers(1, n + 1))
        got = engine_parent_sets(finished_workdir(tmp_path / f"k{k}", beta, k, c))
        np.testing.assert_allclose(got, ref, atol=1e-9, rtol=0)
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)
        mid += np.count_nonzero((ref > 0.01) & (ref < 0.99))
    assert mid >= n, "test data should be mid-range"


@pytest.mark.parametrize("n,k,c", [(6, 2, 3), (7, 3, 4), (8, 2, 5), (8, 7, 8)])
def test_parent_sets_against_all_orders(n, k, c, tmp_path):
    rng = np.random.default_rng(n * 10 + k)
    beta = naive.random_beta(n, k, rng, spread=6, p_forbidden=0.2)
    ref = naive.parent_sets_by_orders(beta, k)
    got = engine_parent_sets(finished_workdir(tmp_path / "w", beta, k, c))
    np.testing.assert_allclose(got, ref, atol=1e-9, rtol=0)
    assert np.all(got[~np.isfinite(beta)] == 0.0), "forbidden families are exactly 0"
    assert np.count_nonzero((ref > 0.01) & (ref < 0.99)) >= n


def test_inconsistent_tables_are_refused(tmp_path):
    rng = np.random.default_rng(3)
    beta = naive.random_beta(4, 2, rng, spread=4)
    wd = Workdir(finished_workdir(tmp_path / "w", beta, 2, 2))
    log_px = float(wd.read("forward", slice(15, 16))[0])
    gamma = wd.read("gamma", slice(None))
    with pytest.raises(EngineError, match="disagree"):
        parent_set_posteriors(beta, gamma + 1e-3, log_px)


# ----------------------------------------------------------------------- linear extensions

def random_dag(rng, n, density):
    order = rng.permutation(n)
    pm = np.zeros(n, dtype=np.int64)
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < density:
                pm[order[b]] |= 1 << order[a]
    return pm


@pytest.mark.slow
def test_linear_extensions_against_permutations():
    rng = np.random.default_rng(0)
    dags = [random_dag(rng, int(rng.integers(1, 8)), rng.random()) for _ in range(200)]
    dags += [random_dag(rng, 8, d) for d in (0.1, 0.2, 0.3, 0.5)]
    for pm in dags:
        assert count_linear_extensions(pm) == naive.linear_extensions_by_permutations(pm)
    eight = np.array([random_dag(rng, 8, rng.random()) for _ in range(40)])
    np.testing.assert_array_equal(log_linear_extensions(eight), naive.log_linear_extensions(eight))


def test_linear_extensions_at_n_30_and_cycles():
    star = np.zeros(30, dtype=np.int64)
    star[1:] = 1  # node 0 → every other node: 29! orders
    # beyond 2^53 the float count is good to a few ulps (linext.py)
    assert count_linear_extensions(star) == pytest.approx(math.factorial(29), rel=1e-14)
    assert count_linear_extensions(np.zeros(30, dtype=np.int64)) == pytest.approx(math.factorial(30), rel=1e-14)
    chain = np.array([0] + [1 << (i - 1) for i in range(1, 30)], dtype=np.int64)
    assert count_linear_extensions(chain) == 1.0
    assert count_linear_extensions(np.array([2, 1, 0], dtype=np.int64)) == 0.0  # 0 ⇄ 1: a cycle
    assert count_linear_extensions(np.array([1, 0, 0], dtype=np.int64)) == 0.0  # 0 → 0: a cycle
    assert count_linear_extensions(np.array([0, 3, 0], dtype=np.int64)) == 0.0  # 0 → 1 and 1 → 1
    # Two chains of 15 interleave: C(30, 15) orders.
    two = np.array([0] + [1 << (i - 1) for i in range(1, 15)] + [0] + [1 << (i - 1) for i in range(16, 30)],
                   dtype=np.int64)
    assert count_linear_extensions(two) == float(math.comb(30, 15))


def test_linear_extensions_branch_on_the_side_with_fewer_extremal_nodes():
    """A DAG with more sinks than sources is counted reversed, branching on its sources:
    K(2, 12) (two sources, each a parent of twelve sinks) needs 2^12 memoised sets when
    branching on the sinks, three on the sources, and its reverse the other way round; both
    are counted within 16 sets; a DAG whose rule picks the side that needs too many sets is
    counted on the other. Random DAGs and their reverses against permutations."""
    two_to_twelve = np.array([0, 0] + [0b11] * 12, dtype=np.int64)
    reverse = np.array([(1 << 14) - 4] * 2 + [0] * 12, dtype=np.int64)  # twelve sources, two sinks
    for pm in (two_to_twelve, reverse):
        assert count_linear_extensions(pm, max_sets=16) == 2.0 * math.factorial(12)
    # Where the rule's side needs too many sets the other side is tried: twelve sources over
    # two sinks (2^12 up-sets on the sources' side, 3 sets on the sinks') beside an out-star
    # of 14 leaves, so the DAG has 16 sinks against 13 sources and is counted reversed first.
    pm = np.zeros(29, dtype=np.int64)
    pm[12:14] = (1 << 12) - 1
    pm[15:] = 1 << 14
    want = math.comb(29, 14) * math.factorial(12) * 2 * math.factorial(14)
    assert count_linear_extensions(pm, max_sets=100) == pytest.approx(want, rel=1e-14)
    rng = np.random.default_rng(3)
    for _ in range(60):
        pm = random_dag(rng, int(rng.integers(2, 8)), rng.random())
        rev = np.array([sum(1 << u for u in range(len(pm)) if int(pm[u]) >> v & 1) for v in range(len(pm))],
                       dtype=np.int64)
        want = naive.linear_extensions_by_permutations(pm)
        assert count_linear_extensions(pm) == count_linear_extensions(rev) == want


def test_linear_extensions_refuse_more_than_62_nodes():
    with pytest.raises(OptionError, match="63 nodes: at most 62"):
        count_linear_extensions(np.zeros(63, dtype=np.int64))


# ----------------------------------------------------------------------- sampler kernels

@pytest.mark.slow
@pytest.mark.parametrize("point", [True, False])
def test_sampler_equals_the_in_memory_recursion(point, tmp_path, monkeypatch):
    """Same uniforms, same decisions: the chunk sweep is the plain backward recursion, with
    α at the visited sets (point) and with α per visited chunk (the path where
    `SK.point_alpha_pays` says no), for every chunk size."""
    monkeypatch.setattr(SK, "point_alpha_pays", lambda n, k, T: point)
    rng = np.random.default_rng(7)
    n, k, T, seed = 6, 2, 400, 11
    beta = naive.random_beta(n, k, rng, spread=3, p_forbidden=0.1)
    nodes_ref, parents_ref = naive.sample_by_recursion(beta, k, T, seed, SK.uniform)
    for c in (6, 3, 1):
        s = bigbn.sample(finished_workdir(tmp_path / f"c{c}", beta, k, c), T, seed=seed, workers=2)
        np.testing.assert_array_equal(s.orders[:, ::-1], nodes_ref)
        np.testing.assert_array_equal(s.parents, parents_ref)


@pytest.mark.parametrize("point", [True, False])
def test_samples_split_over_threads_are_the_same(point, tmp_path, monkeypatch):
    """`_sweep` walks the samples in one contiguous range per thread (with α at the visited
    sets, each its own memo, `SK.own_memo`): the draws of one, two and three threads (ranges
    of unequal length) are the same, bit for bit, on a lattice of several chunks."""
    from bigbn.outputs import samples as S
    from bigbn.outputs.result import run_workdir
    from bigbn.store.rundir import finished_run

    monkeypatch.setattr(SK, "point_alpha_pays", lambda n, k, T: point)
    T = S.MIN_SPLIT + 501
    path = finished_workdir(tmp_path / "w", naive.random_beta(9, 3, np.random.default_rng(4), spread=3), 3, 5)
    run = finished_run(run_workdir(path, "sample"), then="sample")
    one = S._draw_batch(run, 7, T, 3, 1)
    assert len({tuple(r) for r in one.parents.tolist()}) > T // 10
    for threads in (2, 3):
        d = S._draw_batch(run, 7, T, 3, threads)
        np.testing.assert_array_equal(d.orders, one.orders)
        np.testing.assert_array_equal(d.parents, one.parents)
        np.testing.assert_array_equal(d.attempt, one.attempt)


@pytest.mark.parametrize("point", [True, False])
def test_the_sweep_records_alpha_of_each_placed_node(point, tmp_path, monkeypatch):
    """The totals of the parents' draws (`SK.draw_parents`) are the α the sweep placed
    each node with (`SK._place`): log α_i(set before i) at every step, from the memo of
    α at the visited sets (point) and from the chunk tables, low and high nodes, against
    math.fsum over the families: within 1e-13 in log α, i.e. α within a relative 1e-13
    (both sum the same terms in other orders; random scores a few nats apart, forbidden
    families, 2^3-entry chunks)."""
    from concurrent.futures import ThreadPoolExecutor

    from bigbn.outputs import samples as S
    from bigbn.outputs.result import run_workdir
    from bigbn.store.rundir import finished_run

    monkeypatch.setattr(SK, "point_alpha_pays", lambda n, k, T: point)
    n, k, T = 7, 2, 400
    beta = naive.random_beta(n, k, np.random.default_rng(12), spread=3, p_forbidden=0.1)
    run = finished_run(run_workdir(finished_workdir(tmp_path / "w", beta, k, 3), "sample"), then="sample")
    lat = run.tiers[0].lattice
    with ThreadPoolExecutor(2) as pool:
        nodes, preds, alphas, attempt, _ = S._sweep(lat, Job(lat.workdir, lat.plan_read, lat.beta), T, 5, 0,
                                                   pool, 2)
    fam = family_masks(n - 1, k)
    want = np.array([[naive_log_alpha(beta[i], fam, P, i) for i, P in zip(nr, pr)]
                     for nr, pr in zip(nodes.tolist(), preds.tolist())])
    assert np.isfinite(want).all() and len(np.unique(nodes[:, 0])) == n  # every node placed first
    np.testing.assert_allclose(alphas, want, rtol=0, atol=1e-13)


def test_uniform_is_a_counter_based_hash():
    u = np.array([SK.uniform(5, t, 0, 0, 0) for t in range(20000)])
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.003
    assert SK.uniform(5, 3, 0, 2, 1) == SK.uniform(5, 3, 0, 2, 1)
    others = {SK.uniform(5, 3, 0, 2, 0), SK.uniform(5, 3, 1, 2, 1), SK.uniform(5, 3, 0, 3, 1),
              SK.uniform(6, 3, 0, 2, 1), SK.uniform(5, 4, 0, 2, 1)}
    assert SK.uniform(5, 3, 0, 2, 1) not in others and len(others) == 5


@pytest.mark.slow
def test_feature_kernels_against_naive():
    rng = np.random.default_rng(2)
    pm, _, _ = naive.dag_posterior(naive.random_beta(5, 2, rng), 2)
    pick = rng.choice(len(pm), 300)
    parents = np.ascontiguousarray(pm[pick])
    nodes = np.array([topological_backward(row) for row in parents])
    np.testing.assert_array_equal(SK.ancestors(parents, nodes), naive.ancestor_masks(parents))
    np.testing.assert_array_equal(SK.markov_blankets(parents), naive.markov_blanket_masks(parents))
    w = rng.random(len(parents))
    s1, s2 = SK.weighted_bit_sums(parents, w)
    bits = (parents[:, None, :] >> np.arange(5)[None, :, None]) & 1  # [t, u, v]
    np.testing.assert_allclose(s1, np.einsum("t,tuv->uv", w, bits), rtol=1e-12)
    np.testing.assert_allclose(s2, np.einsum("t,tuv->uv", w * w, bits), rtol=1e-12)


def test_feature_kernels_on_words_against_python_sets():
    """Past 63 variables a parent set is W words of 63 bits; the kernels against Python
    sets on random DAGs of 130 variables (3 words: bits in the first, middle and last)."""
    rng = np.random.default_rng(4)
    n, T = 130, 12
    W = SK.n_words(n)
    sets, words, nodes = [], np.zeros((T, n, W), dtype=np.int64), np.zeros((T, n), dtype=np.int64)
    for t in range(T):
        order = rng.permutation(n)
        ps = [set() for _ in range(n)]
        for j, v in enumerate(order):
            for u in order[:j][rng.random(j) < 3 / max(j, 1)]:
                ps[v].add(int(u))
                words[t, v, u // SK.WORD_BITS] |= 1 << (int(u) % SK.WORD_BITS)
        sets.append(ps)
        nodes[t] = order[::-1]

    def as_sets(out):
        return [{u for u in range(n) if out[v, u // SK.WORD_BITS] >> (u % SK.WORD_BITS) & 1} for v in range(n)]

    anc, mb = SK.ancestors(words, nodes), SK.markov_blankets(words)
    for t in range(T):
        assert as_sets(anc[t]) == naive.ancestor_sets(sets[t])
        assert as_sets(mb[t]) == naive.markov_blanket_sets(sets[t])
    assert max(len(a) for a in naive.ancestor_sets(sets[0])) > 30  # long paths across words
    w = rng.random(T)
    s1, s2 = SK.weighted_bit_sums(words, w)
    want = np.zeros((n, n))
    for t in range(T):
        for v in range(n):
            for u in sets[t][v]:
                want[u, v] += w[t]
    np.testing.assert_allclose(s1, want, rtol=1e-12)
    assert (s1 > 0).sum() == (want > 0).sum() and s2.max() > 0


def topological_backward(parents_row):
    """Nodes in the order the sampler places them: each the last of the remaining ones."""
    n, left, out = len(parents_row), (1 << len(parents_row)) - 1, []
    while left:
        for v in range(n):
            if left >> v & 1 and not any(left >> w & 1 and int(parents_row[w]) >> v & 1 for w in range(n)):
                out.append(v)
                left &= ~(1 << v)
                break
    return out


def alpha_one(n):
    """`SK.point_alpha` of scores with the empty family alone (log score 0): α ≡ 1."""
    fam = family_masks(n - 1, 2)
    beta = np.full((n, fam.size), -np.inf)
    beta[:, 0] = 0.0
    return SK.point_alpha(beta, fam, 2)


def test_rounding_gap_is_rejected_not_forced():
    """A u beyond the computed total can only come from rounding; the kernels reject it
    (the sample is drawn again) instead of forcing some node."""
    c = 3
    # α ≡ 1 (log 0): L(S) = |S|!, consistent everywhere but at V
    L = np.array([math.lgamma(bin(S).count("1") + 1) for S in range(8)])
    pa = alpha_one(3)
    L_bad = L.copy()
    L_bad[7] = L[7] + 5.0  # L(S) far above its terms: their total is e^-5
    T = 2000
    state = dict(cur=np.full(T, 7, dtype=np.int64), step=np.zeros(T, dtype=np.int64),
                 attempt=np.zeros(T, dtype=np.int64), status=np.zeros(T, dtype=np.int8),
                 key=np.zeros(T, dtype=np.int64))
    pend = dict(pu=np.zeros(T), pcum=np.zeros(T), plog=np.zeros(T), pbit=np.zeros(T, dtype=np.int64))
    nodes, preds = np.zeros((T, 3), dtype=np.int64), np.zeros((T, 3), dtype=np.int64)
    SK.walk_chunk(0, c, L_bad, pa, 1, 0, state["cur"], state["step"], state["attempt"],
                  state["status"], state["key"], pend["pu"], pend["pcum"], pend["plog"], pend["pbit"],
                  nodes, preds, np.zeros((T, 3)))
    u = np.array([SK.uniform(1, t, 0, 0, 0) for t in range(T)])
    total = sum(math.exp(L_bad[7 ^ (1 << i)] - L_bad[7]) for i in range(3))
    rejected = state["status"] == SK.REJECTED
    np.testing.assert_array_equal(rejected, u >= total)
    assert rejected.sum() > 1900 and np.all(state["status"][~rejected] == SK.DONE)


def test_pending_samples_without_a_taker_are_rejected():
    c, H, b = 2, 0, 0  # a sample of chunk 1 (high bit 0) waits for chunk 0
    cur = np.array([0b111], dtype=np.int64)
    status = np.array([SK.PENDING], dtype=np.int8)
    key = np.array([0], dtype=np.int64)
    pu, pcum, plog = np.array([0.9]), np.array([0.2]), np.array([0.0])
    pbit = np.array([0], dtype=np.int64)
    nodes, preds, step = np.zeros((1, 3), dtype=np.int64), np.zeros((1, 3), dtype=np.int64), np.zeros(1, dtype=np.int64)
    L, span = np.full(4, np.log(0.5)), alpha_one(3)  # term 0.5 at offset 3: 0.2 + 0.5 < 0.9
    alphas = np.full((1, 3), np.nan)
    SK.advance_pending(H, b, c, L, span, cur, step, status, key, pu, pcum, plog, pbit, nodes, preds, alphas)
    assert status[0] == SK.REJECTED and step[0] == 0
    pu[0], pcum[0], status[0], key[0], pbit[0] = 0.6, 0.2, SK.PENDING, 0, 0
    SK.advance_pending(H, b, c, L, span, cur, step, status, key, pu, pcum, plog, pbit, nodes, preds, alphas)
    assert status[0] == SK.ACTIVE and cur[0] == 0b011 and nodes[0, 0] == 2 and preds[0, 0] == 0b011
    assert alphas[0, 0] == 0.0 and np.isnan(alphas[0, 1:]).all()  # log α ≡ 0 of the node placed


def inflate_log_px(path: Path, by: float) -> None:
    """Raise L(V) (the last entry of the last forward chunk) and journal the new chunk's
    CRC and log p(x), as if the tables had been computed that way."""
    from bigbn.store.workdir import checksum

    wd = Workdir(path)
    n = wd.read("beta", slice(None)).shape[0]
    size = wd.array("forward").chunks[0]
    last = (1 << n) // size - 1
    chunk = wd.read("forward", slice(last * size, (last + 1) * size))
    chunk[-1] += by
    wd.array("forward")[last * size:(last + 1) * size] = chunk
    journal = path / "journal.jsonl"
    recs = [json.loads(x) for x in journal.read_text().splitlines()]
    for r in recs:
        if r["task"] == f"forward:{last}":
            r["crc"] = checksum(chunk)
        if r["task"] == "edges":
            r["log_px"] += by
    journal.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_damaged_or_inconsistent_tables_are_refused(tmp_path):
    rng = np.random.default_rng(12)
    beta = naive.random_beta(5, 2, rng, spread=3)
    path = finished_workdir(tmp_path / "w", beta, 2, 3)
    wd = Workdir(path)
    wd.array("forward")[5] = wd.read("forward", slice(5, 6))[0] + 1.0  # chunk 0, CRC now wrong
    with pytest.raises(WorkdirError, match="forward: chunk 0 is missing or damaged"):
        bigbn.sample(path, 100, seed=1)
    path = finished_workdir(tmp_path / "v", beta, 2, 3)
    inflate_log_px(path, 30.0)  # every first step rejected: inconsistent, not rounding
    with pytest.raises(EngineError, match="rejected 20 times"):
        bigbn.sample(path, 100, seed=1)


def test_redrawn_samples_after_rounding_are_valid(tmp_path):
    """Inflate L(V) a little, as gross rounding would: some first steps are rejected and
    drawn again with new random numbers; every sample is still a DAG of the model."""
    rng = np.random.default_rng(4)
    beta = naive.random_beta(5, 2, rng, spread=3)
    path = finished_workdir(tmp_path / "w", beta, 2, 3)
    inflate_log_px(path, 0.05)
    s = bigbn.sample(path, 2000, seed=1)
    assert 40 < s.info["redrawn_for_rounding"] < 200  # ≈ 2000 (1 - e^-0.05) ≈ 98
    pm, prob, _ = naive.dag_posterior(beta, 2)
    support = {tuple(r) for r in pm[prob > 0]}
    assert all(tuple(r) in support for r in s.parents)


# ----------------------------------------------------------------------- samples vs exact

def dag_counts(parents, pm):
    index = {tuple(r): d for d, r in enumerate(pm.tolist())}
    counts = np.zeros(len(pm))
    for r in parents.tolist():
        counts[index[tuple(r)]] += 1
    return counts


def test_samples_follow_the_exact_dag_distribution(tmp_path):
    rng = np.random.default_rng(5)
    n, k, T = 4, 3, 20000
    beta = naive.random_beta(n, k, rng, spread=3)
    pm, prob, lle = naive.dag_posterior(beta, k)
    s = bigbn.sample(finished_workdir(tmp_path / "w", beta, k, 2), T, seed=3)
    counts = dag_counts(s.parents, pm)
    assert counts[prob == 0].sum() == 0
    z = (counts - T * prob) / np.sqrt(T * prob * (1 - prob) + 1e-300)
    big = T * prob >= 5
    assert big.sum() >= 50, "many DAGs of noticeable probability"
    assert np.max(np.abs(z[big])) < 4.5
    chi2 = float(np.sum((counts[big] - T * prob[big]) ** 2 / (T * prob[big])))
    dof = int(big.sum())
    assert chi2 < dof + 5 * math.sqrt(2 * dof)
    # Reported exact posteriors and #LE of the sampled DAGs equal the enumeration's.
    index = {tuple(r): d for d, r in enumerate(pm.tolist())}
    for d in s.dags():
        j = index[tuple(d["parents"].tolist())]
        assert d["exact_order_modular"] == pytest.approx(prob[j], abs=1e-12, rel=1e-9)
        assert d["log_linear_extensions"] == pytest.approx(lle[j], abs=1e-12)
        assert d["probability"] == pytest.approx(counts[j] / T, abs=1e-12)


@pytest.mark.parametrize("prior", ["order-modular", "dag-modular"])
def test_features_against_enumeration(prior, tmp_path):
    rng = np.random.default_rng(6)
    n, k, T = 5, 2, 6000
    beta = naive.random_beta(n, k, rng, spread=3)
    pm, prob, _ = naive.dag_posterior(beta, k, prior)
    exact = {
        "edge": np.einsum("d,duv->uv", prob, (pm[:, None, :] >> np.arange(n)[None, :, None]) & 1),
        "ancestor": _mean_bits(naive.ancestor_masks(pm), prob),
        "blanket": _mean_bits(naive.markov_blanket_masks(pm), prob),
    }
    s = bigbn.sample(finished_workdir(tmp_path / "w", beta, k, 3), T, seed=9, prior=prior)
    got = {"edge": s.edge_probabilities(with_se=True), "ancestor": s.ancestor_probabilities(with_se=True),
           "blanket": s.markov_blanket_probabilities(with_se=True)}
    mid = 0
    for name, P in exact.items():
        p, se = got[name]
        off = ~np.eye(n, dtype=bool)
        inner = off & (P > 1e-3) & (P < 1 - 1e-3)
        mid += np.count_nonzero((P > 0.05) & (P < 0.95))
        assert np.all(np.abs(p - P)[inner] < 5 * se[inner] + 1e-3), name
        if prior == "order-modular":  # equal weights: se = sqrt(p̂(1 − p̂)/T)
            np.testing.assert_allclose(se[inner], np.sqrt(P * (1 - P) / T)[inner], rtol=0.2)
    assert mid >= 10, "test data should give mid-range features"
    if prior == "dag-modular":
        assert 0.2 * T < s.ess < T
        # Π β / Ẑ against the exact dag-modular posterior of the most probable DAGs.
        index = {tuple(r): d for d, r in enumerate(pm.tolist())}
        rel = s.info["log_z_dag_modular_rel_se"]
        for d in s.dags(5):
            assert d["estimated_dag_modular"] == pytest.approx(prob[index[tuple(d["parents"].tolist())]],
                                                               rel=5 * rel)
    else:
        assert s.ess == pytest.approx(T)



def _fresh_process(code: str, *args) -> list[str]:
    """Run ``python -c code *args`` in a process of its own (bigbn from this checkout); its
    stdout's lines, after asserting it exited 0."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def _mean_bits(masks, prob):
    n = masks.shape[1]
    return np.einsum("d,duv->uv", prob, (masks[:, None, :] >> np.arange(n)[None, :, None]) & 1)


def test_edge_self_check_and_determinism(tmp_path):
    rng = np.random.default_rng(8)
    beta = naive.random_beta(7, 3, rng, spread=3)
    a = finished_workdir(tmp_path / "a", beta, 3, 7)
    b = finished_workdir(tmp_path / "b", beta, 3, 2, scheduler="threads")
    s1 = bigbn.sample(a, 3000, seed=21, workers=1)
    s2 = bigbn.sample(b, 3000, seed=21, workers=2)
    np.testing.assert_array_equal(s1.parents, s2.parents)
    np.testing.assert_array_equal(s1.orders, s2.orders)
    assert not np.array_equal(bigbn.sample(a, 3000, seed=22).parents, s1.parents)
    check = s1.info["edge_check"]
    assert check["max_abs_z"] < 4.5 and check["hard_edges_ok"]
    assert s1.info["chunks_read"] == 1 and s2.info["chunks_read"] <= 32


@pytest.mark.parametrize("alpha", ["recompute", "store"])
def test_sampling_a_finished_run_never_imports_zarr(alpha, tmp_path):
    """`bigbn sample` and `bigbn.open` read a finished run's tables by plain file I/O
    (`workdir.Layout`): the process never imports zarr, ≈ 0.15 s of a short command's
    start (#39 item 4). In a fresh process, since this one has zarr loaded; with α stored
    too (500 samples of 8 nodes take α per visited chunk: rows of the α table)."""

    wd = tmp_path / "w"
    bigbn.learn(ASIA, workdir=wd, max_parents=2, alpha_mode=alpha)
    assert not SK.point_alpha_pays(8, 2, 500)
    code = ("import sys; from bigbn.cli.main import main; import bigbn; "
            f"main(['sample', '--workdir', {str(wd)!r}, '--samples', '500', '--seed', '3', '--top', '0'], "
            "standalone_mode=False); r = bigbn.open(sys.argv[1]); r.edges(); r.parent_sets('lung'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('zarr', 'numcodecs')))")
    assert _fresh_process(code, wd)[-1] == "[]"
    assert (wd / "samples-order-modular" / "dags.csv").exists()


def test_draws_of_an_earlier_format_are_removed_and_nothing_else(tmp_path, monkeypatch):
    """A draws folder whose KEY is not the run's (an earlier DRAWS_FORMAT: no call can use
    it again) is removed by the next `sample`; the run's own folders (every seed), and a
    folder of that name holding anything bigbn does not write there, are kept."""
    from bigbn.outputs import samples as S

    wd = finished_workdir(tmp_path / "w", naive.random_beta(5, 2, np.random.default_rng(3), spread=3), 2, 5)
    monkeypatch.setattr(S, "DRAWS_FORMAT", S.DRAWS_FORMAT - 1)  # as an earlier bigbn drew them
    old = bigbn.sample(wd, 200, seed=2)
    (old_folder,) = wd.glob("samples-seed2-*")
    monkeypatch.undo()
    kept = wd / "samples-seed3-0123456789ab"  # bigbn's pattern, but a file of somebody else's inside
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    mine = wd / "samples-seed4-mine"
    mine.mkdir()
    bigbn.sample(wd, 200, seed=1)
    assert not old_folder.exists()
    assert kept.exists() and mine.exists()
    again = bigbn.sample(wd, 200, seed=2)
    assert len(list(wd.glob("samples-seed1-*"))) == 1 and list(wd.glob("samples-seed2-*")) != [old_folder]
    assert len(list(wd.glob("samples-seed2-*"))) == 1
    np.testing.assert_array_equal(again.parents, old.parents)  # drawn again: the same samples


def test_a_stale_draws_folder_with_anything_else_in_its_parts_is_kept(tmp_path, monkeypatch):
    """A draws folder of another KEY is removed only when its parts/ holds parts and a
    killed writer's temporary files alone, and nothing in it is a symlink: a user's file or
    folder in parts/, or a link in the place of a part or the journal, keeps it whole."""
    import shutil

    from bigbn.outputs import samples as S

    wd = finished_workdir(tmp_path / "w", naive.random_beta(4, 2, np.random.default_rng(5), spread=3), 2, 3)
    monkeypatch.setattr(S, "DRAWS_FORMAT", S.DRAWS_FORMAT - 1)  # as an earlier bigbn drew them
    bigbn.sample(wd, 20, seed=2, batch=10)
    monkeypatch.undo()
    (old,) = wd.glob("samples-seed2-*")
    (old / "parts" / ".batch-0-10.npz.12-34.tmp").write_bytes(b"half")  # a killed writer's: still stale
    mine = tmp_path / "mine.txt"
    mine.write_text("mine")
    extras = [lambda f: (f / "parts" / "notes.txt").write_text("mine"),
              lambda f: (f / "parts" / "batch-20-30.npz").mkdir(),
              lambda f: ((f / "parts" / "batch-0-10.npz").unlink(), (f / "parts" / "batch-0-10.npz").symlink_to(mine)),
              lambda f: ((f / "journal.jsonl").unlink(), (f / "journal.jsonl").symlink_to(mine))]
    kept = []
    for i, extra in enumerate(extras):
        f = wd / old.name.replace("seed2-", f"seed{10 + i}-")
        shutil.copytree(old, f, symlinks=True)
        extra(f)
        kept.append(f)
    bigbn.sample(wd, 20, seed=1, batch=10)
    assert not old.exists()
    assert all(f.exists() for f in kept) and (kept[0] / "parts" / "notes.txt").read_text() == "mine"


def test_too_many_samples_are_refused_before_their_tasks_are_listed(tmp_path, monkeypatch):
    """The memory check comes first: 10^8 samples in batches of 1 were 10^8 task objects
    (minutes and tens of GiB) before the one-line refusal."""
    from bigbn.outputs import samples as S

    wd = finished_workdir(tmp_path / "w", naive.random_beta(4, 2, np.random.default_rng(5), spread=3), 2, 3)

    def listed(T, batch):
        raise AssertionError(f"{T} samples in batches of {batch} listed before the budget was checked")

    monkeypatch.setattr(S, "batch_specs", listed)
    with pytest.raises(OptionError, match="100000000 samples of 4 variables need about"):
        bigbn.sample(wd, 10**8, batch=1, memory="1G")
    # a budget past the machine's RAM drew every batch, then died gathering them
    monkeypatch.setattr(bigbn.options, "machine_memory", lambda: 1 << 30)
    with pytest.raises(OptionError, match=r"100000000 samples of 4 variables need about .* more than this "
                                          r"machine's 1\.0 GiB; draw fewer"):
        bigbn.sample(wd, 10**8, batch=1, memory="1T")


def test_a_damaged_stored_alpha_never_changes_the_samples(tmp_path):
    """A run with --alpha store keeps α on disk, but the sweep took α there without any
    check: damaged α chunks gave other samples (a self-check |z| of 200) and exit 0. The
    sweep computes α from β (CRC-checked): the samples of an intact run, bit for bit."""
    import shutil

    beta = naive.random_beta(6, 2, np.random.default_rng(7), spread=3)
    wd = finished_workdir(tmp_path / "w", beta, 2, 3, alpha_mode="store")
    assert not SK.point_alpha_pays(6, 2, 300)  # α per visited chunk, as the tables give it
    ref = bigbn.sample(wd, 300, seed=1)
    for folder in wd.glob("samples-seed*"):  # the draws are kept: draw again
        shutil.rmtree(folder)
    chunks = [f for f in (wd / "tables.zarr" / "alpha" / "c").rglob("*") if f.is_file()]
    assert chunks
    for f in chunks:
        a = np.fromfile(f, dtype="<f8")
        a[: a.size // 2] += 5.0
        a.tofile(f)
    again = bigbn.sample(wd, 300, seed=1)
    np.testing.assert_array_equal(again.parents, ref.parents)
    np.testing.assert_array_equal(again.orders, ref.orders)


def test_forbidden_and_required_edges_are_sampled_exactly(tmp_path):
    from bigbn.scores.priors import read_edge_list

    names = ["asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp"]
    req, forbid = tmp_path / "req.csv", tmp_path / "forbid.csv"
    req.write_text("parent,child\nsmoke,lung\n")
    forbid.write_text("parent,child\nbronc,dysp\n")
    res = bigbn.learn(ASIA, max_parents=2, workdir=tmp_path / "w",
                      prior_kwargs={"require": read_edge_list(req, names),
                                    "forbid": read_edge_list(forbid, names)})
    assert res.posterior[2, 3] == 1.0 and res.posterior[4, 7] == 0.0
    s = bigbn.sample(tmp_path / "w", 30000, seed=5)
    p = s.edge_probabilities()
    assert p[2, 3] == 1.0 and p[4, 7] == 0.0, "counts / T, not a sum of 1/T"
    assert s.info["edge_check"]["hard_edges_ok"]
    assert sum(d["probability"] for d in s.dags()) == pytest.approx(1.0, abs=1e-12)


def test_bad_sample_options(tmp_path):
    rng = np.random.default_rng(9)
    path = finished_workdir(tmp_path / "w", naive.random_beta(3, 1, rng), 1, 3)
    for kwargs in ({"samples": 0}, {"seed": -1}, {"prior": "uniform"}, {"workers": 0}):
        with pytest.raises(OptionError):
            bigbn.sample(path, **{"samples": 10, **kwargs})
    with pytest.raises(WorkdirError, match="not a bigbn work directory"):
        bigbn.sample(tmp_path / "nothing", 10)
    run = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**run, "fingerprint": {**run["fingerprint"], "numerics": "old"}}))
    with pytest.raises(WorkdirError, match="another bigbn version"):
        bigbn.sample(path, 10)
    (path / "run.json").write_text(json.dumps(run))
    journal = path / "journal.jsonl"
    journal.write_text("".join(x + "\n" for x in journal.read_text().splitlines() if '"edges"' not in x))
    with pytest.raises(WorkdirError, match="not finished"):
        bigbn.sample(path, 10)


# ----------------------------------------------------------------------- API and CLI

def test_learn_parent_sets_api_and_file(tmp_path):
    names = ['a,b', 'say "hi"', "[x]", "plain"]
    rng = np.random.default_rng(10)
    X = rng.integers(0, 2, size=(300, 4))
    X[:, 1] = np.where(rng.random(300) < 0.8, X[:, 0], X[:, 1])
    X[:, 3] = np.where(rng.random(300) < 0.7, X[:, 1] ^ X[:, 2], X[:, 3])
    data = tmp_path / "d.csv"
    with open(data, "w", newline="") as fh:
        csv.writer(fh).writerows([names] + X.tolist())
    res = bigbn.learn(data, max_parents=2, workdir=tmp_path / "w", parent_set_mass=1.0)
    for v, name in enumerate(names):
        rows = res.parent_sets(name)
        assert rows == res.parent_sets(v)
        assert res.parent_sets(name, top=2) == rows[:2] and len(rows) > 2
        probs = [p for _, p in rows]
        assert probs == sorted(probs, reverse=True) and all(p > 0 for p in probs)
        assert sum(probs) == pytest.approx(1.0, abs=1e-12)
        # the edge posteriors are sums of parent-set posteriors
        for u, parent in enumerate(names):
            if u != v:
                assert sum(p for ps, p in rows if parent in ps) == pytest.approx(res.posterior[u, v], abs=1e-12)
    with open(tmp_path / "w" / "parent_sets.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["child", "parents", "posterior"]
    from_file = {}
    for child, parents, p in rows[1:]:
        from_file.setdefault(child, []).append((tuple(json.loads(parents)), float(p)))
    assert from_file == {name: res.parent_sets(name) for name in names}
    res = bigbn.learn(data, max_parents=2, workdir=tmp_path / "w", parent_set_mass=0.5)
    with open(tmp_path / "w" / "parent_sets.csv", newline="") as fh:
        short = list(csv.DictReader(fh))
    for name in names:
        ps = [float(r["posterior"]) for r in short if r["child"] == name]
        assert sum(ps) >= 0.5 and sum(ps[:-1]) < 0.5
    with pytest.raises(OptionError):
        res.parent_sets("nope")
    with pytest.raises(OptionError):
        bigbn.learn(data, workdir=tmp_path / "w", parent_set_mass=0)


def test_cli_run_and_sample_on_asia(tmp_path):
    w = tmp_path / "w"
    r = CliRunner().invoke(main, ["run", str(ASIA), "-w", str(w), "-q"])
    assert r.exit_code == 0, r.output
    assert "most probable parent set of each node:" in r.output
    assert "dysp <- {bronc, either}" in r.output
    r = CliRunner().invoke(main, ["sample", "-w", str(w), "-T", "3000", "--seed", "2"])
    assert r.exit_code == 0, r.output
    out = w / "samples-order-modular"
    for name in ("edges.csv", "ancestors.csv", "markov_blanket.csv", "dags.csv", "samples.npz", "summary.json"):
        assert (out / name).exists(), name
    assert "worst |z|" in r.output and "either ⇝ dysp" in r.output
    with open(out / "dags.csv", newline="") as fh:
        dags = list(csv.DictReader(fh))
    assert sum(int(d["count"]) for d in dags) == 3000
    assert all(0 < float(d["exact_posterior"]) < 1 for d in dags)
    npz = np.load(out / "samples.npz")
    s = bigbn.sample(w, 3000, seed=2)
    np.testing.assert_array_equal(npz["parents"], s.parents)
    r = CliRunner().invoke(main, ["sample", "-w", str(w), "-T", "500", "--prior", "dag-modular"])
    assert r.exit_code == 0, r.output
    with open(w / "samples-dag-modular" / "edges.csv", newline="") as fh:
        assert next(csv.reader(fh)) == ["parent", "child", "probability", "se"]
    r = CliRunner().invoke(main, ["run", str(ASIA), "-w", str(w), "-q", "--fresh"])
    assert r.exit_code == 0 and not out.exists(), "--fresh removes old samples"


def test_cli_sample_errors(tmp_path):
    r = CliRunner().invoke(main, ["sample", "-w", str(tmp_path)])
    assert r.exit_code == 1 and r.output.count("Error:") == 1 and "not a bigbn work directory" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(main, ["sample", "-w", str(tmp_path), "-T", "0"])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_a_self_check_of_no_edge_says_so(tmp_path):
    """With too few samples for any edge (T p (1 − p) < 10 for all), the CLI printed
    "worst |z| = 0.00 (asia -> asia)", a check of a loop, and the page "worst |z| = 0.00"."""
    from bigbn.outputs.report import write_report

    w = tmp_path / "w"
    assert CliRunner().invoke(main, ["run", str(ASIA), "-w", str(w), "-q"]).exit_code == 0
    r = CliRunner().invoke(main, ["sample", "-w", str(w), "-T", "3"])
    assert r.exit_code == 0, r.output
    assert "self-check: no edge to compare with its exact posterior" in r.output and "asia -> asia" not in r.output
    assert json.loads((w / "samples-order-modular" / "summary.json").read_text())["edge_check"]["edges_compared"] == 0
    page = write_report(w, tmp_path / "r.html").read_text()
    assert "worst |z|" not in page
    r = CliRunner().invoke(main, ["sample", "-w", str(w), "-T", "3000"])
    assert "worst |z| = " in r.output
    assert "worst |z| = " in write_report(w, tmp_path / "r.html").read_text()


def test_linear_extension_counting_is_bounded():
    """A DAG whose count needs too many memoised sets is refused with an error, not a
    hang or an exhausted memory: 20 sources and 20 sinks, sink j a child of sources j,
    j + 1 and j + 5 (mod 20), need ≈ 845 000 sets branching on either side. The complete
    bipartite DAG 2 → 28 (2^28 sets branching on its sinks) is counted on its two sources."""
    wide = np.zeros(40, dtype=np.int64)
    for j in range(20):
        wide[20 + j] = (1 << j) | (1 << (j + 1) % 20) | (1 << (j + 5) % 20)
    with pytest.raises(EngineError, match="more than 100000 memoised node sets"):
        count_linear_extensions(wide, max_sets=100_000)
    pm = np.zeros(30, dtype=np.int64)
    pm[2:] = 0b11
    assert count_linear_extensions(pm, max_sets=100_000) == pytest.approx(2 * math.factorial(28), rel=1e-14)
    pm[2:] = 0b1  # 0 → 28 nodes, node 1 alone: 30 · 28! orders, found at once
    assert count_linear_extensions(pm, max_sets=100_000) == pytest.approx(30 * math.factorial(28), rel=1e-14)



# ------------------------------------------------------------ hostile inputs, round 4 (issue #37)

@pytest.mark.slow
def test_sample_takes_a_result_of_learn_with_a_workdir(tmp_path):
    """sample(result) raised TypeError; a Result of learn(..., workdir=...) now draws from its
    run, as effects(result) takes a Result. A Result whose run was in a temporary folder
    says to keep one."""
    res = bigbn.learn(ASIA, max_parents=1, workdir=tmp_path / "w")
    assert res.workdir == (tmp_path / "w").resolve()
    a, b = bigbn.sample(res, 50, seed=4), bigbn.sample(tmp_path / "w", 50, seed=4)
    assert np.array_equal(a.parents, b.parents) and a.names == res.names
    tiered = bigbn.learn(ASIA, max_parents=1, workdir=tmp_path / "t",
                         tiers=[list(res.names[:4]), list(res.names[4:])])
    assert np.array_equal(bigbn.sample(tiered, 50, seed=4).parents,
                          bigbn.sample(tmp_path / "t", 50, seed=4).parents)
    with pytest.raises(OptionError, match=r"^this result's run was in a temporary folder, removed when "
                                          r"learn returned: run learn\(\.\.\., workdir=DIR\) to keep it "
                                          r"for sample\(\)$"):
        bigbn.sample(bigbn.learn(ASIA, max_parents=1), 50)


@pytest.mark.parametrize("source, got", [(None, "NoneType"), (123, "int"), ([str(ASIA)], "list"),
                                         ("frame", "DataFrame (data go to learn)")])
def test_sample_of_what_is_not_a_run_is_one_line(source, got):
    """sample(None), sample(123), sample([path]) and sample(DataFrame) raised TypeError."""
    if source == "frame":
        source = pytest.importorskip("pandas").read_csv(ASIA)
    with pytest.raises(OptionError) as e:
        bigbn.sample(source, 50)
    assert str(e.value) == ("sample() takes a finished run: its work directory (a path) or the Result of "
                            f"learn, got {got}")


# ------------------------------------------------------------ issue #37: hostile inputs, round 4

HOLD_LOCK = """
import sys, time
from bigbn.store.workdir import Workdir
with Workdir(sys.argv[1]).lock():
    print("locked", flush=True)
    time.sleep(120)
"""


def test_sampling_a_run_in_progress_says_it_is_running_or_unfinished(tmp_path):
    """A tiered run between its tiers (a later tier's family β not journaled yet) was
    'family_beta is missing or damaged'; while its `bigbn run` still held the workdir's
    lock, sample said to run that command again, which the lock then refused."""
    import subprocess
    import sys

    from test_cli import assert_one_line_error

    wd = tmp_path / "w"
    r = CliRunner().invoke(main, ["run", str(ASIA), "--tiers", str(ROOT / "examples" / "asia.tiers.csv"),
                                  "-w", str(wd), "-k", "2", "-q"])
    assert r.exit_code == 0, r.output
    journal = wd / "journal.jsonl"
    journal.write_text("".join(line + "\n" for line in journal.read_text().splitlines()
                               if not any(f'"tier4/{t}"' in line for t in ("edges", "family_beta"))))
    unfinished = (f"{wd}: the run is not finished; run the same `bigbn run` command again to finish "
                  "it, then sample")
    r = CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "10"])
    assert_one_line_error(r, unfinished)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(wd)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "10"])
        assert_one_line_error(r, f"{wd}: the run is still running (pid {holder.pid} on ")
        assert "holds the workdir's lock); wait for it to finish, then sample" in r.output
    finally:
        holder.kill()
        holder.wait()
    assert_one_line_error(CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "10"]), unfinished)


@pytest.mark.parametrize("n, k, spread, forbidden", [(6, 2, 3.0, 0.0), (7, 3, 10.0, 0.3), (8, 8, 5.0, 0.5),
                                                     (9, 1, 2.0, 0.0), (5, 0, 1.0, 0.0)])
def test_point_alpha_against_naive(n, k, spread, forbidden):
    """`SK.alphas_at` (α_i(S − i) of every i ∈ S, one pass over the subsets of S, memoised)
    against logsumexp over the families ⊆ S − i, for every S; with a memo so small it is
    emptied many times, and twice over (memo hits)."""
    rng = np.random.default_rng(n * 10 + k)
    beta = naive.random_beta(n, k, rng, spread=spread, p_forbidden=forbidden)
    fam = family_masks(n - 1, k)
    pa = SK.point_alpha(beta, fam, k, 16)
    want = [naive.alpha_chunk(beta[i], fam, 0, n - 1) for i in range(n)]
    for _ in range(2):
        for S in rng.permutation(1 << n).tolist():
            row = SK.alphas_at(pa, np.int64(S))
            for i in range(n):
                if S >> i & 1:
                    w = want[i][naive._squeeze(S ^ (1 << i), i)]
                    if w == -np.inf:
                        assert pa[7][row, i] == -np.inf
                    else:
                        assert abs(pa[7][row, i] - w) <= 1e-12 * max(1.0, abs(w)), (S, i)


def test_point_alpha_rescales_far_below_the_best_family():
    """Families ⊆ U all > 700 nats below node i's best: the terms exp(β − max β) would be
    subnormal or 0, so α is rescaled by the best family ⊆ U (`_alpha_rescaled`)."""
    n, k = 4, 1
    fam = family_masks(n - 1, k)
    beta = np.full((n, fam.size), -2000.0)
    beta[:, -1] = 0.0  # the single parent of the highest bit: far above the rest
    beta[1, 1] = -np.inf
    beta[3, :-1] = -np.inf  # node 3: no family at all within U unless U holds the highest bit
    pa = SK.point_alpha(beta, fam, k)
    want = [naive.alpha_chunk(beta[i], fam, 0, n - 1) for i in range(n)]
    for S in range(1, 1 << n):
        row = SK.alphas_at(pa, np.int64(S))
        for i in range(n):
            if S >> i & 1:
                w = want[i][naive._squeeze(S ^ (1 << i), i)]
                if i == 3 and not S >> 2 & 1:
                    assert w == pa[7][row, i] == -np.inf
                else:
                    assert w > -1e4 and abs(pa[7][row, i] - w) <= 1e-12 * abs(w), (S, i)


def test_arcs_fields_of_dags_csv_against_json_dumps():
    """dags.csv's arcs column (`samples._arcs_fields`, built from each name's JSON once) is
    json.dumps of the arcs in `Samples.arcs` order, names with quotes and non-ASCII too,
    as csv.writer writes that field."""
    from bigbn.io.frames import arcs
    from bigbn.outputs.samples import _arcs_fields

    rng = np.random.default_rng(5)
    n = 9
    names = ["a", 'b"q', "é ü", "d\\e", "x,y", "0", "ß", "tab\t", "z"]
    rows = [rng.integers(0, 1 << n, n) & ~(1 << np.arange(n)) for _ in range(40)] + [np.zeros(n, dtype=np.int64)]
    want = [csv_writer_field(json.dumps([list(a) for a in arcs(names, [int(x) for x in r])], ensure_ascii=False))
            for r in rows]
    assert _arcs_fields(names, rows) == want
    assert _arcs_fields(names, np.array(rows)) == want
    assert _arcs_fields(names, [r[:, None] for r in rows]) == want  # as (n, 1) words
    assert _arcs_fields(names, []) == []
    assert want[-1] == "[]"


def csv_writer_field(f: str) -> str:
    """f as csv.writer writes it (QUOTE_MINIMAL, lineterminator "\n")."""
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([1, f])
    return buf.getvalue()[2:-1]


def test_dags_csv_fields_are_quoted_as_csv_writer_quotes_them():
    """dags.csv and the run's CSV files are written as lines (not csv.writer): each field
    (`result.csv_field`) must come out as csv.writer (QUOTE_MINIMAL, lineterminator "\n")
    writes it."""
    import io

    from bigbn.io.data import csv_field

    names = ["a", 'q"uote', "x,y", "line\nbreak", "cr\rhere", "tab\there", " lead", "u\u2028sep", "é ü", ""]
    fields = ["[]"] + [json.dumps([[a, b]], ensure_ascii=False) for a in names for b in names[:3]]
    for f in fields + ["plain", "x,y", 'q"uote', "line\nbreak"]:
        assert csv_field(f) == csv_writer_field(f), f
    # a raw carriage return is quoted too (csv.writer with lineterminator "\n" leaves it
    # bare, and csv.reader then ends the row there): names may hold one
    line = ",".join(csv_field(x) for x in names) + "\n"
    assert next(csv.reader(io.StringIO(line))) == names


def naive_log_alpha(row, fam, P: int, i: int) -> float:
    """log α_i(P) = log Σ exp β_i(G) over the families G ⊆ P (row: node i's scores over
    the squeezed masks fam), by math.fsum after the largest; -inf when none has a score."""
    U = (P & ((1 << i) - 1)) | ((P >> (i + 1)) << i)
    xs = [float(row[f]) for f in range(len(fam)) if int(fam[f]) & ~U == 0 and row[f] > -np.inf]
    if not xs:
        return -np.inf
    mx = max(xs)
    return mx + math.log(math.fsum(math.exp(x - mx) for x in xs))


@pytest.mark.parametrize("n, k, spread, forbidden, drop", [(7, 2, 3.0, 0.0, 0), (8, 3, 10.0, 0.3, 0),
                                                           (6, 5, 2000.0, 0.2, 0), (7, 2, 5.0, 0.1, 5),
                                                           (1, 2, 1.0, 0.0, 0)])
def test_draw_parents_against_filtering_every_family(n, k, spread, forbidden, drop):
    """`SK.draw_parents` (one weight per family and node, one pass over the families
    within U's top bit against the sweep's α as the total) against
    naive.draw_parents_by_filter, bit for bit: complete families, forbidden ones (-inf),
    scores 2000 nats apart (the rescaled draws), and an incomplete family list (``drop``
    families removed). The totals are log α by math.fsum, as the sweep computes them to
    within rounding."""
    rng = np.random.default_rng(n * 100 + k + drop)
    fam = family_masks(max(n - 1, 0), k)
    beta = naive.random_beta(n, k, rng, spread=spread, p_forbidden=forbidden) if n > 1 else np.zeros((1, 1))
    if drop:
        keep = np.sort(np.r_[0, rng.choice(np.arange(1, fam.size), fam.size - 1 - drop, replace=False)])
        fam, beta = fam[keep], beta[:, keep]
    T = 300
    nodes = np.array([rng.permutation(n) for _ in range(T)], dtype=np.int64)
    preds = np.zeros((T, n), dtype=np.int64)
    for t in range(T):
        S = (1 << n) - 1
        for j in range(n):
            S &= ~(1 << int(nodes[t, j]))
            preds[t, j] = S
    attempt = rng.integers(0, 2, T).astype(np.int64)
    alphas = np.array([[naive_log_alpha(beta[i], fam, int(P), i) for i, P in zip(nr, pr)]
                       for nr, pr in zip(nodes.tolist(), preds.tolist())])
    got = np.zeros((T, n), dtype=np.int64)
    SK.draw_parents(beta, fam, nodes, preds, alphas, 7, 1000, attempt, got)
    want = naive.draw_parents_by_filter(beta, fam, nodes, preds, alphas, 7, 1000, attempt, SK.uniform)
    np.testing.assert_array_equal(got, want)
    assert len({tuple(r) for r in got.tolist()}) > (T // 3 if n > 3 else 0)


def test_point_alpha_pays_where_the_visited_sets_are_fewer():
    """The rule: C(n, ≤ k) · T ≤ 2^(n+4). The benchmarks' k = 3, T = 10 000 from n = 20 on
    take α at the visited sets; large k or many samples on a small lattice take chunks."""
    assert SK.point_alpha_pays(20, 3, 10_000) and SK.point_alpha_pays(28, 3, 50_000)
    assert not SK.point_alpha_pays(20, 19, 10_000) and not SK.point_alpha_pays(20, 6, 10_000)
    assert not SK.point_alpha_pays(12, 3, 10_000) and SK.point_alpha_pays(12, 3, 10)


@pytest.mark.parametrize("n, T, threads, c", [(16, 1000, 1, 16), (16, 1000, 2, 16), (12, 1000, 1, 12),
                                               (12, 50, 1, 12), (19, 1000, 2, 18)])
def test_memory_count_bounds_what_a_batch_allocates(n, T, threads, c, tmp_path):
    """`sample_memory_bytes` + `sweep_memory_bytes` bound the numpy memory one batch of T
    samples allocates (tracemalloc's peak over `_draw_batch`): at n = 16 the memo of α at
    the visited sets (4 MiB) is most of it, which the per-sample count alone misses (with
    two threads, one memo each); at n = 12, T = 1000 the sweep takes α per chunk
    (`point_alpha_pays` says no); at n = 19 in chunks of 2^18 (2 MiB) the sweep holds the
    chunk it walks and the one it reads ahead (the count is then 1.6 MiB above the peak,
    less than a chunk, but only when the read ahead overlaps the walk: a thread's timing,
    so not asserted)."""
    import tracemalloc
    from bigbn.outputs import samples as S
    from bigbn.outputs.result import run_workdir
    from bigbn.store.rundir import finished_run

    path = finished_workdir(tmp_path / "w", naive.random_beta(n, 3, np.random.default_rng(n), spread=4), 3, c)
    run = finished_run(run_workdir(path, "sample"), then="sample")
    assert run.tiers[0].lattice.plan.c == c
    S._draw_batch(run, 0, T, 1, threads)  # compiled and loaded before the count
    tracemalloc.start()
    try:
        S._draw_batch(run, 0, T, 1, threads)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    need = S.sample_memory_bytes(n, T) + S.sweep_memory_bytes(n, 3, c, T, threads)
    assert peak <= need
    if SK.point_alpha_pays(n, 3, T) and n == 16:
        assert peak > 2 * S.sample_memory_bytes(n, T)
        with pytest.raises(OptionError, match="need about"):
            bigbn.sample(path, T, memory=(S.sample_memory_bytes(n, T) + need) // 2, workers=1)


def test_read_ahead_holds_at_most_two_chunks():
    """`samples._ReadAhead` as the sweep drives it (the chunk walked released, the next
    taken, the one after started), with right and wrong guesses: tracemalloc's peak is
    at most two chunks (plus 1/8 of one for the rest), whatever the read thread's timing,
    so a chunk kept too long fails it (checked: keeping each chunk taken from the read
    thread fails it); the chunks taken are the ones asked for."""
    import tracemalloc

    from bigbn.outputs.samples import _ReadAhead

    size = 1 << 17  # 1 MiB chunks

    class Run:
        def chunk(self, table, H):
            assert table == "forward"
            return np.full(size, float(H))

    order = [(9, 8), (8, 6), (7, 5), (5, 4), (4, 3), (3, 1), (1, 0), (0, -1)]  # (taken, guessed next)
    tracemalloc.start()
    try:
        ahead = _ReadAhead(Run())
        L = None
        for H, guess in order:
            L = None
            L = ahead.take(H)
            assert L[0] == H
            ahead.start(guess)
        L = None
        ahead.close()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ahead.reads == len(order)
    assert 8 * size <= peak <= 2 * 8 * size + size  # one or two chunks at once (the thread's timing), never three


def test_unique_rows_against_numpy_unique_axis_0():
    """`samples._unique_rows` (rows compared as raw bytes) finds the rows np.unique(axis=0)
    finds: the same distinct rows and counts (in another order), first occurrences, and an
    inverse that rebuilds the array; masks (T, n), words (T, n, W) and negative words."""
    from bigbn.outputs.samples import _unique_rows

    rng = np.random.default_rng(3)
    for shape in [(500, 6), (300, 4, 2), (1, 3)]:
        a = rng.integers(-3, 4, size=shape).astype(np.int64)
        a = a[rng.integers(0, shape[0], shape[0])]  # repeats
        idx, inv, counts = _unique_rows(a)
        np.testing.assert_array_equal(a[idx][inv], a)
        want, wcounts = np.unique(a, axis=0, return_counts=True)
        got = a[idx]
        key = np.lexsort(got.reshape(len(got), -1).T[::-1])
        np.testing.assert_array_equal(got[key], want)
        np.testing.assert_array_equal(counts[key], wcounts)
        assert all(int(np.flatnonzero(inv == j)[0]) == i for j, i in enumerate(idx.tolist()))


def test_an_exact_dag_posterior_near_one_is_not_written_past_it(tmp_path):
    """|log p(x)| near 1e7 (a .jkl file of scores near −1e6), one DAG holding nearly all the
    mass (seed 11: the one of 12 seeds where the rounding went up): its exact posterior exp(log #LE + log score − log p(x)) carries an ulp of log p(x)
    (1.9e-9) and read 1.0000000018626451 in dags.csv, which the report then refused. It is
    ≤ 1 exactly, and now written so; the page takes the file."""
    from bigbn.kernels.families import family_masks
    from bigbn.scores.jkl import write_jkl

    n, k = 10, 2
    masks = family_masks(n - 1, k)
    rng = np.random.default_rng(11)
    beta = -1e6 + rng.normal(size=(n, masks.size))
    beta[:, 0] += 80  # the empty DAG, each parent set 80 nats ahead of every other
    write_jkl(tmp_path / "big.jkl", [f"v{i}" for i in range(n)], beta, k)
    wd = tmp_path / "w"
    assert h.cli("run", "--scores", tmp_path / "big.jkl", "-k", k, "-w", wd, "-q").exit_code == 0
    assert h.cli("sample", "-w", wd, "--samples", 50, "--seed", 0).exit_code == 0
    with open(wd / "samples-order-modular" / "dags.csv", newline="") as fh:
        exact = [float(r["exact_posterior"]) for r in csv.DictReader(fh)]
    assert exact[0] > 1 - 1e-8 and max(exact) <= 1.0
    res = h.cli("report", wd, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    dags = wd / "samples-order-modular" / "dags.csv"  # as an earlier bigbn wrote it
    rows = list(csv.reader(dags.open(newline="")))
    rows[1][rows[0].index("exact_posterior")] = "1.0000000018626451"
    with dags.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    res = h.cli("report", wd, "--out", tmp_path / "r2.html")
    assert res.exit_code == 0, res.output


# ------------------------------------------------ #39 item 4: the sampler's start-up (samp53)

def test_the_sample_command_in_its_own_process_never_imports_scipy_linalg(tmp_path):
    """`bigbn sample` in a process of its own (`cli`) starts numba without its BLAS probe,
    which imported scipy.linalg (≈ 0.15–0.2 s of the command at n = 20) only to pick
    np.correlate's and np.convolve's inner product, which no kernel of bigbn's calls: the
    process never imports scipy.linalg, and its samples are the library's bit for bit."""

    wd = tmp_path / "w"
    bigbn.learn(ASIA, workdir=wd, max_parents=2)
    code = ("import atexit, sys; "
            "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith('scipy.linalg')))); "
            "from bigbn.cli.main import cli; "
            f"sys.argv = ['bigbn', 'sample', '--workdir', {str(wd)!r}, '--samples', '700', '--seed', '4']; cli()")
    assert _fresh_process(code)[-1] == "[]"
    got = np.load(wd / "samples-order-modular" / "samples.npz")
    s = bigbn.sample(wd, 700, seed=4)
    for name in ("parents", "orders", "log_linear_extensions", "log_score", "weights"):
        np.testing.assert_array_equal(got[name], getattr(s, name), err_msg=name)


def test_a_numba_without_the_targets_layout_starts_as_usual():
    """`start_without_blas_probe` reaches into numba (`numba.core.registry.cpu_target`); a
    numba that moved it (pyproject allows any numba >= 0.60) made `bigbn sample`'s every
    process end in an ImportError. It then hides nothing, and numba starts on first use,
    its probe as usual (in a fresh process: the probe runs once per process)."""

    code = ("import sys, numpy as np; from numba import njit; import numba.core.registry as R; "
            "from bigbn import _numba; kept = R.cpu_target; del R.cpu_target; "
            "_numba.start_without_blas_probe(); R.cpu_target = kept; "
            "assert 'numba.np.arraymath' not in sys.modules; "
            "import numba.np.arraymath as A; assert A._HAVE_BLAS is True; "
            "assert njit(lambda x: x + 1)(1) == 2; print('ok')")
    assert _fresh_process(code) == ["ok"]


def test_numba_started_without_the_blas_probe_still_compiles_linear_algebra():
    """`_numba.start_without_blas_probe` hides scipy.linalg from numba's probe only while
    numba's target starts: np.dot compiled afterwards imports scipy.linalg and calls BLAS as
    usual, and np.correlate takes numba's plain loop (the one thing the probe decides). In
    a fresh process (the probe runs once per process)."""

    code = ("import sys, numpy as np; from numba import njit; from bigbn import _numba; "
            "_numba.start_without_blas_probe(); assert 'scipy.linalg' not in sys.modules; "
            "import numba.np.arraymath as A; assert A._HAVE_BLAS is False; "
            "a = np.arange(12.0).reshape(3, 4); b = np.arange(8.0).reshape(4, 2); "
            "assert np.array_equal(njit(lambda x, y: np.dot(x, y))(a, b), a @ b); "
            "assert 'scipy.linalg.cython_blas' in sys.modules; "
            "x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0]); "
            "assert np.array_equal(njit(lambda p, q: np.correlate(p, q))(x, y), np.correlate(x, y)); "
            "_numba.start_without_blas_probe(); print('ok')")
    assert _fresh_process(code) == ["ok"]
