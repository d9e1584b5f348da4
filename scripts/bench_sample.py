#!/usr/bin/env python
"""Benchmark of the exact DAG sampler (`bigbn sample`) against the run it samples from.

Data as scripts/bench.py (paper section 5.2: random binary network, k = 3, m = 1000, K2,
koivisto-sood). For each n: one `bigbn run`, then `bigbn sample` for each T in its own
process (so peak RSS is the sampler's). Prints the run's wall time, and per T: wall time,
its ratio to the run's, samples/s, time of the chunk sweep, the parent draws and the #LE
counting, chunks read (of the run's chunks), distinct DAGs, peak RSS, and the edge
self-check's worst |z|.

    python scripts/bench_sample.py --n 24 28 --samples 10000 100000
"""

from __future__ import annotations

import argparse
import json
import shutil
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
            t0 = time.time()
            subprocess.run(bigbn + ["run", str(data), "--workdir", str(wd), "-k", str(args.k), "--score", "k2",
                                    "--fresh", "--quiet", "--top", "0"], check=True, stdout=subprocess.DEVNULL)
            run_wall = time.time() - t0
            for T in args.samples:
                t0 = time.time()
                subprocess.run(bigbn + ["sample", "--workdir", str(wd), "--samples", str(T), "--seed", "1",
                                        "--prior", args.prior, "--top", "0"], check=True, stdout=subprocess.DEVNULL)
                wall = time.time() - t0
                s = json.loads((wd / f"samples-{args.prior}" / "summary.json").read_text())
                line = {"n": n, "T": T, "run_wall_s": round(run_wall, 1), "sample_wall_s": round(wall, 1),
                        "sample_over_run": round(wall / run_wall, 2),
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
    print(f"{'n':>3} {'T':>7} {'run s':>7} {'sample s':>9} {'/run':>5} {'samples/s':>10} {'sweep':>6} {'parents':>8} "
          f"{'#LE':>6} {'chunks':>9} {'distinct':>9} {'RSS MiB':>8} {'|z|max':>7}")
    for r in rows:
        print(f"{r['n']:>3} {r['T']:>7} {r['run_wall_s']:>7} {r['sample_wall_s']:>9} {r['sample_over_run']:>5} "
              f"{r['samples_per_s']:>10} "
              f"{r['sweep_s']:>6} {r['parents_s']:>8} {r['linear_extensions_s']:>6} "
              f"{r['chunks_read']:>4}/{r['chunks']:<4} {r['distinct_dags']:>9} {r['peak_rss_MiB']:>8} "
              f"{r['max_abs_z']:>7}")


if __name__ == "__main__":
    main()
