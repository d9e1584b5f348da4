"""The executors (bigbn/engine/executors/) against the specification: on the task specs of real
plans, with a recording task function instead of the engine, every task runs exactly once,
only after everything it depends on, events come in start/end pairs on the calling thread,
and a failing task ends the run only after the tasks in flight have finished. The local
threaded executors (bigbn's and dask's) keep B within the disk the plan counts for them;
whole runs on dask's scheduler give the sync run's tables bit for bit, and resume."""

import random
import threading
import time

import numpy as np
import pytest

import helpers as h
from bigbn import learn
from bigbn.errors import EngineError, OptionError
from bigbn.engine.executors import Callback, dask_local, sync, threads
from bigbn.plan.lattice import Plan, TaskSpec, live_chunks, ordered_workers
from bigbn.store.workdir import Workdir
from test_resume import Count, FailOn, wrapped, write_data

PLANS = [Plan(7, 2, 3, "store"), Plan(9, 3, 4), Plan(6, 5, 6)]


class Recorder:
    """Task function: checks and notes that each task starts after its dependencies end."""

    def __init__(self, pending, seconds=0.0, fail=None):
        self.pending = {s.key for s in pending}
        self.seconds, self.fail = seconds, fail
        self.ended: dict[tuple, float] = {}
        self.started: dict[tuple, float] = {}
        self.runs: list[tuple] = []
        self.violations: list[tuple] = []
        self.lock = threading.Lock()

    def __call__(self, spec: TaskSpec):
        with self.lock:
            self.runs.append(spec.key)
            self.started[spec.key] = time.monotonic()
            self.violations += [(spec.key, d) for d in spec.deps if d not in self.ended and d in self.pending]
        time.sleep(self.seconds)
        if spec.key == self.fail:
            raise RuntimeError(f"injected fault in {spec.key}")
        with self.lock:
            self.ended[spec.key] = time.monotonic()
        return {"key": spec.key}


class Events(Callback):
    def __init__(self):
        self.log, self.threads = [], set()

    def on_task_start(self, event):
        self.log.append(("start", event.key))
        self.threads.add(threading.get_ident())

    def on_task_end(self, event):
        assert event.result == {"key": event.key} and event.end >= event.start
        self.log.append(("end", event.key))
        self.threads.add(threading.get_ident())


def run(executor, specs, fn, callbacks=(), workers=3):
    """"dask7" is dask's executor with the plan cut into dask graphs of 7 tasks (a run's
    are of `dask_local.WINDOW`): what holds for one graph must hold across windows."""
    if executor == "sync":
        sync.run(specs, fn, callbacks=callbacks)
    elif executor == "dask7":
        window, dask_local.WINDOW = dask_local.WINDOW, 7
        try:
            dask_local.run(specs, fn, workers=workers, callbacks=callbacks)
        finally:
            dask_local.WINDOW = window
    else:
        {"threads": threads, "dask": dask_local}[executor].run(specs, fn, workers=workers, callbacks=callbacks)


@pytest.mark.parametrize("executor", ["sync", "threads", "dask", "dask7"])
@pytest.mark.parametrize("plan", PLANS, ids=str)
@pytest.mark.parametrize("skip", [0, 5])
def test_each_task_once_after_its_dependencies(executor, plan, skip):
    specs = list(plan.tasks())
    done = {s.key for s in specs[1:1 + skip]}  # finished earlier: not run, deps satisfied
    pending = [s for s in specs if s.key not in done]
    rec, ev = Recorder(pending), Events()
    run(executor, pending, rec, [ev])
    assert sorted(rec.runs) == sorted(s.key for s in pending)
    assert rec.violations == []
    assert ev.threads == {threading.get_ident()}
    for s in pending:
        assert ev.log.index(("start", s.key)) < ev.log.index(("end", s.key))
    if executor == "sync":  # the specification: the plan's own order
        assert rec.runs == [s.key for s in pending]


