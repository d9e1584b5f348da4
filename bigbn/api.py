"""Python API: ``learn(data, ...)`` → exact edge posteriors (a `Result`).

The same function backs ``bigbn run``. It scores every family (beta = log ρ + log local
likelihood), plans the chunk lattice, runs the engine in a work directory (a temporary
one unless given) and returns the n×n posterior matrix. A work directory that already
holds a run of the same data and options is resumed; other data or options are refused
unless ``fresh=True``.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

from bigbn.engine import tasks as engine
from bigbn.scores import interventions as interventions_
from bigbn import dbn as dbn_
from bigbn import options as opt
from bigbn.plan import tiers as tiering
from bigbn.io.data import Dataset
from bigbn.engine.tasks import Job, log_offset
from bigbn.errors import BigBNWarning, DataError, OptionError
from bigbn.knowledge import Knowledge
from bigbn.scores.offsets import centre
from bigbn.scores.offsets import total as total_offset
from bigbn.options import default_memory, default_workers  # noqa: F401 - part of the API
from bigbn.outputs.parentsets import parent_set_posteriors, ranked, write_parent_sets
from bigbn.plan.lattice import MAX_NODES, fs_block, ordered_workers, task_id
from bigbn.scores.priors import log_prior
from bigbn.engine.progress import listener, report
from bigbn.outputs.result import Result, write_arcs
from bigbn.outputs.strength import write_strength
from bigbn.store.rundir import check_is_ours, fingerprint, jsonable, numerics_fingerprint, status_lines, write_json_atomic
from bigbn.engine.runner import (finished_beta, map_finished, open_root, peak_rss_bytes, prepare, run_engine,
                                 save_family_beta, summary, tiered_disk)
from bigbn.scores.base import Score, check_options, numerics_version, resolve
from bigbn.plan.tiers import MAX_TIERED_NODES
from bigbn.store.workdir import Workdir, check_outputs, write_whole

from bigbn.inputs import _MORE_WITH_TIERS, _check_names_given, load_dataset

__all__ = ["learn", "load_dataset", "score_families", "column_kinds", "workdir_status", "Result",
           "numerics_fingerprint", "peak_rss_bytes", "default_memory", "default_workers"]

PRIORS = ("uniform", "koivisto-sood")


# --------------------------------------------------------------------------------- model

def score_families(ds: Dataset, score: str | Score, max_parents: int, *,
                   structure_prior: str = "koivisto-sood", prior_kwargs=None,
                   **score_options) -> np.ndarray:
    """beta = log ρ_i(G) + log p(x_i | x_G) for every family; float64 (n, F). score: a name
    or a `Score`; score_options: its options (ess=..., alpha_mu=...), checked by
    `bigbn.scores.base.check_options`."""
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
    beta = local + rho
    dead = np.flatnonzero(~np.isfinite(beta).any(axis=1))
    if dead.size:  # e.g. a required edge into a discrete node from a continuous one (cg)
        raise OptionError(f"{ds.path or 'data'}: every parent set of '{ds.names[int(dead[0])]}' is impossible "
                          f"under the {score.name} score and the constraints (a required edge the score "
                          "forbids?)")
    return beta


def column_kinds(ds: Dataset) -> dict[str, str]:
    """{name: "discrete" | "continuous"} of a mixed dataset's columns (arity 0: continuous)."""
    return {name: "discrete" if r else "continuous" for name, r in zip(ds.names, ds.arities.tolist())}


# --------------------------------------------------------------------------------- run

