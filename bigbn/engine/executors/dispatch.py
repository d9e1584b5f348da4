"""Which executor runs a list of specs: one choice for the engine's runs and for the tasks
after a run (samples, effects), so every scheduler name means the same everywhere."""

from __future__ import annotations

from typing import Sequence

from bigbn.errors import OptionError
from bigbn.plan.lattice import TaskSpec
from bigbn.engine.executors import Callback


SCHEDULERS = "dask, threads, sync, processes or tcp://HOST:PORT"


def run(specs: Sequence[TaskSpec], fn, *, scheduler="dask", workers: int | None = None,
        callbacks: Sequence[Callback] = (), visible=None, where: str = "work directory",
        in_flight: int | None = None) -> None:
    """Hand ``specs`` and the task function ``fn`` to one executor: "dask" (dask's local
    threaded scheduler, the default), "threads" (bigbn's own pool), "sync" (a plain loop,
    the specification), "processes" (a local dask.distributed cluster of ``workers``
    processes), "tcp://HOST:PORT" (or tls://, inproc://) or a ``distributed.Client``.
    visible: a path every cluster worker must see (checked first, naming the blind
    workers: ``where`` says what it is). in_flight: on a cluster, at most that many tasks
    submitted at once, in the plan's order (`distributed.run`); the local executors keep
    ``workers`` in flight in that order anyway."""
    import os

    if scheduler == "sync":
        from bigbn.engine.executors.sync import run as sync_run

        sync_run(specs, fn, callbacks=callbacks)
    elif scheduler == "threads":
        from bigbn.engine.executors.threads import run as threads_run

        threads_run(specs, fn, workers=workers, callbacks=callbacks)
    elif scheduler == "dask":
        from bigbn.engine.executors.dask_local import run as dask_run

        dask_run(specs, fn, workers=workers, callbacks=callbacks)
    elif scheduler == "processes":
        from bigbn.engine.executors import distributed

        with distributed.local_cluster(workers or os.cpu_count() or 1) as client:
            check_visible(client, visible, where)
            distributed.run(specs, fn, client, callbacks=callbacks, in_flight=in_flight)
    elif not isinstance(scheduler, str) or scheduler.startswith(("tcp://", "tls://", "inproc://")):
        from bigbn.engine.executors import distributed

        client, owned = distributed.connect(scheduler)
        try:
            check_visible(client, visible, where)
            distributed.run(specs, fn, client, callbacks=callbacks, in_flight=in_flight)
        finally:
            if owned:
                client.close()
    else:
        raise OptionError(f"unknown scheduler {scheduler!r}: use {SCHEDULERS}")


def _is_dir(path: str) -> bool:
    import os

    return os.path.isdir(path)


def check_visible(client, path, where: str = "work directory") -> None:
    """Fail early, naming the worker, if a connected worker cannot see ``path``."""
    from pathlib import Path

    from bigbn.errors import WorkdirError

    if path is None:
        return
    seen = client.run(_is_dir, str(Path(path).resolve()))
    blind = sorted(w for w, ok in seen.items() if not ok)
    if blind:
        raise WorkdirError(f"{where} {path} is not visible on worker(s) {', '.join(blind)}: put it "
                           "on a file system every worker mounts at the same path")
