#!/usr/bin/env python
"""Benchmark: tiered runs (`bigbn run --tiers`) far beyond n = 32.

Binary data from a layered random network (`bigbn simulate --tier-sizes`: the order lists
tier 1 first, parents uniform among the predecessors, k = 3), m = 1000 rows, K2 score,
koivisto-sood prior. Each case runs in its own process (peak RSS is that run's) in a
fresh workdir, polled every 0.2 s for peak disk, and deleted after. Prints wall time,
scores-stage time, per-stage task-seconds and walls, peak RSS and peak disk against `bigbn plan`'s,
and the whole wall over the plan's time (on the plan's clock: calibrate first, `bigbn plan
--calibrate`, for this machine's).

    python scripts/bench_tiers.py                        # 4x16, 4x25, 2x30 (plans 2x30 first)
    python scripts/bench_tiers.py --sizes 16,16,16,16 --workdir /scratch/bench
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import du


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["16,16,16,16", "25,25,25,25", "30,30"],
                    help="tier sizes of each case, e.g. 25,25,25,25")
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default=None, help="parent folder of the run workdirs (default: a temp dir)")
    args = ap.parse_args()

    base = Path(args.workdir or tempfile.mkdtemp(prefix="bigbn-bench-tiers-"))
    base.mkdir(parents=True, exist_ok=True)
    bigbn = [sys.executable, "-m", "bigbn.cli"]
    rows = []
    for sizes in args.sizes:
        n = sum(int(s) for s in sizes.split(","))
        plan = subprocess.run(bigbn + ["plan", "--tier-sizes", sizes, "-k", str(args.k), "--workdir", str(base),
                                       "--rows", str(args.rows)],
                              check=True, capture_output=True, text=True).stdout
        print(plan, flush=True)
        planned = re.search(r"^time: +≈ ([0-9.]+) (s|min|h)", plan, re.M)
        if "NOT enough" in plan:
            print(f"skipping {sizes}: not enough disk", flush=True)
            continue
        data = base / f"layered-{sizes.replace(',', '-')}.csv"
        subprocess.run(bigbn + ["simulate", "--force", "--tier-sizes", sizes, "-k", str(args.k), "--rows", str(args.rows),
                                "--seed", str(args.seed), str(data)], check=True, capture_output=True)
        wd = base / f"run-{sizes.replace(',', '-')}"
        peak = [0]
        done = threading.Event()

        def poll():
            while not done.is_set():
                peak[0] = max(peak[0], du(wd))
                time.sleep(0.2)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        t0 = time.time()
        subprocess.run(bigbn + ["run", str(data), "--tiers", str(data.with_name(data.stem + ".tiers.csv")),
                                "-w", str(wd), "-k", str(args.k), "--score", "k2", "-q", "--fresh"],
                       check=True, capture_output=True)
        wall = time.time() - t0
        done.set()
        watcher.join()
        s = json.loads((wd / "summary.json").read_text())
        stages = {k: v["task_seconds"] for k, v in s["stages"].items()}
        walls = {k: round(v["wall_seconds"], 1) for k, v in s["stages"].items()}
        print(f"stage walls {walls}", flush=True)
        rows.append((sizes, n, wall, s["scoring_seconds_this_invocation"], stages, s["peak_rss_bytes"], peak[0],
                     sum(s["disk_bytes"].values()),
                     float(planned[1]) * {"s": 1, "min": 60, "h": 3600}[planned[2]] if planned else float("nan")))
        print(f"tiers {sizes} (n = {n}): {wall:.1f} s wall, scores {s['scoring_seconds_this_invocation']:.1f} s, "
              f"task-seconds {stages}, peak RSS {s['peak_rss_bytes'] / 2**20:.0f} MiB, "
              f"peak disk {peak[0] / 2**20:.0f} MiB (planned {sum(s['disk_bytes'].values()) / 2**20:.0f} MiB), "
              f"log p(x) {s['log_marginal_likelihood']:.6f}", flush=True)
        shutil.rmtree(wd, ignore_errors=True)
    print("\n| tiers | n | wall | plan | wall / plan | scores | forward | backward | peak RSS | peak disk |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sizes, n, wall, sc, st, rss, pk, _, pl in rows:
        print(f"| {sizes} | {n} | {wall:.1f} s | {pl:.1f} s | {wall / pl:.2f} | {sc:.1f} s | {st.get('forward', 0):.1f} | "
              f"{st.get('backward', 0):.1f} | {rss / 2**20:.0f} MiB | {pk / 2**20:.0f} MiB |")
    if args.workdir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