def learn(data=None, *, names=None, max_parents: int = 3, score: str | Score = "auto",
          ess: float | None = None, structure_prior: str | None = None,
          alpha_mu: float | None = None, alpha_w: float | None = None,
          score_options: dict | None = None, prior_kwargs: dict | None = None, workdir=None,
          fresh: bool = False,
          chunk_bits: int | None = None, memory: int | None = None, workers: int | None = None,
          scheduler: str = "dask", alpha_mode: str | None = None, progress=None,
          check_disk: bool = True, parent_set_mass: float = 0.999, map_dag: bool = False,
          posterior: bool = True, sep: str | None = None, tiers=None, scores=None,
          intervention_column: str | None = None, interventions=None, knowledge: Knowledge | None = None,
          forbidden=None, required=None, disk_budget: int | str | None = None,
          discrete=None, continuous=None,
          lag: int | None = None, series: str | None = None, time_column: str | None = None,
          contemporaneous: bool = True) -> Result:
    """Exact posterior p(u → v | data) of every directed edge (Koivisto 2006).

    data: a CSV path (comma, tab or semicolon separated, detected unless ``sep`` says), a
    pandas DataFrame, a `Dataset`, or an array (m, n) — integer codes for discrete data,
    floats for continuous (BGe). score: "auto" (BGe for continuous data, cg for a table
    with text and continuous columns, else BDeu), "bdeu", "k2", "bge", "cg" (mixed data:
    conditional Gaussian networks, `bigbn.scores.cg`), or a `bigbn.scores.base.Score` object. ess (BDeu, default 1), alpha_mu
    (BGe, default 1), alpha_w (BGe, default n + α_μ + 1) and score_options (a dict, for any
    score's options) are the score's parameters; one the score does not take is refused
    (`bigbn.scores.base.check_options`). structure_prior: "uniform" (ρ = 1) or "koivisto-sood"
    (ρ_i(G) = 1/C(n-1, |G|), the default); q_i ≡ 1. scores: instead of data, a .jkl file of
    local scores (a path or a `bigbn.scores.jkl.ScoreFile`; GOBNILP's format, `bigbn.scores.jkl`): they
    are the whole β, bigbn adds no structure prior (ρ ≡ 1) but the constraints of
    prior_kwargs. intervention_column (a column of the CSV file or DataFrame: each cell the
    row's intervention targets joined by "|", empty = observational) or interventions (one
    set of target names per row): interventional data, node i scored from the rows where it
    is not a target (`bigbn.scores.interventions`). prior_kwargs: forbid, require, edge_prob,
    max_parents (per node) for `priors.log_prior`. workdir: where the tables live
    (a temporary directory, removed afterwards, if None); rerunning with the same
    workdir resumes. chunk_bits / memory / workers: the chunk lattice and parallelism
    (chunk bits default from the memory budget). progress: a `bigbn.engine.progress.Listener`
    (every stage's `ProgressEvent` and the executors' task events), or a callable
    progress(stage, done, total), called with each ProgressEvent's fields.
    parent_set_mass: WORKDIR/parent_sets.csv lists each node's most probable parent sets
    until they carry this much of its posterior (1: every set of nonzero posterior);
    `Result.parent_sets` always has all of them. map_dag: also find the highest-scoring
    DAG (argmax Σ_i β_i(G_i); WORKDIR/map_dag.csv, `Result.map_arcs()`); it can be added
    to a finished run by running again with map_dag=True, and once found it stays in the
    run's results whatever a later call asks. posterior=False (with
    map_dag=True): only the MAP network, at 9·2^n bytes of disk and nearly the time of a
    posterior run; the result has no posteriors, and running again with posterior=True adds them.
    tiers: a bucket order of the variables, {name: tier} (integers, lower = earlier) or a
    list of lists of names (earliest first): only the orders that list every earlier tier
    first have prior mass (docs/posterior.md, "Tiers"); up to MAX_TIERED_NODES variables,
    each tier at most MAX_NODES (bigbn/plan/tiers.py).
    knowledge: a `bigbn.Knowledge` — what is known of the structure by variable name
    (tiers, forbidden and required edges, edge probabilities, per-variable max parents),
    checked for contradictions in one place; forbidden=[(parent, child), ...],
    required=[...] and tiers=... are its short forms (give either). prior_kwargs is the
    same in node indices, for code that has them.
    disk_budget: bytes (or "24G") of disk the run may take at its peak: if the fastest
    plan needs more, the forward table is kept at some levels only and the others are
    computed again in the backward pass (same numbers, more time; `bigbn.plan.lattice.fit_disk`;
    not with tiers). The finished run then keeps L(V) alone of the forward table, so
    `bigbn sample` cannot use it.
    discrete, continuous: column names that the cg score (mixed data) reads as that kind,
    overriding its rule (text → discrete; numbers → continuous, but whole numbers with at most
    10 levels → discrete; `bigbn.scores.cg`); with score "auto" they make the run a cg run.
    The typing of every column is in ``result.summary["column_kinds"]``.
    lag, series, time_column, contemporaneous: a dynamic Bayesian network (2-TBN) of time series
    (`bigbn.dbn`): data are series (a CSV path or a DataFrame; series= the column telling
    series apart, time_column= the column ordering each series: numbers, ISO 8601 dates
    and times, or a DataFrame's timedelta64 durations), every time t ≥ lag of a series is a transition row, the nodes are the
    variables of slice t and their parents any lagged copies NAME[t-l] (l ≤ lag) and,
    unless contemporaneous=False, nodes of slice t; knowledge
    names lagged variables NAME[t-l]. The result's edges and parent sets are those into slice
    t; its log_marginal is log p(x_t, t ≥ lag | the first lag rows of each series).
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
    check_disk = opt.flag(check_disk, "check_disk")  # "no" is truthy: it checked the disk, silently
    disk_budget = opt.disk_budget(disk_budget)
    if not posterior and not map_dag:
        raise OptionError("posterior=False leaves nothing to compute: ask for the MAP network "
                          "(map_dag=True), or keep the posterior")
    prior_kwargs = opt.prior_kwargs(prior_kwargs)
    progress = listener(progress)
    if opt.sep(sep) is not None and not isinstance(data, (str, os.PathLike)):  # it was ignored, silently
        what = "scores from a .jkl file" if data is None else f"a {type(data).__name__}"
        raise OptionError(f"sep= is the separator of a CSV data file; the data here are {what}, which has none: "
                          "drop sep=")
    knowledge = _knowledge(knowledge, tiers, forbidden, required, prior_kwargs)
    dynamic = None  # a DBN's transition rows (bigbn.dbn)
    if dbn_.is_dynamic(data, lag, series, time_column, contemporaneous):
        names = _check_names_given(data, names)
        if prior_kwargs:
            raise OptionError("a time series takes its constraints by name (knowledge=, forbidden=, "
                              "required=; lagged variables as NAME[t-1]), not by index (prior_kwargs=)")
        if scores is not None or intervention_column is not None or interventions is not None:
            raise OptionError("a time series is data rows (a CSV file or a DataFrame), without "
                              "scores= or interventions")
        if discrete is not None or continuous is not None or getattr(score, "name", score) == "cg":
            raise OptionError("a time series of mixed data (the cg score, discrete=, continuous=) is not "
                              "supported yet: give a table of one kind")
        contemporaneous = opt.flag(contemporaneous, "contemporaneous")
        dynamic = dbn_.load(data, lag=lag, series=series, time=time_column, score=score, sep=sep)
        knowledge = dbn_.knowledge(knowledge, dynamic, contemporaneous)
        data = dynamic.dataset
    tiered = knowledge is not None and bool(knowledge.tiers)
    names = _check_names_given(data, names)
    if workdir is not None:  # before any work: a foreign folder is refused at once
        check_is_ours(Path(workdir).resolve(), fresh)
    if scores is not None:
        if intervention_column is not None or interventions is not None:
            raise OptionError("interventions are a property of data rows; scores from a file have none")
        if names is not None:
            raise OptionError("scores from a file carry their variables' names; drop names=")
        if discrete is not None or continuous is not None:
            raise OptionError("discrete= and continuous= type the columns of data; scores from a file have none")
        ds, score, digest = _load_scores(data, scores, score)
    else:
        if data is None:
            raise OptionError("no data: give a CSV path, a DataFrame, a Dataset or an array "
                              "(or scores=FILE.jkl)")
        ds, score, digest = load_dataset(data, names, score, sep,
                                         max_nodes=MAX_TIERED_NODES if tiered else MAX_NODES,
                                         intervention_column=intervention_column,
                                         interventions=interventions, discrete=discrete,
                                         continuous=continuous)
    if dynamic is not None and score.name == "cg":
        raise OptionError("a time series of mixed data (the cg score) is not supported yet: give a table "
                          "of one kind (discrete, or numbers for bge)")
    if structure_prior is None:
        structure_prior = "uniform" if ds.kind == "scores" else "koivisto-sood"
    elif ds.kind == "scores" and structure_prior != "uniform":
        raise OptionError(f"{ds.path}: scores from a file are the whole local score; bigbn adds no "
                          "structure prior to them (write it into the file, e.g. with `bigbn scores`)")
    if score_options is not None and not isinstance(score_options, dict):
        raise OptionError(f"score_options must be a dict, got {type(score_options).__name__}")
    given = dict(score_options or {})
    for key, value in (("ess", ess), ("alpha_mu", alpha_mu), ("alpha_w", alpha_w)):
        if value is not None:
            if given.get(key) is not None:
                raise OptionError(f"{key} given twice (as {key}= and in score_options)")
            given[key] = value
    score_opts = check_options(score, given)
    for line in score.data_warnings(ds):
        warnings.warn(line, BigBNWarning, stacklevel=3)  # learn's caller (via bigbn.learn)
    k = min(k, ds.n - 1)
    if prior_kwargs:  # node indices: read into the one Knowledge, checked there
        knowledge = Knowledge.from_indices(ds.names, k, prior_kwargs, *(
            (knowledge.tiers, knowledge.no_edges_within) if knowledge is not None else ()))
    tiers = None
    if knowledge is not None:
        tiers, prior_kwargs = knowledge.bind(ds.names, k)
    options = {"score": score.name, "score_numerics": numerics_version(score), **score_opts,
               "max_parents": k, "structure_prior": structure_prior,
               "constraints": jsonable(prior_kwargs), "intervention_column": intervention_column}
    if dynamic is not None:
        options["dbn"] = {**dynamic.record(), "contemporaneous": contemporaneous}
    # Every run is a run of one or more tiers; one tier of every variable (no tiers given,
    # or one holding them all) is the run without tiers: no "tiers" in its fingerprint, its
    # lattice at the workdir's root, its plain β and the results read from its tables.
    tier_ids = tiers if tiers is not None else (tuple(range(ds.n)),)
    if len(tier_ids) > 1:
        options["tiers"] = [[ds.names[v] for v in t] for t in tier_ids]
    lays = tiering.layouts(tier_ids, k)
    plain = len(lays) == 1
    if disk_budget is not None and not plain:
        raise OptionError("a disk budget is for runs without tiers (a tiered run's tiers are far smaller)"
                          if dynamic is None else
                          "a disk budget is for runs without tiers, and a time series run is one of tiers (its "
                          "lagged variables come first): each tier's disk is bounded by its own lattice")
    for lay in lays:
        if lay.m > MAX_NODES:
            raise OptionError(f"{ds.n} variables, but the engine supports at most {MAX_NODES}" + _MORE_WITH_TIERS
                              if plain else
                              f"tier {lay.index + 1} has {lay.m} variables; a tier holds at most "
                              f"{MAX_NODES} (split it: the orders within a tier are summed over "
                              "on its 2^m lattice)")
    fp = fingerprint(digest, ds.n, ds.m, options)

    # A finished run of the same fingerprint need not be scored again; otherwise scores
    # first: they validate every model option (constraints, ess, BGe parameters), so a
    # refused run leaves no run.json behind that would block the corrected command.
    t_scores = time.time()
    if not map_dag and workdir is not None and not fresh and map_finished(Path(workdir).resolve(), fp, lays):
        # the run holds a finished MAP network (a map-only invocation before): this one reads it
        # back, at no cost, so that its summary.json keeps it (without it a run with tiers, whose
        # MAP is map_dag.csv and summary.json's "map_dag", could not be opened or exported)
        map_dag = True
    if not posterior and workdir is not None and not fresh and \
            finished_beta(Path(workdir).resolve(), fp, lays, False, True) is not None:
        posterior = True  # so too a finished posterior (summary.json lost its log p(data))
    found = None if workdir is None or fresh else finished_beta(Path(workdir).resolve(), fp, lays, map_dag,
                                                                  posterior)
    finished = found is not None
    if finished:  # the β the run was computed with, as `_scores` gives it
        betas, offsets = found
    else:
        report(progress, "scores", 0, 1)  # the local scores are the first stage a user waits for
        betas, offsets = _scores(ds, lays, score, k, score_opts, structure_prior, prior_kwargs)
        report(progress, "scores", 1, 1)
    t_scores = round(time.time() - t_scores, 4)

    n = ds.n
    root, tmp = open_root(workdir, fresh)
    try:
        with Workdir(root).lock() as owner:
            # on a cluster a disk budget keeps `workers` tasks in flight in the plan's order
            # (`executors.distributed`), so the plan counts disk for them; else any order
            cluster = ordered_workers(scheduler, workers) is None
            disk_workers = workers if cluster and disk_budget is not None else ordered_workers(scheduler, workers)
            plans, at_once = prepare(Workdir(root), fp, ds.names, _source(data, ds), lays, chunk_bits, alpha_mode,
                                     map_dag, posterior, memory, workers, fresh, check_disk,
                                     # a finished run takes no more disk: whatever budget, it is read back
                                     disk_workers=disk_workers, disk_budget=None if finished else disk_budget)
            # a resume under a budget its plan exceeds with this many workers runs fewer at a
            # time (`runner._workers_within_budget`): a local pool of fewer threads, or on a
            # cluster fewer tasks in flight
            run_workers = workers if cluster or at_once == disk_workers else at_once
            disk_workers = at_once
            check_outputs(root)  # after prepare: --fresh has removed them
            result = Result(None, ds.names, None, workdir=None if tmp else root)
            post, fam_posts, log_px = np.zeros((n, n)), [], 0.0
            map_parents, map_score = np.zeros(n, dtype=object), 0.0
            # a DBN's lagged variables' ∅ families are not part of its model; without edges
            # within slice t its one-node tiers are its n! orders, each of the same sum
            log_lagged = 0.0 if dynamic is None or contemporaneous else -math.lgamma(dynamic.n + 1)
            # Every lattice of the run (a tier's posterior and MAP lattices; the run without
            # tiers has one) in one executor call: on a cluster the tiers run side by side.
            jobs, labels, lattice_scores = [], {}, []
            for lay, beta, (p_post, p_map), offset in zip(lays, betas, plans, offsets):
                if plain:  # the lattice's scores are β itself, one plan runs every stage asked for
                    jobs.append(Job(Workdir(root, owner), p_post or p_map, beta, total_offset(offset)))
                    continue
                A, M = tiering.tier_local_scores(beta, lay)
                lattice_scores.append((A, M))
                for p, s in ((p_post, A), (p_map, M)):
                    if p is not None:
                        jobs.append(Job(Workdir(root, owner, p.scope), p, s, offset))
                        labels[p.scope] = f"tier {lay.index + 1}/{len(lays)}"
            kept = any(p is not None and p.kept is not None for pair in plans for p in pair)
            if cluster and kept and disk_workers is None:  # the budget's levels (a resumed run's record)
                disk_workers = workers
            in_flight = disk_workers if cluster and (disk_budget is not None or kept) else None
            recomputed, journal, done = run_engine(jobs, scheduler, run_workers, progress, finished, labels,
                                                   in_flight) if jobs else ([], Workdir(root).journal(), False)
            if plain:
                plan, wd = jobs[0].plan, jobs[0].workdir
                offset = log_offset(journal, task_id(("scores",)))
                result.families = plan.families
                if posterior:
                    log_z = float(journal[task_id(("edges",))]["log_px"])
                    post = wd.read("posterior", slice(None))
                    result.parent_set_posterior = parent_set_posteriors(
                        betas[0], wd.read("gamma", slice(None)), log_z)
                    log_px = log_z + offset
                if map_dag:
                    map_parents = wd.read("map_parents", slice(None)).astype(np.int64)
                    map_score = float(journal[task_id(("map_dag",))]["log_score"]) + offset
            for lay, beta, (p_post, p_map), offset, (A, M) in zip(lays, betas, plans, offsets, lattice_scores):
                if posterior:
                    if p_post is None:  # one node: Z = Σ_G β(G), γ = 1
                        gamma, log_z = np.zeros((1, 1)), float(A[0, 0])
                    else:
                        gamma = Workdir(root, owner, lay.scope).read("gamma", slice(None))
                        log_z = float(journal[p_post.task(("edges",)).id]["log_px"])
                    save_family_beta(root, owner, lay, beta, offset)
                    fam = tiering.family_posteriors(beta, gamma, lay, log_z)
                    fam_posts.append(fam)
                    post[:, list(lay.nodes)] = tiering.edge_posteriors_from(fam, lay, n)
                    log_px += log_z + offset
                    if dynamic is not None and lay.nodes[0] >= dynamic.n:  # a lagged variable's own
                        log_lagged += log_z + offset
                if map_dag:
                    if p_map is None:
                        tier_parents = np.zeros(1, dtype=np.int64)
                        m_score = float(M[0, 0])
                    else:
                        wd = Workdir(root, owner, lay.scope + "-map")
                        tier_parents = wd.read("map_parents", slice(None)).astype(np.int64)
                        m_score = float(journal[p_map.task(("map_dag",)).id]["log_score"])
                    masks, score_sum = tiering.map_completion(beta, lay, tier_parents)
                    engine._check_close(score_sum, m_score, f"tier {lay.index + 1}: the MAP network's score and M(T)")
                    map_parents[list(lay.nodes)] = masks
                    if dynamic is None or lay.nodes[0] < dynamic.n:  # not a lagged variable's own
                        map_score += m_score + offset
            if posterior:
                result.posterior, result.log_marginal = post, log_px - log_lagged
                if not plain:
                    result.tiered = tiering.TieredFamilies(lays, fam_posts)
            if not plain:
                journal = Workdir(root).journal()
            result.summary = summary(journal, plans[0][0] or plans[0][1] if plain else None, fp, ds, run_workers,
                                     memory, scheduler, t_start, disk_workers, fs_block(root))
            if not plain:
                result.summary["log_marginal_likelihood"] = result.log_marginal
                result.summary["tiers"] = [{"tier": lay.index + 1, "nodes": [ds.names[v] for v in lay.nodes],
                                            **({"chunk_bits": p.chunk_bits, "chunks": p.n_chunks} if p else {})}
                                           for lay, p in zip(lays, (pp or pm for pp, pm in plans))]
                result.summary["computed"] = [w for w, on in (("posterior", posterior), ("map_dag", map_dag)) if on]
                result.summary["disk_bytes"] = tiered_disk(plans, disk_workers, fs_block(root))
            if ds.kind == "mixed":
                result.summary["column_kinds"] = column_kinds(ds)
            if dynamic is not None:
                result.children = tuple(range(dynamic.n))
                result.summary["dbn"] = options["dbn"]
            result.summary["recomputed_corrupt_tasks"] = recomputed
            result.summary["already_finished"] = done
            if map_dag:
                result.map_parents, result.map_log_score = map_parents, map_score
                result.summary["map_dag"] = {"log_score": map_score,
                                             "arcs": [list(a) for a in result.map_arcs()]}
                write_whole(root / "map_dag.csv", lambda p: write_arcs(p, result.map_arcs()))
            result.summary["scoring_seconds_this_invocation"] = t_scores
            if posterior:
                write_whole(root / "edges.csv", result.to_csv)
                write_whole(root / "strength.csv", lambda p: write_strength(p, ds.names, result.posterior))
                write_whole(root / "parent_sets.csv", lambda p: write_parent_sets(
                    p, ds.names, parent_set_mass,
                    result.tiered.ranked if not plain else
                    lambda v, mass: ranked(result.parent_set_posterior[v], result.families, v, mass),
                    nodes=result.children))
            write_json_atomic(root / "summary.json", result.summary)
            return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _scores(ds: Dataset, lays, score: Score, k: int, score_opts: dict, structure_prior: str,
            prior_kwargs) -> tuple[list[np.ndarray], list[np.ndarray | float]]:
    """β of every tier's families in its layout, shifted (`bigbn.scores.offsets.centre`), and what
    was taken off: per tier, for one tier of every variable (the run without tiers) the
    per-variable shifts (n,), which the engine journals with β, else the tier's total Σ_v c_v."""
    def betas_of(d) -> list[np.ndarray]:
        if len(lays) == 1:
            return [score_families(d, score, k, structure_prior=structure_prior, prior_kwargs=prior_kwargs,
                                   **score_opts)]
        return list(tiering.tier_scores(d, lays, score, k, score_opts, structure_prior=structure_prior,
                                        prior_kwargs=prior_kwargs))

    betas = betas_of(ds)
    if ds.kind == "scores" and ds.exact:  # shifted from the largest family the run can use
        rebased = ds.rebase(_alive_families(ds, lays, betas, k))
        if rebased is not ds:  # else the β just computed is the run's (it was computed twice)
            ds, betas = rebased, betas_of(rebased)
    read = _read_offsets(ds)
    if len(lays) == 1:
        beta, shifts = centre(betas[0], ds.names, ds.path or "scores")
        shifts = shifts + read
        total_offset(shifts, ds.path or "scores")
        return [beta], [shifts]
    shifted = [centre(b, [ds.names[v] for v in lay.nodes], ds.path or "scores") for b, lay in zip(betas, lays)]
    offsets = [total_offset(c + read[list(lay.nodes)], ds.path or "scores") for (_, c), lay in zip(shifted, lays)]
    total_offset(np.array(offsets), ds.path or "scores")
    return [b for b, _ in shifted], offsets


