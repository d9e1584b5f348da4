"""Numba kernels of the engine: pure arithmetic on contiguous float64 chunks, no I/O.

Every value is a natural logarithm; -inf is "zero"/"impossible". Each kernel works on one
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

from .fastmath import _exp_nonpos, _lae_run, _lae_scalar, _log_normal

NEG_INF = -np.inf
# contract: FMA fusion, as fastmath.py is compiled with (same rounding when inlined).
_KW = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
_lae = _lae_scalar  # log(exp(a) + exp(b)); -inf is the neutral element (fastmath.py)


@njit(**_KW)
def _lae_into(acc, x, y):
    """acc[j] = log(exp(acc[j]) + exp(x[j] + y[j])) for all j; arrays of equal length.

    Branch-free (fastmath.py), so LLVM vectorises the loop."""
    for j in range(acc.shape[0]):
        acc[j] = _lae_scalar(acc[j], x[j] + y[j])


@njit(**_KW)
def _upward_truncated(x, d, small, linear=False):
    """In place: x(T) <- logsumexp_{S ⊆ T} x(S) over d bits, x supported on |S| ≤ k
    (linear: x(T) <- Σ_{S ⊆ T} x(S), values not logs, 0 outside the support).

    x: float64 (2^d,), -inf outside the support. small: int64 ascending masks with
    popcount ≤ k (over ≥ d-1 bits). Bits are processed low to high; after bit j only
    entries whose unprocessed part (bits > j) has ≤ k bits are non-zero, so each step
    visits 2^j · B(d-j-1, k) pairs in contiguous runs (paper section 4, O(k 2^d)).
    """
    for j in range(d):
        h = 1 << j
        limit = 1 << (d - j - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            src = m << (j + 1)
            if linear:
                _add_run(x, src + h, src, h)
            else:
                _lae_run(x, src + h, src, h)


@njit(**_KW)
def _downward_truncated(x, d, small, linear=False):
    """In place: x(T) <- logsumexp_{S ⊇ T} x(S) over d bits, correct for |T| ≤ k (FTDMT;
    linear: x(T) <- Σ_{S ⊇ T} x(S), values not logs).

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
            if linear:
                _add_run(x, dst, dst + h, h)
            else:
                _lae_run(x, dst, dst + h, h)


@njit(**_KW)
def _alpha_chunk(beta_row, fam, chunk_id, d, small, out):
    """alpha_i on one chunk of 2^d entries (chunk id = high bits of the squeezed mask U).

    beta_row: float64 (F,) log scores of node i; fam: int64 (F,) squeezed family masks;
    out: float64 (2^d,), overwritten. A family G = (G_high, G_low) contributes to the
    chunk iff G_high ⊆ chunk_id; it is folded into entry G_low, then the truncated
    upward transform over the d low bits sums over G_low ⊆ U_low.

    Linear domain first (`_alpha_chunk_linear`: additions, no transcendentals); where
    the chunk's values span too many orders of magnitude for one scale, the exact
    log-domain transform (`_alpha_chunk_log`). Returns 1 if it fell back, else 0.
    """
    if _alpha_chunk_linear(beta_row, fam, chunk_id, d, small, out):
        return 0
    _alpha_chunk_log(beta_row, fam, chunk_id, d, small, out)
    return 1


# Linear-domain alpha: every value is exp(beta - s), s the chunk's largest contributing
# beta. exp(z) is flushed to 0 below z = -708 (< 2^-1021), so each family loses at most
# 2^-1021 of the scaled sums; a sum of nonnegative terms is never below any of its terms
# (rounding is monotone), so if every nonzero output is ≥ _TINY the loss is ≤ F·2^-121
# relative: nothing at float64 precision for any F < 2^60.
_TINY = 2.0 ** -900
_LOG_TINY = -900 * 0.6931471805599453  # ≈ -623.8: no folded term is flushed above it


@njit(**_KW)
def _alpha_chunk_linear(beta_row, fam, chunk_id, d, small, out):
    """`_alpha_chunk` in the linear domain; False (out garbage) if one scale cannot hold it.

    Accepted when no finite contributing beta lies more than 623.8 nats (2^-900) below
    the largest, so no term is flushed and every nonzero output is ≥ 2^-900 (zero outputs
    are exact: no finite family below them); or else when the smallest output, at the
    empty low part, is ≥ 2^-900 (then every output is, and the flushed terms are
    negligible, see _TINY). The upward transform is then pure additions; one
    log per entry (`_log_normal`, branch-free) returns to the log domain.
    """
    lowmask = (np.int64(1) << d) - 1
    top = NEG_INF
    low = np.inf
    for f in range(fam.shape[0]):
        if ((fam[f] >> d) & ~chunk_id) == 0:
            b = beta_row[f]
            top = b if b > top else top
            low = b if (b < low and b > NEG_INF) else low
    if top == NEG_INF:
        for o in range(out.shape[0]):
            out[o] = NEG_INF
        return True
    for o in range(out.shape[0]):
        out[o] = 0.0
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            out[g & lowmask] += _exp_nonpos(beta_row[f] - top)
    _upward_truncated(out, d, small, True)
    if low - top < _LOG_TINY and not out[0] >= _TINY:
        return False
    for o in range(out.shape[0]):
        x = out[o]
        out[o] = top + _log_normal(x) if x > 0.0 else NEG_INF
    return True


