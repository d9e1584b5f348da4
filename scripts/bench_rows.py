#!/usr/bin/env python
"""Strong data: the time per stage as the number of rows grows.

With m rows the local scores of a node differ by O(m) nats, so at m ≥ 10^4 the values a
transform or a recursion block sums span thousands of nats, far more than one float64
scale holds (2^±1022). Such chunks and blocks ("wide") sum extended-exponent numbers
(bigbn/kernels/fastmath.py) instead of plain float64, exact either way. This runs whole
posteriors in-process (sync scheduler: one core, so the per-stage task seconds are
comparable) on paper §5.2 data (random binary network, k = 3, K2) with m rows, and
prints how many α tiles, γ tiles and recursion blocks were wide, the task seconds per
stage, their total's ratio to the first m's, and log p(x). Each m runs --repeat times;
the medians are printed.

    python scripts/bench_rows.py                              # n = 20, m = 1e3 1e4 1e5
    python scripts/bench_rows.py --n 16 --rows 100 1000 10000 100000 --chunk-bits 10
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import bigbn
from bigbn import kernels as K
from bigbn.tools.simulate import random_network, sample

STAGES = ("forward", "backward", "gamma", "edges")


class Counts:
    """How many α tiles, γ chunks and recursion blocks the kernels summed, and how many of
    them were wide: wraps the kernels that report it (kernels._recursion_tiles,
    _high_term, _gamma_low, _gamma_high) in place."""

    def __init__(self):
        self.calls = {"α": 0, "γ": 0, "blocks": 0}
        self.wide = dict.fromkeys(self.calls, 0)
        tiles, high = K._recursion_tiles, K._high_term
        gamma_low, gamma_high = K._gamma_low, K._gamma_high

        def recursion_tiles(beta, fam, small, H, tile_bits, m, e, forward):
            wa, wb = tiles(beta, fam, small, H, tile_bits, m, e, forward)
            c = m.shape[0].bit_length() - 1
            T = min(tile_bits, c)
            self._add("α", wa, (T + (c - T) / 2) * (1 << (c - T)))
            self._add("blocks", wb, m.shape[0] >> min(T, K._BLOCK))
            return wa, wb

        def high_term(beta_row, fam, small, Q, c, tile_bits, y, m, e, add):
            w = high(beta_row, fam, small, Q, c, tile_bits, y, m, e, add)
            self._add("α", w, 1 << (c - min(tile_bits, c)))
            return w

        def low(fm, fe, bm, be, H, fam, small, tile_bits, part):
            w = gamma_low(fm, fe, bm, be, H, fam, small, tile_bits, part)
            c = fm.shape[0].bit_length() - 1
            self._add("γ", w, c << (c - min(tile_bits, c)))
            return w

        def high_gamma(fm, fe, y, Q, fam, small, tile_bits, part_row):
            w = gamma_high(fm, fe, y, Q, fam, small, tile_bits, part_row)
            c = fm.shape[0].bit_length() - 1
            self._add("γ", w, 1 << (c - min(tile_bits, c)))
            return w

        K._recursion_tiles, K._high_term, K._gamma_low, K._gamma_high = recursion_tiles, high_term, low, high_gamma

    def _add(self, key: str, wide: int, calls: float) -> None:
        self.wide[key] += wide
        self.calls[key] += int(calls)

    def reset(self) -> None:
        for d in (self.calls, self.wide):
            for key in d:
                d[key] = 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--chunk-bits", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    counts = Counts()
    rng = np.random.default_rng(args.seed)
    net = random_network(args.n, args.k, 2, rng)
    print(f"n = {args.n}, k = {args.k}, sync scheduler: task seconds per stage (median of {args.repeat})")
    print(f"{'rows':>8} {'wide: α':>14} {'γ':>12} {'blocks':>14} {'scores':>7} "
          + " ".join(f"{s:>9}" for s in STAGES) + f" {'total':>7} {'× first':>7}  log p(x)")
    first = None
    for m in args.rows:
        data = sample(net, m, np.random.default_rng(args.seed + m))
        runs = []
        counts.reset()
        for _ in range(args.repeat):
            wd = Path(tempfile.mkdtemp(prefix="bigbn-rows-"))
            t0 = time.perf_counter()
            res = bigbn.learn(data, max_parents=args.k, score="k2", structure_prior="koivisto-sood",
                              workdir=wd, chunk_bits=args.chunk_bits, scheduler="sync")
            wall = time.perf_counter() - t0
            shutil.rmtree(wd)
            st = res.summary["stages"]
            runs.append({"scores": res.summary.get("scoring_seconds_this_invocation") or 0.0,
                         **{s: st[s]["task_seconds"] for s in STAGES if s in st}, "wall": wall})
        med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        total = sum(med.get(s, 0.0) for s in STAGES)
        first = first or total
        a, g, b = (f"{counts.wide[key] // args.repeat}/{counts.calls[key] // args.repeat}" for key in counts.calls)
        print(f"{m:>8} {a:>14} {g:>12} {b:>14} {med['scores']:>7.2f} " + " ".join(f"{med.get(s, 0.0):>9.2f}" for s in STAGES)
              + f" {total:>7.2f} {total / first:>7.2f}  {res.log_marginal:.6f}", flush=True)


if __name__ == "__main__":
    main()
