"""One vocabulary across commands: --max-parents/-k and --structure-prior mean the same on
run, simulate and study; old spellings still work (hidden); plot and roc take a work
directory."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bigbn.cli import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_simulate_max_parents_and_its_old_spelling(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert invoke("simulate", "--n", 6, "--max-parents", 1, "--rows", 50, "--seed", 4, a).exit_code == 0
    assert invoke("simulate", "--n", 6, "--k", 1, "--rows", 50, "--seed", 4, b).exit_code == 0
    assert a.read_text() == b.read_text()
    children = [line.split(",")[1] for line in (tmp_path / "a.truth.csv").read_text().splitlines()[1:]]
    assert children and all(children.count(c) == 1 for c in children), "at most 1 parent each"
    res = invoke("simulate", "--n", 6, "-k", 1, "--k", 2, "--rows", 5, tmp_path / "c.csv")
    assert res.exit_code == 1 and "old spelling" in res.output
    helptext = invoke("simulate", "--help").output
    assert "--max-parents" in helptext and "--k " not in helptext


def test_study_vocabulary(tmp_path):
    helptext = invoke("study", "--help").output
    assert "--max-parents" in helptext and "--structure-prior" in helptext
    assert "--prior " not in helptext and "--k " not in helptext
    res = invoke("study", "--score", "bic", tmp_path / "s")
    assert res.exit_code == 2 and "bic" in res.output
    res = invoke("study", "--prior", "uniform", "--structure-prior", "uniform", tmp_path / "s")
    assert res.exit_code == 1 and "old spelling" in res.output
    assert not (tmp_path / "s").exists()


def test_plot_takes_a_workdir(tmp_path):
    data = tmp_path / "d.csv"
    assert invoke("simulate", "--n", 4, "--rows", 200, "--seed", 1, data).exit_code == 0
    assert invoke("run", data, "-w", tmp_path / "w", "-q", "-k", 2).exit_code == 0
    out = tmp_path / "g.png"
    res = invoke("plot", tmp_path / "w", "--graph", out, "--truth", tmp_path / "d.truth.csv")
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.output and out.stat().st_size > 5000



def test_tab_and_semicolon_files_are_detected_and_sep_overrides(tmp_path):
    import csv as _csv

    rows = list(_csv.reader(open(Path(__file__).resolve().parent.parent / "examples" / "asia.csv")))
    ref = invoke("run", Path(__file__).resolve().parent.parent / "examples" / "asia.csv",
                 "-w", tmp_path / "ref", "-q", "-k", 1)
    assert ref.exit_code == 0
    for name, sep in (("a.tsv", "\t"), ("a.ssv", ";")):
        f = tmp_path / name
        f.write_text("\n".join(sep.join(r) for r in rows) + "\n")
        forbid = tmp_path / f"forbid-{name}.csv"
        forbid.write_text(f"parent{sep}child\nasia{sep}tub\n")
        r = invoke("run", f, "-w", tmp_path / f"{name}-w", "-q", "-k", 1)
        assert r.exit_code == 0, r.output
        assert (tmp_path / f"{name}-w" / "edges.csv").read_text() == (tmp_path / "ref" / "edges.csv").read_text()
        r = invoke("run", f, "-w", tmp_path / f"{name}-f", "-q", "-k", 1, "--forbid", forbid)
        assert r.exit_code == 0 and "asia,tub,0\n" in (tmp_path / f"{name}-f" / "edges.csv").read_text()
    r = invoke("run", tmp_path / "a.ssv", "-w", tmp_path / "x", "-q", "--sep", ",")
    assert r.exit_code == 1 and "need at least 2 columns" in r.output


def test_first_run_says_it_compiles(tmp_path):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(root))
    cmd = [sys.executable, "-m", "bigbn.cli", "run", str(root / "examples" / "asia.csv"), "-k", "1",
           "--top", "0", "-w", str(tmp_path / "w"), "--fresh"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0 and second.returncode == 0
    assert "first run: compiling" in first.stderr and "first run" not in second.stderr
