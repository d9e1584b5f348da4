"""One vocabulary across commands: --max-parents/-k and --structure-prior mean the same on
run, simulate and study; old spellings still work (hidden); plot and roc take a work
directory."""

from __future__ import annotations

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

