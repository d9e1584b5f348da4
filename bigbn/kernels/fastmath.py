"""Extended-exponent numbers (m, e) = m·2^e, the number type of the kernels' sums
(see "ext numbers" below), and the branch-free polynomial exp and log they are built
from, which LLVM can vectorise (no libm calls).

numba compiles ``math.exp``/``math.log`` to scalar libm calls (≈ 12 ns an element, never
vectorised). Here they are written out in polynomials and selects only, so LLVM turns
the loops into packed AVX2 code (4 doubles per ymm register, FMA).

exp(z), z ∈ [-708, 0] (`_exp_nonpos`): z = n·ln2 + r with n = round(z·log2 e) (by the
1.5·2^52 "magic number" add, whose bit pattern then holds n in its low bits) and r
reduced Cody–Waite style (fdlibm's split of ln2 in hi and lo parts), |r| ≤ ln2/2;
exp(r) by its Taylor polynomial of degree 13 (truncation < 5e-18 relative, Estrin's
scheme for short dependency chains); the result is scaled by 2^n by adding n << 52 to
its bit pattern. z < -708 (also the NaN from -inf - -inf) gives exp = 0.

log1p(e), e ∈ [0, 1] (`_log1p_unit`, the mantissa's log in `_log_ext`): with y = 1 + e
reduced to [1/√2, √2] (y/2 and + ln2 when e > √2 - 1), s = (y-1)/(y+1) is formed directly
from e (e/(2+e) or (e-1)/(3+e)), so the rounding of 1 + e never enters; log y =
2·atanh(s) by the odd series in s, |s| ≤ 0.1716, 11 terms (truncation < 1e-17).

The float/int bit casts are LLVM bitcasts (``_f64_bits``/``_bits_f64``). The helpers are
``inline="always"``: a caller inlining them should also be compiled with
``fastmath={"contract"}`` to get the same (FMA) rounding; without it results still meet
the bounds but may differ in the last bit. numba's on-disk cache does not notice edits to
this module in callers compiled elsewhere with ``cache=True``: clear ``__pycache__``
(or the numba cache folder) after changing it.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)

# contract: allow fusing a*b + c into FMA (more accurate, never reassociates).
_KW = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_LN2_HI = 6.93147180369123816490e-01  # fdlibm split: n·_LN2_HI exact for |n| < 2^20
_LN2_LO = 1.90821492927058770002e-10  # ln2 - _LN2_HI
_MAGIC = 6755399441055744.0  # 1.5·2^52: adding it rounds to an integer in the low bits
_Z_MIN = -708.0  # exp(-708) ≈ 3.3e-308 is still normal; below, exp counts as 0
_SQRT2_M1 = 0.41421356237309503  # √2 - 1

# Taylor coefficients 1/j! of exp, j = 0..13.
_E2 = 1.0 / 2
_E3 = 1.0 / 6
_E4 = 1.0 / 24
_E5 = 1.0 / 120
_E6 = 1.0 / 720
_E7 = 1.0 / 5040
_E8 = 1.0 / 40320
_E9 = 1.0 / 362880
_E10 = 1.0 / 3628800
_E11 = 1.0 / 39916800
_E12 = 1.0 / 479001600
_E13 = 1.0 / 6227020800
# atanh series 2/(2j+1) of log y in s = (y-1)/(y+1), j = 1..10 (j = 0 is 2).
_L1 = 2.0 / 3
_L2 = 2.0 / 5
_L3 = 2.0 / 7
_L4 = 2.0 / 9
_L5 = 2.0 / 11
_L6 = 2.0 / 13
_L7 = 2.0 / 15
_L8 = 2.0 / 17
_L9 = 2.0 / 19
_L10 = 2.0 / 21


@intrinsic
def _f64_bits(typingctx, x):
    """Bit pattern of a float64 as int64 (an LLVM bitcast, vectorisable)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bits_f64(typingctx, x):
    """float64 with the given int64 bit pattern (an LLVM bitcast)."""
    if x != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@njit(inline="always", **_KW)
def _exp_nonpos(z):
    """exp(z) for z ≤ 0 (float64); 0 for z < -708 and for NaN. Branch-free."""
    zc = z if z > _Z_MIN else _Z_MIN  # NaN compares false -> clamped
    t = zc * _LOG2E + _MAGIC  # low mantissa bits of t hold n = round(zc·log2 e)
    n = t - _MAGIC
    r = zc - n * _LN2_HI
    r = r - n * _LN2_LO
    p = _exp_reduced(r)
    # 2^n scaling: t's bits are bits(_MAGIC) + n, whose low 12 bits shifted up are n << 52.
    e = _bits_f64(_f64_bits(p) + (_f64_bits(t) << 52))
    return e if z >= _Z_MIN else 0.0


@njit(inline="always", **_KW)
def _exp_reduced(r):
    """exp(r) for |r| ≤ ln2/2 (+ 1e-9): Taylor polynomial of degree 13, truncation
    < 5e-18 relative. Branch-free."""
    # Estrin's scheme: shorter dependency chains than Horner, same accuracy here.
    r2 = r * r
    r4 = r2 * r2
    p01 = 1.0 + r
    p23 = _E2 + _E3 * r
    p45 = _E4 + _E5 * r
    p67 = _E6 + _E7 * r
    p89 = _E8 + _E9 * r
    p1011 = _E10 + _E11 * r
    p1213 = _E12 + _E13 * r
    lo = (p01 + p23 * r2) + (p45 + p67 * r2) * r4
    hi = (p89 + p1011 * r2) + p1213 * r4
    return lo + hi * (r4 * r4)


