"""Run a job on a dask.distributed cluster (docs/design.md, "Scheduling"; docs/cluster.md).

A thin front for scripts and tests: `run_distributed` runs the pending tasks of a job
through bigbn/engine/executors/distributed.py, the same specs and task function as every other
executor; `local_cluster` starts a LocalCluster of worker processes.
"""

from __future__ import annotations

from typing import Sequence

from bigbn.engine.tasks import Job, JournaledTask
from bigbn.errors import OptionError
from bigbn.engine.executors.dispatch import check_visible
from bigbn.engine.executors.distributed import connect, local_cluster, run

__all__ = ["local_cluster", "run_distributed"]


def run_distributed(job: Job, address_or_client, *, callbacks: Sequence = (), retries: int = 3,
                    done: set[str] | None = None) -> None:
    """Run every task of ``job`` not in ``done`` (default: the journal) on a cluster.

    address_or_client: a scheduler address ("tcp://host:8786") or a ``distributed.Client``
    (used as is and left open). ``job.workdir`` must be a path every worker sees.
    callbacks: executor callbacks (bigbn.engine.executors.Callback), called on this process.
    retries: extra attempts for a task that raises. Each spec runs through
    `JournaledTask(job)` on the workers.
    """
    if retries < 0:
        raise OptionError(f"retries = {retries} must be 0 or more")
    client, owned = connect(address_or_client)
    try:
        check_visible(client, job.workdir.root)
        if done is None:
            done = set(job.workdir.journal())
        specs = [s for s in job.plan.tasks() if s.id not in done]
        run(specs, JournaledTask(job), client, retries=retries, callbacks=callbacks)
    finally:
        if owned:
            client.close()
