"""Bit tricks on int64 masks for numba kernels (bit j of a mask is node j)."""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def popcount(x):
    """Number of set bits of a non-negative int64."""
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit(cache=True, nogil=True)
def lowest_bit(x):
    """Index of the lowest set bit of a positive int64."""
    return popcount((x & -x) - 1)
