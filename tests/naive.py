"""Slow, obviously-correct references for the edge posteriors (as STUMPY's tests/naive.py).

Model (Koivisto 2006, sections 2-3): order-modular prior with q_i = 1, so

    p(x, G) ∝ (number of linear extensions of G) × Π_i exp(beta[i, f_i])

for a DAG G whose node i has family f_i, i.e. parents ``unsqueeze(masks[f_i], i)`` with
``masks = family_masks(n - 1, k)``. ``beta`` is an (n, F) float64 table of natural logs
(log rho already included); -inf marks a forbidden family.

Summed over linear orders (paper eq. 2):

    p(x) = Σ_≺ Π_i α_i(U_i),    α_i(U) = Σ_{G ⊆ U, |G| ≤ k} exp β_i(G),

and the edge posterior is p(u→v | x) = p(x, u ∈ G_v) / p(x).

Three independent routes, each returning ``(P, log_px)`` with P an (n, n) float64 array,
``P[u, v]`` = posterior of the edge u→v, zero diagonal:

- `edges_by_dags`: sum over every DAG with indegree <= k (n <= 5);
- `edges_by_orders`: sum over all n! linear orders (n <= 8);
- `edges_by_forward_sums`: per edge, the forward recursion L(S) = Σ_{i∈S} α_i(S−i) L(S−i)
  with α_v restricted to families containing u (Koivisto & Sood 2004; paper section 2),
  n <= 12.

Everything is computed in the log domain; nothing large is ever exponentiated. Tables
here use *full* n-bit masks (bit j = node j) unless a docstring says "squeezed".
Accuracy: P = exp(log p(x, e) − log p(x)) is good to a few ulps of |log p(x)| in absolute
terms (about 1e-11 when log p(x) is 1e5 nats), so compare with an absolute tolerance.

Timings (2-core VM): n=5 DAGs (29281 of them) 0.5 s the first time (cached per (n, k));
n=8 orders ≈ 0.1 s; forward sums n=10 ≈ 0.2-0.5 s, n=12 ≈ 1 s at k=3, 17 s at k=11.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from bigbn.kernels.families import family_masks, n_families, unsqueeze

__all__ = [
    "crc32c",
    "logsumexp",
    "random_beta",
    "enumerate_dags",
    "log_linear_extensions",
    "log_alpha",
    "log_forward",
    "log_backward",
    "edges_by_dags",
    "edges_by_orders",
    "edges_by_forward_sums",
    "parent_sets_by_dags",
    "parent_sets_by_orders",
    "dag_posterior",
    "ancestor_masks",
    "markov_blanket_masks",
    "linear_extensions_by_permutations",
    "linear_extensions_by_down_sets",
    "sample_by_recursion",
    "map_by_dags",
    "map_by_subsets",
    "interventional_dirichlet_scores",
    "interventional_bge_scores",
    "bge_effects_by_dags",
    "exact_bge_effects_by_dags",
    "discrete_effects_by_dags",
    "adjusted_table",
    "lae",
    "upward_truncated",
    "downward_truncated",
    "alpha_chunk",
    "forward_chunk",
    "backward_chunk",
    "gather_low",
    "gamma_partial",
    "log_gamma",
    "edge_fold",
    "midrange_beta",
    "k2_beta",
    "cg_scores",
    "transition_cells",
    "dbn_by_orders",
    "dbn_map_by_orders",
]


# ---------------------------------------------------------------------------- helpers


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of data, continuing from crc:
    bit by bit, as RFC 3720 (iSCSI), appendix B.4, defines it."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def logsumexp(a, axis=None):
    """log Σ exp(a) along ``axis`` (all of it if None); -inf where every term is -inf.

    Accepts lists or arrays; returns a Python float for axis=None, else an array.
    +inf or NaN inputs are rejected (they never occur in a valid score table).
    """
    a = np.asarray(a, dtype=np.float64)
    if np.isnan(a).any() or np.isposinf(a).any():
        raise ValueError("logsumexp: NaN or +inf input")
    if a.size == 0:
        if axis is None:
            return -math.inf
        shape = list(a.shape)
        del shape[axis]
        return np.full(shape, -np.inf)
    m = np.max(a, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)  # all -inf: exp(-inf - 0) = 0, log 0 = -inf
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m_safe), axis=axis, keepdims=True)) + m_safe
    if axis is None:
        return float(out.reshape(()))
    return np.squeeze(out, axis=axis)


def random_beta(n, k, rng, spread=10.0, dist="uniform", p_forbidden=0.0):
    """A random (n, F) float64 local-score table for testing, F = n_families(n-1, k).

    dist="uniform": entries uniform on [-spread, 0]; dist="normal": normal with standard
    deviation ``spread``. With probability ``p_forbidden`` an entry is set to -inf, except
    the empty family (column 0), which stays finite so that p(x) > 0.
    """
    F = n_families(n - 1, k)
    if dist == "uniform":
        beta = rng.uniform(-spread, 0.0, size=(n, F))
    elif dist == "normal":
        beta = rng.normal(0.0, spread, size=(n, F))
    else:
        raise ValueError(f"unknown dist {dist!r}")
    if p_forbidden > 0:
        forbid = rng.random((n, F)) < p_forbidden
        forbid[:, 0] = False
        beta[forbid] = -np.inf
    return beta


def _check_beta(beta, k, nmax):
    beta = np.ascontiguousarray(beta, dtype=np.float64)
    if beta.ndim != 2:
        raise ValueError("beta must be 2-D (n, F)")
    n = beta.shape[0]
    if not 1 <= n <= nmax:
        raise ValueError(f"need 1 <= n <= {nmax}, got n={n}")
    if not 0 <= k <= max(n - 1, 0):
        raise ValueError(f"need 0 <= k <= n-1, got k={k}")
    if beta.shape[1] != n_families(n - 1, k):
        raise ValueError(f"beta has {beta.shape[1]} columns, expected n_families(n-1, k)")
    if np.isnan(beta).any() or np.isposinf(beta).any():
        raise ValueError("beta contains NaN or +inf")
    return beta, n


def _full_family_masks(n, k):
    """fam[i, f] = parent set of node i in family f as a full n-bit mask; int64 (n, F)."""
    masks = family_masks(n - 1, k).tolist()
    return np.array([[unsqueeze(m, i) for m in masks] for i in range(n)], dtype=np.int64)


def _posteriors(log_joint, log_px):
    """(n, n) log p(x, u→v) -> (P, log_px) with P = exp(log_joint - log_px), diag 0."""
    if not np.isfinite(log_px):
        raise ValueError("p(x) = 0: every structure has a forbidden family")
    P = np.exp(log_joint - log_px)
    np.fill_diagonal(P, 0.0)
    return P, float(log_px)


# ---------------------------------------------------------------------- 1. over DAGs


@functools.lru_cache(maxsize=None)
def enumerate_dags(n, k):
    """Every DAG on n nodes with indegree <= k, as family indices.

    Returns an int64 array (D, n): row d gives, for each node i, the index f into
    ``family_masks(n-1, k)`` of its parent set. Built by assigning families node by node
    and dropping an assignment as soon as it closes a directed cycle. (Cached; read-only.)
    """
    masks = family_masks(n - 1, k).tolist()
    full = [[unsqueeze(m, i) for m in masks] for i in range(n)]
    out = []
    parents = [0] * n  # full parent masks of the nodes assigned so far (0 for others)
    choice = [0] * n

    def reaches(src, dst):
        # Is there a directed path src ⇝ dst using the edges assigned so far?
        seen, stack = 1 << src, [src]
        while stack:
            a = stack.pop()
            if a == dst:
                return True
            for b in range(n):
                if parents[b] >> a & 1 and not seen >> b & 1:
                    seen |= 1 << b
                    stack.append(b)
        return False

    def assign(i):
        if i == n:
            out.append(list(choice))
            return
        for f, pm in enumerate(full[i]):
            # New edges p→i close a cycle iff i already reaches some parent p.
            if any(pm >> p & 1 and reaches(i, p) for p in range(n)):
                continue
            parents[i], choice[i] = pm, f
            assign(i + 1)
            parents[i] = 0

    assign(0)
    arr = np.array(out, dtype=np.int64).reshape(-1, n)
    arr.flags.writeable = False
    return arr


def log_tier_linear_extensions(parent_masks, tiers):
    """log of the number of tier-consistent linear extensions of each DAG: the DP of
    `log_linear_extensions`, where N(S) = 0 unless S is an earlier tiers' union plus part of
    the next tier (the only sets a tier-consistent order passes through)."""
    pm = np.asarray(parent_masks, dtype=np.int64)
    D, n = pm.shape
    prefixes, before = [], 0
    for t in tiers:
        tm = sum(1 << v for v in t)
        prefixes.append((before, tm))
        before |= tm
    ideal = [any(S & ~(b | tm) == 0 and S & b == b for b, tm in prefixes) for S in range(1 << n)]
    children = np.zeros((D, n), dtype=np.int64)
    for v in range(n):
        for u in range(n):
            children[:, u] |= ((pm[:, v] >> u) & 1) << v
    N = np.zeros((D, 1 << n), dtype=np.float64)
    N[:, 0] = 1.0
    for S in range(1, 1 << n):
        if not ideal[S]:
            continue
        for i in range(n):
            if S >> i & 1 and ideal[S ^ (1 << i)]:
                sink = (children[:, i] & S) == 0
                N[:, S] += np.where(sink, N[:, S ^ (1 << i)], 0.0)
    with np.errstate(divide="ignore"):
        return np.log(N[:, -1])


def log_linear_extensions(parent_masks):
    """log of the number of linear extensions of each DAG.

    parent_masks: int64 (D, n), full parent masks. Returns float64 (D,).
    DP over subsets: N(∅) = 1, N(S) = Σ_{i ∈ S, i has no child in S} N(S − i)
    (the last node of an order of S must be a sink of the subgraph induced by S).
    """
    pm = np.asarray(parent_masks, dtype=np.int64)
    D, n = pm.shape
    children = np.zeros((D, n), dtype=np.int64)
    for v in range(n):
        for u in range(n):
            children[:, u] |= ((pm[:, v] >> u) & 1) << v
    N = np.zeros((D, 1 << n), dtype=np.float64)  # exact integers (n! < 2^53)
    N[:, 0] = 1.0
    for S in range(1, 1 << n):
        for i in range(n):
            if S >> i & 1:
                sink = (children[:, i] & S) == 0
                N[:, S] += np.where(sink, N[:, S ^ (1 << i)], 0.0)
    with np.errstate(divide="ignore"):
        return np.log(N[:, -1])


@functools.lru_cache(maxsize=None)
def _dag_table(n, k):
    dags = enumerate_dags(n, k)
    fam = _full_family_masks(n, k)
    pm = fam[np.arange(n)[None, :], dags]  # (D, n) full parent masks
    lle = log_linear_extensions(pm)
    pm.flags.writeable = False
    lle.flags.writeable = False
    return dags, pm, lle


def _dag_weights(beta, k, tiers):
    """(dags, parent masks, log weight) of every DAG: log #(tier-consistent) linear
    extensions + Σ_i beta[i, f_i]."""
    beta, n = _check_beta(beta, k, 5)
    dags, pm, lle = _dag_table(n, k)
    if tiers is not None:
        lle = log_tier_linear_extensions(pm, tiers)
    return beta, n, dags, pm, lle + beta[np.arange(n)[None, :], dags].sum(axis=1)


def edges_by_dags(beta, k, tiers=None):
    """Edge posteriors by summing over every DAG with indegree <= k; n <= 5.

    beta: float64 (n, F). Weight of a DAG = log(#linear extensions) + Σ_i beta[i, f_i]
    (with ``tiers``: the tier-consistent linear extensions only).
    Returns (P, log_px): P float64 (n, n), P[u, v] = p(u→v | x); log_px = log Σ weights.
    """
    beta, n, dags, pm, w = _dag_weights(beta, k, tiers)
    log_px = logsumexp(w)
    log_joint = np.full((n, n), -np.inf)
    for v in range(n):
        for u in range(n):
            if u != v:
                log_joint[u, v] = logsumexp(w[(pm[:, v] >> u) & 1 == 1])
    return _posteriors(log_joint, log_px)


def exact_by_dags(scores, k, tiers=None, prec=1300):
    """Edge and parent-set posteriors and log p(x) from local scores of any magnitude, in
    (effectively) exact arithmetic: every DAG with indegree <= k (n <= 5), weights
    #(tier-consistent) linear extensions × Π_i exp(score_i(G_i)) in mpmath at ``prec``
    bits (enough to hold 1e308 to well below one ulp of a float64 difference).

    scores: per node a dict {full n-bit parent mask: score}, a score a decimal string
    (parsed at ``prec`` bits, so the file's digits, not float64's, count) or a float; a
    family absent is impossible. Returns (P float64 (n, n), {(v, mask): posterior}, log p(x)
    as an mpmath number).
    """
    import mpmath

    n = len(scores)
    _, pm, lle = _dag_table(n, k)
    if tiers is not None:
        lle = log_tier_linear_extensions(pm, tiers)
    with mpmath.workprec(prec):
        vals = [{g: mpmath.mpf(s) for g, s in fam.items()} for fam in scores]
        logs = []
        for d in range(pm.shape[0]):
            if not np.isfinite(lle[d]):
                continue
            parents = [int(g) for g in pm[d]]
            if any(g not in vals[i] for i, g in enumerate(parents)):
                continue
            count = int(round(math.exp(lle[d])))  # #linear extensions: at most 5! = 120
            logs.append((parents, mpmath.fsum(vals[i][g] for i, g in enumerate(parents)) + mpmath.log(count)))
        top = max(w for _, w in logs)
        weights = [(parents, mpmath.exp(w - top)) for parents, w in logs]
        Z = mpmath.fsum(x for _, x in weights)
        joint = [[mpmath.mpf(0)] * n for _ in range(n)]
        fam: dict = {}
        for parents, x in weights:
            for v, g in enumerate(parents):
                fam[v, g] = fam.get((v, g), mpmath.mpf(0)) + x
                for u in range(n):
                    if g >> u & 1:
                        joint[u][v] += x
        P = np.array([[float(joint[u][v] / Z) for v in range(n)] for u in range(n)])
        return P, {key: float(x / Z) for key, x in fam.items()}, top + mpmath.log(Z)


# ---------------------------------------------------------------------- α, L, B tables


def _log_alpha_full(beta, k):
    """log α_i(U) and log α_i^{(u)}(U) for every node i and full n-bit mask U.

    α_i(U) = Σ over families G of i with G ⊆ U of exp beta[i, G], by a brute-force subset
    test of every (U, family) pair; α_i^{(u)}(U) is the same sum over the families that
    contain u (the edge feature f_i(G) = [u ∈ G]). Returns ``(la, la_u)``: float64
    (n, 2^n) and (n, n, 2^n) with ``la_u[u, i]`` = log α_i^{(u)}. Entries whose U
    contains i are computed but meaningless.
    """
    n = beta.shape[0]
    fam = _full_family_masks(n, k)
    U = np.arange(1 << n, dtype=np.int64)
    la = np.empty((n, 1 << n))
    la_u = np.full((n, n, 1 << n), -np.inf)
    for i in range(n):
        keep = (fam[i][None, :] & ~U[:, None]) == 0  # (2^n, F): family ⊆ U
        W = np.where(keep, beta[i][None, :], -np.inf)
        la[i] = logsumexp(W, axis=1)
        for u in range(n):
            if u != i:
                la_u[u, i] = logsumexp(W[:, (fam[i] >> u) & 1 == 1], axis=1)
    return la, la_u


def log_alpha(beta, k):
    """log α_i(U) in the *squeezed* layout of docs/design.md; float64 (n, 2^(n-1)).

    ``out[i, s]`` = log Σ_{G ⊆ unsqueeze(s, i), |G| <= k} exp beta[i, G] (q_i = 1).
    """
    beta, n = _check_beta(beta, k, 16)
    full, _ = _log_alpha_full(beta, k)
    s = np.arange(1 << (n - 1), dtype=np.int64)
    return np.stack([full[i, [unsqueeze(int(x), i) for x in s]] for i in range(n)])


def _forward_full(alpha_full):
    """L(S) for all S ⊆ V from full-layout α (n, 2^n); float64 (2^n,). Paper eq. (2).

    L(∅) = 0 (log 1); L(S) = logsumexp_{i ∈ S} [α_i(S − i) + L(S − i)], computed one
    subset size at a time, vectorised over the subsets of that size.
    """
    n = alpha_full.shape[0]
    S_all = np.arange(1 << n, dtype=np.int64)
    size = np.zeros(1 << n, dtype=np.int64)
    for i in range(n):
        size += (S_all >> i) & 1
    L = np.full(1 << n, -np.inf)
    L[0] = 0.0
    for s in range(1, n + 1):
        S = S_all[size == s]
        terms = np.full((S.size, n), -np.inf)
        for i in range(n):
            has = (S >> i) & 1 == 1
            prev = S[has] ^ (1 << i)
            terms[has, i] = alpha_full[i, prev] + L[prev]
        L[S] = logsumexp(terms, axis=1)
    return L


def _alpha_squeezed_to_full(alpha):
    alpha = np.asarray(alpha, dtype=np.float64)
    n = alpha.shape[0]
    if alpha.shape != (n, 1 << (n - 1)):
        raise ValueError("alpha must have shape (n, 2^(n-1))")
    full = np.full((n, 1 << n), -np.inf)
    for i in range(n):
        for s in range(1 << (n - 1)):
            full[i, unsqueeze(s, i)] = alpha[i, s]
    return full


def log_forward(alpha):
    """Forward table L(S), S ⊆ V a full n-bit mask, from squeezed log α (n, 2^(n-1)).

    Returns float64 (2^n,), L[0] = 0, L[2^n - 1] = log p(x). Paper section 2.
    """
    return _forward_full(_alpha_squeezed_to_full(alpha))


def log_backward(alpha):
    """Backward table stored by predecessors, B(S) = R(V − S), as in docs/design.md.

    From squeezed log α (n, 2^(n-1)); returns float64 (2^n,) with B(V) = 0 (log 1) and
    B(S) = logsumexp_{i ∉ S} [α_i(S) + B(S ∪ {i})]. Paper section 3. Then for every v,
    p(x) = Σ_{S ⊆ V−v} α_v(S) L(S) B(S ∪ {v}).
    """
    full = _alpha_squeezed_to_full(alpha)
    n = full.shape[0]
    V = (1 << n) - 1
    B = np.full(1 << n, -np.inf)
    B[V] = 0.0
    for S in range(V - 1, -1, -1):  # supersets are larger integers: already done
        terms = [full[i, S] + B[S | (1 << i)] for i in range(n) if not S >> i & 1]
        B[S] = logsumexp(terms)
    return B


# --------------------------------------------------------------------- 2. over orders


def _orders(la, tiers=None):
    """Every linear order of the n nodes: (U, A, log p(x)) with U[o, i] the predecessor
    set of node i in order o, A[o, i] = log α_i(U[o, i]) (la: full-layout log α).
    tiers (lists of nodes, earliest first): only the orders that list every earlier tier
    first."""
    n = la.shape[0]
    perms = [p for p in itertools.permutations(range(n)) if tiers is None or _tier_consistent(p, tiers)]
    perms = np.array(perms, dtype=np.int64)  # (M, n)
    M = perms.shape[0]
    # Predecessor set of the node at position j: OR of the nodes at positions < j.
    prefix = np.zeros((M, n), dtype=np.int64)
    for j in range(1, n):
        prefix[:, j] = prefix[:, j - 1] | (np.int64(1) << perms[:, j - 1])
    U = np.empty((M, n), dtype=np.int64)
    U[np.arange(M)[:, None], perms] = prefix
    A = np.stack([la[i, U[:, i]] for i in range(n)], axis=1)  # (M, n) log α_i(U_i)
    return U, A, logsumexp(A.sum(axis=1))


def _tier_consistent(perm, tiers):
    """Whether the order ``perm`` lists every node of an earlier tier before each node of a
    later one."""
    tier = {v: j for j, t in enumerate(tiers) for v in t}
    ranks = [tier[v] for v in perm]
    return all(a <= b for a, b in zip(ranks, ranks[1:]))


def edges_by_orders(beta, k, tiers=None):
    """Edge posteriors by summing over all n! linear orders (with ``tiers``: the
    tier-consistent ones only); n <= 8.

    For an order with predecessor sets U_i, its weight is Σ_i log α_i(U_i); the joint
    with the edge u→v replaces α_v by α_v^{(u)}(U_v) = Σ_{G ⊆ U_v, u ∈ G} exp beta[v, G].
    Returns (P, log_px) as `edges_by_dags`.
    """
    beta, n = _check_beta(beta, k, 8)
    la, la_u = _log_alpha_full(beta, k)
    U, A, log_px = _orders(la, tiers)
    log_joint = np.full((n, n), -np.inf)
    for v in range(n):
        rest = np.delete(A, v, axis=1).sum(axis=1)  # no -inf - -inf anywhere
        for u in range(n):
            if u != v:
                log_joint[u, v] = logsumexp(rest + la_u[u, v, U[:, v]])
    return _posteriors(log_joint, log_px)


# ------------------------------------------------------------- 3. per-edge forward sums


def edges_by_forward_sums(beta, k):
    """Edge posteriors by one forward recursion per edge (Koivisto & Sood 2004); n <= 12.

    p(x) = L(V) with α for the trivial feature; for the edge u→v, α_v is replaced by
    α_v^{(u)} (families of v containing u) and p(x, u→v) = L(V) of that recursion.
    Returns (P, log_px) as `edges_by_dags`.
    """
    beta, n = _check_beta(beta, k, 12)
    la, la_u = _log_alpha_full(beta, k)
    log_px = _forward_full(la)[-1]
    log_joint = np.full((n, n), -np.inf)
    for u in range(n):
        for v in range(n):
            if u != v:
                feat = la.copy()
                feat[v] = la_u[u, v]
                log_joint[u, v] = _forward_full(feat)[-1]
    return _posteriors(log_joint, log_px)


# ------------------------------------------------- 4. parent sets, whole DAGs, samples


def parent_sets_by_dags(beta, k, tiers=None):
    """p(G_v = family f | x) by summing over every DAG (n <= 5; weights as
    `edges_by_dags`); float64 (n, F)."""
    beta, n, dags, pm, w = _dag_weights(beta, k, tiers)
    log_px = logsumexp(w)
    out = np.zeros(beta.shape)
    for v in range(n):
        for f in range(beta.shape[1]):
            sel = dags[:, v] == f
            if sel.any():
                out[v, f] = np.exp(logsumexp(w[sel]) - log_px)
    return out


def parent_sets_by_orders(beta, k, tiers=None):
    """p(G_v = family f | x) by summing over all n! orders (n <= 8; with ``tiers``, the
    tier-consistent ones); float64 (n, F).

    p(x, G_v = G) = Σ_≺ [G ⊆ U_v] exp β_v(G) Π_{i ≠ v} α_i(U_i)."""
    beta, n = _check_beta(beta, k, 8)
    la, _ = _log_alpha_full(beta, k)
    fam = _full_family_masks(n, k)
    U, A, log_px = _orders(la, tiers)
    out = np.zeros(beta.shape)
    for v in range(n):
        rest = np.delete(A, v, axis=1).sum(axis=1)
        for f in range(beta.shape[1]):
            ok = (fam[v, f] & ~U[:, v]) == 0
            if ok.any() and np.isfinite(beta[v, f]):
                out[v, f] = np.exp(logsumexp(rest[ok]) + beta[v, f] - log_px)
    return out


def dag_posterior(beta, k, prior="order-modular"):
    """Every DAG with indegree <= k (n <= 5) and its exact posterior.

    Returns (pm, prob, lle): full parent masks (D, n), p(G | x) (D,), log #LE (D,).
    order-modular: p ∝ #LE(G) Π exp β; dag-modular: p ∝ Π exp β."""
    beta, n = _check_beta(beta, k, 5)
    dags, pm, lle = _dag_table(n, k)
    w = beta[np.arange(n)[None, :], dags].sum(axis=1)
    if prior == "order-modular":
        w = w + lle
    return pm, np.exp(w - logsumexp(w)), lle


def ancestor_masks(pm):
    """out[d, v] bit u ⟺ a directed path u ⇝ v in DAG d (by repeated relaxation)."""
    pm = np.asarray(pm, dtype=np.int64)
    anc = pm.copy()
    for _ in range(pm.shape[1]):
        nxt = anc.copy()
        for v in range(pm.shape[1]):
            for u in range(pm.shape[1]):
                nxt[:, v] |= np.where((anc[:, v] >> u) & 1 == 1, anc[:, u], 0)
        anc = nxt
    return anc


def markov_blanket_masks(pm):
    """out[d, v] bit u ⟺ u is a parent, child or co-parent of a child of v, u ≠ v."""
    pm = np.asarray(pm, dtype=np.int64)
    D, n = pm.shape
    out = np.zeros_like(pm)
    for v in range(n):
        for u in range(n):
            if u == v:
                continue
            par = (pm[:, v] >> u) & 1
            chi = (pm[:, u] >> v) & 1
            co = np.zeros(D, dtype=np.int64)
            for w in range(n):
                co |= ((pm[:, w] >> v) & 1) & ((pm[:, w] >> u) & 1)
            out[:, v] |= (par | chi | co) << u
    return out


def ancestor_sets(parent_sets):
    """The ancestors of every node of one DAG (any n), given as one Python set of parents
    per node: a depth-first search up the parents of each node."""
    out = []
    for v in range(len(parent_sets)):
        seen, stack = set(), list(parent_sets[v])
        while stack:
            u = stack.pop()
            if u not in seen:
                seen.add(u)
                stack.extend(parent_sets[u])
        out.append(seen)
    return out


def markov_blanket_sets(parent_sets):
    """Parents, children and the children's other parents of every node (any n), as sets."""
    n = len(parent_sets)
    out = []
    for v in range(n):
        children = {w for w in range(n) if v in parent_sets[w]}
        out.append((set(parent_sets[v]) | children | {u for w in children for u in parent_sets[w]}) - {v})
    return out


def linear_extensions_by_permutations(parents):
    """#LE of one DAG (full parent masks, (n,)) by testing every permutation; n <= 8."""
    n = len(parents)
    count = 0
    for perm in itertools.permutations(range(n)):
        pos = {v: j for j, v in enumerate(perm)}
        if all(pos[u] < pos[v] for v in range(n) for u in range(n) if int(parents[v]) >> u & 1):
            count += 1
    return count


def sample_by_recursion(beta, k, T, seed, uniform):
    """The backward sampler in memory from the full tables (n <= 12).

    For t < T: S = V; draw the last node i of S with probability α_i(S−i) L(S−i) / L(S) by
    inverse CDF over i ascending with u = uniform(seed, t, a, step, 0), then the parent set
    by inverse CDF over the families (ascending) of node i inside S − i with
    uniform(seed, t, a, step, 1); a u beyond the total (rounding) redraws the sample with
    attempt a + 1. Returns (nodes (T, n): node placed at each step, parents (T, n) full
    masks)."""
    beta, n = _check_beta(beta, k, 12)
    la, _ = _log_alpha_full(beta, k)
    L = _forward_full(la)
    fam = _full_family_masks(n, k)
    nodes = np.zeros((T, n), dtype=np.int64)
    parents = np.zeros((T, n), dtype=np.int64)
    for t in range(T):
        a = 0
        while True:
            S, ok = (1 << n) - 1, True
            chosen = []
            for step in range(n):
                u, cum, pick = uniform(seed, t, a, step, 0), 0.0, -1
                for i in range(n):
                    if S >> i & 1:
                        w = la[i, S ^ (1 << i)] + L[S ^ (1 << i)]
                        if w > -np.inf:
                            cum += math.exp(w - L[S])
                            if u < cum:
                                pick = i
                                break
                if pick < 0:
                    ok = False
                    break
                S ^= 1 << pick
                chosen.append((pick, S))
            if ok:
                break
            a += 1
        for step, (i, P) in enumerate(chosen):
            nodes[t, step] = i
            allowed = [f for f in range(fam.shape[1]) if fam[i, f] & ~P == 0 and beta[i, f] > -np.inf]
            mx = max(beta[i, f] for f in allowed)
            tot = sum(math.exp(beta[i, f] - mx) for f in allowed)
            u, cum = uniform(seed, t, a, step, 1) * tot, 0.0
            for f in allowed:
                cum += math.exp(beta[i, f] - mx)
                if u < cum:
                    break
            parents[t, i] = fam[i, f]
    return nodes, parents


# ------------------------------------------------- 4b. interventional data: local scores


def interventional_dirichlet_scores(data, arities, intervened, k, score, ess=1.0):
    """BDeu(ess) or K2 local scores (n, F) with node i counted over the rows where
    intervened[t][i] is False only (Cooper & Yoo 1999): rows filtered and counted by plain
    loops into dicts, the Dirichlet-multinomial formula of bigbn/scores/discrete.py written out;
    q_i counts every configuration of the parents' full arities."""
    n = len(arities)
    masks = family_masks(n - 1, k).tolist()
    out = np.empty((n, len(masks)))
    for i in range(n):
        rows = [list(data[t]) for t in range(len(data)) if not intervened[t][i]]
        r = int(arities[i])
        for f, sq in enumerate(masks):
            ps = [b for b in range(n) if unsqueeze(sq, i) >> b & 1]
            q = 1
            for p in ps:
                q *= int(arities[p])
            n_j, n_jk = {}, {}
            for row in rows:
                j = tuple(int(row[p]) for p in ps)
                n_j[j] = n_j.get(j, 0) + 1
                n_jk[j, int(row[i])] = n_jk.get((j, int(row[i])), 0) + 1
            a_j, a_jk = (float(r), 1.0) if score == "k2" else (ess / q, ess / (q * r))
            out[i, f] = (sum(math.lgamma(a_j) - math.lgamma(a_j + c) for c in n_j.values())
                         + sum(math.lgamma(a_jk + c) - math.lgamma(a_jk) for c in n_jk.values()))
    return out


def _bge_log_marginal(rows, Y, n, alpha_mu, alpha_w):
    """log p(D_Y) of the BGe model on n variables (Kuipers, Moffa & Heckerman 2014) from
    the records ``rows`` (lists), ν = their mean; scatter by plain loops, Γ_l as a product
    of gammas (its π factors cancel in the ratio)."""
    l, m = len(Y), len(rows)
    if l == 0:
        return 0.0
    t = alpha_mu * (alpha_w - n - 1) / (alpha_mu + 1)
    mean = [sum(row[a] for row in rows) / m for a in Y]
    R = np.array([[t * (a == b) + sum((row[Y[a]] - mean[a]) * (row[Y[b]] - mean[b]) for row in rows)
                   for b in range(l)] for a in range(l)])
    a0, a1 = (alpha_w - n + l) / 2, (m + alpha_w - n + l) / 2
    gammas = sum(math.lgamma(a1 - j / 2) - math.lgamma(a0 - j / 2) for j in range(l))
    return (-l * m / 2 * math.log(math.pi) + l / 2 * math.log(alpha_mu / (m + alpha_mu)) + gammas
            + a0 * l * math.log(t) - a1 * np.linalg.slogdet(R)[1])


def interventional_bge_scores(data, intervened, k, alpha_mu=1.0, alpha_w=None):
    """BGe local scores (n, F) with node i's statistics from the rows where intervened[t][i]
    is False: log p(D_{G∪i}) − log p(D_G) on those rows (`_bge_log_marginal`)."""
    n = len(data[0])
    alpha_w = n + alpha_mu + 1 if alpha_w is None else alpha_w
    masks = family_masks(n - 1, k).tolist()
    out = np.empty((n, len(masks)))
    for i in range(n):
        rows = [list(data[t]) for t in range(len(data)) if not intervened[t][i]]
        for f, sq in enumerate(masks):
            ps = [b for b in range(n) if unsqueeze(sq, i) >> b & 1]
            out[i, f] = (_bge_log_marginal(rows, sorted(ps + [i]), n, alpha_mu, alpha_w)
                         - _bge_log_marginal(rows, ps, n, alpha_mu, alpha_w))
    return out


# ------------------------------------------------------------------ 5. the MAP network


def map_by_dags(beta, k):
    """max over every DAG (n <= 5) of Σ_i beta[i, f_i]; returns (score, set of the parent-
    mask tuples of every DAG attaining it)."""
    beta, n = _check_beta(beta, k, 5)
    dags, pm, _ = _dag_table(n, k)
    w = beta[np.arange(n)[None, :], dags].sum(axis=1)
    best = float(np.max(w))
    return best, {tuple(r) for r in pm[w == best].tolist()}


def map_by_subsets(beta, k):
    """The plain subset DP (n <= 12): a_i(U) = max_{G ⊆ U} beta_i(G) by brute force,
    M(S) = max_{i ∈ S} a_i(S − i) + M(S − i). Returns (M(V), parent masks of one optimal
    DAG by backtracking)."""
    beta, n = _check_beta(beta, k, 12)
    fam = _full_family_masks(n, k)
    U = np.arange(1 << n, dtype=np.int64)
    a = np.full((n, 1 << n), -np.inf)
    arg = np.zeros((n, 1 << n), dtype=np.int64)
    for i in range(n):
        W = np.where((fam[i][None, :] & ~U[:, None]) == 0, beta[i][None, :], -np.inf)
        a[i], arg[i] = W.max(axis=1), W.argmax(axis=1)
    M = np.full(1 << n, -np.inf)
    M[0] = 0.0
    sink = np.full(1 << n, -1)
    for S in range(1, 1 << n):
        for i in range(n):
            if S >> i & 1 and a[i, S ^ (1 << i)] + M[S ^ (1 << i)] > M[S]:
                M[S], sink[S] = a[i, S ^ (1 << i)] + M[S ^ (1 << i)], i
    parents = np.zeros(n, dtype=np.int64)
    S = (1 << n) - 1
    while S:
        i = int(sink[S])
        parents[i] = fam[i, arg[i, S ^ (1 << i)]]
        S ^= 1 << i
    return float(M[-1]), parents
def _dag_parent_posterior(beta, k, x, tiers=None):
    """[(parents of x as a sorted tuple, p(G | x))] over every DAG (n <= 5), order-modular
    (with ``tiers``: weighted by the tier-consistent linear extensions only)."""
    if tiers is None:
        pm, prob, _ = dag_posterior(beta, k)
    else:
        _, _, _, pm, w = _dag_weights(beta, k, tiers)
        prob = np.exp(w - logsumexp(w))
    n = pm.shape[1]
    return [(tuple(j for j in range(n) if pm[d, x] >> j & 1), float(prob[d])) for d in range(len(prob))]



def _bisect_quantile(cdf, q, lo, hi, steps: int = 200):
    """inf{t : cdf(t) ≥ q} in [lo, hi] by bisection, ``steps`` halvings (floats or mpmath
    numbers alike): the obvious search, for the references' credible intervals."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if cdf(mid) >= q:
            hi = mid
        else:
            lo = mid
    return hi

def bge_effects_by_dags(data, beta, k, x, y, alpha_mu, alpha_w, level, parents=None):
    """Bayesian IDA for BGe by summing over every DAG (n <= 5): (mean, p_zero, lower, upper)
    of the posterior of the linear effect of x on y.

    Per DAG G with y ∉ Pa_G(x) = Z the effect is a Student t read off the inverse of R
    restricted to A = {x} ∪ Z ∪ {y}, whose posterior is IW(R_AA, d), d = α_w + m − n + |A|:
    with P = R_AA⁻¹, location −P_xy / P_yy and squared scale (P_xx − P_xy² / P_yy) / (P_yy d)
    (the regression of y on the rest of A, from the precision matrix), d degrees of freedom. The quantiles bisect the
    mixture CDF (scipy.stats.t) 200 times. parents: [(Pa(x), p)] of another model (a 2-TBN:
    `dbn_by_orders`) in place of the sum over the DAGs of beta.
    """
    from scipy import stats

    data = np.asarray(data, dtype=np.float64)
    m, n = data.shape
    t0 = alpha_mu * (alpha_w - n - 1) / (alpha_mu + 1)
    xbar = data.mean(axis=0)
    R = t0 * np.eye(n) + (data - xbar).T @ (data - xbar)  # ν = x̄: the mean term vanishes
    atom, comps = 0.0, []
    for Z, p in _dag_parent_posterior(beta, k, x) if parents is None else parents:
        if y in Z:
            atom += p
            continue
        A = [x, *Z, y]
        d = alpha_w + m - n + len(A)
        P = np.linalg.inv(R[np.ix_(A, A)])
        pyy, pxy, pxx = P[-1, -1], P[0, -1], P[0, 0]
        comps.append((p, -pxy / pyy, math.sqrt((pxx - pxy * pxy / pyy) / (pyy * d)), d))
    p, mu, s, d = (np.array(c, dtype=np.float64) for c in zip(*comps)) if comps else (np.zeros(0),) * 4
    mean = float(np.dot(p, mu))

    def cdf(t):
        return atom * (t >= 0) + float(np.dot(p, stats.t.cdf((t - mu) / s, d)))

    def quantile(q):
        return _bisect_quantile(cdf, q, -1e3, 1e3)

    return mean, atom, quantile((1 - level) / 2), quantile((1 + level) / 2)


def exact_bge_effects_by_dags(data, beta, k, x, y, alpha_mu, alpha_w, level, dps=40):
    """`bge_effects_by_dags` with no float64 on the way: the data read as exact rationals
    (Fractions of their float64 values), R = t·I + S_m built and restricted to
    A = {x} ∪ Z ∪ {y} exactly (ν = x̄, exactly: the mean term vanishes), each DAG's
    Student t (location −P_xy/P_yy, squared scale (P_xx − P_xy²/P_yy)/(P_yy d), P = R_AA⁻¹
    by exact elimination) and the DAG weights exp(w − logsumexp w) at ``dps`` digits
    (mpmath), the quantiles of the mixture by 200 bisections of its CDF (mpmath's
    regularised incomplete beta) between loc ± 1000 scales of every component.
    Returns mpmath numbers (mean, p_zero, lower, upper); only the weights' β comes in as
    float64 (the scores are audited on their own: tests/test_bge.py)."""
    from fractions import Fraction

    import mpmath

    data = np.asarray(data, dtype=np.float64)
    m, n = data.shape
    rows = [[Fraction(float(v)) for v in r] for r in data]
    am, aw = Fraction(alpha_mu), Fraction(alpha_w)
    t0 = am * (aw - n - 1) / (am + 1)
    mean = [sum(r[j] for r in rows) / m for j in range(n)]
    R = [[t0 * (a == b) + sum((r[a] - mean[a]) * (r[b] - mean[b]) for r in rows) for b in range(n)]
         for a in range(n)]

    def inverse(M):
        q = len(M)
        M = [row[:] + [Fraction(int(i == j)) for j in range(q)] for i, row in enumerate(M)]
        for j in range(q):
            p = next(i for i in range(j, q) if M[i][j] != 0)
            M[j], M[p] = M[p], M[j]
            for i in range(q):
                if i != j:
                    f = M[i][j] / M[j][j]
                    M[i] = [u - f * v for u, v in zip(M[i], M[j])]
        return [[M[i][q + j] / M[i][i] for j in range(q)] for i in range(q)]

    with mpmath.workdps(dps):
        pm, _, lle = dag_posterior(beta, k)
        bb, nn = _check_beta(beta, k, 5)
        dags, _, _ = _dag_table(nn, k)
        w = [mpmath.fsum(mpmath.mpf(float(bb[i, dags[g, i]])) for i in range(nn)) + mpmath.mpf(float(lle[g]))
             for g in range(len(pm))]
        top = max(w)
        e = [mpmath.exp(v - top) for v in w]
        total = mpmath.fsum(e)
        atom, by_z, comps = mpmath.mpf(0), {}, []
        for g in range(len(pm)):  # p(Pa(x) = Z | data), summed over the DAGs
            by_z[int(pm[g, x])] = by_z.get(int(pm[g, x]), 0) + e[g] / total
        for zmask, p in by_z.items():
            Z = [j for j in range(n) if zmask >> j & 1]
            if y in Z:
                atom += p
                continue
            A = [x, *Z, y]
            P = inverse([[R[a][b] for b in A] for a in A])
            pyy, pxy, pxx = P[-1][-1], P[0][-1], P[0][0]
            d = aw + m - n + len(A)
            s2 = (pxx - pxy * pxy / pyy) / (pyy * d)
            comps.append((p, _mpf(-pxy / pyy), mpmath.sqrt(_mpf(s2)), _mpf(d)))
        mu = mpmath.fsum(p * loc for p, loc, _, _ in comps)

        def t_cdf(z, d):  # Student t CDF by the regularised incomplete beta
            if abs(z) > 40 and d >= 100:  # tail below (1 + 16)^(−50) < 1e-60 (mpmath is slow there)
                tail = mpmath.mpf(0)
            else:
                tail = mpmath.betainc(mpmath.mpf(1) / 2, d / 2, z * z / (d + z * z), 1, regularized=True) / 2
            return 1 - tail if z > 0 else tail

        def cdf(v):
            return (atom if v >= 0 else 0) + mpmath.fsum(p * t_cdf((v - loc) / s, d) for p, loc, s, d in comps)

        def quantile(q):
            lo = min([mpmath.mpf(0)] + [loc - 1e3 * s for _, loc, s, _ in comps])
            hi = max([mpmath.mpf(0)] + [loc + 1e3 * s for _, loc, s, _ in comps])
            return _bisect_quantile(cdf, q, lo, hi)

        level = mpmath.mpf(level)  # 1 + level in float64 would round the tail 1e-12 by 4e-4
        return mu, atom, quantile((1 - level) / 2), quantile((1 + level) / 2)


def discrete_effects_by_dags(data, arities, beta, k, x, y, score, ess, tiers=None):
    """p(y = b | do(x = a)) (float64 (r_x, r_y)) and p_zero by summing over every DAG
    (n <= 5), counting records in plain loops: per DAG with Z = Pa(x) ∌ y,
    Σ_z p̂(b | a, z) p̂(z) with the posterior-mean Dirichlet tables (BDeu(ess): ess/(r_y r_x q_Z)
    per cell of y's table, ess/q_Z per cell of Z's joint; K2: 1 per cell); p̂(y) when y ∈ Z.
    tiers: the DAGs weighted by their tier-consistent linear extensions only.
    """
    data = np.asarray(data)
    m = data.shape[0]
    rx, ry = int(arities[x]), int(arities[y])
    out = np.zeros((rx, ry))
    p_zero = 0.0
    for Z, p in _dag_parent_posterior(beta, k, x, tiers):
        if y in Z:
            p_zero += p
            a = 1.0 if score == "k2" else ess / ry
            for b in range(ry):
                out[:, b] += p * (sum(1 for t in range(m) if data[t, y] == b) + a) / (m + ry * a)
            continue
        out += p * adjusted_table(data, arities, x, y, Z, score, ess)
    return out, p_zero


def adjusted_table(data, arities, x, y, Z, score, ess):
    """Σ_z p̂(y = b | x = a, z) p̂(z) over every configuration z of Z (observed or not),
    counting records in plain loops; float64 (r_x, r_y)."""
    m = data.shape[0]
    rx, ry = int(arities[x]), int(arities[y])
    configs = list(itertools.product(*[range(int(arities[j])) for j in Z]))
    qz = len(configs)
    a_y = 1.0 if score == "k2" else ess / (ry * rx * qz)
    a_z = 1.0 if score == "k2" else ess / qz
    out = np.zeros((rx, ry))
    for z in configs:
        in_z = [t for t in range(m) if all(data[t, j] == v for j, v in zip(Z, z))]
        for a in range(rx):
            n_az = sum(1 for t in in_z if data[t, x] == a)
            for b in range(ry):
                n_abz = sum(1 for t in in_z if data[t, x] == a and data[t, y] == b)
                out[a, b] += ((n_abz + a_y) / (n_az + ry * a_y)) * ((len(in_z) + a_z) / (m + qz * a_z))
    return out


# ------------------------------------------------------------ 4. one twin per kernel
#
# Slow twins of the numba kernels of bigbn/kernels/ (and the edge fold of
# bigbn/engine/tasks.py), written from their definitions, entry by entry, with no blocking,
# truncation tricks or polynomial exp/log. tests/test_kernels.py calls each kernel
# directly and compares it with its twin here.


def popcount(x):
    """Set bits of a mask, one bit at a time (a negative int64: its 64 two's complement bits)."""
    x = int(x) & ((1 << 64) - 1)
    c = 0
    while x:
        c += x & 1
        x >>= 1
    return c


_popcount = popcount


def _squeeze(mask, i):
    return (mask & ((1 << i) - 1)) | ((mask >> (i + 1)) << i)


def lae(a, b):
    """log(exp(a) + exp(b)) in float64 by libm; -inf is the neutral element."""
    return logsumexp([a, b])


def upward_truncated(x, d, k):
    """y(T) = logsumexp_{S ⊆ T, |S| <= k} x(S) over d bits; x float64 (2^d,). The
    kernel assumes x = -inf on |S| > k; here those entries are simply not summed."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(1 << d)
    for T in range(1 << d):
        out[T] = logsumexp([x[S] for S in range(1 << d) if S & ~T == 0 and _popcount(S) <= k])
    return out


def downward_truncated(x, d, k):
    """y(T) = logsumexp_{S ⊇ T} x(S) over d bits for |T| <= k; NaN (undefined) for
    |T| > k, where the kernel leaves garbage."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(1 << d, np.nan)
    for T in range(1 << d):
        if _popcount(T) <= k:
            out[T] = logsumexp([x[S] for S in range(1 << d) if T & ~S == 0])
    return out


def alpha_chunk(beta_row, fam, chunk_id, d):
    """alpha on one chunk: out[o] = logsumexp_{f: fam[f] ⊆ U} beta_row[f] with the
    squeezed mask U = chunk_id·2^d + o; float64 (2^d,). Paper section 2 (q = 1)."""
    out = np.empty(1 << d)
    for o in range(1 << d):
        U = (chunk_id << d) | o
        out[o] = logsumexp([b for b, g in zip(beta_row, fam) if int(g) & ~U == 0])
    return out


def forward_chunk(acc, alpha_low):
    """In-chunk forward recursion, offsets ascending (paper eq. 2):
    L[o] = logsumexp(acc[o], alpha_low[i, squeeze(o - 2^i, i)] + L[o - 2^i] for i ∈ o)."""
    c = alpha_low.shape[0]
    L = np.empty(1 << c)
    for o in range(1 << c):
        terms = [acc[o]] + [alpha_low[i, _squeeze(o ^ (1 << i), i)] + L[o ^ (1 << i)]
                            for i in range(c) if o >> i & 1]
        L[o] = logsumexp(terms)
    return L


def backward_chunk(acc, alpha_low):
    """In-chunk backward recursion, offsets descending (paper section 3, B(S) = R(V-S)):
    B[o] = logsumexp(acc[o], alpha_low[i, squeeze(o, i)] + B[o + 2^i] for i ∉ o)."""
    c = alpha_low.shape[0]
    B = np.empty(1 << c)
    for o in range((1 << c) - 1, -1, -1):
        terms = [acc[o]] + [alpha_low[i, _squeeze(o, i)] + B[o | (1 << i)]
                            for i in range(c) if not o >> i & 1]
        B[o] = logsumexp(terms)
    return B


def gather_low(fwd, bwd, v):
    """s[squeeze(o, v)] = fwd[o] + bwd[o + 2^v] for the offsets o with bit v clear."""
    c = int(np.log2(fwd.shape[0]))
    out = np.empty(1 << (c - 1))
    for o in range(1 << c):
        if not o >> v & 1:
            out[_squeeze(o, v)] = fwd[o] + bwd[o | (1 << v)]
    return out


def gamma_partial(s, d, chunk_id, fam):
    """part[f] = logsumexp_{S_low ⊇ G_low} s[S_low] if the family's high part
    G_high = fam[f] >> d lies inside chunk_id, else -inf (paper section 4, FTDMT)."""
    part = np.empty(len(fam))
    for f, g in enumerate(int(x) for x in fam):
        if (g >> d) & ~chunk_id:
            part[f] = -np.inf
        else:
            gl = g & ((1 << d) - 1)
            part[f] = logsumexp([s[S] for S in range(1 << d) if gl & ~S == 0])
    return part


def log_gamma(alpha, k):
    """gamma_v(G) = logsumexp_{G ⊆ S ⊆ V-v} L(S) + B(S + v) (q = 1) for every family G
    of family_masks(n-1, k) (squeezed; S in squeezed form too); float64 (n, F).

    From squeezed log alpha (n, 2^(n-1)) via `log_forward` and `log_backward`; the
    downward sum is done by brute force over all S. Paper section 4.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    n = alpha.shape[0]
    L, B = log_forward(alpha), log_backward(alpha)
    fam = family_masks(n - 1, k)
    out = np.empty((n, fam.size))
    for v in range(n):
        s = np.array([L[unsqueeze(q, v)] + B[unsqueeze(q, v) | (1 << v)] for q in range(1 << (n - 1))])
        for f, g in enumerate(int(x) for x in fam):
            out[v, f] = logsumexp([s[q] for q in range(1 << (n - 1)) if g & ~q == 0])
    return out


def edge_fold(beta, gamma, k):
    """P[u, v] = Σ_{G ∋ u} exp(β_v(G) + γ_v(G)) / Σ_G exp(β_v(G) + γ_v(G)); (n, n).

    The edge step of the paper's section 4, by full parent masks (unsqueezed)."""
    n = beta.shape[0]
    fam = _full_family_masks(n, k)
    w = beta + gamma
    P = np.zeros((n, n))
    for v in range(n):
        total = logsumexp(w[v])
        for u in range(n):
            if u != v:
                P[u, v] = math.exp(logsumexp(w[v][(fam[v] >> u) & 1 == 1]) - total)
    return P


def midrange_beta(n, k, rng, spread=2.0):
    """A score table whose edge posteriors are far from 0 and 1: entries normal with a
    standard deviation of ``spread`` nats (real scores differ by thousands of nats and
    give posteriors within 1e-60 of 0 or 1, which a wrong fold can still match)."""
    return random_beta(n, k, rng, spread=spread, dist="normal")


def k2_beta(data, arities, k, prior="koivisto-sood"):
    """beta = log ρ_i(G) + K2 log p(x_i | x_G) for every family, by counting each parent
    configuration in a dict (Cooper & Herskovits 1992): Σ_j [lgamma(r) − lgamma(N_ij + r)
    + Σ_c lgamma(N_ijc + 1)] over the observed configurations j; ρ = 1 / C(n-1, |G|) for
    "koivisto-sood", 1 for "uniform"."""
    data = np.asarray(data)
    m, n = data.shape
    masks = family_masks(n - 1, k).tolist()
    beta = np.zeros((n, len(masks)))
    for i in range(n):
        r = int(arities[i])
        for f, sq in enumerate(masks):
            parents = [u for u in range(n) if (unsqueeze(sq, i) >> u) & 1]
            counts = {}
            for row in data.tolist():
                key = tuple(row[u] for u in parents)
                counts.setdefault(key, [0] * r)[row[i]] += 1
            s = sum(math.lgamma(r) - math.lgamma(sum(c) + r) + sum(math.lgamma(x + 1) for x in c)
                    for c in counts.values())
            if prior == "koivisto-sood":
                s -= math.log(math.comb(n - 1, len(parents)))
            beta[i, f] = s
    return beta


# ------------------------------------------------------------ disk under a budget (bigbn/plan/lattice.py)

def lattice_table(table):
    """Whether a table is one of the lattice's chunk tables whose disk a budget bounds: L
    (``forward`` and the rounds' ``reforward{ℓ}``), B and the γ parts."""
    return table in ("forward", "backward", "gamma_parts") or table.startswith("reforward")


def disk_peak_by_simulation(plan, block=1):
    """Bytes of L, B and the γ parts on disk at once when the plan's tasks run one at a
    time in its order (the sync executor): every chunk a task writes counts from the
    write, every chunk a release deletes stops counting then. Also asserts that nothing
    is read once deleted, nor written twice. block: each chunk file counts as the whole
    blocks of ``block`` bytes it occupies (1: its bytes), and a γ part also the two folders
    its chunk key c/H/0/0 makes (a block each, deleted with it)."""
    def blocks(size):
        return -(-size // block) * block

    size = {t: blocks(8 * plan.n * plan.n_families if t == "gamma_parts" else 8 * plan.chunk_size)
            for t in plan.tables() if lattice_table(t)}
    if block > 1:
        size["gamma_parts"] += 2 * block
    live, gone, written, now, peak = set(), set(), set(), 0, 0
    for t in plan.tasks():
        for r in t.reads:
            for cc in r.chunks:
                assert (r.table, cc) not in gone, f"{t.key} reads {r.table}{cc} after its deletion"
        for r in t.writes:
            for cc in r.chunks:
                assert (r.table, cc) not in written, f"{r.table}{cc} written twice"
                written.add((r.table, cc))
                if r.table in size:
                    live.add((r.table, cc))
                    now += size[r.table]
        peak = max(peak, now)
        for r in t.deletes:
            for cc in r.chunks:
                if (r.table, cc) in live:
                    live.discard((r.table, cc))
                    now -= size[r.table]
                gone.add((r.table, cc))
    return peak


def every_kept_set(plan, block=1):
    """{kept levels: (simulated peak, chunk tasks of the rounds counted from the task
    list)} for every set of kept levels (0 and h always, any of the others); block: the
    peak's chunk files counted in blocks of that many bytes (`disk_peak_by_simulation`)."""
    import dataclasses

    h = plan.h
    every = {}
    for r in range(h):
        for inner in itertools.combinations(range(1, h), r):
            kept = (0,) + inner + (h,) if h else (0,)
            p = dataclasses.replace(plan, kept=kept)
            work = sum(1 for t in p.tasks() if t.kind == "reforward")
            every[kept] = (disk_peak_by_simulation(p, block), work)
        if h == 0:
            break
    return every


def best_kept_by_brute_force(plan, limit, every=None):
    """Among every set of kept levels (`every_kept_set`), the one of least recomputation
    whose simulated peak is at most ``limit`` (ties: the lower peak): (kept, peak, work),
    or None; and every set's (peak, work)."""
    every = every_kept_set(plan) if every is None else every
    fits = [(w, pk, kept) for kept, (pk, w) in every.items() if pk <= limit]
    if not fits:
        return None, every
    w, pk, kept = min(fits)
    return (kept, pk, w), every


def linear_extensions_by_down_sets(parents):
    """#LE of one DAG (full parent masks, (n,)) as an exact int, by counting the orders'
    prefixes: N(∅) = 1 and N(S ∪ {v}) += N(S) for every v ∉ S whose parents are all in S
    (the prefixes of orders are the down-sets S). Cost: the DAG's down-sets times n."""
    n = len(parents)
    par = [int(p) for p in parents]
    level = {0: 1}
    for _ in range(n):
        nxt = {}
        for S, c in level.items():
            for v in range(n):
                if not S >> v & 1 and par[v] & ~S == 0:
                    nxt[S | 1 << v] = nxt.get(S | 1 << v, 0) + c
        level = nxt
    return level.get((1 << n) - 1, 0)


def scatter(c):
    """Σ_t c_t c_tᵀ, each entry an exactly rounded sum (math.fsum) of its m products."""
    c = np.asarray(c, dtype=np.float64)
    n = c.shape[1]
    return np.array([[math.fsum(c[:, i] * c[:, j]) for j in range(n)] for i in range(n)])


def log_det(a):
    """log det of a symmetric positive definite matrix by Gaussian elimination without
    pivoting, in Python floats: the product of the pivots."""
    a = [list(map(float, row)) for row in a]
    n, out = len(a), 0.0
    for j in range(n):
        if not a[j][j] > 0:
            return math.nan
        out += math.log(a[j][j])
        for i in range(j + 1, n):
            f = a[i][j] / a[j][j]
            for p in range(j, n):
                a[i][p] -= f * a[j][p]
    return out

# ------------------------------------------- learned networks and bnlearn's language (#42)

def posterior_mean_cpt(data, arities, child, parents, score, ess):
    """The posterior-mean CPT of ``child`` given ``parents`` under BDeu(ess) or K2,
    counting records in plain loops: float64 (r_p1, ..., r_pq, r_child)."""
    r = [int(a) for a in arities]
    rc = r[child]
    configs = list(itertools.product(*[range(r[p]) for p in parents]))
    a = 1.0 if score == "k2" else ess / (rc * len(configs))
    out = np.zeros(tuple(r[p] for p in parents) + (rc,))
    for z in configs:
        rows = [t for t in range(data.shape[0]) if all(data[t, p] == s for p, s in zip(parents, z))]
        for b in range(rc):
            n_b = sum(1 for t in rows if data[t, child] == b)
            out[z + (b,)] = (n_b + a) / (len(rows) + rc * a)
    return out


def gaussian_cpd_by_precision(data, alpha_mu, alpha_w, y, X):
    """(intercept, coefficients, variance): the posterior means of y's regression on X
    under the BGe model, read from the precision matrix K of R restricted to A = X ∪ {y}
    (coefficient of x: −K_yx / K_yy; R_y·X = 1 / K_yy). R built from its definition
    (bigbn/scores/bge.py) with ν = x̄. Σ_AA ~ IW(R_AA, d_A), d_A = α_w + m − n + |A|, and
    the Schur complement Σ_y·X ~ IW₁(R_y·X, d_A), whose mean is R_y·X / (d_A − 2)."""
    m, n = data.shape
    xbar = data.mean(axis=0)
    t = alpha_mu * (alpha_w - n - 1) / (alpha_mu + 1)
    R = t * np.eye(n)
    for row in data:
        R += np.outer(row - xbar, row - xbar)
    A = list(X) + [y]
    K = np.linalg.inv(R[np.ix_(A, A)])
    coef = -K[-1, :-1] / K[-1, -1]
    d_a = alpha_w + m - n + len(A)
    return float(xbar[y] - coef @ xbar[list(X)]), coef, float(1.0 / K[-1, -1]) / (d_a - 2)


def strength_from_edges_csv(path):
    """bnlearn's (from, to, strength, direction) of every ordered pair, read from a run's
    edges.csv (parent, child, posterior) one line at a time."""
    import csv

    p, order = {}, []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            p[row["parent"], row["child"]] = float(row["posterior"])
            order.append((row["parent"], row["child"]))
    out = []
    for a, b in order:
        s = min(p[a, b] + p[b, a], 1.0)
        out.append((a, b, s, p[a, b] / (p[a, b] + p[b, a]) if s > 0 else 0.0))
    return out


def bnlearn_significant(rows, threshold):
    """The candidate arcs of bnlearn's averaged.network, its R filter transcribed:
    (strength > threshold | strength == 1) & direction >= 0.5, over (from, to, strength,
    direction) rows."""
    return [(a, b) for a, b, s, d in rows if (s > threshold or s == 1) and d >= 0.5]


def v_structures(arcs, n):
    """The v-structures a → c ← b (a < b, a and b not adjacent) of a DAG given as arcs."""
    arcs = set(arcs)
    adj = {frozenset(e) for e in arcs}
    return {(a, c, b) for c in range(n) for a in range(n) for b in range(a + 1, n)
            if (a, c) in arcs and (b, c) in arcs and frozenset((a, b)) not in adj}


def is_acyclic(arcs, n):
    """Whether the arcs (u, v) hold no directed cycle (remove sources one at a time)."""
    left, arcs = set(range(n)), set(arcs)
    while left:
        src = [v for v in left if not any(b == v and a in left for a, b in arcs)]
        if not src:
            return False
        left -= set(src)
    return True


def cpdag_by_enumeration(arcs, n):
    """(compelled, reversible) boolean (n, n) of a DAG's equivalence class, by listing the
    class: every orientation of its skeleton that is acyclic and has the same v-structures
    (Verma & Pearl 1990); an arc is compelled when every member orients it the same way."""
    skeleton = sorted({tuple(sorted(e)) for e in arcs})
    target = v_structures(arcs, n)
    members = []
    for flips in itertools.product((False, True), repeat=len(skeleton)):
        g = [(b, a) if f else (a, b) for (a, b), f in zip(skeleton, flips)]
        if is_acyclic(g, n) and v_structures(g, n) == target:
            members.append(set(g))
    compelled = np.zeros((n, n), dtype=bool)
    reversible = np.zeros((n, n), dtype=bool)
    for a, b in skeleton:
        ways = {((a, b) in g) for g in members}
        if len(ways) == 2:
            reversible[a, b] = reversible[b, a] = True
        elif (a, b) in members[0]:
            compelled[a, b] = True
        else:
            compelled[b, a] = True
    return compelled, reversible

# ------------------------------------------------- 6. mixed data: the CG score


def _cg_log_marginal(rows, S, kinds, arities, ess, alpha_mu, alpha_w):
    """log p(S) of the CG score (bigbn/scores/cg.py, docs/posterior.md "Mixed data") from
    the records ``rows`` (lists) by plain loops: the Dirichlet-multinomial of S's discrete
    part (ess / q on each of its q cells) plus, for each configuration d of that part seen
    in the rows, the normal-Wishart marginal of S's continuous part in d's rows, with the
    prior spread over the q configurations: α_μ/q, α_w(d) − n_c + 1 = (α_w − n_c + 1)/q,
    T/q (q = 1: α_w itself); ν the column means of all rows."""
    m = len(rows)
    n_c = sum(1 for kd in kinds if kd == "continuous")
    D = [j for j in S if kinds[j] == "discrete"]
    C = sorted(j for j in S if kinds[j] == "continuous")
    q = 1
    for j in D:
        q *= int(arities[j])
    cells: dict = {}
    for t, row in enumerate(rows):
        cells.setdefault(tuple(int(row[j]) for j in D), []).append(t)
    total = 0.0
    if D:
        a = ess / q
        total += math.lgamma(ess) - math.lgamma(ess + m)
        total += sum(math.lgamma(a + len(ts)) - math.lgamma(a) for ts in cells.values())
    if not C:
        return total
    alpha_w = n_c + alpha_mu + 1 if alpha_w is None else alpha_w
    t0 = alpha_mu * (alpha_w - n_c - 1) / (alpha_mu + 1)
    nu = [sum(row[j] for row in rows) / m for j in C]
    a_mu = alpha_mu / q
    a_w = alpha_w if q == 1 else n_c - 1 + (alpha_w - n_c + 1) / q
    tq = t0 / q
    l = len(C)
    for ts in cells.values():
        md = len(ts)
        mean = [sum(rows[t][j] for t in ts) / md for j in C]
        R = np.array([[tq * (a == b)
                       + sum((rows[t][C[a]] - mean[a]) * (rows[t][C[b]] - mean[b]) for t in ts)
                       + a_mu * md / (a_mu + md) * (nu[a] - mean[a]) * (nu[b] - mean[b])
                       for b in range(l)] for a in range(l)])
        a0, a1 = (a_w - n_c + l) / 2, (md + a_w - n_c + l) / 2
        gammas = sum(math.lgamma(a1 - j / 2) - math.lgamma(a0 - j / 2) for j in range(l))
        total += (-l * md / 2 * math.log(math.pi) + l / 2 * math.log(a_mu / (md + a_mu)) + gammas
                  + a0 * l * math.log(tq) - a1 * np.linalg.slogdet(R)[1])
    return total


def cg_scores(data, kinds, arities, k, ess=1.0, alpha_mu=1.0, alpha_w=None):
    """CG local scores (n, F): a discrete node with a continuous parent −inf, else
    log p(G ∪ i) − log p(G) of `_cg_log_marginal` (so BDeu for a discrete node)."""
    n = len(kinds)
    rows = [list(r) for r in data]
    masks = family_masks(n - 1, k).tolist()
    out = np.empty((n, len(masks)))
    for i in range(n):
        for f, sq in enumerate(masks):
            ps = [b for b in range(n) if unsqueeze(sq, i) >> b & 1]
            if kinds[i] == "discrete" and any(kinds[p] == "continuous" for p in ps):
                out[i, f] = -np.inf
                continue
            out[i, f] = (_cg_log_marginal(rows, ps + [i], kinds, arities, ess, alpha_mu, alpha_w)
                         - _cg_log_marginal(rows, ps, kinds, arities, ess, alpha_mu, alpha_w))
    return out

# ---------------------------------------------------------------------------- dynamic networks


def transition_cells(rows, lag, series=None):
    """The transition rows of a list of rows (each a list of cells), in plain loops: with
    ``series`` (one id per row, each series contiguous) every series on its own; row t ≥ lag
    of a series gives rows[t] + rows[t-1] + ... + rows[t-lag]."""
    ids = list(series) if series is not None else [0] * len(rows)
    groups = []
    for r, key in enumerate(ids):
        if not groups or ids[r - 1] != key:
            groups.append([])
        groups[-1].append(rows[r])
    out = []
    for g in groups:
        for t in range(lag, len(g)):
            cells = []
            for l in range(lag + 1):
                cells += list(g[t - l])
            out.append(cells)
    return out


def dbn_by_orders(local, n, lag, k, prior="koivisto-sood", contemporaneous=True, tiers=None,
                  forbid=(), require=(), edge_prob=None, max_parents=None):
    """Exact posteriors of a 2-TBN by brute force over the n! orders of slice t.

    local: float64 (N, F) raw log p(x_i | x_G) (no prior) of the N = n(lag + 1) columns of
    the transition rows (slice t first, then lag 1, ..., lag L), in the plain layout
    (``family_masks(N - 1, k)``, squeezed); only the rows of slice t are read. For every
    order of slice t, node i's parents are any G ⊆ (its predecessors ∪ every lagged
    column), |G| ≤ k, weighted exp(local_i(G) + log ρ(|G|)), ρ = 1 or 1/C(N − 1, |G|).
    tiers: lists of nodes of slice t, earliest first: only the orders that list every
    earlier tier first. Returns (P (N, N): P[u, v] = p(u → v), columns of slice t only;
    {(v, parent tuple): posterior} of every parent set of every node of slice t;
    log Σ_orders Π_i α_i). forbid, require: (u, v) column pairs; edge_prob: {(u, v): p}, the
    factor p if G holds u, else 1 − p (also for a u after i in the order); max_parents:
    {v: limit}: a family breaking one of them has weight 0."""
    N = n * (lag + 1)
    masks = family_masks(N - 1, k)
    col = {int(m): f for f, m in enumerate(masks)}
    lagged = list(range(n, N))
    limits = dict(max_parents or {})

    def weight(i, G):
        if (any((u, i) in forbid for u in G) or any(v == i and u not in G for u, v in require)
                or len(G) > limits.get(i, k)):
            return -math.inf
        sq = 0
        for u in G:
            sq |= 1 << (u if u < i else u - 1)
        rho = 0.0 if prior == "uniform" else -math.log(math.comb(N - 1, len(G)))
        for (u, v), p in (edge_prob or {}).items():
            if v == i:
                rho += math.log(p) if u in G else math.log1p(-p)
        return float(local[i, col[sq]]) + rho

    def families(cands):
        for s in range(min(k, len(cands)) + 1):
            yield from itertools.combinations(sorted(cands), s)

    orders, edge_terms, set_terms = [], {}, {}
    for perm in itertools.permutations(range(n)):
        if tiers is not None and not _tier_consistent(perm, tiers):
            continue
        logs, alpha = {}, []
        for pos, i in enumerate(perm):
            cands = lagged + (list(perm[:pos]) if contemporaneous else [])
            logs[i] = {G: w for G in families(cands) if (w := weight(i, G)) > -math.inf}
            alpha.append(logsumexp(list(logs[i].values())))
        total = sum(alpha)
        orders.append(total)
        if total == -math.inf:  # a required edge against this order
            continue
        for pos, i in enumerate(perm):
            rest = total - alpha[pos]
            for G, w in logs[i].items():
                set_terms.setdefault((i, G), []).append(w + rest)
                for u in G:
                    edge_terms.setdefault((u, i), []).append(w + rest)
    log_px = logsumexp(orders)
    P = np.zeros((N, N))
    for (u, v), terms in edge_terms.items():
        P[u, v] = math.exp(logsumexp(terms) - log_px)
    sets = {key: math.exp(logsumexp(terms) - log_px) for key, terms in set_terms.items()}
    return P, sets, log_px


def dbn_map_by_orders(local, n, lag, k, prior="koivisto-sood", contemporaneous=True, forbid=(), require=(),
                      edge_prob=None, max_parents=None):
    """The MAP 2-TBN by brute force (as `dbn_by_orders`, with max for Σ, and its knowledge):
    (its score max_≺ Σ_i max_G w_i(G), and {node: parent tuple} of one maximiser)."""
    N = n * (lag + 1)
    masks = family_masks(N - 1, k)
    col = {int(m): f for f, m in enumerate(masks)}
    limits = dict(max_parents or {})
    best, arg = -math.inf, None
    for perm in itertools.permutations(range(n)):
        total, parents = 0.0, {}
        for pos, i in enumerate(perm):
            cands = sorted(list(range(n, N)) + (list(perm[:pos]) if contemporaneous else []))
            top = (-math.inf, None)
            for s in range(min(k, len(cands)) + 1):
                for G in itertools.combinations(cands, s):
                    if (any((u, i) in forbid for u in G) or any(v == i and u not in G for u, v in require)
                            or len(G) > limits.get(i, k)):
                        continue
                    sq = sum(1 << (u if u < i else u - 1) for u in G)
                    rho = 0.0 if prior == "uniform" else -math.log(math.comb(N - 1, len(G)))
                    for (u, v), p in (edge_prob or {}).items():
                        if v == i:
                            rho += math.log(p) if u in G else math.log1p(-p)
                    top = max(top, (float(local[i, col[sq]]) + rho, G), key=lambda x: x[0])
            total += top[0]
            parents[i] = top[1]
        if total > best:
            best, arg = total, parents
    return best, arg

# ---------------------------------------------------------------------------- cg: the fast path (mixed-data scoring speed)


def cg_cell_index(codes, D):
    """Each row's configuration of the discrete columns D (column ids of ``codes``, (m, n_d)) as
    its rank among the configurations seen, sorted as tuples (first column most significant);
    (index as a list, G)."""
    keys = [tuple(int(codes[t][a]) for a in D) for t in range(len(codes))]
    rank = {key: g for g, key in enumerate(sorted(set(keys)))}
    return [rank[key] for key in keys], len(rank)


def cg_cell_moments(x, index, G):
    """Per cell g (rows t with index[t] == g): its row count, its means (each column's values
    added in order of the rows, from 0.0, divided by the count) and its centred scatter
    matrix (each entry's products (x_ta − x̄_a)(x_tb − x̄_b) added in order of the rows, from
    0.0), in plain Python floats: (counts, means, S) as lists."""
    n = len(x[0])
    counts = [0] * G
    sums = [[0.0] * n for _ in range(G)]
    for t, g in enumerate(index):
        counts[g] += 1
        for a in range(n):
            sums[g][a] += float(x[t][a])
    means = [[sums[g][a] / counts[g] for a in range(n)] for g in range(G)]
    S = [[[0.0] * n for _ in range(n)] for _ in range(G)]
    for t, g in enumerate(index):
        c = [float(x[t][a]) - means[g][a] for a in range(n)]
        for a in range(n):
            for b in range(n):
                S[g][a][b] += c[a] * c[b]
    return counts, means, S


def pairwise_sum(values):
    """numpy's pairwise summation of a contiguous float64 vector (what np.add.reduce does
    to one: numpy/_core/src/umath/loops_utils.h.src), from 0.0, in Python floats."""
    def pw(lo, n):
        if n < 8:
            res = 0.0
            for i in range(n):
                res += values[lo + i]
            return res
        if n <= 128:
            r = list(values[lo:lo + 8])
            i = 8
            while i < n - n % 8:
                for j in range(8):
                    r[j] += values[lo + i + j]
                i += 8
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            while i < n:
                res += values[lo + i]
                i += 1
            return res
        n2 = n // 2
        n2 -= n2 % 8
        return pw(lo, n2) + pw(lo + n2, n - n2)
    return 0.0 + pw(0, len(values))


def cg_continuous_by_numpy(ds, k, ess=1.0, alpha_mu=1.0, alpha_w=None, sets=None):
    """cg_scores as bigbn computed them before the fast path (commit 2896bce): the parent
    sets grouped by their discrete part D in Python, and per D and set size numpy calls on
    `bigbn.scores.cg`'s `_Split.groups` (the scatter matrices, `_scatters`) and
    `_group_log_marginals` (log-dets and the sum over cells). The fast path must give these
    numbers bit for bit."""
    from bigbn.scores import cg

    def continuous_children(split, parent_sets, family_index, out):
        cont = split.cont
        fi = family_index[:, cont]
        sel = np.flatnonzero((fi >= 0).any(axis=1))
        by_d = {}
        is_disc = split.ds.arities > 0
        for g in sel.tolist():
            ps = parent_sets[g]
            ps = ps[ps >= 0]
            by_d.setdefault(tuple(split.local[ps[is_disc[ps]]].tolist()), []).append(g)
        for D, gs in by_d.items():
            gs = np.array(gs, dtype=np.int64)
            ps = parent_sets[gs]
            Z = np.where((ps >= 0) & ~is_disc[np.maximum(ps, 0)], split.local[np.maximum(ps, 0)], -1)
            Z = -np.sort(-Z, axis=1)
            sizes = (Z >= 0).sum(axis=1)
            groups = split.groups(D, diagonal=not sizes.any())
            for l in range(int(sizes.max(initial=0)) + 1):
                at = np.flatnonzero(sizes == l)
                if not at.size:
                    continue
                C = np.sort(Z[at, :l], axis=1)
                base = cg._group_log_marginals(split, groups, C) if l else np.zeros(at.size)
                rows, child = np.nonzero(fi[gs[at]] >= 0)
                union = np.sort(np.concatenate([C[rows], child[:, None]], axis=1), axis=1)
                fam = cg._group_log_marginals(split, groups, union)
                out[cont[child], fi[gs[at][rows], child]] = fam - base[rows]

    fast = cg._continuous_children
    cg._continuous_children = continuous_children
    try:
        return cg.cg_scores(ds, k, ess=ess, alpha_mu=alpha_mu, alpha_w=alpha_w, sets=sets)
    finally:
        cg._continuous_children = fast



# ------------------------------------------- the exact sampler at every n (#39 item 4)

def linear_extensions_float_recursion(parents):
    """#LE of one DAG (full parent masks, (n,)) in float64 by the recursion of
    bigbn/kernels/linext.py, written as a plain memoised Python recursion: a single node
    has one order; a disconnected set is the product over its components (lowest node
    first) of count × C(placed, size), as res = res * (count * C); a connected one sums
    the counts of S − x over its unique source (if it has one and several sinks) or its
    sinks, ascending. Done on the reversed DAG (parents and children swapped) when the DAG
    has at least as many sinks as sources among its nodes with an arc, as the kernel
    chooses. The same float operations in the same order, so the kernel's counts must
    match it bit for bit beyond 2^53 too."""
    n = len(parents)
    par = [int(p) for p in parents]
    ch = [sum(1 << v for v in range(n) if par[v] >> u & 1) for u in range(n)]
    linked = [v for v in range(n) if par[v] | ch[v]]
    if sum(ch[v] == 0 for v in linked) >= sum(par[v] == 0 for v in linked):
        par, ch = ch, par
    adj = [par[v] | ch[v] for v in range(n)]
    memo = {}

    def component(S, start):
        comp, frontier = 1 << start, 1 << start
        while frontier:
            grow = 0
            for j in range(n):
                if frontier >> j & 1:
                    grow |= adj[j]
            grow &= S & ~comp
            comp |= grow
            frontier = grow
        return comp

    def binomial(a, b):
        r = 1.0
        for j in range(1, b + 1):
            r = r * (a - b + j) / j
        return r

    def count(S):
        if S & (S - 1) == 0:
            return 1.0
        if S in memo:
            return memo[S]
        low = (S & -S).bit_length() - 1
        if component(S, low) != S:
            res, rest, placed = 1.0, S, 0
            while rest:
                comp = component(S, (rest & -rest).bit_length() - 1)
                size = bin(comp).count("1")
                placed += size
                res = res * (count(comp) * binomial(placed, size))
                rest &= ~comp
        else:
            nodes = [j for j in range(n) if S >> j & 1]
            sinks = [j for j in nodes if ch[j] & S == 0]
            sources = [j for j in nodes if par[j] & S == 0]
            cand = sources if len(sources) == 1 and len(sinks) > 1 else sinks
            res = 0.0
            for j in cand:
                res += count(S & ~(1 << j))
        memo[S] = res
        return res

    return count((1 << n) - 1)


def draw_parents_by_filter(beta, fam, nodes, preds, alphas, seed, first, attempt, uniform):
    """Parent masks (T, n) drawn as `sampling.draw_parents` specifies, by testing every
    family: for the node i placed at step j of sample t, the families f ⊆ U (U: the set
    before the step less i, squeezed) in ascending order; u = uniform(seed, first + t,
    attempt[t], j, 1) times the total exp(alphas[t, j] − max_f β_i) (the sweep's log α);
    the first f of w = exp(β − max_f β_i) > 0 whose running total of w exceeds u (else the
    last of w > 0). Where the total is at most 1e-278, the same with exp(β − the best β ⊆
    U) and their sum as the total. The same float operations in the same order as the
    kernel."""
    T, n = nodes.shape
    w = np.zeros(beta.shape)
    gms = [max(beta[i]) for i in range(n)]
    for i in range(n):
        if gms[i] > -np.inf:
            for f in range(beta.shape[1]):
                if beta[i, f] > -np.inf:
                    w[i, f] = math.exp(beta[i, f] - gms[i])
    out = np.zeros((T, n), dtype=np.int64)
    for t in range(T):
        for j in range(n):
            i, P = int(nodes[t, j]), int(preds[t, j])
            U = _squeeze(P, i)
            sub = [f for f in range(len(fam)) if int(fam[f]) & ~U == 0]
            u = uniform(seed, first + t, attempt[t], j, 1)
            tot = math.exp(alphas[t, j] - gms[i]) if gms[i] > -np.inf else 0.0
            if tot > 1e-278:
                terms = [(f, w[i, f]) for f in sub if w[i, f] > 0.0]
            else:
                mx = max(beta[i, f] for f in sub)
                terms = [(f, math.exp(beta[i, f] - mx)) for f in sub if beta[i, f] > -np.inf]
                tot = 0.0
                for _, x in terms:
                    tot += x
            u *= tot
            cum, pick = 0.0, -1
            for f, x in terms:
                pick = f
                cum += x
                if u < cum:
                    break
            g = int(fam[pick])
            out[t, i] = (g & ((1 << i) - 1)) | ((g >> i) << (i + 1))
    return out


# ---------------------------------------------------------------- cg: exact cell scatter (joint cells, 2026-11-27)

def exact_cell_scatter(x, idx, G):
    """The centred scatter matrix of each cell g's rows (idx[r] = g) in exact rational
    arithmetic (fractions of the float64 inputs), as floats: (G, n, n) nested lists."""
    from fractions import Fraction

    n = len(x[0])
    out = []
    for g in range(G):
        rows = [[Fraction(float(v)) for v in x[r]] for r in range(len(x)) if idx[r] == g]
        mu = [sum(rw[a] for rw in rows) / len(rows) for a in range(n)]
        out.append([[float(sum((rw[a] - mu[a]) * (rw[b] - mu[b]) for rw in rows)) for b in range(n)]
                    for a in range(n)])
    return out


# ------------------------------------------------------------------------ numerical audit
#
# BGe and CG local scores with the posterior scatter matrices and their determinants in
# exact rational arithmetic (fractions of the float64 inputs, so no rounding of the data's
# centring or of the determinant): the closed forms of bigbn/scores/bge.py (Kuipers, Moffa
# & Heckerman 2014) and of docs/posterior.md "Mixed data", with ν the exact column means.
# Only the log-gammas and the final logs are float64 (math.lgamma; the log of a fraction as
# the log of its numerator less that of its denominator), unless ``dps`` is given: then
# they, and every sum up to the local score's last difference, are mpmath numbers of that
# many digits, and the hyperparameters enter as the fractions they are. At large α_w or
# α_μ (1e6 .. 1e8) the terms a0·l·log t, a1·log det R and the log-gammas are each near
# 1e9 nats, so float64 would round the reference itself by 1e-7 nats.

def _log_fraction(x, dps=None):
    if dps:
        import mpmath

        return mpmath.log(x.numerator) - mpmath.log(x.denominator)  # at the caller's mp.dps
    return math.log(x.numerator) - math.log(x.denominator)


def _mpf(x):
    """A Fraction (or int) as an mpmath number, rounded once at the current precision."""
    import mpmath

    return mpmath.mpf(x.numerator) / x.denominator


def _lgamma(x, dps=None):
    """log Γ(x): math.lgamma of float(x), or at ``dps`` digits mpmath's of x itself (a Fraction
    or an int, exactly)."""
    if dps:
        import mpmath

        return mpmath.loggamma(_mpf(x))
    return math.lgamma(float(x))


def _log_pi(dps=None):
    if dps:
        import mpmath

        return mpmath.log(mpmath.pi)
    return math.log(math.pi)


def _det_fraction(M):
    """The determinant of a square matrix of Fractions (lists), by exact elimination."""
    from fractions import Fraction

    M = [row[:] for row in M]
    det = Fraction(1)
    for j in range(len(M)):
        p = next((i for i in range(j, len(M)) if M[i][j] != 0), None)
        if p is None:
            return Fraction(0)
        if p != j:
            M[j], M[p] = M[p], M[j]
            det = -det
        det *= M[j][j]
        for i in range(j + 1, len(M)):
            f = M[i][j] / M[j][j]
            for c in range(j, len(M)):
                M[i][c] -= f * M[j][c]
    return det


def exact_nw_log_marginal(rows, Y, n, alpha_mu, alpha_w, t, nu, dps=None):
    """log p_NW(D_Y) of ``rows`` (lists of Fractions) on the columns Y: −lm/2 log π
    + l/2 log(α_μ/(m + α_μ)) + Σ_j [lgamma(a1 − j/2) − lgamma(a0 − j/2)] + a0 l log t
    − a1 log det R_YY, a0 = (α_w − n + l)/2, a1 = a0 + m/2, R = t·I + S_m +
    (α_μ m/(α_μ + m))(ν − x̄)(ν − x̄)ᵀ; α_μ, α_w, t and ν (all n columns) Fractions.
    dps: every log and log-gamma at that many digits (mpmath), a0 and a1 exact, the
    result an mpmath number (section comment); else float64's."""
    from fractions import Fraction

    m, l = len(rows), len(Y)
    if l == 0:
        return 0.0
    mean = [sum(r[j] for r in rows) / m for j in Y]
    d = [nu[j] - mean[a] for a, j in enumerate(Y)]
    w = alpha_mu * m / (alpha_mu + m)
    R = [[t * (a == b) + sum((r[ja] - mean[a]) * (r[jb] - mean[b]) for r in rows) + w * d[a] * d[b]
          for b, jb in enumerate(Y)] for a, ja in enumerate(Y)]
    if dps:
        a0 = Fraction(alpha_w - n + l) / 2
        a1 = a0 + Fraction(m, 2)
        return (-_mpf(Fraction(l * m, 2)) * _log_pi(dps) + l * _log_fraction(alpha_mu / (m + alpha_mu), dps) / 2
                + sum(_lgamma(a1 - Fraction(j, 2), dps) - _lgamma(a0 - Fraction(j, 2), dps) for j in range(l))
                + _mpf(a0 * l) * _log_fraction(t, dps) - _mpf(a1) * _log_fraction(_det_fraction(R), dps))
    a0 = float((alpha_w - n + l) / 2)
    a1 = a0 + m / 2
    return (-l * m / 2 * math.log(math.pi) + l / 2 * _log_fraction(alpha_mu / (m + alpha_mu))
            + sum(math.lgamma(a1 - j / 2) - math.lgamma(a0 - j / 2) for j in range(l))
            + a0 * l * _log_fraction(t) - a1 * _log_fraction(_det_fraction(R)))


def _exact_local_scores(n, k, log_p, impossible=lambda i, ps: False):
    masks = family_masks(n - 1, k).tolist()
    out = np.empty((n, len(masks)))
    for i in range(n):
        for f, sq in enumerate(masks):
            ps = tuple(b for b in range(n) if unsqueeze(sq, i) >> b & 1)
            out[i, f] = -np.inf if impossible(i, ps) else float(log_p(tuple(sorted(ps + (i,)))) - log_p(ps))
    return out


@functools.lru_cache(None)
def _precision(dps):
    """A context manager for mpmath at dps digits (none: a no-op)."""
    import contextlib

    if not dps:
        return contextlib.nullcontext
    import mpmath

    return lambda: mpmath.workdps(dps)


def exact_bge_scores(data, k, alpha_mu=1.0, alpha_w=None, dps=None):
    """BGe local scores (n, F) in bigbn's layout, R and its determinants exact (above);
    dps: the logs and log-gammas too, at that many digits (mpmath)."""
    from fractions import Fraction

    data = np.asarray(data, dtype=np.float64)
    m, n = data.shape
    rows = [[Fraction(float(v)) for v in r] for r in data]
    am = Fraction(alpha_mu)
    aw = n + am + 1 if alpha_w is None else Fraction(alpha_w)
    t = am * (aw - n - 1) / (am + 1)
    nu = [sum(r[j] for r in rows) / m for j in range(n)]
    log_p = functools.lru_cache(None)(lambda Y: exact_nw_log_marginal(rows, Y, n, am, aw, t, nu, dps))
    with _precision(dps)():
        return _exact_local_scores(n, k, log_p)


def exact_cg_scores(data, arities, k, ess=1.0, alpha_mu=1.0, alpha_w=None, dps=None):
    """CG local scores (n, F) in bigbn's layout (arity 0: continuous), every p_NW exact
    (above) with the prior spread over the q configurations of the discrete part (α_μ/q,
    α_w(d) = n_c − 1 + (α_w − n_c + 1)/q, t/q, ν the exact means of all rows); dps: the
    logs and log-gammas (the Dirichlet part's too, ess/q exactly) at that many digits."""
    from fractions import Fraction

    data = np.asarray(data, dtype=np.float64)
    m, n = data.shape
    cont = [j for j in range(n) if arities[j] == 0]
    n_c = len(cont)
    rows = [[Fraction(float(data[r, j])) for j in cont] for r in range(m)]
    am = Fraction(alpha_mu)
    aw = n_c + am + 1 if alpha_w is None else Fraction(alpha_w)
    t = am * (aw - n_c - 1) / (am + 1)
    nu = [sum(r[a] for r in rows) / m for a in range(n_c)]

    @functools.lru_cache(None)
    def log_p(S):
        D = [j for j in S if arities[j] > 0]
        C = [cont.index(j) for j in S if arities[j] == 0]
        q = math.prod(int(arities[j]) for j in D)
        cells = {}
        for r in range(m):
            cells.setdefault(tuple(int(data[r, j]) for j in D), []).append(r)
        total = 0.0
        if D:
            e = Fraction(ess) if dps else ess
            a = e / q
            total += _lgamma(e, dps) - _lgamma(e + m, dps) + sum(
                _lgamma(a + len(c), dps) - _lgamma(a, dps) for c in cells.values())
        if C:
            for c in cells.values():
                total += exact_nw_log_marginal([rows[r] for r in c], C, n_c, am / q, n_c - 1 + (aw - n_c + 1) / q,
                                               t / q, nu, dps)
        return total

    with _precision(dps)():
        return _exact_local_scores(n, k, log_p, lambda i, ps: arities[i] > 0 and any(arities[p] == 0 for p in ps))


def undirected_auc_by_pairs(P, adjacency, lagged=()):
    """The paper's undirected-edge AUC (section 5.1) the slow way: over every true pair
    {u, v} (an arc either way) and every other pair, the chance that the true one scores
    more than the other, P(u->v) + P(v->u), ties counting one half. ``lagged``: nodes of a
    dynamic network that are never children; a pair of two of them is no question and is
    left out. Returns the AUC as an exact Fraction of the pair counts."""
    from fractions import Fraction

    n = len(P)
    lagged = set(lagged)
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if not (u in lagged and v in lagged)]
    score = {e: float(P[e[0]][e[1]]) + float(P[e[1]][e[0]]) for e in pairs}
    true = [e for e in pairs if adjacency[e[0]][e[1]] or adjacency[e[1]][e[0]]]
    false = [e for e in pairs if e not in true]
    wins = sum(2 if score[a] > score[b] else 1 if score[a] == score[b] else 0 for a in true for b in false)
    return Fraction(wins, 2 * len(true) * len(false))


# ---------------------------------------------------------------- review53: jkl rebase's best usable family

def best_alive_score(exact: dict, alive):
    """The largest exact score (``exact``: mask -> Decimal) of a family ``alive(mask)`` holds,
    by asking of every family; None when none is alive."""
    live = [x for g, x in exact.items() if alive(g)]
    return max(live) if live else None


# ------------------------------------------------ disk counted in file-system blocks (plan53)

def workdir_blocks(root):
    """Bytes a folder occupies on disk, as ``du`` counts them: the blocks of every file
    and folder under it, itself included (st_blocks, in 512-byte units)."""
    import os

    total = 0
    for where, _, files in os.walk(root):
        total += os.lstat(where).st_blocks * 512
        for f in files:
            try:
                total += os.lstat(os.path.join(where, f)).st_blocks * 512
            except OSError:  # deleted meanwhile
                pass
    return total


# ----------------------------------------------- loose54: levels holding a control character

def holds_control(values) -> list[bool]:
    """Which strings hold a C0 or C1 control, DEL, U+2028 or U+2029 (`io.data.NOT_IN_NAME`),
    by looking at every character."""
    return [any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029" for c in v) for v in values]
# ------------------------------------------ exact54: scores of the decimal cells themselves

def exact_bge_scores_of_cells(cells, k, alpha_mu=1.0, dps=50):
    """BGe local scores (n, F) in bigbn's layout of the numbers the decimal strings ``cells``
    (m rows of n strings) spell, with no float64 on the way: the cells as exact fractions,
    R and its determinants exact, the logs and log-gammas at ``dps`` digits (mpmath; ν the
    exact column means, α_w the default n + α_μ + 1, both exact), as `exact_bge_scores`
    does for float64 data."""
    from decimal import Decimal
    from fractions import Fraction

    rows = [[Fraction(Decimal(c)) for c in r] for r in cells]
    m, n = len(rows), len(rows[0])
    am = Fraction(alpha_mu)
    aw = n + am + 1
    t = am * (aw - n - 1) / (am + 1)
    nu = [sum(r[j] for r in rows) / m for j in range(n)]
    log_p = functools.lru_cache(None)(lambda Y: exact_nw_log_marginal(rows, Y, n, am, aw, t, nu, dps))
    with _precision(dps)():
        return _exact_local_scores(n, k, log_p)


def exact_scatter_of_floats(data):
    """The scatter matrix about the mean, S = Σ_t (x_t − x̄)(x_t − x̄)ᵀ, of float64 data (m, n),
    exactly: a list of n lists of Fractions. Each column is read as integers times a power
    of 2 (every float64 is), its sums and cross-products summed as Python integers, so
    that 10^6 rows take seconds (Fractions row by row, as `exact_nw_log_marginal` sums
    them, minutes)."""
    from fractions import Fraction

    data = np.asarray(data, dtype=np.float64)
    m, n = data.shape
    cols = []
    for j in range(n):
        mant, exp = np.frexp(data[:, j])
        ints = (mant * 2.0**53).astype(np.int64).tolist()  # exact: |mant| < 1
        low = int(exp.min()) - 53
        cols.append(([v << int(e - 53 - low) for v, e in zip(ints, exp.tolist())], low))
    sums = [sum(x) for x, _ in cols]
    S = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            cross = sum(a * b for a, b in zip(cols[i][0], cols[j][0]))
            S[i][j] = S[j][i] = Fraction(m * cross - sums[i] * sums[j], m) * Fraction(2) ** (cols[i][1] + cols[j][1])
    return S


def exact_bge_scores_many_rows(data, k, alpha_mu=1.0, alpha_w=None, dps=50):
    """`exact_bge_scores` (ν the column means, R and its determinants exact, logs at ``dps``
    digits) by `exact_scatter_of_floats`, for many rows."""
    from fractions import Fraction

    data = np.asarray(data, dtype=np.float64)
    m, n = data.shape
    S = exact_scatter_of_floats(data)
    am = Fraction(alpha_mu)
    aw = n + am + 1 if alpha_w is None else Fraction(alpha_w)
    t = am * (aw - n - 1) / (am + 1)

    @functools.lru_cache(None)
    def log_p(Y):
        l = len(Y)
        if l == 0:
            return 0
        R = [[t * (a == b) + S[i][j] for b, j in enumerate(Y)] for a, i in enumerate(Y)]
        a0 = Fraction(aw - n + l) / 2
        a1 = a0 + Fraction(m, 2)
        return (-_mpf(Fraction(l * m, 2)) * _log_pi(dps) + l * _log_fraction(am / (m + am), dps) / 2
                + sum(_lgamma(a1 - Fraction(j, 2), dps) - _lgamma(a0 - Fraction(j, 2), dps) for j in range(l))
                + _mpf(a0 * l) * _log_fraction(t, dps) - _mpf(a1) * _log_fraction(_det_fraction(R), dps))

    with _precision(dps)():
        return _exact_local_scores(n, k, log_p)


# ----------------------------------------------------------- review55: a tab in a level

def holds_level_control(values) -> list[bool]:
    """Which strings hold a character a level may not (`io.data.NOT_IN_LEVEL`): a C0 control
    but the tab, a C1 control, DEL, U+2028 or U+2029, by looking at every character."""
    return [any((ord(c) < 0x20 and c != "\t") or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029" for c in v)
            for v in values]
