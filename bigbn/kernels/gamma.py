"""γ_v(G): k-truncated downward transforms (FTDMT, section 4) of one chunk of s_v(S) =
L(S)·B(S+v), a tile at a time, scattered as logs to the families whose high part lies inside
the chunk id.

Part of the kernels (bigbn/kernels/__init__.py lists them); the number types are
those of fastmath.py: natural logs on disk, extended-exponent numbers inside a task.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.kernels.bits import popcount as _popcount
# _KW: fastmath's compile options (the FMA contract), so its inlined helpers round alike here
from bigbn.kernels.fastmath import _exp2_int, _ext_add, _ext_from_log, _KW, _log_ext
from bigbn.kernels.mobius import _downward_truncated

NEG_INF = -np.inf


# One scale holds a γ tile when its nonzero s lie within _SPAN2 binades of the largest:
# each s·2^-top is then ≥ 2^-1000 (a product of two mantissas in [1, 2) is ≥ 1), a
# normal float64 to full precision, and so is every sum.
_SPAN2 = 1000.0


@njit(**_KW)
def _gamma_index(small, Tq, hbits):
    """Where the tiled γ sums of `_gamma_tile` go. A set T of d = hbits + Tq bits splits
    into its tile part T >> Tq (hbits bits) and its in-tile part (Tq bits); γ needs
    |T| ≤ k, so both parts are among the small masks (≤ k bits, `small`).

    Returns lo (the in-tile masks, by popcount then value), cnt (cnt[p]: how many of lo
    have ≤ p bits), col (in-tile mask → its index in lo, or -1), row (tile mask → its
    index among the tile masks, or -1), and kk (the largest popcount in small)."""
    kk = 0
    for j in range(small.shape[0]):
        kk = max(kk, _popcount(small[j]))
    n_lo = 0
    while n_lo < small.shape[0] and small[n_lo] < (np.int64(1) << Tq):
        n_lo += 1
    pcs = np.empty(n_lo, dtype=np.int64)
    for j in range(n_lo):
        pcs[j] = _popcount(small[j])
    lo = small[:n_lo][np.argsort(pcs, kind="mergesort")]
    cnt = np.zeros(kk + 1, dtype=np.int64)
    for j in range(n_lo):
        cnt[pcs[j]] += 1
    for p in range(1, kk + 1):
        cnt[p] += cnt[p - 1]
    col = np.full(np.int64(1) << Tq, -1, dtype=np.int64)
    for j in range(n_lo):
        col[lo[j]] = j
    row = np.full(np.int64(1) << hbits, -1, dtype=np.int64)
    n_hi = 0
    while n_hi < small.shape[0] and small[n_hi] < (np.int64(1) << hbits):
        row[small[n_hi]] = n_hi
        n_hi += 1
    return lo, cnt, col, row, kk


@njit(**_KW)
def _tile_products(fm, fe, bm, be, o0, p0, v, sm, se):
    """(sm, se)[u] = F[o0 + w(u)]·B[p0 + w(u)] as extended numbers, w(u) = u with a 0
    inserted at bit v (v ≥ 0: the offsets of a chunk with bit v clear, in runs of 2^v),
    or w(u) = u (v < 0). Runs of ≥ 8 are contiguous loops (vectorised); below, one
    loop computes w(u)."""
    if v < 0:
        _products_run(fm, fe, bm, be, o0, p0, sm, se, 0, sm.shape[0])
    elif v < 3:
        for u in range(sm.shape[0]):
            w = u + ((u >> v) << v)
            sm[u] = fm[o0 + w] * bm[p0 + w]
            se[u] = fe[o0 + w] + be[p0 + w]
    else:
        b = np.int64(1) << v
        for hi in range(sm.shape[0] >> v):
            _products_run(fm, fe, bm, be, o0 + (hi << (v + 1)), p0 + (hi << (v + 1)), sm, se, hi << v, b)


@njit(**_KW)
def _products_run(fm, fe, bm, be, o, p, sm, se, u, h):
    """(sm, se)[u + j] = F[o + j]·B[p + j] for j < h (one contiguous, vectorised loop)."""
    a1, a2, a3, a4 = fm[o:o + h], bm[p:p + h], fe[o:o + h], be[p:p + h]
    d1, d2 = sm[u:u + h], se[u:u + h]
    for j in range(h):
        d1[j] = a1[j] * a2[j]
        d2[j] = a3[j] + a4[j]


@njit(**_KW)
def _products_log_run(fm, fe, y, o, sm, se):
    """(sm, se)[j] = F[o + j]·exp(y[o + j]) for j < len(sm): F extended numbers, y natural
    logs converted as they are read (`_ext_from_log`; one contiguous, vectorised loop)."""
    a1, a3, x = fm[o:o + sm.shape[0]], fe[o:o + sm.shape[0]], y[o:o + sm.shape[0]]
    for j in range(sm.shape[0]):
        xm, xe = _ext_from_log(x[j])
        sm[j] = a1[j] * xm
        se[j] = a3[j] + xe


# The exponents of a γ tile are never NaN (integers, or -inf for a zero), so their
# largest and smallest may be taken in any order: the flags let LLVM vectorise the scan.
@njit(**dict(_KW, fastmath={"contract", "nnan", "nsz", "reassoc"}))
def _exponent_range(se):
    """(the largest of se, the smallest finite one): (-inf, inf) if every entry is -inf.
    se: exponents of normalised extended numbers (integer-valued or -inf, a zero)."""
    top = NEG_INF
    low = np.inf
    for o in range(se.shape[0]):
        x = se[o]
        top = max(top, x)
        low = min(low, x if x > NEG_INF else np.inf)
    return top, low


@njit(**_KW)
def _gamma_tile(sm, se, Tq, small, qt, lo, cnt, row, kk, acc_m, acc_e):
    """One tile (tile mask qt, 2^Tq entries) of the superset sums of γ (FTDMT, section 4):
    R(T_lo) = Σ_{S_lo ⊇ T_lo} s(qt, S_lo) by the truncated downward transform over the
    tile's bits, added to acc[T_hi, T_lo] for every T_hi ⊆ qt with |T_hi| + |T_lo| ≤ k,
    so that acc[T_hi, T_lo] = Σ_{S ⊇ T} s(S) once every tile is in.

    (sm, se): s on the tile as extended numbers (mantissas in [1, 4), or 0 with exponent
    -inf; overwritten). The transform sums s·2^-top, top the tile's largest exponent, in
    plain float64 if every nonzero s lies within _SPAN2 binades of it (an exact
    power-of-two scaling, no exp), else the extended numbers as they are; acc (rows: tile
    masks by `row`, columns: in-tile masks `lo`) sums extended numbers. Returns 1 if the
    tile was wide, else 0."""
    top, low = _exponent_range(se)
    if top == NEG_INF:
        return 0  # all zero: adds nothing
    wide = low - top < -_SPAN2
    if not wide:
        for o in range(sm.shape[0]):
            sm[o] = sm[o] * _exp2_int(se[o] - top)
    _downward_truncated(sm, se, Tq, small, wide)
    p = qt
    while True:  # every T_hi ⊆ qt with ≤ kk bits
        j = _popcount(p)
        if j <= kk:
            r = row[p]
            for jj in range(cnt[kk - j]):
                x = lo[jj]
                xm = sm[x]
                xe = (se[x] if wide else top) if xm > 0.0 else NEG_INF
                acc_m[r, jj], acc_e[r, jj] = _ext_add(acc_m[r, jj], acc_e[r, jj], xm, xe)
        if p == 0:
            break
        p = (p - 1) & qt
    return 1 if wide else 0


@njit(**_KW)
def _gamma_scatter(acc_m, acc_e, d, Tq, chunk_id, fam, col, row, part_row):
    """part_row[f] = log acc[G] for the families whose high part (bits ≥ d) lies inside
    chunk_id, -inf for the others (their sets are not in this chunk)."""
    lowmask = (np.int64(1) << d) - 1
    tmask = (np.int64(1) << Tq) - 1
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            r = row[(g & lowmask) >> Tq]
            cc = col[g & tmask]
            part_row[f] = _log_ext(acc_m[r, cc], acc_e[r, cc])
        else:
            part_row[f] = NEG_INF


@njit(**_KW)
def _gamma_low(fm, fe, bm, be, H, fam, small, tile_bits, part):
    """Chunk H's part of gamma_v for every low node v < c (FTDMT, section 4): from
    s_v(q) = L[o]·B[o + 2^v], o the offset with bit v clear whose squeeze is q, the
    superset sums over the chunk's 2^(c-1) sets, scattered (as logs) into part[v] for the
    families whose high part lies inside H (-inf for the others).

    (fm, fe), (bm, be): L and B on chunk H as extended numbers (normalised); part: (n, F),
    rows v < c written. The sums run a tile at a time (`_gamma_tile`): the chunk's
    offsets in tiles of 2^T, T = min(tile_bits, c); for each tile, every node v < T
    takes its 2^(T-1) sets from that tile (in cache), and every node v ≥ T whose bit is
    clear in it takes two tiles' worth of 2^(T-1) from it and the tile 2^(v-T) above.
    Returns how many tiles were wide."""
    size = fm.shape[0]
    c = 0
    while (np.int64(1) << c) < size:
        c += 1
    T = min(tile_bits, c)
    Tq = T - 1
    lo, cnt, col, row, kk = _gamma_index(small, Tq, c - T)
    n_hi = 0
    for x in row:
        n_hi += 1 if x >= 0 else 0
    acc_m = np.zeros((c, n_hi, lo.shape[0]))
    acc_e = np.full((c, n_hi, lo.shape[0]), NEG_INF)
    sm = np.empty(np.int64(1) << Tq)
    se = np.empty(np.int64(1) << Tq)
    tile = np.int64(1) << T
    half = np.int64(1) << Tq
    wide = 0
    for t in range(size >> T):
        o0 = t * tile
        for v in range(c):
            if v < T:  # q = t·2^(T-1) + squeeze(u, v): tile t of v's sets, all in this tile
                _tile_products(fm, fe, bm, be, o0, o0 + (np.int64(1) << v), v, sm, se)
                wide += _gamma_tile(sm, se, Tq, small, t, lo, cnt, row, kk, acc_m[v], acc_e[v])
            elif (t >> (v - T)) & 1 == 0:  # q = squeeze(t, v - T)·2^T + u: two tiles of v's sets
                b = v - T
                q2 = ((t & ((1 << b) - 1)) | ((t >> (b + 1)) << b)) << 1
                for h in range(2):
                    oo = o0 + h * half
                    _tile_products(fm, fe, bm, be, oo, oo + (np.int64(1) << v), -1, sm, se)
                    wide += _gamma_tile(sm, se, Tq, small, q2 + h, lo, cnt, row, kk, acc_m[v], acc_e[v])
    for v in range(c):
        _gamma_scatter(acc_m[v], acc_e[v], c - 1, Tq, H, fam, col, row, part[v])
    return wide


@njit(**_KW)
def _gamma_high(fm, fe, y, Q, fam, small, tile_bits, part_row):
    """Chunk H's part of gamma of a high node c+b (b ∉ H): from s(o) = L[o]·B'[o], B'
    the backward chunk H + b, the superset sums over the 2^c sets S = H·2^c + o (squeezed
    masks Q·2^c + o), a tile of 2^tile_bits at a time (`_gamma_tile`), scattered (as
    logs) into part_row for the families whose high part lies inside Q. (fm, fe): L on
    chunk H as extended numbers; y: B on chunk H + b as natural logs, converted a tile
    at a time (`_products_log_run`). Returns how many tiles were wide."""
    size = fm.shape[0]
    c = 0
    while (np.int64(1) << c) < size:
        c += 1
    Tq = min(tile_bits, c)
    lo, cnt, col, row, kk = _gamma_index(small, Tq, c - Tq)
    n_hi = 0
    for x in row:
        n_hi += 1 if x >= 0 else 0
    acc_m = np.zeros((n_hi, lo.shape[0]))
    acc_e = np.full((n_hi, lo.shape[0]), NEG_INF)
    sm = np.empty(np.int64(1) << Tq)
    se = np.empty(np.int64(1) << Tq)
    wide = 0
    for t in range(size >> Tq):
        o0 = t << Tq
        _products_log_run(fm, fe, y, o0, sm, se)
        wide += _gamma_tile(sm, se, Tq, small, t, lo, cnt, row, kk, acc_m, acc_e)
    _gamma_scatter(acc_m, acc_e, c, Tq, Q, fam, col, row, part_row)
    return wide
