"""bigbn.kernels.fastmath against extended-precision references: the polynomial exp against
numpy's exp in np.longdouble (x87 80-bit, 64-bit mantissa), the extended-exponent
numbers against exact rationals and mpmath."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit

from bigbn.kernels.fastmath import _exp_nonpos

NEG_INF = -np.inf

pytestmark = pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63,
                                reason="needs an 80-bit long double for the reference")


@njit(fastmath={"contract"}, error_model="numpy")  # the kernels' flags: the same rounding
def _exp_loop(z, out):
    for i in range(z.shape[0]):
        out[i] = _exp_nonpos(z[i])


def test_exp_nonpos_against_longdouble():
    """exp(z) for z ≤ 0 (the plain α sums, kernels._alpha_ranges): < 4e-16 relative
    against np.exp in 80-bit long double over the whole range, at the reduction's
    rounding edges (n ± 1/2)·ln2 and at the ends; 0 below -708, for -inf and for the NaN
    of -inf - -inf."""
    rng = np.random.default_rng(0)
    ln2 = np.log(2.0)
    kh = np.arange(-1021, 0, dtype=np.float64) + 0.5
    z = np.concatenate([-rng.exponential(50.0, 200000), -rng.uniform(0, 708.0, 100000),
                        -rng.uniform(0, 1e-6, 1000), kh * ln2, np.nextafter(kh * ln2, 0.0),
                        np.nextafter(kh * ln2, -np.inf), [0.0, -0.0, -5e-324, -1e-300, -707.9, -708.0]])
    z = z[z >= -708.0]
    got = np.empty_like(z)
    _exp_loop(z, got)
    want = np.exp(z.astype(np.longdouble))
    rel = np.abs(got.astype(np.longdouble) - want) / want
    assert np.all(rel < 4e-16), z[np.argmax(rel)]
    low = np.array([-708.0001, -709.0, -745.0, -1e300, NEG_INF, np.nan])
    out = np.empty_like(low)
    _exp_loop(low, out)
    np.testing.assert_array_equal(out, 0.0)


def test_exp_loop_is_vectorised():
    """A loop of _exp_nonpos compiles to packed FMA code (ymm/zmm registers), no libm call."""
    feats = llvm.get_host_cpu_features()
    if not (feats.get("avx2") and feats.get("fma")):
        pytest.skip("host has no AVX2+FMA")
    fresh = njit(nogil=True, error_model="numpy", fastmath={"contract"})(_exp_loop.py_func)
    fresh(np.zeros(8), np.zeros(8))
    asm = fresh.inspect_asm(fresh.signatures[0])
    packed_fma = [ln for ln in asm.splitlines()
                  if "vfmadd" in ln and "pd" in ln and ("%ymm" in ln or "%zmm" in ln)]
    assert len(packed_fma) >= 7  # the polynomial, 4 or 8 lanes at a time
    libm = [ln for ln in asm.splitlines() if re.search(r"\$(exp|log|log1p)\b", ln)]
    assert libm == []


# ----------------------------------------------------------------------------- ext numbers
# The extended-exponent number (m, e) = m·2^e of the kernels' wide sums, against exact
# rationals (fractions.Fraction: m·2^e is a dyadic rational) and mpmath logarithms.

from fractions import Fraction  # noqa: E402

import mpmath  # noqa: E402

from bigbn.kernels.fastmath import _exp2_int, _ext_add, _ext_add_run, _ext_from_log, _ext_norm, _log_ext  # noqa: E402

mpmath.mp.prec = 200


@njit(fastmath={"contract"}, error_model="numpy")
def _ext_loop(x, m, e):
    for i in range(x.shape[0]):
        m[i], e[i] = _ext_from_log(x[i])


@njit(fastmath={"contract"}, error_model="numpy")
def _log_ext_loop(m, e, out):
    for i in range(m.shape[0]):
        out[i] = _log_ext(m[i], e[i])


@njit(fastmath={"contract"}, error_model="numpy")
def _exp2_loop(d, out):
    for i in range(d.shape[0]):
        out[i] = _exp2_int(d[i])


@njit(fastmath={"contract"}, error_model="numpy")
def _add_loop(am, ae, bm, be, m, e):
    for i in range(am.shape[0]):
        m[i], e[i] = _ext_add(am[i], ae[i], bm[i], be[i])


@njit(fastmath={"contract"}, error_model="numpy")
def _norm_loop(m, e, om, oe):
    for i in range(m.shape[0]):
        om[i], oe[i] = _ext_norm(m[i], e[i])


def _exact(m, e) -> Fraction:
    """m·2^e exactly (e an integer-valued float)."""
    return Fraction(float(m)) * Fraction(2) ** int(e)


def test_exp2_int_every_exponent():
    """2^d exactly for every integer d in [-1022, 0]; 0 below (the subnormal and
    beyond), for -inf and for NaN."""
    d = np.concatenate([np.arange(-1200, 1, dtype=np.float64), [-1e18, -np.inf, np.nan]])
    out = np.empty_like(d)
    _exp2_loop(d, out)
    for di, got in zip(d, out):
        want = 2.0 ** int(di) if np.isfinite(di) and di >= -1022 else 0.0
        assert got == want, (di, got)


def test_ext_from_log_and_back_against_mpmath():
    """exp(x) = m·2^e with m in [2^-1/2, 2^1/2] (to the rounding of x·log2 e) and e an integer, to < 4e-16 relative plus
    x's own rounding, for x from tiny to 1e8 nats (far outside float64's ±709), at every
    binade edge of exp(x) and at the rounding edges n ± 1/2 of the exponent; and back:
    log(m·2^e) to < 2e-16 + 1.2e-16·|log|. -inf is (0, -inf) and back -inf."""
    rng = np.random.default_rng(5)
    ln2 = float(mpmath.log(2))
    ks = np.arange(-1100, 1101, dtype=np.float64)  # every binade of float64 and beyond
    kh = np.arange(-3000, 3001, 7, dtype=np.float64)
    x = np.concatenate([
        rng.uniform(-1e5, 1e5, 3000), rng.uniform(-1e8, 1e8, 500), rng.uniform(-1, 1, 500),
        ks * ln2, np.nextafter(ks * ln2, np.inf), np.nextafter(ks * ln2, -np.inf),  # binade edges
        (kh + 0.5) * ln2, np.nextafter((kh + 0.5) * ln2, -np.inf),  # where n = round(x/ln2) flips
        [0.0, -0.0, 5e-324, -1e-300, 708.0, 710.0, -745.0, -746.0, -1e4, 1e4, -np.inf]])
    m, e = np.empty_like(x), np.empty_like(x)
    _ext_loop(x, m, e)
    fin = np.isfinite(x)
    assert np.all(m[~fin] == 0.0) and np.all(np.isneginf(e[~fin]))
    # 2^±1/2 up to the rounding of x·log2 e (< 2^-25 for |x| < 1e8)
    assert np.all((m[fin] >= 2 ** -0.5 * (1 - 1e-7)) & (m[fin] <= 2 ** 0.5 * (1 + 1e-7)))
    assert np.all(e[fin] == np.round(e[fin]))
    for xi, mi, ei in zip(x[fin], m[fin], e[fin]):
        # relative error of m·2^e against exp(x), x taken exact: log(m·2^e) - x
        err = abs(mpmath.log(mpmath.mpf(float(mi))) + int(ei) * mpmath.log(2) - mpmath.mpf(float(xi)))
        assert err < 4e-16 + 1e-23 * abs(xi), (xi, mi, ei, err)  # n·ln2_lo rounds: 2^-77·|x|
    back = np.empty_like(x)
    _log_ext_loop(m, e, back)
    assert np.isneginf(back[~fin]).all()
    for bi, mi, ei in zip(back[fin], m[fin], e[fin]):
        want = mpmath.log(mpmath.mpf(float(mi))) + int(ei) * mpmath.log(2)
        assert abs(mpmath.mpf(float(bi)) - want) <= 2e-16 + 1.2e-16 * abs(want), (mi, ei, bi)


def test_log_ext_every_binade_of_the_mantissa():
    """log(m·2^e) for m at every binade edge of float64 (2^j and just below, j = -1022..1023)
    and exponents up to ±2^28: the mantissa's own exponent and e add exactly."""
    j = np.arange(-1022, 1024, dtype=np.float64)
    m = np.concatenate([2.0 ** j, np.nextafter(2.0 ** j, 0.0)[1:], [1.0, np.sqrt(2.0), 1.5]])
    for e0 in (0.0, -5e3, 7e6, -(2.0 ** 28), 2.0 ** 28):
        e = np.full_like(m, e0)
        out = np.empty_like(m)
        _log_ext_loop(m, e, out)
        for mi, oi in zip(m, out):
            want = mpmath.log(mpmath.mpf(float(mi))) + int(e0) * mpmath.log(2)
            assert abs(mpmath.mpf(float(oi)) - want) <= 2e-16 + 1.2e-16 * abs(want), (mi, e0, oi)
    out = np.empty(2)
    _log_ext_loop(np.array([0.0, 0.0]), np.array([-np.inf, 5.0]), out)
    assert np.isneginf(out).all()  # zero is -inf, whatever its exponent


