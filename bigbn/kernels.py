"""Numba kernels of the engine: pure arithmetic on contiguous float64 chunks, no I/O.

Tables are stored as natural logs; -inf is "zero"/"impossible". Inside a task the values
are extended-exponent numbers (fastmath.py): a mantissa array m and an exponent array e,
value m·2^e, so a product is a multiply and an add, a sum a few integer and float
operations, and no exp or log is taken per term at any number of rows. The truncated
transforms (α, γ) sum plain float64 where one scale provably holds a chunk, else
extended numbers. Each kernel works on one chunk of the chunk lattice (DESIGN.md): a
table over N-bit masks is cut by its high bits into chunks of 2^c entries, chunk id
H = mask >> c, offset o = mask & (2^c - 1).

Kernels (paper references are to Koivisto 2006):
- ``_alpha_chunk``    alpha_i(U) = Σ_{G ⊆ U, |G| ≤ k} beta_i(G) on one chunk (section 2),
                      as extended numbers: beta is folded into the chunk's low bits over
                      the high-part subsets of the chunk id, then a k-truncated upward
                      transform runs over the low bits (section 4, the Koivisto–Sood
                      variant). No cross-chunk work.
- ``_recursion_chunk`` the in-chunk part of the forward recursion
                      L(S) = Σ_{i∈S} alpha_i(S-i)·L(S-i) (eq. 2) and, mirrored, of the
                      backward one B(S) = Σ_{i∉S} alpha_i(S)·B(S+i), B(V) = 1;
                      B(S) = R(V-S) (section 3, stored by predecessor set so no
                      complement is ever read); with α recomputed per tile from β
                      (``_recursion_tiles``; the cross-chunk terms: ``_high_term``).
- ``_gamma_low``, ``_gamma_high``  k-truncated downward transforms (FTDMT, section 4)
                      of one chunk of s_v(S) = L(S)·B(S+v), a tile at a time, scattered (as
                      logs) to the families whose high part lies inside the chunk id:
                      gamma_v(G) = Σ over chunks of these.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _numba  # noqa: F401  (first: numba's cache outside the package)
from .bits import popcount as _popcount
from .fastmath import _exp2_int, _exp_nonpos, _ext_add, _ext_add_run, _ext_from_log, _ext_norm, _log_ext

NEG_INF = -np.inf
# contract: FMA fusion, as fastmath.py is compiled with (same rounding when inlined).
_KW = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@njit(**_KW)
def _clear_support(x, ex, d, small, wide):
    """Zero the entries of x that `_upward_truncated` reads before it writes them, so that
    a caller folds its values (|S| ≤ k) into them and leaves the rest of x unset: the
    8-entry groups whose bits ≥ 3 have ≤ k bits (they hold every |S| ≤ k), all 2^d
    entries if d < 3. x, ex, small, wide as for `_upward_truncated`; ex is set to -inf
    (the extended zero) only if wide. 1 856 of 16 384 entries at d = 14, k = 3."""
    if d < 3:
        for o in range(x.shape[0]):
            x[o] = 0.0
            if wide:
                ex[o] = NEG_INF
        return
    for t in range(small.shape[0]):
        g = small[t]
        if g >= (1 << (d - 3)):
            break
        for o in range(g << 3, (g << 3) + 8):
            x[o] = 0.0
            if wide:
                ex[o] = NEG_INF


@njit(**_KW)
def _upward_truncated(x, ex, d, small, wide):
    """In place: x(T) <- Σ_{S ⊆ T} x(S) over d bits, from x(S) on |S| ≤ k; an entry
    `_clear_support` does not zero is never read before it is written (so need not be
    set).

    wide: x is the extended-exponent pair (x, ex) (mantissas, exponents; fastmath.py);
    else x holds plain float64 values and ex is not used. x, ex: float64 (2^d,). small:
    int64 ascending masks with popcount ≤ k (over ≥ d-1 bits). The three lowest bits go
    in one pass, 8 entries at a time (`_zeta8`), over the groups whose higher bits have
    ≤ k bits (the others are 0 until a later bit reaches them). Then bits are processed
    low to high; after bit j only entries whose unprocessed part (bits > j) has ≤ k bits
    are non-zero, so each step visits 2^j · B(d-j-1, k) pairs in contiguous runs (paper
    section 4, O(k 2^d)). In a run whose higher part m has exactly k bits, every
    destination has k + 1 bits at j and above, so it is still 0 and the run is a copy
    (a quarter of the runs' entries at d = 14, k = 3): no entry above the groups needs
    zeroing beforehand.
    """
    j0 = 3 if d >= 3 else 0
    if j0:
        for t in range(small.shape[0]):
            g = small[t]
            if g >= (1 << (d - 3)):
                break
            _zeta8(x, ex, g << 3, wide, True)
    # k: small's last (largest) mask has min(k, its width) bits; for j ≥ 3 a run's m has
    # at most d-4 bits, below that width, so a full small (k ≥ width) never copies. For
    # d < 3 (j from 0) every entry was zeroed and runs only add.
    k = _popcount(small[small.shape[0] - 1]) if j0 else d + 1
    for j in range(j0, d):
        h = 1 << j
        limit = 1 << (d - j - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            src = m << (j + 1)
            if _popcount(m) == k:
                _copy_run(x, src + h, src, h)
                if wide:
                    _copy_run(ex, src + h, src, h)
            elif wide:
                _ext_add_run(x, ex, src + h, src, h)
            else:
                _add_run(x, src + h, src, h)


@njit(**_KW)
def _downward_truncated(x, ex, d, small, wide):
    """In place: x(T) <- Σ_{S ⊇ T} x(S) over d bits, correct for |T| ≤ k (FTDMT); x as
    for `_upward_truncated`.

    Bits are processed high to low; the processed (truncated) part is kept to ≤ k bits,
    the unprocessed low bits form contiguous runs; the three lowest bits go in one pass,
    8 entries at a time (`_zeta8`), over the groups whose higher bits have ≤ k bits.
    Entries with |T| > k are garbage.
    """
    j0 = 3 if d >= 3 else 0
    for i in range(d - 1, j0 - 1, -1):
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
    if j0:
        for t in range(small.shape[0]):
            g = small[t]
            if g >= (1 << (d - 3)):
                break
            _zeta8(x, ex, g << 3, wide, False)


@njit(inline="always", **_KW)
def _add8(x, ex, dst, src, wide):
    if wide:
        x[dst], ex[dst] = _ext_add(x[dst], ex[dst], x[src], ex[src])
    else:
        x[dst] += x[src]


@njit(**_KW)
def _zeta8(x, ex, base, wide, up):
    """The subset (up) or superset sums over the 3 low bits of the 8 entries base..base+7
    (plain, or extended numbers if wide), written out: 12 additions."""
    for i in range(3):
        h = 1 << i
        for o in range(8):
            if (o >> i) & 1 == 1:
                if up:
                    _add8(x, ex, base + o, base + o - h, wide)
                else:
                    _add8(x, ex, base + o - h, base + o, wide)


@njit(**_KW)
def _copy_run(x, dst, src, h):
    """x[dst+o] = x[src+o] for o in range(h); the runs do not overlap."""
    xd = x[dst:dst + h]
    xs = x[src:src + h]
    for o in range(h):
        xd[o] = xs[o]


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
def _family_weights(sb, nf, sw, wm, we):
    """sw[j] = exp(sb[j] - ref) for j < nf, ref the largest of sb[:nf] (-inf if there is
    none or all are -inf; then every sw is 0): the plain terms of `_alpha_ranges`, one
    exp per family in one vectorised loop, instead of one per tile the family reaches.
    If some score lies more than _SPAN below ref (only then can a subset of them be
    wide), also (wm[j], we[j]) = exp(sb[j] - ref) as extended numbers (`_ext_from_log`),
    the wide terms, likewise once per family; else wm, we are not set. Returns ref."""
    ref = NEG_INF
    low = np.inf
    for j in range(nf):
        ref = sb[j] if sb[j] > ref else ref
        low = sb[j] if (sb[j] < low and sb[j] > NEG_INF) else low
    for j in range(nf):
        sw[j] = _exp_nonpos(sb[j] - ref)  # -inf - -inf is NaN: 0
    if low - ref < -_SPAN:
        for j in range(nf):
            wm[j], we[j] = _ext_from_log(sb[j] - ref)
    return ref


@njit(**_KW)
def _alpha_ranges(sb, sw, wm, we, ref, sg, lo, hi, d, small, m, e):
    """alpha on 2^d entries from the families j in the ranges [lo[r], hi[r]): entry U
    sums exp(sb[j]) over the families whose low d mask bits sg[j] & (2^d - 1) ⊆ U, as
    extended-exponent numbers m·2^e (fastmath.py), m in [1, 2), (0, -inf) where none
    fits. m, e: float64 (2^d,), overwritten. sw, wm, we, ref: `_family_weights` of sb.

    Each family is folded into entry sg[j]'s low bits, then the truncated upward
    transform over the d bits sums over subsets: sums of exp(sb - s) in plain float64 if
    every selected score lies within _SPAN of s, else extended numbers (mantissa in m,
    exponent in e; s is ref, the terms wm, we). In plain float64, s is ref, whose terms
    sw are computed already, when every selected score lies within _SPAN of it, else the
    largest selected score. Additions only; the
    scale exp(s) is one extended number multiplied into every entry at the end (no exp
    or log per entry). Returns 1 if the sums were wide (extended), else 0.
    """
    lowmask = (np.int64(1) << d) - 1
    top = NEG_INF
    low = np.inf
    for r in range(lo.shape[0]):
        for j in range(lo[r], hi[r]):
            b = sb[j]
            top = b if b > top else top
            low = b if (b < low and b > NEG_INF) else low
    shared = low - ref >= -_SPAN  # then low - top ≥ -_SPAN too (top ≤ ref)
    wide = low - top < -_SPAN
    _clear_support(m, e, d, small, wide)
    for r in range(lo.shape[0]):
        for j in range(lo[r], hi[r]):
            gl = sg[j] & lowmask
            if shared:
                m[gl] += sw[j]
            elif wide:
                m[gl], e[gl] = _ext_add(m[gl], e[gl], wm[j], we[j])
            else:
                m[gl] += _exp_nonpos(sb[j] - top)
    _upward_truncated(m, e, d, small, wide)
    tm, te = _ext_from_log(ref if shared or wide else top)  # (0, -inf) if no family contributes
    if wide:
        for o in range(m.shape[0]):
            m[o], e[o] = _ext_norm(m[o] * tm, e[o] + te)
    else:
        for o in range(m.shape[0]):
            m[o], e[o] = _ext_norm(m[o] * tm, te)
    return 1 if wide else 0


@njit(**_KW)
def _select_families(beta_row, fam, chunk_id, d, sb, sg):
    """The families of one node whose high part (bits ≥ d) lies inside chunk_id: their
    log scores into sb, their low d bits into sg (int64); returns how many. Families
    outside a chunk never contribute to it."""
    lowmask = (np.int64(1) << d) - 1
    nf = 0
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            sb[nf] = beta_row[f]
            sg[nf] = g & lowmask
            nf += 1
    return nf


@njit(**_KW)
def _alpha_chunk(beta_row, fam, chunk_id, d, small, m, e):
    """alpha_i on one chunk of 2^d entries (chunk id = high bits of the squeezed mask U),
    as extended-exponent numbers (`_alpha_ranges`): alpha_i(U) = Σ_{G ⊆ U, |G| ≤ k}
    beta_i(G), a family G = (G_high, G_low) contributing iff G_high ⊆ chunk_id.

    beta_row: float64 (F,) log scores of node i; fam: int64 (F,) squeezed family masks;
    m, e: float64 (2^d,), overwritten. Returns 1 if the chunk was wide, else 0.
    """
    sb = np.empty(fam.shape[0])
    sw = np.empty(fam.shape[0])
    wm = np.empty(fam.shape[0])
    we = np.empty(fam.shape[0])
    sg = np.empty(fam.shape[0], dtype=np.int64)
    nf = _select_families(beta_row, fam, chunk_id, d, sb, sg)
    ref = _family_weights(sb, nf, sw, wm, we)
    return _alpha_ranges(sb, sw, wm, we, ref, sg, np.zeros(1, dtype=np.int64), np.full(1, nf), d, small, m, e)


@njit(**_KW)
def _alpha_chunks_ext(beta, fam, node, first_chunk, d, small, m, e):
    """alpha_node on consecutive chunks first_chunk, first_chunk+1, ... as extended
    numbers (m, e): float64 (len,), len a multiple of 2^d (the 2^c-entry spans the
    forward and backward stages need from high nodes). Returns how many chunks were wide.
    """
    size = np.int64(1) << d
    wide = 0
    for t in range(m.shape[0] // size):
        s = slice(t * size, (t + 1) * size)
        wide += _alpha_chunk(beta[node], fam, first_chunk + t, d, small, m[s], e[s])
    return wide


@njit(**_KW)
def _alpha_chunks(beta, fam, node, first_chunk, d, small, out):
    """`_alpha_chunks_ext` as natural logs in out (the stored α, the sampler's spans)."""
    ex = np.empty(out.shape[0])
    wide = _alpha_chunks_ext(beta, fam, node, first_chunk, d, small, out, ex)
    _log_ext_into(out, ex, out)
    return wide


@njit(**_KW)
def _ext_from_log_into(x, m, e):
    """(m[j], e[j]) = exp(x[j]) as an extended number (fastmath._ext_from_log)."""
    for j in range(x.shape[0]):
        m[j], e[j] = _ext_from_log(x[j])


@njit(**_KW)
def _log_ext_into(m, e, out):
    """out[j] = log(m[j]·2^e[j]) (out may be m itself)."""
    for j in range(out.shape[0]):
        out[j] = _log_ext(m[j], e[j])


@njit(**_KW)
def _ext_fma_into(pm, pe, am, ae, xm, xe):
    """(pm, pe)[j] += (am, ae)[j]·(xm, xe)[j]: extended numbers, arrays of equal length.
    A product multiplies mantissas and adds exponents; the sum is `_ext_add` (no
    transcendental). The loop vectorises."""
    for j in range(pm.shape[0]):
        pm[j], pe[j] = _ext_add(pm[j], pe[j], am[j] * xm[j], ae[j] + xe[j])


@njit(**_KW)
def _ext_fma_log_into(pm, pe, am, ae, x, add):
    """`_ext_fma_into` with x as natural logs, each converted as it is read
    (`_ext_from_log`): the same bits as converting x first, without the converted array.
    add=False: (pm, pe)[j] = the product, pm and pe not read (the same bits as adding it
    to zero: a chunk's first high-bit term)."""
    if add:
        for j in range(pm.shape[0]):
            xm, xe = _ext_from_log(x[j])
            pm[j], pe[j] = _ext_add(pm[j], pe[j], am[j] * xm, ae[j] + xe)
    else:
        for j in range(pm.shape[0]):
            xm, xe = _ext_from_log(x[j])
            pm[j], pe[j] = am[j] * xm, ae[j] + xe


@njit(**_KW)
def _tile_families(beta_row, fam, chunk_id, d, shift, bb, bw, wm, we, bg, off):
    """The families of one node inside a chunk (`_select_families` at d bits), sorted by
    their tile pattern p = (low d bits) >> shift: scores bb, their `_family_weights` bw,
    wm, we,
    low masks bg (int64), and off (2^(d - shift) + 1,): pattern p's families are off[p]
    .. off[p+1]-1. A tile of the chunk whose pattern bits are t gets exactly the patterns
    p ⊆ t (`_tile_ranges`). Returns the weights' reference score."""
    F = fam.shape[0]
    sb = np.empty(F)
    sg = np.empty(F, dtype=np.int64)
    nf = _select_families(beta_row, fam, chunk_id, d, sb, sg)
    for p in range(off.shape[0]):
        off[p] = 0
    for j in range(nf):
        off[(sg[j] >> shift) + 1] += 1
    for p in range(1, off.shape[0]):
        off[p] += off[p - 1]
    fill = off[:-1].copy()
    for j in range(nf):
        p = sg[j] >> shift
        bb[fill[p]] = sb[j]
        bg[fill[p]] = sg[j]
        fill[p] += 1
    return _family_weights(bb, nf, bw, wm, we)


@njit(**_KW)
def _tile_ranges(off, t, lo, hi):
    """The family ranges of the patterns p ⊆ t (`_tile_families`), non-empty ones only,
    into lo, hi; returns how many."""
    nr = 0
    p = t
    while True:  # every submask of t, t itself first, 0 last
        if off[p + 1] > off[p]:
            lo[nr] = off[p]
            hi[nr] = off[p + 1]
            nr += 1
        if p == 0:
            break
        p = (p - 1) & t
    return nr


@njit(**_KW)
def _high_term(beta_row, fam, small, Q, c, tile_bits, y, m, e, add):
    """(m, e)[o] += alpha(Q·2^c + o)·exp(y[o]) for the 2^c offsets o of a chunk: the
    cross-chunk term of one high node c+b, alpha of that node (beta_row, fam) on the
    span of its squeezed masks (alpha chunks 2Q, 2Q+1), recomputed per tile of
    2^tile_bits entries (plan.TILE_BITS); y: the neighbour chunk of L or B as natural
    logs, converted a tile at a time while it is in the cache (`_ext_fma_log_into`).
    add=False: (m, e) = the term, not read before (a chunk's first term). Returns how
    many α tiles were wide."""
    T = min(tile_bits, c)
    tile = np.int64(1) << T
    ntiles = np.int64(1) << (c - T)
    F = fam.shape[0]
    bb = np.empty(F)
    bw = np.empty(F)
    wm = np.empty(F)
    we = np.empty(F)
    bg = np.empty(F, dtype=np.int64)
    off = np.empty(ntiles + 1, dtype=np.int64)
    ref = _tile_families(beta_row, fam, Q, c, T, bb, bw, wm, we, bg, off)
    lo = np.empty(ntiles, dtype=np.int64)
    hi = np.empty(ntiles, dtype=np.int64)
    am = np.empty(tile)
    ae = np.empty(tile)
    wide = 0
    for t in range(ntiles):
        nr = _tile_ranges(off, t, lo, hi)
        wide += _alpha_ranges(bb, bw, wm, we, ref, bg, lo[:nr], hi[:nr], T, small, am, ae)
        s = t * tile
        _ext_fma_log_into(m[s:s + tile], e[s:s + tile], am, ae, y[s:s + tile], add)
    return wide


@njit(**_KW)
def _recursion_tiles(beta, fam, small, H, tile_bits, m, e, forward):
    """The in-chunk recursion (`_recursion_chunk`) of chunk H with α recomputed from β
    per tile of 2^T entries, T = min(tile_bits, c) (plan.TILE_BITS: the chunk's α rows
    would be c·2^(c-1) extended numbers, 160 MiB at c = 20; a tile's stay in the cache):
    (m, e) as for `_recursion_chunk` (the high-bit terms in, L or B out), c = log2 of
    the chunk size; beta: (n, F) log scores.

    The chunk's tiles are done in order (descending backward). A tile first gets the
    terms of the chunk bits i ≥ T that are active in it, alpha_i times the tile
    t ^ 2^(i - T), done before it (a product and an extended add a term); then its own
    bits run through `_recursion_chunk` with alpha_0 .. alpha_(T-1) on the tile. Every
    alpha_i entry is built once, from the families of node i inside chunk H, sorted by
    tile pattern so that a tile reads only its own (`_tile_families`). Returns (wide α
    tiles, wide recursion blocks).
    """
    size = m.shape[0]
    c = 0
    while (np.int64(1) << c) < size:
        c += 1
    T = min(tile_bits, c)
    tile = np.int64(1) << T
    ntiles = size >> T
    F = fam.shape[0]
    # node i's families by pattern bits ≥ T-1 of their chunk-local (c-1)-bit mask: a tile
    # t of α at T-1 bits has pattern t, one of α at T bits (bits i ≥ T) pattern 2·qt + 1
    bb = np.empty((c, F))
    bw = np.empty((c, F))
    wm = np.empty((c, F))
    we = np.empty((c, F))
    bg = np.empty((c, F), dtype=np.int64)
    off = np.empty((c, ntiles + 1), dtype=np.int64)
    ref = np.empty(c)
    for i in range(c):
        ref[i] = _tile_families(beta[i], fam, H, c - 1, T - 1, bb[i], bw[i], wm[i], we[i], bg[i], off[i])
    lo = np.empty(ntiles, dtype=np.int64)
    hi = np.empty(ntiles, dtype=np.int64)
    am = np.empty((T, tile >> 1))
    ae = np.empty((T, tile >> 1))
    xm = np.empty(tile)
    xe = np.empty(tile)
    want = 1 if forward else 0
    wide_alpha = 0
    wide = 0
    for k in range(ntiles):
        t = k if forward else ntiles - 1 - k
        s = t * tile
        for i in range(T, c):
            b = i - T
            if (t >> b) & 1 == want:
                # squeeze(s + u, i) = squeeze(t, b)·2^T + u; the term's neighbour is tile t ^ 2^b
                qt = (t & ((1 << b) - 1)) | ((t >> (b + 1)) << b)
                nr = _tile_ranges(off[i], (qt << 1) | 1, lo, hi)
                wide_alpha += _alpha_ranges(bb[i], bw[i], wm[i], we[i], ref[i], bg[i], lo[:nr], hi[:nr], T, small, xm, xe)
                u = (t ^ (1 << b)) * tile
                _ext_fma_into(m[s:s + tile], e[s:s + tile], xm, xe, m[u:u + tile], e[u:u + tile])
        for i in range(T):  # squeeze(s + u, i) = t·2^(T-1) + squeeze(u, i)
            nr = _tile_ranges(off[i], t, lo, hi)
            wide_alpha += _alpha_ranges(bb[i], bw[i], wm[i], we[i], ref[i], bg[i], lo[:nr], hi[:nr], T - 1, small, am[i], ae[i])
        wide += _recursion_chunk(m[s:s + tile], e[s:s + tile], am, ae, forward)
    return wide_alpha, wide


# Block size (bits) of the in-chunk recursions: entries are finalised 2^_BLOCK at a time,
# the lowest _BLOCK bits entry by entry (`_block_linear`, `_block_ext`), each higher bit
# i as runs of 2^i entries (`_ext_fma_into`). 6 measured 15 % faster than 5 at c = 20.
_BLOCK = 6


@njit(**_KW)
def _recursion_chunk(m, e, am, ae, forward):
    """In-chunk forward (L) or backward (B) recursion: one kernel, mirrored by ``forward``,
    on extended-exponent numbers (fastmath.py) throughout.

    m, e: float64 (2^c,), in place: on entry the high-bit (cross-chunk) terms: the sum over
         high bits b ∈ H of alpha_{c+b}·L(chunk H-b) forward, over b ∉ H of
         alpha_{c+b}·B(chunk H+b) backward (plus 1 at L(∅) resp. B(V)); on return L or B,
         normalised (mantissa in [1, 2), or (0, -inf)).
    am, ae: float64 (c, 2^(c-1)), row i = alpha_i on the squeezed chunk of the same chunk
         id, as extended numbers (`_alpha_chunk`).
    forward:  L[o] = acc[o] + Σ_{i ∈ o} alpha_i[squeeze(o, i)]·L[o - 2^i], offsets
              ascending (paper eq. 2);
    backward: B[o] = acc[o] + Σ_{i ∉ o} alpha_i[squeeze(o, i)]·B[o + 2^i], offsets
              descending (section 3, B(S) = R(V - S)).
    Both read the neighbour o ^ 2^i and alpha at squeeze(o, i) (squeeze drops bit i), so
    the two differ only in which bits count ("active" bits) and in the order of offsets.

    Until an entry is final it holds the sum of its terms so far. Entries are finalised
    in blocks of 2^_BLOCK, in order; as soon as the first half of an aligned span of
    2^(i+1) entries (i ≥ _BLOCK) is final, the bit-i terms of its whole second half are
    added: one contiguous run of 2^i entries of alpha_i and of the table (mirrored
    backward), a vectorised loop of a product and an extended add a term, no exp. A
    block's own low bits depend on entries of the block itself, one after the other:
    `_block_linear` does them in plain float64 with one scale, a multiply-add a term,
    where that provably holds the block, and `_block_ext` with extended numbers where
    not. Returns the number of blocks of the latter kind ("wide").
    """
    c = am.shape[0]
    size = m.shape[0]
    B = min(c, _BLOCK)
    nb = 1 << B
    cwt = np.empty((size // nb, B))
    wt = np.empty((B, am.shape[1]))
    _block_weights(am, ae, B, forward, cwt, wt)
    csum = np.empty(nb)
    lin = np.empty(nb)
    wide = 0
    last = False  # the previous block was wide
    for blk in range(size // nb):
        base = blk * nb if forward else size - nb - blk * nb
        last = not _block_linear(m, e, base, B, forward, wt, cwt[base // nb], csum, lin, last)
        if last:
            _block_ext(am, ae, m, e, base, B, forward)
            wide += 1
        done = (blk + 1) * nb  # entries final so far, counted from the start (from the end backward)
        i = B
        while i < c and (done >> i) & 1 == 0:  # i = trailing zeros of done
            i += 1
        if i < c:
            run = 1 << i
            if forward:  # final [done - run, done) → pending [done, done + run), bit i set;
                # squeeze(done + o, i) = (done - run)/2 + o (done - run is 2^(i+1)-aligned)
                src, dst = done - run, done
            else:  # final [size - done, size - done + run) → pending [size - done - run, size - done)
                dst = size - done - run  # 2^(i+1)-aligned: squeeze(dst + o, i) = dst/2 + o
                src = dst + run
            q = min(src, dst) >> 1
            _ext_fma_into(m[dst:dst + run], e[dst:dst + run], am[i, q:q + run], ae[i, q:q + run],
                          m[src:src + run], e[src:src + run])
    return wide


# A block's plain sums are exact when every entry's own high-bit terms are ≥ 2^-900 of
# the block's scale: see _block_linear.
_LOG2_TINY = -900.0


@njit(**_KW)
def _block_weights(am, ae, B, forward, cwt, wt):
    """The plain weights of every block of `_recursion_chunk`, in one pass over the low
    rows: cwt[blk, i] the largest exponent of alpha_i over block blk's 2^(B-1) entries
    alpha_i[blk·2^(B-1) + q] (0 if all are zero), wt[i, blk·2^(B-1) + q] = alpha_i·2^-cwt
    < 2 (an exact power-of-two scaling; 0 below 2^-1022), backward mirrored within the
    block (at 2^(B-1) - 1 - q), as `_block_linear` reads them."""
    half = (1 << B) >> 1
    for i in range(B):
        for blk in range(cwt.shape[0]):
            q0 = blk * half
            top = NEG_INF
            for q in range(half):
                x = ae[i, q0 + q]
                top = x if x > top else top
            top = top if top > NEG_INF else 0.0
            cwt[blk, i] = top
            for q in range(half):
                qq = q0 + (q if forward else half - 1 - q)
                wt[i, qq] = am[i, q0 + q] * _exp2_int(ae[i, q0 + q] - top)


@njit(**_KW)
def _block_linear(m, e, base, B, forward, wt, cw, csum, lin, quick):
    """The in-block terms of one block of `_recursion_chunk` in plain float64 with one
    scale, if that provably holds the block (else False, nothing changed: `_block_ext`).

    (m, e)[base + o]: each entry's high-bit terms, mantissas in [2^-1/2, 2^8) (products of
    normalised α and a normalised or converted neighbour, summed by `_ext_add`) or 0.
    With cw_i the largest exponent of alpha_i over the block, C(o) the sum of cw_i over
    o's active bits and M the largest e(o) - C(o), the values l(o) = L(o)·2^-(C(o) + M)
    obey l(o) = m(o)·2^(e(o) - C(o) - M) + Σ_{i active} w_i·l(o ^ 2^i) with w_i =
    alpha_i·2^-cw_i < 2 (`_block_weights`: wt, and cw its row of the block), a
    multiply-add a term. Taken when every e(o) - C(o) - M ≥ -900: starts are then in
    [2^-901, 2^8) and weights < 2, so l(o) < 2^26 (the ≤ 1957 orderings of ≤ 6 bits),
    and the weights and products flushed to zero below 2^-1022 change an l(o) ≥ 2^-901
    by < 2^-80 relative. Written back normalised, exponent M + C(o). lin holds l in the
    block's order (mirrored backward: position nb - 1 - o, where the active bits are o's
    clear bits, and the weights are mirrored to match), so one forward loop,
    `_block_runs`, does both directions. csum, lin: (2^B,) scratch.
    """
    nb = 1 << B
    # quick: first a test that fails only where the one below must: the entries'
    # exponents alone span more than 900 plus the most that C can differ between two
    # entries (the sum of |cw_i|); then M - least ≥ (e(o1) - e(o2)) - (C(o1) - C(o2)) > 900
    # for the extreme o1, o2 (integers, exact). It spares forming C in a run of wide
    # blocks (every block at many rows); a block with a zero entry fails it too. The
    # caller asks for it after a wide block only, so narrow data never pays for it.
    if quick:
        top = NEG_INF
        bottom = np.inf
        for o in range(nb):
            x = e[base + o]
            top = x if x > top else top
            bottom = x if x < bottom else bottom
        spread = 0.0
        for i in range(B):
            spread += abs(cw[i])
        if top - bottom - spread > -_LOG2_TINY:
            return False
    # C(o) from C of o without its lowest active bit (forward: set bits; backward: clear)
    flip = 0 if forward else nb - 1
    csum[flip] = 0.0
    for a in range(1, nb):  # a: the active bits of o = a ^ flip
        low = a & -a
        i = 0
        while (low >> i) != 1:
            i += 1
        csum[a ^ flip] = csum[(a ^ low) ^ flip] + cw[i]
    M = NEG_INF
    least = np.inf
    for o in range(nb):
        v = e[base + o] - csum[o]
        M = v if v > M else M
        least = v if v < least else least
    if not least - M >= _LOG2_TINY:  # also when some entry is still 0 (exponent -inf)
        return False
    if forward:
        for o in range(nb):
            lin[o] = m[base + o] * _exp2_int(e[base + o] - csum[o] - M)
    else:
        for o in range(nb):
            lin[nb - 1 - o] = m[base + o] * _exp2_int(e[base + o] - csum[o] - M)
    _block_runs(lin, wt, base >> 1, B)
    if forward:
        for o in range(nb):
            m[base + o], e[base + o] = _ext_norm(lin[o], M + csum[o])
    else:
        for o in range(nb):
            m[base + o], e[base + o] = _ext_norm(lin[nb - 1 - o], M + csum[o])
    return True


@njit(**_KW)
def _block_runs(lin, wt, q0, B):
    """The forward in-block recursion on plain values: lin[o] += wt[i, q0 + squeeze(o, i)]·
    lin[o - 2^i] for every bit i set in o < 2^B, as runs (entries before p final, add the
    run of bit i = tz(p)), the two lowest bits written out per group of 4 entries."""
    nb = 1 << B
    if B == 1:
        lin[1] += wt[0, q0] * lin[0]
    for g in range(0, nb if B >= 2 else 0, 4):
        h = q0 + (g >> 1)  # squeeze(g + 1, 0) = squeeze(g + 2, 1) = g/2, and g/2 + 1 for g + 3
        l0 = lin[g]
        l1 = lin[g + 1] + wt[0, h] * l0
        l2 = lin[g + 2] + wt[1, h] * l0
        lin[g + 1] = l1
        lin[g + 2] = l2
        lin[g + 3] = (lin[g + 3] + wt[1, h + 1] * l1) + wt[0, h + 1] * l2
        p = g + 4
        if p < nb:
            i = 2
            while (p >> i) & 1 == 0:
                i += 1
            run = 1 << i
            src = p - run
            wo = q0 + (src >> 1)  # squeeze(p + x, i) = src/2 + x
            for x in range(run):
                lin[p + x] += wt[i, wo + x] * lin[src + x]


@njit(**_KW)
def _block_ext(am, ae, m, e, base, B, forward):
    """The in-block terms of one block of `_recursion_chunk`, in extended-exponent
    numbers (fastmath.py): exact at any range.

    (m, e)[base + o]: each entry's high-bit terms; l(o) += alpha_i[base/2 +
    squeeze(o, i)]·l(o ^ 2^i) for every active bit i < B. As `_block_runs` for plain
    values: the two lowest bits written out per group of 4 entries (`_ext_group4`), then
    the run of the next bit i ≥ 2. The block's entries are normalised (mantissa in
    [1, 2)) together at the end, in one vectorised loop, not one at a time as each
    becomes final: a product or an extended sum of unnormalised numbers is the same
    number rounded the same way (a power of two apart), and the mantissas stay in
    [2^-1/2, 2^26) (the starts' [2^-1/2, 2^8), times the ≤ 1957 orderings of ≤ 6 bits
    of weights < 2), where `_ext_add` flushes only shares below 2^-995."""
    nb = 1 << B
    q0 = base >> 1  # squeeze(base + o, i) = base/2 + squeeze(o, i) for i < B
    if B == 1:
        a = base if forward else base + 1  # the block's first entry
        b = base + 1 if forward else base
        m[b], e[b] = _ext_add(m[b], e[b], am[0, q0] * m[a], ae[0, q0] + e[a])
    for g in range(0, nb if B >= 2 else 0, 4):
        if forward:  # entries g .. g + 3, squeeze(g + 1, 0) = squeeze(g + 2, 1) = g/2
            h = q0 + (g >> 1)
            _ext_group4(am, ae, m, e, base + g, 1, h, h, h + 1, h + 1)
        else:  # entries G + 3 .. G, mirrored
            G = nb - g - 4
            h = q0 + (G >> 1)
            _ext_group4(am, ae, m, e, base + G + 3, -1, h + 1, h + 1, h, h)
        p = g + 4  # entries before p final: add the run of bit i = tz(p)
        if p < nb:
            i = 2
            while (p >> i) & 1 == 0:
                i += 1
            run = 1 << i
            if forward:
                src, dst = base + p - run, base + p
            else:
                dst = base + nb - p - run
                src = dst + run
            q = q0 + ((min(src, dst) - base) >> 1)
            # `_ext_fma_into` written out: its six slices cost more than a run of 4–32
            # entries (bench_kernels at n = 28, m = 10^5: 99 / 145 ms a chunk against 87 / 100)
            for x in range(run):
                m[dst + x], e[dst + x] = _ext_add(m[dst + x], e[dst + x], am[i, q + x] * m[src + x],
                                                  ae[i, q + x] + e[src + x])
    mb = m[base:base + nb]
    eb = e[base:base + nb]
    for o in range(nb):
        mb[o], eb[o] = _ext_norm(mb[o], eb[o])


@njit(inline="always", **_KW)
def _ext_group4(am, ae, m, e, f, step, k01, k02, k13, k23):
    """The bit-0 and bit-1 terms among 4 entries f, f + step, f + 2·step, f + 3·step of
    `_block_ext`, in the order they become final (f0 .. f3): f1 += alpha_0[k01]·f0,
    f2 += alpha_1[k02]·f0, f3 += alpha_1[k13]·f1, then f3 += alpha_0[k23]·f2 (the order
    and operations of one run at a time), not normalised."""
    f1, f2, f3 = f + step, f + 2 * step, f + 3 * step
    m0, e0 = m[f], e[f]
    m1, e1 = _ext_add(m[f1], e[f1], am[0, k01] * m0, ae[0, k01] + e0)
    m[f1], e[f1] = m1, e1
    m2, e2 = _ext_add(m[f2], e[f2], am[1, k02] * m0, ae[1, k02] + e0)
    m[f2], e[f2] = m2, e2
    s3, x3 = _ext_add(m[f3], e[f3], am[1, k13] * m1, ae[1, k13] + e1)
    m[f3], e[f3] = _ext_add(s3, x3, am[0, k23] * m2, ae[0, k23] + e2)


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


@njit(**_KW)
def _ext_add_logs(m, e, x):
    """(m, e)[j] += exp(x[j]), normalised: a row of natural logs x (finite, or -inf: adds
    nothing) added into a row of extended numbers (fastmath.py), one polynomial exp an
    entry and no log; the loop vectorises. The sums of γ's parts (engine: a level's
    chunk parts, then the levels), then `_log_ext_into`."""
    for j in range(x.shape[0]):
        xm, xe = _ext_from_log(x[j])
        sm, se = _ext_add(m[j], e[j], xm, xe)
        m[j], e[j] = _ext_norm(sm, se)
