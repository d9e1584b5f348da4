"""The engine: chunk tasks of every stage and the executors that run them.

A task is a plain function of (job, key, *dependency results): it reads the chunks it
needs from the work directory's zarr tables, calls one numba kernel per chunk, writes its
output chunk (fsynced) and appends its journal line. Tasks pass only keys; data flows
through zarr, so the scheduler never holds a table (DESIGN.md, "Scheduling").

Executors (the plan is the same for all):
- ``"sync"``     plain Python loop in dependency order: the specification.
- ``"threads"``  dask's local threaded scheduler (numba kernels release the GIL).
- a ``distributed.Client`` or scheduler address: the same graph on a dask cluster.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import kernels as K
from .errors import EngineError, OptionError
from .families import squeeze
from .plan import Plan, task_id
from .workdir import Workdir, checksum

NEG_INF = -np.inf


@dataclass(frozen=True)
class Job:
    """Everything a task needs: where the tables are, the plan, and beta.

    beta: float64 (n, F), log rho_i(G) + log p(x_i | x_G) for the families of plan.families.
    """

    workdir: Workdir
    plan: Plan
    beta: np.ndarray = field(repr=False)


# ----------------------------------------------------------------------------- alpha access

def alpha_span(job: Job, node: int, first_chunk: int, nchunks: int) -> np.ndarray:
    """alpha_node on alpha chunks first_chunk .. first_chunk+nchunks-1 (2^(c-1) each)."""
    p = job.plan
    size = p.alpha_chunk_size
    if p.alpha_mode == "store":
        return job.workdir.read("alpha", (node, slice(first_chunk * size, (first_chunk + nchunks) * size)))
    out = np.empty(nchunks * size)
    K._alpha_chunks(job.beta, p.families, node, first_chunk, p.c - 1, p.small_masks, out)
    return out


def alpha_low_block(job: Job, H: int) -> np.ndarray:
    """alpha_i on alpha chunk H for every low node i < c: float64 (c, 2^(c-1))."""
    p = job.plan
    out = np.empty((p.c, p.alpha_chunk_size))
    for i in range(p.c):
        out[i] = alpha_span(job, i, H, 1)
    return out


# ----------------------------------------------------------------------------- tasks

def task_output(p: Plan, key: tuple) -> tuple[str, object]:
    """(table name, index) of the region a task writes; its journal CRC covers exactly this."""
    stage = key[0]
    if stage == "alpha":
        _, node, first = key
        lo = first * p.alpha_chunk_size
        run = min(p.alpha_run, p.n_chunks - first)
        return "alpha", (node, slice(lo, lo + run * p.alpha_chunk_size))
    if stage in ("forward", "backward"):
        return stage, _chunk_slice(p, key[1])
    if stage == "gamma":
        return "gamma_parts", (slice(key[1], key[1] + 1),)
    if stage == "edges":
        return "posterior", slice(None)
    if stage == "scores":
        return "beta", slice(None)
    raise ValueError(stage)


def verify(job: Job, records: dict[str, dict]) -> tuple[set[str], list[str]]:
    """Check every journaled task's output against its CRC.

    Returns (ids of intact tasks, ids whose chunks are missing, truncated or changed).
    A bad task is simply run again: tasks are deterministic, so whatever already used
    its (then intact) output stays valid.
    """
    good, bad = set(), []
    for tid, rec in records.items():
        key = _parse_task_id(tid)
        if key is None or key[0] == "scores":
            continue
        (good.add(tid) if intact(job, key, rec) else bad.append(tid))
    return good, bad


def intact(job: Job, key: tuple, rec: dict) -> bool:
    """Whether the region task ``key`` wrote still has the CRC its journal record holds
    (missing, truncated or unreadable chunks count as not intact)."""
    name, index = task_output(job.plan, key)
    try:
        return checksum(job.workdir.read(name, index)) == rec.get("crc")
    except Exception:  # noqa: BLE001 - a truncated or unreadable chunk is just "bad"
        return False


def _parse_task_id(tid: str):
    parts = tid.split(":")
    try:
        return (parts[0], *(int(x) for x in parts[1:]))
    except ValueError:
        return None


def _task_alpha(job: Job, key: tuple) -> dict:
    _, node, first = key
    p = job.plan
    run = min(p.alpha_run, p.n_chunks - first)
    out = np.empty(run * p.alpha_chunk_size)
    K._alpha_chunks(job.beta, p.families, node, first, p.c - 1, p.small_masks, out)
    name, index = task_output(p, key)
    return {"crc": job.workdir.write(name, index, out, [(node, first + t) for t in range(run)])}


def _chunk_slice(p: Plan, H: int) -> slice:
    return slice(H * p.chunk_size, (H + 1) * p.chunk_size)


def _task_forward(job: Job, key: tuple) -> dict:
    H = key[1]
    p, wd = job.plan, job.workdir
    acc = np.full(p.chunk_size, NEG_INF)
    if H == 0:
        acc[0] = 0.0  # L(∅) = 1
    for b in range(p.h):
        if H >> b & 1:
            G = H ^ (1 << b)
            a = alpha_span(job, p.c + b, 2 * squeeze(G, b), 2)
            K._lae_into(acc, a, wd.read("forward", _chunk_slice(p, G)))
    out = np.empty(p.chunk_size)
    K._forward_chunk(acc, alpha_low_block(job, H), out)
    return {"crc": wd.write(*task_output(p, key), out, [(H,)])}


def _task_backward(job: Job, key: tuple) -> dict:
    H = key[1]
    p, wd = job.plan, job.workdir
    acc = np.full(p.chunk_size, NEG_INF)
    if H == p.n_chunks - 1:
        acc[-1] = 0.0  # B(V) = R(∅) = 1
    for b in range(p.h):
        if not H >> b & 1:
            G = H | (1 << b)
            a = alpha_span(job, p.c + b, 2 * squeeze(H, b), 2)
            K._lae_into(acc, a, wd.read("backward", _chunk_slice(p, G)))
    out = np.empty(p.chunk_size)
    K._backward_chunk(acc, alpha_low_block(job, H), out)
    return {"crc": wd.write(*task_output(p, key), out, [(H,)])}


def _task_gamma(job: Job, key: tuple) -> dict:
    """Partial gamma_v of every node v from chunk H of s_v(S) = L(S) + B(S+v).

    Low nodes v < c: S and S+v both lie in chunk H (half of its offsets).
    High nodes v = c+b with b ∉ H: S in forward chunk H, S+v in backward chunk H+b.
    """
    H = key[1]
    p, wd = job.plan, job.workdir
    fam, small = p.families, p.small_masks
    fwd = wd.read("forward", _chunk_slice(p, H))
    bwd = wd.read("backward", _chunk_slice(p, H))
    part = np.full((p.n, p.n_families), NEG_INF)
    s = np.empty(p.chunk_size)
    half = s[: p.alpha_chunk_size]
    for v in range(p.c):
        K._gather_low(fwd, bwd, v, half)
        K._gamma_partial(half, p.c - 1, H, fam, small, part[v])
    for b in range(p.h):
        if not H >> b & 1:
            K._add_into(s, fwd, wd.read("backward", _chunk_slice(p, H | (1 << b))))
            K._gamma_partial(s, p.c, squeeze(H, b), fam, small, part[p.c + b])
    return {"crc": wd.write(*task_output(p, key), part[None], [(H, 0, 0)])}


def _task_edges(job: Job, key: tuple) -> dict:
    """gamma_v = logsumexp of the partials; p(u→v) = Σ_{G∋u} β_v(G) γ_v(G) / L(V)."""
    p, wd = job.plan, job.workdir
    gamma = np.full((p.n, p.n_families), NEG_INF)
    pair = np.empty((2, p.n_families))
    for H in range(p.n_chunks):
        part = wd.read("gamma_parts", H)
        for v in range(p.n):
            pair[0] = gamma[v]
            pair[1] = part[v]
            K._logsumexp_rows(pair, gamma[v])
    log_px = float(wd.read("forward", slice((1 << p.n) - 1, 1 << p.n))[0])
    log_px_b = float(wd.read("backward", slice(0, 1))[0])
    _check_finite(log_px, "log p(x) = L(V)")
    _check_close(log_px, log_px_b, "L(V) and R(V) (forward and backward sums)")
    post = edge_posteriors(job.beta, gamma, p, log_px)
    wd.write("gamma", slice(None), gamma, [(0, 0)])
    crc = wd.write(*task_output(p, key), post, [(0, 0)])
    return {"crc": crc, "log_px": log_px}


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


_TASKS: dict[str, Callable[[Job, tuple], dict]] = {
    "alpha": _task_alpha,
    "forward": _task_forward,
    "backward": _task_backward,
    "gamma": _task_gamma,
    "edges": _task_edges,
}


def run_task(job: Job, key: tuple, *deps, hooks=None) -> str:
    """Run one task, journal it, return its id (dependency results are ignored: they only
    order the graph). ``hooks`` (tests only) may raise to inject faults."""
    tid = task_id(key)
    if hooks is not None:
        hooks(key)
    start, t0 = time.time(), time.perf_counter()
    rec = _TASKS[key[0]](job, key)
    rec.update(task=tid, stage=key[0], seconds=round(time.perf_counter() - t0, 4),
               start=start, end=time.time(), pid=os.getpid())
    job.workdir.journal_append(rec)
    return tid


# ----------------------------------------------------------------------------- graph

COMPUTE_STAGES = ("alpha", "forward", "backward", "gamma", "edges")


def build_graph(job: Job, done: set[str], hooks=None) -> tuple[dict, list[str]]:
    """A dask graph (plain dict) of every task not in ``done``; returns (graph, keys to get).

    Keys are task ids ("forward:5"); finished tasks become constants so dependants run
    at once. Stage barriers: forward and backward wait for the whole alpha stage. The
    keys to get are *all* pending tasks: dask culls what the requested keys do not need,
    so asking only for "edges" would skip a corrupt chunk whose dependants are done.
    """
    p = job.plan
    dsk: dict = {}
    alpha_ids = [task_id(k) for k in p.stage_tasks("alpha")]
    dsk["barrier:alpha"] = (_barrier, *alpha_ids)
    pending = []
    for stage in COMPUTE_STAGES:
        for key in p.stage_tasks(stage):
            tid = task_id(key)
            if tid in done:
                dsk[tid] = tid + ":done"
                continue
            deps = [task_id(d) for d in p.task_deps(key)]
            if stage in ("forward", "backward"):
                deps.append("barrier:alpha")
            dsk[tid] = (TaskCall(job, key, hooks), *deps)
            pending.append(tid)
    return dsk, pending


@dataclass(frozen=True)
class TaskCall:
    """A graph node's callable: carries the job and key so dask sees only dependency
    keys as arguments (dask would read a string inside a literal key as a reference)."""

    job: Job
    key: tuple
    hooks: object = None

    def __call__(self, *deps) -> str:
        return run_task(self.job, self.key, *deps, hooks=self.hooks)


def _barrier(*args):
    return None


def run_sync(job: Job, done: set[str], on_task=None, hooks=None) -> None:
    """The specification executor: every pending task in plan order, one at a time."""
    for stage in COMPUTE_STAGES:
        for key in job.plan.stage_tasks(stage):
            tid = task_id(key)
            if tid in done:
                continue
            run_task(job, key, hooks=hooks)
            if on_task is not None:
                on_task(tid)


def execute(job: Job, *, scheduler: str = "threads", workers: int | None = None,
            on_task=None, hooks=None, done: set[str] | None = None) -> None:
    """Run every task not in ``done`` (default: the journal).

    scheduler: "sync" (plain loop, the specification), "threads" (dask's local threaded
    scheduler), "processes" (a local dask.distributed cluster of ``workers`` processes),
    a scheduler address "tcp://HOST:PORT" / "tls://..." or a ``distributed.Client``.
    """
    if done is None:
        done = set(job.workdir.journal())
    if scheduler == "sync":
        run_sync(job, done, on_task=on_task, hooks=hooks)
        return
    if scheduler == "threads":
        import dask.threaded
        from dask.callbacks import Callback

        dsk, keys = build_graph(job, done, hooks=hooks)

        class _Progress(Callback):
            def _posttask(self, key, result, dsk, state, id):
                if on_task is not None and isinstance(result, str) and not key.startswith("barrier"):
                    on_task(result)

        # A private pool, shut down (waiting for tasks in flight) before any error
        # propagates: no task of a failed run may still be writing when the lock is
        # released and a resume starts.
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers or None)
        try:
            with _Progress():
                dask.threaded.get(dsk, keys, pool=pool)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    if scheduler == "processes":
        from .cluster import local_cluster, run_distributed

        with local_cluster(workers or os.cpu_count() or 1) as client:
            run_distributed(job, client, on_task=on_task, hooks=hooks, done=done)
        return
    if not isinstance(scheduler, str) or scheduler.startswith(("tcp://", "tls://", "inproc://")):
        from .cluster import run_distributed

        run_distributed(job, scheduler, on_task=on_task, hooks=hooks, done=done)
        return
    raise OptionError(f"unknown scheduler {scheduler!r}: use threads, sync, processes or tcp://HOST:PORT")