def _add_cases(seed):
    """Pairs of ext numbers: exponent differences 0, ±1, around the 53-bit precision and
    the 1022 cut, far apart, zeros, and unnormalised mantissas (the transforms' sums)."""
    rng = np.random.default_rng(seed)
    diffs = np.array([0, 1, -1, 2, 52, 53, 54, -53, 60, 1000, 1021, 1022, 1023, -1022, -1023, 1100,
                      5000, -5000])
    am, ae, bm, be = [], [], [], []
    for d in diffs:
        for _ in range(40):
            base = float(rng.integers(-3000, 3000))  # far outside float64's binades
            am.append(rng.uniform(0.7, 1.5) * 2.0 ** rng.integers(0, 21))  # up to 2^20: sums
            bm.append(rng.uniform(0.7, 1.5) * 2.0 ** rng.integers(0, 21))
            ae.append(base)
            be.append(base - float(d))
    am += [0.0, 0.0, 1.0, 0.0]
    ae += [-np.inf, -np.inf, 3.0, -np.inf]
    bm += [0.0, 1.25, 0.0, 0.75]
    be += [-np.inf, -7.0, -np.inf, 1e4]
    return tuple(np.array(v, dtype=np.float64) for v in (am, ae, bm, be))


def test_ext_add_against_exact_rationals():
    """(am, ae) + (bm, be) = the exact sum to one rounding (2^-52 relative) where the
    smaller is within 2^-1022 of the larger, and the larger alone (the smaller's share
    < 2^-1000) beyond; zero is (0, -inf) and the neutral element."""
    am, ae, bm, be = _add_cases(9)
    m, e = np.empty_like(am), np.empty_like(am)
    _add_loop(am, ae, bm, be, m, e)
    for args in zip(am, ae, bm, be, m, e):
        a_m, a_e, b_m, b_e, mi, ei = args
        if a_m == 0.0 and b_m == 0.0:
            assert mi == 0.0 and np.isneginf(ei), args
            continue
        exact = (_exact(a_m, a_e) if a_m else 0) + (_exact(b_m, b_e) if b_m else 0)
        got = _exact(mi, ei)
        assert ei == max(a_e, b_e), args
        assert abs(got - exact) <= exact * Fraction(1, 2 ** 52) + exact * Fraction(1, 2 ** 1000), args
        if abs(a_e - b_e) <= 1000:
            assert abs(got - exact) <= exact * Fraction(1, 2 ** 52), args


