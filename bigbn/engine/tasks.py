"""The engine: the task functions of every stage, and how a run is executed.

A task is a pure function of (job, spec): `Plan.tasks()` gives each task's `TaskSpec`
(what it reads and writes, and what it combines); the function reads those regions from
the work directory's zarr tables, calls one numba kernel per chunk and writes its region
(fsynced). `JournaledTask` adds the journal line after the write. Tasks pass only specs;
data flows through zarr, so the scheduler never holds a table (docs/design.md, "Scheduling").

`execute` hands the pending specs and a `JournaledTask` to one of the executors in
bigbn/engine/executors/ (sync, threads, dask_local, distributed); the plan is the same for all.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from bigbn import kernels as K
from bigbn.errors import EngineError
from bigbn.engine.executors.dispatch import run as run_specs
from bigbn.plan.lattice import Plan, TaskSpec
from bigbn.store.workdir import Workdir, checksum

NEG_INF = -np.inf


@dataclass(frozen=True)
class Job:
    """Everything a task needs: where the tables are, the plan, and beta.

    beta: float64 (n, F), log rho_i(G) + log p(x_i | x_G) for the families of plan.families,
    less a constant c_i per node where the scores are too large for float64 to sum as they
    are (bigbn/scores/offsets.py); log_offset: Σ_i c_i, which the scores task journals, so that
    log p(x) = L(V) + log_offset can be reported from the journal alone.
    """

    workdir: Workdir
    plan: Plan
    beta: np.ndarray = field(repr=False)
    log_offset: float = 0.0


# ----------------------------------------------------------------------------- alpha access

def alpha_span(job: Job, node: int, first_chunk: int, nchunks: int) -> np.ndarray:
    """alpha_node on alpha chunks first_chunk .. first_chunk+nchunks-1 (2^(c-1) each)."""
    p = job.plan
    size = p.alpha_chunk_size
    if p.alpha_mode == "store":
        return job.workdir.read("alpha", (node, slice(first_chunk * size, (first_chunk + nchunks) * size)))
    return computed_alpha(job, node, first_chunk, nchunks)


def computed_alpha(job: Job, node: int, first_chunk: int, nchunks: int) -> np.ndarray:
    """`alpha_span` computed from job.beta whatever the plan's α mode (the kernel the
    alpha task writes a stored table with: the same bits)."""
    p = job.plan
    out = np.empty(nchunks * p.alpha_chunk_size)
    K._alpha_chunks(job.beta, p.families, node, first_chunk, p.c - 1, p.small_masks, out)
    return out


def stored_alpha_ext(job: Job, node: int, first_chunk: int, nchunks: int) -> tuple[np.ndarray, np.ndarray]:
    """`alpha_span` of a run that stores α (``--alpha store``), as extended-exponent
    numbers (mantissas, exponents; kernels.py). Runs that recompute α build it per tile
    inside the kernels instead (kernels._high_term, kernels._recursion_tiles)."""
    m, e = np.empty((2, nchunks * job.plan.alpha_chunk_size))
    K._ext_from_log_into(alpha_span(job, node, first_chunk, nchunks), m, e)
    return m, e


# ----------------------------------------------------------------------------- tasks

def compute(job: Job, spec: TaskSpec) -> dict:
    """Run one task: read its regions, compute, write (and fsync) exactly ``spec.writes``.

    Returns the task's record: ``crc`` (CRC-32C of everything it wrote, in ``spec.writes``
    order; the journal keeps it for verification) and, for the edges task, ``log_px``.
    """
    return _TASKS[spec.kind](job, spec)


def _write_all(job: Job, spec: TaskSpec, *arrays: np.ndarray) -> int:
    """Write array t to ``spec.writes[t]``; the CRC-32C (`checksum`) chained over all of them."""
    if len(arrays) != len(spec.writes):
        raise EngineError(f"task {spec.id} wrote {len(arrays)} arrays to {len(spec.writes)} regions")
    crc = 0
    for region, a in zip(spec.writes, arrays):
        job.workdir.write_region(region, a)
        crc = checksum(a, crc)
    return crc


def verify(job: Job, records: dict[str, dict]) -> tuple[set[str], list[str]]:
    """Check every journaled task's output against its CRC.

    Returns (ids of the tasks that need not run again, ids of journaled tasks whose chunks
    are missing, truncated or changed). A bad task is simply run again: tasks are
    deterministic, so whatever already used its (then intact) output stays valid.

    Release tasks delete B's chunks and γ parts on purpose once nothing will read them.
    A backward task whose output is not intact (deleted by a release, even one killed
    half-way, or damaged) runs again only if a task that reads it will run: deciding in
    reverse plan order (readers come after writers) settles each task after all of its
    readers, so a rerun that needs a deleted chunk brings back the task that wrote it,
    and so on up the lattice. A release whose chunks are written again runs again too.
    The bad ids are those whose chunks were not deleted by a journaled release.
    """
    specs = job.plan.tasks()
    writer, readers = job.plan.io_maps
    released = {(r.table, cc) for spec in specs if spec.id in records
                for r in spec.deletes for cc in r.chunks}
    deletable = {(r.table, cc) for spec in specs for r in spec.deletes for cc in r.chunks}
    rerun: set[tuple] = set()
    good, bad = set(), []
    for spec in reversed(specs):
        rec = records.get(spec.id)
        if rec is None:
            rerun.add(spec.key)
            continue
        if job.workdir.intact(spec, rec):
            good.add(spec.id)
            continue
        out = [(r.table, cc) for r in spec.writes for cc in r.chunks]
        gone = bool(out) and all(c in released for c in out)
        if ((spec.kind == "backward" or (out and all(c in deletable for c in out)))
                and not any(t in rerun for c in out for t in readers.get(c, ()))):
            # B and the γ parts (and under a disk budget L) are read by later tasks of the
            # plan only, none of which will run: deleted by a release (perhaps one killed
            # half-way) or not, they are not needed
            good.add(spec.id)
            continue
        rerun.add(spec.key)
        if not gone:
            bad.append(spec.id)
    for spec in specs:
        if spec.deletes and any(writer[r.table, cc] in rerun for r in spec.deletes for cc in r.chunks):
            good.discard(spec.id)
    return good, bad[::-1]


def _task_scores(job: Job, spec: TaskSpec) -> dict:
    rec = {"crc": _write_all(job, spec, job.beta)}
    if job.log_offset:  # journaled only where a shift was made: other runs' records unchanged
        rec["log_offset"] = job.log_offset
    return rec


def log_offset(records: dict, spec_id: str) -> float:
    """Σ_i c_i journaled by the scores task ``spec_id`` (0 where no node was shifted)."""
    return float(records[spec_id].get("log_offset", 0.0))


def _task_alpha(job: Job, spec: TaskSpec) -> dict:
    [(node, first, run)] = spec.terms
    p = job.plan
    out = np.empty(run * p.alpha_chunk_size)
    K._alpha_chunks(job.beta, p.families, node, first, p.c - 1, p.small_masks, out)
    return {"crc": _write_all(job, spec, out)}


def _task_recursion(job: Job, spec: TaskSpec) -> dict:
    """Forward (L) or backward (B) recursion on chunk H: one computation, mirrored.

    The high-bit terms, alpha_node (a 2-chunk span) times the neighbour chunk (H - b
    forward, H + b backward), are summed as extended numbers, then the in-chunk kernel
    runs on them; the result is written as natural logs. A backward task computes its
    chunk's part of γ too, from s_v(S) = L(S)·B(S + v): a high node's from the neighbour
    chunk it has just read, a low node's from L and B on the chunk.
    """
    p, wd = job.plan, job.workdir
    backward = spec.kind == "backward"
    # L's table: "forward", or under a disk budget the round's table it was computed into
    # again ("reforward" tasks compute L, from the kept level's table or their round's)
    ltable = next((r.table for r in spec.reads if r.table == "forward" or r.table.startswith("reforward")),
                  "forward")
    neighbours = "backward" if backward else ltable
    m, e = np.empty((2, p.chunk_size))  # the first high-bit term writes them whole
    if not spec.terms:
        m.fill(0.0)
        e.fill(NEG_INF)
    if backward:  # γ: L on the chunk, read by this task alone in the backward stage
        fm, fe = np.empty((2, p.chunk_size))
        K._ext_from_log_into(wd.read(ltable, _chunk_slice(p, spec.chunk), evict=True), fm, fe)
        part = np.full((p.n, p.n_families), NEG_INF)
    recompute = p.alpha_mode == "recompute"
    y = None
    for t, (node, first, G) in enumerate(spec.terms):
        # the neighbour as logs: each kernel converts it a tile at a time, in the cache
        y = wd.read(neighbours, _chunk_slice(p, G))
        if recompute:
            K._high_term(job.beta[node], p.families, p.small_masks, first >> 1, p.c, p.tile_bits, y, m, e, t > 0)
        else:
            K._ext_fma_log_into(m, e, *stored_alpha_ext(job, node, first, 2), y, t > 0)
        if backward:
            gnode, Q, gG = spec.gamma_terms[t]
            if (gnode, gG) != (node, G):
                raise EngineError(f"task {spec.id}: γ term {t} is ({gnode}, {gG}), its recursion term ({node}, {G})")
            K._gamma_high(fm, fe, y, Q, p.families, p.small_masks, p.tile_bits, part[node])
    if spec.origin is not None:  # in a chunk with no high-bit terms
        m[spec.origin], e[spec.origin] = 1.0, 0.0  # L(∅) = 1, B(V) = R(∅) = 1
    if recompute:
        K._recursion_tiles(job.beta, p.families, p.small_masks, spec.chunk, p.tile_bits, m, e, not backward)
    else:
        am, ae = np.empty((2, p.c, p.alpha_chunk_size))
        for i in range(p.c):
            am[i], ae[i] = stored_alpha_ext(job, i, spec.chunk, 1)
        K._recursion_chunk(m, e, am, ae, not backward)
    if backward:  # γ of the low nodes v < c: S and S+v both in the chunk
        K._gamma_low(fm, fe, m, e, spec.chunk, p.families, p.small_masks, p.tile_bits, part)
    out = np.empty(p.chunk_size) if y is None else y  # the logs written: the last neighbour's buffer is free now
    K._log_ext_into(m, e, out)
    return {"crc": _write_all(job, spec, out, part) if backward else _write_all(job, spec, out)}


def _chunk_slice(p: Plan, H: int) -> slice:
    return slice(H * p.chunk_size, (H + 1) * p.chunk_size)


def _task_gamma(job: Job, spec: TaskSpec) -> dict:
    """The γ parts of one level's chunks, summed (as extended numbers, in chunk order)."""
    p, wd = job.plan, job.workdir
    parts = (wd.read("gamma_parts", H) for (H, _, _) in spec.reads[0].chunks)
    return {"crc": _write_all(job, spec, _sum_logs(p, parts))}


