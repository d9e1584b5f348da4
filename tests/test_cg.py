"""The CG score (bigbn/scores/cg.py) on mixed data: its four required properties (BDeu on
discrete data, BGe on continuous data, score equivalence within CG DAGs, the naive twin and
a numerical integration), and exact posteriors against a brute force over DAGs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import naive
from bigbn.io.data import Dataset
from bigbn.kernels.families import family_masks, unsqueeze
from bigbn.scores.bge import bge_family_scores, bge_scores
from bigbn.scores.cg import cg_log_marginal, cg_scores
from bigbn.scores.discrete import local_scores, parent_set_index


def mixed(kinds, m, seed, arity=2):
    """A mixed Dataset with dependence: each discrete column (arity ``arity``, the second
    one ternary) from the previous discrete one, each continuous one from the previous
    columns with a shift per level of the first discrete column."""
    rng = np.random.default_rng(seed)
    n = len(kinds)
    data = np.zeros((m, n))
    arities = np.zeros(n, dtype=np.int64)
    prev_d = None
    seen = 0
    for j, kind in enumerate(kinds):
        if kind == "discrete":
            r = arity + (seen == 1)
            seen += 1
            base = rng.integers(0, r, m)
            if prev_d is not None:
                base = np.where(rng.random(m) < 0.6, data[:, prev_d].astype(int) % r, base)
            data[:, j] = base
            arities[j] = r
            prev_d = j
        else:
            x = rng.normal(size=m)
            if j:
                x += 0.8 * data[:, j - 1]
            if prev_d is not None:
                x += 1.5 * (data[:, prev_d] == 0)
            data[:, j] = x
    levels = tuple(tuple(str(c) for c in range(r)) for r in arities)
    return Dataset(tuple(f"v{j}" for j in range(n)), data, arities, levels, kind="mixed")


def naive_scores(ds, k, **kw):
    kinds = ["discrete" if r else "continuous" for r in ds.arities]
    return naive.cg_scores(ds.data, kinds, ds.arities, k, **kw)


# ------------------------------------------------------------------ 1. all discrete = BDeu

@pytest.mark.parametrize("ess", [1.0, 7.5])
def test_all_discrete_is_bdeu_bit_for_bit(ess):
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, size=(80, 5))
    codes[:, 1] = np.where(rng.random(80) < 0.7, codes[:, 0], codes[:, 1])
    levels = (("0", "1", "2"),) * 5
    dd = Dataset(tuple("abcde"), codes, np.full(5, 3), levels)
    dm = Dataset(tuple("abcde"), codes.astype(float), np.full(5, 3), levels, kind="mixed")
    for k in (1, 2, 4):
        assert np.array_equal(cg_scores(dm, k, ess=ess), local_scores(dd, k, "bdeu", ess))
    # the tiers' path: the named families, as BDeu's own family path scores them
    ps, fi = parent_set_index(5, 2)
    sets = (ps, fi, int(fi.max()) + 1)
    assert np.array_equal(cg_scores(dm, 2, ess=ess, sets=sets), local_scores(dd, 2, "bdeu", ess, sets=sets))


# ------------------------------------------------------------------ 2. all continuous = BGe

@pytest.mark.parametrize("alpha_mu, alpha_w", [(1.0, None), (3.0, 9.5), (1.0, 1e6)])
def test_all_continuous_is_bge_bit_for_bit(alpha_mu, alpha_w):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 5))
    X[:, 2] += X[:, 0] - 0.5 * X[:, 1]
    dc = Dataset(tuple("abcde"), X, np.zeros(5, int), ((),) * 5, kind="continuous")
    dm = Dataset(tuple("abcde"), X, np.zeros(5, int), ((),) * 5, kind="mixed")
    for k in (1, 3, 4):
        assert np.array_equal(cg_scores(dm, k, alpha_mu=alpha_mu, alpha_w=alpha_w),
                              bge_scores(dc, k, alpha_mu=alpha_mu, alpha_w=alpha_w))
    ps, fi = parent_set_index(5, 3)
    sets = (ps, fi, int(fi.max()) + 1)
    assert np.array_equal(cg_scores(dm, 3, alpha_mu=alpha_mu, alpha_w=alpha_w, sets=sets),
                          bge_family_scores(dc, sets, alpha_mu=alpha_mu, alpha_w=alpha_w))


def test_mixed_data_parts_are_bdeu_and_bge_of_their_columns():
    """In mixed data a discrete node's discrete-parent families score BDeu over the discrete
    columns, a continuous node's continuous-parent families BGe over the continuous ones
    (n_c variables), and a discrete node's families with a continuous parent −inf."""
    ds = mixed(["discrete", "continuous", "discrete", "continuous", "continuous"], 70, 3)
    k = 3
    beta = cg_scores(ds, k, ess=2.0, alpha_mu=1.5)
    disc, cont = [0, 2], [1, 3, 4]
    dd = Dataset(("v0", "v2"), ds.data[:, disc].astype(int), ds.arities[disc], (ds.levels[0], ds.levels[2]))
    dc = Dataset(("v1", "v3", "v4"), ds.data[:, cont], np.zeros(3, int), ((),) * 3, kind="continuous")
    bd, bc = local_scores(dd, 1, "bdeu", 2.0), bge_scores(dc, 2, alpha_mu=1.5)
    fam = family_masks(4, k).tolist()
    for i in range(5):
        for f, sq in enumerate(fam):
            ps = [b for b in range(5) if unsqueeze(sq, i) >> b & 1]
            if i in disc:
                if any(p in cont for p in ps):
                    assert beta[i, f] == -np.inf
                else:
                    a = disc.index(i)
                    sub = [disc.index(p) for p in ps]
                    g = sum(1 << (b if b < a else b - 1) for b in sub)
                    assert beta[i, f] == bd[a, family_masks(1, 1).tolist().index(g)]
            elif all(p in cont for p in ps):
                a = cont.index(i)
                g = sum(1 << (cont.index(p) if cont.index(p) < a else cont.index(p) - 1) for p in ps)
                assert beta[i, f] == pytest.approx(bc[a, family_masks(2, 2).tolist().index(g)], abs=1e-12)


# ------------------------------------------------------------------ 4. the naive twin

@pytest.mark.parametrize("kinds, k, seed", [
    (["discrete", "continuous", "discrete", "continuous"], 3, 4),
    (["continuous", "discrete", "continuous", "continuous", "discrete"], 2, 5),
    (["continuous", "continuous", "discrete"], 2, 6),
])
def test_scores_match_the_naive_twin(kinds, k, seed):
    ds = mixed(kinds, 40, seed)
    for kw in ({}, {"ess": 3.0, "alpha_mu": 2.0, "alpha_w": len([x for x in kinds if x == "continuous"]) + 4.5}):
        got = cg_scores(ds, k, **kw)
        want = naive_scores(ds, k, **kw)
        assert np.array_equal(np.isneginf(got), np.isneginf(want))
        fin = np.isfinite(want)
        assert np.abs(got[fin] - want[fin]).max() < 1e-9
        # not a trivial answer: the families differ by more than rounding
        assert np.ptp(want[fin]) > 1.0


