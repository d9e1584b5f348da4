"""`bigbn sample` and `bigbn effects` as planned, journaled tasks (bigbn/outputs/tasks.py).

A batch of samples and a cause's effects are tasks run through the engine's executors,
each writing its part (fsynced) and a journal line of its own folder: the same seed gives
the same samples whatever the batch size, scheduler or workers; a process killed with
SIGKILL and run again ends bit-identical to an unbroken one and redoes no finished task;
a damaged, half-written or missing part is detected by its CRC and redone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import bigbn.outputs.effects as C
import bigbn.outputs.samples as S
from bigbn.cli.main import main
from bigbn.errors import OptionError
from bigbn.outputs.tasks import PartSpec, part_path, read_part
from bigbn.store.workdir import Journal

ROOT = Path(__file__).resolve().parent.parent


def write_data(path, n=11, m=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, size=(m, n))
    for j in range(1, n):  # some dependence so posteriors are not flat
        copy = rng.random(m) < 0.7
        x[copy, j] = x[copy, j - 1]
    np.savetxt(path, x, fmt="%d", delimiter=",", header=",".join(f"V{j}" for j in range(n)), comments="")
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of 11 variables in 8 chunks; tests copy it before using it."""
    base = tmp_path_factory.mktemp("st")
    data = write_data(base / "d.csv")
    r = invoke("run", data, "-w", base / "wd", "-k", "2", "--chunk-bits", "8", "-q", "--top", "0")
    assert r.exit_code == 0, r.output
    return base / "wd"


@pytest.fixture
def wd(finished, tmp_path):
    dst = tmp_path / "wd"
    shutil.copytree(finished, dst)
    return dst


def draws_dir(wd: Path) -> Path:
    [d] = [p for p in wd.glob("samples-seed*") if p.is_dir()]
    return d


def journal_ids(folder: Path) -> list[str]:
    """Every journaled task id, one per line (repeats count)."""
    out = []
    for f in sorted(folder.glob("journal*.jsonl")):
        for line in f.read_bytes().splitlines():
            try:
                out.append(json.loads(line)["task"])
            except (ValueError, KeyError):
                pass
    return out