def _sum_logs(p: Plan, rows) -> np.ndarray:
    """log Σ exp(x) over the (n, F) arrays of natural logs ``rows``, as (n, F) logs."""
    m, e = np.zeros(p.n * p.n_families), np.full(p.n * p.n_families, NEG_INF)
    for x in rows:
        K._ext_add_logs(m, e, np.ascontiguousarray(x, dtype=np.float64).reshape(-1))
    out = np.empty_like(m)
    K._log_ext_into(m, e, out)
    return out.reshape(p.n, p.n_families)


def _task_release(job: Job, spec: TaskSpec) -> dict:
    """Delete the chunks nothing will read again (a chunk of B and its γ part)."""
    for region in spec.deletes:
        job.workdir.delete_region(region)
    return {"crc": _write_all(job, spec)}


def _task_edges(job: Job, spec: TaskSpec) -> dict:
    """gamma_v = logsumexp of the partials; p(u→v) = Σ_{G∋u} β_v(G) γ_v(G) / L(V)."""
    p, wd = job.plan, job.workdir
    gamma = _sum_logs(p, (wd.read("gamma_levels", level) for level in range(p.h + 1)))
    log_px = float(wd.read("forward", slice((1 << p.n) - 1, 1 << p.n))[0])
    log_px_b = float(wd.read("backward", slice(0, 1))[0])
    _check_finite(log_px, "log p(x) = L(V)")
    _check_close(log_px, log_px_b, "L(V) and R(V) (forward and backward sums)")
    post = edge_posteriors(job.beta, gamma, p, log_px)
    return {"crc": _write_all(job, spec, gamma, post), "log_px": log_px}


