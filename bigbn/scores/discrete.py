"""Local scores of discrete data: the table ``beta`` of log marginal likelihoods.

For node i with parent set G (|G| <= k), ``beta[i, f] = log p(x_i | x_G)``, the Dirichlet-
multinomial marginal likelihood of column i given the columns G, where f indexes the
squeezed mask of G in ``family_masks(n - 1, k)`` (see `bigbn.kernels.families`). No structure
prior is added here: the engine adds log rho_i(G) (docs/design.md, table ``beta``).

With r_i the arity of node i, q_i = prod_{p in G} r_p the number of parent configurations
(all of them, observed or not), N_ijk the number of rows with parent configuration j and
x_i = k, N_ij = sum_k N_ijk, the score with Dirichlet hyperparameters a_ijk, a_ij = sum_k a_ijk
is

    sum_j [ lgamma(a_ij) - lgamma(a_ij + N_ij) + sum_k (lgamma(a_ijk + N_ijk) - lgamma(a_ijk)) ]

- K2 (Cooper & Herskovits 1992): a_ijk = 1, a_ij = r_i;
- BDeu (Heckerman, Geiger & Chickering 1995) with equivalent sample size ess:
  a_ijk = ess / (q_i r_i), a_ij = ess / q_i.

An unobserved configuration j (N_ij = 0) contributes 0, so only observed ones are summed.
Each difference lgamma(a + N) - lgamma(a) is one `_log_rising(a, N)`: for a ≥ 16 (a large
ess, or K2 with many levels) from Stirling's series, not as a difference of two log-gammas
near a·log a, which lost up to 5e-7 nats at ess 1e8. The terms are summed with their
rounding errors carried (`_two_sum`): a plain running sum of 2·10^5 terms near ±14 lost
1.4e-7 nats (10^5 rows in as many parent configurations). Both since bdeu-2, k2-2.

Counting, when every joint table of k + 1 variables fits the dense count array (binary
data up to k = 10 at m = 1000): once per variable set S, |S| <= k + 1, depth first, each
from its prefix's cells; see "joint tables" below (n = 22, k = 8: 2.4 s on 2 cores,
against 15.7 s per family). Where a prefix has few cells (a prefix's cells times a
node's states ≤ 64: binary data to k = 6, three states to k = 3) the cells are bit sets
over the rows and a set's counts popcounts of (cell AND state), m/64 words each, instead
of one increment per row (n = 30, k = 3, m = 10^5, one thread: 4.0 → 0.14 CPU seconds
binary, 3.8 → 0.73 with three states).

Counting otherwise: one kernel call handles a block of parent sets G (full n-bit sets). For each G it
computes every row's parent configuration once (mixed radix) and then scores every child
i not in G. Children with q_i r_i <= ``dense_limit`` count into a dense (q_i, r_i) array;
others (large arities) use the rows sorted by configuration once per G, counting the child
values group by group in an r_i-sized buffer. Blocks run on threads (the kernel releases
the GIL) and write disjoint entries of ``beta``.

Log-gammas (both paths): a family with q_i r_i > 64 cells sums up to that many log-gamma
differences, and at large k they dominate (n = 22, k = 8, binary: 2^9 cells per family, 9 million
families). Their arguments are a + v for a few distinct hyperparameters a and integers
0 ≤ v ≤ m, so each thread keeps tables _log_rising(a, v), v = 0..m, for the last 32 values
of a it met and reads them instead (the same numbers bit for bit: each entry is the
kernel's own _log_rising(a, v)). Four times fewer seconds at k = 8 on binary data.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.kernels.bits import popcount
from bigbn.io.data import Dataset
from bigbn.errors import OptionError
from bigbn.kernels.families import family_masks, n_families

__all__ = ["SCORES", "local_scores", "parent_set_index", "parent_sets_of"]

#: Score names `local_scores` accepts.
SCORES = ("bdeu", "k2")

_KEY_LIMIT = 2.0**62  # mixed-radix configuration indices stay below this (int64)


# Largest ess (and BGe and CG α_μ, α_w) accepted. The BDeu local scores of examples/asia.csv
# against 60-digit mpmath log-gamma erred by 3e-7 nats at 1e8, 6e-6 at 1e9, 3e-3 at 1e12
# and 0.5 at 1e14 while lgamma(a + N) − lgamma(a) was taken as a difference; by
# `_log_rising` (bdeu-2) they are within 1e-12 nats at 1e8 (tests/test_scores.py checks up to
# this bound), and at 1e20. BGe's and CG's scores erred by 9e-7 nats at α_w or α_μ = 1e8
# (3e-8 relative), 5e-9 at 1e6: their log Γ_l(a1) − log Γ_l(a0) was a difference of
# log-gammas and a0·l·log t − a1·log det R one of two terms near a1·l·log t; now
# `_log_rising` terms (bge-4, cg-6) and −(m/2)·l·log t − a1·Σ_j log1p(u_j/t) with t kept
# out of R's pivots (bigbn/scores/bge.py `log_dets`; bge-5, cg-7), within 3e-13 nats at 1e8
# (tests/test_bge.py, tests/test_cg.py check up to this bound), and 1e-13 at α_w = 1e9.
# The bound stays for them as the range tested and because their error estimate for
# collinear columns, a1·ε·Σ_j (t + 16·P_jj)/d_j (bge.LOG_ERROR_TOL), grows with a1 whatever the
# data: from α_w near 1e10 it refuses every set, single columns too.
MAX_HYPER = 1e8
#: float64's smallest normal number: a BDeu prior count ess/(q·r) below it is subnormal,
#: carried to fewer digits (at 5e-324, none: ess/(q·r) is 0 and the score -inf)
_TINY = float(np.finfo(np.float64).tiny)


@numba.njit(cache=True, nogil=True)
def _compress(cfg):
    """Replace the int64 values of cfg (m,) by their ranks 0..u-1 among the distinct
    values (order kept); return u as a float."""
    order = np.argsort(cfg)
    rank = -1
    prev = 0
    for t in range(order.size):
        v = cfg[order[t]]
        if t == 0 or v != prev:
            rank += 1
            prev = v
        cfg[order[t]] = rank
    return float(rank + 1)


@numba.njit(cache=True, nogil=True)
def _parent_configs(data_t, arities, parents, cfg):
    """cfg[t] = configuration of the parents (node ids, -1 padded) in row t, mixed radix.

    Exact mixed radix (0..q-1) whenever q < 2**62; beyond that the index is compressed
    to ranks before it could overflow (only the grouping of rows then matters).
    """
    m = cfg.size
    for t in range(m):
        cfg[t] = 0
    span = 1.0
    for a in range(parents.size):
        p = parents[a]
        if p < 0:
            break
        r = arities[p]
        if span * r >= _KEY_LIMIT:
            span = _compress(cfg)
        x = data_t[p]
        for t in range(m):
            cfg[t] = cfg[t] * r + x[t]
        span *= r


#: families with more cells than this (q_i r_i) read their log-gammas from cached tables
_TABLE_CELLS = 64
_TABLE_SLOTS = 32


#: from this a on, `_log_rising` takes Stirling's series, not a difference of log-gammas
_STIRLING_FROM = 16.0


@numba.njit(cache=True, nogil=True)
def _stirling_tail(x):
    """lgamma(x) − ((x − ½) log x − x + ½ log 2π), x ≥ 16: Stirling's series to its x^-9
    term (the next, 691/(360360 x^11), is below 1.2e-16 there)."""
    y = 1.0 / (x * x)
    return (1.0 / 12.0 + y * (-1.0 / 360.0 + y * (1.0 / 1260.0 + y * (-1.0 / 1680.0 + y / 1188.0)))) / x


@numba.njit(cache=True, nogil=True)
def _log_rising(a, v):
    """log Γ(a + v) − log Γ(a), a > 0, v ≥ 0 any real number (a whole v: the log of the
    rising factorial a(a+1)…(a+v−1); BGe's and CG's Wishart terms take v = m/2, a half for
    odd m), to a few ulps of itself.

    Below a = 16 as math.lgamma(a + v) − math.lgamma(a). From there on that difference
    cancels: both log-gammas are near a·log a and each errs by an ulp of it, so with ess
    1e8 (a = 1e8) a term of one row erred by 2e-7 nats and BDeu scores by 5e-7 nats
    (1e-8 relative; K2 with 10 000 levels 1e-10 nats). Instead, from Stirling's series,
    (a − ½)·log1p(v/a) + v·(log(a + v) − 1) + tail(a + v) − tail(a), whose terms are
    each as large as the result or far smaller: within 3e-16 of it, relatively, for
    16 ≤ a ≤ 1e15 and v up to 1e8, whole or half (against 60-digit mpmath): the series is
    lgamma's own at a and at a + v, nothing in it asks v to be whole."""
    return _log_rising_lg(a, v, math.lgamma(a) if a < _STIRLING_FROM else 0.0)


