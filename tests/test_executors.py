"""The executors (bigbn/executors/) against the specification: on the task specs of real
plans, with a recording task function instead of the engine, every task runs exactly once,
only after everything it depends on, events come in start/end pairs on the calling thread,
and a failing task ends the run only after the tasks in flight have finished."""

import threading
import time

import pytest

from bigbn.errors import EngineError
from bigbn.executors import Callback, sync, threads
from bigbn.plan import Plan, TaskSpec

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


def run(executor, specs, fn, callbacks=()):
    if executor == "sync":
        sync.run(specs, fn, callbacks=callbacks)
    else:
        threads.run(specs, fn, workers=3, callbacks=callbacks)


@pytest.mark.parametrize("executor", ["sync", "threads"])
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


def test_threads_run_tasks_concurrently():
    """Independent tasks overlap in time, never more of them than workers. (Read off each
    task's start and end, not off the wall clock, which a busy machine stretches.)"""
    plan = Plan(8, 2, 4)
    rec = Recorder(plan.tasks(), seconds=0.05)
    threads.run(plan.tasks(), rec, workers=4)
    events = sorted([(t, 1) for t in rec.started.values()] + [(t, -1) for t in rec.ended.values()],
                    key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert 2 <= peak <= 4


@pytest.mark.parametrize("workers", [1, 3])
def test_failure_waits_for_tasks_in_flight_and_starts_nothing_new(workers):
    specs = Plan(8, 2, 3).tasks()
    fail = ("forward", 3)
    rec = Recorder(specs, seconds=0.02, fail=fail)
    with pytest.raises(RuntimeError, match="injected fault"):
        threads.run(specs, rec, workers=workers)
    with rec.lock:
        ended_at_return = set(rec.ended)
    # every task that started, but the failing one, had ended: none was still running
    assert set(rec.runs) - {fail} == ended_at_return
    assert fail not in rec.ended and len(rec.runs) < len(specs)
    if workers == 1:
        assert rec.runs[-1] == fail  # nothing started after it


def test_a_dependency_cycle_is_reported():
    a = TaskSpec(key=("forward", 0), reads=(), writes=(), deps=(("forward", 1),))
    b = TaskSpec(key=("forward", 1), reads=(), writes=(), deps=(("forward", 0),))
    with pytest.raises(EngineError, match="never became ready"):
        sync.run([a, b], lambda spec: None)
