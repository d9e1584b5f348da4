"""The engine on a real dask.distributed cluster: a `dask scheduler` and two `dask worker`
processes on 127.0.0.1, started with the CLI as a user would.

- the distributed posterior equals the sync executor's (the specification) to 1e-12;
- a worker killed with SIGKILL mid-run costs only the task it was running: the run
  completes, the numbers are the same, and the journal holds at most one extra line.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import bigbn
from bigbn.engine.cluster import local_cluster, run_distributed
from bigbn.engine.tasks import Job, JournaledTask, execute
from bigbn.engine.executors import Callback
from bigbn.errors import OptionError, WorkdirError
from bigbn.plan.lattice import Plan, task_id
from bigbn.store.workdir import Workdir
from naive import random_beta

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).with_name("dask")
K = 3


def make_job(root: Path, n: int, chunk_bits: int, beta: np.ndarray, alpha_mode: str = "recompute") -> Job:
    wd = Workdir(root)
    plan = Plan(n, K, chunk_bits, alpha_mode)
    wd.create_tables(plan)
    return Job(wd, plan, beta)


def all_task_ids(plan: Plan) -> set[str]:
    return {t.id for t in plan.tasks()}


def sync_posterior(root: Path, n: int, chunk_bits: int, beta: np.ndarray, alpha_mode: str) -> np.ndarray:
    job = make_job(root, n, chunk_bits, beta, alpha_mode)
    execute(job, scheduler="sync")
    return job.workdir.read("posterior", slice(None))


class Ended(Callback):
    """Executor callback: the ids of the tasks that finished, in order."""

    def __init__(self, then=None):
        self.ids: list[str] = []
        self.then = then

    def on_task_end(self, event) -> None:
        self.ids.append(task_id(event.key))
        if self.then is not None:
            self.then(self.ids[-1])


@dataclass(frozen=True)
class Slow:
    """Task wrapper, run on the workers: note (pid, task), sleep, then run the task."""

    task: object
    log_path: str
    seconds: float

    def __call__(self, spec):
        with open(self.log_path, "a") as fh:
            fh.write(f"{os.getpid()} {spec.id}\n")
        time.sleep(self.seconds)
        return self.task(spec)


@dataclass(frozen=True)
class Failing:
    """Task wrapper, run on the workers: task ``fail`` raises, the others sleep and run;
    each notes "start ID" and, once its journal line is written, "end ID" in ``log_path``."""

    task: object
    fail: str
    seconds: float
    log_path: str

    def __call__(self, spec):
        with open(self.log_path, "a") as fh:
            fh.write(f"start {spec.id}\n")
        if spec.id == self.fail:
            raise RuntimeError(f"injected fault in {self.fail}")
        time.sleep(self.seconds)
        out = self.task(spec)
        with open(self.log_path, "a") as fh:
            fh.write(f"end {spec.id}\n")
        return out


@contextlib.contextmanager
def journaled_through(wrap):
    """run_distributed sends the workers ``wrap(job)`` instead of ``JournaledTask(job)``
    (it builds the task function by that name when it is called)."""
    import bigbn.engine.cluster

    assert bigbn.engine.cluster.JournaledTask is JournaledTask
    bigbn.engine.cluster.JournaledTask = wrap
    try:
        yield
    finally:
        bigbn.engine.cluster.JournaledTask = JournaledTask


# ----------------------------------------------------------------------------- the cluster

class Cluster:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests")]))
        self.scheduler_file = tmp / "scheduler.json"

    def _spawn(self, args: list[str], log: str) -> subprocess.Popen:
        fh = open(self.tmp / log, "wb")
        p = subprocess.Popen([str(DASK), *args], env=self.env, stdout=fh, stderr=subprocess.STDOUT,
                             cwd=self.tmp)
        fh.close()
        self.procs.append(p)
        return p

    def start(self, workers: int) -> None:
        self._spawn(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--dashboard-address", ":0",
                     "--scheduler-file", str(self.scheduler_file)], "scheduler.log")
        deadline = time.monotonic() + 30
        while not self.scheduler_file.exists():
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                raise RuntimeError("dask scheduler did not start:\n" + self.log("scheduler.log"))
            time.sleep(0.1)
        for i in range(workers):
            local = self.tmp / f"worker{i}"
            local.mkdir()
            # --no-nanny: the pid is the worker itself, so SIGKILL really kills it.
            self.workers.append(self._spawn(
                ["worker", "--scheduler-file", str(self.scheduler_file), "--host", "127.0.0.1",
                 "--nthreads", "1", "--no-dashboard", "--no-nanny", "--local-directory", str(local),
                 "--name", f"w{i}"], f"worker{i}.log"))

    @property
    def address(self) -> str:
        return json.loads(self.scheduler_file.read_text())["address"]

    def log(self, name: str) -> str:
        p = self.tmp / name
        return p.read_text(errors="replace")[-3000:] if p.exists() else ""

    def stop(self) -> None:
        """Workers first (they say goodbye to a live scheduler), then the scheduler."""
        workers, scheduler = self.procs[1:], self.procs[:1]
        for group in (workers, scheduler):
            for p in group:
                if p.poll() is None:
                    p.terminate()
            for p in group:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


@contextlib.contextmanager
def running_cluster(tmp: Path):
    c = Cluster(tmp)
    try:
        c.start(workers=2)
        with distributed.Client(c.address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            yield c, client
    finally:
        c.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Shared by the tests that leave both workers alive."""
    with running_cluster(tmp_path_factory.mktemp("cluster")) as c:
        yield c


