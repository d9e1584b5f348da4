"""Extended-exponent numbers over arrays: conversions from and to logs, fused multiply-adds
(the scalar arithmetic is fastmath.py).

Part of the kernels (bigbn/kernels/__init__.py lists them); the number types are
those of fastmath.py: natural logs on disk, extended-exponent numbers inside a task.
"""

from __future__ import annotations

from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
# _KW: fastmath's compile options (the FMA contract), so its inlined helpers round alike here
from bigbn.kernels.fastmath import _ext_add, _ext_from_log, _ext_norm, _KW, _log_ext


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
def _ext_add_logs(m, e, x):
    """(m, e)[j] += exp(x[j]), normalised: a row of natural logs x (finite, or -inf: adds
    nothing) added into a row of extended numbers (fastmath.py), one polynomial exp an
    entry and no log; the loop vectorises. The sums of γ's parts (engine: a level's
    chunk parts, then the levels), then `_log_ext_into`."""
    for j in range(x.shape[0]):
        xm, xe = _ext_from_log(x[j])
        sm, se = _ext_add(m[j], e[j], xm, xe)
        m[j], e[j] = _ext_norm(sm, se)
