"""Running a planned run in its work directory: resume preparation, the engine, the summary.

`prepare` checks run.json against this run (other data or options are refused), fixes
the plans of its tiers (a run without tiers is one tier, at the workdir's root) and creates
the tables; `run_engine` runs what the journal does not list as
finished and intact; `summary` is what summary.json holds. `finished_beta` lets a
rerun of a finished run, with or without tiers, skip the scores. `learn` (bigbn/api.py)
strings them together.
"""

from __future__ import annotations

import dataclasses
import math
import resource
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from bigbn._version import __version__
from bigbn.engine.tasks import Job, execute, log_offset, verify
from bigbn.errors import BigBNWarning, OptionError, WorkdirError
from bigbn.engine.executors import Callback
from bigbn.plan.lattice import (BLOCK, STAGES, Plan, fit_disk, fits_free_disk, free_disk_budget, fs_block,
                                workers_within)
from bigbn.engine.progress import report
from bigbn.plan import tiers as tiering
from bigbn.store.rundir import RunRecord, check_is_ours, gib, kept_keys, read_record, write_record
from bigbn.store.workdir import Workdir, checksum


def _finished(job: Job, journal: dict) -> bool:
    """Whether every kept output is journaled and intact (CRC) and the journal's log p(x)
    is the forward table's: then nothing needs to run or be checked further."""
    return all(job.workdir.intact(job.plan.task(key), journal.get(job.plan.task(key).id, {}))
               for key in kept_keys(job.plan)) \
        and not _inconsistent_log_px(job, journal)


def finished_beta(root, fp: dict, lays, map_dag: bool, posterior: bool) -> tuple[list, list] | None:
    """The β of every tier of a finished run in ``root`` of this fingerprint whose results
    asked for are all journaled and intact, so that a rerun need not score the data again:
    (betas, offsets) as `api._scores` gives them, else None. A run without tiers: its β
    table (its offset is the journal's, `engine.log_offset`); with tiers: each tier's
    journaled family β (`save_family_beta`) and its Σ_v c_v, whose segment sums (the
    tier's lattice scores, `tiers.tier_local_scores`) must pass the CRC of its lattices'
    scores tasks. ``lays``: the run's tiers (`tiers.TierLayout`)."""
    try:
        record = read_record(root)
        if record is None or record.differences(fp) or [m for m, _ in record.plan.tiers] != [l.m for l in lays]:
            return None
        run = dataclasses.replace(record.plan, map_dag=map_dag, posterior=posterior)
        journal = Workdir(root).journal()
        betas, offsets = [], []
        for lay, (p_post, p_map) in zip(lays, run.plans()):
            if run.tiered:
                rec = journal.get(tiering.family_beta_id(lay))
                if rec is None:
                    return None
                beta = Workdir(root, scope=lay.scope).read(tiering.FAMILY_BETA, slice(None))
                if beta.shape != (lay.m, lay.width) or rec.get("crc") != checksum(beta):
                    return None
                A, M = tiering.tier_local_scores(beta, lay)
                lattices, offset = ((p_post, A), (p_map, M)), float(rec.get("log_offset", 0.0))
            else:
                beta = Workdir(root).read("beta", slice(None))
                lattices, offset = ((p_post or p_map, beta),), np.zeros(lay.m)
            for plan, scores in lattices:
                if plan is None:
                    continue
                wd = Workdir(root, scope=plan.scope)
                if not all(wd.store.matches(plan, t) for t in plan.tables()):
                    return None  # a table is missing or its metadata damaged: prepare makes it anew
                rec = journal.get(plan.task(("scores",)).id)
                if rec is None or rec.get("crc") != checksum(scores) or not _finished(Job(wd, plan, scores), journal):
                    return None
            betas.append(beta)
            offsets.append(offset)
    except Exception:  # noqa: BLE001 - anything unreadable: score again, and let the run repair it
        return None
    return betas, offsets


