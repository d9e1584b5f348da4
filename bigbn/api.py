"""Python API: ``learn(data, ...)`` → exact edge posteriors (a `Result`).

The same function backs ``bigbn run``. It scores every family (beta = log ρ + log local
likelihood), plans the chunk lattice, runs the engine in a work directory (a temporary
one unless given) and returns the n×n posterior matrix. A work directory that already
holds a run of the same data and options is resumed; other data or options are refused
unless ``fresh=True``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from . import frames
from . import options as opt
from .data import Dataset, Table, _check_header, discrete_dataset, read_table
from .engine import Job
from .errors import DataError, OptionError, WorkdirError
from .options import default_memory, default_workers  # noqa: F401 - part of the API
from .parentsets import parent_set_posteriors, write_parent_sets
from .plan import MAX_NODES, task_id
from .priors import log_prior
from .result import Result, write_arcs
from .rundir import check_is_ours, fingerprint, jsonable, numerics_fingerprint, status_lines, write_json_atomic
from .runner import finished_beta, peak_rss_bytes, prepare, run_engine, summary
from .scores import local_scores
from .workdir import Workdir

__all__ = ["learn", "load_dataset", "score_families", "workdir_status", "Result",
           "numerics_fingerprint", "peak_rss_bytes", "default_memory", "default_workers"]

SCORES = ("auto", "bdeu", "k2", "bge")
PRIORS = ("uniform", "koivisto-sood")


# --------------------------------------------------------------------------------- data

def load_dataset(data, names=None, score: str = "auto", sep: str | None = None) -> tuple[Dataset, str, str]:
    """Turn a CSV path, a Dataset or an array into (Dataset, resolved score, data hash)."""
    score = str(score).lower()
    if score not in SCORES:
        raise OptionError(f"unknown score '{score}' (choose one of: {', '.join(SCORES)})")
    if isinstance(data, Dataset):
        ds = data
        digest = _hash_dataset(ds)
    elif frames.is_dataframe(data):
        table, categories = frames.table_from_frame(data)
        if table.n > MAX_NODES:
            raise OptionError(f"{table.n} columns, but the engine supports at most {MAX_NODES} variables")
        ds = frames.declared_order(_dataset_from_table(table, score), categories)
        digest = _hash_dataset(ds)
    elif isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        table = read_table(path, sep)
        if table.n > MAX_NODES:
            raise OptionError(f"{path}: {table.n} columns, but the engine supports at most "
                              f"{MAX_NODES} variables")
        ds = _dataset_from_table(table, score)
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
        ds = _dataset_from_table(Table("array", nm, cells), score)
        digest = _hash_dataset(ds)
    if ds.n > MAX_NODES:
        raise OptionError(f"{ds.n} variables, but the engine supports at most {MAX_NODES}")
    if score == "auto":
        score = "bge" if ds.kind == "continuous" else "bdeu"
    if (score == "bge") != (ds.kind == "continuous"):
        raise OptionError(f"score '{score}' needs {'continuous' if score == 'bge' else 'discrete'} "
                          f"data, but the data is {ds.kind}")
    return ds, score, digest


def _dataset_from_table(table: Table, score: str) -> Dataset:
    from .bge import continuous_dataset, looks_continuous

    if score == "bge" or (score == "auto" and looks_continuous(table)):
        return continuous_dataset(table)
    return discrete_dataset(table, max_nodes=MAX_NODES)


def _hash_dataset(ds: Dataset) -> str:
    """Content hash of a dataset: everything a score depends on (the codes or values,
    names, arities, levels, kind). The same data give the same hash whether they came
    from a file, a pipe, a DataFrame or an array."""
    h = hashlib.sha256(np.ascontiguousarray(ds.data).tobytes())
    h.update(f"{ds.data.dtype}{ds.data.shape}{ds.kind}".encode())
    h.update(np.ascontiguousarray(ds.arities, dtype=np.int64).tobytes())
    h.update(json.dumps([list(ds.names), [list(lv) for lv in ds.levels]]).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------------- model

def score_families(ds: Dataset, score: str, max_parents: int, *, ess: float = 1.0,
                   structure_prior: str = "koivisto-sood", alpha_mu: float = 1.0,
                   alpha_w=None, prior_kwargs=None) -> np.ndarray:
    """beta = log ρ_i(G) + log p(x_i | x_G) for every family; float64 (n, F)."""
    if structure_prior not in PRIORS:
        raise OptionError(f"unknown structure prior '{structure_prior}' (choose one of: "
                          f"{', '.join(PRIORS)})")
    k = min(int(max_parents), ds.n - 1)
    rho = log_prior(ds.n, k, structure_prior, names=ds.names, **(prior_kwargs or {}))
    if score == "bge":
        from .bge import bge_scores
        local = bge_scores(ds, k, alpha_mu=alpha_mu, alpha_w=alpha_w)
    else:
        local = local_scores(ds, k, score, ess)
    bad = np.isnan(local) | np.isinf(local)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise DataError(f"{ds.path or 'data'}: the {score} score of column '{ds.names[i]}' is not "
                        "finite (values too large or degenerate: rescale the data)")
    return local + rho


# --------------------------------------------------------------------------------- run

def learn(data, *, names=None, max_parents: int = 3, score: str = "auto", ess: float = 1.0,
          structure_prior: str = "koivisto-sood", alpha_mu: float = 1.0, alpha_w=None,
          prior_kwargs: dict | None = None, workdir=None, fresh: bool = False,
          chunk_bits: int | None = None, memory: int | None = None, workers: int | None = None,
          scheduler: str = "threads", alpha_mode: str | None = None, progress=None,
          check_disk: bool = True, parent_set_mass: float = 0.999, map_dag: bool = False,
          posterior: bool = True, sep: str | None = None) -> Result:
    """Exact posterior p(u → v | data) of every directed edge (Koivisto 2006).

    data: a CSV path (comma, tab or semicolon separated, detected unless ``sep`` says), a
    pandas DataFrame, a `Dataset`, or an array (m, n) — integer codes for discrete data,
    floats for continuous (BGe). score: "auto" (BGe for continuous data, else BDeu),
    "bdeu", "k2" or "bge". structure_prior: "uniform" (ρ = 1) or "koivisto-sood"
    (ρ_i(G) = 1/C(n-1, |G|)); q_i ≡ 1. prior_kwargs: forbid, require, edge_prob,
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
    """
    t_start = time.time()
    k = opt.max_parents(max_parents)
    workers = opt.workers(workers)
    memory = opt.memory(memory)
    chunk_bits = opt.chunk_bits(chunk_bits)
    alpha_mode = opt.alpha_mode(alpha_mode)
    scheduler = opt.scheduler(scheduler)
    parent_set_mass = opt.parent_set_mass(parent_set_mass)
    workdir = opt.workdir(workdir)
    map_dag, posterior = opt.flag(map_dag, "map_dag"), opt.flag(posterior, "posterior")
    fresh = opt.flag(fresh, "fresh")
    if not posterior and not map_dag:
        raise OptionError("posterior=False leaves nothing to compute: ask for the MAP network "
                          "(map_dag=True), or keep the posterior")
    prior_kwargs = opt.prior_kwargs(prior_kwargs)
    ess = opt.score_number(ess, "ess")
    alpha_mu = opt.score_number(alpha_mu, "alpha_mu")
    alpha_w = None if alpha_w is None else opt.score_number(alpha_w, "alpha_w")
    tmp = None
    if workdir is not None:
        # Absolute: cluster workers resolve relative paths against their own directories.
        root = Path(workdir).resolve()
        check_is_ours(root, fresh)  # before any work: a foreign folder is refused at once
    ds, score, digest = load_dataset(data, names, score, sep)
    k = min(k, ds.n - 1)
    options = {
        "score": score, "ess": float(ess) if score == "bdeu" else None, "max_parents": k,
        "structure_prior": structure_prior,
        "alpha_mu": float(alpha_mu) if score == "bge" else None,
        "alpha_w": (None if alpha_w is None else float(alpha_w)) if score == "bge" else None,
        "constraints": jsonable(prior_kwargs),
    }
    fp = fingerprint(digest, ds.n, ds.m, options)
    request = {"n": ds.n, "k": k, "map_dag": map_dag, "posterior": posterior}

    # A finished run of the same fingerprint need not be scored again; otherwise scores
    # first: they validate every model option (constraints, ess, BGe parameters), so a
    # refused run leaves no run.json behind that would block the corrected command.
    t_scores = time.time()
    beta = None if workdir is None or fresh else finished_beta(root, fp, map_dag, posterior)
    if beta is None:
        if progress is not None:  # the local scores are the first stage a user waits for
            progress("scores", 0, 1)
        beta = score_families(ds, score, k, ess=ess, structure_prior=structure_prior,
                              alpha_mu=alpha_mu, alpha_w=alpha_w, prior_kwargs=prior_kwargs)
        if progress is not None:
            progress("scores", 1, 1)
    t_scores = round(time.time() - t_scores, 4)

    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="bigbn-")
        root = Path(tmp).resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WorkdirError(f"cannot create work directory {root}: {e.strerror}") from None
    try:
        with Workdir(root).lock() as owner:
            plan = prepare(Workdir(root), fp, ds.names, _source(data, ds), request, chunk_bits,
                           alpha_mode, memory, workers, fresh, check_disk)
            wd = Workdir(root, owner)
            job = Job(wd, plan, beta)
            recomputed, journal, already = run_engine(job, scheduler, workers, progress)
            result = Result(None, ds.names, None, families=plan.families)
            if plan.posterior:
                result.posterior = wd.read("posterior", slice(None))
                result.log_marginal = float(journal[task_id(("edges",))]["log_px"])
                result.parent_set_posterior = parent_set_posteriors(
                    beta, wd.read("gamma", slice(None)), result.log_marginal)
            result.summary = summary(journal, plan, fp, ds, workers, memory, scheduler, t_start)
            result.summary["recomputed_corrupt_tasks"] = recomputed
            result.summary["already_finished"] = already
            if plan.map_dag:
                result.map_parents = wd.read("map_parents", slice(None)).astype(np.int64)
                result.map_log_score = float(journal[task_id(("map_dag",))]["log_score"])
                result.summary["map_dag"] = {"log_score": result.map_log_score,
                                             "arcs": [list(a) for a in result.map_arcs()]}
                write_arcs(root / "map_dag.csv", result.map_arcs())
            result.summary["scoring_seconds_this_invocation"] = t_scores
            if plan.posterior:
                result.to_csv(root / "edges.csv")
                write_parent_sets(root / "parent_sets.csv", result.parent_set_posterior, plan.families,
                                  ds.names, parent_set_mass)
            write_json_atomic(root / "summary.json", result.summary)
            return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _source(data, ds: Dataset) -> str:
    """Where the data came from, for run.json: a file's absolute path (so `bigbn effects`
    finds it again from any folder), else the dataset's label ("" or "array")."""
    path = os.fspath(data) if isinstance(data, (str, os.PathLike)) else ds.path
    return os.path.abspath(path) if path and os.path.isfile(path) else path


def workdir_status(workdir) -> list[str]:
    """Human-readable lines describing a work directory (for `bigbn status`)."""
    return status_lines(workdir)
