"""Numba kernels of the engine: pure arithmetic on contiguous float64 chunks, no I/O.

Every value in and out is a natural logarithm; -inf is "zero"/"impossible". Inside, the
sums run on exp(value - scale): plain float64 where one scale provably holds a chunk or a
block, else extended-exponent numbers (mantissa and integer exponent, fastmath.py), so
nothing overflows, underflows or has to be redone at any number of rows. Each kernel works on one
chunk of the chunk lattice (DESIGN.md): a table over N-bit masks is cut by its high bits
into chunks of 2^c entries, chunk id H = mask >> c, offset o = mask & (2^c - 1).

Kernels (paper references are to Koivisto 2006):
- ``_alpha_chunk``    alpha_i(U) = logsumexp_{G ⊆ U, |G| ≤ k} beta_i(G) on one chunk (section 2):
                      beta is folded into the chunk's low bits over the high-part subsets
                      of the chunk id, then a k-truncated upward transform runs over the
                      low bits (section 4, the Koivisto–Sood variant). No cross-chunk work.
- ``_recursion_chunk`` the in-chunk part of the forward recursion
                      L(S) = logsumexp_{i∈S} alpha_i(S-i) + L(S-i) (eq. 2) and, mirrored,
                      of the backward one B(S) = logsumexp_{i∉S} alpha_i(S) + B(S+i),
                      B(V) = 0; B(S) = R(V-S) (section 3, stored by predecessor set so no
                      complement is ever read); ``_forward_chunk``/``_backward_chunk`` call it.
- ``_gamma_partial``  k-truncated downward transform (FTDMT, section 4) of one chunk of
                      s_v(S) = L(S) + B(S+v), scattered to the families whose high part
                      lies inside the chunk id: gamma_v(G) = logsumexp over chunks of these.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .fastmath import (_exp2_int, _exp_nonpos, _ext_add, _ext_add_run, _ext_from_log, _ext_norm, _lae_scalar,
                       _log_ext, _log_normal)

NEG_INF = -np.inf
# contract: FMA fusion, as fastmath.py is compiled with (same rounding when inlined).
_KW = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@njit(**_KW)
def _lae_into(acc, x, y):
    """acc[j] = log(exp(acc[j]) + exp(x[j] + y[j])) for all j; arrays of equal length.

    Branch-free (fastmath.py), so LLVM vectorises the loop."""
    for j in range(acc.shape[0]):
        acc[j] = _lae_scalar(acc[j], x[j] + y[j])


@njit(**_KW)
def _upward_truncated(x, ex, d, small, wide):
    """In place: x(T) <- Σ_{S ⊆ T} x(S) over d bits, x supported on |S| ≤ k (0 outside).

    wide: x is the extended-exponent pair (x, ex) (mantissas, exponents; fastmath.py);
    else x holds plain float64 values and ex is not used. x, ex: float64 (2^d,). small:
    int64 ascending masks with popcount ≤ k (over ≥ d-1 bits). Bits are processed low to
    high; after bit j only entries whose unprocessed part (bits > j) has ≤ k bits are
    non-zero, so each step visits 2^j · B(d-j-1, k) pairs in contiguous runs (paper
    section 4, O(k 2^d)).
    """
    for j in range(d):
        h = 1 << j
        limit = 1 << (d - j - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            src = m << (j + 1)
            if wide:
                _ext_add_run(x, ex, src + h, src, h)
            else:
                _add_run(x, src + h, src, h)


@njit(**_KW)
def _downward_truncated(x, ex, d, small, wide):
    """In place: x(T) <- Σ_{S ⊇ T} x(S) over d bits, correct for |T| ≤ k (FTDMT); x as
    for `_upward_truncated`.

    Bits are processed high to low; the processed (truncated) part is kept to ≤ k bits,
    the unprocessed low bits form contiguous runs. Entries with |T| > k are garbage.
    """
    for i in range(d - 1, -1, -1):
        h = 1 << i
        limit = 1 << (d - i - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            dst = m << (i + 1)
            if wide:
                _ext_add_run(x, ex, dst, dst + h, h)
            else:
                _add_run(x, dst, dst + h, h)


@njit(**_KW)
def _add_run(x, dst, src, h):
    """x[dst+o] += x[src+o] for o in range(h); the runs do not overlap (vectorises)."""
    xd = x[dst:dst + h]
    xs = x[src:src + h]
    for o in range(h):
        xd[o] += xs[o]


# One scale holds a chunk when its terms lie within _SPAN nats of the largest: each is then
# exp(z), z ≥ -700, a normal float64 (≥ 2^-1010) to full precision, and so is every sum.
# Wider chunks sum extended-exponent numbers instead (fastmath.py): as exact, about twice
# the memory traffic.
_SPAN = 700.0


@njit(**_KW)
def _alpha_chunk(beta_row, fam, chunk_id, d, small, out, ex):
    """alpha_i on one chunk of 2^d entries (chunk id = high bits of the squeezed mask U).

    beta_row: float64 (F,) log scores of node i; fam: int64 (F,) squeezed family masks;
    out: float64 (2^d,), overwritten; ex: float64 (2^d,) scratch. A family G = (G_high,
    G_low) contributes to the chunk iff G_high ⊆ chunk_id; it is folded into entry G_low,
    then the truncated upward transform over the d low bits sums over G_low ⊆ U_low: sums
    of exp(beta - s), s the largest contributing beta, plain float64 if every contributing
    beta lies within _SPAN of s, else extended-exponent numbers (mantissa in out,
    exponent in ex). Additions only; one log per entry returns to the log domain.
    Returns 1 if the chunk was wide (extended numbers), else 0.
    """
    lowmask = (np.int64(1) << d) - 1
    top = NEG_INF
    low = np.inf
    for f in range(fam.shape[0]):
        if ((fam[f] >> d) & ~chunk_id) == 0:
            b = beta_row[f]
            top = b if b > top else top
            low = b if (b < low and b > NEG_INF) else low
    wide = low - top < -_SPAN
    for o in range(out.shape[0]):
        out[o] = 0.0
    if wide:
        for o in range(out.shape[0]):
            ex[o] = NEG_INF
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            gl = g & lowmask
            if wide:
                bm, be = _ext_from_log(beta_row[f] - top)
                out[gl], ex[gl] = _ext_add(out[gl], ex[gl], bm, be)
            else:
                out[gl] += _exp_nonpos(beta_row[f] - top)
    _upward_truncated(out, ex, d, small, wide)
    if wide:
        for o in range(out.shape[0]):
            out[o] = top + _log_ext(out[o], ex[o])
    else:
        for o in range(out.shape[0]):
            x = out[o]
            out[o] = top + _log_normal(x) if x > 0.0 else NEG_INF
    return 1 if wide else 0


@njit(**_KW)
def _alpha_chunks(beta, fam, node, first_chunk, d, small, out):
    """alpha_node on consecutive chunks first_chunk, first_chunk+1, ...; out (len, ) float64.

    out.shape[0] must be a multiple of 2^d; used for the 2^c-entry spans the forward and
    backward stages need from high nodes. Returns how many chunks were wide.
    """
    size = np.int64(1) << d
    ex = np.empty(size)
    wide = 0
    for t in range(out.shape[0] // size):
        wide += _alpha_chunk(beta[node], fam, first_chunk + t, d, small, out[t * size:(t + 1) * size], ex)
    return wide


# Block size (bits) of the in-chunk recursions: entries are finalised 2^_BLOCK at a time,
# the lowest _BLOCK bits entry by entry (`_block_linear`, `_block_ext`), each higher bit
# i as runs of 2^i entries (`_online_run`). 6 measured 15 % faster than 5 at c = 20.
_BLOCK = 6


@njit(**_KW)
def _recursion_chunk(acc, alpha_low, out, forward):
    """In-chunk forward (L) or backward (B) recursion: one kernel, mirrored by ``forward``.

    acc: float64 (2^c,) the high-bit (cross-chunk) terms: logsumexp over high bits b ∈ H
         of alpha_{c+b} + L(chunk H-b) forward, over b ∉ H of alpha_{c+b} + B(chunk H+b)
         backward (log 1 at L(∅) resp. B(V)); alpha_low: float64 (c, 2^(c-1)), row i =
         alpha_i on the squeezed chunk of the same chunk id; out: (2^c,) L or B.
    forward:  L[o] = logsumexp(acc[o], alpha_low[i, squeeze(o, i)] + L[o - 2^i] for i ∈ o),
              offsets ascending (paper eq. 2);
    backward: B[o] = logsumexp(acc[o], alpha_low[i, squeeze(o, i)] + B[o + 2^i] for i ∉ o),
              offsets descending (section 3, B(S) = R(V - S)).
    Both read the neighbour o ^ 2^i and alpha at squeeze(o, i) (squeeze drops bit i), so
    the two differ only in which bits count ("active" bits) and in the order of offsets.

    Until an entry is final, out holds the max of its terms so far and a scratch array
    the sum of their exps below it (an online log-sum-exp). Entries are finalised in blocks of
    2^_BLOCK, in order; as soon as the first half of an aligned span of 2^(i+1) entries
    (i ≥ _BLOCK) is final, the bit-i terms of its whole second half are added: one
    contiguous run of 2^i entries of alpha_i and of the table (mirrored backward), a
    vectorised loop with one polynomial exp a term (fastmath.py). A block's own low bits
    depend on entries of the block itself, one after the other: `_block_linear` does them
    in plain float64 with one scale, a multiply-add a term, where that provably holds the
    block, and `_block_ext` with extended-exponent numbers where not. Returns the number
    of blocks of the latter kind ("wide").
    """
    c = alpha_low.shape[0]
    size = out.shape[0]
    B = min(c, _BLOCK)
    nb = 1 << B
    want = 1 if forward else 0  # the value of bit i in o for which i contributes
    sm = np.empty(size)
    for o in range(size):
        a = acc[o]
        out[o] = a
        sm[o] = 1.0 if a > NEG_INF else 0.0
    half = nb >> 1
    # the block's weights, plain (w) and as extended numbers (wm, we); column `half`
    # stays zero: the weight of an inactive bit
    w = np.zeros((B, half + 1))
    wm = np.zeros((B, half + 1))
    we = np.full((B, half + 1), NEG_INF)
    cw = np.empty(B)
    csum = np.empty(nb)
    lm = np.empty(nb)
    le = np.empty(nb)
    # per offset o and bit i < B: whether i is active, the neighbour o ^ 2^i and the index
    # squeeze(o, i) of the weight (o itself and the zero column where inactive), so that
    # the in-block loops run without branches
    act = np.zeros((nb, B))
    nbr = np.empty((nb, B), dtype=np.int64)
    wq = np.empty((nb, B), dtype=np.int64)
    for o in range(nb):
        for i in range(B):
            on = (o >> i) & 1 == want
            act[o, i] = 1.0 if on else 0.0
            nbr[o, i] = o ^ (1 << i) if on else o
            wq[o, i] = ((o & ((1 << i) - 1)) | ((o >> (i + 1)) << i)) if on else half
    wide = 0
    for blk in range(size // nb):
        base = blk * nb if forward else size - nb - blk * nb
        mx = out[base:base + nb]
        sb = sm[base:base + nb]
        if not _block_linear(alpha_low, out, base, B, forward, mx, sb, w, cw, csum, lm, act, nbr, wq):
            _block_ext(alpha_low, out, base, B, forward, mx, sb, wm, we, lm, le, nbr, wq)
            wide += 1
        done = (blk + 1) * nb  # entries final so far, counted from the start (from the end backward)
        i = B
        while i < c and (done >> i) & 1 == 0:  # i = trailing zeros of done
            i += 1
        if i < c:
            run = 1 << i
            if forward:  # final [done - run, done) → pending [done, done + run), bit i set;
                # squeeze(done + o, i) = (done - run)/2 + o (done - run is 2^(i+1)-aligned)
                _online_run(alpha_low[i], (done - run) >> 1, out, done - run, done, sm, run)
            else:  # final [size - done, size - done + run) → pending [size - done - run, size - done)
                dst = size - done - run  # 2^(i+1)-aligned: squeeze(dst + o, i) = dst/2 + o
                _online_run(alpha_low[i], dst >> 1, out, dst + run, dst, sm, run)
    return wide


@njit(**_KW)
def _online_run(alpha_row, q0, out, src, dst, sm, run):
    """Fold the terms alpha_row[q0 + o] + out[src + o] into the pending entries dst + o
    (max in out, sum of exps below it in sm), o < run; the runs do not overlap."""
    a = alpha_row[q0:q0 + run]
    x = out[src:src + run]
    m = out[dst:dst + run]
    s = sm[dst:dst + run]
    for o in range(run):
        v = a[o] + x[o]
        mo = m[o]
        e = _exp_nonpos(-abs(v - mo))  # NaN (both -inf) gives 0
        big = v > mo
        s[o] = s[o] * e + 1.0 if big else s[o] + e
        m[o] = v if big else mo


# A block's plain sums are exact when every entry's own high-bit terms are ≥ 2^-900 of
# the block's scale: see _block_linear.
_TINY = 2.0 ** -900
_LOG_TINY = -900 * 0.6931471805599453  # ≈ -623.8


@njit(**_KW)
def _block_linear(alpha_low, out, base, B, forward, mx, sm, w, cw, csum, lin, act, nbr, wq):
    """The in-block terms of one block of `_recursion_chunk` in plain float64 with one
    scale, if that provably holds the block (else False, nothing written: `_block_ext`).

    mx, sm: each entry's high-bit terms as max and sum of exps below it. With cw_i the
    largest alpha_i over the block (the 2^(B-1) entries alpha_i[base/2 + q], q < 2^(B-1),
    are all the block reads of it; 0 if all are -inf), C(o) the sum of cw_i over o's
    active bits and M the largest mx(o) - C(o), the values l(o) = exp(L(o) - C(o) - M)
    obey l(o) = sm(o)·exp(mx(o) - C(o) - M) + Σ_{i active} exp(alpha_i - cw_i)·l(o ^ 2^i),
    a multiply-add a term. Taken when every start value sm(o)·exp(mx(o) - C(o) - M) is
    ≥ 2^-900 (checked before any exp): every weight and start value is ≤ 1, so
    l(o) ≤ 1957 (the orderings of ≤ 6 bits), and the terms flushed to zero below e^-708
    change an l(o) ≥ 2^-900 by < 1957·e^-708·2^900 < 2^-110 relative. Written back as
    M + C(o) + log l(o). act, nbr, wq: the bit tables of `_recursion_chunk`; w: (B,
    2^(B-1) + 1) scratch whose last column is 0.
    """
    nb = 1 << B
    q0 = base >> 1  # squeeze(base + o, i) = base/2 + squeeze(o, i) for i < B
    for i in range(B):
        top = NEG_INF
        for q in range(nb >> 1):
            x = alpha_low[i, q0 + q]
            top = x if x > top else top
        cw[i] = top if top > NEG_INF else 0.0
    M = NEG_INF
    least = np.inf
    for o in range(nb):
        s = 0.0
        for i in range(B):
            s += act[o, i] * cw[i]
        csum[o] = s
        v = mx[o] - s
        M = v if v > M else M
        least = v if v < least else least
    if not least - M >= _LOG_TINY:  # also when some mx(o) = -inf
        return False
    for i in range(B):
        for q in range(nb >> 1):
            w[i, q] = _exp_nonpos(alpha_low[i, q0 + q] - cw[i])
    for o in range(nb):
        lin[o] = sm[o] * _exp_nonpos(mx[o] - csum[o] - M)
    for t in range(nb):
        o = t if forward else nb - 1 - t
        x = lin[o]
        for i in range(B):
            x += w[i, wq[o, i]] * lin[nbr[o, i]]
        lin[o] = x
    for o in range(nb):
        out[base + o] = M + csum[o] + _log_normal(lin[o])
    return True


@njit(**_KW)
def _block_ext(alpha_low, out, base, B, forward, mx, sm, wm, we, lm, le, nbr, wq):
    """The in-block terms of one block of `_recursion_chunk`, entry by entry in its
    order, with extended-exponent numbers (fastmath.py): exact at any range.

    mx, sm: each entry's high-bit terms as max and sum of exps below it (l(o) starts as
    sm(o)·exp(mx(o))); wm, we: (B, 2^(B-1) + 1) the block's alpha_i[base/2 + q] (all the
    block reads of alpha_i) as extended numbers, the last column zero; then
    l(o) = l(o) + Σ_{i active} w_i(squeeze(o, i))·l(o ^ 2^i), the terms scaled by their
    exponents' distance to the largest, and l(o) normalised (mantissa in [1, 2)).
    Written back as log l(o). lm, le: (2^B,) scratch; nbr, wq: the bit tables of
    `_recursion_chunk`.
    """
    nb = 1 << B
    half = nb >> 1
    q0 = base >> 1  # squeeze(base + o, i) = base/2 + squeeze(o, i) for i < B
    for i in range(B):
        for q in range(half):
            wm[i, q], we[i, q] = _ext_from_log(alpha_low[i, q0 + q])
    for o in range(nb):
        m, e = _ext_from_log(mx[o])
        lm[o] = m * sm[o]
        le[o] = e
    for t in range(nb):
        o = t if forward else nb - 1 - t
        top = le[o]
        for i in range(B):
            v = we[i, wq[o, i]] + le[nbr[o, i]]
            top = v if v > top else top
        x = lm[o] * _exp2_int(le[o] - top)
        for i in range(B):
            q = wq[o, i]
            j = nbr[o, i]
            x += (wm[i, q] * lm[j]) * _exp2_int(we[i, q] + le[j] - top)
        lm[o], le[o] = _ext_norm(x, top)
    for o in range(nb):
        out[base + o] = _log_ext(lm[o], le[o])


@njit(**_KW)
def _forward_chunk(acc, alpha_low, out):
    """In-chunk forward recursion: `_recursion_chunk` with forward=True."""
    return _recursion_chunk(acc, alpha_low, out, True)


@njit(**_KW)
def _backward_chunk(acc, alpha_low, out):
    """In-chunk backward recursion: `_recursion_chunk` with forward=False."""
    return _recursion_chunk(acc, alpha_low, out, False)


@njit(**_KW)
def _gather_low(fwd, bwd, v, out):
    """s(squeeze(o, v)) = L[o] + B[o + 2^v] for offsets o with bit v clear (v a low node).

    fwd, bwd: (2^c,) the forward and backward chunks of the same chunk id; out: (2^(c-1),).
    """
    b = np.int64(1) << v
    for q in range(out.shape[0]):
        o = (q & (b - 1)) | ((q >> v) << (v + 1))
        out[q] = fwd[o] + bwd[o + b]


@njit(**_KW)
def _add_into(out, x, y):
    """out[j] = x[j] + y[j]."""
    for j in range(out.shape[0]):
        out[j] = x[j] + y[j]


@njit(**_KW)
def _gamma_partial(s, ex, d, chunk_id, fam, small, part):
    """Contribution of one chunk to gamma_v (FTDMT, section 4).

    s: float64 (2^d,) values s_v(S) of the chunk (overwritten); ex: float64 (2^d,)
    scratch; fam: int64 (F,) squeezed family masks; part: float64 (F,) output, -inf where
    the family's high part is not inside chunk_id, else logsumexp_{S_low ⊇ G_low} s(S_low).
    The transform sums exp(s - top), top the chunk's largest s: plain float64 if every
    finite s lies within _SPAN of top, else extended-exponent numbers (mantissa in s,
    exponent in ex). One exp per entry in, additions only, one log per family out.
    Returns 1 if the chunk was wide, else 0.
    """
    top = NEG_INF
    low = np.inf
    for o in range(s.shape[0]):
        x = s[o]
        top = x if x > top else top
        low = x if (x < low and x > NEG_INF) else low
    if top == NEG_INF:
        top = 0.0
    wide = low - top < -_SPAN
    if wide:
        for o in range(s.shape[0]):
            s[o], ex[o] = _ext_from_log(s[o] - top)
    else:
        for o in range(s.shape[0]):
            s[o] = _exp_nonpos(s[o] - top)
    _downward_truncated(s, ex, d, small, wide)
    lowmask = (np.int64(1) << d) - 1
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            x = s[g & lowmask]
            if wide:
                part[f] = top + _log_ext(x, ex[g & lowmask])
            else:
                part[f] = top + _log_normal(x) if x > 0.0 else NEG_INF
        else:
            part[f] = NEG_INF
    return 1 if wide else 0


@njit(**_KW)
def _logsumexp_rows(x, out):
    """out[j] = logsumexp_t x[t, j]; x float64 (T, F)."""
    for j in range(x.shape[1]):
        mx = NEG_INF
        for t in range(x.shape[0]):
            if x[t, j] > mx:
                mx = x[t, j]
        if mx == NEG_INF:
            out[j] = NEG_INF
            continue
        s = 0.0
        for t in range(x.shape[0]):
            s += math.exp(x[t, j] - mx)
        out[j] = mx + math.log(s)