def map_finished(root, fp: dict, lays) -> bool:
    """Whether the run in ``root`` of this fingerprint has found its MAP network (an
    invocation before this one asked for it): each MAP lattice's last task journaled and,
    with tiers, map_dag.csv written (their MAP is read from it and summary.json). Whether
    its files are intact is for their reading to check, as for any finished stage."""
    try:
        record = read_record(root)
        if record is None or not record.plan.map_dag or record.differences(fp) \
                or [m for m, _ in record.plan.tiers] != [l.m for l in lays]:
            return False
        run = dataclasses.replace(record.plan, map_dag=True, posterior=False)
        journal = Workdir(root).journal()
        done = all(p.task(("map_dag",)).id in journal for _, p in run.plans() if p is not None)
        return done and (not run.tiered or (Path(root) / "map_dag.csv").is_file())
    except Exception:  # noqa: BLE001 - anything unreadable: not finished (the run repairs what it asks for)
        return False


def _refuse_other_run(wd: Workdir, old: RunRecord, fp: dict, names) -> None:
    """WorkdirError when the workdir's run was of other data or options than ``fp``
    (this run's variables ``names``, by which its constraints are said)."""
    diff = old.differences(fp, names)
    if diff:
        raise WorkdirError(f"{wd.root} holds a run of other data or options ("
                           + "; ".join(diff) + "); use --fresh to start over or another --workdir")


def prepare(wd: Workdir, fp: dict, names, source: str, lays, chunk_bits, alpha_mode, map_dag: bool,
            posterior: bool, memory, workers, fresh: bool, check_disk: bool,
            disk_workers: int | None = None,
            disk_budget: int | None = None) -> tuple[list[tuple[Plan | None, Plan | None]], int | None]:
    """Check run.json against this run (fingerprint ``fp``), refuse other data or options,
    fix the run's plan (`tiers.RunPlan`: one or more tiers), write run.json and make the
    tables. ``lays``: the run's tiers (`tiers.TierLayout`); one tier of every variable is
    the run without tiers, whose one lattice is at the workdir's root; with more, each
    tier of two or more nodes has its lattices in its own scopes. Chunk bits and the alpha
    mode come from the workdir on resume (another value is refused), else from
    ``chunk_bits`` / ``alpha_mode`` / the memory budget.
    A new run without tiers fits its plan to ``disk_budget`` (`plan.fit_disk`: the levels
    of L it keeps, `RunPlan.kept`); a resumed one keeps its recorded plan (a budget below its peak one
    task at a time is refused; one below it with ``disk_workers`` at a time lowers them).

    ``fresh``: the run in the folder is discarded (`Workdir.clear`) once the new plan stands.

    Returns per tier (this invocation's posterior plan, its MAP plan): None where the stage
    is not asked for or the tier has one node; the run without tiers has one plan for
    both (the same object); and the tasks it may keep in flight, as ``disk_workers`` counts
    them (`Plan.disk_bytes`): ``disk_workers``, or fewer on a resume under a budget
    (`_workers_within_budget`)."""
    # the caller checked that the folder is bigbn's (check_is_ours); with fresh its run is
    # discarded, but only once this run's plan stands: a refused option (memory, chunk bits,
    # disk budget) leaves the old run as it was
    old = None if fresh else read_record(wd.root)
    plain = len(lays) == 1
    block = fs_block(wd.root)  # the disk is counted in its file system's blocks
    n, k = fp["n"], fp["max_parents"]
    if old is not None:
        _refuse_other_run(wd, old, fp, names)
        if [m for m, _ in old.plan.tiers] != [lay.m for lay in lays]:
            raise WorkdirError(f"{wd.root}/run.json is damaged (its plan does not match the run's tiers); "
                               "use --fresh to start over")
        if old.plan.k != lays[0].k:  # the fingerprint's max parents are the same: run.json was edited
            raise WorkdirError(f"{wd.root}/run.json is damaged (its plan's max parents {old.plan.k} are not "
                               f"the run's {lays[0].k}); use --fresh to start over")
        mode = old.plan.alpha_mode
        # as without tiers: another value is refused, not ignored (a tier's capped at its size)
        other = [(lay, c) for lay, (_, c) in zip(lays, old.plan.tiers) if chunk_bits is not None
                 and c is not None and c != (chunk_bits if plain else min(chunk_bits, lay.m))]
        if other:  # name a tier whose chunk bits were not capped at its size if one differs
            lay, c = min(other, key=lambda lc: (lc[1] == lc[0].m, lc[0].index))
            where = "" if plain else f" (tier {lay.index + 1}, {lay.m} variables)"
            raise WorkdirError(f"{wd.root} was started with --chunk-bits {c}{where}; resume with the "
                               "same value or use --fresh")
        if alpha_mode is not None and alpha_mode != mode:
            raise WorkdirError(f"{wd.root} was started with --alpha {mode}; resume with the same value "
                               "or use --fresh")
        run = dataclasses.replace(old.plan, map_dag=map_dag, posterior=posterior)
        disk_workers = _workers_within_budget(wd, run, disk_budget, disk_workers, block) or disk_workers
    else:
        run = tiering.run_plan(lays, chunk_bits, alpha_mode, map_dag, posterior, memory, workers)
        run.plans()  # every lattice's own checks (chunk bits within its size), before fresh discards
        if disk_budget is not None:
            if run.tiered:
                raise OptionError("--disk-budget applies to runs without tiers (each tier's disk is "
                                  "already bounded by its own lattice: see bigbn plan --tier-sizes)")
            post, map_only = run.lattices(0)
            if post is not None:
                run = dataclasses.replace(run, kept=fit_disk(post, disk_budget, disk_workers, block).kept)
            else:  # a MAP-only run: refused where its tables exceed the budget
                fit_disk(map_only, disk_budget, disk_workers, block)
    if fresh:
        wd.clear()
    if old is None and plain and disk_budget is None and check_disk:
        run = _fit_free_disk(wd, run, disk_workers, block)
    plans, lattices = run.plans(), run.distinct()
    need = sum(b for p in lattices for t, b in p.disk_bytes(disk_workers, block).items()
               if old is None or t != "metadata" and not (wd.tables / p.scope / t).exists())
    if need and check_disk:
        free = shutil.disk_usage(wd.root).free
        if not fits_free_disk(need, free):
            if old is None and plain:
                raise WorkdirError(f"{wd.root}: this run needs {gib(need)} of disk, only {gib(free)} free "
                                   f"(see `bigbn plan --n {n} -k {k}`)")
            what = "this run needs" if not plain else \
                "the MAP network needs" if posterior else "the posterior needs"
            raise WorkdirError(f"{wd.root}: {what} {gib(need)} more disk, only {gib(free)} free")
    if old is None:
        write_record(wd.root, RunRecord(fp, run, tuple(names), source))
    elif old.with_stages(map_dag, posterior) != old:
        write_record(wd.root, old.with_stages(map_dag, posterior))
    for p in lattices:
        Workdir(wd.root, scope=p.scope).create_tables(p)
    return plans, disk_workers


