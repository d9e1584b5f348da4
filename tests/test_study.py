"""Study bookkeeping (plan, resume, table, figures) with a fake `learn` passed to
`run_study`, and small grids through the real engine.

Most tests replace `learn` by a cheap pairwise mutual-information score, which is enough
to check what the study does with results; the last one runs the real engine and checks
every cell against the all-orders reference of tests/naive.py.
"""

from __future__ import annotations

import csv
import json
import math
import re
import struct
import types

import numpy as np
import pytest
from click.testing import CliRunner

from bigbn.cli.main import main
from bigbn.cli.tools import plot, roc, simulate, study
from bigbn.errors import DataError, OptionError
from bigbn.tools.roc import edge_roc, read_edges
from bigbn.tools.simulate import read_truth
from bigbn.tools.study import Cell, StudyPlan, cell_done, replicate_network_and_data, run_study
import helpers as h


class FakeLearn:
    """Stands in for bigbn.api.learn; records calls; can fail on the j-th call."""

    def __init__(self, fail_at=None):
        self.calls = []
        self.fail_at = fail_at

    def __call__(self, data, names=None, max_parents=None, score=None, structure_prior=None,
                 workdir=None):
        self.calls.append({"m": data.m, "n": data.n, "arities": data.arities.tolist(),
                           "max_parents": max_parents, "score": score,
                           "structure_prior": structure_prior, "names": list(names),
                           "data": data.data.copy()})
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise RuntimeError("injected fault")
        X, n = data.data, data.n
        mi = np.zeros((n, n))
        for u in range(n):
            for v in range(n):
                if u != v:
                    joint = np.zeros((data.arities[u], data.arities[v]))
                    np.add.at(joint, (X[:, u], X[:, v]), 1.0)
                    joint /= joint.sum()
                    outer = joint.sum(1, keepdims=True) @ joint.sum(0, keepdims=True)
                    nz = joint > 0
                    mi[u, v] = (joint[nz] * np.log(joint[nz] / outer[nz])).sum()
        P = np.clip(mi / (2 * mi.max() + 1e-12), 0.0, 1.0)  # an MI of -3e-16 is no posterior
        return types.SimpleNamespace(posterior=P, names=list(names), log_marginal=-float(data.m))


PLAN = StudyPlan(ns=(4, 5), ks=(1, 2), rs=(2, 3), ms=(20, 200), replicates=2, seed=3)


def test_plan_cells():
    cells = PLAN.cells()
    assert len(cells) == 2 * 2 * 2 * 2 * 2
    assert len(set(cells)) == len(cells)
    assert len({c.key for c in cells}) == len(cells)
    p = StudyPlan(ns=(10, 5, 5), ks=(3,), rs=(4, 2), ms=(100, 20), replicates=1)
    assert p.ns == (5, 10) and p.rs == (2, 4) and p.ms == (20, 100)
    with pytest.raises(OptionError):
        StudyPlan(ns=(1,))
    with pytest.raises(OptionError):
        StudyPlan(replicates=0)


def test_replicate_data_is_independent_of_the_grid():
    a = StudyPlan(ns=(5,), ks=(2,), rs=(2,), ms=(20, 100), replicates=3, seed=1)
    b = StudyPlan(ns=(5, 6), ks=(2, 3), rs=(2, 4), ms=(20, 500), replicates=3, seed=1)
    net_a, data_a = replicate_network_and_data(a, Cell(5, 2, 2, 2, 100))
    net_b, data_b = replicate_network_and_data(b, Cell(5, 2, 2, 2, 500))
    assert net_a.parents == net_b.parents
    assert data_a.shape == (100, 5) and data_b.shape == (500, 5)
    assert np.array_equal(data_a, data_b[:100])  # nested subsets: prefixes
    _, other = replicate_network_and_data(a, Cell(5, 2, 2, 1, 100))
    assert not np.array_equal(other, data_a)
    assert max(len(p) for p in net_b.parents) <= 2


