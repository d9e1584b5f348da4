"""Time series drawn from a dynamic Bayesian network (a 2-TBN), so recovery can be shown.

A DBN here is one discrete `Network` over the n variables of slice t and their lagged
copies NAME[t-l], l = 1..L (`bigbn.io.series.lagged_name`): every lagged copy is a root,
and the table of NAME[t-l] is the distribution of the variable in row L − l of a series
(the first transition row's lag-l value; the first L rows drawn independently); each
variable of slice t has parents among the lagged copies and the variables of slice t,
acyclic among the latter. A series of length T is then drawn
forwards: rows 0..L−1 from the lagged copies' tables, and each row t ≥ L by ancestral
sampling of slice t given rows t−1, …, t−L.

In a BIF file (`read_dbn`, `write_dbn`) a name cannot hold brackets, so the lagged copy
NAME[t-l] is written NAME.t-l.

`random_dbn` draws one as `simulate.random_network` does (section 5.2 of the paper): a
uniform order of slice t, each node's number of parents uniform in 0..k, chosen among
its predecessors in the order and the lagged copies, Dirichlet(1) tables.
"""

from __future__ import annotations

import csv
import re

import numpy as np

from bigbn.errors import DataError, OptionError
from bigbn.io.bif import Network, read_bif, write_bif
from bigbn.io.series import lagged_name
from bigbn.options import default_memory
from bigbn.store.rundir import gib
from bigbn.tools.simulate import MAX_RANDOM_NODES, parent_count

_LAGGED = re.compile(r"(.*)\[t-([0-9]+)\]")
_BIF_LAGGED = re.compile(r"(.*)\.t-([0-9]+)")


def random_dbn(n: int, lag: int, k: int, r: int, rng: np.random.Generator,
               contemporaneous: bool = True) -> Network:
    """A random 2-TBN over X1..Xn and their copies at lags 1..lag, r states each."""
    if n < 1 or lag < 1 or k < 0 or r < 2:
        raise OptionError(f"a random DBN needs n ≥ 1, lag ≥ 1, k ≥ 0 and ≥ 2 states (got n={n}, "
                          f"lag={lag}, k={k}, states={r})")
    if n * (lag + 1) > MAX_RANDOM_NODES:  # every lagged copy is a node of the network
        raise OptionError(f"a random DBN of {n} variables with lag {lag} has {n * (lag + 1)} nodes, more "
                          f"than {MAX_RANDOM_NODES}; give a smaller --n or --lag")
    names = [f"X{i + 1}" for i in range(n)]
    lagged = list(range(n, n * (lag + 1)))
    order = rng.permutation(n).tolist()
    parents: list[tuple[int, ...]] = [()] * (n * (lag + 1))
    for pos, i in enumerate(order):
        cands = lagged + (order[:pos] if contemporaneous else [])
        size = parent_count(rng, k, len(cands))
        chosen = rng.choice(cands, size=size, replace=False) if size else []
        parents[i] = tuple(sorted(int(p) for p in chosen))
    need = 8 * sum(r ** (len(ps) + 1) for ps in parents)  # Dirichlet draws, before any is made
    if need > default_memory():
        raise OptionError(f"the tables of a random DBN with {r} states and up to {k} parents need "
                          f"{gib(need)} of memory; give fewer --states or --max-parents")
    cpts = [rng.dirichlet(np.ones(r), size=r ** len(ps)).reshape((r,) * len(ps) + (r,)) for ps in parents]
    states = tuple(str(s) for s in range(r))
    all_names = names + [lagged_name(x, l) for l in range(1, lag + 1) for x in names]
    return Network(tuple(all_names), (states,) * len(all_names), tuple(parents), tuple(cpts))


def dbn_shape(net: Network) -> tuple[list[int], int, dict[tuple[int, int], int]]:
    """(the nodes of slice t, the lag L, {(node, l): its lag-l copy}) of a 2-TBN network;
    DataError if a lagged copy is not a root, names no variable of slice t, or a lag
    1..L has no copy of some variable."""
    index = {x: j for j, x in enumerate(net.names)}
    copies, current = {}, []
    for j, x in enumerate(net.names):
        hit = _LAGGED.fullmatch(x)
        if hit is None:
            current.append(j)
            continue
        base, l = hit.group(1), int(hit.group(2))
        if base not in index or l < 1:
            raise DataError(f"network: {x!r} is not a lagged copy of a variable of slice t")
        if net.parents[j]:
            raise DataError(f"network: the lagged copy {x!r} has parents; in a 2-TBN it is a root")
        copies[(index[base], l)] = j
    if not copies:
        raise DataError("network: no lagged copies NAME[t-1] (not a dynamic network)")
    lag = max(l for _, l in copies)
    for i in current:
        for l in range(1, lag + 1):
            if (i, l) not in copies:
                raise DataError(f"network: {lagged_name(net.names[i], l)!r} is missing (every variable "
                                f"has a copy at each lag 1..{lag})")
            if net.states[copies[(i, l)]] != net.states[i]:
                raise DataError(f"network: {lagged_name(net.names[i], l)!r} has other states than "
                                f"{net.names[i]!r}")
    return current, lag, copies


