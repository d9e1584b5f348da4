#!/usr/bin/env python
"""Edge recovery on real networks nobody on this project made (issue 5).

For each bundled network (bnlearn repository: asia n=8, sachs n=11, child n=20) and each
replicate: draw max(--rows) records by forward sampling (`bigbn.tools.simulate.sample`), and
for every m in --rows analyse the first m records (nested subsets, as in Koivisto 2006,
section 5.2) with `bigbn.learn` (BDeu, ess 1, koivisto-sood structure prior, maximum
indegree k, temporary workdir). Score the undirected-edge ROC against the network's true
arcs (`bigbn.tools.roc.edge_roc`, section 5.1). The states of every variable are the network's
(a state absent from a small prefix does not change r in the score).

Writes, in --out:
  auc.csv          network,n,arcs,k,replicate,m,auc,log_marginal,seconds (one row per run)
  auc_summary.md   markdown table: mean AUC over replicates [min-max], a column per m
  auc_vs_m.png     AUC against m, one line per (network, k), replicate range shaded

    python scripts/real_networks.py                      # asia:3 sachs:3 child:3 child:2
    python scripts/real_networks.py --config child:2 --rows 100,1000 --replicates 2 --out /tmp/rn
"""

from __future__ import annotations

import argparse
import csv
import time
import zlib
from pathlib import Path

import numpy as np

from bigbn import learn
from bigbn.io.bif import read_bif
from bigbn.io.data import Dataset
from bigbn.tools.roc import edge_roc
from bigbn.tools.simulate import sample

COLUMNS = ("network", "n", "arcs", "k", "replicate", "m", "auc", "log_marginal", "seconds")


def parse_config(text: str) -> tuple[str, int]:
    name, _, k = text.partition(":")
    if not name or not k.isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME:K (e.g. child:3), got {text!r}")
    return name, int(k)


def replicate_data(net, name: str, seed: int, replicate: int, m: int) -> np.ndarray:
    """max(m) x n int64 state codes; the stream depends only on (seed, network, replicate),
    so k and the list of m do not change the data (the m's are prefixes)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode()), replicate])
    return sample(net, m, rng)


def run(configs, ms, replicates, seed, ess, workers) -> list[dict]:
    rows = []
    networks = {name: read_bif(name) for name, _ in configs}
    for name, k in configs:
        net = networks[name]
        truth = net.adjacency()
        for rep in range(replicates):
            data = replicate_data(net, name, seed, rep, max(ms))
            for m in ms:
                ds = Dataset(names=net.names, data=data[:m], arities=net.cardinalities,
                             levels=net.states, path="")
                t0 = time.perf_counter()
                res = learn(ds, max_parents=k, score="bdeu", ess=ess,
                            structure_prior="koivisto-sood", workdir=None, workers=workers)
                seconds = time.perf_counter() - t0
                auc = edge_roc(res.posterior, truth).auc
                rows.append({"network": name, "n": net.n, "arcs": len(net.arcs()), "k": k,
                             "replicate": rep, "m": m, "auc": auc,
                             "log_marginal": float(res.log_marginal), "seconds": seconds})
                print(f"{name:6s} n={net.n:2d} k={k} rep={rep} m={m:5d}  AUC {auc:.4f}  "
                      f"wall {seconds:6.2f} s", flush=True)
    return rows


def write_csv(rows, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: (f"{r[c]:.6f}" if isinstance(r[c], float) else r[c]) for c in COLUMNS})


def summarise(rows, ms):
    """{(network, n, arcs, k): {m: (mean, min, max, mean seconds)}} in first-seen order."""
    out: dict = {}
    for r in rows:
        key = (r["network"], r["n"], r["arcs"], r["k"])
        out.setdefault(key, {}).setdefault(r["m"], []).append((r["auc"], r["seconds"]))
    return {key: {m: (float(np.mean([a for a, _ in v])), min(a for a, _ in v),
                      max(a for a, _ in v), float(np.mean([s for _, s in v])))
                  for m, v in per_m.items()} for key, per_m in out.items()}


def write_markdown(summary, ms, replicates, path: Path) -> str:
    head = "| network | n | arcs | k | " + " | ".join(f"m = {m}" for m in ms) + " |"
    lines = [head, "|" + "---|" * (4 + len(ms))]
    for (name, n, arcs, k), per_m in summary.items():
        cells = [f"{per_m[m][0]:.3f} [{per_m[m][1]:.3f}–{per_m[m][2]:.3f}]" for m in ms]
        lines.append(f"| {name} | {n} | {arcs} | {k} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Undirected-edge AUC, mean over {replicates} replicate data sets "
                 "[min–max]. Mean wall time per run (s): "
                 + "; ".join(f"{name} k={k}: " + ", ".join(f"{per_m[m][3]:.1f}" for m in ms)
                             for (name, _, _, k), per_m in summary.items()) + ".")
    text = "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def write_figure(summary, ms, replicates, path: Path) -> None:
    from bigbn.outputs.plot import figure, save_figure

    fig, ax = figure(figsize=(5.2, 3.8))
    for (name, n, _, k), per_m in summary.items():
        mean = [per_m[m][0] for m in ms]
        line, = ax.plot(ms, mean, marker="o", ms=4, lw=1.5,
                        ls="--" if k < 3 else "-", label=f"{name} (n = {n}), k = {k}")
        ax.fill_between(ms, [per_m[m][1] for m in ms], [per_m[m][2] for m in ms],
                        color=line.get_color(), alpha=0.18, lw=0)
    ax.set_xscale("log")
    ax.set_xticks(ms, [str(m) for m in ms])
    ax.minorticks_off()
    ax.set_xlabel("records m")
    ax.set_ylabel("undirected-edge AUC")
    ax.set_title(f"Edge recovery, BDeu(1); mean and range of {replicates} data sets",
                 fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    save_figure(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=parse_config, action="append", default=None,
                    metavar="NAME:K", help="network and maximum indegree (repeatable); "
                    "default asia:3 sachs:3 child:3 child:2")
    ap.add_argument("--rows", default="100,500,2000,10000", help="nested data sizes m")
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ess", type=float, default=1.0, help="BDeu equivalent sample size")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "real_networks")
    args = ap.parse_args()
    configs = args.config or [("asia", 3), ("sachs", 3), ("child", 3), ("child", 2)]
    ms = sorted({int(t) for t in args.rows.split(",") if t.strip()})
    args.out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    rows = run(configs, ms, args.replicates, args.seed, args.ess, args.workers)
    total = time.perf_counter() - t0
    summary = summarise(rows, ms)
    write_csv(rows, args.out / "auc.csv")
    print(write_markdown(summary, ms, args.replicates, args.out / "auc_summary.md"))
    write_figure(summary, ms, args.replicates, args.out / "auc_vs_m.png")
    print(f"{len(rows)} runs, total wall time {total:.1f} s; wrote {args.out}/auc.csv, "
          f"auc_summary.md, auc_vs_m.png")


if __name__ == "__main__":
    main()