def _task_map(job: Job, spec: TaskSpec) -> dict:
    """M(S) = max_i a_i(S − i) + M(S − i) and the best sinks on chunk H (bigbn/kernels/mapdag.py)."""
    from bigbn.kernels.mapdag import map_chunk

    p, wd = job.plan, job.workdir
    out, sink = map_chunk(job, spec.chunk, spec.terms, lambda G: wd.read("map", _chunk_slice(p, G)))
    return {"crc": _write_all(job, spec, out, sink)}


def _task_map_dag(job: Job, spec: TaskSpec) -> dict:
    """Backtrack the MAP network from V through the best sinks; its score is M(V)."""
    from bigbn.kernels.mapdag import backtrack, dag_score

    p, wd = job.plan, job.workdir
    log_score = float(wd.read("map", slice((1 << p.n) - 1, 1 << p.n))[0])
    _check_finite(log_score, "the MAP network's score M(V)")
    parents = backtrack(job.beta, p.families, p.n, lambda S: wd.read("map_sink", slice(S, S + 1))[0])
    _check_close(dag_score(job.beta, p.families, parents), log_score,
                 "the MAP network's score and M(V)")
    return {"crc": _write_all(job, spec, parents.astype(np.float64)), "log_score": log_score}


def edge_posteriors(beta: np.ndarray, gamma: np.ndarray, p: Plan, log_px: float) -> np.ndarray:
    """P[u, v] = Σ_{G ∋ u} β_v(G) γ_v(G) / Σ_G β_v(G) γ_v(G); float64 (n, n).

    The denominator equals L(V) = p(x) for every v (checked to 1e-9); using node v's own
    sum over the same finite terms makes a forbidden edge exactly 0 (no finite term) and a
    required edge exactly 1 (numerator and denominator are the same computation).
    """
    n = p.n
    post = np.zeros((n, n))
    w = beta + gamma
    for v in range(n):
        finite = np.isfinite(w[v])
        total = _logsumexp(w[v][finite])
        _check_close(total, log_px, f"Σ_G β_{v}(G) γ_{v}(G) and L(V)")
        for j in range(n - 1):
            u = j if j < v else j + 1
            sel = finite & ((p.families >> j) & 1 == 1)
            post[u, v] = math.exp(_logsumexp(w[v][sel]) - total) if sel.any() else 0.0
    if not np.all(np.isfinite(post)):
        raise EngineError("edge posteriors are not finite (bug or corrupted tables)")
    return np.clip(post, 0.0, 1.0)


