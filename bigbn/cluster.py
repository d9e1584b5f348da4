"""Run the engine's task graph on a dask.distributed cluster (DESIGN.md, "Scheduling").

The graph is the one `engine.build_graph` makes for the local executors; only the way it
is driven differs. The client submits a task as soon as every task it depends on has
finished, and it releases each future the moment it finishes:

- Tasks pass only keys. The `Job` (it holds beta, ≈ 1 MB at n = 32, k = 3) is scattered
  once to every worker; each task is ``run_task(job, key)``, and its result is its task
  id (a short string). Tables flow through zarr in the shared work directory.
- No finished result is kept on a worker. Had the whole graph been submitted at once
  (``client.get(dsk, keys, sync=False)``), the tiny result of every finished task on a
  worker that dies would count as lost data, and the scheduler would run those finished
  tasks again. Here a lost worker costs only the tasks it was running: the scheduler
  reschedules them (up to ``distributed.scheduler.allowed-failures`` deaths per task,
  default 3) and, being idempotent, they overwrite their chunks and append their journal
  line again.
- ``retries`` covers exceptions raised inside a task (e.g. a transient I/O error on a
  network file system); it does not count worker deaths.

Every task appends its own line to ``WORKDIR/journal.jsonl`` (one O_APPEND write, fsynced),
as with the local executors. That is safe for processes on one machine with a local file
system; see docs/cluster.md for shared file systems.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterator

from .engine import Job, TaskCall, build_graph, run_task
from .errors import EngineError, OptionError, WorkdirError


def run_distributed(job: Job, address_or_client, *, on_task: Callable[[str], None] | None = None,
                    hooks=None, retries: int = 3, done: set[str] | None = None) -> None:
    """Run every task of ``job`` not in ``done`` (default: the journal) on a dask.distributed
    cluster.

    address_or_client: a scheduler address ("tcp://host:8786") or a ``distributed.Client``
    (used as is and left open). ``job.workdir`` must be a path every worker sees.
    on_task(task_id) is called on this process as each task finishes. hooks (tests only)
    is called as ``hooks(key)`` on the worker before each task; it travels to the workers,
    so it must be picklable (a module-level function or a functools.partial of one).
    retries: extra attempts for a task that raises.

    If a task fails for good (or the caller is interrupted), the pending tasks are
    cancelled and this returns (raising) only once no task of this run is still
    executing on a worker, so a resume never races a straggler's writes.
    """
    if retries < 0:
        raise OptionError(f"retries = {retries} must be 0 or more")
    client, owned = _connect(address_or_client)
    try:
        _check_workdir_visible(client, job)
        if done is None:
            done = set(job.workdir.journal())
        dsk, _ = build_graph(job, done, hooks=hooks)
        _drive(client, job, dsk, on_task, retries)
    finally:
        if owned:
            client.close()


@contextmanager
def local_cluster(workers: int, threads_per_worker: int = 1,
                  memory_limit: str | int | None = "auto") -> Iterator:
    """A ``distributed.Client`` on a LocalCluster of ``workers`` processes (closed on exit).

    memory_limit: per worker process, bytes or a string like "4GiB"; "auto" shares the
    machine's memory equally; None means no limit.
    """
    from distributed import Client, LocalCluster

    if workers < 1:
        raise OptionError(f"workers = {workers} must be at least 1")
    if threads_per_worker < 1:
        raise OptionError(f"threads per worker = {threads_per_worker} must be at least 1")
    with LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                      memory_limit=memory_limit, dashboard_address=None,
                      # the scheduler's HTTP endpoints (health, metrics) on a free port
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}) as cluster:
        with Client(cluster) as client:
            yield client


# ----------------------------------------------------------------------------- internals

def _connect(address_or_client):
    """(client, whether we opened it)."""
    from distributed import Client

    if isinstance(address_or_client, Client):
        return address_or_client, False
    if not isinstance(address_or_client, str) or not address_or_client:
        raise OptionError(f"scheduler {address_or_client!r}: give an address like tcp://host:8786 "
                          "or a distributed.Client")
    try:
        return Client(address_or_client, timeout="30s"), True
    except OSError as e:
        raise OptionError(f"cannot reach the dask scheduler at {address_or_client}: {e}") from None


def _tables_exist(path: str) -> bool:
    return os.path.isdir(path)


def _check_workdir_visible(client, job: Job) -> None:
    """Fail early, naming the worker, if a connected worker cannot see the tables."""
    tables = str(job.workdir.tables.resolve())
    seen = client.run(_tables_exist, tables)
    blind = sorted(w for w, ok in seen.items() if not ok)
    if blind:
        raise WorkdirError(f"work directory {job.workdir.root} is not visible on worker(s) "
                           f"{', '.join(blind)}: put it on a file system every worker mounts "
                           "at the same path")


def _drive(client, job: Job, dsk: dict, on_task, retries: int) -> None:
    """Run the graph ``dsk`` (values: a constant, or (callable, *dependency keys)).

    TaskCall nodes run on the cluster as ``run_task(job, key, hooks=...)``; other nodes
    (the stage barrier) are evaluated here. Ready tasks are submitted in graph order
    with decreasing priority, so lower chunk levels run first.
    """
    from distributed import as_completed

    deps: dict[str, list[str]] = {}
    dependants: dict[str, list[str]] = {k: [] for k in dsk}
    for k, v in dsk.items():
        d = list(v[1:]) if _is_task(v) else []
        missing = [x for x in d if x not in dsk]
        if missing:
            raise EngineError(f"graph node {k} depends on unknown keys {missing} (bug)")
        deps[k] = d
        for x in d:
            dependants[x].append(k)
    waiting = {k: len(d) for k, d in deps.items()}
    results: dict[str, object] = {}
    order = {k: i for i, k in enumerate(dsk)}
    token = uuid.uuid4().hex[:8]

    [job_future] = client.scatter([job], broadcast=True, hash=False)
    running: dict = {}  # future -> graph key
    ready = deque(k for k, n in waiting.items() if n == 0)
    ac = as_completed(loop=client.loop)
    try:
        while ready or running:
            while ready:
                k = ready.popleft()
                v = dsk[k]
                call = v[0] if _is_task(v) else None
                if isinstance(call, TaskCall):
                    # dask-style key ("forward-<token>", 5): the dashboard groups by stage
                    fut = client.submit(run_task, job_future, call.key, hooks=call.hooks,
                                        key=(f"{call.key[0]}-{token}", *call.key[1:]),
                                        retries=retries, priority=-order[k])
                    running[fut] = k
                    ac.add(fut)
                    continue
                results[k] = call(*(results[d] for d in deps[k])) if call is not None else v
                _release(k, dependants, waiting, ready)
            if not running:
                break
            fut = next(ac)
            k = running.pop(fut)
            if fut.status == "error":
                raise fut.exception()
            if fut.status != "finished":
                raise EngineError(f"task {k} was {fut.status} on the cluster (every worker lost? "
                                  "run again to resume from the journal)")
            results[k] = fut.result()
            fut.release()
            if on_task is not None:
                on_task(results[k])
            _release(k, dependants, waiting, ready)
    finally:
        for fut in running:
            fut.cancel()
        ac.clear()
        job_future.release()
        if running:  # leaving early: cancelled tasks that already started keep running
            _wait_until_stopped(client, token)
    left = [k for k in dsk if k not in results]
    if left:
        raise EngineError(f"{len(left)} graph nodes never became ready, e.g. {left[0]} (cycle?)")


def _executing_keys(token: str, dask_worker=None) -> list[str]:
    """On a worker: keys of this run still executing (a cancelled task runs to its end)."""
    return [str(ts.key) for ts in dask_worker.state.executing
            if isinstance(ts.key, tuple) and str(ts.key[0]).endswith(token)]


def _wait_until_stopped(client, token: str, poll: float = 0.2) -> None:
    while True:
        try:
            busy = client.run(_executing_keys, token, on_error="ignore")
        except Exception:  # scheduler gone: nothing more can be learned or done
            return
        if not any(busy.values()):
            return
        time.sleep(poll)


def _is_task(v) -> bool:
    return isinstance(v, tuple) and len(v) > 0 and callable(v[0])


def _release(k: str, dependants: dict, waiting: dict, ready: deque) -> None:
    for d in dependants[k]:
        waiting[d] -= 1
        if waiting[d] == 0:
            ready.append(d)
