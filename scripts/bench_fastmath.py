"""Benchmark: a libm log-add-exp loop (math.exp/math.log1p) vs the vectorised fastmath._lae_run.

Prints ns per log-add-exp for runs of h = 2^10, 2^14, 2^20 (two runs of 8h bytes: L1, L2,
RAM), on one thread and on two threads (separate arrays, kernels release the GIL), and for
the k-truncated upward transform of kernels.py with each run loop.

    PYTHONPATH=. .venv/bin/python scripts/bench_fastmath.py
"""

from __future__ import annotations

import math
import os
import threading
import time

import numpy as np
from numba import njit

from bigbn.families import family_masks
from bigbn.fastmath import _lae_run

_KW = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_KW)
def _lae(a, b):
    """log(exp(a) + exp(b)) by scalar libm calls (what numba makes of math.exp/log1p)."""
    if a < b:
        a, b = b, a
    if b == -math.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(**_KW)
def _libm_run(x, dst, src, h):
    """A log-add-exp run loop with scalar libm exp/log1p per element."""
    for o in range(h):
        x[dst + o] = _lae(x[dst + o], x[src + o])


@njit(**_KW)
def _repeat_libm(x, h, reps):
    for r in range(reps):
        if r & 1:
            _libm_run(x, h, 0, h)
        else:
            _libm_run(x, 0, h, h)


@njit(**_KW)
def _repeat_fast(x, h, reps):
    for r in range(reps):
        if r & 1:
            _lae_run(x, h, 0, h)
        else:
            _lae_run(x, 0, h, h)


@njit(**_KW)
def _upward_libm(x, d, small):
    """kernels._upward_truncated with the libm run loop."""
    for j in range(d):
        h = 1 << j
        limit = 1 << (d - j - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            src = m << (j + 1)
            _libm_run(x, src + h, src, h)


@njit(**_KW)
def _upward_fast(x, d, small):
    """kernels._upward_truncated as it is (_lae_run as the run loop)."""
    for j in range(d):
        h = 1 << j
        limit = 1 << (d - j - 1)
        for t in range(small.shape[0]):
            m = small[t]
            if m >= limit:
                break
            src = m << (j + 1)
            _lae_run(x, src + h, src, h)


def _data(size, seed):
    return np.random.default_rng(seed).uniform(-30.0, 0.0, size)


def _time(fn, arrays, args, threads):
    """Best of 3 wall times of fn(array, *args) run on `threads` threads at once."""
    best = np.inf
    for _ in range(3):
        work = [a.copy() for a in arrays[:threads]]
        ts = [threading.Thread(target=fn, args=(w, *args)) for w in work]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus (other work skews the numbers)")
    print("ns per log-add-exp (wall time / elements, all threads together)")
    print(f"{'h':>8} {'threads':>7} {'libm':>8} {'fast':>8} {'speedup':>8}")
    for logh in (10, 14, 20):
        h = 1 << logh
        reps = max(4, (1 << 24) // h)
        arrays = [_data(2 * h, s) for s in range(2)]
        for fn in (_repeat_libm, _repeat_fast):  # compile / load cache
            fn(arrays[0].copy(), h, 2)
        for threads in (1, 2):
            n_el = threads * h * reps
            t_libm = _time(_repeat_libm, arrays, (h, reps), threads) / n_el * 1e9
            t_fast = _time(_repeat_fast, arrays, (h, reps), threads) / n_el * 1e9
            print(f"{'2^%d' % logh:>8} {threads:>7} {t_libm:8.2f} {t_fast:8.2f} {t_libm / t_fast:8.1f}x")

    d, k = 22, 3
    small = family_masks(d, k)
    n_el = sum(1 << j for j in range(d) for m in small if m < (1 << (d - j - 1)))
    arrays = [_data(1 << d, s) for s in range(2)]
    for fn in (_upward_libm, _upward_fast):
        fn(arrays[0][:16].copy(), 4, small)
    print(f"\nk-truncated upward transform, d={d}, k={k}: {n_el} log-add-exps per array")
    print(f"{'threads':>7} {'libm s':>8} {'fast s':>8} {'libm ns':>8} {'fast ns':>8} {'speedup':>8}")
    for threads in (1, 2):
        t_libm = _time(_upward_libm, arrays, (d, small), threads)
        t_fast = _time(_upward_fast, arrays, (d, small), threads)
        print(f"{threads:>7} {t_libm:8.3f} {t_fast:8.3f} {t_libm / (threads * n_el) * 1e9:8.2f} "
              f"{t_fast / (threads * n_el) * 1e9:8.2f} {t_libm / t_fast:8.1f}x")


if __name__ == "__main__":
    main()
