"""The MAP network: argmax_G Σ_i β_i(G_i) over DAGs with |G_i| ≤ k, out of core.

β_i(G) = log ρ_i(G) + log p(x_i | x_G), so this is the DAG of highest posterior under the
DAG-modular prior Π_i ρ_i(G_i) (the "optimal network" of exact structure learning:
Silander & Myllymäki 2006; Koivisto & Sood 2004 in max-product form).

On the posterior's chunk lattice, one pass in ascending lattice order computes
M(S) = max_{i ∈ S} a_i(S − i) + M(S − i) with a_i(U) = max_{G ⊆ U} β_i(G) rebuilt per
chunk from β (`bigbn/kernels/maxplus.py`), storing M (8 bytes per subset) and the best sink of
every subset (1 byte): 9·2^n bytes, a little less than the posterior run's 10–12·2^n, and the work
of one forward pass with max for log-add-exp. Backtracking from V reads one sink per node
(n chunk reads): the last node i of S is its sink, its parents the best family inside
S − i, and S ← S − i.
"""

from __future__ import annotations

import numpy as np

from bigbn.kernels import maxplus as MP
from bigbn.errors import EngineError
from bigbn.kernels.families import squeeze, unsqueeze

NEG_INF = -np.inf


def _span(job, node: int, first_chunk: int, nchunks: int) -> np.ndarray:
    p = job.plan
    out = np.empty(nchunks * p.alpha_chunk_size)
    MP.best_chunks(job.beta, p.families, node, first_chunk, p.c - 1, p.small_masks, out)
    return out


def map_chunk(job, H: int, terms, read_m) -> tuple[np.ndarray, np.ndarray]:
    """M and the best sinks on chunk H. terms: (high node c+b, first chunk of its 2-chunk
    span, chunk H - b) in ascending b, as the forward task's (plan.py); read_m(G) returns
    the finished M chunk G."""
    p = job.plan
    acc = np.full(p.chunk_size, NEG_INF)
    arg = np.full(p.chunk_size, -1, dtype=np.int8)
    if H == 0:
        acc[0] = 0.0  # M(∅) = 0
    for node, first, G in terms:
        MP.max_into(acc, arg, _span(job, node, first, 2), read_m(G), node)
    low = np.empty((p.c, p.alpha_chunk_size))
    for i in range(p.c):
        MP.best_chunk(job.beta[i], p.families, H, p.c - 1, p.small_masks, low[i])
    out = np.empty(p.chunk_size)
    sink = np.empty(p.chunk_size, dtype=np.int8)
    MP.best_chunk_sinks(acc, arg, low, out, sink)
    return out, sink


def backtrack(beta: np.ndarray, families: np.ndarray, n: int, read_sink) -> np.ndarray:
    """Parent masks (n,) of the MAP DAG from the sink table: read_sink(S) -> best last
    node of S."""
    parents = np.zeros(n, dtype=np.int64)
    S = (1 << n) - 1
    while S:
        i = int(read_sink(S))
        if i < 0:
            raise EngineError(f"no best sink for the node set {S:#x}: no DAG has a finite score "
                              "(every family forbidden?) or the tables are corrupt")
        U = S & ~(1 << i)
        f = MP.best_parents(beta[i], families, np.int64(squeeze(U, i)))
        parents[i] = unsqueeze(int(families[f]), i)
        S = U
    return parents


def dag_score(beta: np.ndarray, families: np.ndarray, parents: np.ndarray) -> float:
    """Σ_i β_i(G_i) of a DAG given by full parent masks."""
    from bigbn.kernels.families import family_rank

    n = len(parents)
    sq = [squeeze(int(parents[i]), i) for i in range(n)]
    idx = family_rank(families, np.array(sq, dtype=np.int64))
    if np.any(idx < 0):
        i = int(np.flatnonzero(idx < 0)[0])
        raise EngineError(f"node {i}'s parent set {int(parents[i]):#x} is not one of its families "
                          "(more parents than k)")
    return float(sum(beta[i, idx[i]] for i in range(n)))
