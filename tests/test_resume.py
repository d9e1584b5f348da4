"""Crash safety and resume (issue: resumable, crash-safe long runs).

Fault injection counts that a resume runs exactly the missing tasks; a real `bigbn run`
process killed with SIGKILL at random moments and resumed ends bit-identical to an
unbroken run; fingerprint mismatch, concurrent runs, stale locks, truncated chunks,
torn journal lines and a full disk are handled.
"""

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bigbn import learn
from bigbn.api import workdir_status
from bigbn.cli.main import main
from bigbn.engine.tasks import JournaledTask, compute
from bigbn.errors import WorkdirError
from bigbn.plan.lattice import Plan
from bigbn.store.workdir import Workdir
import bigbn
import helpers as h


def write_data(path, n=9, m=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, size=(m, n))
    for j in range(1, n):  # some dependence so posteriors are not flat
        copy = rng.random(m) < 0.7
        x[copy, j] = x[copy, j - 1]
    header = ",".join(f"V{j}" for j in range(n))
    np.savetxt(path, x, fmt="%d", delimiter=",", header=header, comments="")
    return path


class FailOn:
    """Fault injection as a wrapper around the task function (as cubed's tests do): the
    k-th call (counting across threads) raises — before the task runs (``when="before"``),
    after it wrote its chunks but before its journal line (``"after_write"``), or after
    its journal line (``"after_journal"``)."""

    def __init__(self, k, exc=None, when="before"):
        self.k, self.when = k, when
        self.calls = 0
        self.exc = exc or RuntimeError("injected fault")
        self.lock = threading.Lock()

    def wrap(self, task):
        self.task = task
        return self

    def __call__(self, spec):
        with self.lock:
            self.calls += 1
            hit = self.calls == self.k
        if hit and self.when == "before":
            raise self.exc
        if hit and self.when == "after_write":
            compute(self.task.job, spec)
            raise self.exc
        rec = self.task(spec)
        if hit:
            raise self.exc
        return rec


class Count:
    """Wrapper around the task function: records the id of every task that runs."""

    def __init__(self):
        self.keys = []
        self.lock = threading.Lock()

    def wrap(self, task):
        self.task = task
        return self

    def __call__(self, spec):
        with self.lock:
            self.keys.append(spec.id)
        return self.task(spec)


@contextlib.contextmanager
def wrapped(wrapper):
    """learn() runs its tasks through ``wrapper.wrap(JournaledTask(job))``: the executors
    run whatever `bigbn.engine.tasks.JournaledTask` makes of the job."""
    import bigbn.engine.tasks as engine

    assert engine.JournaledTask is JournaledTask
    engine.JournaledTask = lambda job: wrapper.wrap(JournaledTask(job))
    try:
        yield wrapper
    finally:
        engine.JournaledTask = JournaledTask


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_data(tmp_path_factory.mktemp("d") / "data.csv")


@pytest.fixture(scope="module")
def unbroken(data, tmp_path_factory):
    wd = tmp_path_factory.mktemp("unbroken")
    return learn(data, workdir=wd, chunk_bits=5, max_parents=2), wd


@pytest.mark.parametrize("fail_at,when", [(1, "before"), (7, "after_write"), (25, "before"),
                                          (34, "after_journal"), (54, "after_write")])
@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_fault_then_resume_runs_only_missing_tasks(data, unbroken, tmp_path, fail_at, when, scheduler):
    with pytest.raises(RuntimeError, match="injected fault"), wrapped(FailOn(fail_at, when=when)):
        learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2, scheduler=scheduler)
    plan = Plan(9, 2, 5)
    all_ids = {t.id for t in plan.tasks()}
    assert len(all_ids) == 54  # scores, 16 forward, 16 backward, 5 gamma, 15 release, edges
    done_before = set(Workdir(tmp_path).journal()) & all_ids
    assert len(done_before) < len(all_ids)
    if when == "after_journal":
        assert len(done_before) >= fail_at  # the failing task itself was journaled
    count = Count()
    with wrapped(count):
        res = learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2, scheduler=scheduler)
    assert sorted(count.keys) == sorted(all_ids - done_before)  # exactly the missing ones, once
    ref, _ = unbroken
    assert np.array_equal(res.posterior, ref.posterior)
    assert res.log_marginal == ref.log_marginal


