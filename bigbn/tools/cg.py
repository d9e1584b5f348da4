"""Synthetic mixed data: random conditional Gaussian (CG) networks and forward sampling.

A CG network (the model of the cg score, `bigbn.scores.cg`) has discrete nodes, each with
discrete parents only and a distribution over its states per parent configuration, and
continuous nodes, each with any parents and, per configuration d of its discrete
parents, a linear Gaussian regression x = a_d + Σ_z b_{d,z} z + ε, ε ~ N(0, s_d²).

`random_cg_network(n, n_continuous, k, r, rng)`: a uniform random order; each node's
number of parents uniform in 0..k, drawn uniformly among its predecessors (a discrete
node's among its discrete predecessors only); discrete tables Dirichlet(1) per parent
configuration; a continuous node's intercepts a_d ~ N(0, 1.5²) per configuration (so its
discrete parents matter), coefficients ±U(0.5, 1.5) (sign uniform), noise s_d ~ U(0.5, 1),
scaled so that each column has about unit variance (the Gaussian prior's scale).

`sample_cg(net, m, rng)` draws m records by ancestral sampling (float64 (m, n): codes of
discrete nodes, values of continuous ones); `write_cg_data` writes them with discrete
states as text ("s0", "s1", ...), so `bigbn run`'s auto reads the table as mixed data.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from bigbn.errors import OptionError
from bigbn.io.bif import check_variable_names

__all__ = ["CGNetwork", "random_cg_network", "sample_cg", "write_cg_data", "write_cg_truth"]


@dataclass
class CGNetwork:
    """names; kinds ("discrete" | "continuous"); arities (r for discrete, 0 for continuous);
    parents[i] (ascending node ids); order (a topological order); for a discrete node
    tables[i] (q, r) rows of probabilities by parent configuration (mixed radix over its
    parents in order); for a continuous node params[i] = (intercepts (q,), coefficients
    (q, number of continuous parents), sd (q,)), q over its discrete parents in order."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    arities: np.ndarray
    parents: list[list[int]]
    order: list[int]
    tables: dict
    params: dict

    def __post_init__(self):
        # as a `Network`'s: a name "a\nb" went into the CSV header `write_cg_data` writes
        check_variable_names(self.names)

    @property
    def n(self) -> int:
        return len(self.names)

    def arcs(self) -> list[tuple[int, int]]:
        return [(p, c) for c in range(self.n) for p in self.parents[c]]

    def _config(self, i: int, data: np.ndarray) -> np.ndarray:
        """Each row's configuration of node i's discrete parents (mixed radix), int64 (m,)."""
        key = np.zeros(data.shape[0], dtype=np.int64)
        for p in self.parents[i]:
            if self.kinds[p] == "discrete":
                key = key * int(self.arities[p]) + data[:, p].astype(np.int64)
        return key


