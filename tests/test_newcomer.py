"""Issue #10, "safe in a newcomer's hands": each finding of the review, as a test that
failed on the code before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
from bigbn.api import workdir_status
from bigbn.cli import main

ROOT = Path(__file__).resolve().parent.parent
ASIA = ROOT / "examples" / "asia.csv"


def cli(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


# 2. journal records with wrong-typed fields
@pytest.mark.parametrize("damage", [
    lambda r: {**r, "task": 12},
    lambda r: {**r, "seconds": "0.02"},
    lambda r: {**r, "crc": "123"},
    lambda r: {**r, "crc": True},
    lambda r: {**r, "start": None},
    lambda r: {**r, "log_px": "-4489"} if r["stage"] == "edges" else {**r, "end": [1]},
    lambda r: [r],
])
def test_wrong_typed_journal_records_are_rerun_not_a_crash(tmp_path, damage):
    w = tmp_path / "w"
    ref = bigbn.learn(ASIA, max_parents=1, workdir=w)
    journal = w / "journal.jsonl"
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    hit = {"edges", "forward"}
    journal.write_text("".join(json.dumps(damage(r) if r["stage"] in hit else r) + "\n" for r in lines))
    status = workdir_status(w)  # no traceback
    assert any("unfinished" in line for line in status)
    res = bigbn.learn(ASIA, max_parents=1, workdir=w)
    np.testing.assert_array_equal(res.posterior, ref.posterior)
    assert res.summary["stages"]["edges"]["tasks_this_invocation"] == 1
    assert res.summary["stages"]["backward"]["tasks_this_invocation"] == 0, "good chunks kept"
    r = cli("status", "-w", w)
    assert r.exit_code == 0 and "finished" in r.output


# 3. a named pipe as input is read once, and hashed as read
def test_named_pipe_input(tmp_path):
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    text = ASIA.read_bytes()

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    p = subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(fifo), "-w", str(tmp_path / "p"),
                        "-k", "1", "-q"], env=env(), capture_output=True, text=True, timeout=300)
    writer.join(timeout=5)
    assert p.returncode == 0, p.stderr
    ref = bigbn.learn(ASIA, max_parents=1, workdir=tmp_path / "f")
    pipe_run = json.loads((tmp_path / "p" / "run.json").read_text())
    file_run = json.loads((tmp_path / "f" / "run.json").read_text())
    assert pipe_run["fingerprint"]["data_sha256"] == file_run["fingerprint"]["data_sha256"]
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["log_marginal_likelihood"] \
        == ref.log_marginal


def test_named_pipe_with_constraint_files(tmp_path):
    """With --forbid the names are needed before the run: still one read of the pipe."""
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    forbid = tmp_path / "forbid.csv"
    forbid.write_text("parent,child\nasia,tub\n")
    writer = threading.Thread(target=lambda: open(fifo, "wb").write(ASIA.read_bytes()), daemon=True)
    writer.start()
    p = subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(fifo), "-w", str(tmp_path / "p"),
                        "-k", "1", "-q", "--forbid", str(forbid)],
                       env=env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    edges = (tmp_path / "p" / "edges.csv").read_text().splitlines()
    assert "asia,tub,0" in edges


# 5. other people's folders
def test_a_folder_that_is_not_a_workdir_is_refused_and_untouched(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "edges.csv").write_text("mine\n")
    (theirs / "notes.txt").write_text("keep me\n")
    for extra in ([], ["--fresh"]):
        r = cli("run", ASIA, "-w", theirs, "-k", 1, "-q", *extra)
        assert r.exit_code == 1 and "not a bigbn work directory" in r.output and "notes.txt" in r.output
        assert sorted(os.listdir(theirs)) == ["edges.csv", "notes.txt"]
        assert (theirs / "edges.csv").read_text() == "mine\n"


def test_empty_workdir_name_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precious.txt").write_text("x")
    r = cli("run", ASIA, "-w", "", "-k", 1, "-q", "--fresh")
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert sorted(os.listdir(tmp_path)) == ["precious.txt"]
    with pytest.raises(bigbn.errors.OptionError, match="empty work directory name"):
        bigbn.learn(ASIA, workdir="")


def test_bigbn_folders_stay_usable(tmp_path):
    w = tmp_path / "w"
    w.mkdir()  # empty: fine
    assert cli("run", ASIA, "-w", w, "-k", 1, "-q").exit_code == 0
    (w / "my-notes.txt").write_text("x")  # a run's folder with a stray file: still ours
    assert cli("run", ASIA, "-w", w, "-k", 1, "-q").exit_code == 0
    assert cli("run", ASIA, "-w", w, "-k", 1, "-q", "--fresh").exit_code == 0
    assert (w / "my-notes.txt").read_text() == "x", "--fresh removes only bigbn's files"


# 6. messages that say what is wrong, where
def test_unterminated_quote_is_reported_where_it_opens(tmp_path):
    f = tmp_path / "q.csv"
    f.write_text('a,b\n1,2\n"1,2\n3,4\n5,6\n')
    r = cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 1 and "row 3: a quote opened on this line is not closed" in r.output


def test_bom_in_constraint_files(tmp_path):
    forbid = tmp_path / "forbid.csv"
    forbid.write_bytes(b"\xef\xbb\xbfparent,child\nasia,tub\n")
    r = cli("run", ASIA, "-w", tmp_path / "w", "-q", "-k", 1, "--forbid", forbid)
    assert r.exit_code == 0, r.output
    assert "asia,tub,0\n" in (tmp_path / "w" / "edges.csv").read_text()


def test_changed_data_under_the_same_workdir_says_so(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text(ASIA.read_text())
    assert cli("run", data, "-w", tmp_path / "w", "-q", "-k", 1).exit_code == 0
    data.write_text(ASIA.read_text().replace("\nno,", "\nyes,", 1))
    r = cli("run", data, "-w", tmp_path / "w", "-q", "-k", 1)
    assert r.exit_code == 1 and "the data differ from the run's" in r.output
    assert "software" not in r.output


def test_plan_with_a_missing_workdir_prints_no_plan(tmp_path):
    r = cli("plan", "--n", 20, "--workdir", tmp_path / "nope")
    assert r.exit_code == 1 and r.output.startswith("Error:") and "disk:" not in r.output


def test_tiny_memory_budget_names_a_usable_size(tmp_path):
    r = cli("run", ASIA, "-w", tmp_path / "w", "-q", "--memory", "1k")
    assert r.exit_code == 1 and "at least 0M" not in r.output
    need = r.output.split("at least ")[1].split()[0]
    assert cli("run", ASIA, "-w", tmp_path / "w", "-q", "--memory", need).exit_code == 0


def test_huge_values_give_one_error_line_without_numpy_warnings(tmp_path):
    import warnings

    rng = np.random.default_rng(0)
    f = tmp_path / "huge.csv"
    np.savetxt(f, rng.normal(size=(50, 3)) * 1e300, delimiter=",", header="a,b,c", comments="")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(bigbn.errors.DataError, match="column 'a' is not finite"):
            bigbn.learn(f)
    assert not caught, [str(w.message) for w in caught]


def test_inf_cell_under_auto_names_its_own_column(tmp_path):
    rng = np.random.default_rng(1)
    rows = ["a,b,c"] + [",".join(f"{v:.5f}" for v in r) for r in rng.normal(size=(50, 3))]
    rows[10] = "0.5,inf,0.3"
    f = tmp_path / "inf.csv"
    f.write_text("\n".join(rows) + "\n")
    r = cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 1 and "row 11, column 'b': 'inf' is not a finite number" in r.output


# 7. silently questionable
def test_tiny_chunks_get_an_honest_plan():
    r = cli("plan", "--n", 14, "-k", 2, "--chunk-bits", 4)
    seconds = float(r.output.split("time:   ≈ ")[1].split()[0])
    assert r.exit_code == 0 and seconds >= 10, r.output  # 3074 tasks: measured ≈ 38 s


def test_suspicious_columns_get_a_warning_line(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("a,b,c\nx,1,p\nx,2,q\nx,1,p\nx,2,p\nx,1,q\n")
    r = cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 0
    warn = [x for x in r.stderr.splitlines() if x.startswith("Warning:")]
    assert len(warn) == 1 and "column 'a': a single value in every row" in warn[0]


def test_nul_byte_is_refused(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(b"a,b\n1,2\n1\x00,2\n2,1\n")
    r = cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 1 and "row 3, column 1: a NUL byte" in r.output


def test_negative_top_and_options_of_another_score(tmp_path):
    assert cli("run", ASIA, "-w", tmp_path / "w", "--top", "-3").exit_code == 2
    for args, needle in ((["--score", "k2", "--ess", "5"], "ess (--ess) is a parameter of the bdeu score"),
                         (["--alpha-mu", "2"], "alpha_mu (--alpha-mu) is a parameter of the bge score"),
                         (["--alpha-w", "20"], "alpha_w (--alpha-w) is a parameter of the bge score")):
        r = cli("run", ASIA, "-w", tmp_path / "w", "-q", *args)
        assert r.exit_code == 1 and needle in r.output
    assert not (tmp_path / "w").exists()


def test_node_listed_twice_in_a_max_parents_file(tmp_path):
    f = tmp_path / "mp.csv"
    f.write_text("node,max_parents\ntub,1\nlung,2\ntub,0\n")
    r = cli("run", ASIA, "-w", tmp_path / "w", "-q", "--max-parents-file", f)
    assert r.exit_code == 1 and "line 4: node 'tub' is listed again (first on line 2)" in r.output


def test_sigterm_says_how_to_resume(tmp_path):
    import signal
    import time

    data = tmp_path / "d.csv"
    assert cli("simulate", "--n", 15, "--rows", 300, "--seed", 2, data).exit_code == 0
    cmd = [sys.executable, "-m", "bigbn.cli", "run", str(data), "-w", str(tmp_path / "w"), "-k", "4",
           "--chunk-bits", "6", "-q", "--top", "0"]
    p = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = tmp_path / "w" / "journal.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None and \
            (not journal.exists() or journal.read_text().count("\n") < 20):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert err.strip().splitlines()[-1] == ("terminated (SIGTERM): finished tasks are kept; run the "
                                            "same command again to resume")
    assert "Traceback" not in err
    done = journal.read_text().count("\n")
    p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    rerun = sum(s["tasks_this_invocation"] for s in summary["stages"].values())
    total = sum(s["tasks"] for s in summary["stages"].values())
    assert rerun <= total - done + 2, "finished tasks were kept"


# 4. extreme hyperparameters: right up to the accepted bound, refused beyond it
def _bdeu_mpmath(X, r, i, parents, ess):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    q = int(np.prod([r[p] for p in parents])) if parents else 1
    cfg = np.zeros(len(X), dtype=np.int64)
    for p in parents:
        cfg = cfg * r[p] + X[:, p]
    a_ij, a_ijk = mp.mpf(ess) / q, mp.mpf(ess) / (q * r[i])
    total = mp.mpf(0)
    for j in np.unique(cfg):
        sel = cfg == j
        total += mp.loggamma(a_ij) - mp.loggamma(a_ij + int(sel.sum()))
        for level in range(r[i]):
            total += mp.loggamma(a_ijk + int((X[sel, i] == level).sum())) - mp.loggamma(a_ijk)
    return float(total)


@pytest.mark.parametrize("ess", [1e-3, 1.0, 1e4, 1e8])
def test_bdeu_against_high_precision_up_to_the_bound(ess):
    from bigbn.api import load_dataset
    from bigbn.data import Dataset
    from bigbn.families import family_masks, unsqueeze
    from bigbn.scores import local_scores

    ds, _, _ = load_dataset(ASIA)
    X = ds.data[:400]
    small = Dataset(ds.names, X, ds.arities, ds.levels)
    got = local_scores(small, 2, "bdeu", ess)
    fam = family_masks(7, 2)
    for i in (0, 3, 7):
        for f in (0, 4, 17, 28):
            m = unsqueeze(int(fam[f]), i)
            parents = [b for b in range(8) if m >> b & 1]
            assert abs(got[i, f] - _bdeu_mpmath(X, ds.arities, i, parents, ess)) < 1e-6


def test_hyperparameters_beyond_float64_are_refused(tmp_path):
    from bigbn.errors import OptionError

    with pytest.raises(OptionError, match="above 1e"):
        bigbn.learn(ASIA, ess=1e16)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    for kw in ({"alpha_w": 1e16}, {"alpha_mu": 1e16}):
        with pytest.raises(OptionError, match="above 1e"):
            bigbn.learn(X, **kw)
    r = cli("run", ASIA, "-w", tmp_path / "w", "--ess", "1e16")
    assert r.exit_code == 1 and "posteriors" in r.output and not (tmp_path / "w").exists()


# 8. the Python API raises bigbn's own errors, never a raw exception
@pytest.mark.parametrize("data,kw", [
    (None, {}), (123, {}), ({"a": [1]}, {}), ([[1, 2], [3]], {}), (np.zeros(5), {}),
    (np.zeros((0, 3)), {}), (np.array([["a", "b"], ["c", None]], dtype=object), {}),
    (np.ones((4, 2)) * 1j, {}),
    (np.array([[1, 2], [2, 1]]), {"names": ["a"]}), (np.array([[1, 2], [2, 1]]), {"names": ["a", "a"]}),
    (ROOT / "examples", {}), (ROOT / "nope.csv", {}),
])
def test_no_raw_exception_from_learn(data, kw):
    with pytest.raises(bigbn.errors.BigBNError):
        bigbn.learn(data, **kw)


def test_string_arrays_are_discrete_data():
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"], ["b", "x"]] * 5)
    res = bigbn.learn(X, names=["u", "v"], max_parents=1)
    assert res.summary["options"]["score"] == "bdeu" and res.names == ("u", "v")