def _workers_within_budget(wd: Workdir, run: "tiering.RunPlan", disk_budget,
                           disk_workers: int | None, block: int = BLOCK) -> int | None:
    """How many tasks a resumed run may keep in flight under ``disk_budget``: None where
    nothing bounds them (no budget, tiers), else ``disk_workers`` or, where the recorded
    plan's peak with that many exceeds the budget, the most that fit it (`workers_within`),
    said in one warning line. A resumed run keeps the plan its run.json records, whatever
    budget it is given; a budget below that plan's peak one task at a time was ignored
    without a word (a run started without one, out of disk, resumed with --disk-budget to
    fit, took its old peak again): a WorkdirError, as another --chunk-bits is. A run
    resumed with more --workers than it started with, under the same budget, was refused
    too (more chunks alive at once): it now runs as many at a time as the budget holds. A
    run whose kept levels are those a bigbn that counted the tables' bytes chose for this
    budget (`_planned_in_bytes`), but which blocks exceed even one task at a time, was
    started under it before plan53: refusing it refused the very command that started it;
    it resumes as planned, said in one warning line."""
    if disk_budget is None or run.tiered:
        return None
    post, map_only = run.lattices(0)
    post = post or map_only
    if post is None:
        return None
    asked = 1 if disk_workers is None else disk_workers
    fit = workers_within(post, disk_budget, asked, block)
    how = ("a MAP-only run" if not post.posterior else "L kept whole" if post.kept is None else
           f"L kept at levels {', '.join(map(str, post.kept))}")
    if fit == asked:
        return asked
    if fit:
        peak, least = (sum(post.disk_bytes(w, block).values()) for w in (asked, fit))
        said = [gib(x) for x in (peak, disk_budget, least)]
        if len(set(said)) < 3:  # in bytes where the rounded sizes read the same
            said = [f"{x:,} bytes" for x in (peak, disk_budget, least)]
        warnings.warn(f"{wd.root} was started with a plan ({how}) of peak disk {said[0]} with {asked} tasks at a "
                      f"time, above the disk budget of {said[1]}: it resumes with {fit} at a time "
                      f"(peak {said[2]})", BigBNWarning, stacklevel=2)
        return fit
    peak = sum(post.disk_bytes(1, block).values())
    if _planned_in_bytes(post, disk_budget, asked, block):  # by a bigbn that counted the tables' bytes alone
        said = (gib(peak), gib(disk_budget))
        if said[0] == said[1]:
            said = (f"{peak:,} bytes", f"{disk_budget:,} bytes")
        warnings.warn(f"{wd.root} was planned ({how}) within the disk budget of {said[1]} in its tables' bytes, "
                      f"as bigbn did before it counted file-system blocks; in blocks its peak is {said[0]} one task "
                      f"at a time: it resumes as planned ({asked} at a time; --fresh plans within the budget in "
                      "blocks)", BigBNWarning, stacklevel=2)
        return asked
    said = (gib(peak), gib(disk_budget))
    if said[0] == said[1]:  # in bytes where the rounded sizes read the same
        said = (f"{peak:,} bytes", f"{disk_budget:,} bytes")
    raise WorkdirError(f"{wd.root} was started with a plan of peak disk {said[0]} ({how}; one task at a time), "
                       f"above the disk budget of {said[1]}; a resumed run keeps its plan: resume without "
                       "--disk-budget or use --fresh to plan within it")


