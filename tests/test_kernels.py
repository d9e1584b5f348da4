"""Every kernel of bigbn/kernels/ called directly against its slow twin in naive.py
(as STUMPY's tests compare each kernel with tests/naive.py), the forward/backward kernels
proved mirrors of each other bit for bit, and property tests for the mask arithmetic the
kernels and the plan rely on (squeeze/unsqueeze, family ranks, chunk ↔ alpha indexing)."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import njit

import naive
from bigbn import kernels as K
from bigbn.engine.tasks import edge_posteriors
from bigbn.kernels.fastmath import _ext_from_log, _log_ext
from bigbn.kernels.bits import popcounts
from bigbn.kernels.families import family_masks, family_rank, n_families, squeeze, unsqueeze
from bigbn.plan.lattice import Plan

# The kernels sum extended-exponent numbers (fastmath.py: polynomial exp in, log out, each
# within a few ulps) in a different order than the twins, so compare to a few ulps of the
# values.
RTOL = 1e-13
ATOL = 1e-12


def assert_close(got, want, rtol=RTOL, atol=ATOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    # -inf (log 0) must be exactly where the reference has it.
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)


def log_table(rng, size, p_neginf=0.2, spread=30.0):
    """Random log values in [-spread, spread] with a fraction of -inf entries."""
    x = rng.uniform(-spread, spread, size)
    x[rng.random(size) < p_neginf] = -np.inf
    return x


def small_masks(d, k):
    return family_masks(d, min(k, d))


# ----------------------------------------------------------------------------- lae

def test_ext_conversions_against_fastmath():
    """The array conversions are fastmath's scalar ones, entry by entry, bit for bit."""
    rng = np.random.default_rng(0)
    x = log_table(rng, 1000, 0.2, 4000.0)
    m, e = np.empty_like(x), np.empty_like(x)
    K._ext_from_log_into(x, m, e)
    m2, e2 = np.empty_like(x), np.empty_like(x)
    _to_ext(x, m2, e2)
    np.testing.assert_array_equal(m, m2)
    np.testing.assert_array_equal(e, e2)
    back = np.empty_like(x)
    K._log_ext_into(m, e, back)
    assert_close(back, x, rtol=4e-16, atol=2e-16)


@pytest.mark.parametrize("spread", [30.0, 30000.0])
@pytest.mark.parametrize("logs,add", [(False, True), (True, True), (True, False)])
def test_ext_fma_into_against_reference(spread, logs, add):
    """(p) += a·x as extended numbers: against log(exp(p) + exp(a + x)) (naive.lae in
    float64, 1e-15 relative), with exact zeros where p, a or x is zero; values spread
    over 30000 nats have no common float64 scale. x as extended numbers
    (`_ext_fma_into`) or as logs (`_ext_fma_log_into`: bit for bit `_ext_fma_into` on
    the converted x); add=False writes a + x into p without reading it (p starts as
    NaN), bit for bit `_ext_fma_into` into zeros."""
    rng = np.random.default_rng(int(spread))
    p, a, x = (log_table(rng, 1000, 0.2, spread) for _ in range(3))
    ext = [np.empty((2, 1000)) for _ in range(3)]
    for arr, (mm, ee) in zip((p, a, x), ext):
        K._ext_from_log_into(arr, mm, ee)
    (pm, pe), (am, ae), (xm, xe) = ext
    qm, qe = ext[0].copy() if add else (np.zeros(1000), np.full(1000, -np.inf))
    if not add:
        pm[:], pe[:] = np.nan, np.nan
    if logs:
        K._ext_fma_log_into(pm, pe, am, ae, x, add)
        K._ext_fma_into(qm, qe, am, ae, xm, xe)
        np.testing.assert_array_equal(pm, qm)
        np.testing.assert_array_equal(pe, qe)
    else:
        K._ext_fma_into(pm, pe, am, ae, xm, xe)
    got = np.empty(1000)
    K._log_ext_into(pm, pe, got)
    want = [naive.lae(u, v + w) if add else v + w for u, v, w in zip(p, a, x)]
    assert_close(got, np.array(want), rtol=1e-15, atol=1e-14)


@pytest.mark.parametrize("spread", [30.0, 5000.0])
def test_ext_add_logs_against_reference(spread):
    """Rows of logs added one after another into extended numbers, then logged: the log
    of the sum of their exps (logsumexp), far outside one float64's range too, -inf
    exactly where every term is -inf."""
    rng = np.random.default_rng(1)
    x = log_table(rng, (70, 400), 0.3, spread)
    x[:, 3] = -np.inf  # a column of log 0
    x[:, 5] = -np.inf
    x[17, 5] = -spread  # one term alone
    m, e = np.zeros(400), np.full(400, -np.inf)
    for row in x:
        K._ext_add_logs(m, e, row)
    assert ((m >= 1.0) & (m < 2.0) | (m == 0.0)).all()  # normalised
    out = np.empty(400)
    K._log_ext_into(m, e, out)
    assert_close(out, naive.logsumexp(x, axis=0), rtol=1e-15, atol=5e-12)


# ----------------------------------------------------------------------------- transforms

@njit(fastmath={"contract"}, error_model="numpy")
def _to_ext(x, m, e):
    for j in range(x.shape[0]):
        m[j], e[j] = _ext_from_log(x[j])


@njit(fastmath={"contract"}, error_model="numpy")
def _from_ext(m, e, x):
    for j in range(x.shape[0]):
        x[j] = _log_ext(m[j], e[j])