@njit(**_KW)
def _add_run(x, dst, src, h):
    """x[dst+o] += x[src+o] for o in range(h); the runs do not overlap (vectorises)."""
    xd = x[dst:dst + h]
    xs = x[src:src + h]
    for o in range(h):
        xd[o] += xs[o]


@njit(**_KW)
def _alpha_chunk_log(beta_row, fam, chunk_id, d, small, out):
    """`_alpha_chunk` in the log domain (log-add-exp throughout): exact at any range."""
    for o in range(out.shape[0]):
        out[o] = NEG_INF
    lowmask = (np.int64(1) << d) - 1
    for f in range(fam.shape[0]):
        g = fam[f]
        gh = g >> d
        if (gh & ~chunk_id) == 0:
            gl = g & lowmask
            out[gl] = _lae(out[gl], beta_row[f])
    _upward_truncated(out, d, small)


@njit(**_KW)
def _alpha_chunks(beta, fam, node, first_chunk, d, small, out):
    """alpha_node on consecutive chunks first_chunk, first_chunk+1, ...; out (len, ) float64.

    out.shape[0] must be a multiple of 2^d; used for the 2^c-entry spans the forward and
    backward stages need from high nodes. Returns how many chunks fell back to the log
    domain (`_alpha_chunk`).
    """
    size = np.int64(1) << d
    nchunks = out.shape[0] // size
    fallbacks = 0
    for t in range(nchunks):
        fallbacks += _alpha_chunk(beta[node], fam, first_chunk + t, d, small, out[t * size:(t + 1) * size])
    return fallbacks


