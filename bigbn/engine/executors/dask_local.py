"""dask's local threaded scheduler (``dask.threaded.get``) on a private pool of ``workers``
threads (numba kernels release the GIL).

The specs become a dask graph, one task per spec (``dask.task_spec.Task``) taking the
keys of its pending dependencies: dask tracks
the dependencies, starts a task when its inputs are done, at most ``workers`` at a time,
and calls back on the calling thread before and after each task (its ``pretask`` and
``posttask`` callbacks, turned into our events).

Which ready task starts next matters for disk: `plan.live_chunks(h, workers)` assumes
it is always the one first in the plan's order, as in the sync and threads executors.
dask's own choice is the most recently readied task, ties broken by ``dask.order``, a
static order made to free memory, which knows nothing of the release tasks that free
disk (at h = 8 it would keep up to 96 chunks of B where the plan counts 88). So the
plan's order is given to dask as a priority: after every task, in its ``posttask``
callback (and once in ``start_state``), the scheduler's list of ready keys is sorted so
that the one it pops next, the last, is the one first in the plan's order. That list is
the documented scheduler state the callbacks receive; if a dask release ever changes
its form, the run stops at once (`EngineError`) instead of running in another order.

The plan goes to dask in windows of at most `WINDOW` tasks, one ``get`` each, in the
order the plan runs them on one worker (the order `Ready` pops them: a topological order,
so a window's dependencies on earlier windows are done and are dropped from its graph).
``dask.local.get_async`` orders every graph it is given with ``dask.order``, whose
bookkeeping grows faster than the graph (sets of the roots each task connects to): on a
budgeted plan of 12 000 tasks it held 684 MiB, and a run's peak RSS went from 251 MiB
(`--scheduler threads`) to 1026 MiB. Over windows it stays small, and none of it is used:
the priorities above replace dask's order. A window starts when the one before has
ended, so for the last few tasks of each a worker may wait; with thousands of tasks a
window that is a few in a thousand of a run's time (docs/benchmarks.md).

A failing task makes dask raise at once; no new task starts after that, and leaving
the pool waits for the ones in flight, so none is still writing when the caller
releases the work directory.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Callable, Sequence

from bigbn.errors import EngineError
from bigbn.plan.lattice import TaskSpec
from bigbn.engine.executors import Callback, Ready, emit_end, emit_start


def graph(specs: Sequence[TaskSpec], fn: Callable[[TaskSpec], object]) -> dict:
    """The dask graph of the specs: id -> Task(id, call, *refs to its pending dependencies).

    Tasks are named by their journal ids (scoped: "tier2/forward:5", unique over a run's
    lattices); a spec's deps are keys of its own plan, named by its scope and the key, as
    `Ready` names them. The callable holds the spec (dask does not look inside it); the
    dependencies' results (their journal records) are passed to it and ignored: they only
    order the tasks.
    """
    from dask.task_spec import Task, TaskRef

    ids: dict[str, dict[tuple, str]] = {}
    for s in specs:
        ids.setdefault(s.scope, {})[s.key] = s.id
    return {s.id: Task(s.id, partial(_call, fn, s),
                       *(TaskRef(ids[s.scope][d]) for d in s.deps if d in ids[s.scope]))
            for s in specs}


def _call(fn, spec, *_deps):
    return fn(spec)


class PlanOrder:
    """The dask callbacks: events, and ready tasks popped in the plan's order."""

    def __init__(self, specs: Sequence[TaskSpec], callbacks: Sequence[Callback]):
        self.rank = {s.id: -i for i, s in enumerate(specs)}  # dask pops the last: the largest
        self.spec = {s.id: s for s in specs}
        self.callbacks = callbacks
        self.started: dict[str, float] = {}

    def sort(self, state) -> None:
        ready = state.get("ready") if isinstance(state, dict) else None
        if not isinstance(ready, list):
            import dask

            raise EngineError(f"dask {dask.__version__}'s local scheduler keeps its ready tasks "
                              "in an unknown form: use --scheduler threads")
        ready.sort(key=self.rank.__getitem__)

    def start_state(self, dsk, state) -> None:
        self.sort(state)

    def pretask(self, key, dsk, state) -> None:
        s = self.spec[key]
        self.started[key] = emit_start(self.callbacks, s.key, s.scope)

    def posttask(self, key, result, dsk, state, worker_id) -> None:
        self.sort(state)  # finish_task has just appended the tasks this one made ready
        s = self.spec[key]
        emit_end(self.callbacks, s.key, result, self.started.pop(key), s.scope)

    def as_dask(self) -> tuple:
        """(start, start_state, pretask, posttask, finish): dask's callback tuple."""
        return (None, self.start_state, self.pretask, self.posttask, None)


def run(specs: Sequence[TaskSpec], fn: Callable[[TaskSpec], object], *, workers: int | None = None,
        callbacks: Sequence[Callback] = ()) -> None:
    """Run ``fn(spec)`` for every spec on dask's threaded scheduler, ``workers`` at a time
    (default: all cores), the ready one first in the plan's order starting next."""
    from dask.threaded import get

    specs = list(specs)
    parts = windows(specs, WINDOW)  # our error for a cycle (dask's would name dask), first
    if not specs:
        return
    workers = workers or os.cpu_count() or 1
    order = PlanOrder(specs, callbacks)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bigbn") as pool:
        # leaving the pool (an error, KeyboardInterrupt) waits for the tasks in flight
        for part in parts:
            get(graph(part, fn), [s.id for s in part], pool=pool, callbacks=[order.as_dask()],
                chunksize=1, rerun_exceptions_locally=False)


WINDOW = 1024
"""Tasks of one dask graph: `dask.order`'s bookkeeping is bounded by its size."""


def windows(specs: Sequence[TaskSpec], size: int) -> list[list[TaskSpec]]:
    """The specs in the order they run on one worker (`Ready`), cut into runs of at most
    ``size``: every dependency of a window's task is in that window or an earlier one."""
    order = _one_worker_order(specs)
    return [order[i:i + size] for i in range(0, len(order), size)]


def _one_worker_order(specs: Sequence[TaskSpec]) -> list[TaskSpec]:
    ready, out = Ready(specs), []
    while ready:
        s = ready.pop()
        out.append(s)
        ready.finish(s.id)
    ready.check_done()
    return out
