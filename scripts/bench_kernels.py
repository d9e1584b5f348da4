#!/usr/bin/env python
"""The engine's chunk kernels timed one by one on real data, optionally against another
checkout's kernels (with the same kernel interface) run back to back, so that a busy
machine slows both alike.

Data as in the paper's section 5.2 (random binary network, k = 3, K2 + koivisto-sood
prior) with m rows. Per forward/backward task of one chunk of 2^c entries the engine runs:
the in-chunk recursion with α of the c low nodes recomputed per tile
(`_recursion_tiles`), one `_high_term` per high bit (α of a high node times a neighbour
chunk, read as logs and converted a tile at a time inside; timed once) and, backward,
the γ parts (`_gamma_low`: c transforms of 2^(c-1) entries, a tile at a time;
`_gamma_high`: a high node's 2^c transform, timed once). The recursion runs on chunk
0 (L from L(∅) = 1, so its values are the real L's) and, mirrored, on the top chunk; γ
on s = that L. Prints the median milliseconds (thread CPU time) of --repeat runs per
kernel.

    python scripts/bench_kernels.py --n 24 --rows 1000 100000
    python scripts/bench_kernels.py --n 24 --rows 1000 100000 --old /tmp/old-checkout
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bigbn import kernels
from bigbn.api import score_families
from bigbn.io.data import Dataset
from bigbn.plan.lattice import Plan
from bigbn.tools.simulate import random_network, sample


def load_kernels(checkout: str):
    """bigbn/kernels/ of another checkout, imported as package ``bigbn_other`` from a
    copy of its bigbn/ in a folder of its own (~/.cache/bigbn/bench-other/<hash of the
    checkout's path>; files copied with their times, so numba's cache there stays valid
    while they are unchanged). Imported from the checkout itself, its kernels would be
    cached under the name bigbn_other in that checkout's numba cache, which its own
    runs as ``bigbn`` then fail to load (ModuleNotFoundError: bigbn_other)."""
    src = Path(checkout).resolve() / "bigbn"
    key = hashlib.sha1(str(src).encode()).hexdigest()[:16]
    pkg = Path.home() / ".cache" / "bigbn" / "bench-other" / key / "bigbn"
    shutil.copytree(src, pkg, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    spec = importlib.util.spec_from_file_location("bigbn_other", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bigbn_other"] = mod
    spec.loader.exec_module(mod)
    from bigbn_other import kernels as other  # noqa: E402  (registered just above)
    return other


def timed(out: dict, key: str, fn, *args):
    """Thread CPU time of fn(*args) into out[key]. The arrays it writes must be touched
    before (`touched`): a fresh 8 MiB array is mapped anew, and its first writes fault in
    pages (on the reference VM ≈ 2 ms a MiB, 33 ms of the 34 that converting a chunk from
    logs measured with fresh outputs), which would be charged to the kernel."""
    t = time.thread_time()
    fn(*args)
    out[key] = time.thread_time() - t


def touched(shape, value: float = 0.0) -> np.ndarray:
    """An array of ``value`` whose pages are already faulted in (np.full writes every one;
    np.zeros and np.empty leave them to the kernel's first writes)."""
    return np.full(shape, value)


def timings(K, beta, plan):
    c, fam, small, T = plan.c, plan.families, plan.small_masks, plan.tile_bits
    out = {}
    top = plan.n_chunks - 1
    tables = {}
    for name, H, origin, forward in (("forward chunk", 0, 0, True), ("backward chunk", top, -1, False)):
        m, e = touched(plan.chunk_size), touched(plan.chunk_size, -np.inf)
        m[origin], e[origin] = 1.0, 0.0
        timed(out, name, K._recursion_tiles, beta, fam, small, H, T, m, e, forward)
        tables[name] = np.empty(plan.chunk_size)
        K._log_ext_into(m, e, tables[name])
    L = tables["forward chunk"]
    Lm, Le = touched((2, plan.chunk_size))
    timed(out, "L to extended numbers", K._ext_from_log_into, L, Lm, Le)
    m, e = touched(plan.chunk_size), touched(plan.chunk_size, -np.inf)
    timed(out, "high term (one node)", K._high_term, beta[plan.n - 1], fam, small, 0, c, T, L, m, e, True)
    # as s_v(S) = L(S)·B(S + v): L of the set, R of (nearly) the rest
    B = tables["backward chunk"][::-1].copy()
    Bm, Be = touched((2, plan.chunk_size))
    K._ext_from_log_into(B, Bm, Be)
    part = np.full((plan.n, plan.n_families), np.nan)  # rows c .. n-2 are not written
    timed(out, "γ parts (c low nodes)", K._gamma_low, Lm, Le, Bm, Be, 0, fam, small, T, part)
    timed(out, "γ part (one high node)", K._gamma_high, Lm, Le, B, 0, fam, small, T, part[-1])
    return out, float(L[-1]), {"L": L, "B": B, "high term": (m, e), "γ parts": part}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 100000])
    ap.add_argument("--chunk-bits", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--old", default=None, help="another checkout whose kernels to time alongside")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    impls = {"this": kernels}
    if args.old:
        impls["old"] = load_kernels(args.old)
    net = random_network(args.n, args.k, 2, np.random.default_rng(args.seed))
    plan = Plan(args.n, args.k, args.chunk_bits)
    print(f"n = {args.n}, k = {args.k}, c = {plan.c}: median ms per call of {args.repeat}")
    for m in args.rows:
        data = sample(net, m, np.random.default_rng(args.seed + m))
        ds = Dataset(tuple(f"x{j}" for j in range(args.n)), data, np.full(args.n, 2),
                     tuple(("0", "1") for _ in range(args.n)))
        beta = score_families(ds, "k2", args.k)
        runs = {name: [] for name in impls}
        for name, K in impls.items():
            timings(K, beta, plan)  # compile / warm
        for _ in range(args.repeat):
            for name, K in impls.items():  # back to back
                runs[name].append(timings(K, beta, plan))
        print(f"\nm = {m}" + "".join(f"   L(chunk 0 full) {name}: {runs[name][0][1]:.9f}" for name in impls))
        if "old" in runs:  # every kernel's output, bit for bit
            for key, a in runs["this"][0][2].items():
                same = all(np.array_equal(x, y, equal_nan=True) for x, y in
                           zip(np.atleast_2d(a), np.atleast_2d(runs["old"][0][2][key])))
                print(f"  {key}: {'bit-identical to old' if same else 'DIFFERS FROM OLD'}")
        for key in runs["this"][0][0]:
            cells = "".join(f" {name} {1e3 * statistics.median(r[0][key] for r in runs[name]):9.1f}"
                            for name in impls)
            print(f"  {key:<34}{cells}")


if __name__ == "__main__":
    main()