def test_finished_run_is_not_recomputed(data, unbroken):
    ref, wd = unbroken
    count = Count()
    with wrapped(count):
        res = learn(data, workdir=wd, max_parents=2)
    assert count.keys == []
    assert np.array_equal(res.posterior, ref.posterior)


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_is_bit_identical(tmp_path):
    data = write_data(tmp_path / "big.csv", n=13, m=400, seed=5)
    cmd = [sys.executable, "-m", "bigbn.cli", "run", str(data), "-k", "3", "--chunk-bits", "5",
           "--workers", "2", "--quiet", "--top", "0"]
    ref_wd = tmp_path / "ref"
    subprocess.run(cmd + ["--workdir", str(ref_wd)], check=True, capture_output=True)
    wd = tmp_path / "killed"
    journal = wd / "journal.jsonl"
    total = len(Plan(13, 3, 5).tasks())

    def lines() -> int:
        return len(journal.read_bytes().splitlines()) if journal.exists() else 0

    # Kill by progress, not by wall time (a loaded machine must not make the runs finish
    # before their kill): each run is killed a random number of finished tasks after it
    # starts, then a few milliseconds later, anywhere inside the tasks in flight.
    rng = np.random.default_rng(11)
    kills = 0
    for _ in range(4):
        target = lines() + int(rng.integers(1, max(2, (total - lines()) // 3)))
        proc = subprocess.Popen(cmd + ["--workdir", str(wd)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while proc.poll() is None and lines() < target:
            time.sleep(0.002)
        time.sleep(float(rng.uniform(0.0, 0.02)))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills == 4 and 0 < len(Workdir(wd).journal()) < total
    status = "\n".join(workdir_status(wd))
    assert "active: no" in status
    out = subprocess.run(cmd + ["--workdir", str(wd)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert (wd / "edges.csv").read_bytes() == (ref_wd / "edges.csv").read_bytes()
    a = json.loads((wd / "summary.json").read_text())
    b = json.loads((ref_wd / "summary.json").read_text())
    assert a["log_marginal_likelihood"] == b["log_marginal_likelihood"]


def test_other_options_are_refused_and_fresh_starts_over(data, tmp_path):
    learn(data, workdir=tmp_path, max_parents=2, ess=1.0)
    with pytest.raises(WorkdirError, match=r"ess: workdir has 1\.0, this run 5\.0"):
        learn(data, workdir=tmp_path, max_parents=2, ess=5.0)
    with pytest.raises(WorkdirError, match="max_parents"):
        learn(data, workdir=tmp_path, max_parents=3, ess=1.0)
    res = learn(data, workdir=tmp_path, max_parents=2, ess=5.0, fresh=True)
    assert json.loads((tmp_path / "run.json").read_text())["fingerprint"]["ess"] == 5.0
    assert np.all(np.isfinite(res.posterior))


def test_other_chunk_bits_on_resume_is_refused(data, tmp_path):
    learn(data, workdir=tmp_path, max_parents=2, chunk_bits=4)
    with pytest.raises(WorkdirError, match="chunk_bits=4"):
        learn(data, workdir=tmp_path, max_parents=2, chunk_bits=6)
    learn(data, workdir=tmp_path, max_parents=2)  # no --chunk-bits: the workdir's is used


HOLD = """
import sys, time
from bigbn.store.workdir import Workdir
with Workdir(sys.argv[1]).lock():
    print("locked", flush=True)
    time.sleep(120)
"""


def hold_lock(workdir):
    """A separate process that holds the workdir's lock until killed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(workdir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.slow
def test_second_concurrent_run_is_refused_naming_the_holder(data, tmp_path):
    learn(data, workdir=tmp_path, max_parents=2)
    holder = hold_lock(tmp_path)
    try:
        with pytest.raises(WorkdirError, match=f"in use by another bigbn run \\(pid {holder.pid}"):
            learn(data, workdir=tmp_path, max_parents=2)
        assert f"active: yes (pid {holder.pid}" in "\n".join(workdir_status(tmp_path))
        # through the CLI, in a real process: one Error: line naming the holder
        out = subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(data), "--workdir",
                              str(tmp_path), "-k", "2"], capture_output=True, text=True)
        assert out.returncode == 1
        assert f"pid {holder.pid}" in out.stderr and "Traceback" not in out.stderr
        assert len([x for x in out.stderr.strip().splitlines() if not x.startswith("[bigbn] ")]) == 1
    finally:
        holder.kill()  # SIGKILL: no clean-up; the kernel drops the lock with the process
        holder.wait()
    assert "active: no" in "\n".join(workdir_status(tmp_path))
    res = learn(data, workdir=tmp_path, max_parents=2)
    assert np.all(np.isfinite(res.posterior))


RACE = """
import os, sys, time
from bigbn.errors import WorkdirError
from bigbn.store.workdir import Workdir
while time.time() < float(sys.argv[2]):
    time.sleep(0.001)
try:
    with Workdir(sys.argv[1]).lock():
        with open(sys.argv[3], "a") as fh:
            fh.write(f"in {os.getpid()} {time.time()}\\n")
        time.sleep(0.3)
        with open(sys.argv[3], "a") as fh:
            fh.write(f"out {os.getpid()} {time.time()}\\n")
except WorkdirError:
    pass
"""


@pytest.mark.slow
def test_lock_is_exclusive_under_a_race(tmp_path):
    """Eight processes reach for the lock at the same instant: never two inside at once."""
    log = tmp_path / "log.txt"
    for _ in range(3):
        start = time.time() + 1.5
        procs = [subprocess.Popen([sys.executable, "-c", RACE, str(tmp_path), str(start), str(log)])
                 for _ in range(8)]
        for p in procs:
            p.wait()
    inside = 0
    entries = [line.split() for line in log.read_text().splitlines()]
    assert entries, "nobody got the lock"
    for kind, _, _ in sorted(entries, key=lambda e: (float(e[2]), e[0] == "in")):
        inside += 1 if kind == "in" else -1
        assert inside <= 1


def test_truncated_and_corrupted_chunks_are_recomputed(data, unbroken, tmp_path):
    """Damaged chunks are recomputed. B(0) needs B's level 1, which releases deleted once
    level 0 was done: so the backward pass runs again from the top, and its releases
    delete the chunks again; the γ level sums, intact, do not run again."""
    ref, _ = unbroken
    with pytest.raises(RuntimeError):  # everything but the edges task (the 54th) finishes
        with wrapped(FailOn(54)):
            learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2, scheduler="sync")
    chunks = tmp_path / "tables.zarr"
    assert sorted(p.name for p in (chunks / "backward" / "c").iterdir()) == ["0"]  # levels ≥ 1 released
    assert len(list((chunks / "forward" / "c").iterdir())) == 16
    f1 = chunks / "forward" / "c" / "3"
    f1.write_bytes(f1.read_bytes()[:100])  # truncated
    f2 = chunks / "backward" / "c" / "0"
    raw = bytearray(f2.read_bytes())
    raw[8:16] = np.float64(-1.0).tobytes()  # silently changed value
    f2.write_bytes(bytes(raw))
    count = Count()
    with wrapped(count):
        res = learn(data, workdir=tmp_path, max_parents=2)
    plan = Plan(9, 2, 5)
    backward = [t.id for t in plan.tasks() if t.kind in ("backward", "release")]
    assert sorted(count.keys) == sorted(["forward:3", "edges", *backward])
    assert sorted(res.summary["recomputed_corrupt_tasks"]) == ["backward:0", "forward:3"]
    assert np.array_equal(res.posterior, ref.posterior)
    assert sorted(p.name for p in (chunks / "backward" / "c").iterdir()) == ["0"]


def test_a_release_killed_half_way_is_finished_without_recomputing(data, unbroken, tmp_path):
    """A kill in the middle of a release leaves its B chunk deleted, its γ part not, and
    no journal line for it: the resume runs the release again and nothing before it."""
    import json

    ref, _ = unbroken
    with pytest.raises(RuntimeError), wrapped(FailOn(54)):  # all but edges
        learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2, scheduler="sync")
    wd = Workdir(tmp_path)
    lines = wd.journal_path.read_text().splitlines()
    wd.journal_path.write_text("".join(l + "\n" for l in lines if json.loads(l)["task"] != "release:6"))
    plan = Plan(9, 2, 5)
    part = plan.task(("backward", 6)).writes[1]
    assert part.table == "gamma_parts" and not wd.chunk_file("gamma_parts", (6, 0, 0)).exists()
    wd.write_region(part, np.zeros((1, plan.n, plan.n_families)))  # the kill came before its deletion
    assert not wd.chunk_file("backward", (6,)).exists()
    count = Count()
    with wrapped(count):
        res = learn(data, workdir=tmp_path, max_parents=2)
    assert sorted(count.keys) == ["edges", "release:6"]
    assert res.summary["recomputed_corrupt_tasks"] == []
    assert np.array_equal(res.posterior, ref.posterior)
    assert not wd.chunk_file("gamma_parts", (6, 0, 0)).exists()
    assert sorted(p.name for p in (tmp_path / "tables.zarr" / "backward" / "c").iterdir()) == ["0"]


def test_finished_run_with_intact_result_is_not_rechecked_but_a_damaged_result_is(data, unbroken, tmp_path):
    """A finished run whose kept tables (β, the forward table `bigbn sample` reads, γ and
    the posteriors) pass their CRC runs nothing; a damaged one is recomputed."""
    ref, _ = unbroken
    learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2)
    count = Count()
    with wrapped(count):
        res = learn(data, workdir=tmp_path, max_parents=2)
    assert count.keys == [] and np.array_equal(res.posterior, ref.posterior)
    assert res.summary["already_finished"]
    f = tmp_path / "tables.zarr" / "forward" / "c" / "3"
    f.write_bytes(f.read_bytes()[:100])  # a chunk sampling reads
    with wrapped(count):
        res = learn(data, workdir=tmp_path, max_parents=2)
    assert count.keys == ["forward:3"] and np.array_equal(res.posterior, ref.posterior)
    post = tmp_path / "tables.zarr" / "posterior" / "c" / "0" / "0"
    post.write_bytes(post.read_bytes()[:-8])  # the result itself damaged
    count = Count()
    with wrapped(count):
        res = learn(data, workdir=tmp_path, max_parents=2)
    assert sorted(count.keys) == ["edges"]
    assert np.array_equal(res.posterior, ref.posterior)


def test_torn_journal_line_is_ignored_and_repaired(data, unbroken, tmp_path):
    ref, _ = unbroken
    with pytest.raises(RuntimeError):
        with wrapped(FailOn(30)):
            learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2)
    with open(tmp_path / "journal.jsonl", "a") as fh:
        fh.write('{"task":"gamma:1","crc":12')  # a crash mid-append
    res = learn(data, workdir=tmp_path, max_parents=2)
    assert np.array_equal(res.posterior, ref.posterior)
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert sum(1 for line in lines if line.startswith('{"task":"gamma:1","crc":12')) == 1
    assert all(json.loads(line) for line in lines if not line.startswith('{"task":"gamma:1","crc":12'))


class DiskFull:
    """Task wrapper: every task after the n-th fails as if the disk were full."""

    def __init__(self, n):
        self.n, self.calls, self.lock = n, 0, threading.Lock()

    def wrap(self, task):
        self.task = task
        return self

    def __call__(self, spec):
        with self.lock:
            self.calls += 1
            if self.calls > self.n:
                raise OSError(errno.ENOSPC, "No space left on device", "tables.zarr/forward/c/9")
        return self.task(spec)


def test_disk_full_gives_one_line_error_and_rerun_finishes(data, unbroken, tmp_path, monkeypatch):
    ref, _ = unbroken
    with wrapped(DiskFull(20)):
        r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path), "-k", "2",
                                      "--chunk-bits", "5", "--quiet"])
    assert r.exit_code == 1
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: disk full")
    assert "run the same command again" in lines[0]
    assert "Traceback" not in r.output
    journal = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert 1 <= len(journal) <= 21 and all(json.loads(line) for line in journal)
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path), "-k", "2", "--quiet"])
    assert r.exit_code == 0, r.output
    res = learn(data, workdir=tmp_path, max_parents=2)
    assert np.array_equal(res.posterior, ref.posterior)


def test_status_reports_progress(data, tmp_path):
    with pytest.raises(RuntimeError):
        with wrapped(FailOn(11)):  # scores and 9 forward tasks finish
            learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2, scheduler="sync")
    r = CliRunner().invoke(main, ["status", "--workdir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "forward: 9/16 tasks done" in r.output
    assert "backward: 0/16 tasks done" in r.output
    assert "active: no" in r.output
    assert "unfinished" in r.output
    r = CliRunner().invoke(main, ["status", "--workdir", str(tmp_path / "nothing")])
    assert r.exit_code == 1 and "no finished run here" in r.output


def test_a_workdir_without_run_json_is_refused_untouched_even_with_fresh(data, tmp_path):
    """Review finding: tables and journal with no run.json must never be reused; and a
    folder is bigbn's only if it holds a run.json bigbn wrote, so --fresh refuses it too."""
    other = write_data(tmp_path / "other.csv", n=9, m=150, seed=7)
    wd = tmp_path / "w"
    learn(data, workdir=wd, max_parents=2)
    (wd / "run.json").unlink()
    before = sorted((p.relative_to(wd), p.stat().st_mtime_ns) for p in wd.rglob("*"))
    for fresh in (False, True):
        with pytest.raises(WorkdirError, match="not a bigbn work directory"):
            learn(other, workdir=wd, max_parents=2, fresh=fresh)
    assert sorted((p.relative_to(wd), p.stat().st_mtime_ns) for p in wd.rglob("*")) == before


@pytest.mark.parametrize("content", ["{}", "[1]", "not json", '{"fingerprint": {}, "plan": {}}',
                                     b"\x00\xff\xfe binary"])
def test_a_run_json_bigbn_did_not_write_is_refused_untouched(data, tmp_path, content):
    learn(data, workdir=tmp_path, max_parents=2)
    path = tmp_path / "run.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    for args in (["run", str(data), "--workdir", str(tmp_path), "-k", "2"],
                 ["run", str(data), "--workdir", str(tmp_path), "-k", "2", "--fresh"],
                 ["status", "-w", str(tmp_path)], ["sample", "-w", str(tmp_path)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 1 and "Traceback" not in r.output, r.output
        assert f"{path}" in r.output and "not a bigbn work directory" in r.output, r.output
    assert path.read_bytes() == (content if isinstance(content, bytes) else content.encode())


@pytest.mark.parametrize("damage", [{"fingerprint": {}}, {"plan": {"n": 3}}, {"names": "abc"},
                                    {"names": ["V0"] * 9}, {"format_version": 99}])
def test_damaged_run_json_of_bigbn_is_a_one_line_error_and_fresh_starts_over(data, tmp_path, damage):
    learn(data, workdir=tmp_path, max_parents=2)
    run = json.loads((tmp_path / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps({**run, **damage}))
    for args in (["run", str(data), "--workdir", str(tmp_path), "-k", "2"], ["status", "-w", str(tmp_path)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 1 and "use --fresh" in r.output and "Traceback" not in r.output, r.output
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path), "-k", "2", "--fresh", "-q"])
    assert r.exit_code == 0, r.output


def test_a_run_json_plan_of_other_max_parents_is_damaged_not_a_traceback(data, tmp_path):
    """run.json's plan is trusted on resume: one whose k is not the fingerprint's max
    parents (an edit) made the scores task reshape β to the wrong width (a traceback)."""
    learn(data, workdir=tmp_path, max_parents=2)
    run = json.loads((tmp_path / "run.json").read_text())
    run["plan"]["k"] = 1
    (tmp_path / "run.json").write_text(json.dumps(run))
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path), "-k", "2", "-q"])
    assert r.exit_code == 1 and "run.json is damaged" in r.output and "use --fresh" in r.output, r.output
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path), "-k", "2", "--fresh", "-q"])
    assert r.exit_code == 0, r.output


def test_changed_scores_on_resume_are_refused_not_mixed(data, tmp_path, monkeypatch):
    """Review finding: a beta that differs from the journaled one (numerics changed
    without a version bump) must not be combined with tables computed from the old one."""
    import bigbn.api as api

    with pytest.raises(RuntimeError):
        with wrapped(FailOn(30)):
            learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2)
    real = api.score_families
    monkeypatch.setattr(api, "score_families", lambda *a, **kw: real(*a, **kw) + 1e-13)
    with pytest.raises(WorkdirError, match="local scores differ"):
        learn(data, workdir=tmp_path, max_parents=2)


def test_other_alpha_mode_on_resume_is_refused(data, tmp_path):
    with pytest.raises(RuntimeError):
        with wrapped(FailOn(10)):
            learn(data, workdir=tmp_path, chunk_bits=5, max_parents=2)
    with pytest.raises(WorkdirError, match="alpha_mode=\"recompute\""):
        learn(data, workdir=tmp_path, max_parents=2, alpha_mode="store")


def _package_copy(tmp_path):
    """A copy of the bigbn package (file times kept) and the environment that imports it."""
    import shutil

    pkg = tmp_path / "copy" / "bigbn"
    shutil.copytree(os.path.dirname(bigbn.__file__), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg, dict(os.environ, PYTHONPATH=str(pkg.parent))


@pytest.mark.slow
def test_fingerprint_is_the_numerics_version_not_the_source(data, tmp_path, monkeypatch):
    """The run fingerprint holds the hand-bumped numerics version (tests/test_numerics.py
    guards it with golden journal checksums), not a hash of the sources: a comment or an
    orchestration change anywhere leaves it alone; a bump of the version changes it."""
    import bigbn.store.rundir as rundir
    from bigbn._version import NUMERICS_VERSION

    pkg, env = _package_copy(tmp_path)
    probe = [sys.executable, "-c", "from bigbn.api import numerics_fingerprint as f; from bigbn.scores.base "
             "import BUILTIN, numerics_version as g; print(f(), *(g(s) for s in BUILTIN.values()))"]

    def fingerprint():
        out = subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    here = " ".join(str(v) for v in (rundir.numerics_fingerprint(), "bdeu-2", "k2-2", "bge-5", "cg-7"))
    assert rundir.numerics_fingerprint() == NUMERICS_VERSION and fingerprint() == here
    for f in pkg.rglob("*.py"):
        f.write_text(f.read_text() + "\n# edited\n")
    assert fingerprint() == here  # no number changed: resume still allowed
    version = pkg / "_version.py"
    version.write_text(version.read_text().replace(f"NUMERICS_VERSION = {NUMERICS_VERSION}\n",
                                                   f"NUMERICS_VERSION = {NUMERICS_VERSION + 1}\n"))
    assert fingerprint() == here.replace(str(NUMERICS_VERSION), str(NUMERICS_VERSION + 1), 1) != here

    with pytest.raises(RuntimeError), wrapped(FailOn(10)):
        learn(data, workdir=tmp_path / "w", chunk_bits=5, max_parents=2)
    monkeypatch.setattr(rundir, "numerics_fingerprint", lambda: NUMERICS_VERSION + 1)
    with pytest.raises(WorkdirError, match="computed by another bigbn version"):
        learn(data, workdir=tmp_path / "w", max_parents=2)


def _numba_cache_for(pkg, folder):
    """A numba cache folder in which ``pkg`` (a copy) finds the kernels this checkout
    compiled (numba keys its cache by the source's folder and text), so the copy need not
    spend a minute compiling them again."""
    import shutil

    import numba

    try:
        from numba.core.caching import _CacheLocator
    except ImportError:  # another numba: the copy compiles its kernels (slower, as right)
        return str(folder)
    subpath = _CacheLocator.get_suitable_cache_subpath
    here = Path(bigbn.__file__).parent
    for sub in [here, *(d for d in here.iterdir() if d.is_dir())]:  # numba keys by folder
        real = os.path.join(numba.config.CACHE_DIR, subpath(str(sub / "x.py")))
        if os.path.isdir(real):
            shutil.copytree(real, folder / subpath(str(pkg / sub.relative_to(here) / "x.py")))
    return str(folder)


def _change_no_number(pkg):
    """What a commit that changes no number does to the package: every module gets a longer
    docstring, a comment and a new function, and the runner a new wrapper around the
    scheduling it runs. Modules of numba-cached kernels are left alone but fastmath.py
    (numba hashes each file's text: an edit of kernels.py would cost a minute of
    compiling, to the same machine code; `test_fingerprint_is_the_numerics_version_not_the_source`
    edits them all)."""
    for f in sorted(pkg.rglob("*.py")):
        text = f.read_text()
        if "cache=True" in text and f.name != "fastmath.py":
            continue
        doc = text.index('"""') + 3
        f.write_text(text[:doc] + "Edited by a later commit. " + text[doc:]
                     + "\n\n# a comment of a later commit\ndef _layout_of_a_later_commit():\n    return None\n")
    runner = pkg / "engine" / "runner.py"
    runner.write_text(runner.read_text() + "\n\n_execute_before = execute\n\n\n"
                      "def execute(*args, **kw):  # orchestration of a later commit\n"
                      "    return _execute_before(*args, **kw)\n")


def test_a_workdir_of_the_previous_code_resumes_after_a_commit_that_changes_no_number(data, tmp_path):
    """#38: a run half done under this code resumes under a copy of it changed only in
    comments, docstrings, layout and orchestration, and finishes with the numbers of an
    uninterrupted run (the tasks done before are kept); a second run reports it finished.
    A bump of NUMERICS_VERSION in the copy refuses the workdir in one line."""
    from bigbn._version import NUMERICS_VERSION

    kw = dict(chunk_bits=5, max_parents=2)
    learn(data, workdir=tmp_path / "ref", **kw)
    ref = Workdir(tmp_path / "ref").journal()
    with pytest.raises(RuntimeError), wrapped(FailOn(30)):
        learn(data, workdir=tmp_path / "w", **kw)
    before = Workdir(tmp_path / "w").journal()
    assert 10 < len(before) < len(ref) - 10

    pkg, env = _package_copy(tmp_path)
    env["NUMBA_CACHE_DIR"] = _numba_cache_for(pkg, tmp_path / "numba")
    _change_no_number(pkg)
    resume = [sys.executable, "-c", "import json, sys, bigbn; r = bigbn.learn(sys.argv[1], workdir=sys.argv[2], "
              "chunk_bits=5, max_parents=2); print(bigbn.__file__); print(json.dumps(r.summary['stages']))",
              str(data), str(tmp_path / "w")]

    def run():
        out = subprocess.run(resume, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        where, stages = out.stdout.splitlines()[-2:]
        assert where == str(pkg / "__init__.py")  # the changed copy ran
        return sum(s["tasks_this_invocation"] for s in json.loads(stages).values())

    assert run() == len(ref) - len(before)
    after = Workdir(tmp_path / "w").journal()
    numbers = {"task", "stage", "crc", "log_px", "log_offset", "log_score"}
    assert {t: {k: v for k, v in r.items() if k in numbers} for t, r in after.items()} == \
        {t: {k: v for k, v in r.items() if k in numbers} for t, r in ref.items()}
    assert all(after[t] == r for t, r in before.items())  # kept, not done again
    assert run() == 0  # finished

    version = pkg / "_version.py"
    version.write_text(version.read_text().replace(f"NUMERICS_VERSION = {NUMERICS_VERSION}\n",
                                                   f"NUMERICS_VERSION = {NUMERICS_VERSION + 1}\n"))
    out = subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(data), "-w", str(tmp_path / "w"),
                          "-k", "2", "-q"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 1 and "computed by another bigbn version" in out.stderr + out.stdout, out
    assert "--fresh" in out.stderr + out.stdout and "Traceback" not in out.stderr + out.stdout
    assert Workdir(tmp_path / "w").journal() == after


def _as_before_numerics_versions(root, numerics, score_numerics):
    """run.json of ``root`` as a bigbn that hashed its sources wrote it (the rest of a
    workdir, tables and journal, is the same)."""
    run_json = root / "run.json"
    run = json.loads(run_json.read_text())
    run["fingerprint"].update(numerics=numerics, score_numerics=score_numerics)
    run_json.write_text(json.dumps(run))


def test_a_workdir_of_bcf7076_reads_as_its_numerics_versions(data, tmp_path):
    """#38: bcf7076, the last commit that fingerprinted by a hash of the sources, computes
    the numbers of numerics version 1 (its journal numbers of tests/test_numerics.py's
    cases are the golden ones), so its half-done workdir reads as version 1 and its score's
    version: its BDeu workdir as bdeu-1, refused (bdeu-2 scores differently, numerical
    audit 2), its .jkl workdir as jkl-1, refused (jkl-2 shifts a variable by the best
    usable family). Each refusal names the versions; a workdir of today's versions, made
    the same way, resumes keeping its tasks."""
    import bigbn.store.rundir as rundir
    from bigbn.api import load_dataset
    from bigbn.scores.discrete import local_scores
    from bigbn.scores.jkl import write_jkl

    assert rundir.LEGACY_NUMERICS == {"76440e467093c924": 1}
    with pytest.raises(RuntimeError), wrapped(FailOn(30)):
        learn(data, workdir=tmp_path / "bdeu", chunk_bits=5, max_parents=2)
    _as_before_numerics_versions(tmp_path / "bdeu", "76440e467093c924", "d9af01c7347a91fb")
    with pytest.raises(WorkdirError, match=r"other code of the score \(its numerics bdeu-1, now bdeu-2\)"):
        learn(data, workdir=tmp_path / "bdeu", max_parents=2)

    ds = load_dataset(data)[0]
    scores = tmp_path / "scores.jkl"
    write_jkl(scores, ds.names, local_scores(ds, 2, "bdeu"), 2)
    with pytest.raises(RuntimeError), wrapped(FailOn(30)):
        learn(scores=scores, workdir=tmp_path / "w", chunk_bits=5, max_parents=2)
    before = Workdir(tmp_path / "w").journal()
    run_json = tmp_path / "w" / "run.json"
    today = run_json.read_text()
    _as_before_numerics_versions(tmp_path / "w", "76440e467093c924", "9f26e8a12a810a2d")
    with pytest.raises(WorkdirError, match=r"other code of the score \(its numerics jkl-1, now jkl-2\)"):
        learn(scores=scores, workdir=tmp_path / "w", max_parents=2)
    run_json.write_text(today)
    assert any("unfinished" in line for line in workdir_status(tmp_path / "w"))
    res = learn(scores=scores, workdir=tmp_path / "w", max_parents=2)
    after = Workdir(tmp_path / "w").journal()
    assert all(after[t] == r for t, r in before.items()) and len(after) > len(before)
    assert sum(s["tasks_this_invocation"] for s in res.summary["stages"].values()) == len(after) - len(before)
    ref = learn(scores=scores, workdir=tmp_path / "ref", chunk_bits=5, max_parents=2)
    np.testing.assert_array_equal(res.posterior, ref.posterior)


@pytest.mark.parametrize("numerics, score_numerics", [("3f2a9c1e0b7d4a65", "d9af01c7347a91fb"),
                                                      ("76440e467093c924", "91c0d2e3f4a5b6c7")])
def test_a_workdir_of_another_source_hash_is_refused_once_with_fresh(data, tmp_path, numerics, score_numerics):
    """A workdir of any other bigbn before #38 (a hash of other sources, of bcf7076's engine
    with another score's code) proves nothing about its numbers: it is refused in one line
    naming --fresh."""
    learn(data, workdir=tmp_path / "w", max_parents=2)
    _as_before_numerics_versions(tmp_path / "w", numerics, score_numerics)
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path / "w"), "-k", "2", "-q"])
    assert r.exit_code == 1, r.output
    assert "computed by another bigbn version" in r.output or "computed by other code of the score" in r.output
    assert "--fresh" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path / "w"), "-k", "2", "-q", "--fresh"])
    assert r.exit_code == 0, r.output


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

