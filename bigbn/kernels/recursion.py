"""The forward recursion L(S) = Σ_{i∈S} α_i(S−i)·L(S−i) (eq. 2) and, mirrored, the backward one
B(S) = Σ_{i∉S} α_i(S)·B(S+i), stored by predecessor set (section 3): the in-chunk part
(`_recursion_chunk`, `_recursion_tiles`) and the cross-chunk terms (`_high_term`), with α
rebuilt per tile from β.

Part of the kernels (bigbn/kernels/__init__.py lists them); the number types are
those of fastmath.py: natural logs on disk, extended-exponent numbers inside a task.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
# _KW: fastmath's compile options (the FMA contract), so its inlined helpers round alike here
from bigbn.kernels.fastmath import _exp2_int, _ext_add, _ext_norm, _KW
from bigbn.kernels.alpha import _alpha_ranges, _family_weights, _select_families
from bigbn.kernels.ext import _ext_fma_into, _ext_fma_log_into

NEG_INF = -np.inf


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
