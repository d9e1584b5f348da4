"""A dask.distributed cluster (docs/design.md, "Scheduling"; docs/cluster.md).

The client submits a task as soon as every task it depends on has finished, and it
releases each future the moment it finishes:

- Tasks pass only specs. The task function (it holds beta, ≈ 1 MB at n = 32, k = 3) is
  scattered once to every worker; each task is ``fn(spec)``, and its result is small (the
  journal record). Tables flow through zarr in the shared work directory.
- No finished result is kept on a worker longer than the client takes to read it. Had
  the whole graph been submitted at once, the tiny result of every finished task on a
  worker that dies would count as lost data, and the scheduler would run those finished
  tasks again. Here a lost worker costs only the tasks it was running, plus a task that
  finished in the moment before the client read its result (its future turns "lost"; it
  is awaited again). The scheduler reschedules them (up to
  ``distributed.scheduler.allowed-failures`` deaths per task, default 3) and, being
  idempotent, they overwrite their chunks and append their journal line again.
- ``retries`` covers exceptions raised inside a task (e.g. a transient I/O error on a
  network file system); it does not count worker deaths.
- ``in_flight`` (a run under a disk budget): at most that many tasks are submitted and
  unfinished at once, and each time one ends the ready task first in the plan's order is
  submitted. The cluster can run only what it was given, so tasks start as on that many
  local threads in the plan's order, the model of `plan.live_chunks(h, workers)`, and the
  run keeps within the disk its plan counts for that many workers. Without it every
  ready task is submitted and the cluster picks among them, so only the looser bound of
  any order holds.
"""

from __future__ import annotations

import os
import time
import uuid
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from bigbn.errors import BigBNWarning, EngineError, OptionError
from bigbn.plan.lattice import TaskSpec
from bigbn.engine.executors import Callback, Ready, emit_end, emit_start


def run(specs: Sequence[TaskSpec], fn: Callable[[TaskSpec], object], client, *, retries: int = 3,
        callbacks: Sequence[Callback] = (), in_flight: int | None = None) -> None:
    """Run ``fn(spec)`` for every spec on the cluster of ``client`` (a distributed.Client).

    Ready tasks are submitted with decreasing priority in the plan's order, so lower chunk
    levels run first. If a task fails for good (or the caller is interrupted), the pending
    tasks are cancelled and this returns (raising) only once no task of this run is still
    executing on a worker, so a resume never races a straggler's writes.
    """
    from distributed import as_completed

    if retries < 0:
        raise OptionError(f"retries = {retries} must be 0 or more")
    if in_flight is not None and in_flight < 1:
        raise OptionError(f"in_flight = {in_flight} must be at least 1")
    ready = Ready(specs)
    token = uuid.uuid4().hex[:8]
    [fn_future] = client.scatter([fn], broadcast=True, hash=False)
    running: dict = {}  # future -> (spec, start)
    ac = as_completed(loop=client.loop)
    try:
        while ready or running:
            while ready and (in_flight is None or len(running) < in_flight):
                spec = ready.pop()
                # dask-style key ("forward-<token>", "tier2", 5): the dashboard groups by stage
                fut = client.submit(_call, fn_future, spec,
                                    key=(f"{spec.kind}-{token}", spec.scope, *spec.key[1:]),
                                    retries=retries, priority=-ready.order[spec.id])
                running[fut] = (spec, emit_start(callbacks, spec.key, spec.scope))
                ac.add(fut)
            if not running:
                break
            fut = next(ac)
            spec, start = running.pop(fut)
            if fut.status == "error":
                raise fut.exception()
            if fut.status == "lost":
                # it finished, but its worker died before we took the result: the
                # scheduler runs it again (the task is idempotent); wait for that run
                running[fut] = (spec, start)
                ac.add(fut)
                continue
            if fut.status != "finished":
                raise EngineError(f"task {spec.id} was {fut.status} on the cluster (every worker lost? "
                                  "run again to resume from the journal)")
            result = fut.result()
            fut.release()
            ready.finish(spec.id)
            emit_end(callbacks, spec.key, result, start, spec.scope)
    finally:
        for fut in running:
            fut.cancel()
        ac.clear()
        fn_future.release()
        if running:  # leaving early: cancelled tasks that already started keep running
            _wait_until_stopped(client, token)
    ready.check_done()


def _call(fn, spec):
    return fn(spec)


#: Seconds a scheduler address is tried before the user is told that nothing answers there.
FIRST_TRY = 3
#: Seconds a scheduler that does not answer is waited for in all (it may be starting beside
#: the run, as in a batch job that starts both, or its host name may not resolve yet, as a
#: Kubernetes service's before its pod runs): dask's own default.
PATIENCE = 30