def test_ext_add_run_is_ext_add_and_vectorised():
    """The run loop gives the scalar sums bit for bit, leaves the source run alone, and
    compiles to packed code (ymm/zmm registers) with no libm call."""
    am, ae, bm, be = _add_cases(10)
    h = am.size
    m = np.concatenate([am, [9.0, 9.0], bm])
    e = np.concatenate([ae, [1.0, 1.0], be])
    before = (m.copy(), e.copy())
    _ext_add_run(m, e, 0, h + 2, h)
    wm, we = np.empty(h), np.empty(h)
    _add_loop(am, ae, bm, be, wm, we)
    np.testing.assert_array_equal(m[:h], wm)
    np.testing.assert_array_equal(e[:h], we)
    np.testing.assert_array_equal(m[h:], before[0][h:])
    np.testing.assert_array_equal(e[h:], before[1][h:])
    feats = llvm.get_host_cpu_features()
    if not feats.get("avx2"):
        pytest.skip("host has no AVX2")
    fresh = njit(nogil=True, error_model="numpy", fastmath={"contract"})(_ext_add_run.py_func)
    fresh(np.zeros(8), np.zeros(8), 0, 4, 4)
    asm = fresh.inspect_asm(fresh.signatures[0])
    assert len([ln for ln in asm.splitlines() if "pd" in ln and ("%ymm" in ln or "%zmm" in ln)]) >= 8
    assert [ln for ln in asm.splitlines() if re.search(r"\$(exp|log|log1p|ldexp)\b", ln)] == []


