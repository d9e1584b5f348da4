"""Executors: run a plan's task specs in dependency order (rechunker's ``executors/``).

An executor gets the pending `TaskSpec`s, of one plan or of several (a run's tiers), and
a task function ``fn(spec) -> result`` (picklable for the distributed executor). A spec
is named by its journal id ``spec.id`` (scoped, "tier2/forward:5", so unique over a run)
and waits for its ``deps`` (keys of its own plan, so named by its scope and the key; a
dependency that is not pending counts as done). It runs every spec once, after its
pending dependencies, and reports each task to callback objects (cubed's ``Callback``):
``on_task_start(event)`` before and ``on_task_end(event)`` after it, always on the
calling thread. If a task fails,
no new task starts, the ones in flight are waited for, and the first error is raised: no
task of a failed run may still be writing when a resume starts.

- `sync`: a plain loop, one task at a time: the specification the others must match.
- `dask_local`: dask's threaded scheduler on a private thread pool (the default; numba
  kernels release the GIL), ready tasks started in the plan's order.
- `threads`: bigbn's own thread pool, the same order without dask.
- `distributed`: a dask.distributed cluster (imported only when used).

Nothing here knows what a task computes; the engine (bigbn/engine/tasks.py) provides ``fn``.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from bigbn.errors import EngineError
from bigbn.plan.lattice import TaskSpec


@dataclass(frozen=True)
class TaskStartEvent:
    """A task was handed to a worker (``time``: seconds since the epoch); ``scope``: its
    plan's scope ("" for a run without tiers, "tier2" for a tier's lattice)."""

    key: tuple
    time: float
    scope: str = ""


@dataclass(frozen=True)
class TaskEndEvent:
    """A task finished; ``result`` is what the task function returned."""

    key: tuple
    result: Any
    start: float
    end: float
    scope: str = ""


class Callback:
    """Base class of executor callbacks; override what you need."""

    def on_task_start(self, event: TaskStartEvent) -> None:
        pass

    def on_task_end(self, event: TaskEndEvent) -> None:
        pass


class Ready:
    """Which pending specs may run: their pending dependencies have all finished.

    ``pop()`` gives the ready spec that comes first in the specs' order (the plan's, so
    lower chunk levels go first; of a run's tiers, each tier's in its plan's order);
    ``finish(spec.id)`` releases its dependants. Specs are named by their ids.
    """

    def __init__(self, specs: Sequence[TaskSpec]):
        self.keys = [s.id for s in specs]
        self.order = {t: i for i, t in enumerate(self.keys)}
        self.spec = dict(zip(self.keys, specs))
        # a spec's deps are keys of its own plan: its scope and the key name the id
        ids: dict[str, dict[tuple, str]] = {}
        for t, s in zip(self.keys, specs):
            ids.setdefault(s.scope, {})[s.key] = t
        deps = {}
        for t, s in zip(self.keys, specs):
            own = ids[s.scope]
            deps[t] = [own[d] for d in s.deps if d in own]
        self.waiting = {t: len(d) for t, d in deps.items()}
        self.dependants: dict[str, list[str]] = {t: [] for t in self.keys}
        for t, ds in deps.items():
            for d in ds:
                self.dependants[d].append(t)
        self.heap = [self.order[k] for k, w in self.waiting.items() if w == 0]
        heapq.heapify(self.heap)
        self.left = len(specs)

    def __bool__(self) -> bool:
        return bool(self.heap)

    def pop(self) -> TaskSpec:
        return self.spec[self.keys[heapq.heappop(self.heap)]]

    def finish(self, key: str) -> None:
        self.left -= 1
        for k in self.dependants[key]:
            self.waiting[k] -= 1
            if self.waiting[k] == 0:
                heapq.heappush(self.heap, self.order[k])

    def check_done(self) -> None:
        if self.left:
            stuck = next(k for k, w in self.waiting.items() if w > 0)
            raise EngineError(f"{self.left} tasks never became ready, e.g. {stuck} (cycle in the plan?)")


def emit_start(callbacks: Iterable[Callback], key: tuple, scope: str = "") -> float:
    t = time.time()
    for cb in callbacks:
        cb.on_task_start(TaskStartEvent(key, t, scope))
    return t


def emit_end(callbacks: Iterable[Callback], key: tuple, result, start: float, scope: str = "") -> None:
    event = TaskEndEvent(key, result, start, time.time(), scope)
    for cb in callbacks:
        cb.on_task_end(event)


__all__ = ["Callback", "Ready", "TaskEndEvent", "TaskStartEvent"]

