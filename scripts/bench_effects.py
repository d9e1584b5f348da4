#!/usr/bin/env python
"""Benchmark of `bigbn effects` (Bayesian IDA) against the run it reads.

For each n: data from a random network with at most k parents per node (continuous: a
linear Gaussian network, coefficients ±U(0.5, 1.5), unit noise, m rows; discrete: the
paper's section 5.2 binary network via `bigbn simulate`), one `bigbn run`, then
`bigbn effects` for every ordered pair in its own process. Prints the run's wall time and
the effects' wall time, per-pair time, the number of parent sets of nonzero posterior per
node (mean), peak RSS of the effects process, and for continuous data the share of pairs
whose 95 % interval excludes 0 with the true total effect inside it.

    python scripts/bench_effects.py --n 16 20 24 --kind continuous discrete
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def linear_network(n: int, k: int, m: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(standardised data (m, n), B, sd): B[u, v] the coefficient of u → v (random node
    order) on the scale before standardising, sd the columns' standard deviations."""
    order = rng.permutation(n)
    B = np.zeros((n, n))
    for pos, v in enumerate(order):
        preds = order[:pos]
        for u in rng.choice(preds, size=min(len(preds), rng.integers(0, k + 1)), replace=False):
            B[u, v] = rng.choice([-1, 1]) * rng.uniform(0.5, 1.5)
    X = np.zeros((m, n))
    for v in order:
        X[:, v] = X @ B[:, v] + rng.normal(size=m)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / sd, B, sd  # unit scale, as the BGe prior expects


def total_effects(B: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """T[u, v] = Σ over directed paths u ⇝ v of the product of coefficients, (I − B)⁻¹ − I,
    rescaled to the standardised data: T[u, v] sd_u / sd_v."""
    n = B.shape[0]
    return (np.linalg.inv(np.eye(n) - B) - np.eye(n)) * sd[:, None] / sd[None, :]


# the CLI in this process, then its peak RSS (KiB) as the last line of stderr
MEASURED = """
import resource, sys
from bigbn.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    if e.code:
        raise
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[16, 20])
    ap.add_argument("--kind", nargs="+", default=["continuous", "discrete"], choices=["continuous", "discrete"])
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default=None, help="parent folder of the run workdirs (default: a temp dir)")
    args = ap.parse_args()

    base = Path(args.workdir or tempfile.mkdtemp(prefix="bigbn-bench-effects-"))
    base.mkdir(parents=True, exist_ok=True)
    bigbn = [sys.executable, "-m", "bigbn.cli"]
    rows = []
    try:
        for kind in args.kind:
            for n in args.n:
                rng = np.random.default_rng(args.seed + n)
                data = base / f"{kind}-n{n}.csv"
                truth = None
                if kind == "continuous":
                    X, B, sd = linear_network(n, args.k, args.rows, rng)
                    np.savetxt(data, X, delimiter=",", header=",".join(f"X{j + 1}" for j in range(n)),
                               comments="", fmt="%.12g")
                    truth = total_effects(B, sd)
                else:
                    subprocess.run(bigbn + ["simulate", "--force", "--n", str(n), "-k", str(args.k), "--rows",
                                            str(args.rows), "--seed", str(args.seed), str(data)],
                                   check=True, stdout=subprocess.DEVNULL)
                wd = base / f"run-{kind}-n{n}"
                score = ["--score", "bge"] if kind == "continuous" else ["--score", "k2"]
                t0 = time.time()
                subprocess.run(bigbn + ["run", str(data), "--workdir", str(wd), "-k", str(args.k), *score,
                                        "--fresh", "--quiet", "--top", "0"], check=True,
                               stdout=subprocess.DEVNULL)
                run_wall = time.time() - t0
                t0 = time.time()
                p = subprocess.run([sys.executable, "-c", MEASURED, "effects", "--workdir", str(wd),
                                    "--top", "0"], check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                wall = time.time() - t0
                rss_note = f"{int(p.stderr.strip().splitlines()[-1]) / 2**10:.0f}"
                with open(wd / "parent_sets.csv", newline="") as fh:
                    sets = sum(1 for _ in csv.reader(fh)) - 1
                row = {"kind": kind, "n": n, "run_s": run_wall, "effects_s": wall,
                       "per_pair_ms": 1e3 * wall / (n * (n - 1)), "listed_sets_per_node": sets / n,
                       "rss_mib": rss_note}
                if truth is not None:
                    with open(wd / "effects.csv", newline="") as fh:
                        rd = csv.DictReader(fh)
                        names = [f"X{j + 1}" for j in range(n)]
                        hit = total = 0
                        for r in rd:
                            u, v = names.index(r["cause"]), names.index(r["effect"])
                            lo, hi = float(r["lower"]), float(r["upper"])
                            if truth[u, v] != 0:
                                total += 1
                                hit += lo <= truth[u, v] <= hi
                        row["true_effects_covered"] = f"{hit}/{total}"
                rows.append(row)
                print(row, flush=True)
                shutil.rmtree(wd, ignore_errors=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    print()
    print("sets/node: parent sets listed in parent_sets.csv (99.9 % of each node's mass)")
    print(f"{'kind':>10} {'n':>3} {'run s':>7} {'effects s':>9} {'ms/pair':>8} {'sets/node':>9} "
          f"{'RSS MiB':>8}  true nonzero effects in their 95% interval")
    for r in rows:
        print(f"{r['kind']:>10} {r['n']:>3} {r['run_s']:7.1f} {r['effects_s']:9.1f} {r['per_pair_ms']:8.1f} "
              f"{r['listed_sets_per_node']:9.1f} {r['rss_mib']:>8}  {r.get('true_effects_covered', '')}")


if __name__ == "__main__":
    main()
