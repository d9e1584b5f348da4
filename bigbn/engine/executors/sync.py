"""The specification executor: one task at a time, each after its dependencies."""

from __future__ import annotations

from typing import Callable, Sequence

from bigbn.plan.lattice import TaskSpec
from bigbn.engine.executors import Callback, Ready, emit_end, emit_start


def run(specs: Sequence[TaskSpec], fn: Callable[[TaskSpec], object], *,
        callbacks: Sequence[Callback] = ()) -> None:
    """Run ``fn(spec)`` for every spec in dependency order (the plan's order among ready ones)."""
    ready = Ready(specs)
    while ready:
        spec = ready.pop()
        start = emit_start(callbacks, spec.key, spec.scope)
        result = fn(spec)
        ready.finish(spec.id)
        emit_end(callbacks, spec.key, result, start, spec.scope)
    ready.check_done()
