#!/usr/bin/env python
"""Where a task's time goes: the forward and backward tasks of a finished run, run again
one at a time (one thread, plan order) with every kernel and table read/write timed.

Needs a workdir kept by `scripts/bench.py --keep` (the tasks rewrite its L and B chunks
with the same values; B's released levels are written anew). Prints, per stage, the
milliseconds per task of each kernel (bigbn/kernels/) and of the chunk I/O
(bigbn/store/workdir.py: reads; writes with their fsync), wall and the thread's CPU
time (on a busy machine the second says more about the kernels; the I/O's waits are
wall only).

    python scripts/bench.py --n 28 --workdir /scratch/b --keep
    python scripts/bench_tasks.py /scratch/b/run-n28-m1000
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

from bigbn.engine import tasks as engine
from bigbn import kernels as K
from bigbn.store.rundir import read_record
from bigbn.store.workdir import TableStore, Workdir

KERNELS = ("_recursion_tiles", "_high_term", "_gamma_low", "_gamma_high", "_ext_from_log_into", "_log_ext_into",
           "_ext_fma_log_into")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workdir")
    ap.add_argument("--stages", default="forward,backward")
    args = ap.parse_args()

    root = Path(args.workdir)
    wd = Workdir(root)
    job = engine.Job(wd, read_record(root).plan.lattices(0)[0], wd.read("beta", slice(None)))
    seconds, cpu, calls = collections.Counter(), collections.Counter(), collections.Counter()

    def timed(label, fn):
        def run(*a, **kw):
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                seconds[label] += time.perf_counter() - t
                cpu[label] += time.thread_time() - c
                calls[label] += 1
        return run

    for name in KERNELS:
        if hasattr(K, name):  # (another checkout's kernels may lack some)
            setattr(K, name, timed(name, getattr(K, name)))
    read, write = TableStore.read, TableStore.write
    TableStore.read = lambda self, name, *a: timed(f"read {name}", read)(self, name, *a)
    TableStore.write = lambda self, name, *a: timed(f"write {name} (+fsync)", write)(self, name, *a)

    specs = job.plan.tasks()
    for kind in args.stages.split(","):
        tasks = [s for s in specs if s.kind == kind]
        engine.compute(job, tasks[0])  # compile / warm
        seconds.clear()
        cpu.clear()
        calls.clear()
        t0, c0 = time.perf_counter(), time.thread_time()
        for s in tasks:
            engine.compute(job, s)
        total, total_cpu = time.perf_counter() - t0, time.thread_time() - c0
        print(f"{kind}: {len(tasks)} tasks, {1e3 * total / len(tasks):.1f} ms per task "
              f"({1e3 * total_cpu / len(tasks):.1f} ms thread CPU time)")
        for label, s in seconds.most_common():
            print(f"  {label:<28} {1e3 * s / len(tasks):8.1f} ms per task, {1e3 * cpu[label] / len(tasks):8.1f} ms CPU"
                  f"  ({calls[label]} calls)")


if __name__ == "__main__":
    main()