def _alive_families(ds, lays, betas, k: int):
    """alive(i, mask) for `bigbn.scores.jkl.ScoreFile.rebase`: whether the run (at most k
    parents, its tiers' layouts, its constraints) gives variable i the family of full mask
    ``mask`` a finite β (``betas``: the run's β of ``ds``, one per tier's layout)."""
    from bigbn.kernels.bits import popcount
    from bigbn.kernels.families import family_masks, family_rank, squeeze

    if len(lays) == 1:
        (beta,) = betas
        masks = family_masks(ds.n - 1, min(k, ds.n - 1))

        def alive(i: int, g: int) -> bool:
            if popcount(g) > min(k, ds.n - 1):
                return False
            r = int(family_rank(masks, np.array([squeeze(g, i)], dtype=np.int64))[0])
            return bool(np.isfinite(beta[i, r]))
        return alive
    where = {v: (lay, beta, b) for lay, beta in zip(lays, betas) for b, v in enumerate(lay.nodes)}

    def alive(i: int, g: int) -> bool:
        parents = [u for u in range(ds.n) if g >> u & 1]
        if len(parents) > k:
            return False
        lay, beta, b = where[i]
        col = int(lay.column_index(np.array([parents or [-1]], dtype=np.int64))[0, b])
        return col >= 0 and bool(np.isfinite(beta[b, col]))
    return alive


