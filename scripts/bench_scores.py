#!/usr/bin/env python
"""The scores stage at many rows: `bigbn.scores.discrete.local_scores` timed on simulated data.

Random network (k parents, r states), m rows, K2 (or --score bdeu); prints the wall and
CPU seconds of local_scores (median of --repeat, 2 threads by default) and the peak RSS
of the process.

    python scripts/bench_scores.py --n 30 --rows 100000 1000000 --states 2 3
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np

from bigbn.io.data import Dataset
from bigbn.scores.discrete import local_scores
from bigbn.tools.simulate import random_network, sample


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[100000, 1000000])
    ap.add_argument("--states", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--score", nargs="+", default=["k2"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    print(f"n = {args.n}, k = {args.k}, {args.threads} threads: local_scores wall and CPU "
          f"seconds (median of {args.repeat}; CPU time is less sensitive to other jobs)")
    print(f"{'r':>3} {'rows':>9} {'score':>6} {'seconds':>9} {'CPU s':>9} {'peak RSS MiB':>13}")
    for r in args.states:
        net = random_network(args.n, args.k, r, np.random.default_rng(args.seed))
        for m in args.rows:
            data = sample(net, m, np.random.default_rng(args.seed + m))
            ds = Dataset(tuple(f"x{j}" for j in range(args.n)), data, np.full(args.n, r),
                         tuple(tuple(str(v) for v in range(r)) for _ in range(args.n)))
            for score in args.score:
                local_scores(ds, args.k, score, threads=args.threads)  # compile / warm
                secs, cpus = [], []
                for _ in range(args.repeat):
                    t0, c0 = time.perf_counter(), time.process_time()
                    local_scores(ds, args.k, score, threads=args.threads)
                    secs.append(time.perf_counter() - t0)
                    cpus.append(time.process_time() - c0)
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                print(f"{r:>3} {m:>9} {score:>6} {statistics.median(secs):>9.2f} "
                      f"{statistics.median(cpus):>9.2f} {rss:>13.0f}", flush=True)


if __name__ == "__main__":
    main()