# 2. journal records with wrong-typed fields
@pytest.mark.parametrize("damage", [
    lambda r: {**r, "task": 12},
    lambda r: {**r, "seconds": "0.02"},
    lambda r: {**r, "crc": "123"},
    lambda r: {**r, "crc": True},
    lambda r: {**r, "start": None},
    lambda r: {**r, "log_px": "-4489"} if r["stage"] == "edges" else {**r, "end": [1]},
    lambda r: [r],
])
def test_wrong_typed_journal_records_are_rerun_not_a_crash(tmp_path, damage):
    w = tmp_path / "w"
    ref = bigbn.learn(h.ASIA, max_parents=1, workdir=w)
    journal = w / "journal.jsonl"
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    hit = {"edges", "forward"}
    journal.write_text("".join(json.dumps(damage(r) if r["stage"] in hit else r) + "\n" for r in lines))
    status = workdir_status(w)  # no traceback
    assert any("unfinished" in line for line in status)
    res = bigbn.learn(h.ASIA, max_parents=1, workdir=w)
    np.testing.assert_array_equal(res.posterior, ref.posterior)
    assert res.summary["stages"]["edges"]["tasks_this_invocation"] == 1
    assert res.summary["stages"]["backward"]["tasks_this_invocation"] == 0, "good chunks kept"
    r = h.cli("status", "-w", w)
    assert r.exit_code == 0 and "finished" in r.output


