"""The README's quick start in order must not break the install: numba's compile cache
lives in a per-user folder, never inside the installed package (a later `pip install`
would leave it behind as an empty namespace package that hides the new install)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bigbn

PKG = Path(bigbn.__file__).resolve().parent
RUN = ("import bigbn, numpy as np; "
       "from bigbn import kernels; from bigbn.kernels import sampling, linext, maxplus; "
       "linext.count_linear_extensions(np.zeros(3, dtype=np.int64)); "
       "import numba; print(numba.config.CACHE_DIR)")


def numba_files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc")}


def run(code: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.slow
def test_numba_cache_is_per_user_not_in_the_package(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = str(PKG.parent)
    before = numba_files(PKG)
    assert run(RUN, env) == str(tmp_path / "cache" / "bigbn" / "numba")
    assert numba_files(PKG) == before, "numba wrote its cache inside the package"
    assert numba_files(tmp_path / "cache" / "bigbn" / "numba"), "no cache written at all"
    # numba imported before bigbn: its config is set anyway
    assert run("import numba; " + RUN, env) == str(tmp_path / "cache" / "bigbn" / "numba")
    # a user's own NUMBA_CACHE_DIR wins
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    assert run(RUN, env) == str(tmp_path / "mine")


def test_importing_bigbn_and_its_kernels_leaves_the_environment_alone(tmp_path):
    """The cache folder goes to numba.config (bigbn/_numba.py), never to os.environ."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = str(PKG.parent)
    code = ("import os, sys; before = dict(os.environ); import bigbn; "
            "assert dict(os.environ) == before, 'import bigbn'; assert 'numba' not in sys.modules; "
            "from bigbn import kernels; from bigbn.scores import discrete; from bigbn.engine import tasks; "
            "from bigbn.cli import main as cli; assert dict(os.environ) == before, 'kernels'; "
            "import numba; print(numba.config.CACHE_DIR, cli.kernels_compiled())")
    assert run(code, env) == f"{tmp_path / 'cache' / 'bigbn' / 'numba'} False"