def _logsumexp(x: np.ndarray) -> float:
    mx = float(np.max(x)) if x.size else NEG_INF
    if mx == NEG_INF:
        return NEG_INF
    return mx + math.log(float(np.sum(np.exp(x - mx))))


def _check_finite(x: float, what: str) -> None:
    if not math.isfinite(x):
        raise EngineError(f"{what} is {x}: the model gives the data zero probability "
                          "(all families forbidden?) or the tables are corrupt")


def _check_close(a: float, b: float, what: str) -> None:
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-7):
        raise EngineError(f"{what} disagree ({a!r} vs {b!r}): bug or corrupted tables")


_TASKS: dict[str, Callable[[Job, TaskSpec], dict]] = {
    "scores": _task_scores,
    "alpha": _task_alpha,
    "forward": _task_recursion,
    "reforward": _task_recursion,
    "backward": _task_recursion,
    "gamma": _task_gamma,
    "release": _task_release,
    "edges": _task_edges,
    "map": _task_map,
    "map_dag": _task_map_dag,
}


@dataclass(frozen=True)
class JournaledTask:
    """The task function the executors run: compute, then append the journal line.

    A line in the journal means the task's regions are durably on disk (they were
    fsynced before the line was written). Picklable (a cluster worker gets it once).
    """

    job: Job

    def __call__(self, spec: TaskSpec) -> dict:
        start, t0 = time.time(), time.perf_counter()
        rec = compute(self.job, spec)
        rec.update(task=spec.id, stage=spec.kind, seconds=round(time.perf_counter() - t0, 4),
                   start=start, end=time.time(), pid=os.getpid())
        self.job.workdir.journal_append(rec)
        return rec


