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
