#!/usr/bin/env python
"""Benchmark of the exact DAG sampler (`bigbn sample`) against the run it samples from.

Data as scripts/bench.py (paper section 5.2: random binary network, k = 3, m = 1000, K2,
koivisto-sood). For each n, --repeat rounds of one `bigbn run` (in a fresh workdir), then
`bigbn sample` for each T from it, each in its own process (so peak RSS is the sampler's):
run and draw alternate, so a busy machine slows both alike. Prints the run's median wall
time, and per T: the median wall time, the median (least–largest) of the rounds' ratios
draw / run, samples/s, time of the chunk sweep, the parent draws and the #LE
counting, chunks read (of the run's chunks), distinct DAGs, peak RSS, and the edge
self-check's worst |z| (these of the median draw).

    python scripts/bench_sample.py --n 24 28 --samples 10000 100000
    python scripts/bench_sample.py --n 20 24 28 --samples 10000 --repeat 5   # #39 item 4
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[20, 24])
    ap.add_argument("--samples", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prior", default="order-modular", choices=["order-modular", "dag-modular"])
    ap.add_argument("--repeat", type=int, default=3, help="rounds (a run, then each T's draw from it); medians")
    ap.add_argument("--workdir", default=None, help="parent folder of the run workdirs (default: a temp dir)")
    args = ap.parse_args()

    base = Path(args.workdir or tempfile.mkdtemp(prefix="bigbn-bench-sample-"))
    base.mkdir(parents=True, exist_ok=True)
    bigbn = [sys.executable, "-m", "bigbn.cli"]
    rows = []
    try:
        for n in args.n:
            data = base / f"data-n{n}.csv"
            subprocess.run(bigbn + ["simulate", "--force", "--n", str(n), "-k", str(args.k), "--rows", str(args.rows),
                                    "--seed", str(args.seed), str(data)], check=True, stdout=subprocess.DEVNULL)
            wd = base / f"run-n{n}"
            rounds = {T: [] for T in args.samples}
            run_walls = []
            for _ in range(args.repeat):  # a run, then each T's draw from it: one round
                shutil.rmtree(wd, ignore_errors=True)  # no draws kept from the round before
                t0 = time.time()
                subprocess.run(bigbn + ["run", str(data), "--workdir", str(wd), "-k", str(args.k), "--score", "k2",
                                        "--quiet", "--top", "0"], check=True, stdout=subprocess.DEVNULL)
                run_walls.append(time.time() - t0)
                for T in args.samples:
                    t0 = time.time()
                    subprocess.run(bigbn + ["sample", "--workdir", str(wd), "--samples", str(T), "--seed", "1",
                                            "--prior", args.prior, "--top", "0"], check=True,
                                   stdout=subprocess.DEVNULL)
                    wall = time.time() - t0
                    s = json.loads((wd / f"samples-{args.prior}" / "summary.json").read_text())
                    rounds[T].append((wall, wall / run_walls[-1], s))
            for T in args.samples:
                walls = [w for w, _, _ in rounds[T]]
                ratios = [r for _, r, _ in rounds[T]]
                s = rounds[T][walls.index(statistics.median_low(walls))][2]  # the median draw's own figures
                wall = statistics.median(walls)
                line = {"n": n, "T": T, "rounds": args.repeat, "run_wall_s": round(statistics.median(run_walls), 2),
                        "sample_wall_s": round(wall, 2),
                        "sample_over_run": round(statistics.median(ratios), 2),
                        "sample_over_run_range": [round(min(ratios), 2), round(max(ratios), 2)],
                        "samples_per_s": round(T / wall), **{f"{k}_s": v for k, v in s["seconds"].items()},
                        "chunks_read": s["chunks_read"], "chunks": s["chunks"],
                        "distinct_dags": s["distinct_dags"], "peak_rss_MiB": round(s["peak_rss_bytes"] / 2**20),
                        "ess": round(s["ess"]), "max_abs_z": round(s["edge_check"]["max_abs_z"], 2)}
                rows.append(line)
                print(json.dumps(line), flush=True)
            shutil.rmtree(wd, ignore_errors=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    print()
    print(f"{'n':>3} {'T':>7} {'run s':>7} {'sample s':>9} {'/run':>5} {'(range)':>11} {'samples/s':>10} {'sweep':>6} {'parents':>8} "
          f"{'#LE':>6} {'chunks':>9} {'distinct':>9} {'RSS MiB':>8} {'|z|max':>7}")
    for r in rows:
        print(f"{r['n']:>3} {r['T']:>7} {r['run_wall_s']:>7} {r['sample_wall_s']:>9} {r['sample_over_run']:>5} "
              f"{'%.2f-%.2f' % tuple(r['sample_over_run_range']):>11} "
              f"{r['samples_per_s']:>10} "
              f"{r['sweep_s']:>6} {r['parents_s']:>8} {r['linear_extensions_s']:>6} "
              f"{r['chunks_read']:>4}/{r['chunks']:<4} {r['distinct_dags']:>9} {r['peak_rss_MiB']:>8} "
              f"{r['max_abs_z']:>7}")


if __name__ == "__main__":
    main()
