"""Out-of-core behaviour at small scale: the memory budget bounds a real process's peak
RSS, `bigbn plan` reports what a run needs, a too-small disk is refused up front, and the
progress stream reports every task."""

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from bigbn import learn
from bigbn import options
from bigbn.cli.main import main
from bigbn.errors import OptionError
from bigbn.plan.lattice import Plan, choose_chunk_bits, time_estimate


def _data(path, n, m=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, size=(m, n))
    np.savetxt(path, x, fmt="%d", delimiter=",", header=",".join(f"V{j}" for j in range(n)), comments="")
    return path


def _peak_rss(data, workdir, *extra):
    subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(data), "--workdir", str(workdir),
                    "-k", "3", "--quiet", "--workers", "2", *extra], check=True, capture_output=True)
    summary = json.loads((workdir / "summary.json").read_text())
    return summary["peak_rss_bytes"], summary["plan"]["chunk_bits"]


@pytest.mark.slow
def test_memory_budget_bounds_peak_rss(tmp_path):
    """The budget bounds what the tables add on top of the process's fixed footprint
    (Python, numba, zarr, dask), measured by the same run with small 2^12-entry chunks
    (same code paths, so the same compiled kernels are loaded)."""
    data = _data(tmp_path / "d.csv", 20)
    _peak_rss(data, tmp_path / "warm", "--chunk-bits", "12")  # fills numba's cache
    base, _ = _peak_rss(data, tmp_path / "base", "--chunk-bits", "12")
    budget = 32 << 20
    rss, c = _peak_rss(data, tmp_path / "small", "--memory", "32M")
    assert 12 < c < 20
    assert rss - base <= budget, f"tables used {(rss - base) / 2**20:.0f} MiB over a 32 MiB budget"
    big, c_big = _peak_rss(data, tmp_path / "big", "--chunk-bits", "20")
    # the budget is what made the difference: 2^20-entry chunks take clearly more than it allowed
    # (by half the budget: the fixed footprint, dask's scheduler included, moves by a few MiB)
    assert c_big == 20 and big - rss > budget // 2, (big - rss) / 2**20


def test_plan_command_reports_disk_memory_time(tmp_path):
    r = CliRunner().invoke(main, ["plan", "--n", "28", "-k", "3", "--memory", "4G", "--workers", "2",
                                  "--workdir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    p = Plan(28, 3, choose_chunk_bits(28, 3, 4 << 30, 2))
    assert f"chunk bits c = {p.chunk_bits}" in r.output
    # L whole (8 × 2^28 bytes); B, released chunk by chunk, 88 chunks with two workers in
    # the plan's order; at most two adjacent levels, C(8, 4) + C(8, 3) = 126, in any order
    assert "forward 2.0 GiB, backward 704.0 MiB" in r.output and "up to 3.1 GiB on a dask cluster" in r.output
    assert "alpha" not in r.output.split("disk:")[1].split("\n")[0]  # recomputed, not stored
    assert "memory:" in r.output and "time:" in r.output and "free" in r.output
    r = CliRunner().invoke(main, ["plan", "--n", "28", "-k", "3", "--alpha", "store"])
    assert "alpha 28.0 GiB" in r.output


def test_time_estimate_grows_like_n_2_to_the_n():
    t = [sum(v for s, v in time_estimate(Plan(n, 3, min(n, 20)), 2).items() if s != "start")
         for n in (22, 24, 26, 28)]
    for a, b in zip(t, t[1:]):
        assert 3.5 < b / a < 6  # ×4 per two variables, a bit more for the extra n factor


def test_run_refuses_when_disk_is_too_small(tmp_path, monkeypatch):
    import shutil

    import bigbn.engine.runner as runner

    data = _data(tmp_path / "d.csv", 12)
    real = shutil.disk_usage
    monkeypatch.setattr(runner.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=1000))
    r = CliRunner().invoke(main, ["run", str(data), "--workdir", str(tmp_path / "w")])
    assert r.exit_code == 1
    assert "needs" in r.output and "of disk, only" in r.output and "bigbn plan --n 12" in r.output
    assert not (tmp_path / "w" / "run.json").exists()


def test_progress_events_cover_every_task(tmp_path):
    data = _data(tmp_path / "d.csv", 10)
    seen = {}
    learn(data, workdir=tmp_path / "w", chunk_bits=5, progress=lambda s, d, t: seen.__setitem__(s, (d, t)))
    plan = Plan(10, 3, 5)
    for stage in ("forward", "backward", "gamma", "edges"):
        total = len(plan.stage_tasks(stage))
        assert seen[stage] == (total, total)


@pytest.mark.parametrize("text,expected", [("4G", 4 << 30), ("512M", 512 << 20), ("2.5GiB", int(2.5 * 2**30)),
                                           ("1000", 1000), ("64k", 64 << 10),
                                           # exactly: float() made these inf (then an OverflowError) or
                                           # rounded them
                                           ("9" * 400 + "T", (10**400 - 1) << 40),
                                           ("9007199254740993", 2**53 + 1), ("0.1T", 109951162777)])
def test_memory_sizes(text, expected):
    assert options.memory(text) == expected
    assert options.disk_budget(text) == expected


def test_too_small_memory_budget_is_refused_not_silently_tiny_chunks(tmp_path):
    with pytest.raises(OptionError, match="memory budget .* too small"):
        choose_chunk_bits(24, 3, 1 << 20, 2)
    r = CliRunner().invoke(main, ["plan", "--n", "24", "--memory", "1M"])
    assert r.exit_code == 1 and "too small" in r.output
    for bad in (["--workers", "-3"], ["--workers", "0"], ["--memory", "0"]):
        r = CliRunner().invoke(main, ["plan", "--n", "20", *bad])
        assert r.exit_code == 1 and "Error:" in r.output, bad


def test_a_size_of_400_digits_is_planned_not_a_traceback():
    """--memory 999...9 (400 digits): float() made it inf, int(inf) an OverflowError; read
    exactly, its display (`gib`) divided it into a float, another OverflowError."""
    big = "9" * 400
    for args in (["--memory", big], ["--disk-budget", big + "G"]):
        r = CliRunner().invoke(main, ["plan", "--n", "5", *args])
        assert r.exit_code == 0 and r.exception is None, r.output
    assert "budget 9.095E+387 TiB" in CliRunner().invoke(main, ["plan", "--n", "5", "--memory", big]).output


def test_workers_beyond_int64_are_refused_in_one_line():
    """bigbn run/plan --chunk-bits 2 --workers 10^20: the plan's chunk counts (int64)
    overflowed, a traceback."""
    for cmd in (["plan", "--n", "5", "--chunk-bits", "2"], ["plan", "--n", "5"]):
        r = CliRunner().invoke(main, [*cmd, "--workers", str(10**20)])
        assert r.exit_code == 1 and "--workers must be at most 1,048,576" in r.output, r.output
