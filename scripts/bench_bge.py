"""Benchmark: the BGe local scores of every family (bigbn/scores/bge.py), best of 5 after compiling.

Prints milliseconds per table for n = 12, 16, 20 at m = 300, k = 3, and per family.
(The test suite checks the values; how fast they come is measured here, not by a timed
test.)

    PYTHONPATH=. .venv/bin/python scripts/bench_bge.py
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from bigbn.scores.bge import bge_scores
from bigbn.kernels.families import n_families


def main() -> None:
    rng = np.random.default_rng(0)
    for n in (12, 16, 20):
        X = rng.normal(size=(300, n)) @ np.triu(rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.4), 1) \
            + rng.normal(size=(300, n))
        ds = SimpleNamespace(data=X, path="")
        bge_scores(ds, 3)  # compile
        best = min(_timed(lambda: bge_scores(ds, 3)) for _ in range(5))
        fams = n * n_families(n - 1, 3)
        print(f"n = {n:2d}, m = 300, k = 3: {fams:7d} families in {1e3 * best:7.2f} ms "
              f"({1e9 * best / fams:6.0f} ns per family)")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
