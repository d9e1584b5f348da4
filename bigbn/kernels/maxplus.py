"""Numba kernels of the MAP network: the engine's chunk kernels in the max-plus semiring.

The highest-scoring DAG argmax_G Σ_i β_i(G_i), |G_i| ≤ k (Silander & Myllymäki 2006;
Koivisto & Sood 2004 with max for sum) on the same chunk lattice as the posterior:

- ``best_chunk``      a_i(U) = max_{G ⊆ U, |G| ≤ k} β_i(G) on one chunk: β folded into the
                      chunk's low bits over the high-part subsets of the chunk id, then a
                      k-truncated upward max transform over the low bits (as _alpha_chunk);
- ``max_into``        the cross-chunk terms of the recursion for one high node;
- ``best_chunk_sinks`` M(S) = max_{i ∈ S} a_i(S − i) + M(S − i), M(∅) = 0, in one chunk, with
                      the maximising node (the best sink of S) as int8.

Max is exact and every sum a_i(S − i) + M(S − i) adds the same two operands whatever the
chunk size (a_i is a max of β values, M(S − i) was computed the same way), so M and the
sinks are the same bit for bit for every lattice. Ties (in floating point) go to the
smallest node index: candidates are compared in ascending node order with a strict >,
the low nodes of a chunk before its high ones.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)

NEG_INF = -np.inf
_KW = dict(cache=True, nogil=True)


@njit(**_KW)
def upward_max_truncated(x, d, small):
    """In place: x(T) <- max_{S ⊆ T} x(S) over d bits, x supported on |S| ≤ k (the
    k-truncated upward transform of kernels._upward_truncated with max for log-add-exp)."""
    for j in range(d):
        h = 1 << j
        limit = 1 << (d - j - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            src = m << (j + 1)
            for e in range(h):
                a = x[src + e]
                if a > x[src + h + e]:
                    x[src + h + e] = a


@njit(**_KW)
def best_chunk(beta_row, fam, chunk_id, d, small, out):
    """a_i on one chunk of 2^d entries (squeezed masks, chunk id = their high bits)."""
    for o in range(out.shape[0]):
        out[o] = NEG_INF
    lowmask = (np.int64(1) << d) - 1
    for f in range(fam.shape[0]):
        g = fam[f]
        if ((g >> d) & ~chunk_id) == 0:
            gl = g & lowmask
            if beta_row[f] > out[gl]:
                out[gl] = beta_row[f]
    upward_max_truncated(out, d, small)


@njit(**_KW)
def best_chunks(beta, fam, node, first_chunk, d, small, out):
    """a_node on consecutive chunks first_chunk, first_chunk + 1, ... (out: a multiple of 2^d)."""
    size = np.int64(1) << d
    for t in range(out.shape[0] // size):
        best_chunk(beta[node], fam, first_chunk + t, d, small, out[t * size:(t + 1) * size])


@njit(**_KW)
def max_into(acc, arg, a, m, node):
    """acc[j], arg[j] <- a[j] + m[j], node where that is strictly larger (cross-chunk term
    of high node ``node``; call in ascending node order)."""
    for j in range(acc.shape[0]):
        v = a[j] + m[j]
        if v > acc[j]:
            acc[j] = v
            arg[j] = node


@njit(**_KW)
def best_chunk_sinks(acc, acc_arg, a_low, out, sink):
    """M and the best sink on one chunk; acc/acc_arg hold the high-node terms.

    acc: float64 (2^c,), max over high nodes c + b (b in the chunk id) of
    a_{c+b}(S − (c+b)) + M(S − (c+b)), with acc_arg the maximising node (-1 if none), and
    acc[0] = 0 on chunk 0 (M(∅) = 0). a_low: float64 (c, 2^(c-1)), a_i on the chunk for the
    low nodes. out: float64 (2^c,) M; sink: int8 (2^c,) the best last node of S (-1: none,
    i.e. S = ∅ or no DAG on S).
    """
    c = a_low.shape[0]
    for o in range(out.shape[0]):
        best = NEG_INF
        arg = -1
        for i in range(c):
            if (o >> i) & 1:
                p = o - (1 << i)
                v = a_low[i, (p & ((1 << i) - 1)) | ((p >> (i + 1)) << i)] + out[p]
                if v > best:
                    best = v
                    arg = i
        if acc[o] > best:
            best = acc[o]
            arg = acc_arg[o]
        out[o] = best
        sink[o] = arg


@njit(**_KW)
def best_parents(beta_row, fam, U):
    """Index of the best family of a node inside the squeezed set U (first of equals)."""
    best = NEG_INF
    arg = -1
    for f in range(fam.shape[0]):
        if fam[f] & ~U == 0 and beta_row[f] > best:
            best = beta_row[f]
            arg = f
    return arg
