"""Local threads: a private pool of ``workers`` threads (numba kernels release the GIL).

At most ``workers`` tasks are in flight; the next one is always the ready task that
comes first in the plan's order, so the lattice is worked level by level.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Sequence

from bigbn.plan.lattice import TaskSpec
from bigbn.engine.executors import Callback, Ready, emit_end, emit_start


def run(specs: Sequence[TaskSpec], fn: Callable[[TaskSpec], object], *, workers: int | None = None,
        callbacks: Sequence[Callback] = ()) -> None:
    workers = workers or os.cpu_count() or 1
    ready = Ready(specs)
    running: dict = {}  # future -> (spec, start)
    error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bigbn") as pool:
        try:
            while ready or running:
                while ready and len(running) < workers and error is None:
                    spec = ready.pop()
                    running[pool.submit(fn, spec)] = (spec, emit_start(callbacks, spec.key, spec.scope))
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    spec, start = running.pop(fut)
                    if fut.exception() is not None:
                        error = error or fut.exception()
                        continue
                    ready.finish(spec.id)
                    emit_end(callbacks, spec.key, fut.result(), start, spec.scope)
                if error is not None and not running:
                    raise error
        finally:
            # Leaving early (an error, KeyboardInterrupt): wait for the tasks in flight,
            # so that none is still writing when the caller releases the workdir.
            wait(running)
    ready.check_done()
