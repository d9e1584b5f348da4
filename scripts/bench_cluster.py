"""Wall time of the engine: 2 threads (engine.execute) vs a LocalCluster of 2 worker processes.

    python scripts/bench_cluster.py              # n = 20
    python scripts/bench_cluster.py --big        # n = 20 and 22
    python scripts/bench_cluster.py --resources  # the resource table of docs/cluster.md

Random beta (tests/naive.py's random_beta), k = 3, alpha recomputed, chunk bits n - 4
(16 chunks) unless --chunk-bits is given. Both executors first run a tiny job (n = 8) so
that loading numba's cached kernels is not timed; cluster start-up is timed separately.
Both runs must give the same posterior (checked to 1e-12).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from math import comb
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from bigbn.engine.cluster import local_cluster, run_distributed  # noqa: E402
from bigbn.engine.tasks import Job, execute  # noqa: E402
from bigbn.plan.lattice import Plan  # noqa: E402
from bigbn.store.workdir import Workdir  # noqa: E402
from naive import random_beta  # noqa: E402

K = 3
GIB = 2**30


def make_job(root: Path, plan: Plan, beta: np.ndarray) -> Job:
    wd = Workdir(root)
    wd.create_tables(plan)
    return Job(wd, plan, beta)


def bench(n: int, chunk_bits: int, workers: int, tmp: Path) -> None:
    plan = Plan(n, K, chunk_bits)
    beta = random_beta(n, K, np.random.default_rng(n))
    ntasks = len(plan.tasks())
    print(f"n = {n}, k = {K}, chunk bits {chunk_bits}: {plan.n_chunks} chunks, {ntasks} tasks")

    warm = Plan(8, K, 4)  # load numba's cached kernels first: time the run, not the loading
    execute(make_job(tmp / f"warm-threads{n}", warm, random_beta(8, K, np.random.default_rng(0))),
            scheduler="threads", workers=workers)
    job = make_job(tmp / f"threads{n}", plan, beta)
    t = time.perf_counter()
    execute(job, scheduler="threads", workers=workers)
    print(f"  threads ({workers})            {time.perf_counter() - t:8.2f} s")
    ref = job.workdir.read("posterior", slice(None))

    t = time.perf_counter()
    with local_cluster(workers) as client:
        run_distributed(make_job(tmp / f"warm-cluster{n}", warm,
                                 random_beta(8, K, np.random.default_rng(0))), client)
        print(f"  cluster start-up, warm-up  {time.perf_counter() - t:8.2f} s")
        job = make_job(tmp / f"cluster{n}", plan, beta)
        t = time.perf_counter()
        run_distributed(job, client)
        print(f"  LocalCluster ({workers} processes) {time.perf_counter() - t:8.2f} s")
    diff = float(np.max(np.abs(job.workdir.read("posterior", slice(None)) - ref)))
    print(f"  max |difference| of posteriors {diff:.1e}")
    if diff > 1e-12:
        raise SystemExit("posteriors differ")


def resources(ns=range(26, 33), k=K, chunk_bits=(20, 22)) -> None:
    """Markdown table: disk (both alpha modes), per-task memory, useful workers."""
    print("| n | chunk bits | chunks | widest level | task memory | disk (recompute) | disk (store α) |")
    print("|---|---|---|---|---|---|---|")
    for n in ns:
        for c in chunk_bits:
            p, ps = Plan(n, k, c), Plan(n, k, c, "store")
            print(f"| {n} | {c} | {p.n_chunks} | {comb(p.h, p.h // 2)} "
                  f"| {p.task_memory_bytes() / 2**20:.0f} MiB "
                  f"| {sum(p.disk_bytes().values()) / GIB:.1f} GiB "
                  f"| {sum(ps.disk_bytes().values()) / GIB:.1f} GiB |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also n = 22")
    ap.add_argument("--chunk-bits", type=int, default=None, help="default n - 4")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--resources", action="store_true", help="print the docs table and exit")
    args = ap.parse_args()
    if args.resources:
        resources()
        return
    with tempfile.TemporaryDirectory(prefix="bench_cluster") as tmp:
        for n in (20, 22) if args.big else (20,):
            bench(n, args.chunk_bits or n - 4, args.workers, Path(tmp))


if __name__ == "__main__":
    main()