def test_configuration_with_one_row_and_unseen_configurations():
    """A configuration of the discrete parents seen in one row contributes that row's
    marginal likelihood under its (proper) prior; an unseen one contributes nothing; the
    scores stay finite and equal the naive twin's."""
    ds = mixed(["discrete", "discrete", "continuous", "continuous"], 30, 7)
    data = ds.data.copy()
    data[:, 0] = 0
    data[0, 0] = 1  # level 1 of v0: one row
    data[:, 1] = np.where(data[:, 1] == 2, 1, data[:, 1])  # level 2 of v1 (ternary): unseen
    ds = Dataset(ds.names, data, ds.arities, ds.levels, kind="mixed")
    got, want = cg_scores(ds, 3), naive_scores(ds, 3)
    fin = np.isfinite(want)
    assert np.isfinite(got[2:]).all()
    assert np.abs(got[fin] - want[fin]).max() < 1e-9


def test_tier_layout_scores_equal_the_full_layout():
    """family_scores (the tiers' path, any n) gives the full layout's numbers."""
    ds = mixed(["continuous", "discrete", "continuous", "discrete", "continuous"], 45, 8)
    k = 2
    full = cg_scores(ds, k)
    ps, fi = parent_set_index(5, k)
    named = cg_scores(ds, k, sets=(ps, fi, full.shape[1]))
    assert np.array_equal(np.isneginf(named), np.isneginf(full))
    fin = np.isfinite(full)
    assert np.abs(named[fin] - full[fin]).max() < 1e-12
    # a sparse naming: only some families, the rest NaN
    index = np.where(np.arange(ps.shape[0])[:, None] % 3 == 0, fi, -1)
    part = cg_scores(ds, k, sets=(ps, index, full.shape[1]))
    want = np.full_like(full, np.nan)
    rows, cols = np.nonzero(index >= 0)
    want[cols, index[rows, cols]] = full[cols, index[rows, cols]]
    assert np.array_equal(np.isnan(part), np.isnan(want))
    ok = np.isfinite(want)
    assert np.abs(part[ok] - want[ok]).max() < 1e-12


def test_numerical_integration_of_a_continuous_node_with_a_discrete_parent():
    """log p(y | d) of a continuous node y with one binary discrete parent d, n_c = 2
    continuous columns (so the prior's degrees of freedom α_w(d) − n_c + 1 matter): per
    configuration, ∫∫ Π_t N(y_t | μ, 1/λ) N(μ | ν, 1/(α_μ(d) λ)) Gamma(λ | a0, rate t(d)/2)
    dμ dλ by quadrature, against the closed form."""
    from scipy import integrate, stats

    rng = np.random.default_rng(9)
    m = 7
    d = np.array([0, 1, 0, 1, 1, 0, 1])
    y = rng.normal(size=m) + d
    z = rng.normal(size=m)
    ds = Dataset(("d", "y", "z"), np.column_stack([d, y, z]), np.array([2, 0, 0]),
                 (("0", "1"), (), ()), kind="mixed")
    alpha_mu, alpha_w, n_c = 1.5, 5.0, 2
    t = alpha_mu * (alpha_w - n_c - 1) / (alpha_mu + 1)
    nu = y.mean()
    total = 0.0
    for level in (0, 1):
        yd = y[d == level]
        q = 2
        a_mu, t_d = alpha_mu / q, t / q
        a0 = ((alpha_w - n_c + 1) / q) / 2  # (α_w(d) − n_c + 1) / 2

        def integrand(mu, lam):
            return math.exp(stats.norm.logpdf(yd, mu, 1 / math.sqrt(lam)).sum()
                            + stats.norm.logpdf(mu, nu, 1 / math.sqrt(a_mu * lam))
                            + stats.gamma.logpdf(lam, a0, scale=2 / t_d))

        # λ = e^s: the prior's mass near 0 (shape a0 < 1) is resolved on the log scale
        value, err = integrate.dblquad(lambda mu, s: integrand(mu, math.exp(s)) * math.exp(s),
                                       -30, 8, -25, 25, epsabs=0, epsrel=1e-10)
        total += math.log(value)
    # the family (y | d): its column in the layout of node 1 ("y"), parents {d}
    beta = cg_scores(ds, 2, alpha_mu=alpha_mu, alpha_w=alpha_w)
    f = family_masks(2, 2).tolist().index(0b01)  # squeezed: d is bit 0
    assert beta[1, f] == pytest.approx(total, abs=1e-7)
    # and log p(S) of {d, y} is its BDeu part plus the same
    bdeu = cg_log_marginal(ds, [0], alpha_mu=alpha_mu, alpha_w=alpha_w)
    assert cg_log_marginal(ds, [0, 1], alpha_mu=alpha_mu, alpha_w=alpha_w) == pytest.approx(bdeu + total, abs=1e-7)


# ------------------------------------------------------------------ 3. score equivalence

def _cg_dags(kinds, k):
    """Every DAG (as family indices, `naive.enumerate_dags`) with no arc continuous →
    discrete, and each one's (skeleton, v-structures)."""
    n = len(kinds)
    dags = naive.enumerate_dags(n, k)
    fam = [[unsqueeze(g, i) for g in family_masks(n - 1, k).tolist()] for i in range(n)]
    keep, keys = [], []
    for row in dags:
        parents = [fam[i][f] for i, f in enumerate(row)]
        if any(kinds[i] == "discrete" and any(kinds[p] == "continuous" for p in range(n) if g >> p & 1)
               for i, g in enumerate(parents)):
            continue
        skeleton = frozenset(frozenset((p, i)) for i, g in enumerate(parents) for p in range(n) if g >> p & 1)
        vs = frozenset((a, c, b) for c, g in enumerate(parents)
                       for a, b in itertools.combinations([p for p in range(n) if g >> p & 1], 2)
                       if frozenset((a, b)) not in skeleton)
        keep.append(row)
        keys.append((skeleton, vs))
    return np.array(keep), keys


@pytest.mark.parametrize("kinds, seed", [
    (["discrete", "continuous", "continuous", "discrete"], 10),
    (["continuous", "discrete", "continuous", "continuous"], 11),
    (["discrete", "discrete", "continuous", "continuous", "continuous"], 12),
])
def test_score_equivalence_within_cg_dags(kinds, seed):
    n = len(kinds)
    ds = mixed(kinds, 35, seed)
    beta = cg_scores(ds, n - 1, ess=2.0)
    dags, keys = _cg_dags(kinds, n - 1)
    total = beta[np.arange(n)[None, :], dags].sum(axis=1)
    assert np.isfinite(total).all()
    classes: dict = {}
    for key, s in zip(keys, total.tolist()):
        classes.setdefault(key, []).append(s)
    big = [v for v in classes.values() if len(v) > 1]
    assert len(big) >= 5  # classes with several DAGs were compared
    for v in big:
        assert max(v) - min(v) < 1e-8 * max(1.0, abs(v[0]))
    # and the classes differ: the score tells them apart
    assert np.ptp([v[0] for v in classes.values()]) > 1.0