def _planned_in_bytes(post: Plan, disk_budget: int, workers: int, block: int) -> bool:
    """Whether ``post``'s kept levels are those a bigbn that counted the tables' bytes
    alone (block 1, before plan53) chose for ``disk_budget`` and ``workers``: then the run
    was started under this very budget, and refusing it refused the command that started
    it. A plan kept whole, or planned in blocks under another budget, is not."""
    if post.kept is None or block <= 1 or workers_within(post, disk_budget, workers, 1) != workers:
        return False
    try:
        return fit_disk(dataclasses.replace(post, kept=None), disk_budget, workers, 1).kept == post.kept
    except OptionError:
        return False


def _fit_free_disk(wd: Workdir, run: "tiering.RunPlan", disk_workers: int | None,
                   block: int = BLOCK) -> "tiering.RunPlan":
    """A new run without tiers and without ``disk_budget`` that does not fit the free disk
    (with the margin `prepare` keeps, `DISK_MARGIN`) takes the fastest plan that does: the free disk
    is its budget (`fit_disk`), so a user with room loses nothing and one without gets
    the same numbers, later. Left as it is where nothing fits (`prepare` then refuses,
    naming the need) or where no budget can hold (a dask cluster starts tasks in any
    order: ``disk_workers`` None)."""
    post, _ = run.lattices(0)
    if post is None or disk_workers is None:
        return run
    free = shutil.disk_usage(wd.root).free
    if fits_free_disk(sum(post.disk_bytes(disk_workers, block).values()), free):
        return run
    try:
        fitted = fit_disk(post, free_disk_budget(free), disk_workers, block)
    except OptionError:
        return run
    return dataclasses.replace(run, kept=fitted.kept)


def _check_scores(wd: Workdir, beta: np.ndarray, plan: Plan) -> None:
    """On resume the journaled beta must be the one just computed: everything downstream
    was computed from it, so a different beta (changed numerics, nondeterminism) is
    refused, never mixed in. (A stored copy that no longer matches its checksum is
    rewritten by the engine's scores task, like any corrupt chunk.) The stored β tells the
    two causes apart: if it passes the journal's checksum, the scores computed now differ
    from it; if not, the journal or the tables are corrupted."""
    rec = wd.journal().get(plan.task(("scores",)).id)
    if rec is None or rec.get("crc") == checksum(beta):
        return
    try:
        stored = wd.read("beta", slice(None))
    except Exception:  # noqa: BLE001 - missing or unreadable
        stored = None
    if stored is not None and stored.shape == beta.shape and checksum(stored) == rec.get("crc"):
        raise WorkdirError(f"{wd.root}: the local scores differ from the ones this workdir was "
                           "computed with (other software versions?); use --fresh to start over")
    raise WorkdirError(f"{wd.root}: the tables do not match the checksums in {wd.journal_path} (the "
                       "journal or the tables are corrupted); use --fresh to start over")


