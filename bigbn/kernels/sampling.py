"""Numba kernels of the exact DAG sampler (`bigbn.sample`); pure arithmetic, no I/O.

A sample is drawn backwards from S = V (He, Tian & Wu 2016; Friedman & Koller 2003 for the
parents given the order): the last node i of S is drawn with probability
α_i(S−i) L(S−i) / L(S), its parent set G ⊆ S−i with probability β_i(G) / α_i(S−i), and
S ← S − i, until S = ∅. This draws (order, DAG) from the exact joint posterior of the
order-modular model, so the DAGs are i.i.d. from p(G | x).

Out of core: a step only moves to a smaller subset, so all samples advance together in one
descending sweep over the chunks of L. A sample in chunk H at offset o chooses among the
nodes of S in ascending node order with one uniform u: the low nodes i < c (S − i is in the
same chunk, read now) and then the high nodes c + b, b ∈ H (S − (c+b) is at the same offset
of chunk H − 2^b, a later chunk of the sweep). If u falls beyond the low nodes, the sample
waits ("pending") with u and its running cumulative sum, and each candidate chunk H − 2^b
adds its term when the sweep reaches it (in ascending b, which is descending chunk id:
the sweep order). The arithmetic is the same sequence of additions whatever the chunk
bits, so a seed gives the same samples for every lattice (up to decisions within a few
ulps of a boundary, where tables of different lattices differ in their last bits).

α_i(S − i) is computed at the sets S the samples visit only (`alphas_at`: one pass over
the subsets of S with at most k nodes gives every i ∈ S, memoised per S), not per chunk:
the chunks a sweep visits hold far more sets than its samples do. Where a set's pass
would cost too much (large k, or many samples on a small lattice: `point_alpha_pays`),
α is built per visited chunk instead (`walk_chunk_tables`, `advance_pending_tables`).

A u at or beyond the computed total (possible only by rounding: the exact total is 1) is
rejected and the sample is drawn again from S = V with the next attempt's random numbers.

Random numbers are a counter-based hash (splitmix64) of (seed, sample, attempt, step,
purpose), so they do not depend on the processing order.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

NEG_INF = -np.inf
ACTIVE, PENDING, DONE, REJECTED = 0, 1, 2, 3
from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.kernels.bits import lowest_bit as _lowest_bit

_KW = dict(cache=True, nogil=True)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(**_KW)
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(**_KW)
def uniform(seed, t, attempt, step, kind):
    """A uniform double in [0, 1) determined by (seed, t, attempt, step, kind) only."""
    z = _mix(np.uint64(seed) + _GOLDEN)
    z = _mix(z ^ (np.uint64(t) * _GOLDEN))
    z = _mix(z ^ ((np.uint64(attempt) << np.uint64(16)) | (np.uint64(step) << np.uint64(2))
                  | np.uint64(kind)))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(**_KW)
def uniforms(seed, first, attempt, step, kind):
    """``uniform(seed, first + t, attempt[t], step, kind)`` for every sample t: float64 (T,)."""
    out = np.empty(attempt.size)
    for t in range(attempt.size):
        out[t] = uniform(seed, first + t, attempt[t], step, kind)
    return out


@njit(**_KW)
def _place(t, node, a, cur, step, nodes, preds, alphas):
    """Place ``node`` as step step[t] of sample t: its set before it (its possible parents)
    into preds and a = log α_node(that set) into alphas (`draw_parents`' totals)."""
    j = step[t]
    nodes[t, j] = node
    cur[t] = cur[t] & ~(np.int64(1) << node)
    preds[t, j] = cur[t]
    alphas[t, j] = a
    step[t] = j + 1


#: Most slots of the memo of `point_alpha` (sets S, each with α_i(S − i) of every node):
#: when it fills to 3/4 it is emptied (its values are a function of S, so that costs
#: recomputation only).
MEMO_SLOTS = 1 << 17


def point_alpha_pays(n: int, k: int, T: int) -> bool:
    """Whether α at the visited sets (`alphas_at`) beats α per visited chunk for T samples
    of n nodes with at most k parents: a set costs up to C(n, ≤ k) additions of n-wide rows
    and the samples visit up to T n sets, where the chunks hold n 2^(n−1) values of α built
    by a k-truncated transform. The visited sets are far fewer than T n (65 048 of 240 000
    at n = 24), so the rule is C(n, ≤ k) · T ≤ 2^(n+4): true for k = 3 and T = 10 000 from
    n = 20 on; false for large k (C(n, ≤ k) → 2^n) or many samples on a small lattice."""
    return sum(math.comb(n, j) for j in range(min(k, n) + 1)) * T <= 1 << (n + 4)


def memo_slots(visits: int) -> int:
    """Memo slots for about ``visits`` sets: a power of two, 2^10 .. MEMO_SLOTS."""
    return 1 << min(max(int(visits) * 2, 1 << 10).bit_length(), MEMO_SLOTS.bit_length() - 1)


def _cum_binomials(nbits: int, k: int) -> np.ndarray:
    """cb[p, r] = Σ_{s ≤ r} C(p, s), p < max(nbits, 1), r ≤ k: the ranks of `_family_ranks`."""
    cb = np.zeros((max(nbits, 1), k + 1), dtype=np.int64)
    for p in range(max(nbits, 1)):
        for r in range(k + 1):
            cb[p, r] = sum(math.comb(p, s) for s in range(r + 1))
    return cb


def point_alpha(beta, fam, k: int, slots: int = MEMO_SLOTS):
    """The state of `alphas_at` for the scores beta (n, F) of the families ``fam`` (all
    squeezed masks of at most k of n − 1 bits, ascending: `families.family_masks`), a
    tuple for the sweep's kernels: (wt, gm, beta, cbs, cbn, k, keys, vals, fill, pos,
    ranks, acc, rows).

    gm[i] = max_f β_i(f); wt[R, i] = exp(β_i(G) − gm[i]) for the family G ∌ i of rank R
    among the unsqueezed masks of ≤ k of n bits (0 where i ∈ G), so one pass over the
    subsets G ⊆ S adds every node's terms at once; cbs, cbn: `_cum_binomials` of n − 1 and
    n bits; keys, rows, vals, fill: the memo (S → α_i(S − i) for every i: an
    open-addressing table of the sets, -1 empty, each slot's row of vals in rows; the rows
    are handed out in order, so the memory touched is the sets memoised, not the table's
    size: at n = 20 a 2^17-slot table's scattered rows touched 21 MB of fresh pages for
    ≈ 30 000 sets); pos, ranks, acc: scratch."""
    from bigbn.kernels.families import family_masks

    beta = np.ascontiguousarray(beta, dtype=np.float64)
    fam = np.asarray(fam, dtype=np.int64)
    n, F = beta.shape
    if n > 62:
        raise ValueError(f"point α of {n} nodes: at most 62")
    full = family_masks(n, min(k, n))
    gm = np.full(n, NEG_INF)
    wt = np.zeros((full.size, n))
    for i in range(n):
        if np.any(beta[i] > NEG_INF):
            gm[i] = beta[i].max()
            unsq = (fam & ((1 << i) - 1)) | ((fam >> i) << (i + 1))
            wt[np.searchsorted(full, unsq), i] = np.exp(beta[i] - gm[i])
    return own_memo((wt, gm, beta, _cum_binomials(n - 1, k), _cum_binomials(n, k), np.int64(k)), slots)


def own_memo(pa, slots: int = MEMO_SLOTS):
    """A `point_alpha` state that shares pa's weights (read only) and has its own empty
    memo of ``slots`` sets and its own scratch: one per thread that walks samples beside
    another (a memo row is a function of its set alone, so which memo computed it never
    changes a value)."""
    wt, gm, beta, cbs, cbn, k = pa[:6]
    n = gm.shape[0]
    return (wt, gm, beta, cbs, cbn, k, np.full(slots, -1, dtype=np.int64), np.empty((memo_rows(slots), n)),
            np.zeros(1, dtype=np.int64), np.empty(64, dtype=np.int64), np.empty(wt.shape[0], dtype=np.int64),
            np.empty(n), np.empty(slots, dtype=np.int64))


def memo_rows(slots: int) -> int:
    """Rows of values a memo of ``slots`` slots holds: it is emptied at 3/4 full."""
    return 3 * slots // 4 + 1


@njit(**_KW)
def _family_ranks(U, cb, k, pos, ranks):
    """The ranks (indices in the ascending list of masks with ≤ k bits) of every subset of
    U with at most k bits, into ranks; returns how many. Subsets are built by adding bits
    in descending order, so that a bit p added below j chosen ones adds cb[p, k − j] to
    the rank: the masks that agree above p, lack p and have ≤ k − j bits below it."""
    m = 0
    x = U
    while x:
        pos[m] = _lowest_bit(x)
        x &= x - 1
        m += 1
    ranks[0] = 0
    cnt = 1
    if k == 0 or m == 0:
        return cnt
    cur = np.empty(k, dtype=np.int64)
    base = np.empty(k, dtype=np.int64)
    d = 0
    cur[0] = m - 1
    base[0] = 0
    while d >= 0:
        if cur[d] < 0:
            d -= 1
            if d >= 0:
                cur[d] -= 1
            continue
        r = base[d] + cb[pos[cur[d]], k - d]
        ranks[cnt] = r
        cnt += 1
        if d + 1 < k and cur[d] > 0:
            base[d + 1] = r
            cur[d + 1] = cur[d] - 1
            d += 1
        else:
            cur[d] -= 1
    return cnt


@njit(**_KW)
def _alpha_rescaled(beta_row, cbs, k, pos, ranks, U):
    """log α_i(U) for a squeezed mask U, rescaled by the best family ⊆ U: for the U whose
    families all lie so far below node i's best that their sum in `alphas_at` lost
    precision to subnormals (or is 0: then -inf if no family ⊆ U has a score)."""
    cnt = _family_ranks(U, cbs, k, pos, ranks)
    mx = NEG_INF
    for j in range(cnt):
        if beta_row[ranks[j]] > mx:
            mx = beta_row[ranks[j]]
    if mx == NEG_INF:
        return NEG_INF
    tot = 0.0
    for j in range(cnt):
        tot += math.exp(beta_row[ranks[j]] - mx)
    return mx + math.log(tot)


@njit(**_KW)
def alphas_at(pa, S):
    """The memo row of set S (a full mask): vals[row, i] = log α_i(S − i) =
    log Σ_{G ⊆ S − i, |G| ≤ k} exp β_i(G) for every node i ∈ S (other entries unset).
    Computed on a miss by one pass over the subsets of S with ≤ k bits (`point_alpha`);
    returns the row."""
    wt, gm, beta, cbs, cbn, k, keys, vals, fill, pos, ranks, acc, rows = pa
    mask = keys.shape[0] - 1
    h = S * np.int64(-7046029254386353131)  # Fibonacci hashing (wraps mod 2^64)
    s = (h ^ (h >> 29)) & mask
    while keys[s] != -1:
        if keys[s] == S:
            return rows[s]
        s = (s + 1) & mask
    if 4 * (fill[0] + 1) > 3 * keys.shape[0]:
        keys[:] = -1
        fill[0] = 0
        s = (h ^ (h >> 29)) & mask
    row = fill[0]
    n = acc.shape[0]
    cnt = _family_ranks(S, cbn, k, pos, ranks)
    acc[:] = 0.0
    for j in range(cnt):
        r = ranks[j]
        for i in range(n):
            acc[i] += wt[r, i]
    x = S
    while x:
        i = _lowest_bit(x)
        x &= x - 1
        if acc[i] > 1e-278:
            vals[row, i] = gm[i] + math.log(acc[i])
        else:
            P = S & ~(np.int64(1) << i)
            U = (P & ((np.int64(1) << i) - 1)) | ((P >> (i + 1)) << i)
            vals[row, i] = _alpha_rescaled(beta[i], cbs, k, pos, ranks, U)
    keys[s] = S
    rows[s] = row
    fill[0] += 1
    return row


@njit(**_KW)
def _wait_high(t, H, u, cum, logL, status, key, pu, pcum, plog, pbit):
    """No low node of chunk H took sample t (u beyond their terms): it waits, PENDING, for
    the lowest high node of H, keeping u, the terms' sum and log L; REJECTED if H has none
    (u beyond the total by rounding)."""
    if H == 0:
        status[t] = REJECTED
        key[t] = -1
        return
    b = _lowest_bit(H)
    status[t] = PENDING
    pu[t] = u
    pcum[t] = cum
    plog[t] = logL
    pbit[t] = b
    key[t] = H - (np.int64(1) << b)


@njit(**_KW)
def _step_low(t, H, o, L, alpha, u, cur, step, status, key, pu, pcum, plog, pbit, nodes, preds, alphas):
    """One step of ACTIVE sample t at offset o of chunk H: the low node i ∈ o whose term
    exp(α[i] + L[o − i] − L[o]) takes u (alpha[i]: α_i(S − i)), placed, True; else the
    sample waits for the high nodes (`_wait_high`), False."""
    logL = L[o]
    cum = 0.0
    rest = o
    while rest:
        i = _lowest_bit(rest)
        rest &= rest - 1
        pp = o - (np.int64(1) << i)
        if L[pp] == NEG_INF:
            continue
        w = alpha[i] + L[pp]
        if w > NEG_INF:
            cum += math.exp(w - logL)
            if u < cum:
                _place(t, i, alpha[i], cur, step, nodes, preds, alphas)
                return True
    _wait_high(t, H, u, cum, logL, status, key, pu, pcum, plog, pbit)
    return False


@njit(**_KW)
def _take_high(t, H, v, a, logL, cur, step, status, key, pu, pcum, plog, nodes, preds, alphas):
    """Offer high node v, whose term is log w = a + logL (a = log α_v(S − v), logL =
    log L(S − v)), to PENDING sample t: whether it took it (then ACTIVE again, in chunk H)."""
    w = a + logL
    if w > NEG_INF:
        pcum[t] += math.exp(w - plog[t])
        if pu[t] < pcum[t]:
            _place(t, v, a, cur, step, nodes, preds, alphas)
            status[t] = ACTIVE
            key[t] = H
            return True
    return False


@njit(**_KW)
def _next_high(t, b, c, cur, status, key, pbit):
    """High node c + b did not take PENDING sample t: it waits for the next high node of
    its set, or is REJECTED if there is none (u beyond the total by rounding)."""
    hi = cur[t] >> c
    above = hi & ~((np.int64(2) << b) - 1)
    if above == 0:
        status[t] = REJECTED
        key[t] = -1
    else:
        nb = _lowest_bit(above)
        pbit[t] = nb
        key[t] = hi - (np.int64(1) << nb)


@njit(**_KW)
def walk_chunk(H, c, L, pa, seed, first, cur, step, attempt, status, key,
               pu, pcum, plog, pbit, nodes, preds, alphas):
    """Advance every ACTIVE sample of chunk H as far as chunk H allows.

    L: float64 (2^c,) forward chunk H; pa: the α of the run's scores (`point_alpha`),
    computed at the sets the samples visit only (memoised); first: the global index
    of sample 0 of these arrays (its random numbers are sample first + t's). A sample either reaches
    ∅ (DONE), chooses a low node and continues in H, or goes PENDING for the high nodes.
    A node placed at step j of sample t has its log α at its set before it in
    alphas[t, j] (`_place`).
    """
    lowmask = (np.int64(1) << c) - 1
    vals = pa[7]
    for t in range(cur.shape[0]):
        if status[t] != ACTIVE or key[t] != H:
            continue
        while True:
            S = cur[t]
            if S == 0:
                status[t] = DONE
                key[t] = -1
                break
            u = uniform(seed, first + t, attempt[t], step[t], 0)
            if not _step_low(t, H, S & lowmask, L, vals[alphas_at(pa, S)], u, cur, step, status, key,
                             pu, pcum, plog, pbit, nodes, preds, alphas):
                break


@njit(**_KW)
def advance_pending(H, b, c, L, pa, cur, step, status, key, pu, pcum, plog, pbit,
                    nodes, preds, alphas):
    """Offer high node c + b to every PENDING sample waiting for chunk H = (its chunk) − 2^b.

    L: forward chunk H; pa: as for `walk_chunk` (α_{c+b} at S − (c+b), the set at the
    sample's offset of chunk H). A sample takes node c + b if its
    u falls in this term; otherwise it waits for its next high bit, or is REJECTED when
    there is none (u beyond the total by rounding).
    """
    lowmask = (np.int64(1) << c) - 1
    for t in range(cur.shape[0]):
        if status[t] != PENDING or key[t] != H or pbit[t] != b:
            continue
        o = cur[t] & lowmask
        if L[o] > NEG_INF and _take_high(t, H, c + b, pa[7][alphas_at(pa, cur[t]), c + b], L[o],
                                         cur, step, status, key, pu, pcum, plog, nodes, preds, alphas):
            continue
        _next_high(t, b, c, cur, status, key, pbit)


@njit(**_KW)
def walk_chunk_tables(H, c, L, alpha_low, seed, first, cur, step, attempt, status, key,
               pu, pcum, plog, pbit, nodes, preds, alphas):
    """`walk_chunk` with α of the low nodes as a table of chunk H (built per chunk, as the
    forward task does): the sweep's path where `point_alpha_pays` says no.

    L: float64 (2^c,) forward chunk H; alpha_low: float64 (c, 2^(c-1)), α_i on chunk H
    for the low nodes i < c (as the forward recursion reads it); first: the global index
    of sample 0 of these arrays (its random numbers are sample first + t's). A sample either reaches
    ∅ (DONE), chooses a low node and continues in H, or goes PENDING for the high nodes.
    """
    lowmask = (np.int64(1) << c) - 1
    row = np.empty(max(c, 1))
    for t in range(cur.shape[0]):
        if status[t] != ACTIVE or key[t] != H:
            continue
        while True:
            S = cur[t]
            if S == 0:
                status[t] = DONE
                key[t] = -1
                break
            o = S & lowmask
            rest = o
            while rest:  # α_i(S − i) of the low nodes i ∈ S, from the chunk's table
                i = _lowest_bit(rest)
                rest &= rest - 1
                pp = o - (np.int64(1) << i)
                row[i] = alpha_low[i, (pp & ((np.int64(1) << i) - 1)) | ((pp >> (i + 1)) << i)]
            u = uniform(seed, first + t, attempt[t], step[t], 0)
            if not _step_low(t, H, o, L, row, u, cur, step, status, key, pu, pcum, plog, pbit, nodes, preds,
                             alphas):
                break


@njit(**_KW)
def advance_pending_tables(H, b, c, L, alpha_span, cur, step, status, key, pu, pcum, plog, pbit,
                    nodes, preds, alphas):
    """`advance_pending` with α_{c+b} as a table (a span of 2^c entries of chunk pair H),
    for the path of `walk_chunk_tables`.

    L: forward chunk H; alpha_span: float64 (2^c,) α_{c+b} on the squeezed chunk pair of
    chunk H (offset o of the span is S − (c+b) at offset o). A sample takes node c + b if its
    u falls in this term; otherwise it waits for its next high bit, or is REJECTED when
    there is none (u beyond the total by rounding).
    """
    lowmask = (np.int64(1) << c) - 1
    for t in range(cur.shape[0]):
        if status[t] != PENDING or key[t] != H or pbit[t] != b:
            continue
        o = cur[t] & lowmask
        if _take_high(t, H, c + b, alpha_span[o], L[o], cur, step, status, key, pu, pcum, plog, nodes, preds,
                      alphas):
            continue
        _next_high(t, b, c, cur, status, key, pbit)


@njit(**_KW)
def draw_parents(beta, fam, nodes, preds, alphas, seed, first, attempt, parents):
    """Parent set of every placed node: G ⊆ S − i with probability β_i(G) / α_i(S − i).

    beta: (n, F) log scores, fam: (F,) squeezed family masks in ascending order (so the
    families within the lowest b bits are a prefix); nodes/preds: (T, n) the node placed
    at each step and the set before it (its possible parents, a full mask); alphas: (T, n)
    log α of that node at that set, as the sweep computed it to place the node
    (`_place`): the total of the draw; first: the global index of row 0 (sample first +
    t's random numbers). Serial: callers split the rows over threads (it releases the GIL).
    parents: int64 (T, n) output, full parent masks.

    The weights w = exp(β_i(G) − max_G β_i(G)) are computed once per node, so a draw is one
    pass of additions over the families within U's bits, up to the first whose running
    sum exceeds u · exp(log α − max β_i); a u beyond the sum by rounding takes the last
    family of positive weight. Where that total is at most 1e-278 (every family ⊆ U below
    the node's best by more than 640 nats: the weights would lose precision to
    subnormals), the draw rescales by the best family ⊆ U instead and sums the total
    itself.
    """
    T, n = nodes.shape
    F = fam.shape[0]
    w = np.zeros((n, F))
    gms = np.full(n, NEG_INF)
    for i in range(n):
        gm = NEG_INF
        for f in range(F):
            if beta[i, f] > gm:
                gm = beta[i, f]
        gms[i] = gm
        if gm > NEG_INF:
            for f in range(F):
                if beta[i, f] > NEG_INF:
                    w[i, f] = math.exp(beta[i, f] - gm)
    lim = np.empty(64, dtype=np.int64)  # lim[b]: how many families lie within the lowest b bits
    c = 0
    for b in range(64):
        while c < F and (b == 63 or fam[c] < (np.int64(1) << b)):
            c += 1
        lim[b] = c
    for t in range(T):
        for j in range(n):
            i = nodes[t, j]
            P = preds[t, j]
            U = (P & ((np.int64(1) << i) - 1)) | ((P >> (i + 1)) << i)
            hb = 0
            x = U
            while x:
                hb += 1
                x >>= 1
            end = lim[hb]
            tot = math.exp(alphas[t, j] - gms[i]) if gms[i] > NEG_INF else 0.0
            u = uniform(seed, first + t, attempt[t], j, 1)
            pick = -1
            if tot > 1e-278:
                u *= tot
                cum = 0.0
                for f in range(end):
                    if fam[f] & ~U == 0 and w[i, f] > 0.0:
                        pick = f
                        cum += w[i, f]
                        if u < cum:
                            break
            else:  # every family ⊆ U far below the node's best: rescale by the best of them
                mx = NEG_INF
                for f in range(end):
                    if fam[f] & ~U == 0 and beta[i, f] > mx:
                        mx = beta[i, f]
                tot = 0.0
                for f in range(end):
                    if fam[f] & ~U == 0 and beta[i, f] > NEG_INF:
                        tot += math.exp(beta[i, f] - mx)
                u *= tot
                cum = 0.0
                for f in range(end):
                    if fam[f] & ~U == 0 and beta[i, f] > NEG_INF:
                        pick = f
                        cum += math.exp(beta[i, f] - mx)
                        if u < cum:
                            break
            g = fam[pick]
            parents[t, i] = (g & ((np.int64(1) << i) - 1)) | ((g >> i) << (i + 1))


#: Bits per word of a parent set of more than 63 variables (`as_words`): the sign bit of
#: an int64 is never used, so a parent set of ≤ 63 variables is one word, its plain mask.
WORD_BITS = 63


def n_words(n: int) -> int:
    """Words per parent set of n variables."""
    return max(1, -(-n // WORD_BITS))


def as_words(masks: np.ndarray) -> np.ndarray:
    """Parent sets as words, int64 (T, n, W): a (T, n) array of masks is (T, n, 1)."""
    return masks[..., None] if masks.ndim == 2 else masks


def _like(masks: np.ndarray, words: np.ndarray) -> np.ndarray:
    return words[..., 0] if masks.ndim == 2 else words


def ancestors(parents, nodes):
    """Ancestor masks: out[t, v] holds u ⟺ u ⇝ v (a directed path) in sample t; parents
    as (T, n) masks or (T, n, W) words (bit u % 63 of word u // 63), and out alike.

    nodes[t, j] is the node placed at step j (the last one of the remaining set), so
    reversed steps are a topological order."""
    return _like(parents, _ancestors(as_words(parents), nodes))


@njit(**_KW)
def _ancestors(parents, nodes):
    T, n, W = parents.shape
    out = np.zeros((T, n, W), dtype=np.int64)
    for t in range(T):
        for j in range(n - 1, -1, -1):
            v = nodes[t, j]
            for w in range(W):
                p = parents[t, v, w]
                while p:
                    b = _lowest_bit(p)
                    p &= p - 1
                    u = w * WORD_BITS + b
                    for x in range(W):
                        out[t, v, x] |= out[t, u, x]
                    out[t, v, w] |= np.int64(1) << b
    return out


def markov_blankets(parents):
    """out[t, v] holds u ⟺ u is a parent, a child or a co-parent of a child of v; parents
    and out as for `ancestors`."""
    return _like(parents, _markov_blankets(as_words(parents)))


@njit(**_KW)
def _markov_blankets(parents):
    T, n, W = parents.shape
    out = np.zeros((T, n, W), dtype=np.int64)
    for t in range(T):
        for v in range(n):
            for x in range(W):
                out[t, v, x] = parents[t, v, x]
            for w in range(n):
                if parents[t, w, v // WORD_BITS] >> (v % WORD_BITS) & 1:
                    out[t, v, w // WORD_BITS] |= np.int64(1) << (w % WORD_BITS)
                    for x in range(W):
                        out[t, v, x] |= parents[t, w, x]
            out[t, v, v // WORD_BITS] &= ~(np.int64(1) << (v % WORD_BITS))
    return out


def weighted_bit_sums(masks, w):
    """S1[u, v] = Σ_t w_t [u ∈ masks[t, v]], S2 likewise with w_t²; masks as for
    `ancestors`."""
    return _weighted_bit_sums(as_words(masks), w)


@njit(**_KW)
def _weighted_bit_sums(masks, w):
    T, n, W = masks.shape
    s1 = np.zeros((n, n))
    s2 = np.zeros((n, n))
    for t in range(T):
        wt = w[t]
        for v in range(n):
            for x in range(W):
                m = masks[t, v, x]
                while m:
                    u = x * WORD_BITS + _lowest_bit(m)
                    m &= m - 1
                    s1[u, v] += wt
                    s2[u, v] += wt * wt
    return s1, s2