def test_far_apart_configurations_lose_no_digits():
    """A discrete parent that splits a continuous column into two tight clusters 10^4
    standard deviations apart: the per-configuration scatter matrices are formed about
    each configuration's own mean, so the scores agree with the naive twin's to 1e-9."""
    rng = np.random.default_rng(13)
    m = 40
    d = rng.integers(0, 2, m)
    x = 1e4 * d + 1e-3 * rng.normal(size=m)
    y = 0.5 * d + rng.normal(size=m)  # not collinear with x: the whole table's R stays well conditioned
    ds = Dataset(("d", "x", "y"), np.column_stack([d, x, y]), np.array([2, 0, 0]), (("0", "1"), (), ()),
                 kind="mixed")
    got, want = cg_scores(ds, 2), naive_scores(ds, 2)
    fin = np.isfinite(want)
    assert np.abs(got[fin] - want[fin]).max() < 1e-9 * np.abs(want[fin]).max()


# ------------------------------------------------------------------ 5. the fast path, kernel by kernel

from bigbn.scores import cg as cgmod  # noqa: E402


def _cells(codes, r, Ds):
    """index (S, m) int32 and G (S,) of `cgmod._cell_index` for the sets Ds (lists)."""
    kk = max(1, max(len(D) for D in Ds))
    arr = np.full((len(Ds), kk), -1, dtype=np.int64)
    for s, D in enumerate(Ds):
        arr[s, :len(D)] = D
    index = np.empty((len(Ds), codes.shape[0]), dtype=np.int32)
    G = np.empty(len(Ds), dtype=np.int64)
    cgmod._cell_index(np.ascontiguousarray(codes.T), np.asarray(r, dtype=np.int64), arr,
                      np.array([len(D) for D in Ds]), 0, len(Ds), index, G)
    return index, G


def test_cell_index_kernel_against_naive():
    """Dense keys, sparse keys (q > 4m: ranks by sorting) and keys past 2^62 (renumbered
    by rank before the next column) all give the rank of each row's configuration."""
    rng = np.random.default_rng(20)
    m = 300
    r = [2, 3, 7, 5000, 5000, 5000, 5000, 5000, 2]
    codes = np.column_stack([rng.integers(0, a, m) for a in r]).astype(np.int64)
    codes[:, 1] = np.where(codes[:, 1] == 2, 0, codes[:, 1])  # a level never seen
    Ds = [[0], [1], [0, 1, 2], [2, 8], [3], [3, 4], [0, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8], [1, 2, 8]]
    index, G = _cells(codes, r, Ds)
    for s, D in enumerate(Ds):
        want, g = naive.cg_cell_index(codes.tolist(), D)
        assert G[s] == g
        assert index[s].tolist() == want
    goff = np.concatenate([[0], np.cumsum(G)])
    counts = np.zeros(int(goff[-1]), dtype=np.int64)
    cgmod._cell_counts(index, goff, 0, len(Ds), counts)
    assert counts.tolist() == np.concatenate([np.bincount(index[s], minlength=G[s]) for s in range(len(Ds))]).tolist()


@pytest.mark.parametrize("G, offset", [(1, 0.0), (3, 0.0), (8, 1e4), (40, 0.0)])
def test_cell_moment_kernels_against_naive_bit_for_bit(G, offset):
    """_cell_moments (means, diagonal sums of squares) and _full_scatters (every entry) add
    the same products in the same order as plain Python floats do: equal bits."""
    rng = np.random.default_rng(21 + G)
    m, n = 203, 5
    x = rng.normal(size=(m, n)) + offset * rng.integers(0, 2, size=(m, 1))
    idx = rng.integers(0, G, m)
    idx[:G] = np.arange(G)  # every cell seen
    index = idx.astype(np.int32)[None]
    counts = np.bincount(idx, minlength=G).astype(np.int64)
    goff = np.array([0, G])
    counts_n, means_n, S_n = naive.cg_cell_moments(x.tolist(), idx.tolist(), G)
    for diagonal in (True, False):
        means = np.zeros((G, n))
        sq = np.zeros((G, n))
        cgmod._cell_moments(x, index, goff, counts, np.array([diagonal]), 0, 1, means, sq)
        assert means.tolist() == means_n
        if diagonal:
            assert sq.tolist() == [[S_n[g][a][a] for a in range(n)] for g in range(G)]
        else:
            assert not sq.any()
    S = np.zeros((G, n, n))
    cgmod._full_scatters(x, idx.astype(np.int32), means, counts, np.empty(m, dtype=np.int64), np.empty((m, n)), S)
    assert S.tolist() == S_n
    # and the old kernel's (the upper triangle, mirrored)
    c_old, m_old, S_old = cgmod._scatters(idx.astype(np.int64), G, x, False)
    assert np.array_equal(m_old, means) and np.array_equal(S_old, S)


def test_posterior_and_cell_sum_kernels_against_the_numpy_path():
    """_posterior forms `_Split.groups`'s P (R less t·I) bit for bit, and _cell_sum the sum over cells of
    `_group_log_marginals` (in order for several sets; numpy's pairwise order for one set,
    with up to 300 cells, past numpy's blocks of 128)."""
    for D, kinds, arity, m in ((1, 3, 2, 80), (0, 2, 6, 900)):
        n_d = 3
        ds = mixed(["discrete"] * n_d + ["continuous"] * kinds, m, 22 + m, arity=arity)
        split = cgmod._Split(ds, 1.0, None)
        Dset = tuple(range(n_d)) if D == 0 else (0,)
        groups = split.groups(Dset)
        q, index, G = split.configurations(Dset)
        counts, means, S = cgmod._scatters(index, G, split.x, False)
        P = cgmod._posterior(S, means, split.nu, counts.astype(np.int64), groups.a_mu, True)
        assert np.array_equal(P, groups.P)
        for sets in (np.array([[0]]), np.array([[0, 1], [0, 2]] if kinds > 2 else [[0, 1], [1, 1]])[:1],
                     np.array([[0], [1]])):
            want = cgmod._group_log_marginals(split, groups, sets)
            l = sets.shape[1]
            md = groups.counts
            a1 = (md + groups.a_w + (l - 1)) / 2
            gam = cgmod._lgamma_sums(a1, l) - sum(math.lgamma((groups.a_w + (l - 1 - j)) / 2) for j in range(l))
            const = (-l * md / 2 * math.log(math.pi) + l / 2 * np.log(groups.a_mu / (md + groups.a_mu)) + gam
                     - l * md / 2 * math.log(groups.t))
            L = np.zeros((l, l))
            err = np.zeros(1, dtype=np.int64)
            got = [cgmod._cell_sum(P, groups.t, C.copy(), l, const, a1, 0, sets.shape[0] == 1, L, err, 0, 1)
                   for C in sets]
            assert got == want.tolist()
            assert not err.any()
    assert G > 128


