"""k-truncated zeta (upward) and Möbius (downward) transforms over a chunk's low bits (Koivisto
2006, section 4), in extended numbers.

Part of the kernels (bigbn/kernels/__init__.py lists them); the number types are
those of fastmath.py: natural logs on disk, extended-exponent numbers inside a task.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.kernels.bits import popcount as _popcount
# _KW: fastmath's compile options (the FMA contract), so its inlined helpers round alike here
from bigbn.kernels.fastmath import _ext_add, _ext_add_run, _KW

NEG_INF = -np.inf


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
    if j0 and wide:
        _zeta8_ext(x, ex, d, small, True)
    elif j0:
        for t in range(small.shape[0]):
            g = small[t]
            if g >= (1 << (d - 3)):
                break
            _zeta8_plain(x, g << 3, True)
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
    if j0 and wide:
        _zeta8_ext(x, ex, d, small, False)
    elif j0:
        for t in range(small.shape[0]):
            g = small[t]
            if g >= (1 << (d - 3)):
                break
            _zeta8_plain(x, g << 3, False)


@njit(inline="always", **_KW)
def _add8(x, ex, dst, src, wide):
    if wide:
        x[dst], ex[dst] = _ext_add(x[dst], ex[dst], x[src], ex[src])
    else:
        x[dst] += x[src]


@njit(**_KW)
def _zeta8(x, ex, base, wide, up):
    """The subset (up) or superset sums over the 3 low bits of the 8 entries base..base+7
    (plain, or extended numbers if wide), written out: 12 additions. The reference of
    the transforms' own: `_zeta8_plain` (plain) and `_zeta8_ext` (all groups at once)."""
    for i in range(3):
        h = 1 << i
        for o in range(8):
            if (o >> i) & 1 == 1:
                if up:
                    _add8(x, ex, base + o, base + o - h, wide)
                else:
                    _add8(x, ex, base + o - h, base + o, wide)


@njit(**_KW)
def _zeta8_plain(x, base, up):
    """`_zeta8` of plain values: the group's 8 entries in locals, the 12 additions written
    out in `_zeta8`'s order (the same bits), stored back once: 6x faster than adding in
    the array one entry at a time (0.5 against 2.8 µs for the 232 groups of a 2^14 tile)."""
    x0, x1, x2, x3 = x[base], x[base + 1], x[base + 2], x[base + 3]
    x4, x5, x6, x7 = x[base + 4], x[base + 5], x[base + 6], x[base + 7]
    if up:  # x[o] += x[o - 2^i], bit i = 0, 1, 2 in turn
        x1 += x0
        x3 += x2
        x5 += x4
        x7 += x6
        x2 += x0
        x3 += x1
        x6 += x4
        x7 += x5
        x4 += x0
        x5 += x1
        x6 += x2
        x7 += x3
    else:  # x[o - 2^i] += x[o]
        x0 += x1
        x2 += x3
        x4 += x5
        x6 += x7
        x0 += x2
        x1 += x3
        x4 += x6
        x5 += x7
        x0 += x4
        x1 += x5
        x2 += x6
        x3 += x7
    x[base], x[base + 1], x[base + 2], x[base + 3] = x0, x1, x2, x3
    x[base + 4], x[base + 5], x[base + 6], x[base + 7] = x4, x5, x6, x7


@njit(**_KW)
def _zeta8_ext(x, ex, d, small, up):
    """`_zeta8` of extended numbers (x, ex) on every group of 8 entries g·8 .. g·8 + 7, g
    among the small masks below 2^(d-3) (d ≥ 3), all at once: the groups' entries are
    copied into 8 planes (plane o holds entry o of every group), each of the 12 additions
    is then one `_ext_add` loop over the groups, contiguous (it vectorises, where a
    group's own additions are scalar), and the planes are copied back. Each entry takes
    the same additions in the same order as `_zeta8` gives it: the same bits."""
    ng = 0
    while ng < small.shape[0] and small[ng] < (1 << (d - 3)):
        ng += 1
    pm = np.empty((8, ng))
    pe = np.empty((8, ng))
    for t in range(ng):
        b = small[t] << 3
        for o in range(8):
            pm[o, t] = x[b + o]
            pe[o, t] = ex[b + o]
    for i in range(3):
        h = 1 << i
        for o in range(8):
            if (o >> i) & 1 == 1:
                if up:
                    _ext_add_rows(pm[o], pe[o], pm[o - h], pe[o - h])
                else:
                    _ext_add_rows(pm[o - h], pe[o - h], pm[o], pe[o])
    for t in range(ng):
        b = small[t] << 3
        for o in range(8):
            x[b + o] = pm[o, t]
            ex[b + o] = pe[o, t]


@njit(**_KW)
def _ext_add_rows(dm, de, sm, se):
    """(dm, de)[j] += (sm, se)[j] for every j (`_ext_add`; one loop that vectorises)."""
    for j in range(dm.shape[0]):
        dm[j], de[j] = _ext_add(dm[j], de[j], sm[j], se[j])


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
