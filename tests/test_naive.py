"""The slow references in naive.py agree with each other and with hand-worked cases."""

import itertools
import math

import numpy as np
import pytest

import naive
from bigbn.kernels.families import family_masks, n_families, unsqueeze

ATOL = 1e-10


def _agree(a, b):
    (Pa, la), (Pb, lb) = a, b
    np.testing.assert_allclose(Pa, Pb, rtol=0, atol=ATOL)
    assert la == pytest.approx(lb, rel=1e-12, abs=1e-10)


def _valid(result, n):
    P, log_px = result
    assert P.shape == (n, n) and P.dtype == np.float64
    assert np.all(np.isfinite(P)) and math.isfinite(log_px)
    assert np.all(np.diag(P) == 0)
    # P = exp(log p(x, e) - log p(x)): the subtraction of two numbers of size |log p(x)|
    # costs a few ulps of |log p(x)| (7e-12 at 4e4 nats), so 1 may be exceeded by that.
    slack = 16 * np.spacing(max(1.0, abs(log_px)))
    assert np.all(P >= 0) and np.all(P <= 1 + slack)


# Strong spread: scores thousands of nats apart (exp would under/overflow in float64).
CASES = [
    dict(spread=5.0),
    dict(spread=3.0, p_forbidden=0.3),
    dict(spread=4000.0, dist="normal"),
    dict(spread=3000.0, p_forbidden=0.25),
]


def _seed(*parts):
    return np.random.default_rng(list(parts))


# -------------------------------------------------------------- logsumexp, helpers


def test_logsumexp():
    assert naive.logsumexp([]) == -math.inf
    assert naive.logsumexp([-math.inf, -math.inf]) == -math.inf
    assert naive.logsumexp([-math.inf, 0.0]) == 0.0
    assert naive.logsumexp([1000.0, 1000.0]) == pytest.approx(1000.0 + math.log(2))
    assert naive.logsumexp([-5000.0, -5000.0 + math.log(3)]) == pytest.approx(
        -5000.0 + math.log(4)
    )
    a = np.array([[0.0, -np.inf], [-np.inf, -np.inf], [math.log(2), math.log(3)]])
    np.testing.assert_allclose(naive.logsumexp(a, axis=1), [0.0, -np.inf, math.log(5)])
    with pytest.raises(ValueError):
        naive.logsumexp([np.nan])


def test_random_beta():
    rng = np.random.default_rng(0)
    b = naive.random_beta(6, 3, rng, spread=7.0, p_forbidden=0.5)
    assert b.shape == (6, n_families(5, 3)) and b.dtype == np.float64
    assert np.all(np.isfinite(b[:, 0]))
    assert np.isneginf(b).any()
    fin = b[np.isfinite(b)]
    assert fin.min() >= -7.0 and fin.max() <= 0.0


# ----------------------------------------------------------------- DAG enumerator


@pytest.mark.parametrize("n, count", [(1, 1), (2, 3), (3, 25), (4, 543), (5, 29281)])
def test_number_of_dags(n, count):
    # OEIS A003024: labelled DAGs.
    assert len(naive.enumerate_dags(n, n - 1)) == count


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_number_of_indegree_one_dags(n):
    # Indegree <= 1: rooted forests on n labelled nodes, (n + 1)^(n - 1) of them.
    assert len(naive.enumerate_dags(n, 1)) == (n + 1) ** (n - 1)


def _is_acyclic(parents):
    n = len(parents)
    for order in itertools.permutations(range(n)):
        pos = {v: j for j, v in enumerate(order)}
        if all(pos[p] < pos[v] for v in range(n) for p in parents[v]):
            return True
    return False


def _count_linear_extensions(parents):
    n = len(parents)
    return sum(
        all(order.index(p) < order.index(v) for v in range(n) for p in parents[v])
        for order in itertools.permutations(range(n))
    )


@pytest.mark.parametrize("n, k", [(3, 1), (3, 2), (4, 2)])
def test_dags_are_exactly_the_acyclic_assignments(n, k):
    masks = family_masks(n - 1, k).tolist()
    F = len(masks)
    dags = {tuple(r) for r in naive.enumerate_dags(n, k).tolist()}
    assert len(dags) == len(naive.enumerate_dags(n, k))  # no duplicates
    expected = set()
    for choice in itertools.product(range(F), repeat=n):
        parents = [
            [j for j in range(n) if unsqueeze(masks[f], i) >> j & 1] for i, f in enumerate(choice)
        ]
        if _is_acyclic(parents):
            expected.add(choice)
    assert dags == expected