@pytest.mark.parametrize("n", [0, 1, 5, 7, 8, 9, 100, 128, 129, 300, 1000, 4097])
def test_pairwise_kernel_is_numpys_sum(n):
    rng = np.random.default_rng(n)
    v = rng.normal(size=n) * 10.0 ** rng.integers(-3, 6, size=n)
    want = v.reshape(-1, 1).sum(axis=0)[0] if n else 0.0
    assert 0.0 + cgmod._pairwise(v, 0, n) == want == naive.pairwise_sum(v.tolist())


@pytest.mark.parametrize("kinds, arity, m, k, seed", [
    (["discrete", "continuous", "discrete", "continuous", "continuous", "discrete", "continuous"], 3, 60, 4, 23),
    (["discrete", "discrete", "discrete", "continuous"], 3, 200, 3, 24),  # 9+ cells, one child: numpy's pairwise
    (["discrete", "discrete", "discrete", "continuous", "continuous"], 6, 900, 3, 25),  # > 128 cells
    (["continuous", "discrete", "continuous"], 2, 9, 2, 26),  # cells of one row
    (["discrete", "continuous", "continuous", "discrete", "continuous", "continuous", "discrete", "continuous",
      "continuous"], 2, 500, 3, 27),
])
def test_scores_equal_the_numpy_path_bit_for_bit(kinds, arity, m, k, seed, monkeypatch):
    """The fast path (cell index, moments, scatter and log-det kernels on threads) gives
    the numbers of the per-D numpy path it replaced: bit for bit where each D's cells are
    formed from the rows (JOINT_SHARE = 0 and one group of columns: no tables), for the
    full layout and for a sparse naming of families (the tiers' path); to 1e-13 relative
    where they are merged from the joint cells or tables (the same sums in another order: a few ulps of each scatter entry, 2e-15
    relative in the scores here)."""
    ds = mixed(kinds, m, seed, arity=arity)
    ps, fi = parent_set_index(len(kinds), k)
    index = np.where(np.arange(ps.shape[0])[:, None] % 3 == 0, fi, -1)
    sets = (ps, index, int(fi.max()) + 1)
    split = cgmod._Split(ds, 1.0, None)
    sources = cgmod._sources(split, np.ascontiguousarray(split.codes.T), np.zeros((2, 1), dtype=np.int64),
                             np.ones(2, dtype=np.bool_))[1]
    joint = sources[0][2] is not split.x
    assert joint == (m >= 60)  # these data: the joint cells are few enough from 60 rows on
    for share in (0.0, cgmod.JOINT_SHARE):
        monkeypatch.setattr(cgmod, "JOINT_SHARE", share)
        monkeypatch.setattr(cgmod, "GROUP_CELLS", 1 << 62 if share == 0.0 else 16)  # 0: no tables either
        same = np.array_equal if share == 0.0 or not joint else (
            lambda a, b, equal_nan=False: np.allclose(a, b, rtol=1e-13, atol=0.0, equal_nan=True))
        for kw in ({}, {"ess": 3.0, "alpha_mu": 2.0, "alpha_w": kinds.count("continuous") + 4.5},
                   {"alpha_w": 1e6}):  # the cells' log-gamma ratios from Stirling's series
            assert same(cg_scores(ds, k, **kw), naive.cg_continuous_by_numpy(ds, k, **kw))
        assert same(cg_scores(ds, k, sets=sets), naive.cg_continuous_by_numpy(ds, k, sets=sets), equal_nan=True)


@pytest.mark.parametrize("K, G, offset", [(1, 1, 0.0), (12, 3, 0.0), (40, 8, 1e4), (60, 60, 1e8)])
def test_joint_cell_kernels_against_the_rows(K, G, offset):
    """Each D-cell's rows, means and centred scatter merged from its joint cells
    (`_cell_counts_w`, `_joint_moments`, `_joint_scatters`: the parallel-axis rule) are
    those formed from its rows (naive.cg_cell_moments), also where the cells' means lie
    10^8 apart (no digits cancel: every term is about its own mean). The merge's error is
    the conditioning of centring values of size |x| with spread sd: the joint cells'
    means carry ε|x| each, so an entry is good to ≈ ε |x| sd √(rows · largest joint cell)
    (1.6e-10 of 30 at |x| = 7·10^4, sd = 1), where the rows' two passes cancel that to
    first order; the bound below is 32 times that, plus 1e-12 relative."""
    rng = np.random.default_rng(K + G)
    m, n = 301, 4
    J = rng.integers(0, K, m)
    J[:K] = np.arange(K)  # every joint cell seen
    jmap = rng.integers(0, G, K)
    jmap[:G] = np.arange(G)  # every D-cell seen
    x = rng.normal(size=(m, n)) + offset * jmap[J][:, None] + rng.normal(size=(1, n)) * 1e3
    nJ, muJ, MJ = (np.array(a) for a in naive.cg_cell_moments(x.tolist(), J.tolist(), K))
    counts_n, means_n, S_n = (np.array(a) for a in naive.cg_cell_moments(x.tolist(), jmap[J].tolist(), G))
    index = jmap.astype(np.int32)[None]
    goff = np.array([0, G])
    counts = np.zeros(G, dtype=np.int64)
    cgmod._cell_counts_w(index, goff, 0, 1, nJ.astype(np.int64), counts)
    assert counts.tolist() == counts_n.astype(np.int64).tolist()
    for diagonal in (False, True):
        means = np.zeros((G, n))
        sq = np.zeros((G, n))
        cgmod._joint_moments(muJ, np.ascontiguousarray(np.diagonal(MJ, axis1=1, axis2=2)), nJ.astype(np.int64),
                             index, goff, counts, np.array([diagonal]), 0, 1,
                             means, sq)
        np.testing.assert_allclose(means, means_n, rtol=1e-12, atol=1e-12 * np.abs(x).max())
        assert sq.any() == diagonal
    diag = np.diagonal(S_n, axis1=1, axis2=2)  # (G, n)
    sd = np.sqrt(diag / counts_n[:, None])
    cond = 32 * np.finfo(float).eps * np.abs(x).max() * np.sqrt(counts_n * nJ.max())[:, None, None]
    bound = 1e-12 * np.sqrt(np.einsum("ga,gb->gab", diag, diag)) + cond * np.sqrt(np.einsum("ga,gb->gab", sd, sd))
    assert np.all(np.abs(sq - diag) <= np.diagonal(bound, axis1=1, axis2=2))
    S = np.zeros((G, n, n))
    cgmod._joint_scatters(muJ, MJ, nJ.astype(np.int64), jmap.astype(np.int32), means, S)
    assert np.all(np.abs(S - S_n) <= bound)
    assert np.array_equal(S, np.swapaxes(S, 1, 2))