def random_cg_network(n: int, n_continuous: int, k: int, r: int, rng: np.random.Generator) -> CGNetwork:
    """A random CG network of n nodes, n_continuous of them continuous (module docstring)."""
    if not 1 <= n:
        raise OptionError(f"a CG network needs at least one node, got n = {n}")
    if not 0 <= n_continuous <= n:
        raise OptionError(f"--continuous must be between 0 and n = {n}, got {n_continuous}")
    if k < 0 or r < 2:
        raise OptionError(f"max parents must be ≥ 0 and states ≥ 2, got k = {k}, states = {r}")
    kinds = ["discrete"] * n
    for j in rng.choice(n, size=n_continuous, replace=False).tolist():
        kinds[j] = "continuous"
    order = rng.permutation(n).tolist()
    parents: list[list[int]] = [[] for _ in range(n)]
    for pos, i in enumerate(order):
        pool = [p for p in order[:pos] if kinds[i] == "continuous" or kinds[p] == "discrete"]
        from bigbn.tools.simulate import parent_count

        size = parent_count(rng, k, len(pool))
        parents[i] = sorted(rng.choice(pool, size=size, replace=False).tolist()) if size else []
    arities = np.array([r if kd == "discrete" else 0 for kd in kinds], dtype=np.int64)
    # the tables' size before any is drawn, in Python ints: r^(discrete parents) configurations
    # overflowed int64 (-k 25 --states 10: a wait without end) or were a MemoryError traceback
    need = 0
    for i in range(n):
        q = r ** sum(kinds[p] == "discrete" for p in parents[i])
        need += 8 * q * (r if kinds[i] == "discrete" else 2 + sum(kinds[p] == "continuous" for p in parents[i]))
    from bigbn.options import default_memory
    from bigbn.store.rundir import gib

    if need > default_memory():
        raise OptionError(f"the tables of a random CG network with {r} states and up to {k} parents need "
                          f"{gib(need)} of memory; give fewer --states or --max-parents")
    net = CGNetwork(tuple(f"X{j + 1}" for j in range(n)), tuple(kinds), arities, parents, order, {}, {})
    var = np.zeros(n)  # each continuous column's variance, for the scaling
    for i in order:
        q = r ** sum(kinds[p] == "discrete" for p in parents[i])
        if kinds[i] == "discrete":
            net.tables[i] = rng.dirichlet(np.ones(r), size=q)
            continue
        cont = [p for p in parents[i] if kinds[p] == "continuous"]
        a = rng.normal(0.0, 1.5, size=q)
        b = rng.uniform(0.5, 1.5, size=(q, len(cont))) * rng.choice([-1.0, 1.0], size=(q, len(cont)))
        s = rng.uniform(0.5, 1.0, size=q)
        # about unit variance: divide by the spread the configurations and parents give
        spread = float(np.var(a) + np.mean(s ** 2) + np.mean((b ** 2) @ var[cont])) if cont else \
            float(np.var(a) + np.mean(s ** 2))
        scale = 1.0 / np.sqrt(max(spread, 1e-12))
        net.params[i] = (a * scale, b * scale, s * scale)
        var[i] = 1.0
    return net


def sample_cg(net: CGNetwork, m: int, rng: np.random.Generator) -> np.ndarray:
    """m records by ancestral sampling: float64 (m, n), codes for discrete nodes."""
    if m < 1:
        raise OptionError(f"rows must be at least 1, got {m}")
    from bigbn.options import default_memory
    from bigbn.store.rundir import gib

    need = 4 * 8 * m * net.n  # the data, and a column's uniforms, configurations and probabilities
    if need > default_memory():
        raise OptionError(f"{m} rows of {net.n} variables need about {gib(need)} of memory; draw fewer --rows")
    data = np.zeros((m, net.n))
    for i in net.order:
        cfg = net._config(i, data)
        if net.kinds[i] == "discrete":
            p = net.tables[i][cfg]  # (m, r)
            u = rng.random(m)
            data[:, i] = np.minimum((u[:, None] > np.cumsum(p, axis=1)).sum(axis=1), net.arities[i] - 1)
            continue
        a, b, s = net.params[i]
        cont = [p for p in net.parents[i] if net.kinds[p] == "continuous"]
        mean = a[cfg] + (np.einsum("tj,tj->t", b[cfg], data[:, cont]) if cont else 0.0)
        data[:, i] = mean + s[cfg] * rng.standard_normal(m)
    return data


def write_cg_data(net: CGNetwork, data: np.ndarray, fh) -> None:
    """CSV to the open file ``fh``: the names, then each row with discrete codes c written
    "s{c}" and continuous values to 8 significant digits."""
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(net.names)
    cols = [np.char.add("s", data[:, i].astype(np.int64).astype(str)) if kd == "discrete"
            else np.char.mod("%.8g", data[:, i]) for i, kd in enumerate(net.kinds)]
    w.writerows(zip(*(c.tolist() for c in cols)))


def write_cg_truth(net: CGNetwork, fh) -> None:
    """CSV ``parent,child`` of the network's arcs to the open file ``fh``."""
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(["parent", "child"])
    for p, c in net.arcs():
        w.writerow([net.names[p], net.names[c]])
