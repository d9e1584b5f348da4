"""bigbn.fastmath against an extended-precision numpy reference.

The reference is numpy.logaddexp evaluated in np.longdouble (x87 80-bit, 64-bit
mantissa), independent of the polynomial code. Bound: |fast - exact| ≤
4e-16·max(1, |m|) + 2e-16, m = max(a, b).
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit

from bigbn.fastmath import _lae_run, _lae_scalar, _log_normal

NEG_INF = -np.inf
DIFFS = [0.0, 5e-324, 1e-310, 1e-300, 1e-17, 1e-12, 1e-6, 0.3, 0.3465, 0.35, 0.8813735870195429,
         1.0, 2.0, 30.0, 36.7, 700.0, 707.9, 708.0, 708.1, 709.0, 744.0, 745.0, 746.0, 800.0, 1e4,
         1e300]

pytestmark = pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63,
                                reason="needs an 80-bit long double for the reference")


def _reference(a, b):
    """Exact-to-~1e-19 logaddexp of float64 arrays, as longdouble."""
    return np.logaddexp(a.astype(np.longdouble), b.astype(np.longdouble))


def _run(a, b):
    """_lae_run on x = [a, pad, b] (dst = 0, src = len(a) + 3); returns the dst run."""
    h = a.shape[0]
    x = np.concatenate([a, [1.0, 2.0, 3.0], b])
    before = x.copy()
    _lae_run(x, 0, h + 3, h)
    np.testing.assert_array_equal(x[h:], before[h:])  # src run and padding untouched
    return x[:h]


@njit(fastmath={"contract"})  # same flags as the run: bit-identical results
def _scalar_loop(a, b, out):
    for i in range(a.shape[0]):
        out[i] = _lae_scalar(a[i], b[i])


def _scalar(a, b):
    out = np.empty_like(a)
    _scalar_loop(a, b, out)
    return out


def _check(a, b, fn):
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    got = fn(a, b)
    ref = _reference(a, b)
    assert not np.any(np.isnan(got))
    both = np.isneginf(a) & np.isneginf(b)
    np.testing.assert_array_equal(np.isneginf(got), both)  # -inf exactly when both are -inf
    one = np.isneginf(a) ^ np.isneginf(b)
    np.testing.assert_array_equal(got[one], np.maximum(a, b)[one])  # -inf is the neutral element
    fin = ~both
    m = np.maximum(a, b)[fin]
    err = np.abs(got[fin].astype(np.longdouble) - ref[fin])
    bound = 4e-16 * np.maximum(1.0, np.abs(m)) + 2e-16
    bad = np.flatnonzero(err > bound)
    assert bad.size == 0, (f"{bad.size} pairs out of bound, first a={a[fin][bad[0]]!r} "
                           f"b={b[fin][bad[0]]!r} got={got[fin][bad[0]]!r} err={err[bad[0]]}")


def _pairs(seed):
    """Arrays a, b covering the cases of the specification."""
    rng = np.random.default_rng(seed)
    parts_a, parts_b = [], []

    def add(x, y):
        parts_a.append(np.asarray(x, dtype=np.float64))
        parts_b.append(np.asarray(y, dtype=np.float64))

    n = 20000
    add(rng.uniform(-1e5, 1e5, n), rng.uniform(-1e5, 1e5, n))
    a = rng.uniform(-3.0, 3.0, n)
    add(a, a - rng.uniform(0.0, 40.0, n))  # both e and log1p(e) over their whole range
    a = rng.uniform(-1e-3, 1e-3, n)
    add(a, a - rng.uniform(0.0, 2.0, n))  # |m| ≪ 1: absolute accuracy near 0
    a = rng.uniform(-1e5, 1e5, n)
    add(a, a - np.exp(rng.uniform(-40.0, 7.0, n)))  # log-uniform differences
    for d in DIFFS:
        for base in (rng.uniform(-3.0, 3.0, 500), rng.uniform(-1e5, 1e5, 500)):
            add(base, base - d)
            add(base - d, base)
    vals = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310, 2.2e-308, -1e-300, 1e-16,
                     -1.0, 1.0, -745.0, 709.0, -1e300, 1e300, -1.7e308, 1.7e308, NEG_INF])
    va, vb = np.meshgrid(vals, vals)
    add(va.ravel(), vb.ravel())  # all pairs of special values, incl. -inf/-inf
    a = rng.uniform(-50.0, 50.0, 1000)
    add(a, np.full(1000, NEG_INF))
    add(np.full(1000, NEG_INF), a)
    add(np.full(7, NEG_INF), np.full(7, NEG_INF))
    # random subnormal pairs: differences in the denormal range
    sub = rng.integers(-2**40, 2**40, size=(2, 2000)).astype(np.float64) * 5e-324
    add(sub[0], sub[1])
    return np.concatenate(parts_a), np.concatenate(parts_b)


@pytest.mark.parametrize("fn", [_run, _scalar], ids=["run", "scalar"])
def test_accuracy_against_longdouble(fn):
    a, b = _pairs(0)
    _check(a, b, fn)


def test_matches_float64_logaddexp_roughly():
    # Second, coarser reference in float64 (numpy's own logaddexp, itself ~1 ulp).
    rng = np.random.default_rng(1)
    a = rng.uniform(-100.0, 100.0, 5000)
    b = a - rng.exponential(5.0, 5000)
    np.testing.assert_allclose(_run(a, b), np.logaddexp(a, b), rtol=4e-16, atol=1e-15)


def test_symmetric_and_equal_to_scalar():
    a, b = _pairs(2)
    np.testing.assert_array_equal(_run(a, b), _run(b, a))
    np.testing.assert_array_equal(_run(a, b), _scalar(a, b))


@pytest.mark.parametrize("h", [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 1000])
def test_run_lengths_and_directions(h):
    rng = np.random.default_rng(h)
    x = rng.uniform(-20.0, 5.0, 3 * h + 11)
    x[rng.random(x.shape[0]) < 0.2] = NEG_INF
    for dst, src in ((0, h), (h + 5, 1), (2 * h + 11, h + 3)):
        if max(dst, src) + h > x.shape[0]:
            continue
        y = x.copy()
        _lae_run(y, dst, src, h)
        want = x.astype(np.longdouble)
        want[dst:dst + h] = _reference(x[dst:dst + h], x[src:src + h])
        outside = np.ones(x.shape[0], dtype=bool)
        outside[dst:dst + h] = False
        np.testing.assert_array_equal(y[outside], x[outside])
        with np.errstate(invalid="ignore"):  # -inf - -inf where both are -inf (checked next)
            err = np.nan_to_num(np.abs(y.astype(np.longdouble) - want)[~outside], nan=0.0)
        assert np.all(err <= 4e-16 * np.maximum(1.0, np.abs(y[~outside])) + 2e-16)
        np.testing.assert_array_equal(np.isneginf(y[~outside]),
                                      np.isneginf(x[dst:dst + h]) & np.isneginf(x[src:src + h]))


def test_run_loop_is_vectorised():
    """The run loop compiles to packed FMA code (ymm/zmm registers), no libm call."""
    feats = llvm.get_host_cpu_features()
    if not (feats.get("avx2") and feats.get("fma")):
        pytest.skip("host has no AVX2+FMA")
    fresh = njit(nogil=True, error_model="numpy", fastmath={"contract"})(_lae_run.py_func)
    x = np.zeros(8)
    fresh(x, 0, 4, 4)
    asm = fresh.inspect_asm(fresh.signatures[0])
    packed_fma = [ln for ln in asm.splitlines()
                  if "vfmadd" in ln and "pd" in ln and ("%ymm" in ln or "%zmm" in ln)]
    assert len(packed_fma) >= 15  # the two polynomials, 4 or 8 lanes at a time
    libm = [ln for ln in asm.splitlines() if re.search(r"\$(exp|log|log1p)\b", ln)]
    assert libm == []


@njit(fastmath={"contract"}, error_model="numpy")
def _log_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = _log_normal(x[i])


def test_log_normal_against_longdouble():
    """log of positive normal numbers (the linear-domain alpha's way back, kernels.py):
    every binade, the edges of the mantissa reduction (1, √2, 2) and the extremes;
    |error| ≤ 2e-16 + 1.2e-16·|log x| against np.log in 80-bit long double."""
    rng = np.random.default_rng(3)
    x = np.concatenate([
        np.exp(rng.uniform(-708.0, 709.0, 200000)),
        2.0 ** np.arange(-1022, 1024, dtype=np.float64),
        np.nextafter(2.0 ** np.arange(-1021, 1024, dtype=np.float64), 0.0),  # just below 2^e
        [1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0), np.sqrt(2.0), np.nextafter(np.sqrt(2.0), 2.0),
         np.nextafter(np.sqrt(2.0), 0.0), 2.2250738585072014e-308, 1.7976931348623157e308, 1.0 + 1e-9],
        1.0 + rng.uniform(-1e-6, 1e-6, 1000),  # log x near 0: absolute accuracy
    ])
    got = np.empty_like(x)
    _log_loop(x, got)
    want = np.log(x.astype(np.longdouble))
    err = np.abs(got.astype(np.longdouble) - want)
    bound = 2e-16 + 1.2e-16 * np.abs(want)
    assert np.all(err <= bound), x[np.argmax(err - bound)]
