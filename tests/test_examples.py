"""The bundled example datasets run, are read as the kind they are, and match their truth
files (examples/; provenance in examples/README.md)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import bigbn
from bigbn.roc import edge_roc

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
    res = bigbn.learn(EX / name, max_parents=2, workdir=tmp_path / "w")
    assert res.summary["options"]["score"] == score
    stem = "sachs" if name.startswith("sachs") else "asia"
    expect = {"sachs": (11, 853), "asia": (8, 2000)}[stem]
    assert (res.summary["n"], res.summary["m"]) == expect
    A = truth(EX / f"{stem}.truth.csv", list(res.names))
    assert A.sum() == {"sachs": 18, "asia": 8}[stem]
    assert edge_roc(res.posterior, A).auc > 0.55
    assert (tmp_path / "w" / "parent_sets.csv").exists()