def _inconsistent_log_px(job: Job, journal: dict) -> bool:
    """Whether the edges record's log p(x) differs from L(V), the last entry of the
    forward table (whose last chunk passes its CRC): a hand-edited or damaged journal."""
    p = job.plan
    if not p.posterior or p.task(("edges",)).id not in journal:
        return False
    rec = journal[p.task(("edges",)).id]
    H = p.n_chunks - 1
    fwd = journal.get(p.task(("forward", H)).id)
    try:
        chunk = job.workdir.read("forward", slice(H * p.chunk_size, (H + 1) * p.chunk_size))
    except Exception:  # noqa: BLE001 - unreadable: verify finds and redoes it
        return False
    if fwd is None or fwd.get("crc") != checksum(chunk):
        return False
    return not math.isclose(float(chunk[-1]), rec["log_px"], rel_tol=1e-12, abs_tol=1e-9)


class _Progress(Callback):
    """Executor callback: each task event goes on to ``to`` (a `progress.Listener`), and
    every lattice stage's count of finished tasks as a `progress.ProgressEvent` (a
    lattice's stages named after ``labels[scope]``, "tier 2/4 forward", where given). A
    stage is first reported when its first task starts (or at once if a resumed run had
    finished some of its tasks), so stages still waiting are not listed as 0/N."""

    def __init__(self, plans, done: set[str], to, labels: dict | None = None):
        labels = labels or {}
        self.totals, self.counts, self.names = {}, {}, {}
        for plan in plans:
            for s in STAGES:
                if s == "scores" or not plan.stage_tasks(s):
                    continue
                keys = plan.stage_tasks(s)
                self.totals[plan.scope, s] = len(keys)
                self.counts[plan.scope, s] = sum(1 for key in keys if plan.task(key).id in done)
                label = labels.get(plan.scope)
                self.names[plan.scope, s] = f"{label} {s}" if label else s
        self.to = to
        self.shown = set()
        for at, tot in self.totals.items():
            if self.counts[at]:
                self._show(at)

    def _show(self, at: tuple) -> None:
        self.shown.add(at)
        report(self.to, self.names[at], self.counts[at], self.totals[at])

    def on_task_start(self, event) -> None:
        self.to.on_task_start(event)
        at = (event.scope, event.key[0])
        if at in self.counts and at not in self.shown:
            self._show(at)

    def on_task_end(self, event) -> None:
        self.to.on_task_end(event)
        at = (event.scope, event.key[0])
        if at in self.counts:
            self.counts[at] += 1
            self._show(at)


def run_engine(jobs, scheduler, workers, progress, finished: bool = False,
               labels: dict | None = None, in_flight: int | None = None) -> tuple[list[str], dict, bool]:
    """Run what the journal does not list as finished and intact, for every lattice of
    the run (``jobs``: a `Job` per lattice plan; a run without tiers has one, a run with
    tiers one per tier and stage) in one executor call over all their pending tasks.
    Returns the ids of journaled tasks whose chunks failed their checksum (run again),
    the final journal, and whether the run was already finished (nothing ran). finished:
    the caller has just found every kept output intact (`finished_beta`), so they are not
    read again. progress: a `progress.Listener` or None; labels: {scope: how progress
    names that lattice}; in_flight: as `execute` takes it."""
    wd = jobs[0].workdir  # any scope: the run's one journal
    if finished:
        return [], wd.journal(), True
    wd.repair_journal()
    for job in jobs:
        _check_scores(job.workdir, job.beta, job.plan)
    journal = wd.journal()
    pending, done, bad = [], set(), []
    for job in jobs:
        edges_id = job.plan.task(("edges",)).id if job.plan.posterior else None
        bad_log_px = _inconsistent_log_px(job, journal)
        if bad_log_px:
            del journal[edges_id]  # recomputed from the (intact) tables
        elif _finished(job, journal):
            continue  # finished and its results intact: nothing to check or run
        ok, damaged = verify(job, journal)
        done |= ok
        bad += damaged + ([edges_id] if bad_log_px else [])
        pending.append(job)
    if not pending:
        return [], journal, True
    callbacks = [_Progress([j.plan for j in pending], done, progress, labels)] if progress is not None else []
    execute(pending, scheduler=scheduler, workers=workers, callbacks=callbacks, done=done, in_flight=in_flight)
    return bad, wd.journal(), False


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