def test_pair_tables_serve_the_sets_within_two_groups():
    """With many discrete columns (12 binary: groups of 4) and many joint cells, the sets
    within two groups take their cells from the pair's table (merged from the joint cells,
    `_table`), those across three from the joint cells (the three's table would be as
    many): every score as the numpy path's (from the rows) to 1e-13 relative, and as the
    rows' own kernels'."""
    rng = np.random.default_rng(31)
    m, p = 8000, 12  # ≈ 3 500 joint cells: at most half the rows
    codes = rng.integers(0, 2, (m, p))
    x = rng.normal(size=(m, 2)) + codes[:, :2] * 0.7
    x[:, 1] += 0.5 * x[:, 0]
    data = np.column_stack([codes, x]).astype(np.float64)
    n = p + 2
    ds = Dataset(tuple(f"v{j}" for j in range(n)), data, np.array([2] * p + [0, 0]),
                 tuple(("0", "1") for _ in range(p)) + ((), ()), kind="mixed")
    split = cgmod._Split(ds, 1.0, None)
    codes_t = np.ascontiguousarray(split.codes.T)
    ps, fi = parent_set_index(n, 3)
    Ds = np.array([[a, b, c] for a in range(p) for b in range(a + 1, p) for c in range(b + 1, p)])
    src, sources = cgmod._sources(split, codes_t, Ds, np.zeros(len(Ds), dtype=np.bool_))
    assert len(sources) == 4 and np.bincount(src).tolist() == [64, 56, 52, 48]  # 4·4·4 across three groups
    got = cg_scores(ds, 3)
    np.testing.assert_allclose(got, naive.cg_continuous_by_numpy(ds, 3), rtol=1e-13, atol=0.0)
    import unittest.mock
    with unittest.mock.patch.object(cgmod, "JOINT_SHARE", 0.0), unittest.mock.patch.object(cgmod, "GROUP_CELLS", 1 << 62):
        rows = cg_scores(ds, 3)
    np.testing.assert_allclose(got, rows, rtol=1e-13, atol=0.0)


def test_tables_from_the_rows_for_pairs_and_threes_of_groups():
    """Joint cells too many (8 independent ternary columns, m = 4000: ≈ 3 000 of them), so
    the tables are merged from the rows: each pair of groups (2 columns each) serves the
    sets within it, each three groups the sets of three columns across them (diagonals
    only); every score as the numpy path's to 1e-13 relative."""
    rng = np.random.default_rng(32)
    m, p = 4000, 8
    codes = rng.integers(0, 3, (m, p))
    x = rng.normal(size=(m, 2)) + codes[:, :2] * 0.5
    x[:, 1] += 0.5 * x[:, 0]
    n = p + 2
    ds = Dataset(tuple(f"v{j}" for j in range(n)), np.column_stack([codes, x]).astype(np.float64),
                 np.array([3] * p + [0, 0]), tuple(("0", "1", "2") for _ in range(p)) + ((), ()), kind="mixed")
    split = cgmod._Split(ds, 1.0, None)
    codes_t = np.ascontiguousarray(split.codes.T)
    assert cgmod._joint_cells(split, codes_t, split.x) is None
    assert cgmod._groups(split).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    Ds = np.array([list(c) for c in itertools.combinations(range(p), 3)])
    src, sources = cgmod._sources(split, codes_t, Ds, np.zeros(len(Ds), dtype=np.bool_))
    assert len(sources) == 1 + 6 + 4 and np.bincount(src).tolist() == [0] + [4, 4, 4, 4, 4, 4] + [8, 8, 8, 8]
    assert all(sources[j][3].size == 0 for j in range(7, 11))  # the threes' tables: diagonals only
    np.testing.assert_allclose(cg_scores(ds, 3), naive.cg_continuous_by_numpy(ds, 3), rtol=1e-13, atol=0.0)


def test_merged_scatter_against_exact_arithmetic():
    """Far from 0 (mean −5 000, spread 1.5) the merged scatter matrices (joint cells formed
    from the rows less ν, then `_joint_moments`, `_joint_scatters`) and the rows' two
    passes (`_scatters`) are both within 4 ulps of each entry's diagonal scale of the exact
    rational answer (naive.exact_cell_scatter)."""
    rng = np.random.default_rng(33)
    m, c, K, G = 90, 3, 9, 3
    J = rng.integers(0, K, m)
    J[:K] = np.arange(K)
    jmap = np.arange(K) % G
    x = rng.normal(size=(m, c)) * 1.5 - 5233.0 + jmap[J][:, None] * 0.7
    exact = np.array(naive.exact_cell_scatter(x.tolist(), jmap[J].tolist(), G))
    scale = np.sqrt(np.einsum("gaa,gbb->gab", exact, exact))
    xc = x - x.mean(axis=0)
    nJ, muJ, MJ = (np.array(a) for a in naive.cg_cell_moments(xc.tolist(), J.tolist(), K))
    counts = np.bincount(jmap, weights=nJ).astype(np.int64)
    means = np.zeros((G, c))
    cgmod._joint_moments(muJ, np.ascontiguousarray(np.diagonal(MJ, axis1=1, axis2=2)), nJ.astype(np.int64),
                         jmap.astype(np.int32)[None], np.array([0, G]), counts, np.array([False]), 0, 1, means,
                         np.zeros((G, c)))
    merged = np.zeros((G, c, c))
    cgmod._joint_scatters(muJ, MJ, nJ.astype(np.int64), jmap.astype(np.int32), means, merged)
    rows = cgmod._scatters(jmap[J].astype(np.int64), G, x, False)[2]
    eps = np.finfo(float).eps
    assert np.all(np.abs(merged - exact) <= 4 * eps * scale)
    assert np.all(np.abs(rows - exact) <= 4 * eps * scale)