# Block size (bits) of the in-chunk recursions: entries are finalised 2^_BLOCK at a time,
# the lowest _BLOCK bits entry by entry (`_block_linear`, `_block_log`), each higher bit
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
    in the linear domain, a multiply-add a term; a block whose values one scale cannot
    hold takes the exact log-domain path, `_block_log`. Returns the number of such blocks.
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
    w = np.zeros((B, half + 1))  # column `half` stays 0: the weight of an inactive bit
    cw = np.empty(B)
    csum = np.empty(nb)
    lin = np.empty(nb)
    # per offset o and bit i < B: whether i is active, the neighbour o ^ 2^i and the
    # index squeeze(o, i) of the weight (o itself and the zero column where inactive),
    # so that the in-block loops run without branches
    act = np.zeros((nb, B))
    nbr = np.empty((nb, B), dtype=np.int64)
    wq = np.empty((nb, B), dtype=np.int64)
    for o in range(nb):
        for i in range(B):
            on = (o >> i) & 1 == want
            act[o, i] = 1.0 if on else 0.0
            nbr[o, i] = o ^ (1 << i) if on else o
            wq[o, i] = ((o & ((1 << i) - 1)) | ((o >> (i + 1)) << i)) if on else half
    fallbacks = 0
    for blk in range(size // nb):
        base = blk * nb if forward else size - nb - blk * nb
        mx = out[base:base + nb]
        sb = sm[base:base + nb]
        if not _block_linear(alpha_low, out, base, B, forward, mx, sb, w, cw, csum, lin, act, nbr, wq):
            _block_log(alpha_low, out, base, B, want, forward, mx, sb)
            fallbacks += 1
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
    return fallbacks


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


@njit(**_KW)
def _block_linear(alpha_low, out, base, B, forward, mx, sm, w, cw, csum, lin, act, nbr, wq):
    """The in-block terms of one block of `_recursion_chunk` in the linear domain; False
    (nothing written) if one scale cannot hold the block.

    mx, sm: each entry's high-bit terms as max and sum of exps below it. With cw_i the
    largest alpha_i over the block (the 2^(B-1) entries alpha_i[base/2 + q], q < 2^(B-1),
    are all the block reads of it), C(o) the sum of cw_i over o's active bits and M the
    largest mx(o) - C(o), the values l(o) = exp(L(o) - C(o) - M) obey
    l(o) = sm(o)·exp(mx(o) - C(o) - M) + Σ_{i active} exp(alpha_i - cw_i)·l(o ^ 2^i),
    a multiply-add a term. Every weight and start value is ≤ 1, so l(o) ≤ 1957 (the
    orderings of ≤ 6 bits) and a term flushed to zero below e^-708 costs < 1957·e^-708;
    the block is accepted when every l(o) ≥ 2^-900 (then that is < 2^-110 relative) and
    written back as M + C(o) + log l(o). act, nbr, wq: the bit tables of
    `_recursion_chunk`; w: (B, 2^(B-1) + 1) scratch whose last column is 0.
    """
    nb = 1 << B
    q0 = base >> 1  # squeeze(base + o, i) = base/2 + squeeze(o, i) for i < B
    for i in range(B):
        top = NEG_INF
        for q in range(nb >> 1):
            x = alpha_low[i, q0 + q]
            top = x if x > top else top
        if top == NEG_INF:
            return False
        cw[i] = top
        for q in range(nb >> 1):
            w[i, q] = _exp_nonpos(alpha_low[i, q0 + q] - top)
    M = NEG_INF
    for o in range(nb):
        s = 0.0
        for i in range(B):
            s += act[o, i] * cw[i]
        csum[o] = s
        v = mx[o] - s
        M = v if v > M else M
    if M == NEG_INF:
        return False
    for o in range(nb):
        lin[o] = sm[o] * _exp_nonpos(mx[o] - csum[o] - M)
    low = np.inf
    for t in range(nb):
        o = t if forward else nb - 1 - t
        x = lin[o]
        for i in range(B):
            x += w[i, wq[o, i]] * lin[nbr[o, i]]
        lin[o] = x
        low = x if x < low else low
    if not low >= _TINY:
        return False
    for o in range(nb):
        out[base + o] = M + csum[o] + _log_normal(lin[o])
    return True


@njit(**_KW)
def _block_log(alpha_low, out, base, B, want, forward, mx, sm):
    """The in-block terms of one block of `_recursion_chunk` in the log domain, entry by
    entry (max-shifted sums of exps): exact at any range."""
    nb = 1 << B
    for t in range(nb):
        o = t if forward else nb - 1 - t
        e = base + o
        m2 = mx[o]
        for i in range(B):
            if (o >> i) & 1 == want:
                v = alpha_low[i, (e & ((1 << i) - 1)) | ((e >> (i + 1)) << i)] + out[e ^ (1 << i)]
                if v > m2:
                    m2 = v
        if m2 == NEG_INF:
            out[e] = NEG_INF
            continue
        tot = sm[o] * math.exp(mx[o] - m2) if mx[o] > NEG_INF else 0.0
        for i in range(B):
            if (o >> i) & 1 == want:
                v = alpha_low[i, (e & ((1 << i) - 1)) | ((e >> (i + 1)) << i)] + out[e ^ (1 << i)]
                tot += math.exp(v - m2)
        out[e] = m2 + math.log(tot)


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
def _gamma_partial(s, d, chunk_id, fam, small, part):
    """Contribution of one chunk to gamma_v (FTDMT, section 4).

    s: float64 (2^d,) values s_v(S) of the chunk (overwritten by the transform);
    fam: int64 (F,) squeezed family masks; part: float64 (F,) output, -inf where the
    family's high part is not inside chunk_id, else logsumexp_{S_low ⊇ G_low} s(S_low).

    Linear domain first (`_gamma_partial_linear`), the log domain where one scale
    cannot hold the chunk (`_gamma_partial_log`). Returns 1 if it fell back, else 0.
    """
    if _gamma_partial_linear(s, d, chunk_id, fam, small, part):
        return 0
    _gamma_partial_log(s, d, chunk_id, fam, small, part)
    return 1


@njit(**_KW)
def _gamma_partial_linear(s, d, chunk_id, fam, small, part):
    """`_gamma_partial` in the linear domain (scale: the chunk's largest s); False, with s
    restored and part garbage, if one scale cannot hold it.

    Accepted when no finite s lies more than 623.8 nats below the largest (nothing is
    flushed, zero outputs are exact), or else when every family's output is ≥ 2^-900
    (each then loses ≤ 2^d·2^-121 relative to the flushed terms, see _TINY).
    """
    top = NEG_INF
    low = np.inf
    for o in range(s.shape[0]):
        x = s[o]
        top = x if x > top else top
        low = x if (x < low and x > NEG_INF) else low
    lowmask = (np.int64(1) << d) - 1
    if top == NEG_INF:
        for f in range(fam.shape[0]):
            part[f] = NEG_INF
        return True
    flushed = low - top < _LOG_TINY
    keep = s.copy() if flushed else np.empty(0)  # the log-domain fallback needs the input again
    for o in range(s.shape[0]):
        s[o] = _exp_nonpos(s[o] - top)
    _downward_truncated(s, d, small, True)
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            x = s[g & lowmask]
            if flushed and not x >= _TINY:
                s[:] = keep
                return False
            part[f] = top + _log_normal(x) if x > 0.0 else NEG_INF
        else:
            part[f] = NEG_INF
    return True


@njit(**_KW)
def _gamma_partial_log(s, d, chunk_id, fam, small, part):
    """`_gamma_partial` in the log domain (log-add-exp throughout): exact at any range."""
    _downward_truncated(s, d, small)
    lowmask = (np.int64(1) << d) - 1
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            part[f] = s[g & lowmask]
        else:
            part[f] = NEG_INF


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