def test_linear_extensions_by_brute_force():
    n = 4
    dags = naive.enumerate_dags(n, n - 1)
    masks = family_masks(n - 1, n - 1).tolist()
    fam = np.array([[unsqueeze(m, i) for m in masks] for i in range(n)])
    pm = fam[np.arange(n)[None, :], dags]
    got = np.exp(naive.log_linear_extensions(pm))
    for d in range(0, len(dags), 7):
        parents = [[j for j in range(n) if pm[d, i] >> j & 1] for i in range(n)]
        assert round(got[d]) == _count_linear_extensions(parents)
    assert round(got[np.all(pm == 0, axis=1)][0]) == math.factorial(n)


# --------------------------------------------------------------- hand-worked cases


def test_two_nodes_closed_form():
    # n = 2, k = 1: families of each node are [∅, {other}].
    # beta[0] = [a0, a1] (a1: 1 → 0), beta[1] = [b0, b1] (b1: 0 → 1).
    # Order 0<1: α_0(∅) α_1({0}) = e^a0 (e^b0 + e^b1); order 1<0: e^b0 (e^a0 + e^a1).
    # p(x) = 2 e^(a0+b0) + e^(a0+b1) + e^(a1+b0)   (empty DAG has 2 linear extensions),
    # p(0→1 | x) = e^(a0+b1) / p(x),  p(1→0 | x) = e^(a1+b0) / p(x).
    a0, a1, b0, b1 = -1.0, -0.3, -2.0, -0.5
    beta = np.array([[a0, a1], [b0, b1]])
    px = math.exp(a0) * (math.exp(b0) + math.exp(b1)) + math.exp(b0) * (
        math.exp(a0) + math.exp(a1)
    )
    assert px == pytest.approx(
        2 * math.exp(a0 + b0) + math.exp(a0 + b1) + math.exp(a1 + b0), rel=1e-14
    )
    want = np.array([[0.0, math.exp(a0 + b1) / px], [math.exp(a1 + b0) / px, 0.0]])
    for fn in (naive.edges_by_dags, naive.edges_by_orders, naive.edges_by_forward_sums):
        P, log_px = fn(beta, 1)
        np.testing.assert_allclose(P, want, rtol=1e-13, atol=0)
        assert log_px == pytest.approx(math.log(px), rel=1e-13)


def test_two_nodes_far_apart_scores():
    # Same closed form, shifted by -5000 nats: exp would underflow to 0 in float64.
    a0, a1, b0, b1 = -5001.0, -5000.3, -5002.0, -5000.5
    beta = np.array([[a0, a1], [b0, b1]])
    log_px = naive.logsumexp([math.log(2) + a0 + b0, a0 + b1, a1 + b0])
    want01 = math.exp(a0 + b1 - log_px)
    for fn in (naive.edges_by_dags, naive.edges_by_orders, naive.edges_by_forward_sums):
        P, lp = fn(beta, 1)
        assert P[0, 1] == pytest.approx(want01, rel=1e-12)
        assert lp == pytest.approx(log_px, rel=1e-14)


def test_forced_structure():
    # Only one finite family per node: the chain 0 → 1 → 2 plus 0 → 2. Posterior 1 on its
    # edges, 0 elsewhere, and p(x) = exp(Σ β) (one DAG, one linear extension).
    n, k = 3, 2
    masks = family_masks(n - 1, k).tolist()
    want_parents = {0: 0, 1: 0b1, 2: 0b011}
    beta = np.full((n, len(masks)), -np.inf)
    for i, pm in want_parents.items():
        f = [unsqueeze(m, i) for m in masks].index(pm)
        beta[i, f] = -1.5 * (i + 1)
    want = np.zeros((n, n))
    want[0, 1] = want[1, 2] = want[0, 2] = 1.0
    for fn in (naive.edges_by_dags, naive.edges_by_orders, naive.edges_by_forward_sums):
        P, log_px = fn(beta, k)
        np.testing.assert_allclose(P, want, atol=1e-14)
        assert log_px == pytest.approx(-1.5 * 6)


def test_only_empty_family_gives_no_edges():
    n, k = 4, 2
    beta = np.full((n, n_families(n - 1, k)), -np.inf)
    beta[:, 0] = [-3.0, -1.0, -2.0, -7.0]
    for fn in (naive.edges_by_dags, naive.edges_by_orders, naive.edges_by_forward_sums):
        P, log_px = fn(beta, k)
        assert np.all(P == 0)
        assert log_px == pytest.approx(math.log(math.factorial(n)) - 13.0)