def _scaled(x, wide):
    """Log values x as the transforms take them: (m, e, top), plain float64
    m = exp(x - top) (e unused) or extended numbers (wide), top = max x."""
    top = x.max() if np.isfinite(x).any() else 0.0
    m, e = np.empty_like(x), np.empty_like(x)
    if wide:
        _to_ext(x - top, m, e)
    else:
        m[:] = np.exp(x - top)
    return m, e, top


def _logs(m, e, top, wide):
    """The inverse of `_scaled`: the values as logs."""
    out = np.empty_like(m)
    if wide:
        _from_ext(m, e, out)
    else:
        with np.errstate(divide="ignore"):
            out[:] = np.log(m)
    return out + top


def _transform(kernel, x, d, small, wide):
    """Run a transform on log values x (`_scaled`); the result as logs."""
    m, e, top = _scaled(x, wide)
    kernel(m, e, d, small, wide)
    return _logs(m, e, top, wide)


def _upward_from_support(x, d, k, small, wide):
    """`_transform` of K._upward_truncated as the α kernels call it: every entry NaN,
    then `_clear_support`, then only the values on |S| ≤ k set. A NaN in the result
    means the transform read an entry it had not written."""
    sm, se, top = _scaled(x, wide)
    m, e = np.full_like(x, np.nan), np.full_like(x, np.nan)
    K._clear_support(m, e, d, small, wide)
    sup = popcounts(np.arange(1 << d)) <= k
    m[sup] = sm[sup]
    if wide:
        e[sup] = se[sup]
    K._upward_truncated(m, e, d, small, wide)
    return _logs(m, e, top, wide)


@pytest.mark.parametrize("d,k", [(1, 0), (1, 1), (2, 1), (3, 1), (5, 2), (6, 6), (8, 2), (8, 3),
                                 (9, 0), (9, 1), (10, 3)])
@pytest.mark.parametrize("wide", [False, True])
def test_upward_truncated(d, k, wide):
    """Plain sums of values within 30 nats; extended-exponent sums of values spread over
    30000 nats (e^-30000 is far below float64's 2^-1074: no single scale holds them).
    Only the entries `_clear_support` zeroes and those with |S| ≤ k are set (the rest
    NaN): the transform must write every other entry (the runs it copies, d ≥ 8 here)
    before it reads it."""
    rng = np.random.default_rng(d * 10 + k)
    x = log_table(rng, 1 << d, spread=30000.0 if wide else 30.0)
    got = _upward_from_support(x, d, k, small_masks(d, k), wide)
    assert not np.isnan(got).any()
    assert_close(got, naive.upward_truncated(x, d, k))


@pytest.mark.parametrize("wide", [False, True])
def test_clear_support_zeroes_only_what_the_transform_reads(wide):
    """d = 10, k = 3: the 8-entry groups whose bits ≥ 3 have ≤ 3 bits (64 of the 128),
    and nothing else; the exponents only if wide."""
    d, k = 10, 3
    m, e = np.full(1 << d, 5.0), np.full(1 << d, 7.0)
    K._clear_support(m, e, d, small_masks(d, k), wide)
    groups = popcounts(np.arange(1 << d) >> 3) <= k
    e_cleared = groups if wide else np.zeros(1 << d, bool)
    assert np.array_equal(m == 0.0, groups)
    assert np.array_equal(e == -np.inf, e_cleared)
    assert (m[~groups] == 5.0).all() and (e[~e_cleared] == 7.0).all()


@pytest.mark.parametrize("d,k", [(1, 0), (1, 1), (3, 1), (5, 2), (6, 6), (8, 3), (9, 0)])
@pytest.mark.parametrize("wide", [False, True])
def test_downward_truncated(d, k, wide):
    rng = np.random.default_rng(d * 10 + k + 1)
    x = log_table(rng, 1 << d, spread=30000.0 if wide else 30.0)
    got = _transform(K._downward_truncated, x, d, small_masks(d, k), wide)
    want = naive.downward_truncated(x, d, k)
    defined = ~np.isnan(want)  # |T| ≤ k: the entries the kernel promises
    assert_close(got[defined], want[defined])


@pytest.mark.parametrize("d,k", [(3, 0), (3, 3), (6, 2), (9, 3), (14, 3)])
@pytest.mark.parametrize("up", [True, False])
def test_zeta8_ext_is_zeta8_group_by_group_bit_for_bit(d, k, up):
    """The wide transforms' three lowest bits, all groups at once through planes
    (`_zeta8_ext`): the same bits as `_zeta8` on each group in turn (which the plain
    transforms still use), on extended numbers spread over 30000 nats with zeros; the
    entries outside the groups untouched."""
    rng = np.random.default_rng(d * 10 + k + up)
    small = small_masks(d, k)
    m, e, _ = _scaled(log_table(rng, 1 << d, spread=30000.0), True)
    want_m, want_e = m.copy(), e.copy()
    for g in small[small < (1 << (d - 3))]:
        K._zeta8(want_m, want_e, g << 3, True, up)
    K._zeta8_ext(m, e, d, small, up)
    np.testing.assert_array_equal(m, want_m)
    np.testing.assert_array_equal(e, want_e)