def _knowledge(knowledge, tiers, forbidden, required, prior_kwargs) -> Knowledge | None:
    """The run's Knowledge: ``knowledge`` or the one its short forms build; None for none."""
    short = {"tiers": tiers, "forbidden": forbidden, "required": required}
    given = [key for key, value in short.items() if value is not None]
    if knowledge is not None:
        if not isinstance(knowledge, Knowledge):
            raise OptionError(f"knowledge must be a bigbn.Knowledge, got {type(knowledge).__name__}")
        if given:
            raise OptionError(f"give knowledge= or its short form {given[0]}=, not both (add "
                              f"{given[0]} to the Knowledge)")
    elif given:
        knowledge = Knowledge(**short)
    if knowledge is not None and prior_kwargs and (knowledge.forbidden or knowledge.required
                                                   or knowledge.edge_prob or knowledge.max_parents):
        raise OptionError("give constraints by name (knowledge=, forbidden=, required=) or by node "
                          "index (prior_kwargs=), not both")
    return knowledge


def _read_offsets(ds) -> np.ndarray:
    """The constants a score file's reader already took off each variable's scores
    (`bigbn.scores.jkl.ScoreFile.offsets`); zeros for data."""
    return ds.log_offsets() if ds.kind == "scores" else np.zeros(ds.n)