@pytest.fixture
def fresh_cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("fresh_cluster")) as c:
        yield c


@pytest.fixture(scope="module")
def beta10():
    return random_beta(10, K, np.random.default_rng(2026))


# ----------------------------------------------------------------------------- tests

@pytest.mark.slow
@pytest.mark.parametrize("n, chunk_bits, alpha_mode", [(9, 4, "recompute"), (8, 4, "store")])
def test_cluster_matches_sync(cluster, tmp_path, n, chunk_bits, alpha_mode):
    c, client = cluster
    beta = random_beta(n, K, np.random.default_rng(n))
    ref = sync_posterior(tmp_path / "sync", n, chunk_bits, beta, alpha_mode)

    job = make_job(tmp_path / "dist", n, chunk_bits, beta, alpha_mode)
    ended = Ended()
    run_distributed(job, c.address, callbacks=[ended])  # by address: opens its own client
    seen = ended.ids

    expected = all_task_ids(job.plan)
    assert len(expected) > 50  # many tasks, several levels
    assert sorted(seen) == sorted(expected)  # every task reported once, nothing else
    journal_lines = job.workdir.journal_path.read_text().splitlines()
    assert len(journal_lines) == len(expected)  # no worker died: nothing ran twice
    # tasks are deterministic: the cluster's numbers are the specification's, bit for bit
    np.testing.assert_array_equal(job.workdir.read("posterior", slice(None)), ref)
    # both workers took part (each journal record names the process that ran the task)
    pids = {json.loads(line)["pid"] for line in journal_lines}
    assert len(pids) == 2 and os.getpid() not in pids

    # a second call resumes from the journal: nothing is left to run
    again = Ended()
    run_distributed(job, client, callbacks=[again])
    assert again.ids == []


