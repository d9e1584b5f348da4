"""`Result`: the exact edge posteriors (and MAP network) of one run, as `learn` returns them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bigbn.io import frames
from bigbn.io.data import csv_field
from bigbn import options as opt
from bigbn.errors import OptionError
from bigbn.outputs.parentsets import ranked
from bigbn.outputs.strength import HEADER as STRENGTH_HEADER
from bigbn.outputs.strength import averaged_arcs, cpdag, cpdag_probabilities, strength_matrices, strength_rows
from bigbn.plan.tiers import TieredFamilies


@dataclass
class Result:
    """Exact edge posteriors of one run.

    posterior: float64 (n, n), posterior[u, v] = p(u → v | data), zero diagonal;
    names: the n variable names; log_marginal: log p(data) under the model (natural log,
    up to the prior's normalising constant, as in the paper); summary: what was run.
    A MAP-only run (learn(..., map_dag=True, posterior=False)) has posterior and
    log_marginal None, and only the map_* methods. workdir: the run's work directory
    (learn(..., workdir=...); None when learn ran in a temporary folder, removed when it
    returned): `bigbn.sample` takes the Result in its place. samples, effects: those a
    `bigbn sample` / `bigbn effects` left in the workdir, when the Result comes from
    `bigbn.open` (else None).
    """

    posterior: np.ndarray | None
    names: tuple[str, ...]
    log_marginal: float | None
    summary: dict = field(default_factory=dict)
    parent_set_posterior: np.ndarray | None = field(default=None, repr=False)
    families: np.ndarray | None = field(default=None, repr=False)
    map_parents: np.ndarray | None = field(default=None, repr=False)
    map_log_score: float | None = None
    tiered: "TieredFamilies | None" = field(default=None, repr=False)
    workdir: Path | None = field(default=None, repr=False)  # None: learn ran in a temporary folder
    #: the run's samples and causal effects when `bigbn.open` found them in its workdir
    samples: object = field(default=None, repr=False)  # bigbn.outputs.samples.Samples
    effects: object = field(default=None, repr=False)  # bigbn.outputs.effects.Effects
    children: tuple[int, ...] | None = field(default=None, repr=False)

    def _pairs(self) -> list[tuple[int, int]]:
        """Every directed pair (u, v), u ≠ v, v a child, in node order of v within u."""
        n = len(self.names)
        kids = range(n) if self.children is None else self.children
        return [(u, v) for u in range(n) for v in kids if u != v]

    def parent_sets(self, child, top: int | None = None) -> list[tuple[tuple[str, ...], float]]:
        """Every parent set of ``child`` (a name or an index) with nonzero posterior, as
        (parent names in data order, p(G_child = G | data)), highest first; they sum to 1.
        top: only the ``top`` most probable."""
        self._need_posterior()
        v = self._node(child)
        top = opt.top(top)
        if self.tiered is not None:
            rows = self.tiered.ranked(v, top=top)
        elif self.parent_set_posterior is None:
            raise OptionError("this result has no parent-set posteriors")
        else:
            rows = ranked(self.parent_set_posterior[v], self.families, v, top=top)
        return [(tuple(self.names[u] for u in ps), p) for ps, p in rows]

    def _need_posterior(self) -> None:
        if self.posterior is None:
            raise OptionError("this result holds only the MAP network (posterior=False); run "
                              "learn again with posterior=True on the same workdir to add the posterior")

    def _node(self, node) -> int:
        if isinstance(node, (int, np.integer)) and not isinstance(node, bool):
            if 0 <= node < len(self.names):
                return int(node)
            raise OptionError(f"node index {node} out of range 0..{len(self.names) - 1}")
        if node in self.names:
            return self.names.index(node)
        raise OptionError(f"no variable named {node!r}")

    def edges(self) -> list[tuple[str, str, float]]:
        """All n(n-1) directed edges as (parent, child, posterior), highest first (a dynamic
        network: the n·L·n from lagged variables and the n(n−1) within slice t)."""
        self._need_posterior()
        out = [(self.names[u], self.names[v], float(self.posterior[u, v])) for u, v in self._pairs()]
        return sorted(out, key=lambda e: -e[2])

    def map_arcs(self) -> list[tuple[str, str]]:
        """The arcs (parent, child) of the MAP network (learn(..., map_dag=True)): the DAG
        with the highest Σ_i β_i(G_i), i.e. the highest posterior under a DAG-modular prior."""
        if self.map_parents is None:
            raise OptionError("no MAP network in this result: learn(..., map_dag=True)")
        return frames.arcs(self.names, self.map_parents)

    def map_to_pandas(self):
        """The MAP network's arcs as a DataFrame with columns parent, child."""
        arcs = self.map_arcs()
        return frames.to_frame({"parent": [a for a, _ in arcs], "child": [b for _, b in arcs]})

    def map_to_networkx(self):
        """The MAP network as a networkx DiGraph with every variable as a node."""
        return frames.arcs_digraph(self.names, self.map_arcs(), "map_to_networkx()")

    def to_pandas(self):
        """A pandas DataFrame with columns parent, child, posterior: all n(n-1) directed
        edges in node order (pandas is an optional dependency)."""
        self._need_posterior()
        pairs = self._pairs()
        return frames.to_frame({"parent": [self.names[u] for u, _ in pairs],
                                "child": [self.names[v] for _, v in pairs],
                                "posterior": [float(self.posterior[u, v]) for u, v in pairs]})

    def to_networkx(self, threshold: float | None = None):
        """A networkx DiGraph with every variable as a node and an arc u → v with attribute
        ``posterior`` for every pair, or only for those with posterior ≥ threshold. A
        dynamic network's is the 2-TBN: arcs into slice t only, each node with attribute
        ``lag`` (0 for slice t, l for NAME[t-l])."""
        self._need_posterior()
        g = frames.to_digraph(list(self.names), self.posterior, "posterior", threshold,
                              None if self.children is None else self._pairs())
        if self.children is not None:
            from bigbn.io.series import lag_of

            for name in self.names:
                g.nodes[name]["lag"] = lag_of(name, self.names)
        return g

    def parent_sets_to_pandas(self):
        """A DataFrame with columns child, parents (a tuple of names), posterior: every
        parent set of nonzero posterior, per node in data order, highest first."""
        kids = range(len(self.names)) if self.children is None else self.children
        rows = [(self.names[c], ps, p) for c in kids for ps, p in self.parent_sets(c)]
        return frames.to_frame({"child": [r[0] for r in rows], "parents": [r[1] for r in rows],
                                "posterior": [r[2] for r in rows]})

    def strength(self):
        """bnlearn's arc-strength table (`boot.strength`, `custom.strength`) as a DataFrame:
        from, to, strength = p(from and to adjacent | data) = p(from → to) + p(to → from),
        direction = p(from → to | adjacent); every ordered pair, both orientations, as
        WORKDIR/strength.csv holds it (bigbn/outputs/strength.py)."""
        self._need_posterior()
        rows = strength_rows(self.names, self.posterior)
        return frames.to_frame({h: [r[j] for r in rows] for j, h in enumerate(STRENGTH_HEADER)})

    def averaged(self, threshold: float = 0.5, by: str = "arc"):
        """The averaged network as a networkx DiGraph, acyclic by construction: the arcs with
        p(u → v) ≥ threshold taken by decreasing posterior, skipping any that would close a
        directed cycle with those already taken (they are listed in ``graph["skipped"]``; at
        0.5 no pair can give both directions, since p(u → v) + p(v → u) ≤ 1, but a longer
        cycle can). by="adjacency": bnlearn's `averaged.network` rule instead, the pairs
        with strength > threshold (or 1) oriented by direction ≥ 0.5, by decreasing strength. Each arc carries ``posterior``, ``strength``, ``direction``
        (`strength`) and ``mark``: "directed" when the arc is compelled in the averaged
        DAG's Markov equivalence class (its CPDAG), "undirected" when it is reversible.
        With samples (a Result of `bigbn.open` after `bigbn sample`) each arc also carries
        ``p_compelled`` and ``p_reversible``: the posterior probability, estimated from the
        samples, that u → v is a compelled arc of the true DAG's CPDAG, and that u — v is
        an undirected edge of it."""
        self._need_posterior()
        nx = frames.require("networkx", "averaged()")
        kept, skipped = averaged_arcs(self.posterior, threshold, by)
        n, names = len(self.names), self.names
        adj = np.zeros((n, n), dtype=bool)
        for u, v in kept:
            adj[u, v] = True
        compelled, _ = cpdag(adj)
        s, d = strength_matrices(self.posterior)
        marks = None
        if self.samples is not None and self.samples.parents.ndim == 2:
            marks = cpdag_probabilities(self.samples.parents, self.samples.weights)
        g = nx.DiGraph(threshold=float(threshold), by=by, skipped=[(names[u], names[v]) for u, v in skipped])
        g.add_nodes_from(names)
        for u, v in kept:
            attrs = {"posterior": float(self.posterior[u, v]), "strength": float(s[u, v]),
                     "direction": float(d[u, v]), "mark": "directed" if compelled[u, v] else "undirected"}
            if marks is not None:
                attrs.update(p_compelled=float(marks[0][u, v]), p_reversible=float(marks[1][u, v]))
            g.add_edge(names[u], names[v], **attrs)
        return g

    def to_pgmpy(self, dag="map", data=None):
        """The learned network as a pgmpy model with posterior-mean parameters under the
        run's own parameter prior (BDeu / K2: Dirichlet, a DiscreteBayesianNetwork; BGe:
        normal-Wishart, a LinearGaussianBayesianNetwork; bigbn/outputs/model.py).
        dag: "map" (the MAP network: learn(..., map_dag=True) or `bigbn run --map`), a
        threshold (the DAG of `averaged`), or a list of (parent, child) arcs. data: the
        run's data; default the file the run read (a Result with a workdir). pgmpy is
        optional: without it, one line says to install it."""
        from bigbn.outputs import model

        frames.require("pgmpy", "to_pgmpy()")
        return model.to_pgmpy(model.fit_result(self, dag, data))

    def _repr_html_(self) -> str:
        """A compact table for Jupyter: the model, log p(data), the strongest edges."""
        from bigbn.outputs.report import result_html

        return result_html(self)

    def to_csv(self, path) -> None:
        """Write parent,child,posterior rows (all n(n-1), in node order)."""
        self._need_posterior()
        with open_for_writing(path, "to_csv()") as fh:
            fh.write("parent,child,posterior\n")
            for u, v in self._pairs():
                fh.write(f"{csv_field(self.names[u])},{csv_field(self.names[v])},"
                         f"{self.posterior[u, v]:.17g}\n")


def run_workdir(source, caller: str) -> str | Path:
    """The work directory of a finished run as `sample` and `effects` take it: a path, or
    the `Result` of learn(..., workdir=...); OptionError (one line) for anything else.
    caller: the function's name in messages."""
    if isinstance(source, Result):
        if source.workdir is None:
            raise OptionError(f"this result's run was in a temporary folder, removed when learn returned: "
                              f"run learn(..., workdir=DIR) to keep it for {caller}()")
        return source.workdir
    if isinstance(source, (str, os.PathLike)):
        return opt.workdir(source)
    data = " (data go to learn)" if frames.is_dataframe(source) or isinstance(source, np.ndarray) else ""
    raise OptionError(f"{caller}() takes a finished run: its work directory (a path) or the Result of "
                      f"learn, got {type(source).__name__}{data}")


def open_for_writing(path, what: str):
    """``open(path, "w")`` for a file a user names, with one line (OptionError) for what is
    not a path, a folder, a named pipe that nothing reads (`options.open_output`, as the
    CLI's outputs: open() waited for a reader, forever), or a file that cannot be written."""
    if not isinstance(path, (str, os.PathLike)):
        raise OptionError(f"{what} needs a file path, got {type(path).__name__}")
    if os.path.isdir(path):
        raise OptionError(f"{os.fspath(path)}: is a folder, not a file; give a file name "
                          f"(e.g. {os.path.join(path, 'edges.csv')})")
    try:
        return opt.open_output(path, "w", newline="", encoding="utf-8")  # UTF-8: as every reader reads it
    except OSError as e:
        raise OptionError(f"cannot write {os.fspath(path)}: {e.strerror}") from None


def write_arcs(path, arcs) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write("parent,child\n")
        for u, v in arcs:
            fh.write(f"{csv_field(u)},{csv_field(v)}\n")