@numba.njit(cache=True, nogil=True)
def _log_rising_lg(a, v, lg_a):
    """`_log_rising(a, v)` given lg_a = math.lgamma(a) (read only below a = 16), so that a
    caller summing many terms of one a takes lgamma(a) once: the same bits."""
    if a < _STIRLING_FROM:
        return math.lgamma(a + v) - lg_a
    if v == 0.0:
        return 0.0
    return (a - 0.5) * math.log1p(v / a) + v * (math.log(a + v) - 1.0) \
        + (_stirling_tail(a + v) - _stirling_tail(a))


@numba.njit(cache=True, nogil=True)
def _two_sum(s, t):
    """(s + t rounded, its rounding error exactly) (Knuth's TwoSum): a family's score adds
    up to 2m terms of ±(log-gamma difference) into a total as large as m·log r, and the
    roundings of a plain sum build up (m = 10^5 rows in 10^5 parent configurations, ess 1:
    1.4e-7 nats); the scores carry the errors in a second number and add it at the end."""
    u = s + t
    b = u - s
    return u, (s - (u - b)) + (t - b)


@numba.njit(cache=True, nogil=True)
def _carried(s, err):
    """A `_two_sum` total with its carried roundings; an infinite total as it is (TwoSum
    makes the roundings of an infinite term NaN: -inf + NaN would turn a score of -inf,
    an impossible family, into NaN)."""
    return s + err if math.isfinite(s) else s


