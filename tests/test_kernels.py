"""Every kernel of bigbn/kernels.py called directly against its slow twin in naive.py
(as STUMPY's tests compare each kernel with tests/naive.py), the forward/backward kernels
proved mirrors of each other bit for bit, and property tests for the mask arithmetic the
kernels and the plan rely on (squeeze/unsqueeze, family ranks, chunk ↔ alpha indexing)."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import naive
from bigbn import kernels as K
from bigbn.engine import edge_posteriors
from bigbn.families import family_masks, family_rank, n_families, popcounts, squeeze, unsqueeze
from bigbn.plan import Plan

# The kernels use the polynomial log-add-exp of fastmath.py (|error| ≤ 4e-16·max(1, |m|))
# and a different summation order than the twins, so compare to a few ulps of the values.
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

def test_lae_into_against_libm():
    rng = np.random.default_rng(0)
    acc, x, y = (log_table(rng, 1000, 0.2, 400.0) for _ in range(3))
    want = np.array([naive.lae(a, b + c) for a, b, c in zip(acc, x, y)])
    got = acc.copy()
    K._lae_into(got, x, y)
    assert_close(got, want, rtol=4e-16 * 4, atol=1e-15 * 400)


def test_logsumexp_rows_against_reference():
    rng = np.random.default_rng(1)
    x = log_table(rng, (7, 50), 0.3, 500.0)
    x[:, 3] = -np.inf  # a column of log 0
    out = np.empty(50)
    K._logsumexp_rows(x, out)
    assert_close(out, naive.logsumexp(x, axis=0), rtol=1e-15, atol=1e-12)


# ----------------------------------------------------------------------------- transforms

@pytest.mark.parametrize("d,k", [(1, 0), (1, 1), (3, 1), (5, 2), (6, 6), (8, 3), (9, 0)])
def test_upward_truncated(d, k):
    rng = np.random.default_rng(d * 10 + k)
    x = log_table(rng, 1 << d)
    x[popcounts(np.arange(1 << d)) > k] = -np.inf  # the kernel's support contract
    got = x.copy()
    K._upward_truncated(got, d, small_masks(d, k))
    assert_close(got, naive.upward_truncated(x, d, k))


@pytest.mark.parametrize("d,k", [(1, 0), (1, 1), (3, 1), (5, 2), (6, 6), (8, 3), (9, 0)])
def test_downward_truncated(d, k):
    rng = np.random.default_rng(d * 10 + k + 1)
    x = log_table(rng, 1 << d)
    got = x.copy()
    K._downward_truncated(got, d, small_masks(d, k))
    want = naive.downward_truncated(x, d, k)
    defined = ~np.isnan(want)  # |T| ≤ k: the entries the kernel promises
    assert_close(got[defined], want[defined])


# ----------------------------------------------------------------------------- alpha

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
            out = np.empty(size)
            K._alpha_chunk(beta[i], plan.families, H, d, plan.small_masks, out)
            assert_close(out, naive.alpha_chunk(beta[i], plan.families, H, d))
            assert_close(out, full[i, H * size:(H + 1) * size])
        span = np.empty(plan.n_chunks * size)
        K._alpha_chunks(beta, plan.families, i, 0, d, plan.small_masks, span)
        assert_close(span, full[i])
    if plan.n_chunks >= 3:  # a span that starts inside the table
        span = np.empty(2 * size)
        K._alpha_chunks(beta, plan.families, n - 1, 1, d, plan.small_masks, span)
        assert_close(span, full[n - 1, size:3 * size])


def _alpha_cases():
    """(name, beta (n, F) for n = 7, k = 3, chunk bits 5, which chunks (node, H) one linear
    scale must hold); the linear path must accept exactly those."""
    n, k = 7, 3
    rng = np.random.default_rng(7)
    everything = {(i, H) for i in range(n) for H in range(4)}
    narrow = naive.random_beta(n, k, rng, spread=600, p_forbidden=0.2)  # < 623.8 nats wide
    # families 3000 nats down: flushed to 0 in the linear sums, which are still right as
    # every output holds the empty family's term (the smallest output ≥ 2^-900)
    flushed = naive.random_beta(n, k, rng, spread=30, p_forbidden=0.1)
    flushed[rng.random(flushed.shape) < 0.3] -= 3000.0
    flushed[:, 0] = 0.0
    # the empty family 2000 nats below the rest: chunk 0's output at U = ∅ is that term
    # alone, too small for the scale of the others, so chunk 0 takes the log domain; the
    # other chunks' smallest outputs hold families with high parents
    wide = naive.random_beta(n, k, rng, spread=30)
    wide[:, 0] = -2000.0
    # no finite family without parents 0 and 1 (required edges): exact -inf outputs
    required = naive.random_beta(n, k, rng, spread=30)
    fam = Plan(n, k, 5).families
    required[:, (fam & 3) != 3] = -np.inf
    return [("narrow", narrow, everything), ("flushed", flushed, everything),
            ("wide", wide, {(i, H) for i, H in everything if H > 0}), ("required", required, everything)]


@pytest.mark.parametrize("case", range(4))
def test_alpha_linear_and_log_domain_paths(case):
    """Both paths of _alpha_chunk against the brute-force subset sum: the linear one
    where it accepts a chunk (exactly the chunks the case is built for), the log-domain
    one on every chunk; _alpha_chunk reports each fallback."""
    name, beta, linear = _alpha_cases()[case]
    plan = Plan(beta.shape[0], 3, 5)
    d = plan.c - 1
    accepted = set()
    for i in range(plan.n):
        for H in range(plan.n_chunks):
            want = naive.alpha_chunk(beta[i], plan.families, H, d)
            out = np.empty(plan.alpha_chunk_size)
            K._alpha_chunk_log(beta[i], plan.families, H, d, plan.small_masks, out)
            assert_close(out, want)
            if K._alpha_chunk_linear(beta[i], plan.families, H, d, plan.small_masks, out):
                assert_close(out, want)
                accepted.add((i, H))
            fell_back = K._alpha_chunk(beta[i], plan.families, H, d, plan.small_masks, out)
            assert fell_back == ((i, H) not in accepted)
            assert_close(out, want)
            if name == "required":
                assert np.isneginf(want).any() and np.isfinite(want).any()
    assert accepted == linear, name


# ----------------------------------------------------------------------------- recursions

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
    out = np.empty(1 << c)
    K._forward_chunk(acc, alpha_low, out)
    assert_close(out, naive.forward_chunk(acc, alpha_low), rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize("c", [1, 2, 4, 5, 6, 8, 10])
@pytest.mark.parametrize("p_neginf", [0.0, 0.3, 0.9])
def test_backward_chunk_against_reference(c, p_neginf):
    acc, alpha_low = recursion_inputs(c, 100 + c, p_neginf)
    out = np.empty(1 << c)
    K._backward_chunk(acc, alpha_low, out)
    assert_close(out, naive.backward_chunk(acc, alpha_low), rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize("kind", ["narrow", "mixed", "wide"])
@pytest.mark.parametrize("forward", [True, False])
def test_recursion_linear_and_log_domain_blocks(kind, forward):
    """The in-block terms go in the linear domain where one scale holds a block and in
    the log domain where not: both against the reference, and the kernel reports how many
    blocks took the log domain (blocks of 2^_BLOCK entries). "narrow": every value
    within 10 nats, no block falls back; "wide": alpha spread over 30000 nats, so most
    blocks' values overflow one scale; "mixed": wide only in the upper half of alpha."""
    c = 9
    rng = np.random.default_rng(len(kind) + forward)
    acc = log_table(rng, 1 << c, 0.0, 10.0)
    alpha_low = log_table(rng, (c, 1 << (c - 1)), 0.0, 10.0)
    if kind == "wide":
        alpha_low -= rng.uniform(0, 30000, alpha_low.shape)
    elif kind == "mixed":
        alpha_low[:, 1 << (c - 2):] -= rng.uniform(0, 30000, (c, 1 << (c - 2)))
    out = np.empty(1 << c)
    fallbacks = (K._forward_chunk if forward else K._backward_chunk)(acc, alpha_low, out)
    want = (naive.forward_chunk if forward else naive.backward_chunk)(acc, alpha_low)
    assert_close(out, want, rtol=1e-13, atol=1e-11)
    blocks = (1 << c) >> K._BLOCK
    assert {"narrow": fallbacks == 0, "mixed": 0 < fallbacks < blocks, "wide": fallbacks > blocks // 2}[kind], fallbacks


def test_forward_chunk_of_whole_table_is_log_forward():
    """One chunk holding every subset (c = n, acc = log 1 at ∅ only) is paper eq. (2)."""
    n, k = 7, 3
    beta = naive.random_beta(n, k, np.random.default_rng(3), spread=20, p_forbidden=0.2)
    alpha = naive.log_alpha(beta, k)
    acc = np.full(1 << n, -np.inf)
    acc[0] = 0.0
    out = np.empty(1 << n)
    K._forward_chunk(acc, alpha, out)
    assert_close(out, naive.log_forward(alpha))
    acc = np.full(1 << n, -np.inf)
    acc[-1] = 0.0
    K._backward_chunk(acc, alpha, out)
    assert_close(out, naive.log_backward(alpha))


@pytest.mark.parametrize("c", [1, 3, 5, 6, 9, 11])
@pytest.mark.parametrize("seed", [0, 1])
def test_backward_chunk_is_forward_chunk_reversed_bit_for_bit(c, seed):
    """Complement within the chunk reverses the offsets (o ↦ 2^c-1-o) and, since the
    squeeze of a complement is the complement of the squeeze, reverses each alpha row:
    B = reverse(forward(reverse(acc), reverse(alpha_low))). Bit-identical, so the two
    kernels stay one computation (DESIGN rule 7)."""
    acc, alpha_low = recursion_inputs(c, 1000 + 7 * c + seed, 0.25)
    back = np.empty(1 << c)
    K._backward_chunk(acc, alpha_low, back)
    fwd = np.empty(1 << c)
    K._forward_chunk(np.ascontiguousarray(acc[::-1]), np.ascontiguousarray(alpha_low[:, ::-1]), fwd)
    np.testing.assert_array_equal(back, fwd[::-1])


# ----------------------------------------------------------------------------- gamma

@pytest.mark.parametrize("c,v", [(1, 0), (3, 0), (3, 2), (6, 4)])
def test_gather_low(c, v):
    rng = np.random.default_rng(c + v)
    fwd, bwd = log_table(rng, 1 << c), log_table(rng, 1 << c)
    out = np.empty(1 << (c - 1))
    K._gather_low(fwd, bwd, v, out)
    np.testing.assert_array_equal(out, naive.gather_low(fwd, bwd, v))


def test_add_into():
    rng = np.random.default_rng(4)
    x, y = log_table(rng, 64), log_table(rng, 64)
    out = np.empty(64)
    K._add_into(out, x, y)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("nbits,k,d", [(4, 2, 4), (6, 2, 3), (7, 3, 5), (8, 1, 4), (6, 0, 2)])
def test_gamma_partial(nbits, k, d):
    """Every chunk id: families whose high part is inside the chunk id get the downward
    sum over the chunk, the others -inf."""
    rng = np.random.default_rng(nbits + k + d)
    fam = family_masks(nbits, k)
    small = small_masks(d, k)
    for H in range(1 << (nbits - d)):
        s = log_table(rng, 1 << d)
        part = np.full(fam.size, 123.0)
        K._gamma_partial(s.copy(), d, H, fam, small, part)
        assert_close(part, naive.gamma_partial(s, d, H, fam))


def _gamma_inputs(kind, d, rng):
    """s over 2^d offsets: "narrow" (all within 623.8 nats: linear, nothing flushed);
    "flushed" (some 3000 nats down, but the full set's s is among the largest, so every
    family's superset sum is ≥ 2^-900 of the scale: linear); "wide" (only the empty set
    is large: the families' sums are the small terms, the log domain it is); "zeros"
    (-inf on the sets holding offset bit 0, nothing flushed: the families holding it get
    exact -inf)."""
    s = log_table(rng, 1 << d, 0.2, 300.0)
    if kind == "flushed":
        s[rng.random(s.size) < 0.3] -= 3000.0
        s[-1] = 400.0
    elif kind == "wide":
        s -= 3000.0
        s[0] = 0.0
    elif kind == "zeros":
        s[np.arange(s.size) & 1 == 1] = -np.inf
    return s


@pytest.mark.parametrize("kind,linear", [("narrow", True), ("flushed", True), ("wide", False), ("zeros", True)])
def test_gamma_partial_linear_and_log_domain_paths(kind, linear):
    """Both paths of _gamma_partial against the brute-force superset sum: the linear one
    accepts exactly the chunks built for it; a refused chunk falls back to the log domain,
    the input intact; _gamma_partial reports each fallback."""
    rng = np.random.default_rng(len(kind))
    d, k, nbits = 6, 3, 8
    fam = family_masks(nbits, k)
    small = small_masks(d, k)
    for H in range(1 << (nbits - d)):
        s = _gamma_inputs(kind, d, rng)
        want = naive.gamma_partial(s, d, H, fam)
        part = np.full(fam.size, 123.0)
        x = s.copy()
        K._gamma_partial_log(x, d, H, fam, small, part)
        assert_close(part, want)
        x = s.copy()
        ok = K._gamma_partial_linear(x, d, H, fam, small, part)
        assert ok == linear
        if ok:
            assert_close(part, want)
        else:
            np.testing.assert_array_equal(x, s)  # restored for the fallback
        part[:] = 123.0
        assert K._gamma_partial(s.copy(), d, H, fam, small, part) == (0 if linear else 1)
        assert_close(part, want)
        if kind == "zeros":
            inside = want[(fam >> d) & ~H == 0]
            assert np.isneginf(inside).any() and np.isfinite(inside).any()


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
    agree with them bit for bit (clear bigbn/__pycache__ if this fails after an edit)."""
    from bigbn.fastmath import _lae_run

    rng = np.random.default_rng(12)
    acc, x, y = (log_table(rng, 4096, 0.1, 300.0) for _ in range(3))
    got = acc.copy()
    K._lae_into(got, x, y)
    z = np.concatenate([acc, x + y])
    _lae_run(z, 0, 4096, 4096)
    np.testing.assert_array_equal(got, z[:4096])