def test_uniform_scores_n3_k2():
    # All β = 0: p(x, G) ∝ #linear extensions, so
    # p(x) = Σ_G #ext(G) = Σ_orders #(DAGs ⊆ order) = 3! · 2^3.
    # The edge 0→1 is in half of the DAGs consistent with each order where 0 precedes 1,
    # so p(x, 0→1) = 3 orders · 2^3 / 2 and the posterior is 1/4.
    beta = np.zeros((3, n_families(2, 2)))
    for fn in (naive.edges_by_dags, naive.edges_by_orders, naive.edges_by_forward_sums):
        P, log_px = fn(beta, 2)
        assert log_px == pytest.approx(math.log(6 * 8))
        np.testing.assert_allclose(P + np.eye(3) * 0.25, np.full((3, 3), 0.25), atol=1e-14)


def test_impossible_data_is_refused():
    beta = np.full((2, 2), -np.inf)
    beta[0, 0] = 0.0  # node 1 has no finite family at all: p(x) = 0
    for fn in (naive.edges_by_dags, naive.edges_by_orders, naive.edges_by_forward_sums):
        with pytest.raises(ValueError, match="p\\(x\\) = 0"):
            fn(beta, 1)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="columns"):
        naive.edges_by_orders(np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="n <= 5"):
        naive.edges_by_dags(np.zeros((6, 6)), 1)
    with pytest.raises(ValueError, match="NaN"):
        naive.edges_by_forward_sums(np.full((2, 2), np.nan), 1)


# ------------------------------------------------------ the three routes agree


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_dags_orders_forward_agree(n, case):
    for k in range(1, n):
        for seed in range(2 if n == 5 else 3):
            beta = naive.random_beta(n, k, _seed(n, k, case, seed), **CASES[case])
            by_dags = naive.edges_by_dags(beta, k)
            by_orders = naive.edges_by_orders(beta, k)
            by_forward = naive.edges_by_forward_sums(beta, k)
            _valid(by_dags, n)
            _agree(by_dags, by_orders)
            _agree(by_dags, by_forward)


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_orders_forward_agree(n, case):
    for k in range(1, n):
        beta = naive.random_beta(n, k, _seed(n, k, case), **CASES[case])
        by_orders = naive.edges_by_orders(beta, k)
        by_forward = naive.edges_by_forward_sums(beta, k)
        _valid(by_orders, n)
        _agree(by_orders, by_forward)


def test_shift_invariance():
    # Adding c_i to every score of node i multiplies every term by e^(c_i): posteriors
    # unchanged, log p(x) shifted by Σ c_i — also far outside float64's exp range.
    n, k = 6, 2
    beta = naive.random_beta(n, k, _seed(99), spread=20.0, p_forbidden=0.2)
    c = np.array([-9000.0, 800.0, -3.0, 0.0, 5000.0, -12000.0])
    P0, l0 = naive.edges_by_forward_sums(beta, k)
    P1, l1 = naive.edges_by_forward_sums(beta + c[:, None], k)
    np.testing.assert_allclose(P1, P0, atol=1e-12)
    assert l1 == pytest.approx(l0 + c.sum(), rel=1e-13)


# ------------------------------------------------------------ α, L, B tables


def test_log_alpha_squeezed_layout():
    n, k = 5, 2
    beta = naive.random_beta(n, k, _seed(7), spread=4.0, p_forbidden=0.3)
    masks = family_masks(n - 1, k).tolist()
    alpha = naive.log_alpha(beta, k)
    assert alpha.shape == (n, 1 << (n - 1))
    for i in range(n):
        for s in range(1 << (n - 1)):
            terms = [beta[i, f] for f, m in enumerate(masks) if m & ~s == 0]
            assert alpha[i, s] == pytest.approx(naive.logsumexp(terms), rel=1e-14)


@pytest.mark.parametrize("n, k", [(4, 2), (6, 3), (7, 6)])
def test_forward_backward_identity(n, k):
    # Paper section 3: p(x) = Σ_{S ⊆ V−v} α_v(S) L(S) R(V−v−S) for every v,
    # with B(S) = R(V−S).
    beta = naive.random_beta(n, k, _seed(n, k, 1), spread=50.0, p_forbidden=0.2)
    alpha = naive.log_alpha(beta, k)
    L = naive.log_forward(alpha)
    B = naive.log_backward(alpha)
    assert L[0] == 0.0 and B[-1] == 0.0
    assert B[0] == pytest.approx(L[-1], rel=1e-13)  # R(V) = L(V) = p(x)
    _, log_px = naive.edges_by_orders(beta, k)
    assert L[-1] == pytest.approx(log_px, rel=1e-13)
    for v in range(n):
        terms = []
        for s in range(1 << (n - 1)):
            S = unsqueeze(s, v)
            terms.append(alpha[v, s] + L[S] + B[S | (1 << v)])
        assert naive.logsumexp(terms) == pytest.approx(log_px, rel=1e-13)