@numba.njit(cache=True, nogil=True)
def _lgamma_row(keys, tables, clock, a):
    """The row s of ``tables`` with tables[s, v] = _log_rising(a, v) = lgamma(a + v) −
    lgamma(a), v = 0..m (tables has m + 1 columns): found among the cached rows, or
    computed into the slot filled longest ago. The values are those `_log_rising` gives
    inside a kernel, so the scores are the same bit for bit with or without the tables."""
    for s in range(keys.size):
        if keys[s] == a:
            return s
    s = clock[0] % keys.size
    clock[0] += 1
    keys[s] = a
    lg_a = math.lgamma(a)
    for v in range(tables.shape[1]):
        tables[s, v] = _log_rising_lg(a, float(v), lg_a)
    return s


@numba.njit(cache=True, nogil=True)
def _score_parent_sets(data_t, arities, parent_sets, family_index, todo, is_k2, ess, dense_size,
                       beta):
    """Score every child of the parent sets ``parent_sets[g]`` for g in ``todo``.

    data_t: int32 (n, m), row j = column j of the data; arities: int64 (n,);
    parent_sets: int64 (P, kk), node ids ascending, -1 padded; family_index: int64 (P, n),
    the family f of child i for parent set g (-1 when i is in g); todo: int64 (T,);
    dense_size: int, families with q*r <= dense_size are counted in a dense array of this size,
    the others by sorting rows by parent configuration;
    beta: float64 (n, F), written at [i, family_index[g, i]].
    """
    n, m = data_t.shape
    rmax = 1
    for i in range(n):
        rmax = max(rmax, arities[i])
    cfg = np.empty(m, np.int64)
    dense = np.zeros(dense_size, np.int64)
    child_count = np.zeros(rmax, np.int64)
    xs = np.empty(m, np.int32)
    # log-gamma tables _log_rising(a, v), v = 0..m, for the few distinct a of large families:
    # with k = 8 on binary data each family has 2^9 cells and as many log-gammas to sum
    keys = np.full(_TABLE_SLOTS, np.nan)
    tables = np.empty((_TABLE_SLOTS, m + 1))
    clock = np.zeros(1, np.int64)
    order = np.empty(0, np.int64)
    ends = np.empty(0, np.int64)
    n_groups = 0
    for g in todo:
        parents = parent_sets[g]
        q = 1.0
        for a in range(parents.size):
            if parents[a] >= 0:
                q *= arities[parents[a]]
        have_cfg = False
        have_groups = False
        for i in range(n):
            f = family_index[g, i]
            if f < 0:
                continue
            r = arities[i]
            if is_k2:
                a_ij = float(r)
                a_ijk = 1.0
            else:
                a_ij = ess / q
                a_ijk = ess / (q * r)
            tabled = q * r > _TABLE_CELLS
            lg_ij = tables[0]
            lg_ijk = tables[0]
            if tabled:
                row_ij = _lgamma_row(keys, tables, clock, a_ij)
                row_ijk = _lgamma_row(keys, tables, clock, a_ijk)
                if keys[row_ij] != a_ij:  # a_ijk's miss refilled a_ij's slot: fill another
                    row_ij = _lgamma_row(keys, tables, clock, a_ij)
                lg_ij = tables[row_ij]
                lg_ijk = tables[row_ijk]
            lg_a_ij = math.lgamma(a_ij)
            lg_a_ijk = math.lgamma(a_ijk)
            x = data_t[i]
            s = 0.0
            err = 0.0  # the roundings of s (_two_sum)
            if q * r <= dense_size:
                if not have_cfg:
                    _parent_configs(data_t, arities, parents, cfg)
                    have_cfg = True
                for t in range(m):
                    dense[cfg[t] * r + x[t]] += 1
                for j in range(int(q)):
                    n_ij = 0
                    for c in range(j * r, j * r + r):
                        v = dense[c]
                        if v:
                            n_ij += v
                            s, rd = _two_sum(s, lg_ijk[v] if tabled else _log_rising_lg(a_ijk, float(v), lg_a_ijk))
                            err += rd
                            dense[c] = 0
                    if n_ij:
                        s, rd = _two_sum(s, -(lg_ij[n_ij] if tabled else _log_rising_lg(a_ij, float(n_ij), lg_a_ij)))
                        err += rd
            else:
                if not have_groups:
                    if not have_cfg:
                        _parent_configs(data_t, arities, parents, cfg)
                        have_cfg = True
                    order = np.argsort(cfg)
                    ends = np.empty(m, np.int64)
                    n_groups = 0
                    for t in range(1, m):
                        if cfg[order[t]] != cfg[order[t - 1]]:
                            ends[n_groups] = t
                            n_groups += 1
                    if m:
                        ends[n_groups] = m
                        n_groups += 1
                    have_groups = True
                for t in range(m):
                    xs[t] = x[order[t]]
                start = 0
                for e in range(n_groups):
                    end = ends[e]
                    for t in range(start, end):
                        child_count[xs[t]] += 1
                    for t in range(start, end):
                        v = child_count[xs[t]]
                        if v:
                            s, rd = _two_sum(s, lg_ijk[v] if tabled else _log_rising_lg(a_ijk, float(v), lg_a_ijk))
                            err += rd
                            child_count[xs[t]] = 0
                    n_ij = end - start
                    s, rd = _two_sum(s, -(lg_ij[n_ij] if tabled else _log_rising_lg(a_ij, float(n_ij), lg_a_ij)))
                    err += rd
                    start = end
            beta[i, f] = _carried(s, err)


