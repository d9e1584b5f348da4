#!/usr/bin/env python
"""Edge recovery on the Sachs et al. (2005) data against its consensus network: BGe on the
measured intensities and on their logarithms, BDeu on a 3-level discretisation
(examples/sachs*.csv, see scripts/make_sachs.py and examples/README.md), each on

- "observational": block 1 only (general stimulation, 853 rows, examples/sachs.csv);
- "9 conditions, targets": all 7466 rows with each row's intervention targets
  (examples/sachs_interventional.csv: each protein scored from the rows where it was not
  inhibited or activated);
- "9 conditions, no targets": the same rows treated as observational (what pooling the
  experiments without saying what they did gives).

The 3 levels are the tertiles of each column over the rows used (examples/sachs3.csv for
block 1). Prints, for k = 2, 3, the undirected-edge AUC (paper section 5.1), the directed
AUC (each ordered pair scored by its own posterior, true iff that arc is in the consensus
network) and log p(data).

    python scripts/sachs_study.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import bigbn
from bigbn.tools.roc import edge_roc, roc_curve

EX = Path(__file__).resolve().parent.parent / "examples"


def _read(name: str) -> tuple[list[str], list[list[str]]]:
    with open(EX / name, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def tertiles(X: np.ndarray) -> np.ndarray:
    """Each column cut at its tertiles into low/mid/high (as make_sachs.py cuts sachs3.csv)."""
    cut = np.quantile(X, [1 / 3, 2 / 3], axis=0)
    return np.array(["low", "mid", "high"])[(X > cut[0]).astype(int) + (X > cut[1]).astype(int)]


def main() -> None:
    names, rows = _read("sachs.csv")
    obs = np.array(rows, dtype=float)
    header, rows = _read("sachs_interventional.csv")
    assert header[:-1] == names and header[-1] == "targets"
    every = np.array([r[:-1] for r in rows], dtype=float)
    targets = [{t for t in r[-1].split("|") if t} for r in rows]
    _, arcs = _read("sachs.truth.csv")
    n = len(names)
    A = np.zeros((n, n), dtype=bool)
    for a, b in arcs:
        A[names.index(a), names.index(b)] = True
    off = ~np.eye(n, dtype=bool)
    _, obs3 = _read("sachs3.csv")
    data = {"observational": (obs, np.array(obs3), None),
            "9 conditions, targets": (every, tertiles(every), targets),
            "9 conditions, no targets": (every, tertiles(every), None)}
    print(f"{'model':<27} {'data':<25} {'rows':>5} {'k':>2} {'AUC undirected':>15} "
          f"{'AUC directed':>13} {'log p(data)':>12}")
    for k in (2, 3):
        for label, pick, score in (("BGe, measured intensities", lambda c, d: c, "bge"),
                                   ("BGe, log intensities", lambda c, d: np.log(c), "bge"),
                                   ("BDeu (ess 1), 3 levels", lambda c, d: d, "bdeu")):
            for which, (cont, disc, tg) in data.items():
                res = bigbn.learn(pick(cont, disc), names=names, max_parents=k, score=score,
                                  interventions=tg)
                und = edge_roc(res.posterior, A).auc
                dire = roc_curve(res.posterior[off], A[off]).auc
                print(f"{label:<27} {which:<25} {len(cont):>5} {k:>2} {und:>15.3f} {dire:>13.3f} "
                      f"{res.log_marginal:>12.1f}", flush=True)


if __name__ == "__main__":
    main()