@pytest.mark.parametrize("up", [True, False])
def test_zeta8_plain_is_the_additions_in_order_bit_for_bit(up):
    """The plain transforms' three lowest bits (`_zeta8_plain`, the group in locals): the
    same bits as `_zeta8` and as the 12 additions done one by one in Python, in its order
    (for bit i = 0, 1, 2, every entry o with bit i set: x[o] += x[o - 2^i] up,
    x[o - 2^i] += x[o] down), on values over 40 binades, zeros and subnormals."""
    rng = np.random.default_rng(5 + up)
    for _ in range(200):
        x = np.ldexp(rng.random(24), rng.integers(-40, 1, 24))
        x[rng.random(24) < 0.2] = 0.0
        x[rng.random(24) < 0.1] = 5e-324
        want = x.copy()
        b = 8
        for i in range(3):
            for o in range(8):
                if o >> i & 1:
                    d, s = (o, o - (1 << i)) if up else (o - (1 << i), o)
                    want[b + d] = float(want[b + d]) + float(want[b + s])
        got, ref = x.copy(), x.copy()
        K._zeta8_plain(got, b, up)
        K._zeta8(ref, ref, b, False, up)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(ref, want)


# ----------------------------------------------------------------------------- alpha

def assert_normalised(m, e):
    """Extended numbers as the kernels return them: m in [1, 2) and e an integer, or the
    zero (0, -inf)."""
    zero = m == 0.0
    np.testing.assert_array_equal(np.isneginf(e), zero)
    assert np.all((m[~zero] >= 1.0) & (m[~zero] < 2.0))
    assert np.all(e[~zero] == np.round(e[~zero]))


def alpha_chunk_log(beta_row, fam, H, d, small, wide=False):
    """_alpha_chunk's extended numbers (checked normalised) as logs; and whether the chunk was wide."""
    m, e = np.empty(1 << d), np.empty(1 << d)
    was_wide = K._alpha_chunk(beta_row, fam, H, d, small, m, e)
    assert_normalised(m, e)
    out = np.empty(1 << d)
    _from_ext(m, e, out)
    return (out, was_wide) if wide else out


@pytest.mark.parametrize("n,k,c", [(5, 2, 3), (7, 3, 4), (8, 2, 8), (8, 7, 5), (9, 0, 4)])
def test_alpha_chunk_and_chunks_against_reference(n, k, c):
    """Chunk H of alpha_i (2^(c-1) squeezed masks) against the brute-force subset sum,
    and against naive.log_alpha's whole table (chunk ↔ alpha indexing)."""
    rng = np.random.default_rng(n + k + c)
    beta = naive.random_beta(n, k, rng, spread=20, p_forbidden=0.2)
    plan = Plan(n, k, c)
    d, size = c - 1, plan.alpha_chunk_size
    full = naive.log_alpha(beta, k)
    for i in range(n):
        for H in range(plan.n_chunks):
            out = alpha_chunk_log(beta[i], plan.families, H, d, plan.small_masks)
            assert_close(out, naive.alpha_chunk(beta[i], plan.families, H, d))
            assert_close(out, full[i, H * size:(H + 1) * size])
        span = np.empty(plan.n_chunks * size)
        K._alpha_chunks(beta, plan.families, i, 0, d, plan.small_masks, span)
        assert_close(span, full[i])
        m, e = np.empty(span.size), np.empty(span.size)
        K._alpha_chunks_ext(beta, plan.families, i, 0, d, plan.small_masks, m, e)
        assert_normalised(m, e)
        logs = np.empty(span.size)
        _from_ext(m, e, logs)
        np.testing.assert_array_equal(logs, span)
    if plan.n_chunks >= 3:  # a span that starts inside the table
        span = np.empty(2 * size)
        K._alpha_chunks(beta, plan.families, n - 1, 1, d, plan.small_masks, span)
        assert_close(span, full[n - 1, size:3 * size])


def _alpha_cases():
    """(name, beta (n, F) for n = 7, k = 3, chunk bits 5, the chunks (node, H) whose
    contributing families span more than one scale holds (_SPAN = 700 nats))."""
    n, k = 7, 3
    rng = np.random.default_rng(7)
    chunks = [(i, H) for i in range(n) for H in range(4)]
    fam = Plan(n, k, 5).families
    narrow = naive.random_beta(n, k, rng, spread=340, p_forbidden=0.2)  # < 700 nats wide
    # families 3000 nats down among ordinary ones
    flushed = naive.random_beta(n, k, rng, spread=30, p_forbidden=0.1)
    flushed[rng.random(flushed.shape) < 0.3] -= 3000.0
    # the empty family 2000 nats below the rest: chunk 0's output at U = ∅ is that term alone
    wide = naive.random_beta(n, k, rng, spread=30)
    wide[:, 0] = -2000.0
    # as the local scores of many rows: spread over 20000 nats
    strong = naive.random_beta(n, k, rng, spread=20000, p_forbidden=0.1)
    # no finite family without parents 0 and 1 (required edges): exact -inf outputs
    required = naive.random_beta(n, k, rng, spread=3000)
    required[:, (fam & 3) != 3] = -np.inf

    def spans(beta):
        out = set()
        for i, H in chunks:
            b = beta[i][((fam >> 4) & ~H) == 0]
            b = b[np.isfinite(b)]
            if b.size and b.max() - b.min() > 700.0:
                out.add((i, H))
        return out

    cases = [("narrow", narrow), ("flushed", flushed), ("wide", wide), ("strong", strong), ("required", required)]
    return [(name, beta, spans(beta)) for name, beta in cases]