def test_run_resume_and_table(tmp_path):
    fake = FakeLearn()
    rows = run_study(PLAN, tmp_path, learn=fake, figures=False)
    cells = PLAN.cells()
    assert len(fake.calls) == len(cells) == len(rows)
    for call, cell in zip(fake.calls, cells):
        assert call["m"] == cell.m and call["n"] == cell.n
        assert call["arities"] == [cell.r] * cell.n  # true r, even if a state is unseen
        assert call["max_parents"] == min(cell.k, cell.n - 1)
        assert (call["score"], call["structure_prior"]) == ("k2", "koivisto-sood")
        _, data = replicate_network_and_data(PLAN, cell)
        assert np.array_equal(call["data"], data[: cell.m])
    # the table agrees with the ROC recomputed from the files
    table = list(csv.DictReader(open(tmp_path / "auc.csv")))
    assert len(table) == len(cells)
    for row, cell in zip(table, cells):
        assert (int(row["n"]), int(row["k"]), int(row["r"]), int(row["replicate"]), int(row["m"])) == \
            (cell.n, cell.k, cell.r, cell.replicate, cell.m)
        names, P = read_edges(tmp_path / "cells" / f"{cell.key}.edges.csv")
        truth = read_truth(tmp_path / "networks" / f"{cell.replicate_key}.truth.csv", names)
        net, _ = replicate_network_and_data(PLAN, cell)
        assert np.array_equal(truth, net.adjacency())
        if truth.any():
            assert float(row["auc"]) == pytest.approx(edge_roc(P, truth).auc, abs=1e-12)
        else:
            assert math.isnan(float(row["auc"]))
        assert float(row["log_marginal"]) == -cell.m
    before = (tmp_path / "auc.csv").read_text()

    # resume: nothing to do
    again = FakeLearn()
    events = []
    run_study(PLAN, tmp_path, learn=again, figures=False,
              progress=lambda e, c, i: events.append(e))
    assert again.calls == [] and events == ["skip"] * len(cells)
    assert (tmp_path / "auc.csv").read_text() == before

    # lose two results: exactly those two run again and give the same table
    lost = [cells[3], cells[9]]
    for c in lost:
        (tmp_path / "cells" / f"{c.key}.json").unlink()
    third = FakeLearn()
    run_study(PLAN, tmp_path, learn=third, figures=False)
    assert [(x["n"], x["m"]) for x in third.calls] == [(c.n, c.m) for c in lost]
    strip = lambda t: [line.rsplit(",", 1)[0] for line in t.splitlines()]  # drop seconds
    assert strip((tmp_path / "auc.csv").read_text()) == strip(before)


def test_fault_then_resume_runs_only_missing_cells(tmp_path):
    faulty = FakeLearn(fail_at=5)
    with pytest.raises(RuntimeError, match="injected"):
        run_study(PLAN, tmp_path, learn=faulty, figures=False)
    done = [c for c in PLAN.cells() if cell_done(tmp_path, c)]
    assert len(done) == 4
    assert not list((tmp_path / "cells").glob("*.tmp"))
    rest = FakeLearn()
    rows = run_study(PLAN, tmp_path, learn=rest, figures=False)
    assert len(rest.calls) == len(PLAN.cells()) - 4
    assert len(rows) == len(PLAN.cells())


def test_changed_seed_is_refused(tmp_path):
    small = StudyPlan(ns=(4,), ks=(1,), rs=(2,), ms=(20,), replicates=1, seed=1)
    run_study(small, tmp_path, learn=FakeLearn(), figures=False)
    other = StudyPlan(ns=(4,), ks=(1,), rs=(2,), ms=(20,), replicates=1, seed=2)
    with pytest.raises(OptionError, match="seed=1"):
        run_study(other, tmp_path, learn=FakeLearn(), figures=False)
    # a larger grid with the same seed extends the study
    bigger = StudyPlan(ns=(4,), ks=(1,), rs=(2,), ms=(20, 50), replicates=2, seed=1)
    fake = FakeLearn()
    run_study(bigger, tmp_path, learn=fake, figures=False)
    assert len(fake.calls) == 3


def check_png(path):
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    import matplotlib.image

    w, h = struct.unpack(">II", data[16:24])
    assert matplotlib.image.imread(path).shape[:2] == (h, w) and w > 0 and h > 0


@pytest.mark.slow
def test_figures(tmp_path):
    plan = StudyPlan(ns=(4, 5), ks=(2,), rs=(2, 3), ms=(50, 500), replicates=2, seed=0)
    run_study(plan, tmp_path, learn=FakeLearn(), figures=True)
    names = sorted(p.name for p in (tmp_path / "figures").glob("*.png"))
    assert names == ["by_k_n4.png", "by_k_n5.png", "by_n_k2.png",
                     "variance_n4_k2.png", "variance_n5_k2.png"]
    for p in (tmp_path / "figures").glob("*.png"):
        check_png(p)


