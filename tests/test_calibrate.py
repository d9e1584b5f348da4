"""The plan's clock (#39 item 5): a calibration run timed on this machine, kept per user,
prices every stage of `time_estimate`; a record of another machine, another version or a
damaged file is not used."""

import dataclasses
import json

import numpy as np
import pytest

from bigbn.plan.lattice import Plan, time_estimate
from bigbn.tools import calibrate as cal
import helpers as h


def record(factors=None, **over):
    rec = {"machine": cal.machine(), "when": "2026-11-26 10:00", "workers": 2, "load_before": 0.1,
           "wall_seconds": 5.0, "stage_seconds": {}, "factors": factors or
           {"forward": 2.0, "backward": 3.0}}
    rec.update(over)
    return rec


@pytest.mark.parametrize("plan", [Plan(28, 3, 20), Plan(24, 3, 18, "store", map_dag=True),
                                  Plan(22, 2, 16, kept=(0, 1, 3, 6))], ids=str)
def test_each_stage_takes_its_own_factor(plan):
    ref = time_estimate(plan, 2)
    got = cal.estimate(plan, 2, record())
    f = {"forward": 2.0, "backward": 3.0, "gamma": 3.0, "map": 2.0, "reforward": 2.0, "alpha": 2.0, "start": 1.0}
    assert set(got) == set(ref) and ("reforward" in ref) == (plan.kept is not None)
    for stage, t in ref.items():
        assert got[stage] == pytest.approx(t * f[stage], rel=1e-12)
    assert cal.estimate(plan, 2, None) == ref


def test_a_record_is_used_only_on_its_machine_and_version(tmp_path):
    path = str(tmp_path / "c.json")
    assert cal.load(path) is None  # no file
    cal.save(record(), path)
    assert cal.load(path) == record()
    for bad in (record(machine={**cal.machine(), "host": "elsewhere"}),
                record(machine={**cal.machine(), "bigbn": "0.0.1"}),
                record(factors={"forward": 2.0}),
                record(factors={"forward": -1.0, "backward": 3.0}),
                record(factors={"forward": "fast", "backward": 3.0}),
                record(factors={"forward": True, "backward": 3.0}),  # was a factor of 1
                {k: v for k, v in record().items() if k != "when"},  # was a KeyError in `clock`
                record(when=5)):
        cal.save(bad, path)
        assert cal.load(path) is None
    (tmp_path / "c.json").write_text("{not json")
    assert cal.load(path) is None
    (tmp_path / "c.json").write_text("[" * 100_000 + "]" * 100_000)  # was json's RecursionError
    assert cal.load(path) is None


def test_a_calibration_file_that_is_no_file_is_not_waited_for(tmp_path, monkeypatch):
    """BIGBN_CALIBRATION naming a FIFO made `bigbn plan` (and `bigbn report`) wait forever
    for a writer; /dev/zero read until memory ran out; a file past MAX_BYTES is not read
    whole. Each is no calibration: the plan is on the reference clock."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(record(pad="x" * cal.MAX_BYTES)))
    for path in (fifo, "/dev/zero", tmp_path, big):
        assert cal.load(str(path)) is None
        monkeypatch.setenv("BIGBN_CALIBRATION", str(path))
        r = h.cli("plan", "--n", 10)
        assert r.exit_code == 0 and "of the reference machine" in r.output, r.output
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{")
    assert cal.load(str(tmp_path / "bad.json")) is None


def test_a_calibration_that_cannot_be_kept_is_said_before_the_timing(tmp_path, monkeypatch):
    """A folder in the cache file's place, or a file where its folder belongs, was an
    IsADirectoryError / FileExistsError traceback after the minute of timing (and left a
    temporary file beside it); now one line, before anything is timed, nothing left."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    measured = []
    monkeypatch.setattr(cal, "measure", lambda *a, **k: measured.append(1) or record())
    for path, why in ((tmp_path / "dir", "Is a directory"), (tmp_path / "file" / "c.json", "Not a directory")):
        monkeypatch.setenv("BIGBN_CALIBRATION", str(path))
        r = h.cli("plan", "--calibrate")
        assert r.exit_code == 1 and r.output.count("\n") == 1 and f"cannot keep the calibration in {path}: {why}" \
            in r.output, r.output
        with pytest.raises(cal.OptionError, match=why):
            cal.save(record(), str(path))
    assert not measured and sorted(p.name for p in tmp_path.iterdir()) == ["dir", "file"]
    assert list((tmp_path / "dir").iterdir()) == []
    monkeypatch.setenv("BIGBN_CALIBRATION", str(tmp_path / "new" / "c.json"))
    r = h.cli("plan", "--calibrate")
    assert r.exit_code == 0 and measured and cal.load() == record(), r.output


