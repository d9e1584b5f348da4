#!/usr/bin/env python
"""Benchmark: a dynamic network (`bigbn run --lag L`) against a static run of the same rows.

Issue #40's target: the DP of a DBN costs what a static run of its n nodes costs; only the
scoring grows with the lagged candidates (C(n(L+1) − 1, ≤ k) families per node). One series
of rows + L binary rows is drawn from a random 2-TBN (`bigbn simulate --lag L`, k parents);
the DBN run reads it with `--lag L`, the static run the same transition rows' slice-t
columns (the rows x_t, t ≥ L, as a plain table). K2 score, koivisto-sood prior, `-k` k.
Each run in its own process (its peak RSS) in a fresh workdir, deleted after. Prints wall,
scores time, per-stage task-seconds, peak RSS and the ratios DBN / static, interleaved
(static, DBN, static, DBN, ...) for --repeat rounds.

    python scripts/bench_dbn.py --n 16                  # L = 1, 2000 rows, k = 3
    python scripts/bench_dbn.py --n 20 --lag 2 --repeat 2
    python scripts/bench_dbn.py --n 28 --workdir /scratch/bench   (the issue's target; large)
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str], wd: Path) -> dict:
    t0 = time.time()
    subprocess.run(cmd + ["-w", str(wd), "-q", "--fresh"], check=True, capture_output=True)
    wall = time.time() - t0
    s = json.loads((wd / "summary.json").read_text())
    shutil.rmtree(wd, ignore_errors=True)
    return {"wall": wall, "scores": s["scoring_seconds_this_invocation"], "rss": s["peak_rss_bytes"],
            "stages": {k: round(v["task_seconds"], 2) for k, v in s.get("stages", {}).items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16, help="variables per slice")
    ap.add_argument("--lag", type=int, default=1)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, default=2000, help="transition rows")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds")
    ap.add_argument("--workdir", default=None, help="parent folder of the run workdirs (default: a temp dir)")
    args = ap.parse_args()

    base = Path(args.workdir or tempfile.mkdtemp(prefix="bigbn-bench-dbn-"))
    base.mkdir(parents=True, exist_ok=True)
    bigbn = [sys.executable, "-m", "bigbn.cli"]
    series = base / "series.csv"
    subprocess.run(bigbn + ["simulate", "--force", "--lag", str(args.lag), "--n", str(args.n), "-k", str(args.k),
                            "--rows", str(args.rows + args.lag), "--seed", str(args.seed), str(series)],
                   check=True, capture_output=True)
    static = base / "static.csv"  # slice t of every transition row: rows lag.. of the series
    with open(series, newline="") as fin, open(static, "w", newline="") as fout:
        rows = list(csv.reader(fin))
        w = csv.writer(fout, lineterminator="\n")
        w.writerow(rows[0][2:])
        w.writerows(r[2:] for r in rows[1 + args.lag:])
    common = ["-k", str(args.k), "--score", "k2"]
    cases = {"static": bigbn + ["run", str(static)] + common,
             "dbn": bigbn + ["run", str(series), "--lag", str(args.lag), "--series-column", "series",
                             "--time-column", "t"] + common}
    got: dict[str, list[dict]] = {"static": [], "dbn": []}
    for r in range(args.repeat):
        for name, cmd in cases.items():
            out = run(cmd, base / f"run-{name}")
            got[name].append(out)
            print(f"round {r + 1} {name}: n = {args.n}, lag {args.lag}, {args.rows} rows, k = {args.k}: "
                  f"{out['wall']:.1f} s wall, scores {out['scores']:.1f} s, peak RSS {out['rss'] / 2**20:.0f} MiB, "
                  f"task-seconds {out['stages']}", flush=True)
    best = {name: min(x["wall"] for x in v) for name, v in got.items()}
    rss = {name: max(x["rss"] for x in v) for name, v in got.items()}
    print(f"DBN / static: wall {best['dbn'] / best['static']:.2f} (best of {args.repeat}), "
          f"peak RSS {rss['dbn'] / rss['static']:.2f}")
    if args.workdir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