def test_changed_data_under_the_same_workdir_says_so(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text(h.ASIA.read_text())
    assert h.cli("run", data, "-w", tmp_path / "w", "-q", "-k", 1).exit_code == 0
    data.write_text(h.ASIA.read_text().replace("\nno,", "\nyes,", 1))
    r = h.cli("run", data, "-w", tmp_path / "w", "-q", "-k", 1)
    assert r.exit_code == 1 and "the data differ from the run's" in r.output
    assert "software" not in r.output


@pytest.mark.slow
def test_sigterm_says_how_to_resume(tmp_path):
    import signal
    import time

    data = tmp_path / "d.csv"
    assert h.cli("simulate", "--n", 15, "--rows", 300, "--seed", 2, data).exit_code == 0
    cmd = [sys.executable, "-m", "bigbn.cli", "run", str(data), "-w", str(tmp_path / "w"), "-k", "4",
           "--chunk-bits", "6", "-q", "--top", "0"]
    p = subprocess.Popen(cmd, env=h.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = tmp_path / "w" / "journal.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None and \
            (not journal.exists() or journal.read_text().count("\n") < 20):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert err.strip().splitlines()[-1] == ("terminated (SIGTERM): finished tasks are kept; run the "
                                            "same command again to resume")
    assert "Traceback" not in err
    done = journal.read_text().count("\n")
    p = subprocess.run(cmd, env=h.env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    rerun = sum(s["tasks_this_invocation"] for s in summary["stages"].values())
    total = sum(s["tasks"] for s in summary["stages"].values())
    assert rerun <= total - done + 2, "finished tasks were kept"


def test_every_journal_crc_edited_is_called_a_mismatch_not_other_versions(tmp_path):
    """Issue #37: a journal whose CRCs were all edited was blamed on 'other software versions?';
    the stored scores match what this software computes, so the journal (or the tables) is
    corrupted. (The genuine case keeps its message: test_changed_scores_on_resume_...)"""
    from test_cli import assert_one_line_error

    asia = h.ROOT / "examples" / "asia.csv"
    args = ["run", str(asia), "-w", str(tmp_path), "-k", "1", "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    journal = tmp_path / "journal.jsonl"
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert sum("crc" in r for r in records) > 3
    journal.write_text("".join(json.dumps({**r, "crc": (r["crc"] + 1) % 2**32} if "crc" in r else r) + "\n"
                               for r in records))
    r = CliRunner().invoke(main, args)
    assert_one_line_error(r, f"{tmp_path}: the tables do not match the checksums in {journal} (the journal "
                             "or the tables are corrupted); use --fresh to start over")
    assert "software versions" not in r.output
    assert CliRunner().invoke(main, args + ["--fresh"]).exit_code == 0


def test_a_fresh_run_refused_for_its_options_keeps_the_old_run(tmp_path):
    """fresh=True with a memory budget, chunk bits or disk budget the run cannot use: refused
    before the old run is discarded (it was discarded first, and the folder was left holding
    lock and strength.csv, which --fresh did not remove: no run.json, so neither the old
    command nor the corrected one would touch it again)."""
    from bigbn.errors import BigBNError

    data = write_data(tmp_path / "d.csv", n=4, m=60)
    wd = tmp_path / "w"
    first = learn(data, workdir=wd, max_parents=2)
    before = sorted((p.relative_to(wd), p.stat().st_mtime_ns) for p in wd.rglob("*") if p.name != "lock")
    for bad in ({"memory": 1}, {"chunk_bits": 30}, {"disk_budget": 1}):
        with pytest.raises(BigBNError, match="too small|chunk bits"):
            learn(data, workdir=wd, max_parents=2, fresh=True, **bad)
        assert sorted((p.relative_to(wd), p.stat().st_mtime_ns) for p in wd.rglob("*")
                      if p.name != "lock") == before
    assert bigbn.open(wd).posterior.tolist() == first.posterior.tolist()
    # what --fresh removes is everything a run and its commands wrote: the folder is then
    # empty but for the lock, which a run of other data takes
    (wd / "network.bif").write_text("network x {}\n")  # as `bigbn export` leaves it
    Workdir(wd).clear()
    assert sorted(os.listdir(wd)) == ["lock"]
    learn(write_data(tmp_path / "e.csv", n=4, m=50, seed=3), workdir=wd, max_parents=2)
