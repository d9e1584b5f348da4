#!/usr/bin/env python
"""Build examples/sachs*.csv from the Sachs et al. (2005) flow-cytometry data.

The data ship inside the `cdt` wheel on PyPI (Causal Discovery Toolbox, MIT licence):
`cdt/data/resources/cyto_full_data.csv` (7466 rows: the 9 experimental conditions of
Sachs et al. stacked) and `cyto_full_target.csv` (the consensus network). Get the wheel
once with `pip download --no-deps cdt==0.6.0 -d DIR` and run

    python scripts/make_sachs.py DIR/cdt-0.6.0-py3-none-any.whl

Nothing is downloaded by this script, by bigbn or by the tests.

The observational block: the conditions are stacked in the order of Sachs et al.'s files
(1. cd3cd28, 853 cells; 2. cd3cd28+icam2, 902; 3. +akt inhibitor, 911; 4. +G0076, 723;
5. +psitect, 810; 6. +U0126, 799; 7. +LY294002, 848; 8. PMA, 913; 9. β2cAMP, 707). This
is checked, not assumed: a change-point scan of the standardised log intensities
(largest jumps between the means of 100-row windows) must find the 8 block boundaries
within 15 rows, and the U0126 (MEK inhibitor) block must have the lowest median
p44/42 (Erk) and the psitect (PIP2 inhibitor) block the lowest median PIP2.

Writes examples/sachs.csv (block 1 only: general stimulation, no intervention; 853 rows,
11 proteins, continuous, as measured), examples/sachs3.csv (the same rows, each column cut
at its tertiles into low/mid/high, as Sachs et al. discretised into 3 levels),
examples/sachs.truth.csv (the consensus network, parent,child), with bnlearn's short
protein names, and examples/sachs_interventional.csv: all nine blocks (7466 rows) with a
column `targets` naming the intervened proteins of each row's condition (TARGETS: the
inhibitors and activators of Sachs et al. 2005, table 1, in the encoding of the
literature, e.g. Eaton & Murphy 2007 and Mooij, Magliacane & Claassen 2020; blocks 1 and 2,
general stimulation with and without ICAM-2, are observational).
"""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from pathlib import Path

import numpy as np

SIZES = [853, 902, 911, 723, 810, 799, 848, 913, 707]
RENAME = {"praf": "Raf", "pmek": "Mek", "plcg": "Plcg", "PIP2": "PIP2", "PIP3": "PIP3",
          "p44/42": "Erk", "pakts473": "Akt", "PKA": "PKA", "PKC": "PKC", "P38": "P38", "pjnk": "Jnk"}
OUT = Path(__file__).resolve().parent.parent / "examples"
#: the intervened proteins of each block (bnlearn's names): 3. Akt inhibitor; 4. G0076,
#: a PKC inhibitor; 5. psitectorigenin, a PIP2 inhibitor; 6. U0126, a MEK inhibitor;
#: 7. LY294002, a PI3K inhibitor (PI3K makes PIP3); 8. PMA, a PKC activator; 9. β2cAMP,
#: a PKA activator
TARGETS = ["", "", "Akt", "PKC", "PIP2", "Mek", "PIP3", "PKC", "PKA"]


def read_csv(text: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def main(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as z:
        header, rows = read_csv(z.read("cdt/data/resources/cyto_full_data.csv").decode())
        _, arcs = read_csv(z.read("cdt/data/resources/cyto_full_target.csv").decode())
    X = np.array(rows, dtype=float)
    assert X.shape == (sum(SIZES), 11), X.shape
    bounds = np.cumsum(SIZES)[:-1]
    L = np.log(np.clip(X, 0.01, None))
    Z = (L - L.mean(0)) / L.std(0)
    w = 100
    jump = np.array([np.linalg.norm(Z[i - w:i].mean(0) - Z[i:i + w].mean(0)) for i in range(w, len(Z) - w)])
    found: list[int] = []
    for t in np.argsort(-jump):
        if all(abs(t + w - f) > 150 for f in found):
            found.append(int(t + w))
        if len(found) == len(bounds):
            break
    found.sort()
    print("block boundaries expected", bounds.tolist(), "found", found)
    assert all(abs(a - b) <= 15 for a, b in zip(found, bounds)), "blocks are not where expected"
    starts = np.r_[0, bounds]
    med = np.array([np.median(L[a:a + s], axis=0) for a, s in zip(starts, SIZES)])
    erk, pip2 = header.index("p44/42"), header.index("PIP2")
    assert int(np.argmin(med[:, erk])) == 5 and int(np.argmin(med[:, pip2])) == 4, med
    obs = X[: SIZES[0]]
    names = [RENAME[h] for h in header]
    with open(OUT / "sachs.csv", "w", newline="") as fh:
        w_ = csv.writer(fh, lineterminator="\n")
        w_.writerow(names)
        w_.writerows([[f"{v:g}" for v in row] for row in obs])
    levels = np.array(["low", "mid", "high"])
    cut = np.quantile(obs, [1 / 3, 2 / 3], axis=0)
    codes = (obs > cut[0]).astype(int) + (obs > cut[1]).astype(int)
    with open(OUT / "sachs3.csv", "w", newline="") as fh:
        w_ = csv.writer(fh, lineterminator="\n")
        w_.writerow(names)
        w_.writerows(levels[codes].tolist())
    with open(OUT / "sachs.truth.csv", "w", newline="") as fh:
        w_ = csv.writer(fh, lineterminator="\n")
        w_.writerow(["parent", "child"])
        w_.writerows([[RENAME[a], RENAME[b]] for a, b in arcs])
    with open(OUT / "sachs_interventional.csv", "w", newline="") as fh:
        w_ = csv.writer(fh, lineterminator="\n")
        w_.writerow(names + ["targets"])
        for block, (a, size) in enumerate(zip(starts, SIZES)):
            w_.writerows([[f"{v:g}" for v in row] + [TARGETS[block]] for row in X[a:a + size]])
    print(f"wrote {OUT}/sachs.csv, sachs3.csv ({len(obs)} rows), sachs.truth.csv ({len(arcs)} arcs), "
          f"sachs_interventional.csv ({len(X)} rows)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