def test_joint_cells_only_where_they_are_few():
    """The joint cells replace the rows only when there are at most JOINT_SHARE of them per
    row (and there are two or more discrete sets to share them)."""
    few = mixed(["discrete", "discrete", "continuous", "discrete", "continuous"], 400, 3, arity=2)
    many = mixed(["discrete", "discrete", "continuous", "discrete", "continuous"], 30, 3, arity=6)
    for ds, want in ((few, True), (many, False)):
        split = cgmod._Split(ds, 1.0, None)
        codes_t = np.ascontiguousarray(split.codes.T)
        got = cgmod._joint_cells(split, codes_t, split.x)
        assert (got is not None) == want
        src, sources = cgmod._sources(split, codes_t, np.array([[0, 1, 2]]), np.array([True]))  # one set: the rows
        assert len(sources) == 1 and sources[0][2] is split.x
    split = cgmod._Split(few, 1.0, None)
    codes, counts, means, within, diag, nu = cgmod._joint_cells(split, np.ascontiguousarray(split.codes.T), split.x)
    K = counts.size
    assert codes.shape == (3, K) and counts.sum() == 400 and within.shape == (K, 2, 2) and K <= 100
    assert np.array_equal(diag, np.diagonal(within, axis1=1, axis2=2)) and not nu.any()


def test_one_level_discrete_column_is_the_whole_table(monkeypatch):
    """A discrete column with one level (q = 1) leaves its families on the whole table,
    BGe's prior: the numbers of the numpy path (the other sets' cells from the rows, as
    it forms them)."""
    monkeypatch.setattr(cgmod, "JOINT_SHARE", 0.0)
    ds = mixed(["discrete", "continuous", "discrete", "continuous", "continuous"], 50, 28)
    data = ds.data.copy()
    data[:, 0] = 0
    arities = ds.arities.copy()
    arities[0] = 1
    ds = Dataset(ds.names, data, arities, (("0",),) + ds.levels[1:], kind="mixed")
    assert np.array_equal(cg_scores(ds, 3), naive.cg_continuous_by_numpy(ds, 3))


def test_continuous_columns_far_from_unit_scale_are_warned_about():
    """Each configuration's prior is BGe's (T = t·I), so the cg score warns, as BGe does,
    about continuous columns far from unit scale, naming those only (not the discrete
    codes, whose spread means nothing); a table on unit scale gets no line."""
    from bigbn.scores.base import BUILTIN

    ds = mixed(["discrete", "continuous", "discrete", "continuous", "continuous"], 300, 41, arity=3)
    assert BUILTIN["cg"].data_warnings(ds) == []
    data = ds.data.copy()
    data[:, 1] *= 1e3
    data[:, 4] *= 1e-4
    far = Dataset(ds.names, data, ds.arities, ds.levels, kind="mixed", path="t.csv")
    [line] = BUILTIN["cg"].data_warnings(far)
    assert line.startswith("t.csv: 2 of 3 continuous columns are far from unit scale: 'v1' (sd ")
    assert "'v4' (sd " in line and "'v0'" not in line and "'v2'" not in line and "cg score's prior" in line


@pytest.mark.parametrize("far", ["offset 1e12", "integers near 2^53"])
def test_scores_far_from_zero_equal_the_exact_rational_scores(far):
    """Continuous columns far from 0 with a spread of order 1 (one continuous column near
    the offset, the others at unit scale, in every path: the whole table, and cells of one
    and of two discrete columns): the scores equal those with every R and determinant in
    exact rationals (tests/naive.py). With ν and the cell means in float64 near the offset
    (each off by about ε|x̄|), they erred by 1e-6 (1e12) and 1e-4 (2^53) relative."""
    ds = mixed(["discrete", "discrete", "continuous", "continuous", "continuous"], 30, seed=2)
    data = ds.data.copy()
    if far == "offset 1e12":
        data[:, 3] += 1e12
    else:
        rng = np.random.default_rng(4)
        data[:, 3] = 2.0**53 - rng.integers(0, 1000, size=30) - 200 * data[:, 0]
    ds = Dataset(ds.names, data, ds.arities, ds.levels, kind="mixed")
    got = cg_scores(ds, 3)
    want = naive.exact_cg_scores(data, ds.arities, 3)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=0)


@pytest.mark.parametrize("where", ["whole table", "one configuration"])
def test_collinear_columns_float64_cannot_carry_are_refused_naming_them(where):
    """v3 = v2 far from unit scale (1e6), in every row (the whole table's R fails first)
    or only in the rows of v0's level 0 (the cells' kernels fail): refused in one line
    naming the continuous columns (and the discrete ones of the configuration), not
    scored 1e-3 off or "not positive definite (bug or overflow)"."""
    from bigbn.errors import DataError

    ds = mixed(["discrete", "discrete", "continuous", "continuous", "continuous"], 30, seed=2)
    data = ds.data.copy()
    data[:, 2] *= 1e6
    rows = slice(None) if where == "whole table" else data[:, 0] == 0
    data[rows, 3] = data[rows, 2]
    if where == "one configuration":
        data[~rows, 3] *= 1e6
    ds = Dataset(ds.names, data, ds.arities, ds.levels, kind="mixed", path="m.csv")
    tail = "" if where == "whole table" else r" \(in the rows of one configuration of 'v0'(, 'v1')?\)"
    with pytest.raises(DataError, match=rf"^m\.csv: columns 'v2', 'v3' are linearly dependent, or nearly so{tail}, at"):
        cg_scores(ds, 3)


def test_a_column_too_large_for_float64_is_named():
    """A continuous column whose spread overflows (1e200 in one level's rows, 1 in the
    others) is refused naming it, not the first continuous column ('v2' before)."""
    from bigbn.errors import DataError

    ds = mixed(["discrete", "discrete", "continuous", "continuous", "continuous"], 30, seed=2)
    data = ds.data.copy()
    data[data[:, 0] == 0, 4] = 1e200
    ds = Dataset(ds.names, data, ds.arities, ds.levels, kind="mixed", path="m.csv")
    with pytest.raises(DataError, match=r"^m\.csv, column 'v4': values too large for float64"):
        cg_scores(ds, 3)


def test_many_configurations_score_exactly():
    """Two discrete columns of 10^4 levels (q = 10^8 configurations of the pair, as the
    levels declared allow) and 8 continuous ones: each configuration's prior has
    α_w(d) − n_c + 1 = 3/q degrees of freedom, which bigbn formed as α_w(d) = n_c − 1 + 3/q
    and subtracted again, losing it to n_c's ulp (1e-8 relative in a0, 2e-10 in the scores
    here): they now equal the exact rational ones (tests/naive.py) to 1e-12."""
    rng = np.random.default_rng(8)
    m, n_c = 24, 8
    codes = rng.integers(0, 3, size=(m, 2)).astype(np.float64)
    x = rng.normal(size=(m, n_c))
    x[:, 0] += codes[:, 0]
    data = np.c_[codes, x]
    arities = np.array([10_000, 10_000] + [0] * n_c, dtype=np.int64)
    _equal_to_exact(tuple(f"v{j}" for j in range(2 + n_c)), data, arities, 2, rtol=1e-12)