@pytest.mark.parametrize("case", range(5))
def test_alpha_chunk_plain_and_extended(case):
    """_alpha_chunk against the brute-force subset sum where the local scores lie within
    one scale (plain sums) and where they span thousands of nats (extended numbers, the
    chunks exactly those wider than 700 nats), with exact -inf where no family fits."""
    name, beta, wide = _alpha_cases()[case]
    plan = Plan(beta.shape[0], 3, 5)
    d = plan.c - 1
    assert (wide == set()) == (name == "narrow")
    for i in range(plan.n):
        for H in range(plan.n_chunks):
            want = naive.alpha_chunk(beta[i], plan.families, H, d)
            out, was_wide = alpha_chunk_log(beta[i], plan.families, H, d, plan.small_masks, wide=True)
            assert was_wide == ((i, H) in wide)
            assert_close(out, want)
            if name == "required":
                assert np.isneginf(want).any() and np.isfinite(want).any()


def test_family_weights():
    """exp(sb - ref), ref the largest score (not -inf), over the first nf families only;
    all weights 0 when every score is -inf or there are none. The extended terms (wm, we)
    are exp(sb - ref) at any range (-inf to (0, -inf)), set only when some score lies more
    than _SPAN below ref."""
    sb = np.array([-3.0, 0.5, -np.inf, -800.0, 7.0])
    sw, wm, we = np.full(5, 9.0), np.full(5, 9.0), np.full(5, 9.0)
    assert K._family_weights(sb, 4, sw, wm, we) == 0.5
    np.testing.assert_allclose(sw[:4], np.exp(sb[:4] - 0.5), rtol=4e-16)
    assert sw[2] == 0.0 and sw[3] == 0.0 and sw[4] == 9.0  # e^-800.5 flushes to 0; sw[4] untouched
    got = np.empty(4)
    _from_ext(wm[:4], we[:4], got)
    np.testing.assert_allclose(got[[0, 1, 3]], sb[[0, 1, 3]] - 0.5, rtol=1e-15, atol=4e-16)
    assert got[2] == -np.inf and wm[4] == 9.0 and we[4] == 9.0
    sw, wm, we = np.full(3, 9.0), np.full(3, 9.0), np.full(3, 9.0)
    assert K._family_weights(np.array([-3.0, 0.5, -699.0]), 3, sw, wm, we) == 0.5
    assert np.all(wm == 9.0) and np.all(we == 9.0)  # within _SPAN: no tile can be wide
    for nf in (0, 1):
        sw[:] = 9.0
        assert K._family_weights(np.array([-np.inf, 1.0]), nf, sw, wm, we) == -np.inf
        assert np.all(sw[:nf] == 0.0)


def test_alpha_ranges_shared_own_and_extended_scales():
    """_alpha_ranges on subsets of one node's families (a tile's ranges), given the
    weights of all of them: a subset within _SPAN of the largest score sums those
    weights; one within _SPAN of itself but more than _SPAN below the largest sums on its
    own scale (its shared weights flush to 0: using them would give -inf); one spanning
    more than _SPAN, alone or with others, sums extended numbers. Each against the
    brute-force subset sum, with the kernel's report of which were wide."""
    d, k = 5, 3
    rng = np.random.default_rng(11)
    masks = family_masks(d, k)
    groups = [rng.uniform(-10.0, 0.0, masks.size), rng.uniform(-910.0, -900.0, masks.size),
              rng.uniform(-2500.0, -1000.0, masks.size)]
    sb = np.concatenate(groups)
    sb[rng.random(sb.size) < 0.1] = -np.inf
    sg = np.concatenate([masks, masks, masks])
    sw, wm, we = np.empty((3, sb.size))
    ref = K._family_weights(sb, sb.size, sw, wm, we)
    F = masks.size
    m, e = np.empty(1 << d), np.empty(1 << d)
    for groups_in, wide in (((0,), 0), ((1,), 0), ((2,), 1), ((0, 1), 1), ((1, 2), 1)):
        lo = np.array([g * F for g in groups_in])
        hi = lo + F
        assert K._alpha_ranges(sb, sw, wm, we, ref, sg, lo, hi, d, masks, m, e) == wide
        assert_normalised(m, e)
        got = np.empty(1 << d)
        _from_ext(m, e, got)
        sel = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)])
        want = np.array([naive.logsumexp(sb[sel][(sg[sel] & ~U) == 0]) for U in range(1 << d)])
        assert np.isfinite(want).all()
        assert_close(got, want)


# ----------------------------------------------------------------------------- recursions

def recursion(acc, alpha_low, forward):
    """_recursion_chunk on log inputs (converted to extended numbers), its result (checked
    normalised) as logs, and its count of wide blocks."""
    m, e = np.empty(acc.size), np.empty(acc.size)
    K._ext_from_log_into(acc, m, e)
    am, ae = np.empty_like(alpha_low), np.empty_like(alpha_low)
    for i in range(alpha_low.shape[0]):
        K._ext_from_log_into(alpha_low[i], am[i], ae[i])
    wide = K._recursion_chunk(m, e, am, ae, forward)
    assert_normalised(m, e)
    out = np.empty(acc.size)
    K._log_ext_into(m, e, out)
    return out, wide


def recursion_inputs(c, seed, p_neginf=0.2):
    """acc with nonzero high-bit terms and -inf entries; alpha_low with -inf entries."""
    rng = np.random.default_rng(seed)
    acc = log_table(rng, 1 << c, p_neginf, 10.0)
    alpha_low = log_table(rng, (c, 1 << max(c - 1, 0)), p_neginf, 10.0)
    return acc, alpha_low