def test_plan_calibrate_times_this_machine_and_later_plans_use_it(tmp_path, monkeypatch):
    """A small calibration run (n = 12 in place of 25, so the test is quick): its factors
    are its median stage walls over the reference clock's price of the same stages, kept in
    the cache file, and `bigbn plan` then prices every stage with them and says so."""
    path = tmp_path / "calibration.json"
    monkeypatch.setenv("BIGBN_CALIBRATION", str(path))
    monkeypatch.setattr(cal, "CALIBRATION", dataclasses.replace(cal.CALIBRATION, n=12, c=8, m=300))
    before = h.cli("plan", "--n", 26, "-k", 3, "--workers", 2)
    assert "of the reference machine (`bigbn plan --calibrate` times this one)" in before.output
    r = h.cli("plan", "--calibrate", "--workers", 2)
    assert r.exit_code == 0, r.output
    rec = json.loads(path.read_text())
    assert rec["machine"] == cal.machine() and rec["workers"] == 2
    for stage, f in rec["factors"].items():
        model = time_estimate(cal.CALIBRATION.plan(), 2)[stage]
        assert rec["model_seconds"][stage] == pytest.approx(model, rel=1e-3)
        assert f == pytest.approx(rec["stage_seconds"][stage] / model, rel=1e-2, abs=1e-3)
    after = h.cli("plan", "--n", 26, "-k", 3, "--workers", 2)
    assert after.exit_code == 0 and f"2 cores of this machine (calibrated {rec['when']})" in after.output
    t = cal.estimate(Plan(26, 3, 20), 2, cal.load(str(path)))
    line = next(x for x in after.output.splitlines() if x.startswith("time:"))
    from bigbn.cli.main import _fmt_seconds
    assert f"≈ {_fmt_seconds(sum(t.values()))}" in line and f"forward {_fmt_seconds(t['forward'])}" in line
    tiered = h.cli("plan", "--tier-sizes", "10,10", "-k", 2, "--workers", 2)
    assert "2 cores of this machine (calibrated" in tiered.output


def test_the_report_prices_the_plan_on_the_calibrated_clock(tmp_path, monkeypatch):
    """`bigbn report` predicts the run's time as `bigbn plan` does: on this machine's clock
    once it is calibrated, and says which clock it used."""
    from bigbn import learn

    rng = np.random.default_rng(3)
    data = tmp_path / "d.csv"
    np.savetxt(data, rng.integers(0, 2, size=(200, 6)), fmt="%d", delimiter=",", header="a,b,c,d,e,f",
               comments="")
    learn(data, workdir=tmp_path / "w", max_parents=2)
    before = h.cli("report", tmp_path / "w", "--out", tmp_path / "a.html")
    assert before.exit_code == 0, before.output
    assert "cores of the reference machine" in (tmp_path / "a.html").read_text()
    path = tmp_path / "calibration.json"
    monkeypatch.setenv("BIGBN_CALIBRATION", str(path))
    cal.save(record(), str(path))
    h.cli("report", tmp_path / "w", "--out", tmp_path / "b.html")
    assert "cores of this machine (calibrated 2026-11-26 10:00)" in (tmp_path / "b.html").read_text()


def test_a_calibration_file_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path):
    """BIGBN_CALIBRATION naming a folder: os.replace's IsADirectoryError, and the temporary
    file was left beside it."""
    (tmp_path / "c.json").mkdir()
    with pytest.raises(cal.OptionError, match=r"cannot keep the calibration in .*c\.json: Is a directory"):
        cal.save(record(), str(tmp_path / "c.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]