@pytest.mark.slow
def test_worker_killed_mid_run(fresh_cluster, tmp_path, beta10):
    c, client = fresh_cluster
    n, chunk_bits = 10, 5  # 32 chunks: 98 tasks
    ref = sync_posterior(tmp_path / "sync", n, chunk_bits, beta10, "recompute")
    job = make_job(tmp_path / "dist", n, chunk_bits, beta10)
    hook_log = tmp_path / "hooks.log"
    hook_log.touch()
    victim = c.workers[0]
    killed: dict = {}

    def starts() -> list[tuple[int, str]]:
        rows = [line.split() for line in hook_log.read_text().splitlines()]
        return [(int(pid), tid) for pid, tid in rows]

    def on_task(tid: str) -> None:
        if killed or len(job.workdir.journal()) < 20:
            return
        mine = [t for pid, t in starts() if pid == victim.pid]
        # kill only while the victim is inside a task (started, not journaled)
        if mine and mine[-1] not in job.workdir.journal():
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)
            killed["task"] = mine[-1]
            killed["journaled"] = mine[-1] in job.workdir.journal()
            killed["starts"] = len(starts())

    with journaled_through(lambda job: Slow(JournaledTask(job), str(hook_log), 0.05)):
        run_distributed(job, client, callbacks=[Ended(then=on_task)])

    assert killed, "the victim worker was never caught inside a task"
    assert victim.returncode == -signal.SIGKILL
    assert len(client.scheduler_info()["workers"]) == 1
    expected = all_task_ids(job.plan)
    assert set(job.workdir.journal()) == expected
    # Runs twice: the interrupted task, and perhaps one the victim had just finished
    # whose result the client had not read yet (its future turns "lost"). Each worker has
    # one thread, so no other task can be caught by the kill.
    lines = job.workdir.journal_path.read_text().splitlines()
    assert len(expected) <= len(lines) <= len(expected) + 2
    log = starts()
    assert len(log) <= len(expected) + 2
    again_after_kill = [(pid, t) for pid, t in log[killed["starts"]:]
                        if any(t == u for _, u in log[:killed["starts"]])]
    assert all(pid == c.workers[1].pid for pid, _ in again_after_kill)
    if not killed["journaled"]:
        # the interrupted task was run again, by the surviving worker, after the kill
        again = [pid for pid, t in log[killed["starts"]:] if t == killed["task"]]
        assert again and all(pid == c.workers[1].pid for pid in again)
    np.testing.assert_allclose(job.workdir.read("posterior", slice(None)), ref, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_failure_waits_for_tasks_in_flight(cluster, tmp_path):
    """A task that fails for good ends the run with its error, and only after the other
    worker's task in flight has finished: nothing writes to the workdir afterwards."""
    c, client = cluster
    job = make_job(tmp_path / "dist", 8, 4, random_beta(8, K, np.random.default_rng(8)))
    # forward:3 runs alongside other level-2 tasks (forward:5, backward:12, ...)
    log = tmp_path / "tasks.log"
    with pytest.raises(RuntimeError, match="injected fault in forward:3"):
        with journaled_through(lambda job: Failing(JournaledTask(job), "forward:3", 0.6, str(log))):
            run_distributed(job, client, retries=1)
    rows = [line.split() for line in log.read_text().splitlines()]
    started = {t for what, t in rows if what == "start"}
    ended = {t for what, t in rows if what == "end"}
    assert "forward:3" not in job.workdir.journal()
    # every task that started, but the failing one, had ended (journal line written) when
    # the run returned: none was left running to write afterwards
    assert started - {"forward:3"} == ended and len(ended) >= 1
    assert set(job.workdir.journal()) >= ended
    # resume without the fault: completes and matches the sync executor
    ref = sync_posterior(tmp_path / "sync", 8, 4, job.beta, "recompute")
    run_distributed(job, client)
    np.testing.assert_allclose(job.workdir.read("posterior", slice(None)), ref, rtol=0, atol=1e-12)


def test_workdir_not_visible(cluster, tmp_path):
    _, client = cluster
    job = make_job(tmp_path / "wd", 6, 3, random_beta(6, K, np.random.default_rng(0)))
    job = Job(Workdir(tmp_path / "elsewhere"), job.plan, job.beta)  # no tables there
    with pytest.raises(WorkdirError, match="not visible on worker"):
        run_distributed(job, client)


@pytest.mark.slow
def test_local_cluster_and_options(tmp_path):
    beta = random_beta(7, K, np.random.default_rng(7))
    ref = sync_posterior(tmp_path / "sync", 7, 3, beta, "recompute")
    job = make_job(tmp_path / "dist", 7, 3, beta)
    with local_cluster(2, memory_limit="1GiB") as client:
        assert len(client.scheduler_info()["workers"]) == 2
        run_distributed(job, client)
        assert client.status == "running"  # a given client is left open
        random_data = np.random.default_rng(1).integers(0, 2, (100, 5))
        res = bigbn.learn(random_data, max_parents=2,
                          workdir=tmp_path / "learn", scheduler=client)  # docs/cluster.md: learn takes a Client
        assert client.status == "running"
        summary = json.loads((tmp_path / "learn" / "summary.json").read_text())
        assert summary["plan"]["scheduler"] == f"a dask.distributed Client of {client.scheduler.address}"
        assert np.array_equal(res.posterior, bigbn.learn(random_data, max_parents=2).posterior)
    np.testing.assert_allclose(job.workdir.read("posterior", slice(None)), ref, rtol=0, atol=1e-12)
    with pytest.raises(OptionError):
        with local_cluster(0):
            pass
    with pytest.raises(OptionError, match="retries"):
        run_distributed(job, "tcp://127.0.0.1:1", retries=-1)


@pytest.mark.slow
def test_cli_run_through_the_cluster_journals_per_worker(cluster, tmp_path):
    """`bigbn run --scheduler tcp://...`: the client holds the workdir lock, so each worker
    appends to its own journal file (safe on shared file systems); the merged journal
    covers every task, the result equals the local threaded run, and a rerun resumes."""
    address = cluster[0].address
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, size=(200, 9))
    x[:, 1] = x[:, 0] ^ (rng.random(200) < 0.1)
    data = tmp_path / "d.csv"
    np.savetxt(data, x, fmt="%d", delimiter=",", header=",".join(f"V{j}" for j in range(9)), comments="")
    base = [sys.executable, "-m", "bigbn.cli", "run", str(data), "--chunk-bits", "4", "--quiet"]
    wd = tmp_path / "cl"
    out = subprocess.run(base + ["--workdir", str(wd), "--scheduler", address], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    worker_files = sorted(wd.glob("journal-*.jsonl"))
    assert len(worker_files) >= 1
    plan = Plan(9, K, 4)
    assert all_task_ids(plan) <= set(Workdir(wd).journal())
    local = tmp_path / "local"
    subprocess.run(base + ["--workdir", str(local)], check=True, capture_output=True)
    assert (wd / "edges.csv").read_text() == (local / "edges.csv").read_text()
    again = subprocess.run(base + ["--workdir", str(wd), "--scheduler", address], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert sorted(wd.glob("journal-*.jsonl")) == worker_files  # nothing ran again


def test_a_scheduler_that_does_not_answer_is_waited_for_with_a_warning_then_refused(tmp_path, monkeypatch):
    """Nothing listens at the address: after FIRST_TRY seconds a warning says bigbn waits
    (a scheduler may be starting beside the run), and after PATIENCE seconds the run is
    refused in one line; a host name that does not resolve (a service whose pod is not
    running yet) is waited for the same way, the warning saying so."""
    import socket

    from bigbn.engine.executors import distributed as dist
    from bigbn.errors import BigBNWarning

    monkeypatch.setattr(dist, "FIRST_TRY", 1)
    monkeypatch.setattr(dist, "PATIENCE", 3)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = np.random.default_rng(1).integers(0, 2, (50, 4))
    t0 = time.monotonic()
    with pytest.warns(BigBNWarning, match=f"no dask scheduler answers at tcp://127.0.0.1:{port} yet; "
                                          "waiting up to 2 s more"):
        with pytest.raises(OptionError, match=f"cannot reach the dask scheduler at tcp://127.0.0.1:{port}"):
            bigbn.learn(data, max_parents=2, workdir=tmp_path / "w", scheduler=f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 20
    with pytest.warns(BigBNWarning, match="no host 'no-such-host.invalid'"):
        with pytest.raises(OptionError, match="cannot reach the dask scheduler at tcp://no-such-host.invalid"):
            dist.connect("tcp://no-such-host.invalid:8786")


def test_a_server_that_is_not_a_dask_scheduler_is_refused_in_one_line(monkeypatch):
    """Something listens at the address but is no dask scheduler. Silent (a web server
    waiting for a request line, here a socket nobody accepts on): dask's Client waited for
    its handshake forever; it is now refused after PATIENCE (+ 2) seconds. Answering in
    another protocol (an HTTP reply): dask took its bytes for a frame length and asked
    numpy for 3 EiB, a MemoryError traceback; now one line."""
    import socket
    import threading

    from bigbn.engine.executors import distributed as dist

    monkeypatch.setattr(dist, "FIRST_TRY", 10)
    monkeypatch.setattr(dist, "PATIENCE", 2)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # the kernel completes the connection; nobody reads or writes
        port = silent.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(OptionError, match=f"the server at tcp://127.0.0.1:{port} took the connection "
                                              "but gave no dask handshake in 4 s"):
            dist.connect(f"tcp://127.0.0.1:{port}")
        assert time.monotonic() - t0 < 20

    with socket.socket() as web:
        web.bind(("127.0.0.1", 0))
        web.listen()
        port = web.getsockname()[1]
        conns = []

        def answer():
            conn, _ = web.accept()
            conns.append(conn)
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/html\r\n\r\n<html>no</html>\r\n")

        threading.Thread(target=answer, daemon=True).start()
        with pytest.raises(OptionError, match=f"the server at tcp://127.0.0.1:{port} is not a dask scheduler"):
            dist.connect(f"tcp://127.0.0.1:{port}")
        for c in conns:
            c.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_a_tls_scheduler_is_reached_with_the_tls_settings_of_dasks_config(tmp_path):
    """The handshake probe of `connect` takes dask's TLS settings (distributed.comm.tls.*)
    as the Client does: without them a tls:// scheduler was refused as "not a dask
    scheduler" (TLS expects an ssl_context). A scheduler of a LocalCluster on TLS with a
    self-signed certificate made here (no download, no files of distributed's tests)."""
    import dask
    from distributed import LocalCluster

    from bigbn.engine.executors import distributed as dist

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True)
    both = tmp_path / "key-cert.pem"
    both.write_text(key.read_text() + cert.read_text())
    tls = {"distributed.comm.tls.ca-file": str(cert), "distributed.comm.tls.client.cert": str(both),
           "distributed.comm.tls.scheduler.cert": str(both), "distributed.comm.tls.worker.cert": str(both)}
    with dask.config.set(tls):
        with LocalCluster(n_workers=0, protocol="tls://", host="127.0.0.1", dashboard_address=None,
                          scheduler_kwargs={"dashboard": False}) as cluster:
            assert cluster.scheduler_address.startswith("tls://")
            client, owned = dist.connect(cluster.scheduler_address)
            try:
                assert owned and client.scheduler_info()["address"] == cluster.scheduler_address
            finally:
                client.close()