def same_samples(a, b) -> None:
    for f in ("parents", "orders", "log_linear_extensions", "log_score", "weights"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


# ------------------------------------------------------------------------------ samples

def test_samples_do_not_depend_on_batch_size_scheduler_or_workers(wd):
    ref = bigbn.sample(wd, 700, seed=3, scheduler="sync", batch=700)
    for kw in (dict(batch=64, scheduler="threads", workers=2), dict(batch=100, scheduler="sync"),
               dict(batch=333, workers=1)):
        same_samples(bigbn.sample(wd, 700, seed=3, **kw), ref)
    assert not np.array_equal(bigbn.sample(wd, 700, seed=4).parents, ref.parents)
    # a prefix of the samples of a larger T is the samples of the smaller T
    same_samples_prefix = bigbn.sample(wd, 300, seed=3, batch=64)
    np.testing.assert_array_equal(same_samples_prefix.parents, ref.parents[:300])


def test_every_batch_is_a_journaled_task_and_a_second_call_redoes_none(wd):
    s = bigbn.sample(wd, 250, seed=1, batch=100)
    folder = draws_dir(wd)
    assert sorted(journal_ids(folder)) == ["batch:0-100", "batch:100-200", "batch:200-250"]
    assert s.info["batches"] == 3
    again = bigbn.sample(wd, 250, seed=1, batch=100, prior="dag-modular")  # same draws, other weights
    assert len(journal_ids(folder)) == 3
    np.testing.assert_array_equal(again.parents, s.parents)
    more = bigbn.sample(wd, 400, seed=1, batch=100)  # full batches reused, the rest drawn
    assert sorted(journal_ids(folder)) == ["batch:0-100", "batch:100-200", "batch:200-250",
                                           "batch:200-300", "batch:300-400"]
    np.testing.assert_array_equal(more.parents[:250], s.parents)


@pytest.mark.parametrize("damage", ["other", "flip", "truncate", "delete", "journal-only"])
def test_a_damaged_or_half_written_part_is_detected_and_redone(wd, damage):
    ref = bigbn.sample(wd, 300, seed=2, batch=100)
    folder = draws_dir(wd)
    spec = PartSpec("batch", "100-200", (100, 200))
    path = part_path(folder, spec)
    raw = bytearray(path.read_bytes())
    if damage == "other":  # a valid part, but not this task's: only the journal's CRC tells
        path.write_bytes(part_path(folder, PartSpec("batch", "0-100")).read_bytes())
        assert read_part(folder, spec) is not None
    elif damage == "flip":
        raw[len(raw) // 2] ^= 0x10
        path.write_bytes(bytes(raw))
    elif damage == "truncate":  # half-written
        path.write_bytes(bytes(raw[: len(raw) // 2]))
    elif damage == "delete":
        path.unlink()
    else:  # a part written, its journal line never: not done
        lines = (folder / "journal.jsonl").read_bytes().splitlines(keepends=True)
        (folder / "journal.jsonl").write_bytes(b"".join(ln for ln in lines if b"100-200" not in ln))
    rec = Journal(folder).records().get(spec.id)
    assert rec is None or read_part(folder, spec, rec) is None
    again = bigbn.sample(wd, 300, seed=2, batch=100)
    ids = journal_ids(folder)
    assert ids.count("batch:0-100") == 1 and ids.count("batch:200-300") == 1  # intact: not redone
    assert ids.count("batch:100-200") == (1 if damage == "journal-only" else 2)
    same_samples(again, ref)


def test_a_folder_in_the_place_of_a_part_is_one_line_naming_it(wd):
    """A folder where a part belongs: `bigbn sample` named the writer's temporary file
    ("Is a directory: .../.batch-100-200.npz.PID-TID.tmp"), an OSError out of bigbn.sample;
    a file where parts/ belongs, an OSError too."""
    from bigbn.errors import WorkdirError

    bigbn.sample(wd, 300, seed=2, batch=100)
    path = part_path(draws_dir(wd), PartSpec("batch", "100-200"))
    path.unlink()
    path.mkdir()
    with pytest.raises(WorkdirError, match=r"batch-100-200.npz is a folder where the part of task batch:100-200 "
                                           r"belongs; remove it"):
        bigbn.sample(wd, 300, seed=2, batch=100)
    assert not list(path.parent.glob(".*.tmp"))
    path.rmdir()
    bigbn.sample(wd, 300, seed=2, batch=100)
    shutil.rmtree(path.parent)
    path.parent.write_text("mine")  # a file where parts/ belongs: was an OSError ("File exists")
    with pytest.raises(WorkdirError, match=r"parts is a file where a folder of the tasks' parts belongs"):
        bigbn.sample(wd, 300, seed=2, batch=100)


@pytest.mark.parametrize("make", ["fifo", "folder", "dangling"])
def test_a_journal_of_the_draws_that_is_no_file_is_one_line_without_fresh(wd, make):
    """A FIFO, a folder or a broken link where the draws' journal belongs said "run the
    same command with --fresh", an option `bigbn sample` does not have (click's "no such
    option" next); now: remove it, then run the same command again."""
    import os

    bigbn.sample(wd, 200, seed=2, batch=100)
    journal = draws_dir(wd) / "journal.jsonl"
    journal.unlink()
    {"fifo": os.mkfifo, "folder": os.mkdir, "dangling": lambda p: p.symlink_to(p.parent / "gone")}[make](journal)
    r = invoke("sample", "-w", wd, "-T", "200", "--seed", "2", "--batch", "100")
    assert r.exit_code == 1 and r.output.count("Error:") == 1 and "Traceback" not in r.output, r.output
    assert "journal.jsonl is " in r.output and "remove it, then run the same command again" in r.output
    assert "--fresh" not in r.output


@pytest.mark.parametrize("edit", [("redrawn", "x"), ("reads", None), ("sweep_seconds", "x"), ("chunks", [1]),
                                  ("redrawn", -5), ("reads", 1e300)])
def test_a_batch_record_with_damaged_counts_is_not_trusted_but_drawn_again(wd, edit):
    """The sums a sample's summary gives (redrawn, chunks read, seconds) come from the
    batches' journal records: a damaged field was a traceback ("x", null, a list) or an
    impossible count (-5); such a record is not a batch's, so the batch is drawn again."""
    ref = bigbn.sample(wd, 200, seed=2, batch=100)
    folder = draws_dir(wd)
    lines = (folder / "journal.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec[edit[0]] = edit[1]
    (folder / "journal.jsonl").write_text("\n".join([json.dumps(rec)] + lines[1:]) + "\n")
    again = bigbn.sample(wd, 200, seed=2, batch=100)
    assert journal_ids(folder).count(rec["task"]) == 2  # drawn again
    same_samples(again, ref)
    assert again.info["redrawn_for_rounding"] == ref.info["redrawn_for_rounding"]


def test_a_torn_journal_line_and_a_killed_writer_s_temporary_file_are_cleaned_up(wd):
    ref = bigbn.sample(wd, 200, seed=2, batch=100)
    folder = draws_dir(wd)
    with open(folder / "journal.jsonl", "ab") as fh:
        fh.write(b'{"task":"batch:0-1')  # a kill mid-line
    stray = folder / "parts" / ".batch-100-200.npz.123-456.tmp"
    stray.write_bytes(b"half a part")
    same_samples(bigbn.sample(wd, 200, seed=2, batch=100), ref)
    assert len(journal_ids(folder)) == 2 and not stray.exists()


def test_bad_scheduler_and_batch_are_one_line_errors(wd):
    with pytest.raises(OptionError, match="unknown scheduler"):
        bigbn.sample(wd, 10, scheduler="bogus")
    with pytest.raises(OptionError, match="batch"):
        bigbn.sample(wd, 10, batch=0)
    with pytest.raises(OptionError, match="unknown scheduler"):
        bigbn.effects(wd, scheduler="bogus")
    r = invoke("sample", "-w", wd, "-T", 10, "--scheduler", "nope")
    assert r.exit_code == 1 and "unknown scheduler" in r.stderr
    # an address that is not HOST:PORT: one line (it was a ValueError from inside dask's Client)
    for address in ("tcp://", "tcp://host", "tls://host:99999"):
        with pytest.raises(OptionError, match="is not HOST:PORT"):
            bigbn.sample(wd, 10, seed=5, scheduler=address)
    r = invoke("sample", "-w", wd, "-T", 10, "--seed", 5, "--scheduler", "tcp://")
    assert r.exit_code == 1 and "Traceback" not in r.stderr and "is not HOST:PORT" in r.stderr


def test_fresh_removes_the_task_folders(wd):
    bigbn.sample(wd, 20, seed=1)
    bigbn.effects(wd, pairs=[("V0", "V1")])
    assert list(wd.glob("samples-seed*")) and list(wd.glob("effects-*"))
    data = json.loads((wd / "run.json").read_text())["source"]
    r = invoke("run", data, "-w", wd, "-k", "1", "-q", "--top", "0", "--fresh")
    assert r.exit_code == 0, r.output
    assert not list(wd.glob("samples-seed*")) and not list(wd.glob("effects-*"))


# ------------------------------------------------------------------------------ effects

def test_effects_per_cause_tasks_resume_and_match_one_call(wd, monkeypatch):
    ref = bigbn.effects(wd, scheduler="sync")
    [folder] = wd.glob("effects-*")
    assert sorted(journal_ids(folder)) == sorted(f"cause:{x}" for x in range(11))
    shutil.rmtree(folder)
    calls, failed = [], []
    real = C.CauseTask.__call__

    def fail_on_fifth(self, spec):
        calls.append(spec.id)
        if len(calls) == 5 and not failed:
            failed.append(spec.id)
            raise RuntimeError("injected fault")
        return real(self, spec)

    monkeypatch.setattr(C.CauseTask, "__call__", fail_on_fifth)
    with pytest.raises(RuntimeError, match="injected"):
        bigbn.effects(wd, scheduler="sync")
    [folder] = wd.glob("effects-*")
    done = set(journal_ids(folder))
    assert len(done) == 4
    calls.clear()
    again = bigbn.effects(wd, scheduler="threads", workers=2)
    assert len(calls) == 7 and not done & set(calls)  # only the causes not yet done
    for i, (a, b) in enumerate(zip(again.table, ref.table)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again.p_zero, ref.p_zero)


# ------------------------------------------------------------------------------ SIGKILL

SLOW = """
import sys, time
import bigbn.outputs.samples as S, bigbn.outputs.effects as C
from bigbn.cli.main import main
for cls in (S.BatchTask, C.CauseTask):
    def slow(self, spec, _real=cls.__call__):
        out = _real(self, spec)
        time.sleep(0.15)  # a task takes long enough for the kill to land mid-command
        return out
    cls.__call__ = slow
sys.argv = ["bigbn"] + sys.argv[1:]
main()
"""


def kill_after(cmd: list[str], folder_glob, wd: Path, lines: int) -> list[str]:
    """Start ``cmd`` (the CLI with slowed tasks), SIGKILL it once its task journal has
    ``lines`` lines; the journaled ids at the kill."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW, *cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ,
                                                            "PYTHONPATH": str(ROOT)})

    def journaled():
        return [i for f in wd.glob(folder_glob) for i in journal_ids(f)]

    deadline = time.monotonic() + 120
    while proc.poll() is None and len(journaled()) < lines and time.monotonic() < deadline:
        time.sleep(0.002)
    assert proc.poll() is None, "the command finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return journaled()


@pytest.mark.slow
def test_sigkill_mid_sampling_then_rerun_is_bit_identical_and_redoes_no_batch(finished, tmp_path):
    ref_wd, wd = tmp_path / "ref", tmp_path / "killed"
    shutil.copytree(finished, ref_wd)
    shutil.copytree(finished, wd)
    args = ["sample", "--samples", "3000", "--batch", "200", "--seed", "9", "--top", "0", "--workers", "2"]
    assert invoke(*args, "-w", ref_wd).exit_code == 0
    before = kill_after(args + ["-w", str(wd)], "samples-seed*", wd, 4)
    assert 4 <= len(before) < 15
    r = subprocess.run([sys.executable, "-m", "bigbn.cli", *args, "-w", str(wd)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    ids = journal_ids(draws_dir(wd))
    assert len(ids) == 15 and len(set(ids)) == 15, "a finished batch was drawn again"
    a = np.load(wd / "samples-order-modular" / "samples.npz")
    b = np.load(ref_wd / "samples-order-modular" / "samples.npz")
    for f in b.files:
        np.testing.assert_array_equal(a[f], b[f], err_msg=f)
    for name in ("edges.csv", "dags.csv", "ancestors.csv"):
        assert (wd / "samples-order-modular" / name).read_bytes() == \
            (ref_wd / "samples-order-modular" / name).read_bytes()


@pytest.mark.slow
def test_sigkill_mid_effects_then_rerun_is_bit_identical_and_redoes_no_cause(finished, tmp_path):
    ref_wd, wd = tmp_path / "ref", tmp_path / "killed"
    shutil.copytree(finished, ref_wd)
    shutil.copytree(finished, wd)
    args = ["effects", "--scheduler", "sync", "--top", "0"]
    assert invoke(*args, "-w", ref_wd).exit_code == 0
    before = kill_after(args + ["-w", str(wd)], "effects-*", wd, 3)
    assert 3 <= len(before) < 11
    r = subprocess.run([sys.executable, "-m", "bigbn.cli", *args, "-w", str(wd)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    [folder] = wd.glob("effects-*")
    ids = journal_ids(folder)
    assert len(ids) == 11 and len(set(ids)) == 11, "a finished cause was computed again"
    assert set(before) <= set(ids)
    assert (wd / "effects.csv").read_bytes() == (ref_wd / "effects.csv").read_bytes()


# ------------------------------------------------------------------------------ a cluster

@pytest.mark.slow
def test_processes_give_the_samples_and_effects_of_threads_bit_for_bit(finished, tmp_path):
    pytest.importorskip("distributed")
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(finished, a)
    shutil.copytree(finished, b)
    threads = bigbn.sample(a, 900, seed=5, batch=200, scheduler="threads", workers=2)
    procs = bigbn.sample(b, 900, seed=5, batch=200, scheduler="processes", workers=2)
    same_samples(procs, threads)
    ids = journal_ids(draws_dir(b))
    assert sorted(set(ids)) == sorted(s.id for s in S.batch_specs(900, 200))
    pids = {json.loads(ln)["pid"] for f in draws_dir(b).glob("journal*.jsonl")
            for ln in f.read_bytes().splitlines()}
    assert len(pids) >= 1 and os.getpid() not in pids  # drawn in the workers
    e_threads = bigbn.effects(a, scheduler="threads", workers=2)
    e_procs = bigbn.effects(b, scheduler="processes", workers=2)
    np.testing.assert_array_equal(e_procs.p_zero, e_threads.p_zero)
    for x, y in zip(e_procs.table, e_threads.table):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_a_run_with_tiers_samples_the_same_in_batches_and_on_processes(tmp_path):
    pytest.importorskip("distributed")
    names = [ln.split(",") for ln in (ROOT / "examples" / "asia.csv").read_text().splitlines()[:1]][0]
    bigbn.learn(ROOT / "examples" / "asia.csv", max_parents=2, workdir=tmp_path / "t",
                tiers=[names[:4], names[4:]])
    ref = bigbn.sample(tmp_path / "t", 300, seed=6, scheduler="sync", batch=300)
    same_samples(bigbn.sample(tmp_path / "t", 300, seed=6, batch=70, workers=2), ref)
    shutil.rmtree(draws_dir(tmp_path / "t"))
    same_samples(bigbn.sample(tmp_path / "t", 300, seed=6, batch=70, scheduler="processes", workers=2), ref)
    e_threads = bigbn.effects(tmp_path / "t", pairs=[(names[0], names[5]), (names[5], names[0])])
    shutil.rmtree(next(tmp_path.joinpath("t").glob("effects-*")))
    e_procs = bigbn.effects(tmp_path / "t", pairs=[(names[0], names[5]), (names[5], names[0])],
                            scheduler="processes", workers=2)
    np.testing.assert_array_equal(e_procs.p_zero, e_threads.p_zero)
    for x, y in zip(e_procs.table, e_threads.table):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_draws_in_a_cloned_workdir_never_append_to_the_original_journal(wd, tmp_path, link):
    """A workdir cloned by ``cp -rs`` (or ``cp -rl``) holds the draws' journal.jsonl as a
    link to the original's: `bigbn sample` in the clone appended its batches to the file
    outside its workdir. The clone's journal becomes a file of its own, with the same lines."""
    bigbn.sample(wd, 200, seed=2, batch=100)
    clone = tmp_path / "clone"
    shutil.copytree(wd, clone)
    journal, original = draws_dir(clone) / "journal.jsonl", draws_dir(wd) / "journal.jsonl"
    journal.unlink()
    journal.symlink_to(original) if link == "symbolic" else os.link(original, journal)
    before = original.read_bytes()
    more = bigbn.sample(clone, 400, seed=2, batch=100)
    assert original.read_bytes() == before
    assert not journal.is_symlink() and journal.stat().st_nlink == 1
    assert journal.read_bytes().startswith(before) and journal_ids(draws_dir(clone)).count("batch:200-300") == 1
    assert np.array_equal(more.parents, bigbn.sample(wd, 400, seed=2, batch=100).parents)