def check_shape(series: int, length: int, n: int, lag: int) -> None:
    """OptionError unless ``series`` series of ``length`` rows of ``n`` variables can be
    drawn with lag ``lag``: at least one series of at least lag + 1 rows, their codes
    within the memory budget."""
    if series < 1 or length < lag + 1:
        raise OptionError(f"{series} series of {length} rows: give at least one series of at least "
                          f"lag + 1 = {lag + 1} rows")
    need = 8 * series * length * n  # the codes, int64
    if need > default_memory():
        raise OptionError(f"{series} series of {length} rows of {n} variables need about {gib(need)} of "
                          "memory; draw fewer --series or --rows")


def sample_series(net: Network, series: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``series`` series of ``length`` rows each, int64 (series, length, n) state codes of
    the variables of slice t (in the network's order of them)."""
    current, lag, copies = dbn_shape(net)
    check_shape(series, length, len(current), lag)
    where = {j: a for a, j in enumerate(current)}
    out = np.zeros((series, length, len(current)), dtype=np.int64)
    for a, i in enumerate(current):  # the first lag rows: row L − l from the lag-l copy's table (the
        for l in range(1, lag + 1):  # first transition row's lag-l value; all were the lag-1 copy's)
            p = net.cpts[copies[(i, l)]]
            out[:, lag - l, a] = rng.choice(p.size, size=series, p=p)
    order = [i for i in net.topological_order() if i in where]
    lag_of = {j: (i, l) for (i, l), j in copies.items()}
    for t in range(lag, length):
        for i in order:
            ps = net.parents[i]
            values = [out[:, t, where[p]] if p in where else out[:, t - lag_of[p][1], where[lag_of[p][0]]]
                      for p in ps]
            cpt = net.cpts[i]
            r = cpt.shape[-1]
            probs = cpt.reshape(-1, r)[np.ravel_multi_index(values, cpt.shape[:-1])] if ps else \
                np.broadcast_to(cpt, (series, r))
            cum = np.cumsum(probs, axis=1)
            x = rng.random(series) * cum[:, -1]
            out[:, t, where[i]] = (cum[:, :-1] <= x[:, None]).sum(axis=1)
    return out


def write_series(net: Network, codes: np.ndarray, path, overwrite: bool = False) -> None:
    """CSV series,t,NAME... (one row per series and time) of `sample_series`'s codes.
    DataError, before the file is created, for a variable named series or t: the file
    would have two columns of that name, which no run reads."""
    from bigbn.tools.simulate import _create

    current, _, _ = dbn_shape(net)
    for i in current:
        if net.names[i] in ("series", "t"):
            raise DataError(f"network: a variable is named {net.names[i]!r}, a column the series file {path} "
                            "has already (series, t, then the variables): rename the variable")
    with _create(path, overwrite) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["series", "t", *(net.names[i] for i in current)])
        for s in range(codes.shape[0]):
            for t in range(codes.shape[1]):
                w.writerow([f"s{s + 1}", t, *(net.states[i][codes[s, t, a]] for a, i in enumerate(current))])


def read_dbn(path) -> Network:
    """A 2-TBN from a BIF file whose lagged copies are named NAME.t-l."""
    net = read_bif(path)
    names = tuple(_from_bif(x) for x in net.names)
    out = Network(names, net.states, net.parents, net.cpts)
    try:
        dbn_shape(out)
    except DataError as e:  # name the file: "network: no lagged copies" said not which
        raise DataError(f"{path}: {str(e).removeprefix('network: ')}") from None
    return out


def write_dbn(net: Network, path) -> None:
    """Write a 2-TBN as BIF, its lagged copies named NAME.t-l."""
    dbn_shape(net)
    names = []
    for x in net.names:
        hit = _LAGGED.fullmatch(x)
        names.append(f"{hit.group(1)}.t-{hit.group(2)}" if hit else x)
    write_bif(Network(tuple(names), net.states, net.parents, net.cpts), path)


def _from_bif(name: str) -> str:
    hit = _BIF_LAGGED.fullmatch(name)
    return lagged_name(hit.group(1), int(hit.group(2))) if hit else name