# ----------------------------------------------------------------------------- joint tables
#
# The same scores, counted once per variable set instead of once per family: the terms
# of a family (i, G) split into one over the cells of the joint table of S = G + i and
# one over the parent configurations of G,
#   beta[i, G] = A(S) + Phi_{a_ij}(G),
#   A(S)      = sum over cells c of S with N_c > 0 of lgamma(a_ijk + N_c) - lgamma(a_ijk),
#   Phi_a(G)  = sum over cells j of G with N_j > 0 of lgamma(a) - lgamma(a + N_j),
# since a cell (j, k) of family (i, G) is a cell of S, and a_ijk (K2: 1, BDeu:
# ess / prod_{v in S} r_v) is the same for every child i of S; a_ij is r_i (K2: one Phi
# per distinct arity) or ess / q_G (BDeu). Each set S with |S| <= k + 1 is counted once
# (m rows), its configuration built from its prefix's in a depth-first walk, where the
# per-family kernel counts the m rows once per family: 7.4 million countings at n = 22,
# k = 8 against 1.1 million sets.


@numba.njit(cache=True, nogil=True)
def _rank(mask, n, K, cum):
    """Index of ``mask`` (popcount <= K, over n bits) in family_masks(n, K) (ascending):
    for each set bit b from the top, the masks that agree above b, clear b and have at
    most K - (bits above b) of the b bits below; cum[b, r] = sum_{j <= r} C(b, j)."""
    r = 0
    t = 0
    for b in range(n - 1, -1, -1):
        if (mask >> b) & 1:
            r += cum[b, K - t]
            t += 1
    return r


def _rank_table(n: int, K: int) -> np.ndarray:
    """cum[b, r] = sum_{j <= r} C(b, j), b < n, r <= K (int64), for `_rank`."""
    cum = np.zeros((max(n, 1), K + 1), dtype=np.int64)
    for b in range(n):
        for r in range(K + 1):
            cum[b, r] = n_families(b, r)
    return cum


# Sets with at most this many cells are counted into _BANKS interleaved histograms (row t
# into bank t mod _BANKS), summed at the end: consecutive rows in the same cell then do not
# wait on each other's increment.
_BANKED_CELLS = 256
_BANKS = 4
# Bit-set counting (`_count_bits`) when a prefix's cells times the states of a node are at
# most this: a set's counts are popcounts of (prefix cell AND node state) over m/64 words,
# fewer operations than one increment per row.
_BIT_CELLS = 64


@numba.njit(cache=True, nogil=True)
def _count(dense, banks, cfg, r, x, q):
    """dense[cfg[t]·r + x[t]] += 1 for every row t (the set's cells from its prefix's: no
    configuration array is written); q = cells of the set. dense is zero on entry."""
    m = cfg.size
    if q <= _BANKED_CELLS:
        for t in range(m - m % _BANKS):
            banks[t % _BANKS, cfg[t] * r + x[t]] += 1
        for t in range(m - m % _BANKS, m):
            banks[0, cfg[t] * r + x[t]] += 1
        for j in range(int(q)):
            tot = 0
            for b in range(_BANKS):
                tot += banks[b, j]
                banks[b, j] = 0
            dense[j] = tot
    else:
        for t in range(m):
            dense[cfg[t] * r + x[t]] += 1


