"""Families (candidate parent sets) and subset bitmasks.

Bit j of a mask is node j. A parent set of node i is a subset of V - {i}; it is stored
*squeezed*: bit i is removed, so the nodes above i move down by one and every table of
node i is indexed by an (n-1)-bit mask (docs/design.md, "Subsets as bitmasks").

The families of a node are all squeezed masks with at most k bits, in ascending numeric
order (`family_masks`). The same order is used for every node, so a local-score table
``beta`` has shape (n, F) with ``beta[i, f]`` the score of node i with parents
``unsqueeze(masks[f], i)``. Ascending order has a useful property: the families that
use only the lowest b bits are exactly a prefix of the list.
"""

from __future__ import annotations

from math import comb

import numpy as np

from bigbn.errors import EngineError, OptionError


def n_families(nbits: int, k: int) -> int:
    """Number of subsets of an nbits-element set with at most k elements."""
    return sum(comb(nbits, j) for j in range(min(k, nbits) + 1))


def family_masks(nbits: int, k: int) -> np.ndarray:
    """All masks over ``nbits`` bits with popcount <= k, ascending; int64, shape (F,)."""
    if nbits < 0 or k < 0:
        raise OptionError(f"family masks over {nbits} bits with at most {k}: both must be non-negative")
    if nbits > 62:
        raise OptionError(f"family masks over {nbits} bits: at most 62 bits fit an int64 mask")
    out = [0]
    # Grow by size: sets of size s+1 are sets of size s plus one bit above their highest.
    frontier = [0]
    for _ in range(min(k, nbits)):
        nxt = []
        for m in frontier:
            start = m.bit_length()
            for b in range(start, nbits):
                nxt.append(m | (1 << b))
        out.extend(nxt)
        frontier = nxt
    arr = np.array(sorted(out), dtype=np.int64)
    if arr.size != n_families(nbits, k):
        raise EngineError(f"{arr.size} family masks over {nbits} bits with at most {k}, "
                          f"not {n_families(nbits, k)}")
    return arr


def family_rank(masks: np.ndarray, query) -> np.ndarray:
    """Index of each query mask in ``masks`` (as made by family_masks); -1 if absent."""
    q = np.asarray(query, dtype=np.int64)
    pos = np.searchsorted(masks, q)
    pos = np.minimum(pos, masks.size - 1)
    return np.where(masks[pos] == q, pos, -1)


def squeeze(mask: int, i: int) -> int:
    """Remove bit i from mask (bits above i move down by one). Bit i must be clear."""
    low = mask & ((1 << i) - 1)
    return low | ((mask >> (i + 1)) << i)


def unsqueeze(mask: int, i: int) -> int:
    """Insert a zero bit at position i (inverse of squeeze)."""
    low = mask & ((1 << i) - 1)
    return low | ((mask >> i) << (i + 1))


def mask_to_nodes(mask: int) -> list[int]:
    """Sorted list of the bit positions set in mask."""
    out = []
    j = 0
    while mask:
        if mask & 1:
            out.append(j)
        mask >>= 1
        j += 1
    return out


def family_parent_matrix(n: int, k: int) -> np.ndarray:
    """Parents of every (node, family) as an int64 array (n, F, k), padded with -1.

    ``out[i, f, :]`` lists the parents (node indices in V, ascending) of node i in
    family f; this is what score counting kernels consume.
    """
    masks = family_masks(n - 1, k)
    out = np.full((n, masks.size, max(k, 1)), -1, dtype=np.int64)
    for f, m in enumerate(masks.tolist()):
        sq = mask_to_nodes(m)
        for i in range(n):
            for t, j in enumerate(sq):
                out[i, f, t] = j if j < i else j + 1
    return out
