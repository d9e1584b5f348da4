"""Bit tricks on int64 masks (bit j of a mask is node j): the one place bigbn counts bits.

- `popcount`: one integer, in numba kernels and in Python alike (the popcnt instruction
  through llvm.ctpop; for any integer type, the count of its two's complement bits).
- `popcounts`: every int64 (or uint64) mask of an array at once, in numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)


@intrinsic
def _ctpop(typingctx, x):
    """llvm.ctpop on an integer: its number of set bits, in its own type."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@njit(cache=True, nogil=True)
def popcount(x):
    """Number of set bits of an integer mask (a non-negative int64, or a uint64 word)."""
    return _ctpop(x)


@njit(cache=True, nogil=True)
def lowest_bit(x):
    """Index of the lowest set bit of a positive int64."""
    return popcount((x & -x) - 1)


_M1, _M2, _M4, _H01 = (np.uint64(v) for v in (0x5555555555555555, 0x3333333333333333,
                                                0x0F0F0F0F0F0F0F0F, 0x0101010101010101))


def popcounts(masks) -> np.ndarray:
    """Number of set bits of each int64 mask: int64 array of the same shape (SWAR on the
    masks' 64 bits, the same count as `popcount`)."""
    x = np.array(masks, dtype=np.int64, ndmin=1).view(np.uint64)
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    out = ((x * _H01) >> np.uint64(56)).astype(np.int64)
    return out.reshape(np.shape(masks))