def test_a_prior_too_small_to_spread_over_the_configurations_is_refused():
    """α_μ = 1e-300 (α_w = 3) spread over the 2^60 configurations of three discrete
    columns of 2^20 levels: α_μ/q and t/q are subnormal, and the scores were 1.9e-6 nats
    off the exact rational ones (12 rows); over 2^63 (α_μ just above what the whole table
    allows) t/q is 0 and its log a 'math domain error' traceback. Both refused in one line,
    naming the columns, by the scores and by the log marginal; q = 2 runs."""
    import bigbn
    from bigbn.errors import OptionError

    rng = np.random.default_rng(0)
    m = 12
    for bits, alpha_mu in ((20, 1e-300), (21, m * float(np.finfo(np.float64).tiny) * 1.01)):
        r = 1 << bits
        data = np.c_[rng.integers(0, r, size=(m, 3)), rng.normal(size=(m, 1))].astype(np.float64)
        levels = tuple(str(c) for c in range(r))
        ds = Dataset(("a", "b", "c", "x"), data, np.array([r, r, r, 0]), (levels,) * 3 + ((),), kind="mixed")
        match = r"^CG alpha_mu .* is too small a prior to spread over the .* configurations of 'a', 'b', 'c' for 12 rows"
        with pytest.raises(OptionError, match=match):
            cg_scores(ds, 3, alpha_mu=alpha_mu, alpha_w=3.0)
        with pytest.raises(OptionError, match=match):
            cg_log_marginal(ds, [0, 1, 2, 3], alpha_mu=alpha_mu, alpha_w=3.0)
        with pytest.raises(OptionError, match=match):
            bigbn.learn(ds, score="cg", max_parents=3, alpha_mu=alpha_mu, alpha_w=3.0)
    two = Dataset(("a", "x", "y"), np.c_[rng.integers(0, 2, size=(m, 1)), rng.normal(size=(m, 2))],
                  np.array([2, 0, 0]), (("0", "1"), (), ()), kind="mixed")
    assert np.isfinite(cg_scores(two, 2, alpha_mu=1e-300, alpha_w=4.0)[1:]).all()


def _equal_to_exact(names, data, arities, k, rtol):
    """cg_scores of a mixed table (arity 0: continuous) against the exact rational ones of
    tests/naive.py: the same impossible families, the rest within rtol."""
    levels = tuple(tuple(str(c) for c in range(r)) for r in arities)
    got = cg_scores(Dataset(tuple(names), data, arities, levels, kind="mixed"), k)
    want = naive.exact_cg_scores(data, arities, k)
    fin = np.isfinite(want)
    assert np.array_equal(fin, np.isfinite(got))
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=0)


def test_a_tiny_alpha_mu_with_the_default_alpha_w_scores_exactly():
    """As tests/test_bge.py's: α_μ = 1e-12 with the default α_w = n_c + α_μ + 1, whose
    float64 value lost α_μ's digits below n_c's ulp in t (scores 1e-6 relative off)."""
    ds = mixed(["discrete", "continuous", "continuous", "continuous"], 20, seed=9)
    np.testing.assert_allclose(cg_scores(ds, 3, alpha_mu=1e-12), naive.exact_cg_scores(ds.data, ds.arities, 3,
                                                                                         alpha_mu=1e-12),
                               rtol=1e-12, atol=0)


@pytest.mark.parametrize("sd", [8.0, 100.0])
def test_configurations_with_fewer_rows_than_columns_are_scored_not_refused(sd):
    """A discrete parent of many levels (60 levels, 2 rows each) and 3 continuous columns of
    sd 8 or 100: each configuration's prior t/q is far below its rows' spread, so a
    pivot of R_d is about (t/q)/(sd² m_d) of its diagonal entry, yet the scatter of a
    configuration with fewer rows than columns cancels almost exactly (the review of the
    numerical audit: a fixed 2^-20 share refused these, whose scores float64 carries to
    2e-13 relative). Accepted, and equal to the exact rational scores to 1e-11 relative."""
    rng = np.random.default_rng(3)
    m, levels = 120, 60
    d = np.repeat(np.arange(levels), 2).astype(np.float64)
    x1 = rng.normal(size=m) * sd
    x2 = 0.5 * x1 + rng.normal(size=m) * sd
    x3 = x2 + rng.normal(size=m) * sd
    data = np.c_[d, x1, x2, x3]
    _equal_to_exact(("d", "x1", "x2", "x3"), data, np.array([levels, 0, 0, 0], dtype=np.int64), 3, rtol=1e-11)


def test_the_cells_error_bound_is_bges():
    """`_cell_sum` (numba, cached apart from bge.py) holds bge.LOG_ERROR_TOL in units of ε
    and bge.PIVOT_UNITS as literals of its own module: they agree."""
    from bigbn.scores import bge, cg

    assert cg._CELL_ERROR_UNITS == bge.LOG_ERROR_TOL / bge.EPS
    assert cg._CELL_PIVOT_UNITS == bge.PIVOT_UNITS


# ------------------------------------------------------------------------------ numerical audit 3

def test_the_cells_gamma_ratios_against_high_precision():
    """`_log_gamma_ratios` per cell, Σ_{j < l} [log Γ(a1 − j/2) − log Γ(a0 − j/2)], a0 =
    (df + l − 1)/2, a1 = a0 + m_d/2, with df = α_w(d) − n_c + 1 below and above 32 (the
    smallest base df/2 at 16, where Stirling's series takes over): from 32 on within 2e-15
    relative of 50-digit mpmath (as BGe's, tests/test_bge.py); below, the numbers of the
    former expression bit for bit. As differences of math.lgamma the terms of df = 1e8/3
    erred by 1e-8 relative."""
    mp = pytest.importorskip("mpmath")
    from math import lgamma

    df = np.array([3.0, 0.25, 31.5, 32.0, 1e3 / 7, 1e6 / 3, 1e8 / 3, 1e8 / 3, 1e8 / 3])
    md = np.array([5.0, 1.0, 20.0, 1.0, 7.0, 40.0, 1.0, 2.0, 1001.0])
    for l in range(1, 5):
        a1 = (md + df + (l - 1)) / 2
        got = cgmod._log_gamma_ratios(a1, md, df, l)
        for c in range(df.size):
            if df[c] < 32:
                assert got[c] == sum(lgamma(a1[c] - j / 2) for j in range(l)) - cgmod._lgamma_prior(df[c], l)
                continue
            with mp.workdps(50):
                a0 = mp.mpf(df[c]) / 2 + mp.mpf(l - 1) / 2
                want = float(sum(mp.loggamma(a0 + mp.mpf(md[c] - j) / 2) - mp.loggamma(a0 - mp.mpf(j) / 2)
                                 for j in range(l)))
            assert abs(got[c] - want) <= 2e-15 * abs(want), (l, c)


@pytest.mark.parametrize("ess, alpha_mu, alpha_w, sd", [(1.0, 1.0, 1e8, 1.0), (1e8, 1e8 - 4, None, 1.0),
                                                         (1.0, 1e-6, 1e6, 1e-4)])
