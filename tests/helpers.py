"""Small helpers shared by test modules: where the repository and the asia example are, the
CLI run in this process, and the environment for running it in a subprocess."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from bigbn.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
ASIA = ROOT / "examples" / "asia.csv"


def cli(*args, **kw):
    """`bigbn ARGS` in this process (click's runner); arguments may be paths or numbers."""
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def env() -> dict:
    """The environment for `python -m bigbn.cli` in a subprocess: this checkout first."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def wide_tiered_data(score: str, n: int = 64, m: int = 30):
    """(X, names, tiers): m rows of n standard normals with v63 = 2·v0 + noise (binarised
    at 0 for a discrete score), and tiers of 8: a tiered run past the untiered engine's 40
    variables and past 62, where parent sets are Python ints."""
    import numpy as np

    rng = np.random.default_rng(1)
    X = rng.normal(size=(m, n))
    X[:, n - 1] += 2 * X[:, 0]
    if score == "bdeu":
        X = (X > 0).astype(int)
    names = [f"v{i}" for i in range(n)]
    return X, names, [names[i:i + 8] for i in range(0, n, 8)]
