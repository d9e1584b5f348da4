"""The learned network: one DAG of a finished run with posterior-mean parameters.

A run gives posteriors over structures; a pgmpy or bnlearn user wants one network with
its parameters to query, simulate or save. `fit_result` picks the DAG (`dag_arcs`: the
MAP network, the averaged network at a threshold, `bigbn.outputs.strength.averaged_arcs`,
or arcs given by name) and fits each node's CPD on the run's own data with the
posterior mean under the run's own parameter prior (`bigbn.outputs.parameters`, the
same numbers causal effects use): Dirichlet tables for BDeu / K2 (a `bigbn.io.bif.Network`),
linear Gaussian CPDs for BGe (a `GaussianNetwork`). With interventional data each node's
CPD comes from the rows where it was not a target (Cooper & Yoo 1999, as the score).

`to_pgmpy` turns either into pgmpy's `DiscreteBayesianNetwork` or
`LinearGaussianBayesianNetwork` (pgmpy is optional); `bigbn.io.bif` writes the discrete
one as BIF or XMLBIF (`bigbn export`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from bigbn.errors import OptionError, WorkdirError
from bigbn.inputs import load_dataset
from bigbn.io import frames
from bigbn.io.bif import Network, check_variable_names
from bigbn.io.data import Dataset
from bigbn.outputs.parameters import bge_posterior, dirichlet_table, gaussian_conditional
from bigbn.outputs.strength import averaged_arcs
from bigbn.plan.tiers import MAX_TIERED_NODES
from bigbn.scores.base import BUILTIN, check_options
from bigbn.store.rundir import read_record

__all__ = ["GaussianNetwork", "dag_arcs", "run_data", "fit", "fit_result", "to_pgmpy"]


@dataclass(frozen=True, eq=False)
class GaussianNetwork:
    """A linear Gaussian network: node v = intercepts[v] + Σ_j coefficients[v][j] ·
    parents[v][j] + N(0, variances[v]). parents: node indices per node, in data order."""

    names: tuple
    parents: tuple
    intercepts: np.ndarray
    coefficients: tuple
    variances: np.ndarray

    def __post_init__(self):
        # as a `Network`'s: a name "a\nb" went into to_pgmpy's model and every printed list
        check_variable_names(self.names)

    def arcs(self) -> list[tuple[int, int]]:
        return [(p, v) for v in range(len(self.names)) for p in self.parents[v]]


def dag_arcs(res, dag) -> list[tuple[int, int]]:
    """The arcs (u, v) in node indices of the DAG ``dag`` names for a `Result`: "map" (the
    MAP network), a threshold in (0, 1] (`Result.averaged`), or (parent, child) pairs of
    names or indices (checked to be a DAG)."""
    names = tuple(res.names)
    if isinstance(dag, str):
        if dag != "map":
            raise OptionError(f"dag is \"map\", a threshold in (0, 1] or a list of (parent, child) arcs, got {dag!r}")
        if res.map_parents is None:
            raise OptionError("this run has no MAP network: run the same command with --map (learn(..., "
                              "map_dag=True)) to add it, or give a threshold for the averaged network "
                              "(--dag 0.5, dag=0.5)")
        index = {s: j for j, s in enumerate(names)}
        return [(index[a], index[b]) for a, b in res.map_arcs()]
    if isinstance(dag, (int, float, np.floating)) and not isinstance(dag, bool):
        res._need_posterior()
        return averaged_arcs(res.posterior, dag)[0]
    try:
        pairs = [tuple(a) for a in dag]
    except TypeError:
        raise OptionError(f"dag is \"map\", a threshold in (0, 1] or a list of (parent, child) arcs, "
                          f"got {type(dag).__name__}") from None
    arcs = []
    for pair in pairs:
        if len(pair) != 2:
            raise OptionError(f"an arc is (parent, child), got {pair!r}")
        u, v = (res._node(x) for x in pair)
        if u == v:
            raise OptionError(f"arc {pair!r}: a node cannot be its own parent")
        arcs.append((u, v))
    arcs = list(dict.fromkeys(arcs))
    _check_acyclic(names, arcs)
    return arcs


def _check_acyclic(names, arcs) -> None:
    n = len(names)
    indeg = [0] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for u, v in arcs:
        indeg[v] += 1
        children[u].append(v)
    ready = [v for v in range(n) if indeg[v] == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for v in children[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if seen < n:
        left = [names[v] for v in range(n) if indeg[v] > 0]
        raise OptionError(f"the arcs given hold a directed cycle (through {', '.join(left[:4])}); a "
                          "Bayesian network is a DAG")


def run_data(res, data=None, sep: str | None = None):
    """(the run's data as its score reads them, the score's parameter prior) for a `Result`:
    ``data`` (a path, DataFrame, array or Dataset) or, when None, the file the run read
    (its work directory's run.json names it); checked against the run's content hash."""
    options = _options(res)
    used = options.get("score") or "auto"
    if used == "jkl":
        raise OptionError("this run's local scores came from a .jkl file: there is no parameter model to "
                          "fit a network with (run on the data)")
    if used not in BUILTIN:
        raise OptionError(f"the run used the {used} score, which bigbn does not ship: it has no "
                          "parameter model bigbn knows")
    if data is None:
        record = read_record(res.workdir) if res.workdir is not None else None
        data = record.source if record is not None else None
        if data in (None, "", "array", frames.SOURCE):
            raise OptionError("the run's data came from memory (a DataFrame or an array) or its folder is "
                              "gone: give the data, e.g. to_pgmpy(data=df)")
        if not os.path.isfile(data):
            raise OptionError(f"the run's data file {data} is not there; give the data (data=... or --data FILE)")
    if used == "cg":
        raise OptionError("this run's data are mixed (the cg score): bigbn has no parameter model of a "
                          "conditional Gaussian network to fit (BIF, XMLBIF and to_pgmpy() are for all-discrete "
                          "or all-continuous runs)")
    dynamic = options.get("dbn")
    if dynamic and not isinstance(data, Dataset):  # a time series: its transition rows, as the run read them
        from bigbn import dbn

        data = dbn.load(data, lag=dynamic["lag"], series=dynamic["series_column"], time=dynamic["time_column"],
                        score=used, sep=sep).dataset
    ds, score, digest = load_dataset(data, names=tuple(res.names), score=used, sep=sep,
                                     intervention_column=options.get("intervention_column"),
                                     max_nodes=max(MAX_TIERED_NODES, len(res.names)))  # not 40: a tiered run's
    run_digest = res.summary.get("data_sha256")
    if run_digest is None and res.workdir is not None:  # a summary.json without it took any data
        record = read_record(res.workdir)
        run_digest = record.fingerprint.get("data_sha256") if record is not None else None
    if run_digest is not None and digest != run_digest:
        raise OptionError(f"{getattr(ds, 'path', '') or 'data'}: not the data of this run (content hash "
                          f"{digest[:12]} vs the run's {str(run_digest)[:12]})")
    if tuple(ds.names) != tuple(res.names):
        raise OptionError("the data's column names differ from the run's")
    prior = score.parameter_prior(check_options(score, {o.name: options.get(o.name) for o in score.options}))
    if prior is None:
        raise OptionError(f"the {score.name} score has no parameter model, so bigbn cannot fit a network under it")
    return ds, prior


def _options(res) -> dict:
    """The options of the run a `Result` holds (summary.json's "options"), checked for the
    types `run_data` reads: an edited summary.json with "options" a string or "dbn" a
    number was a traceback (ValueError, TypeError); now one line naming the file."""
    options = res.summary.get("options") if isinstance(res.summary, dict) else None
    options = {} if options is None else options
    dynamic = options.get("dbn") if isinstance(options, dict) else None
    if not isinstance(options, dict) \
            or any(not isinstance(options.get(k), (str, type(None))) for k in ("score", "intervention_column")) \
            or not (dynamic is None or isinstance(dynamic, dict) and {"lag", "series_column", "time_column"} <= set(dynamic)):
        where = res.workdir / "summary.json" if res.workdir is not None else "the result's summary"
        raise WorkdirError(f"{where}: its \"options\" are damaged; run the same `bigbn run` command again to "
                           "rewrite it")
    return dict(options)


def _row_groups(ds):
    """[(the dataset of some rows, the nodes fitted from them)]: all rows for every node,
    or with interventional data the rows where each node was not a target."""
    if getattr(ds, "intervened", None) is None:
        return [(ds, list(range(ds.n)))]
    from bigbn.scores.interventions import by_rows

    return [(ds.rows(keep), nodes) for keep, nodes in by_rows(ds, range(ds.n))]


def fit(ds, prior: dict, arcs) -> Network | GaussianNetwork:
    """The network of ``arcs`` (node indices) with the posterior-mean parameters of each
    node's CPD under ``prior`` (a score's `parameter_prior`) on the dataset ``ds``."""
    n = ds.n
    parents = tuple(tuple(sorted(u for u, w in arcs if w == v)) for v in range(n))
    if ds.kind == "continuous":
        intercepts, variances = np.empty(n), np.empty(n)
        coefs: list = [None] * n
        for sub, nodes in _row_groups(ds):
            data = np.asarray(sub.data, dtype=np.float64)
            mean, R, alpha_w = bge_posterior(data, prior["alpha_mu"], prior["alpha_w"])
            for v in nodes:
                intercepts[v], coefs[v], variances[v] = gaussian_conditional(mean, R, alpha_w + data.shape[0], v,
                                                                             parents[v])
        return GaussianNetwork(tuple(ds.names), parents, intercepts, tuple(coefs), variances)
    r = np.asarray(ds.arities, dtype=np.int64)
    cpts: list = [None] * n
    for sub, nodes in _row_groups(ds):
        data = np.asarray(sub.data, dtype=np.int64)
        for v in nodes:
            q = math.prod(int(r[p]) for p in parents[v])
            if q * int(r[v]) > 10**8:
                raise OptionError(f"the CPT of {ds.names[v]!r} would have {q * int(r[v])} cells: too many to write")
            table = dirichlet_table(data, r, v, parents[v], prior["k2"], prior["ess"])
            cpts[v] = table.reshape(tuple(int(r[p]) for p in parents[v]) + (int(r[v]),))
    return Network(tuple(ds.names), tuple(tuple(lv) for lv in ds.levels), parents, tuple(cpts))


def fit_result(res, dag="map", data=None, sep: str | None = None) -> Network | GaussianNetwork:
    """`fit` for a `Result`: the DAG ``dag`` names (`dag_arcs`) on the run's data (`run_data`)."""
    arcs = dag_arcs(res, dag)
    ds, prior = run_data(res, data, sep)
    return fit(ds, prior, arcs)


def to_pgmpy(model: Network | GaussianNetwork):
    """pgmpy's DiscreteBayesianNetwork (TabularCPDs with the state names) or
    LinearGaussianBayesianNetwork (LinearGaussianCPDs: beta = [intercept, coefficients],
    std = √variance) of a fitted network; OptionError when pgmpy is missing."""
    frames.require("pgmpy", "to_pgmpy()")
    names = list(model.names)
    edges = [(names[u], names[v]) for u, v in model.arcs()]
    if isinstance(model, GaussianNetwork):
        from pgmpy.factors.continuous import LinearGaussianCPD
        from pgmpy.models import LinearGaussianBayesianNetwork

        bn = LinearGaussianBayesianNetwork(edges)
        bn.add_nodes_from(names)
        bn.add_cpds(*(LinearGaussianCPD(names[v], [float(model.intercepts[v]), *map(float, model.coefficients[v])],
                                        math.sqrt(float(model.variances[v])),
                                        [names[p] for p in model.parents[v]]) for v in range(len(names))))
    else:
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        bn = DiscreteBayesianNetwork(edges)
        bn.add_nodes_from(names)
        r = [len(s) for s in model.states]
        cpds = []
        for v in range(len(names)):
            ps = model.parents[v]
            cpds.append(TabularCPD(names[v], r[v], model.cpts[v].reshape(-1, r[v]).T,
                                   evidence=[names[p] for p in ps] or None,
                                   evidence_card=[r[p] for p in ps] or None,
                                   state_names={names[j]: list(model.states[j]) for j in (v, *ps)}))
        bn.add_cpds(*cpds)
    bn.check_model()
    return bn