def _load_scores(data, scores, score) -> tuple:
    """(the ScoreFile, its Score, its content hash) for learn(scores=...)."""
    from bigbn.scores.jkl import FileScore, ScoreFile, read_jkl

    if data is not None:
        raise OptionError("give data or scores (a .jkl file), not both")
    if not (isinstance(score, str) and score.lower() == "auto"):
        raise OptionError("scores from a file replace the score: drop the score option")
    if not isinstance(scores, (str, os.PathLike, ScoreFile)):
        raise OptionError(f"scores must be a .jkl file (a path) or a bigbn.scores.jkl.ScoreFile, got "
                          f"{type(scores).__name__}")
    sf = scores if isinstance(scores, ScoreFile) else read_jkl(opt.path_text(scores, "scores file"))
    return sf, FileScore(), sf.digest()


def _source(data, ds: Dataset) -> str:
    """Where the data came from, for run.json: a file's absolute path (so `bigbn effects`
    finds it again from any folder), else the dataset's label ("" or "array")."""
    path = os.fspath(data) if isinstance(data, (str, os.PathLike)) else ds.path
    return os.path.abspath(path) if path and os.path.isfile(path) else path


def workdir_status(workdir) -> list[str]:
    """Human-readable lines describing a work directory (for `bigbn status`)."""
    return status_lines(workdir)
