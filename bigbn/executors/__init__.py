"""Executors: run a plan's task specs in dependency order (rechunker's ``executors/``).

An executor gets the pending `TaskSpec`s (their ``deps`` name other specs; a dependency
that is not pending counts as done) and a task function ``fn(spec) -> result`` (picklable
for the distributed executor), runs every spec once, after its pending dependencies, and
reports each task to callback objects (cubed's ``Callback``): ``on_task_start(event)``
before and ``on_task_end(event)`` after it, always on the calling thread. If a task fails,
no new task starts, the ones in flight are waited for, and the first error is raised: no
task of a failed run may still be writing when a resume starts.

- `sync`: a plain loop, one task at a time: the specification the others must match.
- `dask_local`: dask's threaded scheduler on a private thread pool (the default; numba
  kernels release the GIL), ready tasks started in the plan's order.
- `threads`: bigbn's own thread pool, the same order without dask.
- `distributed`: a dask.distributed cluster (imported only when used).

Nothing here knows what a task computes; the engine (bigbn/engine.py) provides ``fn``.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..errors import EngineError
from ..plan import TaskSpec


@dataclass(frozen=True)
class TaskStartEvent:
    """A task was handed to a worker (``time``: seconds since the epoch)."""

    key: tuple
    time: float


@dataclass(frozen=True)
class TaskEndEvent:
    """A task finished; ``result`` is what the task function returned."""

    key: tuple
    result: Any
    start: float
    end: float


class Callback:
    """Base class of executor callbacks; override what you need."""

    def on_task_start(self, event: TaskStartEvent) -> None:
        pass

    def on_task_end(self, event: TaskEndEvent) -> None:
        pass


class Ready:
    """Which pending specs may run: their pending dependencies have all finished.

    ``pop()`` gives the ready spec that comes first in the plan's order (so lower chunk
    levels go first); ``finish(key)`` releases its dependants.
    """

    def __init__(self, specs: Sequence[TaskSpec]):
        self.order = {s.key: i for i, s in enumerate(specs)}
        self.spec = {s.key: s for s in specs}
        self.waiting = {s.key: sum(1 for d in s.deps if d in self.order) for s in specs}
        self.dependants: dict[tuple, list[tuple]] = {s.key: [] for s in specs}
        for s in specs:
            for d in s.deps:
                if d in self.order:
                    self.dependants[d].append(s.key)
        self.heap = [self.order[k] for k, w in self.waiting.items() if w == 0]
        heapq.heapify(self.heap)
        self.keys = [s.key for s in specs]
        self.left = len(specs)

    def __bool__(self) -> bool:
        return bool(self.heap)

    def pop(self) -> TaskSpec:
        return self.spec[self.keys[heapq.heappop(self.heap)]]

    def finish(self, key: tuple) -> None:
        self.left -= 1
        for k in self.dependants[key]:
            self.waiting[k] -= 1
            if self.waiting[k] == 0:
                heapq.heappush(self.heap, self.order[k])

    def check_done(self) -> None:
        if self.left:
            stuck = next(k for k, w in self.waiting.items() if w > 0)
            raise EngineError(f"{self.left} tasks never became ready, e.g. {stuck} (cycle in the plan?)")


def emit_start(callbacks: Iterable[Callback], key: tuple) -> float:
    t = time.time()
    for cb in callbacks:
        cb.on_task_start(TaskStartEvent(key, t))
    return t


def emit_end(callbacks: Iterable[Callback], key: tuple, result, start: float) -> None:
    event = TaskEndEvent(key, result, start, time.time())
    for cb in callbacks:
        cb.on_task_end(event)


__all__ = ["Callback", "Ready", "TaskEndEvent", "TaskStartEvent"]
