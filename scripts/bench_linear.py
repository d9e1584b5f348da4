#!/usr/bin/env python
"""How often the linear-domain kernels fall back to the log domain, on weak and strong data.

alpha (kernels._alpha_chunk) and the γ parts (kernels._gamma_partial) sum in the linear
domain with one scale per chunk, the in-block terms of the recursions
(kernels._block_linear) with one scale per 64-entry block; each takes the exact
log-domain path where its values span more than one float64 scale can hold (2^-900,
623.8 nats). How often that
happens depends on the data: the more rows, the more the local scores of a node differ.
This runs whole posteriors in-process (sync scheduler) with the kernels wrapped to count
fallbacks, on paper §5.2 data (random binary network, k = 3, K2) with m rows, and prints
the fallback rate and the time per stage for each m.

    python scripts/bench_linear.py                      # n = 16, m = 100 1000 10000 100000
    python scripts/bench_linear.py --n 20 --rows 1000 --chunk-bits 12
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import bigbn
from bigbn import kernels as K
from bigbn.simulate import random_network, sample


class Counter:
    """Wraps a kernel that returns its fallback count; counts calls and fallbacks."""

    def __init__(self, fn, per_call):
        self.fn, self.per_call, self.calls, self.fallbacks = fn, per_call, 0, 0

    def __call__(self, *args):
        fb = self.fn(*args)
        self.calls += self.per_call(args)
        self.fallbacks += fb
        return fb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    ap.add_argument("--chunk-bits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    alpha = K._alpha_chunks = Counter(K._alpha_chunks, lambda a: a[-1].shape[0] >> a[4])
    gamma = K._gamma_partial = Counter(K._gamma_partial, lambda a: 1)
    blocks = K._recursion_chunk = Counter(K._recursion_chunk, lambda a: a[2].shape[0] >> min(a[1].shape[0], K._BLOCK))
    rng = np.random.default_rng(args.seed)
    net = random_network(args.n, args.k, 2, rng)
    print(f"n = {args.n}, k = {args.k}, chunk bits {args.chunk_bits}: fallbacks to the log domain")
    print(f"{'rows':>7} {'alpha chunks':>16} {'γ chunks':>16} {'blocks':>18} {'wall s':>7}  log p(x)")
    for m in args.rows:
        data = sample(net, m, np.random.default_rng(args.seed + m))
        wd = Path(tempfile.mkdtemp(prefix="bigbn-linear-"))
        for c in (alpha, gamma, blocks):
            c.calls = c.fallbacks = 0
        t0 = time.time()
        res = bigbn.learn(data, max_parents=args.k, score="k2", structure_prior="koivisto-sood",
                          workdir=wd, chunk_bits=args.chunk_bits, scheduler="sync")
        wall = time.time() - t0
        shutil.rmtree(wd)
        print(f"{m:>7} {alpha.fallbacks:>7}/{alpha.calls:<8} {gamma.fallbacks:>7}/{gamma.calls:<8} "
              f"{blocks.fallbacks:>8}/{blocks.calls:<9} {wall:>7.2f}  {res.log_marginal:.6f}")
        print("        " + json.dumps({s: v["task_seconds"] for s, v in res.summary["stages"].items()}))


if __name__ == "__main__":
    main()
