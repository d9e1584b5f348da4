"""Python API: ``learn(data, ...)`` → exact edge posteriors (a `Result`).

The same function backs ``bigbn run``. It scores every family (beta = log ρ + log local
likelihood), plans the chunk lattice, runs the engine in a work directory (a temporary
one unless given) and returns the n×n posterior matrix. A work directory that already
holds a run of the same data and options is resumed; other data or options are refused
unless ``fresh=True``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import resource
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import frames
from . import interventions as interventions_
from ._version import __version__
from .data import Dataset, Table, _check_header, discrete_dataset, read_table
from . import engine
from .engine import Job, execute, intact, verify
from .executors import Callback
from .errors import DataError, OptionError, WorkdirError
from .parentsets import parent_set_posteriors, ranked, write_parent_sets
from .plan import MAX_NODES, Plan, STAGES, choose_chunk_bits, task_id
from .priors import log_prior
from .scoring import Score, check_options, lookup, resolve, source_fingerprint
from . import tiers as tiering
from .tiers import MAX_TIERED_NODES
from .workdir import Workdir, check_is_ours, checksum

PRIORS = ("uniform", "koivisto-sood")


@dataclass
class Result:
    """Exact edge posteriors of one run.

    posterior: float64 (n, n), posterior[u, v] = p(u → v | data), zero diagonal;
    names: the n variable names; log_marginal: log p(data) under the model (natural log,
    up to the prior's normalising constant, as in the paper); summary: what was run.
    A MAP-only run (learn(..., map_dag=True, posterior=False)) has posterior and
    log_marginal None, and only the map_* methods.
    """

    posterior: np.ndarray | None
    names: tuple[str, ...]
    log_marginal: float | None
    summary: dict = field(default_factory=dict)
    parent_set_posterior: np.ndarray | None = field(default=None, repr=False)
    families: np.ndarray | None = field(default=None, repr=False)
    map_parents: np.ndarray | None = field(default=None, repr=False)
    map_log_score: float | None = None
    tiered: "tiering.TieredFamilies | None" = field(default=None, repr=False)

    def parent_sets(self, child, top: int | None = None) -> list[tuple[tuple[str, ...], float]]:
        """Every parent set of ``child`` (a name or an index) with nonzero posterior, as
        (parent names in data order, p(G_child = G | data)), highest first; they sum to 1.
        top: only the ``top`` most probable."""
        self._need_posterior()
        v = self._node(child)
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
        """All n(n-1) directed edges as (parent, child, posterior), highest first."""
        self._need_posterior()
        n = len(self.names)
        out = [(self.names[u], self.names[v], float(self.posterior[u, v]))
               for u in range(n) for v in range(n) if u != v]
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
        n = len(self.names)
        pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
        return frames.to_frame({"parent": [self.names[u] for u, _ in pairs],
                                "child": [self.names[v] for _, v in pairs],
                                "posterior": [float(self.posterior[u, v]) for u, v in pairs]})

    def to_networkx(self, threshold: float | None = None):
        """A networkx DiGraph with every variable as a node and an arc u → v with attribute
        ``posterior`` for every pair, or only for those with posterior ≥ threshold."""
        self._need_posterior()
        return frames.to_digraph(list(self.names), self.posterior, "posterior", threshold)

    def parent_sets_to_pandas(self):
        """A DataFrame with columns child, parents (a tuple of names), posterior: every
        parent set of nonzero posterior, per node in data order, highest first."""
        rows = [(c, ps, p) for c in self.names for ps, p in self.parent_sets(c)]
        return frames.to_frame({"child": [r[0] for r in rows], "parents": [r[1] for r in rows],
                                "posterior": [r[2] for r in rows]})

    def to_csv(self, path) -> None:
        """Write parent,child,posterior rows (all n(n-1), in node order)."""
        self._need_posterior()
        n = len(self.names)
        with open(path, "w", newline="") as fh:
            fh.write("parent,child,posterior\n")
            for u in range(n):
                for v in range(n):
                    if u != v:
                        fh.write(f"{_csv_field(self.names[u])},{_csv_field(self.names[v])},"
                                 f"{self.posterior[u, v]:.17g}\n")


def _write_arcs(path, arcs) -> None:
    with open(path, "w", newline="") as fh:
        fh.write("parent,child\n")
        for u, v in arcs:
            fh.write(f"{_csv_field(u)},{_csv_field(v)}\n")


def _csv_field(s: str) -> str:
    if any(ch in s for ch in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


# --------------------------------------------------------------------------------- data

def load_dataset(data, names=None, score: str | Score = "auto", sep: str | None = None,
                 max_nodes: int = MAX_NODES, intervention_column: str | None = None,
                 interventions=None) -> tuple[Dataset, Score, str]:
    """Turn a CSV path, a Dataset or an array into (Dataset, the Score to use, data hash).
    score: "auto", a score's name or a `bigbn.scoring.Score`. max_nodes: most variables
    allowed (MAX_NODES; more with tiers, bigbn/tiers.py). intervention_column (a CSV file or
    a DataFrame) or interventions (any data): the rows' intervention targets
    (`bigbn.interventions`); the Dataset then has ``intervened``. A Dataset carries its own
    targets (``intervened``): intervention_column then only names the column they came from."""
    wanted = lookup(score)  # an unknown name is refused before the data are read
    targets = None  # the intervention column's cells and how to name a row in messages
    if intervention_column is not None:
        if interventions is not None:
            raise OptionError("give intervention_column or interventions, not both")
        if not (isinstance(data, (str, os.PathLike, Dataset)) or frames.is_dataframe(data)):
            raise OptionError("intervention_column names a column of a CSV file or a DataFrame; "
                              "for an array give interventions= (a set of target names per row)")
        intervention_column = str(intervention_column)
    if isinstance(data, Dataset):
        ds = data
        digest = _hash_dataset(ds)
    elif frames.is_dataframe(data):
        if intervention_column is not None:
            if intervention_column not in [str(c) for c in data.columns]:
                raise DataError(f"{frames.SOURCE}: no column named {intervention_column!r} (the "
                                "intervention column)")
            j = [str(c) for c in data.columns].index(intervention_column)
            index = data.index
            cells = [None if (isinstance(v, float) and v != v) else v for v in data.iloc[:, j].tolist()]
            targets = (cells, lambda r: f"{frames.SOURCE}, row {index[r]!r}")
            data = data.drop(columns=data.columns[j])
        table, categories = frames.table_from_frame(data)
        if table.n > max_nodes:
            raise OptionError(f"{table.n} columns, but the engine supports at most {max_nodes} variables"
                              + _MORE_WITH_TIERS * (max_nodes == MAX_NODES))
        ds = frames.declared_order(_dataset_from_table(table, wanted, max_nodes), categories)
        digest = _hash_dataset(ds)
    elif isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        table = read_table(path, sep, may_be_empty=intervention_column)
        if intervention_column is not None:
            table, cells = interventions_.split_column(table, intervention_column)
            targets = (cells, lambda r: f"{path}, row {table.line(r)}")
        if table.n > max_nodes:
            raise OptionError(f"{path}: {table.n} columns, but the engine supports at most "
                              f"{max_nodes} variables" + _MORE_WITH_TIERS * (max_nodes == MAX_NODES))
        ds = _dataset_from_table(table, wanted, max_nodes)
        digest = _hash_dataset(ds)  # what was read, once (a named pipe can be read only once)
    else:
        if data is None or isinstance(data, (bytes, dict, int, float, bool)):
            raise OptionError(f"data must be a CSV path, a pandas DataFrame, a Dataset or a 2-d "
                              f"array, got {type(data).__name__}")
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as e:  # ragged nested lists and the like
            raise OptionError(f"data cannot be read as a 2-d array ({e})") from None
        if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] < 1:
            raise OptionError(f"data array must have shape (rows, ≥2 variables), got {arr.shape}")
        nm = tuple(str(x) for x in names) if names is not None \
            else tuple(f"X{j + 1}" for j in range(arr.shape[1]))
        if len(nm) != arr.shape[1]:
            raise OptionError(f"{len(nm)} names for {arr.shape[1]} columns")
        _check_header("array", list(nm))
        if arr.dtype.kind == "c":
            raise DataError("complex numbers are not data bigbn can score")
        if arr.dtype.kind in "fc":
            cells = np.asarray(arr, dtype=float).astype(str)  # shortest round-trip text
        else:  # integers, booleans, strings, objects: the cells' text, as a CSV file holds it
            if any(v is None for v in arr.ravel().tolist()):
                raise DataError("data array: missing value (None); bigbn needs complete data")
            cells = np.char.strip(arr.astype(str))
        frames.check_complete(cells, nm, "data array")
        # the same rules as for a CSV file: levels are the observed values
        ds = _dataset_from_table(Table("array", nm, cells), wanted, max_nodes)
        digest = _hash_dataset(ds)
    if ds.n > max_nodes:
        raise OptionError(f"{ds.n} variables, but the engine supports at most {max_nodes}"
                          + _MORE_WITH_TIERS * (max_nodes == MAX_NODES))
    score = resolve(wanted or "auto", ds.kind)
    if targets is not None or interventions is not None:
        mask = interventions_.parse_cells(targets[0], ds.names, intervention_column, targets[1]) \
            if targets is not None else interventions_.from_sets(interventions, ds.names, ds.m)
        interventions_.check_identifiable(mask, ds.names, ds.path or "data")
        # all rows observational: the observational dataset (the same hash and numbers)
        ds = dataclasses.replace(ds, intervened=mask if mask.any() else None)
        digest = _hash_dataset(ds)
    return ds, score, digest


_MORE_WITH_TIERS = f" (up to {MAX_TIERED_NODES} in tiers of at most {MAX_NODES}: --tiers)"


def _dataset_from_table(table: Table, score: Score | None, max_nodes: int = MAX_NODES) -> Dataset:
    """The table's cells as the kind of data ``score`` needs (None: "auto", continuous if
    the table looks it)."""
    from .bge import continuous_dataset, looks_continuous

    if (score.data_kind == "continuous") if score is not None else looks_continuous(table):
        return continuous_dataset(table)
    return discrete_dataset(table, max_nodes=max_nodes)


def _hash_dataset(ds: Dataset) -> str:
    """Content hash of a dataset: everything a score depends on (the codes or values,
    names, arities, levels, kind). The same data give the same hash whether they came
    from a file, a pipe, a DataFrame or an array."""
    h = hashlib.sha256(np.ascontiguousarray(ds.data).tobytes())
    h.update(f"{ds.data.dtype}{ds.data.shape}{ds.kind}".encode())
    h.update(np.ascontiguousarray(ds.arities, dtype=np.int64).tobytes())
    h.update(json.dumps([list(ds.names), [list(lv) for lv in ds.levels]]).encode())
    if ds.intervened is not None:
        h.update(b"intervened" + np.packbits(ds.intervened).tobytes())
    return h.hexdigest()


# --------------------------------------------------------------------------------- model

def score_families(ds: Dataset, score: str | Score, max_parents: int, *,
                   structure_prior: str = "koivisto-sood", prior_kwargs=None,
                   **score_options) -> np.ndarray:
    """beta = log ρ_i(G) + log p(x_i | x_G) for every family; float64 (n, F). score: a name
    or a `Score`; score_options: its options (ess=..., alpha_mu=...), checked by
    `bigbn.scoring.check_options`."""
    score = resolve(score, ds.kind)
    options = check_options(score, score_options)
    if structure_prior not in PRIORS:
        raise OptionError(f"unknown structure prior '{structure_prior}' (choose one of: "
                          f"{', '.join(PRIORS)})")
    k = min(int(max_parents), ds.n - 1)
    rho = log_prior(ds.n, k, structure_prior, names=ds.names, **(prior_kwargs or {}))
    local = interventions_.local_scores(score, ds, k, options)
    bad = np.isnan(local) | (np.isposinf(local) if score.impossible_families else np.isinf(local))
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise DataError(f"{ds.path or 'data'}: the {score.name} score of column '{ds.names[i]}' is not "
                        "finite (values too large or degenerate: rescale the data)")
    return local + rho


# --------------------------------------------------------------------------------- run

# The modules whose code decides any number a run stores: the kernels and the fast
# log-add-exp they inline, the task functions and edge fold, the plan (summation order
# follows the chunk lattice), the family order, the dispatch to the score and the priors.
# The score's own modules (`Score.modules`) enter the run's fingerprint separately
# (`bigbn.scoring.source_fingerprint`).
NUMERICS_MODULES = ("kernels.py", "fastmath.py", "engine.py", "plan.py", "families.py",
                    "scoring.py", "interventions.py", "priors.py", "maxplus.py", "mapdag.py")


def numerics_fingerprint() -> str:
    """SHA-256 (first 16 hex digits) of the source of NUMERICS_MODULES: part of the run
    fingerprint, so a workdir is never resumed by code that computes differently (no
    version number to remember to bump)."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in NUMERICS_MODULES:
        h.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _write_json_atomic(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def default_memory() -> int:
    """Memory budget when none is given: a quarter of the machine's RAM, at most 8 GiB."""
    import psutil

    return int(min(psutil.virtual_memory().total // 4, 8 << 30))


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def learn(data=None, *, names=None, max_parents: int = 3, score: str | Score = "auto",
          ess: float | None = None, structure_prior: str | None = None,
          alpha_mu: float | None = None, alpha_w: float | None = None,
          score_options: dict | None = None, prior_kwargs: dict | None = None, workdir=None, fresh: bool = False,
          chunk_bits: int | None = None, memory: int | None = None, workers: int | None = None,
          scheduler: str = "threads", alpha_mode: str | None = None, progress=None,
          check_disk: bool = True, parent_set_mass: float = 0.999, map_dag: bool = False,
          posterior: bool = True, sep: str | None = None, tiers=None, scores=None,
          intervention_column: str | None = None, interventions=None) -> Result:
    """Exact posterior p(u → v | data) of every directed edge (Koivisto 2006).

    data: a CSV path (comma, tab or semicolon separated, detected unless ``sep`` says), a
    pandas DataFrame, a `Dataset`, or an array (m, n) — integer codes for discrete data,
    floats for continuous (BGe). score: "auto" (BGe for continuous data, else BDeu),
    "bdeu", "k2", "bge", or a `bigbn.scoring.Score` object. ess (BDeu, default 1), alpha_mu
    (BGe, default 1), alpha_w (BGe, default n + α_μ + 1) and score_options (a dict, for any
    score's options) are the score's parameters; one the score does not take is refused
    (`bigbn.scoring.check_options`). structure_prior: "uniform" (ρ = 1) or "koivisto-sood"
    (ρ_i(G) = 1/C(n-1, |G|), the default); q_i ≡ 1. scores: instead of data, a .jkl file of
    local scores (a path or a `bigbn.jkl.ScoreFile`; GOBNILP's format, `bigbn.jkl`): they
    are the whole β, bigbn adds no structure prior (ρ ≡ 1) but the constraints of
    prior_kwargs. intervention_column (a column of the CSV file or DataFrame: each cell the
    row's intervention targets joined by "|", empty = observational) or interventions (one
    set of target names per row): interventional data, node i scored from the rows where it
    is not a target (`bigbn.interventions`). prior_kwargs: forbid, require, edge_prob,
    max_parents (per node) for `priors.log_prior`. workdir: where the tables live
    (a temporary directory, removed afterwards, if None); rerunning with the same
    workdir resumes. chunk_bits / memory / workers: the chunk lattice and parallelism
    (chunk bits default from the memory budget). progress: callable(stage, done, total).
    parent_set_mass: WORKDIR/parent_sets.csv lists each node's most probable parent sets
    until they carry this much of its posterior (1: every set of nonzero posterior);
    `Result.parent_sets` always has all of them. map_dag: also find the highest-scoring
    DAG (argmax Σ_i β_i(G_i); WORKDIR/map_dag.csv, `Result.map_arcs()`); it can be added
    to a finished run by running again with map_dag=True. posterior=False (with
    map_dag=True): only the MAP network, at 9·2^n bytes of disk and about a third of the
    work; the result has no posteriors, and running again with posterior=True adds them.
    tiers: a bucket order of the variables, {name: tier} (integers, lower = earlier) or a
    list of lists of names (earliest first): only the orders that list every earlier tier
    first have prior mass (docs/posterior.md, "Tiers"); up to MAX_TIERED_NODES variables,
    each tier at most MAX_NODES (bigbn/tiers.py).
    """
    t_start = time.time()
    if scores is not None:
        if intervention_column is not None or interventions is not None:
            raise OptionError("interventions are a property of data rows; scores from a file have none")
        ds, score, digest = _load_scores(data, scores, score)
    else:
        if data is None:
            raise OptionError("no data: give a CSV path, a DataFrame, a Dataset or an array "
                              "(or scores=FILE.jkl)")
        ds, score, digest = load_dataset(data, names, score, sep,
                                         max_nodes=MAX_NODES if tiers is None else MAX_TIERED_NODES,
                                         intervention_column=intervention_column,
                                         interventions=interventions)
    if structure_prior is None:
        structure_prior = "uniform" if ds.kind == "scores" else "koivisto-sood"
    elif ds.kind == "scores" and structure_prior != "uniform":
        raise OptionError(f"{ds.path}: scores from a file are the whole local score; bigbn adds no "
                          "structure prior to them (write it into the file, e.g. with `bigbn scores`)")
    given = dict(score_options or {})
    for key, value in (("ess", ess), ("alpha_mu", alpha_mu), ("alpha_w", alpha_w)):
        if value is not None:
            if given.get(key) is not None:
                raise OptionError(f"{key} given twice (as {key}= and in score_options)")
            given[key] = value
    score_opts = check_options(score, given)
    k = int(max_parents)
    if k < 0:
        raise OptionError(f"max parents must be ≥ 0, got {k}")
    k = min(k, ds.n - 1)
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise OptionError(f"workers must be ≥ 1, got {workers}")
    memory = default_memory() if memory is None else int(memory)
    if memory <= 0:
        raise OptionError(f"memory budget must be positive, got {memory}")
    _check_scheduler(scheduler)
    if not posterior and not map_dag:
        raise OptionError("posterior=False leaves nothing to compute: ask for the MAP network "
                          "(map_dag=True), or keep the posterior")
    if not (isinstance(parent_set_mass, (int, float)) and 0 < parent_set_mass <= 1):
        raise OptionError(f"parent-set mass must be in (0, 1], got {parent_set_mass!r}")
    options = {"score": score.name, **score_opts, "max_parents": k,
               "structure_prior": structure_prior, "constraints": _jsonable(prior_kwargs or {}),
               "intervention_column": intervention_column}
    fingerprint = {"data_sha256": digest, "n": ds.n, "m": ds.m, "numerics": numerics_fingerprint(),
                   "score_numerics": source_fingerprint(score), **options}
    if tiers is not None:
        if getattr(ds, "intervened", None) is not None:
            raise OptionError("tiers with interventional data are not supported yet")
        tier_ids = tiering.parse_tiers(tiers, ds.names)
        fingerprint["tiers"] = [[ds.names[v] for v in t] for t in tier_ids]
        return _learn_tiered(data, ds, score, k, tier_ids, fingerprint, score_opts=score_opts,
                             structure_prior=structure_prior, prior_kwargs=prior_kwargs,
                             workdir=workdir, fresh=fresh, chunk_bits=chunk_bits, memory=memory,
                             workers=workers, scheduler=scheduler, alpha_mode=alpha_mode,
                             progress=progress, check_disk=check_disk,
                             parent_set_mass=parent_set_mass, map_dag=map_dag, posterior=posterior,
                             t_start=t_start)
    if ds.n > MAX_NODES:
        raise OptionError(f"{ds.n} variables, but the engine supports at most {MAX_NODES}"
                          + _MORE_WITH_TIERS)

    # Scores first: they validate every model option (constraints, ess, BGe parameters), so
    # a refused run leaves no run.json behind that would block the corrected command.
    t_scores = time.time()
    if progress is not None:  # the local scores are the first stage a user waits for
        progress("scores", 0, 1)
    beta = score_families(ds, score, k, structure_prior=structure_prior, prior_kwargs=prior_kwargs,
                          **score_opts)
    t_scores = round(time.time() - t_scores, 4)
    if progress is not None:
        progress("scores", 1, 1)

    root, tmp = _open_root(workdir)
    try:
        with Workdir(root).lock() as owner:
            plan = _prepare(Workdir(root), fingerprint, ds.n, k, chunk_bits, alpha_mode, bool(map_dag),
                            bool(posterior), memory, workers, fresh, check_disk, source=_source(data, ds))
            wd = Workdir(root, owner)
            job = Job(wd, plan, beta)
            recomputed, journal = _run_engine(job, scheduler, workers, progress)
            result = Result(None, ds.names, None, families=plan.families)
            if plan.posterior:
                result.posterior = wd.read("posterior", slice(None))
                result.log_marginal = float(journal[task_id(("edges",))]["log_px"])
                result.parent_set_posterior = parent_set_posteriors(
                    beta, wd.read("gamma", slice(None)), result.log_marginal)
            result.summary = _summary(journal, plan, fingerprint, ds, workers, memory, scheduler,
                                      t_start)
            result.summary["recomputed_corrupt_tasks"] = recomputed
            if plan.map_dag:
                result.map_parents = wd.read("map_parents", slice(None)).astype(np.int64)
                result.map_log_score = float(journal[task_id(("map_dag",))]["log_score"])
                result.summary["map_dag"] = {"log_score": result.map_log_score,
                                             "arcs": [list(a) for a in result.map_arcs()]}
                _write_arcs(root / "map_dag.csv", result.map_arcs())
            result.summary["scoring_seconds_this_invocation"] = t_scores
            if plan.posterior:
                result.to_csv(root / "edges.csv")
                write_parent_sets(root / "parent_sets.csv", ds.names, parent_set_mass,
                                  lambda v, mass: ranked(result.parent_set_posterior[v], plan.families, v, mass))
            _write_json_atomic(root / "summary.json", result.summary)
            return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _load_scores(data, scores, score) -> tuple:
    """(the ScoreFile, its Score, its content hash) for learn(scores=...)."""
    from .jkl import FileScore, ScoreFile, read_jkl

    if data is not None:
        raise OptionError("give data or scores (a .jkl file), not both")
    if not (isinstance(score, str) and score.lower() == "auto"):
        raise OptionError("scores from a file replace the score: drop the score option")
    sf = scores if isinstance(scores, ScoreFile) else read_jkl(scores)
    return sf, FileScore(), sf.digest()


def _learn_tiered(data, ds: Dataset, score: Score, k: int, tier_ids, fingerprint: dict, *, score_opts,
                  structure_prior, prior_kwargs, workdir, fresh, chunk_bits, memory, workers,
                  scheduler, alpha_mode, progress, check_disk, parent_set_mass, map_dag, posterior,
                  t_start) -> Result:
    """`learn` with tiers (bigbn/tiers.py): one plan per tier of two or more nodes, run one
    after another on the run's lattice in its own scope, with one run.json and one journal."""
    lays = tiering.layouts(tier_ids, k)
    for lay in lays:
        if lay.m > MAX_NODES:
            raise OptionError(f"tier {lay.index + 1} has {lay.m} variables; a tier holds at most "
                              f"{MAX_NODES} (split it: the orders within a tier are summed over "
                              "on its 2^m lattice)")
    if ds.kind != "continuous" and score.name not in ("bdeu", "k2"):
        raise OptionError(f"tiers work with the discrete scores bdeu and k2, not {score.name}")
    t_scores = time.time()
    if progress is not None:
        progress("scores", 0, 1)
    betas = tiering.tier_scores(ds, lays, score.name, k, ess=score_opts.get("ess", 1.0),
                                structure_prior=structure_prior,
                                prior_kwargs=prior_kwargs, threads=workers)
    local = [tiering.tier_local_scores(b, lay) for b, lay in zip(betas, lays)]
    t_scores = round(time.time() - t_scores, 4)
    if progress is not None:
        progress("scores", 1, 1)
    root, tmp = _open_root(workdir)
    try:
        with Workdir(root).lock() as owner:
            plans = _prepare_tiered(Workdir(root), fingerprint, lays, chunk_bits, alpha_mode, bool(map_dag),
                                    bool(posterior), memory, workers, fresh, check_disk,
                                    source=_source(data, ds))
            n = ds.n
            result = Result(None, ds.names, None)
            post, fam_posts, log_px = np.zeros((n, n)), [], 0.0
            map_parents, map_score = np.zeros(n, dtype=object), 0.0
            recomputed = []
            for lay, beta, (A, M), (p_post, p_map) in zip(lays, betas, local, plans):
                def stage_progress(stage, done, total, _j=lay.index):
                    progress(f"tier {_j + 1}/{len(lays)} {stage}", done, total)

                tick = stage_progress if progress is not None else None
                if posterior:
                    if p_post is None:  # one node: Z = Σ_G β(G), γ = 1
                        gamma, log_z = np.zeros((1, 1)), float(A[0, 0])
                    else:
                        wd = Workdir(root, owner, lay.scope)
                        bad, journal = _run_engine(Job(wd, p_post, A), scheduler, workers, tick)
                        recomputed += bad
                        gamma = wd.read("gamma", slice(None))
                        log_z = float(journal[p_post.task(("edges",)).id]["log_px"])
                    fp = tiering.family_posteriors(beta, gamma, lay, log_z)
                    fam_posts.append(fp)
                    post[:, list(lay.nodes)] = tiering.edge_posteriors_from(fp, lay, n)
                    log_px += log_z
                if map_dag:
                    if p_map is None:
                        tier_parents = np.zeros(1, dtype=np.int64)
                        m_score = float(M[0, 0])
                    else:
                        wd = Workdir(root, owner, lay.scope + "-map")
                        bad, journal = _run_engine(Job(wd, p_map, M), scheduler, workers, tick)
                        recomputed += bad
                        tier_parents = wd.read("map_parents", slice(None)).astype(np.int64)
                        m_score = float(journal[p_map.task(("map_dag",)).id]["log_score"])
                    masks, score_sum = tiering.map_completion(beta, lay, tier_parents)
                    engine._check_close(score_sum, m_score, f"tier {lay.index + 1}: the MAP network's score and M(T)")
                    map_parents[list(lay.nodes)] = masks
                    map_score += m_score
            if posterior:
                result.posterior, result.log_marginal = post, log_px
                result.tiered = tiering.TieredFamilies(lays, fam_posts)
            journal = Workdir(root).journal()
            result.summary = _summary(journal, None, fingerprint, ds, workers, memory, scheduler, t_start)
            result.summary["log_marginal_likelihood"] = result.log_marginal
            result.summary["tiers"] = [{"tier": lay.index + 1, "nodes": [ds.names[v] for v in lay.nodes],
                                        **({"chunk_bits": pp.chunk_bits, "chunks": pp.n_chunks} if pp else {}),
                                        **({"log_z": None} if not posterior else {})}
                                       for lay, (pp, _) in zip(lays, plans)]
            result.summary["computed"] = [w for w, on in (("posterior", posterior), ("map_dag", map_dag)) if on]
            result.summary["recomputed_corrupt_tasks"] = recomputed
            result.summary["scoring_seconds_this_invocation"] = t_scores
            result.summary["disk_bytes"] = _tiered_disk(plans)
            if map_dag:
                result.map_parents, result.map_log_score = map_parents, map_score
                result.summary["map_dag"] = {"log_score": map_score,
                                             "arcs": [list(a) for a in result.map_arcs()]}
                _write_arcs(root / "map_dag.csv", result.map_arcs())
            if posterior:
                result.to_csv(root / "edges.csv")
                write_parent_sets(root / "parent_sets.csv", ds.names, parent_set_mass,
                                  result.tiered.ranked)
            _write_json_atomic(root / "summary.json", result.summary)
            return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _tiered_disk(plans) -> dict[str, int]:
    """Bytes of disk of a tiered run's tables: the tiers' tables, summed by name."""
    out: dict[str, int] = {}
    for pair in plans:
        for p in pair:
            for name, b in (p.disk_bytes() if p is not None else {}).items():
                out[name] = out.get(name, 0) + b
    return out


def _prepare_tiered(wd: Workdir, fingerprint: dict, lays, chunk_bits, alpha_mode, map_dag: bool,
                    posterior: bool, memory, workers, fresh: bool, check_disk: bool, source: str):
    """`_prepare` for a tiered run: run.json records every tier's chunk bits; a resume
    takes them from there."""
    if fresh:
        wd.clear()
    old = wd.read_run()
    if old is None and wd.has_state():
        raise WorkdirError(f"{wd.root} holds tables or a journal but no run.json (not made by "
                           "this version, or damaged); use --fresh to start over")
    if old is not None:
        _check_fingerprint(wd, old, fingerprint)
        bits = [t.get("chunk_bits") for t in old["plan"].get("tiers", [])]
        mode = old["plan"]["alpha_mode"]
        if alpha_mode is not None and alpha_mode != mode:
            raise WorkdirError(f"{wd.root} was started with --alpha {mode}; resume with the same value "
                               "or use --fresh")
        plans = []
        for lay, c in zip(lays, bits):
            plans.append((None, None) if c is None else
                          tiering.tier_plans([lay], c, mode, map_dag, posterior, memory, workers)[0])
    else:
        plans = tiering.tier_plans(lays, chunk_bits, alpha_mode, map_dag, posterior, memory, workers)
    need = sum(b for pair in plans for p in pair if p is not None
               for t, b in p.disk_bytes().items() if not (wd.tables / p.scope / t).exists())
    if need and check_disk:
        free = shutil.disk_usage(wd.root).free
        if need * 1.05 > free:
            raise WorkdirError(f"{wd.root}: this run needs {_gib(need)} more disk, only {_gib(free)} free")
    if old is None:
        wd.write_run({
            "fingerprint": fingerprint, "source": source, "version": __version__,
            "plan": {"n": fingerprint["n"], "k": fingerprint["max_parents"],
                     "alpha_mode": alpha_mode or "recompute",
                     "tiers": [{"nodes": len(lay.nodes), "chunk_bits": pp.chunk_bits if pp else
                                (pm.chunk_bits if pm else None)} for lay, (pp, pm) in zip(lays, plans)]},
            "stages": list(STAGES), "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        })
    for pair in plans:
        for p in pair:
            if p is not None:
                Workdir(wd.root, scope=p.scope).create_tables(p)
    return plans


def _check_fingerprint(wd: Workdir, old: dict, fingerprint: dict) -> None:
    """Refuse a workdir whose run.json holds other data or options (WorkdirError)."""
    plain = {"data_sha256": "the data differ from the run's (content hash {old:.12} vs {new:.12})",
             "numerics": "the workdir was computed by another bigbn version (its numerical "
                         "code differs)", "m": "the data have {new} rows, the run's {old}",
             "n": "the data have {new} columns, the run's {old}"}
    keys = set(fingerprint) | set(old["fingerprint"])
    diff = [plain[key].format(old=str(old["fingerprint"].get(key)), new=str(fingerprint.get(key)))
            if key in plain else
            f"{key}: workdir has {old['fingerprint'].get(key)!r}, this run {fingerprint.get(key)!r}"
            for key in sorted(keys) if old["fingerprint"].get(key) != fingerprint.get(key)]
    if diff:
        raise WorkdirError(f"{wd.root} holds a run of other data or options ("
                           + "; ".join(diff) + "); use --fresh to start over or another --workdir")


def _open_root(workdir) -> tuple[Path, str | None]:
    """(the work directory, absolute and created, refused if it is somebody else's folder;
    the temporary directory to remove afterwards, when none was given)."""
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="bigbn-")
        workdir = tmp
    if not str(workdir).strip():
        raise OptionError("empty work directory name (an unset variable?); give --workdir DIR")
    # Absolute: cluster workers resolve relative paths against their own directories.
    root = Path(workdir).resolve()
    check_is_ours(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WorkdirError(f"cannot create work directory {root}: {e.strerror}") from None
    return root, tmp


def _source(data, ds: Dataset) -> str:
    """Where the data came from, for run.json: a file's absolute path (so `bigbn effects`
    finds it again from any folder), else the dataset's label ("" or "array")."""
    path = os.fspath(data) if isinstance(data, (str, os.PathLike)) else ds.path
    return os.path.abspath(path) if path and os.path.isfile(path) else path


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in sorted(obj.items())}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(v) for v in (sorted(obj) if isinstance(obj, set) else obj)]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    return obj


def _prepare(wd: Workdir, fingerprint: dict, n: int, k: int, chunk_bits, alpha_mode, map_dag: bool,
             posterior: bool, memory, workers, fresh: bool, check_disk: bool, source: str) -> Plan:
    """Check run.json against this run (refuse other data/options), fix the plan, make
    tables. Returns the plan."""
    if fresh:
        wd.clear()
    old = wd.read_run()
    if old is None and wd.has_state():
        raise WorkdirError(f"{wd.root} holds tables or a journal but no run.json (not made by "
                           "this version, or damaged); use --fresh to start over")
    if old is not None:
        _check_fingerprint(wd, old, fingerprint)
        op = old["plan"]
        for opt, mine, theirs in (("--chunk-bits", chunk_bits, op["chunk_bits"]),
                                  ("--alpha", alpha_mode, op["alpha_mode"])):
            if mine is not None and mine != theirs:
                raise WorkdirError(f"{wd.root} was started with {opt} {theirs}; "
                                   f"resume with the same value or use --fresh")
        plan = Plan(n, k, op["chunk_bits"], op["alpha_mode"], map_dag, posterior)
        # --map added to a finished run, or the posterior to a MAP-only run: new tables
        need = sum(b for t, b in plan.disk_bytes().items() if not (wd.tables / t).exists())
        if need and check_disk:
            free = shutil.disk_usage(wd.root).free
            if need * 1.05 > free:
                what = "the MAP network needs" if posterior else "the posterior needs"
                raise WorkdirError(f"{wd.root}: {what} {_gib(need)} more disk, only {_gib(free)} free")
    else:
        mode = alpha_mode or "recompute"
        c = chunk_bits if chunk_bits is not None else choose_chunk_bits(n, k, memory, workers, mode)
        plan = Plan(n, k, int(c), mode, map_dag, posterior)
        if check_disk:
            need = sum(plan.disk_bytes().values())
            free = shutil.disk_usage(wd.root).free
            if need * 1.05 > free:
                raise WorkdirError(f"{wd.root}: this run needs {_gib(need)} of disk, only "
                                   f"{_gib(free)} free (see `bigbn plan --n {n} -k {k}`)")
        run = {
            "fingerprint": fingerprint, "source": source, "version": __version__,
            "plan": {"n": n, "k": k, "chunk_bits": plan.chunk_bits, "alpha_mode": plan.alpha_mode},
            "stages": list(STAGES), "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        wd.write_run(run)
    wd.create_tables(plan)
    return plan


def _gib(b: float) -> str:
    return f"{b / 2**30:.1f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"


def _check_scores(wd: Workdir, beta: np.ndarray, plan: Plan) -> None:
    """On resume the journaled beta must be the one just computed: everything downstream
    was computed from it, so a different beta (changed numerics, nondeterminism) is
    refused, never mixed in. (A stored copy that no longer matches its checksum is
    rewritten by the engine's scores task, like any corrupt chunk.)"""
    rec = wd.journal().get(plan.task(("scores",)).id)
    if rec is not None and rec.get("crc") != checksum(beta):
        raise WorkdirError(f"{wd.root}: the local scores differ from the ones this workdir was "
                           "computed with (other software versions?); use --fresh to start over")


class _Progress(Callback):
    """Executor callback: counts finished tasks per stage for ``progress(stage, done, total)``."""

    def __init__(self, plan: Plan, done: set[str], progress):
        self.totals = {s: len(plan.stage_tasks(s)) for s in STAGES if s != "scores"}
        self.counts = {s: sum(1 for key in plan.stage_tasks(s) if plan.task(key).id in done)
                       for s in self.totals}
        self.progress = progress
        for s, tot in self.totals.items():
            if tot:
                progress(s, self.counts[s], tot)

    def on_task_end(self, event) -> None:
        s = event.key[0]
        if s in self.counts:
            self.counts[s] += 1
            self.progress(s, self.counts[s], self.totals[s])


def _run_engine(job: Job, scheduler, workers, progress) -> tuple[list[str], dict]:
    """Run what the journal does not list as finished and intact. Returns the ids of
    journaled tasks whose chunks failed their checksum (run again) and the final journal."""
    wd = job.workdir
    wd.repair_journal()
    _check_scores(wd, job.beta, job.plan)
    journal = wd.journal()
    final = ([("edges",)] if job.plan.posterior else []) + [("scores",)] \
        + ([("map_dag",)] if job.plan.map_dag else [])
    if all(intact(job, job.plan.task(key), journal.get(job.plan.task(key).id, {})) for key in final):
        return [], journal  # finished and its results intact: nothing to check or run
    done, bad = verify(job, journal)
    callbacks = [_Progress(job.plan, done, progress)] if progress is not None else []
    execute(job, scheduler=scheduler, workers=workers, callbacks=callbacks, done=done)
    return bad, wd.journal()


def _check_scheduler(scheduler) -> None:
    if isinstance(scheduler, str) and not (
            scheduler in ("threads", "sync", "processes")
            or scheduler.startswith(("tcp://", "tls://", "inproc://"))):
        raise OptionError(f"unknown scheduler {scheduler!r}: use threads, sync, processes or "
                          "tcp://HOST:PORT")


def peak_rss_bytes() -> int:
    """Peak resident memory of this process's image, in bytes.

    Linux's VmHWM (reset at exec). getrusage's ru_maxrss is not used where VmHWM exists:
    it survives fork+exec, so a run started from a big parent process would report the
    parent's peak.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _summary(journal: dict, plan: Plan, fingerprint: dict, ds, workers, memory, scheduler,
             t_start) -> dict:
    """summary.json (plan None: a tiered run, whose caller adds its tiers). Per stage: tasks and task-seconds over the whole run; wall seconds
    (first start to last end) over the tasks of this invocation only, so a resumed run
    does not count the time it was down."""
    recs = journal.values()
    stages = {}
    for s in STAGES:
        rs = [r for r in recs if r.get("stage") == s]
        if rs:
            now = [r for r in rs if r.get("start", 0) >= t_start]
            stages[s] = {"tasks": len(rs),
                         "task_seconds": round(sum(r.get("seconds", 0) for r in rs), 3),
                         "tasks_this_invocation": len(now),
                         "wall_seconds": round(max(r["end"] for r in now)
                                               - min(r["start"] for r in now), 3) if now else 0.0}
    edges_rec = next((r for r in recs if r.get("stage") == "edges"), None) \
        if plan is not None and plan.posterior else None
    return {
        "log_marginal_likelihood": None if edges_rec is None else edges_rec["log_px"],
        "computed": [] if plan is None else
                    [w for w, on in (("posterior", plan.posterior), ("map_dag", plan.map_dag)) if on],
        "n": ds.n, "m": ds.m, "names": list(ds.names),
        "options": {k: v for k, v in fingerprint.items() if k not in ("data_sha256",)},
        "data_sha256": fingerprint["data_sha256"],
        "plan": {**({} if plan is None else {"chunk_bits": plan.chunk_bits, "alpha_mode": plan.alpha_mode,
                                              "chunks": plan.n_chunks}),
                 "workers": workers, "memory_budget_bytes": memory, "scheduler": scheduler},
        "stages": stages,
        "wall_seconds_this_invocation": round(time.time() - t_start, 3),
        "peak_rss_bytes": peak_rss_bytes(),
        "disk_bytes": {} if plan is None else dict(plan.disk_bytes()),
        "version": __version__,
    }


def workdir_status(workdir) -> list[str]:
    """Human-readable lines describing a work directory (for `bigbn status`)."""
    root = Path(workdir)
    wd = Workdir(root)
    run = wd.read_run()
    if run is None:
        raise WorkdirError(f"{root}: not a bigbn work directory (no readable run.json)")
    fp, pl = run["fingerprint"], run["plan"]
    if "tiers" in pl:
        return _tiered_status(root, wd, run)
    plan = Plan(pl["n"], pl["k"], pl["chunk_bits"], pl["alpha_mode"], (wd.tables / "map").exists())
    done = wd.journal()
    lines = [f"workdir {root}",
             f"data: {run.get('source') or '(in memory)'}  sha256 {fp['data_sha256'][:16]}…  "
             f"n = {fp['n']}, m = {fp['m']}",
             "options: " + ", ".join(f"{k} {v}" for k, v in fp.items()
                                     if k not in ("data_sha256", "n", "m") and v not in (None, {}, [])),
             f"plan: chunk bits {plan.chunk_bits}, {plan.n_chunks} chunks, alpha {plan.alpha_mode}"]
    finished = {"posterior": True, "map": True}
    for stage in STAGES:
        keys = plan.stage_tasks(stage)
        if not keys:
            continue
        n_done = sum(1 for key in keys if task_id(key) in done)
        finished["map" if stage.startswith("map") else "posterior"] &= n_done == len(keys)
        secs = sum(done[task_id(key)].get("seconds", 0) for key in keys if task_id(key) in done)
        lines.append(f"  {stage:>8}: {n_done}/{len(keys)} tasks done ({secs:.1f} task-seconds)")
    used = sum(f.stat().st_blocks * 512 for f in root.rglob("*") if f.is_file())
    lines.append(f"disk used: {_gib(used)} of {_gib(sum(plan.disk_bytes().values()))} planned")
    holder = wd.active_holder()
    if holder is not None:
        lines.append(f"active: yes (pid {holder.get('pid')} on {holder.get('host')})")
    else:
        lines.append("active: no")
    map_done = plan.map_dag and finished["map"] and (root / "map_dag.csv").exists()
    if finished["posterior"] and (root / "edges.csv").exists():
        lines.append(f"finished: results in {root / 'edges.csv'}")
        if map_done:
            lines.append(f"MAP network: {root / 'map_dag.csv'}")
    elif map_done:
        lines.append(f"MAP network finished: {root / 'map_dag.csv'}; the posterior is not (a "
                     "--map-only run: the same command without --map-only adds it)")
    elif not (finished["posterior"] and finished["map"]):
        lines.append("unfinished: run the same `bigbn run` command again to resume")
    return lines


def _tiered_status(root: Path, wd: Workdir, run: dict) -> list[str]:
    """`workdir_status` of a tiered run: per tier, its tasks done of the plan's."""
    fp, pl = run["fingerprint"], run["plan"]
    tiers = fp.get("tiers") or []
    lays = tiering.layouts(tiering.parse_tiers(tiers, [x for t in tiers for x in t]), fp["max_parents"])
    done = wd.journal()
    lines = [f"workdir {root}",
             f"data: {run.get('source') or '(in memory)'}  sha256 {fp['data_sha256'][:16]}…  "
             f"n = {fp['n']}, m = {fp['m']}",
             f"tiers: {len(tiers)} (sizes {', '.join(str(len(t)) for t in tiers)}); only tier-consistent orders"]
    total = finished = 0
    for lay, t in zip(lays, pl["tiers"]):
        if t.get("chunk_bits") is None:
            lines.append(f"  tier {lay.index + 1}: 1 node, no lattice")
            continue
        specs = [s for scope, map_dag in ((lay.scope, False), (lay.scope + "-map", True))
                 if (wd.tables / scope).exists()
                 for s in Plan(lay.m, lay.k_tier, t["chunk_bits"], pl["alpha_mode"], map_dag, not map_dag,
                               scope=scope).tasks()]
        n_done = sum(1 for s in specs if s.id in done)
        total += len(specs)
        finished += n_done
        lines.append(f"  tier {lay.index + 1}: {lay.m} nodes, {n_done}/{len(specs)} tasks done")
    used = sum(f.stat().st_blocks * 512 for f in root.rglob("*") if f.is_file())
    lines.append(f"disk used: {_gib(used)}")
    holder = wd.active_holder()
    lines.append(f"active: yes (pid {holder.get('pid')} on {holder.get('host')})" if holder else "active: no")
    if finished == total and (root / "summary.json").exists():
        lines.append(f"finished: results in {root / 'edges.csv'}" if (root / "edges.csv").exists()
                     else f"finished: MAP network in {root / 'map_dag.csv'}")
    else:
        lines.append("unfinished: run the same `bigbn run` command again to resume")
    return lines
