#!/usr/bin/env python
"""Whole runs of two or more checkouts of bigbn, interleaved on the same data, with
medians: the way to tell a change of 1–3 s at n = 28 from the host's drift.

On the reference VM the same code runs n = 28 in anything from 37 to 52 s on one day,
in slow and fast periods of minutes; two versions timed one after the other mostly
measure the period. Even interleaved, two checkouts of the same commit came out 3.5 s
apart in medians of three runs (2026-11-24): give a second checkout of the old version
as a control when the change expected is that small. Here every repetition runs each
checkout once, in an order that rotates from one repetition to the next, and the
summary gives each checkout's median, least and largest wall time, per-stage wall time
(summary.json), user and system CPU seconds and minor page faults (getrusage of the
child).

--cold starts every run on a cold page cache, as a first run on a fresh machine would:
the previous run's workdir is deleted, the page cache dropped (needs root:
/proc/sys/vm/drop_caches; without it the drop is skipped, with a warning) and the
machine left idle for --sleep seconds, long enough for a virtual machine to hand the
freed memory back to its host (docs/design.md, "Where a task's time goes"). Without it
each run reuses the pages its predecessor's tables just freed.

Each checkout first runs n = 16 in chunks of 2^12 once, untimed, to compile its kernels
(numba caches them per checkout, under ~/.cache/bigbn/numba: bigbn/__init__.py).

    python scripts/bench_ab.py new=. old=/tmp/bigbn-main --n 28 --reps 4 --cold
    python scripts/bench_ab.py new=. old=/tmp/a old2=/tmp/b --reps 3 --cold   # with a control
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(checkout: Path, data: Path, wd: Path, k: int, *extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = [sys.executable, "-m", "bigbn.cli", "run", str(data), "--workdir", str(wd), "-k", str(k),
           "--score", "k2", "--structure-prior", "koivisto-sood", "--fresh", "--quiet", "--top", "0", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{checkout}: bigbn run failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    stages = json.loads((wd / "summary.json").read_text())["stages"]
    return {"wall": wall, "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
            "minflt": after.ru_minflt - before.ru_minflt,
            **{s: v["wall_seconds"] for s, v in stages.items() if s in ("forward", "backward")}}


def make_cold(sleep: float) -> None:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as e:
        print(f"warning: page cache not dropped ({e.strerror}); --cold needs root", file=sys.stderr)
    time.sleep(sleep)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts", nargs="+", metavar="LABEL=PATH", help="a checkout of bigbn (its folder)")
    ap.add_argument("--n", type=int, default=28)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--cold", action="store_true", help="drop the page cache and idle before every run")
    ap.add_argument("--sleep", type=float, default=10.0, help="idle seconds after the drop (--cold)")
    ap.add_argument("--workdir", default=None, help="where the data and the runs go (default: a temp dir)")
    args = ap.parse_args()

    checkouts = {}
    for spec in args.checkouts:
        label, sep, path = spec.partition("=")
        if not sep or not (Path(path) / "bigbn" / "__init__.py").is_file():
            ap.error(f"{spec!r}: expected LABEL=PATH, PATH a checkout with bigbn/__init__.py")
        checkouts[label] = Path(path).resolve()
    base = Path(args.workdir or tempfile.mkdtemp(prefix="bigbn-ab-"))
    base.mkdir(parents=True, exist_ok=True)
    first = next(iter(checkouts.values()))
    env = dict(os.environ, PYTHONPATH=str(first))
    data = {}
    for n in (16, args.n):
        data[n] = base / f"data-n{n}-m{args.rows}.csv"
        subprocess.run([sys.executable, "-m", "bigbn.cli", "simulate", "--force", "--n", str(n), "-k", str(args.k),
                        "--rows", str(args.rows), "--seed", str(args.seed), str(data[n])],
                       env=env, check=True, stdout=subprocess.DEVNULL)
    wd = base / "run"
    for checkout in checkouts.values():  # compile every kernel (chunks of 2^12: high-bit terms too)
        run_once(checkout, data[16], wd, args.k, "--chunk-bits", "12")
    runs = {label: [] for label in checkouts}
    labels = list(checkouts)
    for rep in range(args.reps):
        order = labels[rep % len(labels):] + labels[:rep % len(labels)]
        for label in order:
            shutil.rmtree(wd, ignore_errors=True)
            if args.cold:
                make_cold(args.sleep)
            r = run_once(checkouts[label], data[args.n], wd, args.k)
            runs[label].append(r)
            print(f"rep {rep + 1} {label:>10}: wall {r['wall']:6.2f} s  forward {r.get('forward', 0):6.2f}  "
                  f"backward {r.get('backward', 0):6.2f}  user {r['user']:6.1f}  sys {r['sys']:5.1f}  "
                  f"minflt {r['minflt']}", flush=True)
    shutil.rmtree(wd, ignore_errors=True)
    if args.workdir is None:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\nn = {args.n}, m = {args.rows}, {args.reps} runs each{' (cold)' if args.cold else ''}: "
          "median (least–largest)")
    for label, rs in runs.items():
        cells = []
        for key in ("wall", "forward", "backward", "user", "sys"):
            xs = [r.get(key, 0.0) for r in rs]
            cells.append(f"{key} {statistics.median(xs):6.2f} ({min(xs):.2f}–{max(xs):.2f})")
        print(f"  {label:>10}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
