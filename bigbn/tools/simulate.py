"""Synthetic data: the random networks of the paper's section 5.2, and forward sampling.

`random_network(n, k, r, rng)` follows Koivisto (2006), section 5.2:

1. draw a linear order of the nodes uniformly at random;
2. for each node i independently: (a) draw its number of parents n_i uniformly from
   {0, ..., k}, capped by the number of predecessors of i; (b) draw the n_i parents
   uniformly from the predecessors; (c) for each parent configuration draw the
   distribution over the r states from Dirichlet(1, ..., 1).

`sample(network, m, rng)` draws m independent records by ancestral (forward) sampling.
It consumes one uniform number per (row, node) in row-major order, so the first m' rows
of a sample of m > m' rows equal a sample of m' rows from the same generator state: the
paper's nested subsets (m = 20, 100, ..., 10000) are prefixes of one data set.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from bigbn.io.bif import Network, read_bif
from bigbn.io.data import csv_records
from bigbn.errors import DataError, OptionError
from bigbn.options import default_memory
from bigbn.store.rundir import gib


# The most nodes of a random network: drawing its structure takes time quadratic in n (each
# node's parents are drawn among all its predecessors), under a second here and hours at
# 10^6; bigbn itself analyses at most 512 variables.
MAX_RANDOM_NODES = 10_000


#: The largest bound the draw U{0..k} of a node's number of parents is made with. numpy
#: draws integers below 2^63 only: a larger --max-parents (study -k 10^20) was its
#: "high is out of bounds for int64" traceback. Any k ≥ 2^62 draws the same as k = 2^62
#: but for chance 2^-52 or less (the count is then capped by the node's predecessors, at
#: most MAX_RANDOM_NODES), and every smaller k draws exactly as before, seed for seed.
MAX_DRAWN_INDEGREE = 2**62


def parent_count(rng: np.random.Generator, k: int, pool: int) -> int:
    """min(U{0..k}, pool): how many of ``pool`` candidates become a node's parents (the
    random networks of this module, of `bigbn.tools.series` and of `bigbn.tools.cg`)."""
    return min(int(rng.integers(0, min(k, MAX_DRAWN_INDEGREE) + 1)), pool)


def random_structure(n: int, k: int, rng: np.random.Generator, tier_sizes=None):
    """Steps 1-2(b) of section 5.2: a uniform random order and parents drawn within it.

    Returns (order, parents): ``order`` int64 (n,) lists the nodes first to last;
    ``parents[i]`` is a sorted tuple of node i's parents, all earlier in ``order``,
    with ``len(parents[i]) = min(U{0..k}, #predecessors)``. tier_sizes (summing to n):
    a layered network instead, whose order lists tier 1 (nodes 0..s1-1) first, then tier
    2, and so on, each tier in a uniform random order.
    """
    if not 1 <= n <= MAX_RANDOM_NODES:
        raise OptionError(f"number of nodes must be between 1 and {MAX_RANDOM_NODES}, got {n}")
    if k < 0:
        raise OptionError(f"maximum indegree must be >= 0, got {k}")
    if tier_sizes is None:
        order = rng.permutation(n)
    else:
        if sum(tier_sizes) != n or min(tier_sizes) < 1:
            raise OptionError(f"tier sizes {','.join(map(str, tier_sizes))} must be positive and sum to n = {n}")
        starts = np.cumsum([0, *tier_sizes])
        order = np.concatenate([a + rng.permutation(b - a) for a, b in zip(starts[:-1], starts[1:])])
    parents: list[tuple[int, ...]] = [()] * n
    for pos, i in enumerate(order.tolist()):
        n_i = parent_count(rng, k, pos)
        chosen = rng.choice(order[:pos], size=n_i, replace=False) if n_i else []
        parents[i] = tuple(sorted(int(p) for p in chosen))
    return order, parents


def random_network(n: int, k: int, r: int, rng: np.random.Generator, tier_sizes=None) -> Network:
    """A random BN of the paper's section 5.2: n nodes X1..Xn, indegree <= k, r states.

    The structure comes from `random_structure`; then (step 2(c)) every parent
    configuration of every node gets an independent Dirichlet(1, ..., 1) distribution
    over the r states. Nodes are named ``X1..Xn`` with states ``"0".."r-1"``.
    tier_sizes: a layered network (see `random_structure`).
    """
    if r < 2:
        raise OptionError(f"number of states must be >= 2, got {r}")
    _, parents = random_structure(n, k, rng, tier_sizes)
    need = 8 * sum(r ** (len(ps) + 1) for ps in parents)  # Dirichlet draws, before any is made
    if need > default_memory():
        raise OptionError(f"the tables of a random network with {r} states and up to {k} parents "
                          f"need {gib(need)} of memory; give fewer --states or --max-parents")
    cpts = []
    for i in range(n):
        q = len(parents[i])
        cpts.append(rng.dirichlet(np.ones(r), size=r**q).reshape((r,) * q + (r,)))
    states = tuple(str(s) for s in range(r))
    return Network(
        names=tuple(f"X{i + 1}" for i in range(n)),
        states=(states,) * n,
        parents=tuple(parents),
        cpts=tuple(cpts),
    )


def sample(network: Network, m: int, rng: np.random.Generator) -> np.ndarray:
    """m records drawn from the network by ancestral sampling.

    Returns int64 (m, n) state codes: ``data[j, i]`` indexes ``network.states[i]``.
    Row j uses uniforms j*n .. j*n+n-1 of the generator's stream (prefix-stable in m).
    """
    if m < 0:
        raise OptionError(f"number of rows must be >= 0, got {m}")
    n = network.n
    need = 3 * 8 * m * n  # uniforms, codes and one column's cumulative sums
    if need > default_memory():
        raise OptionError(f"{m} rows of {n} variables need about {gib(need)} of memory; draw fewer --rows")
    card = network.cardinalities
    u = rng.random((m, n))  # row-major: row j's numbers do not depend on m
    data = np.zeros((m, n), dtype=np.int64)
    for col, i in enumerate(network.topological_order()):
        ps = network.parents[i]
        cpt = network.cpts[i]
        r = int(card[i])
        if ps:
            config = np.ravel_multi_index(tuple(data[:, p] for p in ps), cpt.shape[:-1])
            rows = cpt.reshape(-1, r)[config]
        else:
            rows = np.broadcast_to(cpt, (m, r))
        cum = np.cumsum(rows, axis=1)
        x = u[:, col] * cum[:, -1]
        # state = #{j < r-1 : cum[j] <= x}; a zero-probability state is never drawn.
        data[:, i] = (cum[:, :-1] <= x[:, None]).sum(axis=1)
    return data


def load_network(spec) -> Network:
    """A network from a bundled name ('asia', 'alarm', ...) or a BIF file path."""
    return read_bif(spec)


def refuse_overwrite(paths, overwrite: bool = False) -> None:
    """OptionError if one of ``paths`` exists and ``overwrite`` is False (nothing written):
    `bigbn simulate` replaces existing files only with --force."""
    if overwrite:
        return
    for path in paths:
        if path is not None and os.path.lexists(path):
            raise OptionError(f"{path} already exists; give --force to replace it")


def _create(path, overwrite: bool):
    """``path`` opened for writing text; an existing file is an OptionError unless ``overwrite``."""
    refuse_overwrite([path], overwrite)
    if overwrite:  # a FIFO nothing reads: one line, not a wait
        from bigbn.options import open_output

        return open_output(path, "w", newline="", encoding="utf-8")
    try:
        return open(path, "x", newline="", encoding="utf-8")
    except FileExistsError:  # created since the check
        raise OptionError(f"{path} already exists; give --force to replace it") from None


def write_tiers(tier_sizes, names, path, overwrite: bool = False) -> None:
    """CSV node,tier for a layered network: the first s1 names tier 1, and so on.
    An existing file is replaced only with ``overwrite``."""
    with _create(path, overwrite) as fh:
        fh.write("node,tier\n")
        start = 0
        for j, s in enumerate(tier_sizes):
            for name in names[start:start + s]:
                fh.write(f"{name},{j + 1}\n")
            start += s


def tiers_path(out_csv) -> Path:
    """Where `bigbn simulate --tier-sizes` writes the tiers: OUT with .tiers.csv."""
    p = Path(out_csv)
    return p.with_name(p.stem + ".tiers.csv")


def truth_path(out_csv) -> Path:
    """Where the true network of OUT.csv goes: OUT.truth.csv."""
    p = Path(out_csv)
    stem = p.name[:-4] if p.name.lower().endswith(".csv") else p.name
    return p.with_name(stem + ".truth.csv")


def write_data(network: Network, data: np.ndarray, path, overwrite: bool = False) -> None:
    """CSV with the network's names as header and state names as values. An existing file
    is replaced only with ``overwrite``."""
    with _create(path, overwrite) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(network.names)
        lookup = [np.asarray(s, dtype=object) for s in network.states]
        cols = [lookup[i][data[:, i]] for i in range(network.n)]
        w.writerows(zip(*cols))


def write_truth(network: Network, path, overwrite: bool = False) -> None:
    """CSV ``parent,child`` (names), one row per arc of the network. An existing file is
    replaced only with ``overwrite``."""
    with _create(path, overwrite) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["parent", "child"])
        for p, c in network.arcs():
            w.writerow([network.names[p], network.names[c]])


def read_truth(path, names, children=None) -> np.ndarray:
    """Read a ``parent,child`` CSV into a boolean (n, n) adjacency over ``names``.

    ``[u, v]`` is true iff the file lists u -> v. Unknown names, self-loops, and
    duplicate rows are DataErrors naming the file and line, and so is an arc into a
    variable that ``children`` (bool (n,), a dynamic network's slice t) does not mark:
    a lagged variable has no parents in a 2-TBN.
    """
    index = {v: i for i, v in enumerate(names)}
    adj = np.zeros((len(names), len(names)), dtype=bool)
    for line, row in csv_records(path, ("parent", "child"), extra_columns=True):
        u, v = row[0], row[1]
        for col, name in ((1, u), (2, v)):
            if name not in index:
                raise DataError(f"{path}, line {line}, column {col}: unknown node {name!r}")
        if u == v:
            raise DataError(f"{path}, line {line}: self-loop {u!r} -> {v!r}")
        if children is not None and not children[index[v]]:
            raise DataError(f"{path}, line {line}, column 2: arc {u!r} -> {v!r} into a lagged variable; a dynamic "
                            "network's lagged variables have no parents (its edges are those into slice t)")
        if adj[index[u], index[v]]:
            raise DataError(f"{path}, line {line}: arc {u!r} -> {v!r} listed twice")
        adj[index[u], index[v]] = True
    return adj