def summary(journal: dict, plan: Plan | None, fp: dict, ds, workers, memory, scheduler,
            t_start, disk_workers: int | None, block: int = BLOCK) -> dict:
    """summary.json (plan None: a tiered run, whose caller adds its tiers; ``disk_workers``:
    the plan's disk is counted for that many tasks in its order, `Plan.disk_bytes`). Per stage: tasks
    and task-seconds over the whole run; wall seconds (first start to last end) over the
    tasks of this invocation only, so a resumed run does not count the time it was down."""
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
    offset = 0.0 if edges_rec is None else log_offset(journal, plan.task(("scores",)).id)
    return {
        "log_marginal_likelihood": None if edges_rec is None else edges_rec["log_px"] + offset,
        "computed": [] if plan is None else
                    [w for w, on in (("posterior", plan.posterior), ("map_dag", plan.map_dag)) if on],
        "n": ds.n, "m": ds.m, "names": list(ds.names),
        "options": {k: v for k, v in fp.items() if k not in ("data_sha256",)},
        "data_sha256": fp["data_sha256"],
        "plan": {**({} if plan is None else {"chunk_bits": plan.chunk_bits, "alpha_mode": plan.alpha_mode,
                                              "chunks": plan.n_chunks,
                                              **({} if plan.kept is None else {"kept_levels": list(plan.kept)})}),
                 "workers": workers, "memory_budget_bytes": memory, "scheduler": scheduler_name(scheduler)},
        "stages": stages,
        "wall_seconds_this_invocation": round(time.time() - t_start, 3),
        "peak_rss_bytes": peak_rss_bytes(),
        "disk_bytes": {} if plan is None else dict(plan.disk_bytes(disk_workers, block)),
        "version": __version__,
    }


def scheduler_name(scheduler) -> str:
    """The scheduler as summary.json records it: its name or address, or for a
    ``distributed.Client`` the address of the scheduler it is connected to."""
    if isinstance(scheduler, str):
        return scheduler
    address = getattr(getattr(scheduler, "scheduler", None), "address", None)
    return f"a dask.distributed Client of {address}" if address else type(scheduler).__name__


def open_root(workdir, fresh: bool) -> tuple[Path, str | None]:
    """(the work directory, absolute and created, refused if it is somebody else's folder;
    the temporary directory to remove afterwards, when none was given)."""
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="bigbn-")
        workdir = tmp
    # Absolute: cluster workers resolve relative paths against their own directories.
    root = Path(workdir).resolve()
    check_is_ours(root, fresh)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WorkdirError(f"cannot create work directory {root}: {e.strerror}") from None
    return root, tmp


# ------------------------------------------------------------------------- tiered runs

def tiered_disk(plans, disk_workers: int | None = None, block: int = BLOCK) -> dict[str, int]:
    """Bytes of disk of a tiered run's tables: the tiers' tables, summed by name
    (``disk_workers``: as for `Plan.disk_bytes`)."""
    out: dict[str, int] = {}
    for pair in plans:
        for p in pair:
            for name, b in (p.disk_bytes(disk_workers, block) if p is not None else {}).items():
                out[name] = out.get(name, 0) + b
    return out


def save_family_beta(root, owner, lay, beta: np.ndarray, log_offset: float = 0.0) -> None:
    """Keep tier ``lay``'s family β (m, width) in its folder, journaled with its CRC (and
    the tier's Σ_v c_v, `bigbn.scores.offsets`, where β was shifted), for what reads the finished
    run (`rundir.FinishedRun`: samples, causal effects). Written once: a journaled
    copy with the same CRC that still reads back is kept."""
    wd = Workdir(root, owner, lay.scope)
    tid, crc = tiering.family_beta_id(lay), checksum(beta)
    rec = wd.journal().get(tid)
    if rec is not None and rec["crc"] == crc:
        try:
            if checksum(wd.read(tiering.FAMILY_BETA, slice(None))) == crc:
                return
        except Exception:  # noqa: BLE001 - missing or damaged: write it again
            pass
    start = time.time()
    wd.store.put(tiering.FAMILY_BETA, np.ascontiguousarray(beta))
    end = time.time()
    wd.journal_append({"task": tid, "stage": tiering.FAMILY_BETA, "crc": crc,
                       **({"log_offset": log_offset} if log_offset else {}),
                       "seconds": round(end - start, 4), "start": start, "end": end})