def test_cli_study_runs_the_engine_and_resumes(tmp_path):
    out = tmp_path / "s"
    args = ["--n", "4", "-k", "1,2", "--states", "2", "--rows", "20,100", "--replicates", "1",
            "--seed", "5", str(out)]
    res = CliRunner().invoke(study, args)
    assert res.exit_code == 0, res.output
    assert "4 of 4 cells done" in res.output
    assert (out / "figures" / "by_k_n4.png").exists()
    meta = json.loads((out / "study.json").read_text())
    assert meta == {"format": "bigbn-study", "seed": 5, "score": "k2", "structure_prior": "koivisto-sood"}
    cells = sorted((out / "cells").glob("*.json"))
    assert len(cells) == 4
    stamps = [p.stat().st_mtime_ns for p in cells]
    res = CliRunner().invoke(study, args)  # resume: no cell computed again
    assert res.exit_code == 0 and "4 of 4 cells done" in res.output
    assert [p.stat().st_mtime_ns for p in sorted((out / "cells").glob("*.json"))] == stamps
    # a smaller grid into the same folder counts its own cells, not auc.csv's rows
    small = ["--n", "4", "-k", "1", "--states", "2", "--rows", "20", "--replicates", "1", "--seed", "5",
             "--no-figures", str(out)]
    res = CliRunner().invoke(study, small)
    assert res.exit_code == 0 and f"1 of 1 cells done (and 3 of other grids run into {out})" in res.output
    res = CliRunner().invoke(study, ["--n", "4,x", str(out)])
    assert isinstance(res.exception, OptionError)


def test_study_refuses_a_folder_it_did_not_make_untouched(tmp_path):
    """Review finding: `bigbn study ... DIR` wrote into a folder holding a thesis."""
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "ch1.tex").write_text("x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "study.json").write_text('{"seed": 0}')
    for folder in (thesis, tmp_path / "other"):
        before = sorted(p.name for p in folder.iterdir())
        res = CliRunner().invoke(main, ["study", "--n", "4", "-k", "1", "--states", "2", "--rows", "20",
                                        "--replicates", "1", "--no-figures", str(folder)])
        assert res.exit_code == 1 and "leaves it untouched" in res.output, res.output
        assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("command", [simulate, roc, plot, study])
def test_every_command_has_help_with_an_example(command):
    res = CliRunner().invoke(command, ["--help"])
    assert res.exit_code == 0
    assert "Example" in res.output and "bigbn " + command.name in res.output


def test_smaller_later_grid_keeps_every_finished_cell_in_the_table(tmp_path):
    big = StudyPlan(ns=(4,), ks=(2,), rs=(2,), ms=(20, 100), replicates=3, seed=0)
    run_study(big, tmp_path, learn=FakeLearn(), figures=False)
    small = StudyPlan(ns=(4,), ks=(2,), rs=(2,), ms=(20, 100), replicates=1, seed=0)
    fake = FakeLearn()
    rows = run_study(small, tmp_path, learn=fake, figures=False)
    assert fake.calls == [] and len(rows) == 6
    lines = (tmp_path / "auc.csv").read_text().splitlines()
    assert len(lines) == 7 and {line.split(",")[3] for line in lines[1:]} == {"0", "1", "2"}


def test_two_studies_cannot_share_a_folder(tmp_path):
    from bigbn.errors import WorkdirError
    from bigbn.store.workdir import Workdir

    plan = StudyPlan(ns=(4,), ks=(1,), rs=(2,), ms=(20,), replicates=1, seed=0)
    with Workdir(tmp_path).lock():
        with pytest.raises(WorkdirError, match="in use by another bigbn run"):
            run_study(plan, tmp_path, learn=FakeLearn(), figures=False)
    assert len(run_study(plan, tmp_path, learn=FakeLearn(), figures=False)) == 1


def test_study_with_the_real_engine_matches_the_all_orders_reference(tmp_path):
    """One small grid through the real `learn`: every cell's stored posteriors equal the
    sum over all orders (tests/naive.py) of the cell's own data prefix and score."""
    import naive

    plan = StudyPlan(ns=(4, 5), ks=(2,), rs=(2,), ms=(15, 60), replicates=1, seed=7)
    rows = run_study(plan, tmp_path / "out", figures=False)
    assert len(rows) == 4
    for c in plan.cells():
        net, data = replicate_network_and_data(plan, c)
        beta = naive.k2_beta(data[: c.m], net.cardinalities, c.k, plan.structure_prior)
        P0, l0 = naive.edges_by_orders(beta, c.k)
        names, P = read_edges(tmp_path / "out" / "cells" / f"{c.key}.edges.csv")
        order = [names.index(x) for x in net.names]
        np.testing.assert_allclose(P[np.ix_(order, order)], P0, rtol=0, atol=1e-9)
        info = json.loads((tmp_path / "out" / "cells" / f"{c.key}.json").read_text())
        assert info["log_marginal"] == pytest.approx(l0, abs=1e-9)


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

def test_study_vocabulary(tmp_path):
    helptext = h.cli("study", "--help").output
    assert "--max-parents" in helptext and "--structure-prior" in helptext
    assert "--prior " not in helptext and "--k " not in helptext
    res = h.cli("study", "--score", "bic", tmp_path / "s")
    assert res.exit_code == 2 and "bic" in res.output
    res = h.cli("study", "--prior", "uniform", "--structure-prior", "uniform", tmp_path / "s")
    assert res.exit_code == 1 and "old spelling" in res.output
    assert not (tmp_path / "s").exists()


def test_a_grid_the_engine_cannot_run_is_refused_before_anything_is_made(tmp_path):
    """n = 41 drew and wrote its networks before the engine refused it; --replicates 10^11
    listed its cells until memory ran out."""
    with pytest.raises(OptionError, match="n values must be <= 40"):
        StudyPlan(ns=(5, 41), ks=(2,), rs=(2,), ms=(20,), replicates=1)
    with pytest.raises(OptionError, match="99,999,999,999 cells .* more than 1,000,000"):
        StudyPlan(ns=(4,), ks=(1,), rs=(2,), ms=(5,), replicates=99_999_999_999)
    res = CliRunner().invoke(study, ["--n", "41", "--replicates", "1", "--rows", "5", str(tmp_path / "s")])
    assert isinstance(res.exception, OptionError) and not (tmp_path / "s").exists()


def test_study_refuses_a_missing_parent_folder(tmp_path):
    """`bigbn study a/b/OUT` made a/ and a/b/ (mkdir -p) for a mistyped path; like every
    other output it needs the folder that holds it."""
    out = tmp_path / "missing" / "deeper" / "study"
    res = CliRunner().invoke(main, ["study", "--n", "4", "-k", "1", "--states", "2", "--rows", "20",
                                    "--replicates", "1", "--no-figures", str(out)])
    assert res.exit_code == 1 and res.output.count("\n") == 1, res.output
    assert f"the folder {tmp_path / 'missing' / 'deeper'} does not exist" in res.output
    assert not (tmp_path / "missing").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OptionError, match="is not a folder"):
        run_study(StudyPlan(ns=(3,), ks=(1,), rs=(2,), ms=(20,), replicates=1), tmp_path / "file" / "study")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize("text, message", [
    ("{}", "no 'n'"), ("[1]", "a JSON list, not an object"),
    ('{"n": 3, "k": 1, "r": 2, "replicate": 0, "m": "x", "auc": 0.5, "log_marginal": 1, "seconds": 1}',
     "m is 'x', not a whole number"),
    ('{"n": 3, "k": 1, "r": 2, "replicate": 0, "m": 20, "auc": "0.5", "log_marginal": 1, "seconds": 1}',
     "auc is '0.5', not a number"),
    ('{"n": 3, "k": 1, "r": 2, "replicate": 0, "m": 30, "auc": 0.5, "log_marginal": 1, "seconds": 1}',
     "it holds cell n3_k1_r2_rep00_m00030"),
])
def test_a_damaged_cell_record_is_named_not_a_traceback(tmp_path, text, message):
    """A cell's .json of {} or a list was a KeyError or TypeError traceback from the table;
    a record of another cell went into auc.csv under its own values."""
    plan = StudyPlan(ns=(3,), ks=(1,), rs=(2,), ms=(20,), replicates=1)
    run_study(plan, tmp_path / "s", learn=FakeLearn(), figures=False)
    (tmp_path / "s" / "cells" / "n3_k1_r2_rep00_m00020.json").write_text(text)
    with pytest.raises(DataError, match=re.escape(message)):
        run_study(plan, tmp_path / "s", learn=FakeLearn(), figures=False)