def test_ext_norm_keeps_the_value_exactly():
    """The mantissa moves to [1, 2) and the value m·2^e is unchanged, for mantissas of every
    binade (normal) and exponents far outside float64's; 0 becomes (0, -inf)."""
    j = np.arange(-1022, 1024, dtype=np.float64)
    m = np.concatenate([2.0 ** j * 1.375, np.nextafter(2.0 ** j, np.inf), [0.0]])
    e = np.resize(np.array([0.0, -7e5, 3e6]), m.size)
    om, oe = np.empty_like(m), np.empty_like(m)
    _norm_loop(m, e, om, oe)
    assert om[-1] == 0.0 and np.isneginf(oe[-1])
    f, k = np.frexp(m[:-1])  # m = f·2^k, f in [1/2, 1): exactly 2f·2^(k-1)
    np.testing.assert_array_equal(om[:-1], 2 * f)
    np.testing.assert_array_equal(oe[:-1], e[:-1] + (k - 1))


def test_ext_sums_spanning_thousands_of_nats():
    """Long sums (the transforms' runs) of terms spread over 20000 nats, as extended
    numbers from logs and back, against logsumexp in mpmath: far outside any one float64
    scale, exact to a few ulps of the result."""
    rng = np.random.default_rng(11)
    for spread in (50.0, 2000.0, 20000.0):
        x = rng.uniform(-spread, spread, (64, 200))
        x[rng.random(x.shape) < 0.1] = -np.inf
        m, e = np.empty(x.size), np.empty(x.size)
        _ext_loop(x.ravel(), m, e)
        m, e = m.reshape(x.shape), e.reshape(x.shape)
        for r in range(1, 64):  # row 0 += row r, as _ext_add_run's dst += src
            mm = np.concatenate([m[0], m[r]])
            ee = np.concatenate([e[0], e[r]])
            _ext_add_run(mm, ee, 0, 200, 200)
            m[0], e[0] = mm[:200], ee[:200]
        got = np.empty(200)
        _log_ext_loop(m[0].copy(), e[0].copy(), got)
        for j in range(200):
            terms = [mpmath.mpf(float(v)) for v in x[:, j] if np.isfinite(v)]
            want = mpmath.log(mpmath.fsum(mpmath.exp(t) for t in terms))
            assert abs(mpmath.mpf(float(got[j])) - want) <= 1e-15 * max(1.0, abs(float(want))), (spread, j)
