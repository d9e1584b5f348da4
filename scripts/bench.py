#!/usr/bin/env python
"""End-to-end benchmark: `bigbn run` on data as in the paper's section 5.2.

Random network (binary, k = 3), m = 1000 rows (or each --rows), K2 score, koivisto-sood
prior. Each (n, m) runs in its own process (so peak RSS is that run's), in a fresh workdir
that is deleted after.
Prints wall time per stage, peak RSS, peak disk (the growth of the filesystem's use,
polled every 0.2 s during the run: run it on an otherwise quiet machine) against the
plan's, and throughput figures.

    python scripts/bench.py                    # n = 16 18 20 22
    python scripts/bench.py --n 24 26 28 --workdir /scratch/bench --keep
    python scripts/bench.py --n 24 --rows 1000 10000 100000 1000000   # strong data
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bigbn.plan.lattice import Plan, work_estimate


def fs_used(path: Path) -> int:
    """Bytes in use on the filesystem holding ``path`` (one statvfs call: cheap enough to
    poll every 0.2 s, where walking a workdir of 10^4 chunk files took a quarter of a
    core at n = 32 and slowed the run it measured). Keep the machine otherwise quiet."""
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def du(path: Path) -> int:
    """Bytes ``path`` occupies, as ``du`` counts them: the blocks of its files and folders
    (the plan counts both, `Plan.metadata_bytes`)."""
    total = 0
    for root, _, files in os.walk(path):
        try:
            total += os.lstat(root).st_blocks * 512
        except OSError:  # a γ part's folder, removed with it meanwhile
            continue
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def _disk_workers(summary: dict) -> int | None:
    """The tasks at a time the run's plan counted its disk for (`ordered_workers`)."""
    from bigbn.plan.lattice import ordered_workers

    p = summary["plan"]
    return ordered_workers(p["scheduler"], p["workers"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[16, 18, 20, 22])
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[1000])
    ap.add_argument("--states", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default=None, help="parent folder of the run workdirs (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the workdirs")
    ap.add_argument("--alpha", default=None, choices=["recompute", "store"])
    ap.add_argument("--memory", default=None)
    ap.add_argument("--chunk-bits", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--scheduler", default=None, help="bigbn run --scheduler (default: its default)")
    ap.add_argument("--disk-budget", default=None, help="bigbn run --disk-budget (e.g. 24G)")
    ap.add_argument("--du", action="store_true",
                    help="poll the workdir's blocks (du) for the peak disk, not the file system's use: "
                         "immune to other jobs' files on a shared disk, but a walk of its files every 0.2 s "
                         "(fine up to n = 28; at n = 32 it slows the run it measures)")
    args = ap.parse_args()

    base = Path(args.workdir or tempfile.mkdtemp(prefix="bigbn-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    bigbn = [sys.executable, "-m", "bigbn.cli"]
    rows = []
    for n, m in ((n, m) for n in args.n for m in args.rows):
        data = base / f"data-n{n}-m{m}.csv"
        subprocess.run(bigbn + ["simulate", "--force", "--n", str(n), "-k", str(args.k), "--states", str(args.states),
                                "--rows", str(m), "--seed", str(args.seed), str(data)],
                       check=True, stdout=subprocess.DEVNULL)
        wd = base / f"run-n{n}-m{m}"
        cmd = bigbn + ["run", str(data), "--workdir", str(wd), "-k", str(args.k), "--score", "k2",
                       "--structure-prior", "koivisto-sood", "--fresh", "--quiet", "--top", "0"]
        for opt, val in (("--alpha", args.alpha), ("--memory", args.memory),
                         ("--chunk-bits", args.chunk_bits), ("--workers", args.workers),
                         ("--scheduler", args.scheduler), ("--disk-budget", args.disk_budget)):
            if val is not None:
                cmd += [opt, str(val)]
        t0 = time.time()
        before = fs_used(base)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        peak_disk = 0
        while proc.poll() is None:  # peak disk during the run: the filesystem's, every 0.2 s
            peak_disk = max(peak_disk, du(wd) if args.du else fs_used(base) - before)
            time.sleep(0.2)
        if proc.returncode:
            raise SystemExit(f"n = {n}, m = {m}: bigbn run failed (exit {proc.returncode})")
        wall = time.time() - t0
        s = json.loads((wd / "summary.json").read_text())
        disk = du(wd)
        peak_disk = max(peak_disk, disk)
        st = s["stages"]
        line = {
            "n": n, "rows": m, "wall_s": round(wall, 2), "peak_rss_MiB": round(s["peak_rss_bytes"] / 2**20),
            "disk_MiB": round(disk / 2**20), "peak_disk_MiB": round(peak_disk / 2**20),
            "planned_disk_MiB": round(sum(s["disk_bytes"].values()) / 2**20),  # for its workers
            # in the tables' bytes alone (the plan's count before it counted file-system blocks)
            "planned_bytes_MiB": round(sum(Plan(n, min(args.k, n - 1), s["plan"]["chunk_bits"], s["plan"]["alpha_mode"],
                                                kept=s["plan"].get("kept_levels") and tuple(s["plan"]["kept_levels"]))
                                           .disk_bytes(_disk_workers(s), 1).values()) / 2**20, 1),
            "chunk_bits": s["plan"]["chunk_bits"],
            "alpha": s["plan"]["alpha_mode"], "scoring_s": s.get("scoring_seconds_this_invocation"),
            **{f"{k}_wall_s": v["wall_seconds"] for k, v in st.items()},
            **{f"{k}_task_s": v["task_seconds"] for k, v in st.items()},
        }
        # Throughput per stage against the machine's limits: elementary operations (exact
        # counts from the plan: updates of the transforms, terms of the recursions) per
        # task-second, i.e. per busy core, and bytes written per wall second.
        plan = Plan(n, min(args.k, n - 1), s["plan"]["chunk_bits"], s["plan"]["alpha_mode"])
        line["kept"] = json.loads((wd / "run.json").read_text())["plan"].get("kept")
        work = work_estimate(plan)
        disk_b = plan.disk_bytes()
        for stage in ("alpha", "forward", "backward"):  # (reforward: forward's rate, see its task seconds)
            if stage not in st:
                continue
            # the backward tasks also compute their chunk's part of γ
            ops = work.get(stage, 0) + work.get(f"{stage}_alpha", 0) + (work["gamma"] if stage == "backward" else 0)
            line[f"{stage}_Mops_per_core_s"] = round(ops / max(st[stage]["task_seconds"], 1e-9) / 1e6, 1)
            written = {"forward": 8 << n, "backward": 8 << n}.get(stage, disk_b.get(stage, 0))
            line[f"{stage}_write_MBps"] = round(written / max(st[stage]["wall_seconds"], 1e-9) / 1e6, 1)
        rows.append(line)
        print(json.dumps(line), flush=True)
        if not args.keep:
            shutil.rmtree(wd, ignore_errors=True)
            data.unlink()
    if not args.keep and args.workdir is None:
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(f"{'n':>3} {'rows':>8} {'wall s':>8} {'scores s':>8} {'RSS MiB':>8} {'peak disk MiB':>13} "
          f"{'(planned)':>9} {'c':>3}  stages: wall s (Mops/core/s)")
    for r in rows:
        stages = " ".join(
            f"{k[:-7]}={v}" + (f"({r[k[:-7] + '_Mops_per_core_s']})" if k[:-7] + "_Mops_per_core_s" in r else "")
            for k, v in r.items() if k.endswith("_wall_s") and k != "wall_s")
        print(f"{r['n']:>3} {r['rows']:>8} {r['wall_s']:>8} {r['scoring_s'] or 0:>8.2f} {r['peak_rss_MiB']:>8} "
              f"{r['peak_disk_MiB']:>13} "
              f"{r['planned_disk_MiB']:>9} {r['chunk_bits']:>3}  {stages}")
    print("\nMops/core/s: elementary operations (updates of the truncated transforms, terms of the\n"
          "recursions; exact counts from bigbn.plan.lattice.work_estimate) per busy core-second. Where a\n"
          "task's time goes: scripts/bench_tasks.py on a workdir kept with --keep.")


if __name__ == "__main__":
    main()
