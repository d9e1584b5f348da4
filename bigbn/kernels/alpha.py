"""α_i(U) = Σ_{G ⊆ U, |G| ≤ k} β_i(G) on one chunk (Koivisto 2006, section 2): β folded into
the chunk's low bits over the high-part subsets of the chunk id, then a k-truncated upward
transform over the low bits.

Part of the kernels (bigbn/kernels/__init__.py lists them); the number types are
those of fastmath.py: natural logs on disk, extended-exponent numbers inside a task.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
# _KW: fastmath's compile options (the FMA contract), so its inlined helpers round alike here
from bigbn.kernels.fastmath import _exp_nonpos, _ext_add, _ext_from_log, _ext_norm, _KW
from bigbn.kernels.ext import _log_ext_into
from bigbn.kernels.mobius import _clear_support, _upward_truncated

NEG_INF = -np.inf


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