@njit(inline="always", **_KW)
def _log1p_unit(e):
    """log(1 + e) for e in [0, 1] (float64), absolute error < 1e-16. Branch-free."""
    big = e > _SQRT2_M1
    num = e - 1.0 if big else e  # y-1 for y = 1+e, or y/2 - 1 times 2
    den = e + 3.0 if big else e + 2.0
    add = _LN2 if big else 0.0
    s = num / den
    s2 = s * s
    s4 = s2 * s2
    q = ((_L1 + _L2 * s2) + (_L3 + _L4 * s2) * s4
         + ((_L5 + _L6 * s2) + (_L7 + _L8 * s2) * s4 + (_L9 + _L10 * s2) * (s4 * s4)) * (s4 * s4))
    return add + (2.0 * s + (s * s2) * q)


_EXP_MASK = 0x7FF0000000000000
_MANT_MASK = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000  # bits of 1.0
_TWO52_BITS = 0x4330000000000000  # bits of 2^52: OR-ing an integer < 2^52 into them adds it
_TWO52_BIAS = 4503599627371519.0  # 2^52 + 1023


# ----------------------------------------------------------------------------- ext numbers
# An extended-exponent number is a pair (m, e) of float64s standing for m·2^e: m ≥ 0 a
# normal float64 or 0, e an integer-valued float64, (0, -inf) for zero. Its range is that
# of e (exact integers to 2^53), so no sum of products bigbn forms can overflow or
# underflow, and a sum costs a few integer and float operations instead of an exp and a
# log1p. The three conversions below are exact to float64 rounding: exp(x) = m·2^e to
# < 4e-16 relative (plus the input's own rounding, e·ln2 is split in 24 + 53 bits so
# e·_LN2_HI24 is exact for |e| < 2^29, |x| < 3.7e8), and back.

_LN2_HI24 = 0.6931471228599548  # ln2 to 24 bits: e·_LN2_HI24 exact for |e| < 2^29
_LN2_LO24 = 5.7699990475432854e-08  # ln2 - _LN2_HI24 (from the exact ln2)


@njit(inline="always", **_KW)
def _ext_from_log(x):
    """(m, e) with m·2^e = exp(x), m in [2^-1/2, 2^1/2] (widened by the rounding of
    x·log2 e: < 2^-25 for |x| < 1e8), e = round(x·log2 e); (0, -inf) for x = -inf.
    Branch-free; x finite or -inf, |x| < 3.7e8."""
    t = x * _LOG2E + _MAGIC  # n = round(x·log2 e), as for _exp_nonpos
    n = t - _MAGIC
    r = x - n * _LN2_HI24
    r = r - n * _LN2_LO24
    p = _exp_reduced(r)
    fin = x > -np.inf
    return (p if fin else 0.0), (n if fin else -np.inf)


@njit(inline="always", **_KW)
def _exp2_int(d):
    """2^d for an integer-valued float64 d ≤ 0, exactly; 0 for d < -1022 and for NaN.
    Branch-free: d's bits after adding _MAGIC hold d in their low 12, which shifted into
    the exponent field of 1.0 give 2^d."""
    s = _bits_f64(_ONE_BITS + (_f64_bits(d + _MAGIC) << 52))
    return s if d >= -1022.0 else 0.0


@njit(inline="always", **_KW)
def _ext_norm(m, e):
    """(m, e) with m moved to [1, 2) (its binary exponent added to e); m positive
    normal or 0 (then (0, -inf)). Branch-free."""
    b = _f64_bits(m)
    em = _bits_f64(((b & _EXP_MASK) >> 52) | _TWO52_BITS) - _TWO52_BIAS
    y = _bits_f64((b & _MANT_MASK) | _ONE_BITS)
    pos = m > 0.0
    return (y if pos else 0.0), (e + em if pos else -np.inf)


@njit(inline="always", **_KW)
def _log_ext(m, e):
    """log(m·2^e) for m positive normal (any size) or 0 (then -inf). Branch-free.
    m = 2^E'·y with y in [1, 2) read off the bit pattern (E' converted to float by the
    2^52 trick), log y = log1p(y - 1) with y - 1 exact, (E' + e)·ln2 in a 24 + 53-bit
    split: absolute error < 2e-16 + 1.2e-16·|result| for |m·2^e| within 2^±(2^29)."""
    b = _f64_bits(m)
    E = (_bits_f64(((b & _EXP_MASK) >> 52) | _TWO52_BITS) - _TWO52_BIAS) + e
    y = _bits_f64((b & _MANT_MASK) | _ONE_BITS)
    v = E * _LN2_HI24 + (_log1p_unit(y - 1.0) + E * _LN2_LO24)
    return v if m > 0.0 else -np.inf


@njit(inline="always", **_KW)
def _ext_add(am, ae, bm, be):
    """(am, ae) + (bm, be): the larger exponent, the other mantissa scaled down by
    2^-|ae - be| (exactly; to 0 when that is below 2^-1022, a share of the sum below
    2^-1000 for the mantissas the kernels form, ≤ 2^20 and ≥ 2^-1/2). One rounding.
    Branch-free; (0, -inf) + (0, -inf) = (0, -inf) (the NaN of -inf - -inf scales by 0)."""
    big = ae >= be
    s = _exp2_int(-abs(ae - be))
    return (am + bm * s if big else bm + am * s), (ae if big else be)


@njit(**_KW)
def _ext_add_run(m, e, dst, src, h):
    """In place: (m, e)[dst+o] += (m, e)[src+o] for o in range(h) (`_ext_add`); the two
    runs do not overlap. The loop vectorises (AVX2 on this machine)."""
    md = m[dst:dst + h]
    ed = e[dst:dst + h]
    ms = m[src:src + h]
    es = e[src:src + h]
    for o in range(h):
        md[o], ed[o] = _ext_add(md[o], ed[o], ms[o], es[o])