@pytest.mark.parametrize("kw, message", [
    (dict(ns=(3, 2.7)), "study: a value of ns must be an integer, got 2.7"),
    (dict(ms=("x",)), "study: a value of ms must be an integer, got 'x'"),
    (dict(ks=3), "study: ks must be a list of integers, got 3"),
    (dict(replicates=1.5), "study: replicates must be an integer, got 1.5"),
    (dict(seed="0"), "study: seed must be an integer, got '0'"),
    (dict(score="bge"), "study: score must be k2 or bdeu, got 'bge'"),
    (dict(structure_prior="flat"), "study: structure prior must be koivisto-sood or uniform, got 'flat'"),
])
def test_a_plan_of_values_that_are_no_integers_is_refused(kw, message):
    """int() took 2.7 as 2 nodes; 'x' was a ValueError traceback, ks=3 a TypeError one."""
    with pytest.raises(OptionError, match=re.escape(message)):
        StudyPlan(**kw)


@pytest.mark.parametrize("score", ["K2", "BDeu", "auto", "bdeu"])
def test_a_score_learn_takes_for_discrete_data_is_taken(score):
    """learn takes a score's name in any case, and auto (bdeu for the study's discrete
    data): StudyPlan refused "K2" and "BDeu", with which studies were run."""
    assert StudyPlan(ns=(3,), ks=(1,), rs=(2,), ms=(20,), score=score).score == score