@pytest.mark.parametrize("c", [1, 2, 4, 5, 6, 8, 10])
@pytest.mark.parametrize("p_neginf", [0.0, 0.3, 0.9])
def test_forward_chunk_against_reference(c, p_neginf):
    acc, alpha_low = recursion_inputs(c, c, p_neginf)
    out, _ = recursion(acc, alpha_low, True)
    assert_close(out, naive.forward_chunk(acc, alpha_low), rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize("c", [1, 2, 4, 5, 6, 8, 10])
@pytest.mark.parametrize("p_neginf", [0.0, 0.3, 0.9])
def test_backward_chunk_against_reference(c, p_neginf):
    acc, alpha_low = recursion_inputs(c, 100 + c, p_neginf)
    out, _ = recursion(acc, alpha_low, False)
    assert_close(out, naive.backward_chunk(acc, alpha_low), rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize("kind", ["narrow", "mixed", "wide"])
@pytest.mark.parametrize("forward", [True, False])
def test_recursion_plain_and_extended_blocks(kind, forward):
    """The in-block terms go in plain float64 where one scale provably holds a block and
    as extended-exponent numbers where not: both against the reference, and the kernel
    reports how many blocks (of 2^_BLOCK entries) were wide. "narrow": every value within
    10 nats, no block is wide; "wide": alpha spread over 30000 nats; "mixed": wide only
    in the upper half of alpha."""
    c = 9
    rng = np.random.default_rng(len(kind) + forward)
    acc = log_table(rng, 1 << c, 0.0, 10.0)
    alpha_low = log_table(rng, (c, 1 << (c - 1)), 0.0, 10.0)
    if kind == "wide":
        alpha_low -= rng.uniform(0, 30000, alpha_low.shape)
    elif kind == "mixed":
        alpha_low[:, 1 << (c - 2):] -= rng.uniform(0, 30000, (c, 1 << (c - 2)))
    out, wide = recursion(acc, alpha_low, forward)
    want = (naive.forward_chunk if forward else naive.backward_chunk)(acc, alpha_low)
    assert_close(out, want, rtol=1e-13, atol=1e-11)
    blocks = (1 << c) >> K._BLOCK
    assert {"narrow": wide == 0, "mixed": 0 < wide < blocks, "wide": wide > blocks // 2}[kind], wide


@pytest.mark.parametrize("forward", [True, False])
def test_block_linear_takes_exactly_the_blocks_one_scale_holds(forward):
    """_block_linear takes a block iff every entry's e(o) - C(o) lies within 900 of the
    largest (C(o) the sum of cw_i over o's active bits), with its quick rejection (the
    exponents' spread against the sum of |cw_i|, asked for after a wide block) or
    without; it changes nothing when it declines. Blocks drawn around the boundary, some with a zero
    entry (exponent -inf)."""
    B = K._BLOCK
    nb = 1 << B
    rng = np.random.default_rng(5 + forward)
    active = np.array([[(o >> i) & 1 == (1 if forward else 0) for i in range(B)] for o in range(nb)])
    wt = rng.uniform(0.5, 2.0, (B, nb >> 1))
    taken = 0
    for trial in range(400):
        cw = np.round(rng.uniform(-300, 300, B) * rng.integers(0, 2))
        v = np.round(rng.uniform(-1, 0, nb) * rng.uniform(800, 1000))
        e = v + active @ cw
        if trial % 10 == 0:
            e[rng.integers(nb)] = -np.inf
        m = np.where(np.isfinite(e), rng.uniform(1.0, 2.0, nb), 0.0)
        want = bool(np.all(np.isfinite(e))) and (v.min() - v.max() >= -900)
        m0, e0 = m, e
        for quick in (False, True):
            m, e = m0.copy(), e0.copy()
            got = K._block_linear(m, e, 0, B, forward, wt, cw, np.empty(nb), np.empty(nb), quick)
            assert got == want, (trial, quick, v.min() - v.max())
            if not got:
                np.testing.assert_array_equal(m, m0)
                np.testing.assert_array_equal(e, e0)
        taken += got
    assert 50 < taken < 350, taken


def test_forward_chunk_of_whole_table_is_log_forward():
    """One chunk holding every subset (c = n, acc = log 1 at ∅ only) is paper eq. (2)."""
    n, k = 7, 3
    beta = naive.random_beta(n, k, np.random.default_rng(3), spread=20, p_forbidden=0.2)
    alpha = naive.log_alpha(beta, k)
    acc = np.full(1 << n, -np.inf)
    acc[0] = 0.0
    assert_close(recursion(acc, alpha, True)[0], naive.log_forward(alpha))
    acc = np.full(1 << n, -np.inf)
    acc[-1] = 0.0
    assert_close(recursion(acc, alpha, False)[0], naive.log_backward(alpha))


@pytest.mark.parametrize("c", [1, 3, 5, 6, 9, 11])
@pytest.mark.parametrize("seed", [0, 1])
def test_backward_chunk_is_forward_chunk_reversed_bit_for_bit(c, seed):
    """Complement within the chunk reverses the offsets (o ↦ 2^c-1-o) and, since the
    squeeze of a complement is the complement of the squeeze, reverses each alpha row:
    B = reverse(forward(reverse(acc), reverse(alpha_low))). Bit-identical, so the two
    kernels stay one computation (DESIGN rule 7)."""
    acc, alpha_low = recursion_inputs(c, 1000 + 7 * c + seed, 0.25)
    back, _ = recursion(acc, alpha_low, False)
    fwd, _ = recursion(np.ascontiguousarray(acc[::-1]), np.ascontiguousarray(alpha_low[:, ::-1]), True)
    np.testing.assert_array_equal(back, fwd[::-1])


@pytest.mark.parametrize("c,tile_bits", [(1, 1), (4, 1), (6, 2), (7, 3), (7, 7), (7, 13)])
@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("spread", [20.0, 20000.0])
def test_recursion_tiles_against_reference(c, tile_bits, forward, spread):
    """The recursion with α built per tile from β: the reference builds chunk H's α rows
    whole (naive.alpha_chunk, brute-force subset sums) and runs the in-chunk recursion
    (naive.forward_chunk / backward_chunk) on them. Tiles smaller than the chunk, one
    tile, tiles larger than the chunk; local scores within 20 nats (plain sums) and
    spread over 20000 (every α tile and recursion block wide)."""
    n, k = 9, 3
    rng = np.random.default_rng(c * 100 + tile_bits + forward + int(spread))
    beta = naive.random_beta(n, k, rng, spread=spread, p_forbidden=0.2)
    plan = Plan(n, k, c)
    for H in {0, plan.n_chunks // 3, plan.n_chunks - 1}:
        acc = log_table(rng, 1 << c, 0.3, 10.0)
        alpha_low = np.array([naive.alpha_chunk(beta[i], plan.families, H, c - 1) for i in range(c)])
        want = (naive.forward_chunk if forward else naive.backward_chunk)(acc, alpha_low)
        m, e = np.empty(1 << c), np.empty(1 << c)
        K._ext_from_log_into(acc, m, e)
        wide_alpha, wide = K._recursion_tiles(beta, plan.families, plan.small_masks, H, tile_bits, m, e, forward)
        assert_normalised(m, e)
        got = np.empty(1 << c)
        K._log_ext_into(m, e, got)
        assert_close(got, want, rtol=1e-13, atol=1e-11)
        if spread > 1000 and c >= 4:
            assert wide_alpha > 0 and wide > 0


@pytest.mark.parametrize("c,tile_bits", [(3, 1), (5, 2), (5, 5), (5, 13)])
@pytest.mark.parametrize("add", [True, False])
def test_high_term_against_reference(c, tile_bits, add):
    """(m, e) += alpha_node·exp(y) with alpha of a high node on its span of squeezed masks
    Q·2^c + o, built per tile: against the brute-force subset sums of naive.alpha_chunk
    on the 2^c-entry chunk Q, at every Q. add=False sets (m, e) to the term without
    reading them (they start NaN)."""
    n, k = 8, 3
    rng = np.random.default_rng(c + tile_bits)
    for spread in (20.0, 20000.0):
        beta = naive.random_beta(n, k, rng, spread=spread, p_forbidden=0.2)
        fam, small = Plan(n, k, c).families, Plan(n, k, c).small_masks
        for Q in range(1 << (n - 1 - c)):
            acc, y = log_table(rng, 1 << c, 0.3, 10.0), log_table(rng, 1 << c, 0.3, 10.0)
            alpha = naive.alpha_chunk(beta[n - 1], fam, Q, c)
            want = np.array([naive.lae(a, b + x) if add else b + x for a, b, x in zip(acc, alpha, y)])
            m, e = np.full((2, 1 << c), np.nan)
            if add:
                K._ext_from_log_into(acc, m, e)
            K._high_term(beta[n - 1], fam, small, Q, c, tile_bits, y, m, e, add)
            got = np.empty(1 << c)
            K._log_ext_into(m, e, got)
            assert_close(got, want, rtol=1e-13, atol=1e-11)


def test_select_families():
    rng = np.random.default_rng(5)
    fam = family_masks(9, 3)
    beta_row = rng.normal(size=fam.size)
    sb, sg = np.empty(fam.size), np.empty(fam.size, dtype=np.int64)
    for H, d in ((0, 9), (5, 6), (0b101, 6), (0b11, 7), (0, 4)):
        nf = K._select_families(beta_row, fam, H, d, sb, sg)
        keep = ((fam >> d) & ~H) == 0
        np.testing.assert_array_equal(sb[:nf], beta_row[keep])
        np.testing.assert_array_equal(sg[:nf], fam[keep] & ((1 << d) - 1))


# ----------------------------------------------------------------------------- gamma

def to_ext(x):
    """Log values as extended numbers (mantissas, exponents)."""
    m, e = np.empty(x.size), np.empty(x.size)
    K._ext_from_log_into(x, m, e)
    return m, e


def gamma_tables(kind, c, rng):
    """L and B on a chunk (logs): "narrow" (all within 300 nats: every tile plain);
    "flushed" (some 3000 nats down); "strong" (spread over 20000 nats: every tile wide);
    "zeros" (-inf wherever offset bit 0 is set in B: the families holding it get exact
    -inf)."""
    spread = 20000.0 if kind == "strong" else 150.0
    L, B = log_table(rng, 1 << c, 0.2, spread), log_table(rng, 1 << c, 0.2, spread)
    if kind == "flushed":
        L[rng.random(L.size) < 0.3] -= 3000.0
    elif kind == "zeros":
        B[np.arange(B.size) & 1 == 1] = -np.inf
    return L, B


def test_exponent_range():
    """The largest exponent and the smallest finite one (the γ tiles' scan, reordered for
    speed): against numpy, at every length around the vector width, with -inf (zeros)
    anywhere, and all -inf."""
    rng = np.random.default_rng(3)
    for size in list(range(1, 20)) + [1000, 16384]:
        for p_zero in (0.0, 0.3, 1.0):
            se = rng.integers(-40000, 40000, size).astype(np.float64)
            se[rng.random(size) < p_zero] = -np.inf
            finite = se[np.isfinite(se)]
            want = (finite.max(), finite.min()) if finite.size else (-np.inf, np.inf)
            assert K._exponent_range(se) == want


@pytest.mark.parametrize("kind", ["narrow", "flushed", "strong", "zeros"])
@pytest.mark.parametrize("c,tile_bits,n", [(1, 1, 3), (4, 2, 6), (6, 3, 8), (6, 6, 7), (5, 13, 8), (7, 4, 9)])
def test_gamma_low_against_reference(kind, c, tile_bits, n):
    """The low nodes' γ parts, summed a tile at a time: against the brute-force superset
    sums of s_v = L(S)·B(S + v) (naive.gather_low, naive.gamma_partial) for every low node
    and several chunk ids; tiles smaller than the chunk, one tile, and larger. Plain
    tiles where s lies within 1000 binades, extended where it spans thousands, and the
    kernel reports which."""
    k = min(3, n - 1)
    rng = np.random.default_rng(c * 10 + tile_bits + len(kind))
    plan = Plan(n, k, c)
    fam, small = plan.families, plan.small_masks
    for H in sorted({0, plan.n_chunks // 2, plan.n_chunks - 1}):
        L, B = gamma_tables(kind, c, rng)
        part = np.full((n, fam.size), 123.0)
        wide = K._gamma_low(*to_ext(L), *to_ext(B), H, fam, small, tile_bits, part)
        for v in range(c):
            want = naive.gamma_partial(naive.gather_low(L, B, v), c - 1, H, fam)
            assert_close(part[v], want)
        assert np.all(part[c:] == 123.0)  # the high nodes' rows are not touched
        assert (wide > 0) == (kind in ("flushed", "strong")) or c == 1, wide
        if kind == "zeros" and c > 1:
            inside = part[1][(fam >> (c - 1)) & ~H == 0]
            assert np.isneginf(inside).any() and np.isfinite(inside).any()


@pytest.mark.parametrize("kind", ["narrow", "strong"])
@pytest.mark.parametrize("c,tile_bits", [(1, 1), (4, 2), (6, 3), (6, 13)])
def test_gamma_high_against_reference(kind, c, tile_bits):
    """A high node's γ part, s = L(S)·B(S + v) with S + v in the neighbour chunk (B as
    logs, converted inside), summed a tile at a time: against the brute-force superset
    sums over the chunk at every squeezed chunk id Q."""
    n, k = c + 3, 3
    rng = np.random.default_rng(c + tile_bits + len(kind))
    fam, small = Plan(n, k, c).families, Plan(n, k, c).small_masks
    for Q in range(1 << (n - 1 - c)):
        L, N = gamma_tables(kind, c, rng)
        part = np.full(fam.size, 123.0)
        wide = K._gamma_high(*to_ext(L), N, Q, fam, small, tile_bits, part)
        assert_close(part, naive.gamma_partial(L + N, c, Q, fam))
        assert (wide > 0) == (kind == "strong") or c == 1, wide


# ----------------------------------------------------------------------------- edge fold

@pytest.mark.parametrize("n,k", [(5, 2), (7, 3), (8, 2)])
def test_edge_fold_against_reference_with_midrange_posteriors(n, k):
    beta = naive.midrange_beta(n, k, np.random.default_rng(n * k))
    gamma = naive.log_gamma(naive.log_alpha(beta, k), k)
    log_px = naive.log_forward(naive.log_alpha(beta, k))[-1]
    P = edge_posteriors(beta, gamma, Plan(n, k, n), log_px)
    want = naive.edge_fold(beta, gamma, k)
    off = want[~np.eye(n, dtype=bool)]
    assert np.mean((off > 0.01) & (off < 0.99)) > 0.5, "test data must give mid-range posteriors"
    np.testing.assert_allclose(P, want, rtol=1e-12, atol=1e-14)
    P0, _ = naive.edges_by_orders(beta, k)  # and the fold of the true gamma is the answer
    np.testing.assert_allclose(P, P0, rtol=0, atol=1e-12)


def test_edge_fold_forbidden_and_required_edges_are_exact():
    n, k = 5, 2
    beta = naive.midrange_beta(n, k, np.random.default_rng(8))
    fam = family_masks(n - 1, k)
    beta[2, (fam & 1) == 1] = -np.inf  # 0 → 2 forbidden
    beta[3, (fam & 2) == 0] = -np.inf  # 1 → 3 required (squeezed bit 1 of node 3 is node 1)
    alpha = naive.log_alpha(beta, k)
    gamma = naive.log_gamma(alpha, k)
    P = edge_posteriors(beta, gamma, Plan(n, k, n), naive.log_forward(alpha)[-1])
    assert P[0, 2] == 0.0 and P[1, 3] == 1.0


# ----------------------------------------------------------------------------- properties

@given(st.integers(0, 40), st.integers(0, 2**40 - 1))
def test_squeeze_unsqueeze_round_trip(i, mask):
    mask &= ~(1 << i)
    s = squeeze(mask, i)
    assert unsqueeze(s, i) == mask
    assert squeeze(unsqueeze(mask, i), i) == mask
    assert bin(s).count("1") == bin(mask).count("1")
    assert unsqueeze(mask, i) >> i & 1 == 0


@given(st.integers(1, 30), st.integers(0, 29), st.integers(0, 2**30 - 1))
def test_squeeze_of_complement_is_complement_of_squeeze(nbits, i, mask):
    """The identity behind the forward/backward mirror: within nbits bits (bit i clear),
    squeeze(~mask) = ~squeeze(mask) within nbits-1 bits."""
    i %= nbits
    full = (1 << nbits) - 1
    mask &= full & ~(1 << i)
    comp = full & ~mask & ~(1 << i)
    assert squeeze(comp, i) == ((1 << (nbits - 1)) - 1) & ~squeeze(mask, i)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 14), st.integers(0, 14), st.data())
def test_family_masks_and_ranks(nbits, k, data):
    fam = family_masks(nbits, k)
    assert fam.size == n_families(nbits, k)
    assert np.all(np.diff(fam) > 0)
    assert np.all(popcounts(fam) <= k)
    q = data.draw(st.lists(st.integers(0, (1 << nbits) - 1), max_size=20))
    r = family_rank(fam, q)
    for m, idx in zip(q, r):
        if bin(m).count("1") <= k:
            assert fam[idx] == m
        else:
            assert idx == -1


def test_family_masks_refuse_what_an_int64_cannot_hold():
    from bigbn.errors import OptionError

    for nbits, k in ((-1, 2), (3, -1)):
        with pytest.raises(OptionError, match="must be non-negative"):
            family_masks(nbits, k)
    with pytest.raises(OptionError, match="63 bits: at most 62"):
        family_masks(63, 1)
    assert family_masks(62, 1)[-1] == 1 << 61


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 16), st.data())
def test_chunk_alpha_indexing(n, data):
    """Chunk H of the n-bit tables and chunk H of a low node's alpha (c-1 bits) hold the
    same sets: S = H·2^c + o with bit i of o clear ↔ alpha index H·2^(c-1) + squeeze(o, i).
    A high node c+b with b ∉ H reads alpha chunks 2Q, 2Q+1, Q = squeeze(H, b): the span
    of squeezed masks squeeze(H·2^c + o, c+b) for all o."""
    c = data.draw(st.integers(1, n))
    plan = Plan(n, 0, c)
    H = data.draw(st.integers(0, plan.n_chunks - 1))
    o = data.draw(st.integers(0, plan.chunk_size - 1))
    S = H * plan.chunk_size + o
    for i in range(c):
        if not o >> i & 1:
            q = squeeze(S, i)
            assert q // plan.alpha_chunk_size == H
            assert q % plan.alpha_chunk_size == squeeze(o, i)
    for b in range(plan.h):
        if not H >> b & 1:
            q = squeeze(S, c + b)
            Q = squeeze(H, b)
            assert 2 * Q * plan.alpha_chunk_size + o == q


def test_kernels_use_the_current_fastmath_bit_for_bit():
    """numba's on-disk cache keys a kernel by its own file only, so a kernels.py compiled
    before an edit of fastmath.py (whose helpers it inlines) would silently keep the old
    arithmetic. fastmath's own functions are recompiled when it changes: the kernels must
    agree with them bit for bit (clear bigbn/kernels/__pycache__ if this fails after an edit)."""
    from bigbn.kernels.fastmath import _ext_add_run

    rng = np.random.default_rng(12)
    acc, x = (log_table(rng, 4096, 0.1, 3000.0) for _ in range(2))
    m, e = np.empty(2 * 4096), np.empty(2 * 4096)
    _to_ext(np.concatenate([acc, x]), m, e)
    ones, zeros = np.ones(4096), np.zeros(4096)
    pm, pe = m[:4096].copy(), e[:4096].copy()
    K._ext_fma_into(pm, pe, ones, zeros, m[4096:], e[4096:])
    _ext_add_run(m, e, 0, 4096, 4096)
    np.testing.assert_array_equal(pm, m[:4096])
    np.testing.assert_array_equal(pe, e[:4096])


def test_the_kernel_package_imports_a_kernel_module_on_first_use():
    """``bigbn.kernels`` names the engine's kernels (``K.NAME``) but imports each module on
    first use: a process that imports the sampler's kernels alone (`bigbn sample`) never
    imports and decorates the engine's (#39 item 4). In a fresh process, since this one
    has them loaded."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; import bigbn.kernels.sampling, bigbn.kernels.linext; "
            "print(sorted(m for m in sys.modules if m.startswith('bigbn.kernels.'))); "
            "from bigbn import kernels as K; from bigbn.kernels import gamma, recursion; "
            "assert K._recursion_chunk is recursion._recursion_chunk and K._SPAN2 == gamma._SPAN2; "
            "assert '_gamma_low' in dir(K) and 'sampling' in dir(K); "
            "from bigbn.kernels import _alpha_chunk, maxplus; "
            "print(hasattr(K, 'no_such_kernel'))")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    mods, missing = out.stdout.strip().splitlines()
    assert mods == str(["bigbn.kernels.bits", "bigbn.kernels.linext", "bigbn.kernels.sampling"])
    assert missing == "False"
    for name in K._MODULE_OF:  # every name of the API is its module's
        assert getattr(K, name) is getattr(__import__(f"bigbn.kernels.{K._MODULE_OF[name]}",
                                                      fromlist=[name]), name)
