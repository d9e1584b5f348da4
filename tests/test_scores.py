"""Local scores (bigbn.scores.discrete): closed forms by hand, a slow counting reference, pgmpy's
BDeu and K2, the two counting paths, and invariances."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pytest

from bigbn.io.data import Dataset
from bigbn.errors import OptionError
from bigbn.kernels.families import family_masks, family_parent_matrix, family_rank, n_families, squeeze
from bigbn.scores.discrete import _parent_configs, _rank, _rank_table, local_scores, parent_set_index
import bigbn
import helpers as h

lg = math.lgamma


def make_dataset(data, arities=None) -> Dataset:
    data = np.asarray(data, dtype=np.int32)
    n = data.shape[1]
    if arities is None:
        arities = data.max(axis=0) + 1
    arities = np.asarray(arities, dtype=np.int64)
    levels = tuple(tuple(f"s{c}" for c in range(int(r))) for r in arities)
    return Dataset(tuple(f"v{j}" for j in range(n)), data, arities, levels)


def random_dataset(seed, n, m, arities) -> Dataset:
    """Random codes; every state of every column appears (so pgmpy knows all states)."""
    rng = np.random.default_rng(seed)
    arities = np.broadcast_to(np.asarray(arities), (n,)) if np.ndim(arities) == 0 else np.asarray(arities)
    data = np.stack([rng.integers(0, r, size=m) for r in arities], axis=1)
    for j, r in enumerate(arities):
        data[:r, j] = rng.permutation(r)
    return make_dataset(data, arities)


def family_index(n, k, i, parents) -> int:
    sq = squeeze(sum(1 << p for p in parents), i)
    return int(family_rank(family_masks(n - 1, k), [sq])[0])


def naive_scores(ds: Dataset, k: int, score: str, ess: float = 1.0) -> np.ndarray:
    """The formula straight from the counts (Python dicts), for every family."""
    P = family_parent_matrix(ds.n, k)
    out = np.empty(P.shape[:2])
    rows = [tuple(r) for r in ds.data.tolist()]
    for i in range(ds.n):
        r = int(ds.arities[i])
        for f in range(P.shape[1]):
            ps = [int(p) for p in P[i, f] if p >= 0]
            q = math.prod(int(ds.arities[p]) for p in ps)
            n_ij = Counter(tuple(row[p] for p in ps) for row in rows)
            n_ijk = Counter((tuple(row[p] for p in ps), row[i]) for row in rows)
            if score == "k2":
                a_ij, a_ijk = float(r), 1.0
            else:
                a_ij, a_ijk = ess / q, ess / (q * r)
            s = sum(lg(a_ij) - lg(a_ij + v) for v in n_ij.values())
            s += sum(lg(a_ijk + v) - lg(a_ijk) for v in n_ijk.values())
            out[i, f] = s
    return out


# X and Y binary, 6 rows; counts written out by hand below.
X = [0, 0, 1, 1, 1, 0]
Y = [0, 1, 1, 1, 0, 0]


def test_hand_computed_two_binary_variables():
    ds = make_dataset(np.array([X, Y]).T)
    # N(X=0)=3, N(X=1)=3; N(Y=0)=3, N(Y=1)=3.
    # Y | X=0: Y=0 twice, Y=1 once; Y | X=1: Y=0 once, Y=1 twice.  (X | Y likewise.)
    k2_empty = lg(2) - lg(6 + 2) + lg(3 + 1) + lg(3 + 1)
    k2_one = 2 * (lg(2) - lg(3 + 2) + lg(2 + 1) + lg(1 + 1))
    e = 1.0  # ess; BDeu empty: a_ij = 1, a_ijk = 1/2; one parent: a_ij = 1/2, a_ijk = 1/4
    bdeu_empty = lg(e) - lg(e + 6) + 2 * (lg(e / 2 + 3) - lg(e / 2))
    bdeu_one = 2 * (lg(e / 2) - lg(e / 2 + 3) + lg(e / 4 + 2) - lg(e / 4) + lg(e / 4 + 1) - lg(e / 4))
    for score, empty, one in (("k2", k2_empty, k2_one), ("bdeu", bdeu_empty, bdeu_one)):
        beta = local_scores(ds, 1, score)
        assert beta.shape == (2, 2) and beta.dtype == np.float64
        # family 0 = no parent, family 1 = the other node
        np.testing.assert_allclose(beta, [[empty, one], [empty, one]], rtol=1e-13)


def test_hand_computed_ess_and_three_levels():
    # Z has 3 levels, one of which never co-occurs with X=1; ess = 4.5.
    Z = [0, 1, 2, 0, 0, 1]
    ds = make_dataset(np.array([X, Z]).T)
    e = 4.5
    # Z | X: X=0 -> Z=0,1,1 ... rows with X=0 are 0,1,5: Z=0,1,1; X=1 rows 2,3,4: Z=2,0,0.
    a_ij, a_ijk = e / 2, e / 6
    z_given_x = (2 * (lg(a_ij) - lg(a_ij + 3))
                 + 2 * (lg(a_ijk + 1) - lg(a_ijk)) + 2 * (lg(a_ijk + 2) - lg(a_ijk)))
    # X | Z: Z=0 rows 0,3,4: X=0,1,1; Z=1 rows 1,5: X=0,0; Z=2 row 2: X=1.
    a_ij, a_ijk = e / 3, e / 6
    x_given_z = (
        lg(a_ij) - lg(a_ij + 3) + lg(a_ij) - lg(a_ij + 2) + lg(a_ij) - lg(a_ij + 1)
        + (lg(a_ijk + 1) - lg(a_ijk)) + (lg(a_ijk + 2) - lg(a_ijk))
        + (lg(a_ijk + 2) - lg(a_ijk)) + (lg(a_ijk + 1) - lg(a_ijk))
    )
    beta = local_scores(ds, 1, "bdeu", ess=e)
    np.testing.assert_allclose(beta[1, 1], z_given_x, rtol=1e-13)
    np.testing.assert_allclose(beta[0, 1], x_given_z, rtol=1e-13)
    # K2 with r = 3: lgamma(3) terms for each observed configuration.
    k2_z_given_x = 2 * (lg(3) - lg(3 + 3)) + 2 * lg(2) + 2 * lg(3)
    np.testing.assert_allclose(local_scores(ds, 1, "k2")[1, 1], k2_z_given_x, rtol=1e-13)


@pytest.mark.parametrize("score", ["bdeu", "k2"])
@pytest.mark.parametrize("seed, n, m, arities, k", [
    (0, 4, 40, 2, 3),
    (1, 5, 60, [2, 3, 4, 2, 3], 2),
    (2, 5, 25, [4, 4, 3, 4, 1], 3),
    (3, 6, 80, [3, 2, 2, 5, 2, 3], 1),
])
def test_against_naive_reference_both_paths(score, seed, n, m, arities, k):
    ds = random_dataset(seed, n, m, arities)
    ref = naive_scores(ds, k, score, ess=2.5)
    for dense_limit in (None, 0, 6):
        beta = local_scores(ds, k, score, ess=2.5, dense_limit=dense_limit)
        assert beta.shape == (n, n_families(n - 1, k))
        np.testing.assert_allclose(beta, ref, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("score", ["bdeu", "k2"])
def test_lgamma_tables_with_more_hyperparameters_than_slots(score):
    """Families with q·r > 64 read log-gammas from a small cache of tables lgamma(a + v) − lgamma(a);
    seven different arities give more distinct a (BDeu: ess/q, ess/(q r)) than the cache
    has slots, so rows are evicted and refilled while one thread scores every family."""
    from bigbn.scores import discrete as S

    ds = random_dataset(11, 7, 120, [2, 3, 4, 5, 6, 7, 8])
    P = family_parent_matrix(ds.n, 3)
    distinct = {math.prod(int(ds.arities[p]) for p in P[i, f] if p >= 0) * int(ds.arities[i])
                for i in range(ds.n) for f in range(P.shape[1])}
    assert sum(c > S._TABLE_CELLS for c in distinct) > S._TABLE_SLOTS
    ref = naive_scores(ds, 3, score, ess=1.5)
    for dense_limit in (None, 0):
        beta = local_scores(ds, 3, score, ess=1.5, threads=1, dense_limit=dense_limit)
        np.testing.assert_allclose(beta, ref, rtol=1e-12, atol=1e-10)


def test_lgamma_row_cache():
    from bigbn.scores.discrete import _lgamma_row

    keys, tables, clock = np.full(3, np.nan), np.empty((3, 6)), np.zeros(1, np.int64)
    rows = [_lgamma_row(keys, tables, clock, a) for a in (0.5, 2.0, 0.5, 7.25)]
    assert rows == [0, 1, 0, 2] and clock[0] == 3
    # rows hold lgamma(a + v) − lgamma(a) (`_log_rising`); numba's math.lgamma is libm's,
    # CPython's its own: they may differ in the last bit
    np.testing.assert_allclose(tables[2], [lg(7.25 + v) - lg(7.25) for v in range(6)], rtol=1e-14, atol=1e-15)
    assert tables[2, 0] == 0.0
    assert _lgamma_row(keys, tables, clock, 9.0) == 0  # the slot filled longest ago
    assert keys.tolist() == [9.0, 2.0, 7.25]
    from bigbn.scores.discrete import _log_rising  # the kernels' untabled numbers, bit for bit

    for a in (7.25, 15.5, 16.0, 1e6):
        row = _lgamma_row(keys, tables, clock, a)
        assert tables[row].tolist() == [_log_rising(a, float(v)) for v in range(6)]


@pytest.mark.parametrize("n,K", [(1, 0), (1, 1), (5, 2), (9, 4), (12, 12), (22, 9)])
def test_rank_is_the_index_in_family_masks(n, K):
    """The joint-table path finds a set's slot by `_rank`, combinatorially: it must be
    the set's position in family_masks(n, K) (all of them where few, else a sample)."""
    masks = family_masks(n, K)
    cum = _rank_table(n, K)
    pick = np.arange(masks.size) if masks.size <= 5000 else \
        np.random.default_rng(n).choice(masks.size, 5000, replace=False)
    assert [_rank(int(masks[f]), n, K, cum) for f in pick] == pick.tolist()


