"""Benchmark: the CG local scores of mixed data against BGe on the same columns (issue #41).

n = 24 columns, 12 discrete (binary) and 12 continuous, m rows, k = 3: the cg score of the
mixed table against the BGe score of the same 24 columns read as numbers (the discrete
codes as values), best of 5 after a first call that compiles. Interleaved (cg, bge, cg,
bge, ...) so that a busy machine slows both alike. The DP after the scores is the same for
every score (only β enters it), so this is the whole difference between a cg and a BGe run.
(The test suite checks the values; how fast they come is measured here.)

    PYTHONPATH=. python scripts/bench_cg.py                 # m = 10^4
    PYTHONPATH=. python scripts/bench_cg.py --rows 2000 --discrete 12 --continuous 12 -k 3
    PYTHONPATH=. python scripts/bench_cg.py --independent   # as many joint cells as the rows allow
"""

from __future__ import annotations

import argparse

import numpy as np

from bigbn.io.data import Dataset
from bigbn.scores.bge import bge_scores
from bigbn.scores.cg import cg_scores
from bench_bge import _timed


def datasets(n_d: int, n_c: int, m: int, seed: int = 0, independent: bool = False):
    """(mixed, continuous) Datasets of the same columns: discrete ones binary, each
    depending on the previous (a copy of it with probability 0.7, else a fair coin), or
    ``independent`` fair coins; continuous ones shifted by a discrete column and
    regressed on the previous continuous one."""
    rng = np.random.default_rng(seed)
    D = np.zeros((m, n_d), dtype=np.int64)
    for j in range(n_d):
        D[:, j] = rng.integers(0, 2, m) if j == 0 or independent else np.where(
            rng.random(m) < 0.7, D[:, j - 1], rng.integers(0, 2, m))
    X = rng.normal(size=(m, n_c))
    for j in range(n_c):
        X[:, j] += 0.8 * D[:, j % max(n_d, 1)] if n_d else 0.0
        if j:
            X[:, j] += 0.5 * X[:, j - 1]
    data = np.column_stack([D, X]).astype(np.float64)
    n = n_d + n_c
    names = tuple(f"v{j}" for j in range(n))
    arities = np.array([2] * n_d + [0] * n_c)
    mixed = Dataset(names, data, arities, tuple(("0", "1") if r else () for r in arities), kind="mixed")
    cont = Dataset(names, data, np.zeros(n, dtype=np.int64), ((),) * n, kind="continuous")
    return mixed, cont


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--discrete", type=int, default=12)
    ap.add_argument("--continuous", type=int, default=12)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--independent", action="store_true",
                    help="independent discrete columns (their joint cells as many as the rows allow)")
    a = ap.parse_args()
    mixed, cont = datasets(a.discrete, a.continuous, a.rows, independent=a.independent)
    cg_scores(mixed, a.k)  # compile
    bge_scores(cont, a.k)
    t_cg, t_bge = [], []
    for _ in range(a.repeats):
        t_cg.append(_timed(lambda: cg_scores(mixed, a.k)))
        t_bge.append(_timed(lambda: bge_scores(cont, a.k)))
    cg, bge = min(t_cg), min(t_bge)
    codes = mixed.data[:, :a.discrete].astype(np.int64)
    joint = len(np.unique(codes, axis=0)) if a.discrete else 1
    print(f"n = {a.discrete + a.continuous} ({a.discrete} discrete{' independent' if a.independent else ''} + "
          f"{a.continuous} continuous), m = {a.rows}, k = {a.k}, {joint} joint cells of the discrete columns, "
          f"best of {a.repeats}:")
    print(f"  cg  {1e3 * cg:9.1f} ms")
    print(f"  bge {1e3 * bge:9.1f} ms (the same columns as numbers)")
    print(f"  cg / bge = {cg / bge:.1f}")


if __name__ == "__main__":
    main()