@numba.njit(cache=True, nogil=True)
def _one_hot(data_t, arities):
    """bits[v, s, w] bit j set iff row 64w + j of column v has state s; uint64 (n, r_max, ⌈m/64⌉)."""
    n, m = data_t.shape
    bits = np.zeros((n, max(1, arities.max()), (m + 63) // 64), np.uint64)
    for v in range(n):
        for t in range(m):
            bits[v, data_t[v, t], t >> 6] |= np.uint64(1) << np.uint64(t & 63)
    return bits


@numba.njit(cache=True, nogil=True)
def _count_bits(dense, cells, q, pc, col, r):
    """The counts of a set from its prefix's cells (q bit sets, pc their counts) and a
    node's one-hot columns col (r bit sets): dense[c·r + s] = popcount(cells[c] & col[s]),
    the last state by subtraction from pc[c]."""
    W = cells.shape[1]
    for c in range(int(q)):
        rest = pc[c]
        for s in range(r - 1):
            tot = 0
            for w in range(W):
                tot += np.int64(popcount(cells[c, w] & col[s, w]))
            dense[c * r + s] = tot
            rest -= tot
        dense[c * r + r - 1] = rest


@numba.njit(cache=True, nogil=True)
def _push_bits(cells, pc, dense, d, col, q_d, r):
    """Depth d + 1's cells: cells[d + 1, c·r + s] = cells[d, c] & col[s]; their counts
    pc[d + 1] from dense (the counts `_count_bits` just made)."""
    for c in range(int(q_d)):
        for s in range(r):
            dst = cells[d + 1, c * r + s]
            src = cells[d, c]
            cs = col[s]
            for w in range(cells.shape[2]):
                dst[w] = src[w] & cs[w]
            pc[d + 1, c * r + s] = dense[c * r + s]


@numba.njit(cache=True, nogil=True)
def _visit_set(dense, q, mask, size, n, k, is_k2, ess, classes, keys, tables, clock,
               cum_k, cum_k1, A, PHI):
    """Score one set S (``size`` nodes, q cells, its counts in dense, which is left zero):
    store A(S) (size >= 1) and Phi_a(S) for every class a (size <= k).

    Log-gammas come from the cached tables when S has more than _TABLE_CELLS cells and
    every row needed is in the cache at once (checked after fetching: a miss may evict
    a row fetched before it), else from `_log_rising`: the same numbers either way."""
    n_cls = classes.size
    with_phi = size <= k
    a_c = 1.0 if is_k2 else ess / q
    a_cls = np.empty(n_cls)
    for c in range(n_cls):
        a_cls[c] = classes[c] if is_k2 else ess / q
    rows = np.zeros(n_cls, np.int64)
    row_c = 0
    tabled = q > _TABLE_CELLS
    if tabled:
        row_c = _lgamma_row(keys, tables, clock, a_c)
        if with_phi:
            for c in range(n_cls):
                rows[c] = _lgamma_row(keys, tables, clock, a_cls[c])
        tabled = keys[row_c] == a_c
        if with_phi:
            for c in range(n_cls):
                tabled = tabled and keys[rows[c]] == a_cls[c]
    lg_c = math.lgamma(a_c)
    lg_cls = np.empty(n_cls)
    for c in range(n_cls):
        lg_cls[c] = math.lgamma(a_cls[c])
    phi = np.zeros(n_cls)
    phi_err = np.zeros(n_cls)  # the roundings of phi and s_a (_two_sum)
    s_a = 0.0
    s_err = 0.0
    for j in range(int(q)):
        v = dense[j]
        if v:
            dense[j] = 0
            s_a, rd = _two_sum(s_a, tables[row_c, v] if tabled else _log_rising_lg(a_c, float(v), lg_c))
            s_err += rd
            if with_phi:
                for c in range(n_cls):
                    phi[c], rd = _two_sum(phi[c], -(tables[rows[c], v] if tabled
                                                   else _log_rising_lg(a_cls[c], float(v), lg_cls[c])))
                    phi_err[c] += rd
    if size >= 1:
        A[_rank(mask, n, k + 1, cum_k1)] = _carried(s_a, s_err)
    if with_phi:
        r = _rank(mask, n, k, cum_k)
        for c in range(n_cls):
            PHI[r, c] = _carried(phi[c], phi_err[c])


@numba.njit(cache=True, nogil=True)
def _score_sets(data_t, arities, prefixes, k, is_k2, ess, classes, dense_size, cum_k, cum_k1,
                A, PHI, bits, q_bits):
    """A and Phi (see above) of the sets of each task: prefixes int64 (T, 3), row
    (s1, s2, extend) with -1 for absent elements: the set {s1, s2} (or {s1}, or ∅) and,
    if extend, every set that adds nodes above s2, up to k + 1 nodes, depth first.

    data_t: (n, m) codes (uint8 where they fit). Each set is counted from its prefix's
    cells: per row (`_count`, the prefix's configuration of each row), or, given the
    one-hot bit sets ``bits`` (`_one_hot`; else an empty array), by popcounts
    (`_count_bits`, the prefix's cells as bit sets, at most q_bits of them). Only a set
    that will be extended has its own cells written."""
    n, m = data_t.shape
    k1 = k + 1
    by_bits = bits.shape[0] > 0
    cfg = np.zeros((k1 + 1, 0 if by_bits else m), np.int32)  # < dense_size ≤ 2^22 cells
    cells = np.zeros((k1 + 1, q_bits if by_bits else 0, bits.shape[2]), np.uint64)
    pc = np.zeros((k1 + 1, q_bits if by_bits else 0), np.int64)
    if by_bits:
        cells[0, 0, :] = ~np.uint64(0)
        if m % 64:
            cells[0, 0, -1] = (np.uint64(1) << np.uint64(m % 64)) - np.uint64(1)
        pc[0, 0] = m
    q = np.ones(k1 + 1)
    masks = np.zeros(k1 + 1, np.int64)
    nxt = np.zeros(k1 + 1, np.int64)
    dense = np.zeros(dense_size, np.int64)
    banks = np.zeros((_BANKS, _BANKED_CELLS), np.int64)
    keys = np.full(_TABLE_SLOTS, np.nan)
    tables = np.empty((_TABLE_SLOTS, m + 1))
    clock = np.zeros(1, np.int64)
    for task in range(prefixes.shape[0]):
        d = 0
        v = -1
        for a in range(2):  # the prefix {s1, s2}: the set at depth d plus node v
            if prefixes[task, a] < 0:
                break
            if v >= 0:
                _count_set(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q)
                _extend(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q, masks)
                dense[:int(q[d + 1])] = 0
                d += 1
            v = prefixes[task, a]
        if v < 0:  # ∅ (never extended)
            dense[0] = m
            _visit_set(dense, 1.0, 0, 0, n, k, is_k2, ess, classes, keys, tables, clock, cum_k, cum_k1,
                       A, PHI)
            continue
        _count_set(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q)
        extend = prefixes[task, 2] != 0 and d + 1 < k1 and v + 1 < n
        if extend:
            _extend(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q, masks)
        _visit_set(dense, q[d] * arities[v], masks[d] | (np.int64(1) << v), d + 1, n, k, is_k2,
                   ess, classes, keys, tables, clock, cum_k, cum_k1, A, PHI)
        if not extend:
            continue
        base = d + 1
        d = base
        nxt[d] = v + 1
        while d >= base:
            if d < k1 and nxt[d] < n:
                v = nxt[d]
                nxt[d] += 1
                _count_set(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q)
                if d + 1 < k1 and v + 1 < n:  # the set has extensions: its cells
                    _extend(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q, masks)
                    _visit_set(dense, q[d + 1], masks[d + 1], d + 1, n, k, is_k2, ess,
                               classes, keys, tables, clock, cum_k, cum_k1, A, PHI)
                    d += 1
                    nxt[d] = v + 1
                else:
                    _visit_set(dense, q[d] * arities[v], masks[d] | (np.int64(1) << v), d + 1, n, k,
                               is_k2, ess, classes, keys, tables, clock, cum_k, cum_k1, A, PHI)
            else:
                d -= 1


@numba.njit(cache=True, nogil=True)
def _count_set(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q):
    """Counts (into dense) of the set at depth d plus node v, from depth d's cells."""
    r = arities[v]
    if bits.shape[0] > 0:
        _count_bits(dense, cells[d], q[d], pc[d], bits[v], r)
    else:
        _count(dense, banks, cfg[d], r, data_t[v], q[d] * r)


@numba.njit(cache=True, nogil=True)
def _extend(data_t, arities, v, d, cfg, cells, pc, dense, banks, bits, q, masks):
    """Depth d + 1 = depth d plus node v: its cells (bit sets, with their counts from
    dense, which must hold the set's counts; or each row's configuration, mixed radix
    with v the last digit), number of cells and mask."""
    r = arities[v]
    if bits.shape[0] > 0:
        _push_bits(cells, pc, dense, d, bits[v], q[d], r)
    else:
        x = data_t[v]
        for t in range(cfg.shape[1]):
            cfg[d + 1, t] = cfg[d, t] * r + x[t]
    q[d + 1] = q[d] * r
    masks[d + 1] = masks[d] | (np.int64(1) << v)


@numba.njit(cache=True, nogil=True)
def _assemble(fam, n, k, cum_k, cum_k1, A, PHI, cls, nodes, beta):
    """beta[i, f] = A(G + i) + Phi_{class of i}(G), G = unsqueeze(fam[f], i), i in nodes."""
    for i in nodes:
        low = (np.int64(1) << i) - 1
        for f in range(fam.size):
            g = fam[f]
            G = (g & low) | ((g >> i) << (i + 1))
            S = G | (np.int64(1) << i)
            beta[i, f] = A[_rank(S, n, k + 1, cum_k1)] + PHI[_rank(G, n, k, cum_k), cls[i]]


def _joint_table_scores(data_t, arities, k, is_k2, ess, dense_size, threads) -> np.ndarray:
    """`local_scores` by joint tables (every set S with |S| <= k + 1 fits the dense array)."""
    n = arities.size
    if is_k2:
        classes, cls = np.unique(arities.astype(np.float64), return_inverse=True)
    else:
        classes, cls = np.zeros(1), np.zeros(n, dtype=np.int64)
    cls = np.ascontiguousarray(cls, dtype=np.int64)
    cum_k, cum_k1 = _rank_table(n, k), _rank_table(n, k + 1)
    A = np.zeros(n_families(n, k + 1))
    PHI = np.zeros((n_families(n, k), classes.size))
    # tasks: ∅, each {s1}, each {s1, s2} with its extensions (largest subtrees first,
    # dealt round-robin to the threads)
    tasks = [(-1, -1, 0)] + [(s1, -1, 0) for s1 in range(n)]
    pairs = [(s1, s2, 1) for s1 in range(n) for s2 in range(s1 + 1, n)] if k + 1 >= 2 else []
    pairs.sort(key=lambda p: -n_families(n - 1 - p[1], k - 1))
    tasks += pairs
    blocks = [np.array(tasks[b::threads], dtype=np.int64).reshape(-1, 3) for b in range(threads)]

    fam = family_masks(max(n - 1, 0), k)
    beta = np.empty((n, fam.size), dtype=np.float64)
    # codes of ≤ 8 bits: a quarter of the memory traffic of int32 (a joint table can have
    # up to 2^22 cells, so one column up to 2^22 states)
    codes = data_t.astype(np.uint8) if arities.max(initial=0) <= 256 else data_t
    top = np.sort(arities)[::-1]
    q_bits = math.prod(top[:k].tolist())  # the most cells of a prefix (≤ k nodes)
    if q_bits * max(int(top[0]) - 1, 1) <= _BIT_CELLS and n >= 1:
        bits = _one_hot(codes, arities)
    else:
        bits, q_bits = np.zeros((0, 0, 0), np.uint64), 0

    def count(pref):
        _score_sets(codes, arities, pref, k, is_k2, ess, classes, dense_size, cum_k, cum_k1, A, PHI,
                    bits, q_bits)

    def assemble(nodes):
        _assemble(fam, n, k, cum_k, cum_k1, A, PHI, cls, nodes, beta)

    node_blocks = [np.arange(b, n, threads, dtype=np.int64) for b in range(threads)]
    if threads == 1:
        count(np.array(tasks, dtype=np.int64).reshape(-1, 3))
        assemble(node_blocks[0])
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(count, blocks))
            list(pool.map(assemble, node_blocks))
    return beta


def parent_set_index(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """All parent sets over V = {0..n-1} with |G| <= k, and where each one's score goes.

    Returns ``(parent_sets, family_index)``: int64 (P, max(k, 1)) node ids ascending,
    -1 padded, P = sum_{j<=k} C(n, j) (order of ``family_masks(n, k)``); and int64 (P, n)
    with ``family_index[g, i]`` the index f of ``squeeze(G_g, i)`` in
    ``family_masks(n - 1, k)``, or -1 when i is in G_g. Every (i, f) appears exactly once.
    """
    masks = family_masks(n, k)
    squeezed = family_masks(n - 1, k) if n >= 1 else masks
    parent_sets = np.full((masks.size, max(k, 1)), -1, dtype=np.int64)
    family_index = np.full((masks.size, n), -1, dtype=np.int64)
    filled = np.zeros(masks.size, dtype=np.int64)
    rows = np.arange(masks.size)
    for b in range(n):
        has = ((masks >> b) & 1).astype(bool)
        parent_sets[rows[has], filled[has]] = b
        filled[has] += 1
        rest = masks[~has]
        sq = (rest & ((1 << b) - 1)) | ((rest >> (b + 1)) << b)
        family_index[~has, b] = np.searchsorted(squeezed, sq)
    return parent_sets, family_index


def parent_sets_of(n: int, k: int) -> np.ndarray:
    """Every G ⊆ {0..n-1} with |G| <= k as node ids ascending, -1 padded: int64 (P, max(k, 1)),
    by size, lexicographic within a size (any n: no bitmasks)."""
    from itertools import combinations

    k = min(k, n)
    out = np.full((n_families(n, k), max(k, 1)), -1, dtype=np.int64)
    row = 1  # row 0: the empty set
    for s in range(1, k + 1):
        block = np.array(list(combinations(range(n), s)), dtype=np.int64).reshape(-1, s)
        out[row: row + block.shape[0], :s] = block
        row += block.shape[0]
    return out


def _default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def local_scores(
    ds: Dataset,
    max_parents: int,
    score: str = "bdeu",
    ess: float = 1.0,
    *,
    threads: int | None = None,
    dense_limit: int | None = None,
    sets: tuple[np.ndarray, np.ndarray, int] | None = None,
) -> np.ndarray:
    """Log marginal likelihood of every family: ``beta``, float64 (n, F).

    ``beta[i, f] = log p(x_i | x_G)`` with G = ``unsqueeze(family_masks(n - 1, k)[f], i)``,
    k = min(max_parents, n - 1), F = sum_{j<=k} C(n-1, j). ``score`` is "bdeu" (with
    equivalent sample size ``ess``) or "k2"; formulas in the module docstring. No prior.

    ``threads``: worker threads (default: the CPUs available). ``dense_limit``: count a
    family densely when q*r is at most this (default max(4m, 1024), capped at 2**22);
    0 sends every family with q*r > 1 to the sort-based path (used by tests).

    ``sets``: (parent_sets, family_index, width) to score other families than all of
    ``family_masks(n - 1, k)``: parent sets as in `parent_sets_of`, family_index (P, n) the
    column of (child i, parent set g) or -1 (not wanted); returns float64 (n, width), NaN
    where no family was named (the tiers' layouts, bigbn/plan/tiers.py).
    """
    name = str(score).lower()
    if name not in SCORES:
        raise OptionError(f"unknown score '{score}' (choose one of: {', '.join(SCORES)})")
    if isinstance(max_parents, bool) or not isinstance(max_parents, (int, np.integer)) or max_parents < 0:
        raise OptionError(f"max_parents must be a non-negative integer, got {max_parents!r}")
    try:
        ess = float(ess)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int such as 10**400
        raise OptionError(f"ess (equivalent sample size) must be a positive number, got {ess!r}") from None
    if not (math.isfinite(ess) and ess > 0):
        raise OptionError(f"ess (equivalent sample size) must be a positive number, got {ess!r}")
    if ess > MAX_HYPER:
        raise OptionError(f"ess {ess:g} is above {MAX_HYPER:g}, the largest accepted (as ess grows the "
                          "posteriors tend to the prior's anyway)")
    if ds.kind != "discrete":
        raise OptionError(f"score '{name}' needs discrete data, got {ds.kind} data")
    n, m = ds.n, ds.m
    k = min(int(max_parents), max(n - 1, 0))
    arities = np.ascontiguousarray(ds.arities, dtype=np.int64)
    top = np.sort(arities)[::-1]
    log_q_max = float(np.log(top[:k].astype(np.float64)).sum())
    if log_q_max > 700.0:
        raise OptionError(
            f"{k} parents with up to {int(top[0])} levels each give more parent configurations "
            "than floating point can represent; lower max_parents"
        )
    if name == "bdeu" and k >= 0 and n:  # the smallest prior count ess/(q·r), of the largest family
        log_qr = float(np.log(top[:k + 1].astype(np.float64)).sum())
        if math.log(ess) - log_qr < math.log(_TINY):
            raise OptionError(f"ess {ess:g} is too small: the prior count ess/(q·r) of the largest family "
                              f"(q·r = {math.exp(log_qr):.4g}) is below float64's smallest normal number "
                              f"({_TINY:.3g}), where it holds fewer digits; give ess ≥ {_TINY * math.exp(log_qr):.3g}")
    if dense_limit is None:
        dense_limit = min(max(4 * m, 1024), 2**22)
    # Largest dense count array needed: q*r of the biggest family, but at most dense_limit.
    dense_size = max(1, min(int(dense_limit), math.prod(top[:k + 1].tolist())))

    data_t = np.ascontiguousarray(ds.data.T, dtype=np.int32)
    threads = max(1, threads or _default_threads())
    if sets is not None:
        parent_sets, family_index, width = sets
        beta = np.full((n, width), np.nan)
    elif math.prod(top[:k + 1].tolist()) <= dense_size and n >= 1:
        # every joint table fits the dense count array: count each set once
        return _joint_table_scores(data_t, arities, k, name == "k2", ess, dense_size, threads)
    else:
        parent_sets, family_index = parent_set_index(n, k)
        beta = np.empty((n, family_masks(max(n - 1, 0), k).size), dtype=np.float64)
    n_blocks = max(1, min(threads, parent_sets.shape[0]))
    blocks = [np.arange(b, parent_sets.shape[0], n_blocks, dtype=np.int64) for b in range(n_blocks)]

    def run(todo):
        _score_parent_sets(data_t, arities, parent_sets, family_index, todo, name == "k2", ess,
                           dense_size, beta)

    if n_blocks == 1:
        run(blocks[0])
    else:
        with ThreadPoolExecutor(n_blocks) as pool:
            list(pool.map(run, blocks))
    return beta