@pytest.mark.parametrize("score", ["bdeu", "k2"])
@pytest.mark.parametrize("seed, n, m, arities, k", [
    (20, 9, 300, 2, 7),  # 2^8 cells: log-gamma tables; sets up to 8 nodes
    (21, 7, 200, [2, 3, 2, 4, 2, 3, 2], 4),  # mixed arities: a K2 Phi per arity
    (22, 6, 50, [3, 1, 2, 2, 4, 2], 5),  # a one-level column; every set of V
    # prefixes of ≤ 64 cells × states: counted by popcounts of bit sets (m not a multiple of 64)
    (23, 10, 1000, 2, 3),
    (24, 8, 777, [3, 3, 2, 3, 2, 3, 3, 1], 3),
    (25, 5, 128, 2, 2),
])
def test_joint_table_path_against_naive_and_per_family_path(score, seed, n, m, arities, k):
    """Counting each variable set once (the default when its joint table fits the dense
    array; per row from the prefix's configurations, or by bit sets when the prefixes
    have few cells) against the formula from the counts and against the per-family
    kernel (dense_limit=0 forces it: every family counted by sorting)."""
    from bigbn.scores.discrete import _BIT_CELLS

    top = sorted(np.broadcast_to(arities, n).tolist(), reverse=True)
    by_bits = int(np.prod(top[:k])) * (top[0] - 1) <= _BIT_CELLS
    assert by_bits == (seed >= 23)
    ds = random_dataset(seed, n, m, arities)
    joint = local_scores(ds, k, score, ess=1.7)
    np.testing.assert_allclose(joint, naive_scores(ds, k, score, ess=1.7), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(joint, local_scores(ds, k, score, ess=1.7, dense_limit=0),
                               rtol=1e-13, atol=1e-11)
    np.testing.assert_array_equal(local_scores(ds, k, score, ess=1.7, threads=3), joint)


@pytest.mark.parametrize("score", ["bdeu", "k2"])
def test_joint_table_path_with_more_arities_than_cached_tables(score):
    """K2 needs a Phi per distinct arity: 33 arities (2..34) need more log-gamma rows at
    once than the cache holds, so a set's rows evict each other; the kernel must notice
    and take math.lgamma for that set (the same numbers), not read an evicted row."""
    from bigbn.scores import discrete as S

    arities = list(range(2, 35))
    assert len(set(arities)) + 1 > S._TABLE_SLOTS
    ds = random_dataset(23, len(arities), 150, arities)
    joint = local_scores(ds, 1, score, ess=1.3, dense_limit=34 * 33)  # every pair fits: joint path
    np.testing.assert_allclose(joint, naive_scores(ds, 1, score, ess=1.3), rtol=1e-12, atol=1e-10)
    np.testing.assert_array_equal(joint, local_scores(ds, 1, score, ess=1.3, dense_limit=34 * 33, threads=1))


def test_large_arities_take_the_sort_path_by_default():
    # q*r = 40^3 > max(4m, 1024): these families are counted by sorting.
    rng = np.random.default_rng(7)
    data = rng.integers(0, 40, size=(300, 4))
    data[:40, :] = np.arange(40)[:, None]
    ds = make_dataset(data)
    ref = naive_scores(ds, 3, "bdeu")
    np.testing.assert_allclose(local_scores(ds, 3), ref, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(local_scores(ds, 3, dense_limit=2**30), ref, rtol=1e-12, atol=1e-10)


def pgmpy_scores(ds: Dataset, k: int, score: str, ess: float) -> np.ndarray:
    pd = pytest.importorskip("pandas")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgmpy.structure_score import K2, BDeu
    frame = pd.DataFrame(ds.data, columns=list(ds.names))
    state_names = {v: list(range(int(r))) for v, r in zip(ds.names, ds.arities)}
    scorer = BDeu(frame, equivalent_sample_size=ess, state_names=state_names) if score == "bdeu" \
        else K2(frame, state_names=state_names)
    P = family_parent_matrix(ds.n, k)
    out = np.empty(P.shape[:2])
    for i in range(ds.n):
        for f in range(P.shape[1]):
            parents = tuple(ds.names[p] for p in P[i, f] if p >= 0)
            out[i, f] = scorer.local_score(ds.names[i], parents)
    return out


@pytest.mark.parametrize("seed, arities, k, ess", [
    (10, [2, 2, 2, 2], 3, 1.0),
    (11, [3, 2, 4, 3], 2, 10.0),
    (12, [4, 3, 2, 4], 3, 0.5),
    (13, [2, 4, 3, 3, 2], 1, 3.0),
])
def test_against_pgmpy(seed, arities, k, ess):
    n = len(arities)
    ds = random_dataset(seed, n, 1200, arities)
    # pgmpy's K2 adds lgamma(r) for *every* parent configuration but subtracts
    # lgamma(N_ij + r) only for observed ones; it agrees with K2 when all are observed.
    for i in range(n):
        for parents in family_parent_matrix(n, k)[i]:
            ps = [p for p in parents if p >= 0]
            q = math.prod(int(ds.arities[p]) for p in ps)
            assert len({tuple(row) for row in ds.data[:, ps].tolist()}) == q
    for score in ("bdeu", "k2"):
        ours = local_scores(ds, k, score, ess=ess)
        ref = pgmpy_scores(ds, k, score, ess)
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-9)


def test_bdeu_is_score_equivalent():
    # BDeu gives Markov-equivalent DAGs the same score: X->Y and Y->X (and with a common
    # third parent Z: Z->X->Y, Z->Y vs Z->Y->X, Z->X).
    ds = random_dataset(5, 3, 50, [3, 2, 4])
    beta = local_scores(ds, 2, "bdeu", ess=3.0)
    fam = lambda i, ps: beta[i, family_index(3, 2, i, ps)]  # noqa: E731
    np.testing.assert_allclose(fam(0, []) + fam(1, [0]), fam(1, []) + fam(0, [1]), rtol=1e-12)
    np.testing.assert_allclose(fam(0, [2]) + fam(1, [0, 2]), fam(1, [2]) + fam(0, [1, 2]), rtol=1e-12)
    # K2 is not score equivalent (a check that this test could fail).
    k2 = local_scores(ds, 2, "k2")
    fk = lambda i, ps: k2[i, family_index(3, 2, i, ps)]  # noqa: E731
    assert abs(fk(0, []) + fk(1, [0]) - fk(1, []) - fk(0, [1])) > 1e-6


def test_row_permutation_and_threads_do_not_change_scores():
    ds = random_dataset(3, 7, 500, [2, 3, 2, 4, 2, 3, 2])
    beta = local_scores(ds, 3, "bdeu", threads=1)
    perm = np.random.default_rng(0).permutation(ds.m)
    shuffled = make_dataset(ds.data[perm], ds.arities)
    shuffled_beta = local_scores(shuffled, 3, "bdeu", threads=2)
    np.testing.assert_allclose(shuffled_beta, beta, rtol=1e-12, atol=1e-10)
    np.testing.assert_array_equal(local_scores(ds, 3, "bdeu", threads=3), beta)


def test_single_level_variable_contributes_nothing():
    data = random_dataset(4, 3, 30, [3, 2, 2]).data.copy()
    data[:, 2] = 0
    ds = make_dataset(data, [3, 2, 1])
    for score in ("bdeu", "k2"):
        beta = local_scores(ds, 2, score)
        np.testing.assert_array_equal(beta[2], 0.0)  # child with one level: log 1
        # adding the constant node as a parent changes nothing
        for i, ps in ((0, []), (0, [1]), (1, []), (1, [0])):
            a = beta[i, family_index(3, 2, i, ps)]
            b = beta[i, family_index(3, 2, i, ps + [2])]
            assert a == pytest.approx(b, rel=1e-13, abs=1e-12)


def test_max_parents_is_capped_at_n_minus_1():
    ds = random_dataset(1, 3, 20, 2)
    beta = local_scores(ds, 10, "k2")
    assert beta.shape == (3, 4)
    np.testing.assert_allclose(beta, naive_scores(ds, 2, "k2"), rtol=1e-12)
    assert local_scores(ds, 0, "k2").shape == (3, 1)


def test_parent_set_index_covers_every_family_once():
    for n, k in ((1, 0), (2, 1), (5, 2), (7, 3), (6, 5)):
        parent_sets, index = parent_set_index(n, k)
        F = n_families(n - 1, k)
        seen = np.zeros((n, F), dtype=int)
        expected = family_parent_matrix(n, k)
        for g in range(parent_sets.shape[0]):
            ps = [p for p in parent_sets[g] if p >= 0]
            assert ps == sorted(ps) and len(ps) <= k
            for i in range(n):
                f = index[g, i]
                if i in ps:
                    assert f == -1
                else:
                    seen[i, f] += 1
                    assert [p for p in expected[i, f] if p >= 0] == ps
        assert (seen == 1).all()


def test_configuration_index_groups_rows_even_when_it_would_overflow():
    # Declared arities so large that the mixed-radix index exceeds int64: the kernel
    # compresses to ranks, and rows must still be grouped exactly by parent values.
    rng = np.random.default_rng(2)
    data_t = rng.integers(0, 3, size=(3, 200)).astype(np.int32)
    arities = np.array([2**40, 2**40, 2**40], dtype=np.int64)
    cfg = np.empty(200, dtype=np.int64)
    _parent_configs(data_t, arities, np.array([0, 1, 2], dtype=np.int64), cfg)
    tuples = [tuple(c) for c in data_t.T.tolist()]
    for a in range(200):
        for b in range(a + 1, 200):
            assert (cfg[a] == cfg[b]) == (tuples[a] == tuples[b])
    # small arities: the exact mixed radix
    _parent_configs(data_t, np.array([3, 3, 3], dtype=np.int64), np.array([0, 2, -1], dtype=np.int64), cfg)
    np.testing.assert_array_equal(cfg, data_t[0].astype(np.int64) * 3 + data_t[2])


@pytest.mark.parametrize("kwargs, message", [
    ({"score": "bic"}, "unknown score 'bic'"),
    ({"ess": 0.0}, "must be a positive number"),
    ({"ess": -1}, "must be a positive number"),
    ({"ess": float("nan")}, "must be a positive number"),
    ({"ess": "lots"}, "must be a positive number"),
    ({"max_parents": -1}, "non-negative integer"),
    ({"max_parents": 1.5}, "non-negative integer"),
])
def test_bad_options(kwargs, message):
    ds = random_dataset(0, 3, 10, 2)
    args = {"max_parents": 2, **kwargs}
    with pytest.raises(OptionError, match=message):
        local_scores(ds, **args)


def test_continuous_data_is_refused():
    ds = Dataset(("a", "b"), [[1.5, 2.0], [0.0, -3.0]], [0, 0], ((), ()), kind="continuous")
    with pytest.raises(OptionError, match="needs discrete data"):
        local_scores(ds, 1, "bdeu")


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

# 4. extreme hyperparameters: right up to the accepted bound, refused beyond it
def _bdeu_mpmath(X, r, i, parents, ess):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    q = int(np.prod([r[p] for p in parents])) if parents else 1
    cfg = np.zeros(len(X), dtype=np.int64)
    for p in parents:
        cfg = cfg * r[p] + X[:, p]
    a_ij, a_ijk = mp.mpf(ess) / q, mp.mpf(ess) / (q * r[i])
    total = mp.mpf(0)
    for j in np.unique(cfg):
        sel = cfg == j
        total += mp.loggamma(a_ij) - mp.loggamma(a_ij + int(sel.sum()))
        for level in range(r[i]):
            total += mp.loggamma(a_ijk + int((X[sel, i] == level).sum())) - mp.loggamma(a_ijk)
    return float(total)


@pytest.mark.parametrize("ess", [1e-3, 1.0, 1e4, 1e8])
def test_bdeu_against_high_precision_up_to_the_bound(ess):
    from bigbn.api import load_dataset
    from bigbn.io.data import Dataset
    from bigbn.kernels.families import family_masks, unsqueeze
    from bigbn.scores.discrete import local_scores

    ds, _, _ = load_dataset(h.ASIA)
    X = ds.data[:400]
    small = Dataset(ds.names, X, ds.arities, ds.levels)
    got = local_scores(small, 2, "bdeu", ess)
    fam = family_masks(7, 2)
    for i in (0, 3, 7):
        for f in (0, 4, 17, 28):
            m = unsqueeze(int(fam[f]), i)
            parents = [b for b in range(8) if m >> b & 1]
            assert abs(got[i, f] - _bdeu_mpmath(X, ds.arities, i, parents, ess)) < 1e-10


def test_hyperparameters_beyond_float64_are_refused(tmp_path):
    from bigbn.errors import OptionError

    with pytest.raises(OptionError, match="above 1e"):
        bigbn.learn(h.ASIA, ess=1e16)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    for kw in ({"alpha_w": 1e16}, {"alpha_mu": 1e16}):
        with pytest.raises(OptionError, match="above 1e"):
            bigbn.learn(X, **kw)
    r = h.cli("run", h.ASIA, "-w", tmp_path / "w", "--ess", "1e16")
    assert r.exit_code == 1 and "posteriors" in r.output and not (tmp_path / "w").exists()


def test_an_ess_whose_prior_counts_are_subnormal_is_refused():
    """ess 5e-324 gave the prior count ess/(q·r) = 0 and a score of -inf, refused as 'values
    too large or degenerate: rescale the data'; ess 1e-320 ran on subnormal counts (a few
    digits). Refused while ess/(q·r) of the largest family is below float64's smallest
    normal number, naming the least ess that is not; that one and K2 are scored."""
    rng = np.random.default_rng(5)
    data = rng.integers(0, 2, size=(40, 3))
    data[:, 2] = rng.integers(0, 3, 40)
    ds = Dataset(("a", "b", "c"), data, np.array([2, 2, 3]), (("0", "1"), ("0", "1"), ("0", "1", "2")))
    least = np.finfo(np.float64).tiny * 12  # q·r of the largest family, {a, b, c}
    for ess in (5e-324, 1e-320, least / 2):
        with pytest.raises(OptionError, match=r"ess .* is too small: .* \(q·r = 12\) .* give ess ≥ 2\.67e-307"):
            local_scores(ds, 2, "bdeu", ess)
    assert np.isfinite(local_scores(ds, 2, "bdeu", least * 1.01)).all()
    assert np.isfinite(local_scores(ds, 1, "bdeu", least / 2)).all()  # k = 1: q·r at most 6
    assert np.isfinite(local_scores(ds, 2, "k2", 5e-324)).all()
    with pytest.raises(OptionError, match="ess .* is too small"):
        bigbn.learn(ds, max_parents=2, ess=1e-320)


# ------------------------------------------------------------------------------ numerical audit 2

def _dirichlet_mpmath(X, r, i, parents, a_ij, a_ijk):
    """log p(x_i | x_G) at 50 digits, the closed form with hyperparameters a_ij, a_ijk (mpmath)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    cfg = np.zeros(len(X), dtype=np.int64)
    for p in parents:
        cfg = cfg * int(r[p]) + X[:, p]
    total = mp.mpf(0)
    for j in np.unique(cfg):
        sel = cfg == j
        total += mp.loggamma(a_ij) - mp.loggamma(a_ij + int(sel.sum()))
        for v in np.unique(X[sel, i], return_counts=True)[1].tolist():
            total += mp.loggamma(a_ijk + v) - mp.loggamma(a_ijk)
    return total


@pytest.mark.parametrize("score, ess, arities, m", [("bdeu", 1e8, [2, 3, 2], 2), ("bdeu", 1e6, [2, 3, 2], 200),
                                                    ("bdeu", 1e8, [2, 3, 10000], 60), ("k2", 1.0, [2, 3, 10000], 60)])
def test_large_hyperparameters_against_high_precision(score, ess, arities, m):
    """lgamma(a + N) − lgamma(a) with a large (BDeu's ess/q near ess, K2's a_ij = r) was a
    difference of two numbers near a·log a, each an ulp off: BDeu at ess 1e8 erred by 5e-7
    nats (m = 2: 5e-7 relative), K2 with 10 000 levels by 1e-10 nats. Every family of both
    counting paths, against 50-digit mpmath, within 1e-11 nats."""
    mp = pytest.importorskip("mpmath")
    rng = np.random.default_rng(11)
    X = np.stack([rng.integers(0, min(a, 7), m) for a in arities], axis=1)
    ds = make_dataset(X, arities)
    fam = family_masks(2, 2)
    for dense_limit in (None, 0):
        got = local_scores(ds, 2, score, ess, threads=1, dense_limit=dense_limit)
        for i in range(3):
            for f, sq in enumerate(fam.tolist()):
                g = (sq & ((1 << i) - 1)) | ((sq >> i) << (i + 1))
                ps = [b for b in range(3) if g >> b & 1]
                q = math.prod(arities[p] for p in ps)
                a_ij, a_ijk = ((mp.mpf(arities[i]), mp.mpf(1)) if score == "k2" else
                               (mp.mpf(ess) / q, mp.mpf(ess) / (q * arities[i])))
                want = _dirichlet_mpmath(X, ds.arities, i, ps, a_ij, a_ijk)
                assert abs(mp.mpf(got[i, f]) - want) < 1e-11, (dense_limit, i, ps, got[i, f], want)


def test_log_rising_against_high_precision():
    """`_log_rising(a, v)` = lgamma(a + v) − lgamma(a) for v up to 1e8, whole or half (BGe's
    and CG's Wishart terms take v = m/2): from a = 16 on (Stirling's series) to a few ulps of
    itself, below to a few ulps of the two log-gammas."""
    mp = pytest.importorskip("mpmath")
    from bigbn.scores.discrete import _log_rising

    mp.mp.dps = 50
    for a in (0.3, 1.0, 15.999999999999998, 16.0, 16.5, 100.0, 1e4 / 3, 5e7 + 0.5, 1e8, 1e12):
        assert _log_rising(a, 0.0) == 0.0
        for v in (0.5, 1, 1.5, 2, 7, 10.5, 1000, 1000.5, 10**6, 10**6 + 0.5, 10**8):
            want = mp.loggamma(mp.mpf(a) + v) - mp.loggamma(mp.mpf(a))
            tol = 2e-15 * abs(want) if a >= 16 else 1e-15 * (abs(mp.loggamma(a)) + abs(mp.loggamma(a + v)))
            assert abs(mp.mpf(_log_rising(a, float(v))) - want) <= tol, (a, v)


def test_a_run_at_ess_1e8_against_exact_enumeration():
    """Whole-run edge posteriors and log p(x) at the largest ess accepted, 4 variables and
    two rows, against every DAG summed in exact arithmetic with 50-digit scores and
    prior: they erred by 3e-8 and 1.1e-7 nats (|log p(x)| = 0.8) while the scores took
    lgamma differences near a·log a; now a few ulps."""
    mp = pytest.importorskip("mpmath")
    import naive

    X = np.array([[1, 2, 0, 1], [0, 2, 1, 1]])
    arities = [2, 3, 2, 2]
    ds = make_dataset(X, arities)
    n, k, ess = 4, 3, 1e8
    scores = []
    for i in range(n):
        fam = {}
        for G in range(1 << n):
            if G >> i & 1:
                continue
            ps = [b for b in range(n) if G >> b & 1]
            q = math.prod(arities[p] for p in ps)
            s = _dirichlet_mpmath(X, ds.arities, i, ps, mp.mpf(ess) / q, mp.mpf(ess) / (q * arities[i]))
            fam[G] = mp.nstr(s - mp.log(mp.binomial(n - 1, len(ps))), 45)  # Koivisto–Sood prior
        scores.append(fam)
    P, _, log_px = naive.exact_by_dags(scores, k)
    res = bigbn.learn(ds, max_parents=k, score="bdeu", ess=ess, workers=1)
    np.testing.assert_allclose(np.asarray(res.posterior), P, rtol=0, atol=1e-13)
    assert abs(mp.mpf(res.log_marginal) - log_px) < 1e-13


@pytest.mark.parametrize("ess", [1e-12, 1.0])
def test_many_parent_configurations_against_high_precision(ess):
    """A family whose 3·10^4 rows fall in as many parent configurations sums 6·10^4 terms
    near ±14 (ess 1) or ±42 (ess 1e-12) into a total near 10^4: a plain running sum
    rounded each to the total's ulp and erred by 1e-8 nats (1.4e-7 at 10^5 rows). Both
    counting paths, against 50-digit mpmath, within 2e-10."""
    mp = pytest.importorskip("mpmath")
    rng = np.random.default_rng(5)
    m = 30_000
    X = np.stack([rng.integers(0, 1000, m), rng.integers(0, 1000, m), rng.integers(0, 2, m)], axis=1)
    ds = make_dataset(X, [1000, 1000, 2])
    mp.mp.dps = 50
    a_ij, a_ijk = mp.mpf(ess) / 10**6, mp.mpf(ess) / (2 * 10**6)
    cfg = X[:, 0] * 1000 + X[:, 1]
    n_ij = Counter(np.unique(cfg, return_counts=True)[1].tolist())  # {N_ij: how many configurations}
    n_ijk = Counter(np.unique(cfg * 2 + X[:, 2], return_counts=True)[1].tolist())
    want = sum(c * (mp.loggamma(a_ij) - mp.loggamma(a_ij + v)) for v, c in n_ij.items()) \
        + sum(c * (mp.loggamma(a_ijk + v) - mp.loggamma(a_ijk)) for v, c in n_ijk.items())
    f = family_index(3, 2, 2, [0, 1])
    for dense_limit in (None, 0, 2**22):
        got = local_scores(ds, 2, "bdeu", ess, threads=1, dense_limit=dense_limit)[2, f]
        assert abs(mp.mpf(got) - want) < 2e-10, (dense_limit, got - float(want))


def test_a_carried_sum_keeps_an_infinite_total():
    """TwoSum's rounding of an infinite term is NaN (−inf − −inf): the carried total keeps
    −inf (an impossible family) instead of NaN, and adds the roundings of finite ones."""
    import math

    from bigbn.scores.discrete import _carried, _two_sum

    s, err = _two_sum(0.0, -math.inf)
    assert math.isnan(err) and _carried(s, err) == -math.inf
    s, err = _two_sum(1.0, 2.0 ** -60)
    assert (s, err) == (1.0, 2.0 ** -60) and _carried(s, err) == 1.0 + 2.0 ** -60
