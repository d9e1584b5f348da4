#!/usr/bin/env python
"""Build examples/anes96.csv, a real table of mixed data, from statsmodels' copy of it.

The American National Election Studies 1996 pilot extract (944 respondents, 10 columns)
ships with statsmodels (`statsmodels/datasets/anes96/anes96.csv`, BSD-licensed package;
the data are marked "This is public domain." in its `data.py`, source
electionstudies.org). With statsmodels installed, run

    python scripts/make_anes96.py

Nothing is downloaded. What is changed, and why: `popul` (census place population in
thousands, 0 to 7300) becomes `logpopul` = log(popul + 0.1), as statsmodels' own loader
adds it (the Gaussian scores assume roughly symmetric columns); `vote` is written as its
label (0 → Clinton, 1 → Dole) so that the table holds text and `bigbn run`'s `auto` reads it
as mixed data; every other column is written as the file holds it (codes and numbers).
Under the cg score's rule (bigbn/scores/cg.py) the columns of at most 10 whole-number
levels (TVnews 0–7, selfLR/ClinLR/DoleLR 1–7, PID 0–6, educ 1–7) and vote are discrete;
logpopul, age and income (24 income brackets) are continuous.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "examples" / "anes96.csv"
COLUMNS = ["logpopul", "TVnews", "selfLR", "ClinLR", "DoleLR", "PID", "age", "educ", "income", "vote"]


def main() -> int:
    try:
        import statsmodels.datasets.anes96 as anes96
    except ImportError:
        print("needs statsmodels (pip install statsmodels): its package holds the data", file=sys.stderr)
        return 1
    src = Path(anes96.__file__).with_name("anes96.csv")
    with open(src, newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    head = [c.strip("'") for c in rows[0]]
    out = []
    for row in rows[1:]:
        rec = dict(zip(head, row))
        popul = float(rec["popul"])
        vote = {"0": "Clinton", "1": "Dole"}[str(int(float(rec["vote"])))]
        values = [f"{math.log(popul + 0.1):.6g}"] + [str(int(float(rec[c]))) for c in COLUMNS[1:-1]] + [vote]
        out.append(values)
    with open(OUT, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows(out)
    print(f"wrote {OUT}: {len(out)} rows, {len(COLUMNS)} columns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
