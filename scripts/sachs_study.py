#!/usr/bin/env python
"""Edge recovery on the Sachs et al. (2005) observational data against its consensus
network: BGe on the measured intensities and on their logarithms, BDeu on the 3-level
discretisation (examples/sachs*.csv, see scripts/make_sachs.py). Prints, for k = 2, 3,
the undirected-edge AUC (paper section 5.1), the directed AUC (each ordered pair scored
by its own posterior, true iff that arc is in the consensus network) and log p(data).

    python scripts/sachs_study.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import bigbn
from bigbn.roc import edge_roc, roc_curve

EX = Path(__file__).resolve().parent.parent / "examples"


def main() -> None:
    with open(EX / "sachs.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    names, X = rows[0], np.array(rows[1:], dtype=float)
    with open(EX / "sachs.truth.csv", newline="") as fh:
        arcs = [tuple(r) for r in list(csv.reader(fh))[1:]]
    n = len(names)
    A = np.zeros((n, n), dtype=bool)
    for a, b in arcs:
        A[names.index(a), names.index(b)] = True
    off = ~np.eye(n, dtype=bool)
    print(f"{'model':<34} {'k':>2} {'AUC undirected':>15} {'AUC directed':>13} {'log p(data)':>12}")
    for k in (2, 3):
        for label, data, kw in (("BGe, measured intensities", X, {"score": "bge"}),
                                ("BGe, log intensities", np.log(X), {"score": "bge"}),
                                ("BDeu (ess 1), 3 levels", EX / "sachs3.csv", {"score": "bdeu"})):
            res = bigbn.learn(data, names=names, max_parents=k, **kw)
            und = edge_roc(res.posterior, A).auc
            dire = roc_curve(res.posterior[off], A[off]).auc
            print(f"{label:<34} {k:>2} {und:>15.3f} {dire:>13.3f} {res.log_marginal:>12.1f}")


if __name__ == "__main__":
    main()