@dataclass(frozen=True)
class JournaledTasks:
    """The task function of several jobs of one run run together (a run's tiers: plans of
    distinct scopes): a spec runs as `JournaledTask` of the job whose plan has its scope."""

    jobs: tuple[Job, ...]

    def __call__(self, spec: TaskSpec) -> dict:
        for job in self.jobs:
            if job.plan.scope == spec.scope:
                return JournaledTask(job)(spec)
        raise EngineError(f"task {spec.id}: no plan of scope {spec.scope!r} in this run (bug)")


# ----------------------------------------------------------------------------- executing



def execute(job: Job | Sequence[Job], *, scheduler="dask", workers: int | None = None,
            callbacks: Sequence = (), done: set[str] | None = None, in_flight: int | None = None) -> None:
    """Run every task of the plan not in ``done`` (task ids; default: the journal).

    job: a `Job`, or the jobs of one run's lattices (a run's tiers: plans of distinct
    scopes, their task ids scoped, "tier2/forward:5"), whose pending specs go to the
    executor in one call, each plan's in its order, plan after plan: the executor starts
    the ready task that comes first, so each lattice's tasks start in its plan's order
    (each within its disk bound, `Plan.disk_bytes`; the run within their sum), and a
    cluster runs the tiers side by side.

    scheduler: "dask" (dask's local threaded scheduler, ready tasks started in the plan's
    order; the default), "threads" (bigbn's own thread pool, the same order), "sync"
    (plain loop, the specification),
    "processes" (a local dask.distributed cluster of ``workers`` processes), a scheduler
    address "tcp://HOST:PORT" / "tls://..." or a ``distributed.Client``. callbacks:
    objects with ``on_task_start(event)`` / ``on_task_end(event)`` (bigbn.engine.executors).
    in_flight: on a cluster, tasks submitted at once in the plan's order (a disk budget).
    Each spec runs through `JournaledTask(job)`.
    """
    jobs = (job,) if isinstance(job, Job) else tuple(job)
    if len({j.plan.scope for j in jobs}) != len(jobs):
        raise EngineError("execute: two plans of the same scope in one run (bug)")
    job = jobs[0]  # the run's workdir (any scope: one journal, one tables folder)
    if done is None:
        done = set(job.workdir.journal())
    specs = [s for j in jobs for s in j.plan.tasks() if s.id not in done]
    fn = JournaledTask(job) if len(jobs) == 1 else JournaledTasks(jobs)
    run_specs(specs, fn, scheduler=scheduler, workers=workers, callbacks=callbacks,
              visible=job.workdir.root, where="work directory", in_flight=in_flight)