def test_scores_of_large_hyperparameters_equal_the_high_precision_ones(ess, alpha_mu, alpha_w, sd):
    """As tests/test_bge.py's: hyperparameters up to `MAX_HYPER` (and α_w = 1e6, t ≈ 1,
    continuous columns of sd 1e-4), two discrete columns (cells of one and of two discrete
    parents, on the kernels' path, and the whole table): against every term at 50 digits
    (tests/naive.py, dps) within 1e-12 nats (3e-13 measured). Before, the determinant terms
    and the log-gamma ratios cancelled: 5e-7 nats off at α_w = 1e8, 4e-7 at α_μ = 1e8,
    2.2e-9 at 1e6 with sd 1e-4."""
    ds = mixed(["discrete", "discrete", "continuous", "continuous", "continuous"], 30, seed=2)
    data = ds.data.copy()
    data[:, 2:] *= sd
    got = cg_scores(Dataset(ds.names, data, ds.arities, ds.levels, kind="mixed"), 3, ess=ess, alpha_mu=alpha_mu,
                    alpha_w=alpha_w)
    want = naive.exact_cg_scores(data, ds.arities, 3, ess=ess, alpha_mu=alpha_mu, alpha_w=alpha_w, dps=50)
    fin = np.isfinite(want)
    assert np.array_equal(fin, np.isfinite(got))
    np.testing.assert_allclose(got[fin], want[fin], rtol=0, atol=1e-12)


def test_the_dirichlet_part_of_a_large_ess_against_high_precision():
    """cg_log_marginal of discrete columns at ess = 1e8 (the largest accepted): its
    Dirichlet-multinomial part takes log Γ(a + m_d) − log Γ(a) as `_log_rising`, as BDeu's
    kernels do, within 1e-10 nats of 50-digit mpmath (terms near 30 · log(1e8/6) ≈ 500
    nats, each within 3e-16 relative); as differences of math.lgamma near 2e9 it erred by
    1e-7."""
    mp = pytest.importorskip("mpmath")
    ds = mixed(["discrete", "discrete", "continuous"], 30, seed=2)
    ess = 1e8
    got = cg_log_marginal(ds, [0, 1], ess=ess)
    codes = ds.data[:, :2].astype(int)
    q = int(ds.arities[0] * ds.arities[1])
    counts = np.unique(codes[:, 0] * ds.arities[1] + codes[:, 1], return_counts=True)[1]
    with mp.workdps(50):
        a = mp.mpf(ess / q)  # bigbn's float64 a, exactly
        want = float(sum(mp.loggamma(a + int(c)) - mp.loggamma(a) for c in counts)
                     - mp.loggamma(mp.mpf(ess) + 30) + mp.loggamma(mp.mpf(ess)))
    assert abs(got - want) <= 1e-10


# ------------------------------------------------ exact54: hostile magnitudes, exact or refused

def _hostile_mixed(D, X):
    """A mixed Dataset of discrete columns D (codes, (m, a)) and continuous X (m, b)."""
    ar = [int(c.max()) + 1 for c in D.T]
    names = tuple(f"d{i}" for i in range(D.shape[1])) + tuple(f"x{i}" for i in range(X.shape[1]))
    levels = tuple(tuple(str(v) for v in range(a)) for a in ar) + ((),) * X.shape[1]
    return Dataset(names, np.c_[D, X], np.array(ar + [0] * X.shape[1]), levels, "mixed", "d.csv")


@pytest.mark.parametrize("case, rtol", [("offset 1e8", 1e-14), ("scales 1e-8 and 1e8", 1e-14),
                                        ("collinear 1e-9", 1e-12), ("alpha_w n_c + 1 + 1e-6", 2e-11),
                                        ("alpha_mu 1e6, alpha_w 1e8", 1e-14), ("alpha_mu 1e-3", 1e-10),
                                        ("ess 1e-6, sd 1e-4 at 1e8", 1e-14)])
@pytest.mark.parametrize("configs", ["two rows each", "one or two rows"])
def test_configurations_of_one_or_two_rows_at_hostile_magnitudes(configs, case, rtol):
    """A discrete parent of 150 levels over 300 rows, each level's configuration of 2 rows
    (or of 1 or 2), continuous columns at an offset of 1e8, of sd 1e-8 and 1e8, nearly
    collinear (x1 = x0 + 1e-9·noise), tiny and huge priors (t/q down to 3e-9): every cg
    score against the exact ones (naive.exact_cg_scores, 40 digits). Measured (exact54):
    ≤ 8e-15 relative for the magnitudes and the large prior, 1e-13 collinear, 9e-12
    (2e-8 nats) at α_w = n_c + 1 + 1e-6, 2.7e-11 (4e-8 nats) at α_μ = 1e-3, where each
    configuration's t/q is 3e-6 of its 1 or 2 rows' spread: all accepted under
    `LOG_ERROR_TOL`. (Smaller α_μ, 1e-4, is refused there as collinear in a configuration.)"""
    rng = np.random.default_rng(0)
    m = 300
    X = gaussian_data_cg(m, 3, seed=2)
    if configs == "two rows each":
        D = np.r_[np.arange(m // 2), np.arange(m // 2)][rng.permutation(m)][:, None]
    else:
        D = np.r_[np.arange(m // 2), rng.integers(0, m // 2, size=m - m // 2)][:, None]
    kw = {}
    if case == "offset 1e8":
        X = 1e8 + X
    elif case == "scales 1e-8 and 1e8":
        X = X * np.array([1e-8, 1.0, 1e8])
    elif case == "collinear 1e-9":
        X[:, 1] = X[:, 0] + 1e-9 * rng.normal(size=m)
    elif case == "alpha_w n_c + 1 + 1e-6":
        kw = dict(alpha_w=4 + 1e-6)
    elif case == "alpha_mu 1e6, alpha_w 1e8":
        kw = dict(alpha_mu=1e6, alpha_w=1e8)
    elif case == "alpha_mu 1e-3":
        kw = dict(alpha_mu=1e-3)
    else:
        X, kw = 1e8 + 1e-4 * X, dict(ess=1e-6)
    ds = _hostile_mixed(D, X)
    got = cg_scores(ds, 2, **kw)
    want = naive.exact_cg_scores(ds.data, ds.arities, 2, dps=40, **kw)
    ok = np.isfinite(want)
    assert (np.isfinite(got) == ok).all()
    np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=0)


def gaussian_data_cg(m, n, seed):
    """tests/test_bge.py's gaussian_data (a random linear Gaussian DAG j -> i, j < i)."""
    rng = np.random.default_rng(seed)
    X = np.empty((m, n))
    for i in range(n):
        w = rng.normal(0, 0.8, size=i) * (rng.random(i) < 0.6)
        X[:, i] = X[:, :i] @ w + rng.normal(0.3 * i, 1.0, size=m)
    return X
