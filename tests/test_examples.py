"""The bundled example datasets run, are read as the kind they are, and match their truth
files (examples/; provenance in examples/README.md)."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest

import bigbn
from bigbn.errors import BigBNWarning
from bigbn.tools.roc import edge_roc

EX = Path(__file__).resolve().parent.parent / "examples"


def truth(path, names):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["parent", "child"]
    A = np.zeros((len(names), len(names)), dtype=bool)
    for a, b in rows[1:]:
        A[names.index(a), names.index(b)] = True
    return A


@pytest.mark.parametrize("name,score", [("sachs.csv", "bge"), ("sachs3.csv", "bdeu"), ("asia.csv", "bdeu")])
def test_example_runs_and_recovers_more_than_chance(name, score, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = bigbn.learn(EX / name, max_parents=2, workdir=tmp_path / "w")
    # the measured intensities are far from the unit scale BGe's prior assumes: said once
    said = [str(w.message) for w in caught if issubclass(w.category, BigBNWarning)]
    assert len(said) == (score == "bge") and all("far from unit scale" in x for x in said)
    assert res.summary["options"]["score"] == score
    stem = "sachs" if name.startswith("sachs") else "asia"
    expect = {"sachs": (11, 853), "asia": (8, 2000)}[stem]
    assert (res.summary["n"], res.summary["m"]) == expect
    A = truth(EX / f"{stem}.truth.csv", list(res.names))
    assert A.sum() == {"sachs": 18, "asia": 8}[stem]
    assert edge_roc(res.posterior, A).auc > 0.55
    assert (tmp_path / "w" / "parent_sets.csv").exists()


def test_the_nine_sachs_conditions_with_their_targets(tmp_path):
    """sachs_interventional.csv: the 7466 rows in Sachs et al.'s nine blocks, block 1 equal
    to sachs.csv, each block's targets as examples/README.md lists them; it runs with
    --intervention-column targets."""
    with open(EX / "sachs_interventional.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    with open(EX / "sachs.csv", newline="") as fh:
        block1 = list(csv.reader(fh))
    assert rows[0] == block1[0] + ["targets"] and len(rows) == 7467
    assert [r[:-1] for r in rows[1:854]] == block1[1:]
    sizes = [853, 902, 911, 723, 810, 799, 848, 913, 707]
    starts = np.cumsum([1] + sizes)
    blocks = [{r[-1] for r in rows[a:a + s]} for a, s in zip(starts, sizes)]
    assert blocks == [{""}, {""}, {"Akt"}, {"PKC"}, {"PIP2"}, {"Mek"}, {"PIP3"}, {"PKC"}, {"PKA"}]
    with pytest.warns(BigBNWarning, match="11 of 11 columns are far from unit scale"):
        res = bigbn.learn(EX / "sachs_interventional.csv", intervention_column="targets", max_parents=1,
                          workdir=tmp_path / "w")
    assert (res.summary["n"], res.summary["m"]) == (11, 7466) and res.summary["options"]["score"] == "bge"
    assert "targets" not in res.names
