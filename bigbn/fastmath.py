"""Branch-free log-add-exp that LLVM can vectorise (no libm calls).

numba compiles ``math.exp``/``math.log1p`` to scalar libm calls, so a loop of
``_lae`` (kernels.py) runs at ≈ 12 ns per element and is never vectorised. Here
log(e^a + e^b) = m + log1p(exp(z)), m = max(a, b), z = -|a - b|, is written out
in polynomials and selects only, so LLVM turns the run loop into packed AVX2 code
(4 doubles per ymm register, FMA).

exp(z), z ∈ [-708, 0]: z = n·ln2 + r with n = round(z·log2 e) (by the 1.5·2^52
"magic number" add, whose bit pattern then holds n in its low bits) and r reduced
Cody–Waite style (fdlibm's split of ln2 in hi and lo parts), |r| ≤ ln2/2;
exp(r) by its Taylor polynomial of degree 13 (truncation < 5e-18 relative, Estrin's
scheme for short dependency chains); the
result is scaled by 2^n by adding n << 52 to its bit pattern. z < -708 (also the
NaN from -inf - -inf) gives exp = 0.

log1p(e), e ∈ [0, 1]: with y = 1 + e reduced to [1/√2, √2] (y/2 and + ln2 when
e > √2 - 1), s = (y-1)/(y+1) is formed directly from e (e/(2+e) or (e-1)/(3+e)),
so the rounding of 1 + e never enters; log y = 2·atanh(s) by the odd series in s,
|s| ≤ 0.1716, 11 terms (truncation < 1e-17).

Accuracy (tested in tests/test_fastmath.py against numpy.logaddexp in 80-bit long
double): |fast - exact| ≤ 4e-16·max(1, |m|) + 2e-16. -inf is log 0: the result
is -inf exactly when both inputs are -inf, and equals the other input exactly when
one is -inf. Inputs must not be NaN or +inf.

The float/int bit casts are LLVM bitcasts (``_f64_bits``/``_bits_f64``), so the whole
update is one loop with no scratch buffers. The helpers are ``inline="always"``: a
caller inlining ``_lae_scalar`` should also be compiled with ``fastmath={"contract"}``
to get the same (FMA) rounding; without it results still meet the bound but may differ
in the last bit. numba's on-disk cache does not notice edits to this module in callers
compiled elsewhere with ``cache=True``: clear ``__pycache__`` after changing it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

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
    p = lo + hi * (r4 * r4)
    # 2^n scaling: t's bits are bits(_MAGIC) + n, whose low 12 bits shifted up are n << 52.
    e = _bits_f64(_f64_bits(p) + (_f64_bits(t) << 52))
    return e if z >= _Z_MIN else 0.0


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


@njit(inline="always", **_KW)
def _log_normal(x):
    """log(x) for a positive normal float64 x (≥ 2^-1022, finite). Branch-free.

    x = 2^e·y with y in [1, 2) read off the bit pattern (e converted to float by the
    2^52 trick, which needs no int-to-float instruction), log y = log1p(y - 1) with y - 1
    exact; e·ln2 in fdlibm's hi/lo parts. Absolute error < 2e-16 + 1.2e-16·|log x|."""
    b = _f64_bits(x)
    e = _bits_f64(((b & _EXP_MASK) >> 52) | _TWO52_BITS) - _TWO52_BIAS
    y = _bits_f64((b & _MANT_MASK) | _ONE_BITS)
    return e * _LN2_HI + (_log1p_unit(y - 1.0) + e * _LN2_LO)


@njit(inline="always", **_KW)
def _lae_scalar(a, b):
    """log(exp(a) + exp(b)) (float64), branch-free polynomial version of kernels._lae."""
    m = a if a > b else b
    z = -abs(a - b)
    return m + _log1p_unit(_exp_nonpos(z))


@njit(**_KW)
def _lae_run(x, dst, src, h):
    """In place: x[dst+o] = log(exp(x[dst+o]) + exp(x[src+o])) for o in range(h).

    x: float64 (N,) contiguous; dst, src, h: int64 with the two runs [dst, dst+h) and
    [src, src+h) inside x and not overlapping. The loop vectorises (AVX2 on this
    machine). Used by the truncated Möbius transforms (Koivisto 2006, section 4).
    """
    xd = x[dst:dst + h]
    xs = x[src:src + h]
    for o in range(h):
        xd[o] = _lae_scalar(xd[o], xs[o])