@pytest.mark.parametrize("executor", ["threads", "dask"])
def test_threads_run_tasks_concurrently(executor):
    """Independent tasks overlap in time, never more of them than workers. (Read off each
    task's start and end, not off the wall clock, which a busy machine stretches.)"""
    plan = Plan(8, 2, 4)
    rec = Recorder(plan.tasks(), seconds=0.05)
    run(executor, plan.tasks(), rec, workers=4)
    events = sorted([(t, 1) for t in rec.started.values()] + [(t, -1) for t in rec.ended.values()],
                    key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert 2 <= peak <= 4


@pytest.mark.parametrize("executor", ["threads", "dask", "dask7"])
@pytest.mark.parametrize("workers", [1, 3])
def test_failure_waits_for_tasks_in_flight_and_starts_nothing_new(executor, workers):
    specs = Plan(8, 2, 3).tasks()
    fail = ("forward", 3)
    rec = Recorder(specs, seconds=0.02, fail=fail)
    with pytest.raises(RuntimeError, match="injected fault"):
        run(executor, specs, rec, workers=workers)
    with rec.lock:
        ended_at_return = set(rec.ended)
    # every task that started, but the failing one, had ended: none was still running
    assert set(rec.runs) - {fail} == ended_at_return
    assert fail not in rec.ended and len(rec.runs) < len(specs)
    if workers == 1:
        assert rec.runs[-1] == fail  # nothing started after it


@pytest.mark.parametrize("executor", ["sync", "threads", "dask", "dask7"])
def test_a_dependency_cycle_is_reported(executor):
    a = TaskSpec(key=("forward", 0), reads=(), writes=(), deps=(("forward", 1),))
    b = TaskSpec(key=("forward", 1), reads=(), writes=(), deps=(("forward", 0),))
    ran = []
    with pytest.raises(EngineError, match="never became ready"):
        run(executor, [a, b], ran.append)
    assert ran == []



# ------------------------------------------------------------------ dask's threaded scheduler

def test_dask_with_one_worker_runs_the_plan_order_not_dask_order():
    """One worker: dask starts the tasks in the sync order, which dask's own static order
    (what it would follow without bigbn's priorities) is not."""
    from dask.order import order

    plan = Plan(10, 2, 2)
    specs = plan.tasks()
    rec = Recorder(specs)
    dask_local.run(specs, rec, workers=1)
    assert rec.runs == [s.key for s in specs]
    own = order(dask_local.graph(specs, rec))
    assert sorted(own, key=own.get) != rec.runs


class LiveChunks:
    """Task function: random short sleeps; counts the chunks of B that exist, each from
    the start of the task that writes it to the end of the release that deletes it."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.live, self.peak, self.lock = set(), 0, threading.Lock()

    def __call__(self, spec):
        with self.lock:
            self.live |= {cc for r in spec.writes if r.table == "backward" for cc in r.chunks}
            self.peak = max(self.peak, len(self.live))
            pause = self.rng.choice([0.0, 0.0002, 0.001, 0.003])
        time.sleep(pause)
        with self.lock:
            self.live -= {cc for r in spec.deletes if r.table == "backward" for cc in r.chunks}
        return {}


@pytest.mark.parametrize("executor", ["threads", "dask", "dask7"])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_local_executors_keep_b_within_the_planned_disk(executor, workers):
    """The plan's bound for ordered local threads (`plan.live_chunks(h, workers)`, what
    `Plan.disk_bytes(ordered_workers(scheduler, workers))` counts) holds on the real
    executors, with task times drawn at random; at h = 8 it is well below two levels."""
    plan = Plan(10, 2, 2)  # 2^8 chunks, as at n = 28 with c = 20
    assert ordered_workers(executor.rstrip("7"), workers) == workers
    bound = live_chunks(plan.h, workers)
    assert bound < live_chunks(plan.h) == 126
    for seed in range(3):
        fn = LiveChunks(seed)
        run(executor, plan.tasks(), fn, workers=workers)
        assert fn.live == {(0,)}  # B(0), read by edges, is all that is left
        assert fn.peak <= bound


@pytest.mark.parametrize("size", [1, 5, 64, 10**6])
def test_dask_windows_are_the_one_worker_order_cut_in_runs(size):
    """The windows, joined, are the order the sync executor runs (each spec once), at
    most ``size`` each, and no task depends on one in a later window."""
    plan = Plan(8, 2, 3)
    specs = plan.tasks()
    rec = Recorder(specs)
    sync.run(specs, rec)
    parts = dask_local.windows(specs, size)
    assert [s.key for p in parts for s in p] == rec.runs
    assert all(1 <= len(p) <= size for p in parts)
    window = {s.key: i for i, p in enumerate(parts) for s in p}
    assert all(window[d] <= window[s.key] for s in specs for d in s.deps)
    assert len(parts) == -(-len(specs) // size)


def test_dask_with_one_worker_runs_the_plan_order_across_windows():
    plan = Plan(10, 2, 2)
    specs = plan.tasks()
    rec = Recorder(specs)
    run("dask7", specs, rec, workers=1)
    assert rec.runs == [s.key for s in specs]


def test_dask_in_its_own_order_would_exceed_the_bound():
    """What the priorities are for: the same graph on dask's threaded scheduler without
    them (its own order) keeps more chunks of B than the plan counts for one worker."""
    from dask.threaded import get

    plan = Plan(10, 2, 2)
    fn = LiveChunks(0)
    dsk = dask_local.graph(plan.tasks(), fn)
    get(dsk, list(dsk), num_workers=1)
    assert fn.live == {(0,)}
    assert fn.peak > live_chunks(plan.h, 1)


def journal_crcs(workdir) -> dict:
    return {task: rec["crc"] for task, rec in Workdir(workdir).journal().items()}


@pytest.fixture(scope="module")
def data9(tmp_path_factory):
    return write_data(tmp_path_factory.mktemp("d") / "data.csv")


@pytest.mark.parametrize("options", [
    dict(chunk_bits=5, max_parents=2),
    dict(chunk_bits=3, max_parents=3, alpha_mode="store"),
    dict(chunk_bits=4, max_parents=2, map_dag=True),
    dict(chunk_bits=2, max_parents=2, tiers=[["V0", "V1", "V2"], ["V3", "V4", "V5", "V6"], ["V7", "V8"]]),
], ids=["plain", "store", "map", "tiers"])
@pytest.mark.parametrize("window", [1024, 5])
def test_dask_runs_give_the_sync_tables_bit_for_bit(data9, tmp_path, options, window, monkeypatch):
    monkeypatch.setattr(dask_local, "WINDOW", window)
    ref = learn(data9, workdir=tmp_path / "sync", scheduler="sync", **options)
    res = learn(data9, workdir=tmp_path / "dask", scheduler="dask", workers=3, **options)
    crcs = journal_crcs(tmp_path / "sync")
    assert len(crcs) > 20 and journal_crcs(tmp_path / "dask") == crcs
    assert np.array_equal(res.posterior, ref.posterior) and res.log_marginal == ref.log_marginal
    if options.get("map_dag"):
        assert np.array_equal(res.map_parents, ref.map_parents)


@pytest.mark.parametrize("fail_at,when", [(9, "before"), (30, "after_write"), (41, "after_journal")])
def test_dask_run_resumes_after_a_failing_task(data9, tmp_path, fail_at, when):
    ref = learn(data9, workdir=tmp_path / "sync", chunk_bits=5, max_parents=2, scheduler="sync")
    with pytest.raises(RuntimeError, match="injected fault"), wrapped(FailOn(fail_at, when=when)):
        learn(data9, workdir=tmp_path / "w", chunk_bits=5, max_parents=2, scheduler="dask")
    all_ids = {t.id for t in Plan(9, 2, 5).tasks()}
    done_before = set(Workdir(tmp_path / "w").journal()) & all_ids
    assert len(done_before) < len(all_ids)
    count = Count()
    with wrapped(count):
        res = learn(data9, workdir=tmp_path / "w", chunk_bits=5, max_parents=2, scheduler="dask")
    assert sorted(count.keys) == sorted(all_ids - done_before)  # the missing ones, once each
    assert journal_crcs(tmp_path / "w") == journal_crcs(tmp_path / "sync")
    assert np.array_equal(res.posterior, ref.posterior) and res.log_marginal == ref.log_marginal


def test_cli_runs_on_dask(tmp_path):
    out = h.cli("run", h.ASIA, "--workdir", tmp_path / "w", "-k", "2", "--chunk-bits", "4",
                "--scheduler", "dask", "--quiet", "--top", "0")
    assert out.exit_code == 0, out.output
    ref = h.cli("run", h.ASIA, "--workdir", tmp_path / "s", "-k", "2", "--chunk-bits", "4",
                "--scheduler", "sync", "--quiet", "--top", "0")
    assert ref.exit_code == 0, ref.output
    assert journal_crcs(tmp_path / "w") == journal_crcs(tmp_path / "s")
    assert (tmp_path / "w" / "edges.csv").read_text() == (tmp_path / "s" / "edges.csv").read_text()


def test_local_processes_beyond_the_machine_are_refused_before_any_starts(monkeypatch):
    """--scheduler processes --workers 10^20 (bigbn effects, bigbn sample; bigbn run
    --processes --workers 5000) started worker processes until killed: a hang."""
    import distributed as dask_distributed

    from bigbn.engine.executors import distributed

    def no_cluster(*args, **kwargs):  # (this test must start no processes, with or without the fix)
        pytest.fail(f"a LocalCluster of {kwargs.get('n_workers')} workers was started")

    monkeypatch.setattr(dask_distributed, "LocalCluster", no_cluster)
    limit = distributed.max_local_processes()
    for workers in (limit + 1, 10**20):
        with pytest.raises(OptionError, match=f"--workers {workers} with the processes scheduler .* at most {limit}"):
            with distributed.local_cluster(workers):
                pytest.fail("a cluster was started")