def connect(address_or_client):
    """(client, whether we opened it) for a scheduler address or a distributed.Client.

    A scheduler that does not answer within FIRST_TRY seconds is waited for up to PATIENCE
    seconds in all, with a warning after FIRST_TRY that says so (dask's Client waited its
    30 s without a word); then OptionError. So is a server that takes the connection but
    does not answer dask's handshake (`_handshake`), and one that answers in another
    protocol."""
    import threading

    from distributed import Client

    if isinstance(address_or_client, Client):
        return address_or_client, False
    if not isinstance(address_or_client, str) or not address_or_client:
        raise OptionError(f"scheduler {address_or_client!r}: give an address like tcp://host:8786 "
                          "or a distributed.Client")
    timer = threading.Timer(FIRST_TRY, _still_waiting, (address_or_client,))
    timer.daemon = True
    timer.start()
    try:
        _handshake(address_or_client, PATIENCE)
        return Client(address_or_client, timeout=f"{PATIENCE}s"), True
    except _NoHandshake:
        raise OptionError(f"the server at {address_or_client} took the connection but gave no dask "
                          f"handshake in {PATIENCE + 2} s: is it a dask scheduler's address?") from None
    except OSError as e:
        raise OptionError(f"cannot reach the dask scheduler at {address_or_client}: {e}") from None
    except Exception as e:  # noqa: BLE001 - something answered, not in dask's protocol
        # e.g. a web server there: dask read its reply's bytes as a frame length and asked
        # numpy for 3 EiB (MemoryError), or failed to parse it (ValueError, ...)
        why = " ".join(str(e).split())[:120] or type(e).__name__
        raise OptionError(f"the server at {address_or_client} is not a dask scheduler, or not one this "
                          f"dask can talk to ({type(e).__name__}: {why})") from None
    finally:
        timer.cancel()


class _NoHandshake(Exception):
    """A server took the connection and said nothing within the patience (`_handshake`)."""


def _handshake(address: str, patience: float) -> None:
    """Connect to ``address`` and read its dask handshake, within ``patience`` seconds in
    all, then close: OSError if nothing could be reached, `_NoHandshake` if the handshake
    did not come, what went wrong if it was not one. dask's Client bounds the connection by
    its timeout but then waits for the handshake without one (distributed.comm.connect):
    a server that accepts and stays silent, as a web server waiting for a request line
    does, held `bigbn run --scheduler` forever. The probe runs on a thread of its own, so
    that a caller already inside an event loop (a notebook) can make it."""
    import asyncio
    import threading

    from distributed.comm import connect as comm_connect
    from distributed.security import Security

    # the TLS settings of dask's config (distributed.comm.tls.*), as the Client takes them:
    # without them a tls:// scheduler was refused as "not a dask scheduler"
    connection_args = Security().get_connection_args("client")

    async def probe():
        # dask's own deadline (patience) ends the tries to connect, as an OSError; this
        # one, a little later, ends a wait for the handshake after a connection
        comm = await asyncio.wait_for(comm_connect(address, timeout=patience, **connection_args), patience + 2)
        await comm.close()

    outcome: list = []

    def main():
        try:
            asyncio.run(probe())
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            outcome.append(e)

    worker = threading.Thread(target=main, name="bigbn-dask-handshake", daemon=True)
    worker.start()
    worker.join(patience + 10)  # wait_for's own deadline comes first; this is the backstop
    if not outcome or isinstance(outcome[0], asyncio.TimeoutError):  # the wait_for's, not dask's OSError
        raise _NoHandshake(address)
    if outcome[0] is not None:
        raise outcome[0]


def _still_waiting(address: str) -> None:
    """The warning of `connect` (from its timer's thread), saying why, where it can."""
    import socket
    import warnings

    from distributed.comm.addressing import parse_host_port

    why = ""
    scheme, _, rest = address.partition("://")
    if scheme in ("tcp", "tls"):
        host = parse_host_port(rest)[0]
        try:
            socket.getaddrinfo(host, None)
        except OSError as e:
            why = f" (no host {host!r}: {e.strerror})"
    warnings.warn(f"no dask scheduler answers at {address} yet{why}; waiting up to {PATIENCE - FIRST_TRY} s "
                  "more for one", BigBNWarning)


#: Local worker processes per core at most (`local_cluster`): each is a Python process of
#: its own (about 100 MB before any work), and past a few per core they only wait their turn.
MAX_PROCESSES_PER_CORE = 8


def max_local_processes() -> int:
    """The most worker processes `local_cluster` starts on this machine (at least 64)."""
    return max(64, MAX_PROCESSES_PER_CORE * (os.cpu_count() or 1))


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
    if workers > max_local_processes():  # --workers 10^20 started processes until killed (a hang)
        raise OptionError(f"--workers {workers} with the processes scheduler starts that many worker processes "
                          f"on this machine: at most {max_local_processes()} ({MAX_PROCESSES_PER_CORE} per core); "
                          "give fewer --workers, or a tcp:// scheduler of a cluster")
    with LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                      memory_limit=memory_limit, dashboard_address=None,
                      # the scheduler's HTTP endpoints (health, metrics) on a free port
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}) as cluster:
        with Client(cluster) as client:
            yield client


def _executing_keys(client, token: str) -> list:
    """Keys of this run still executing on some worker (a cancelled task runs to its end;
    the scheduler forgets it at once, so ask the workers). ``Client.call_stack()`` with no
    keys asks every worker for the call stack of each task its threads are running."""
    stacks = client.call_stack()
    return [key for per_worker in stacks.values() for key in per_worker
            if isinstance(key, (tuple, list)) and str(key[0]).endswith(token)]


def _wait_until_stopped(client, token: str, poll: float = 0.2) -> None:
    while True:
        try:
            busy = _executing_keys(client, token)
        except Exception:  # scheduler gone: nothing more can be learned or done
            return
        if not busy:
            return
        time.sleep(poll)
