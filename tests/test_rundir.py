"""The run directory as data (bigbn/store/rundir.py): whose folder it is, the run record in
run.json, and a finished run read back — with every kind of damage a one-line error that
names the file and says what to do, and `bigbn run` recomputing what it can."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
from bigbn.cli.main import main
from bigbn.errors import OptionError, WorkdirError
from bigbn.plan.lattice import Plan
from bigbn.store.rundir import FinishedRun, RunRecord, fingerprint, finished_run, read_record, status_lines, write_record
from bigbn.plan.tiers import RunPlan
from bigbn.store.workdir import Workdir
import helpers as h
import os

ASIA = Path(__file__).resolve().parent.parent / "examples" / "asia.csv"
RUN = ["run", str(ASIA), "-k", "2", "--chunk-bits", "6", "-q"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_error(r, *needles):
    assert r.exit_code == 1 and r.exception is None or isinstance(r.exception, SystemExit), r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("[bigbn] ")]
    assert len(lines) == 1 and lines[0].startswith("Error:"), r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished asia run (k = 2, 4 chunks); tests copy it before damaging it."""
    wd = tmp_path_factory.mktemp("fin") / "wd"
    r = invoke(*RUN, "-w", wd)
    assert r.exit_code == 0, r.output
    return wd


@pytest.fixture
def copy(finished, tmp_path):
    import shutil

    dst = tmp_path / "wd"
    shutil.copytree(finished, dst)
    return dst


def tree(root: Path) -> list:
    return sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() else None) for p in root.rglob("*"))


# ----------------------------------------------------------------------- whose folder

@pytest.mark.parametrize("names", [["edges.csv"], ["summary.json", "edges.csv"], ["run.json"],
                                   ["journal.jsonl"], ["tables.zarr/"], ["samples-order-modular/"],
                                   ["notes.txt", "lock"]])
@pytest.mark.parametrize("fresh", [False, True])
def test_a_folder_bigbn_did_not_make_is_refused_untouched(tmp_path, names, fresh):
    """Review finding: a folder holding only files whose names bigbn also writes was
    taken for a workdir and its files replaced, with or without --fresh."""
    folder = tmp_path / "theirs"
    folder.mkdir()
    for name in names:
        if name.endswith("/"):
            (folder / name).mkdir()
            (folder / name / "keep.txt").write_text("mine")
        else:
            (folder / name).write_text('{"their": "data"}' if name.endswith(".json") else "their,data\n")
    before = tree(folder)
    r = invoke(*RUN, "-w", folder, *(["--fresh"] if fresh else []))
    one_line_error(r, str(folder), "not a bigbn work directory")
    assert tree(folder) == before
    with pytest.raises(WorkdirError, match="not a bigbn work directory"):
        bigbn.learn(ASIA, max_parents=1, workdir=folder, fresh=fresh)
    assert tree(folder) == before


def test_an_empty_folder_and_bigbns_own_are_used(finished, tmp_path):
    (tmp_path / "empty").mkdir()
    assert invoke(*RUN, "-w", tmp_path / "empty").exit_code == 0
    record = read_record(finished)
    assert record.plan.posterior and not record.plan.map_dag and record.names[0] == "asia"
    raw = json.loads((finished / "run.json").read_text())
    assert raw["format"] == "bigbn-run" and raw["format_version"] == 2
    # one plan form for every run: a run without tiers is one tier of every variable
    assert raw["plan"]["tiers"] == [{"nodes": 8, "chunk_bits": 6}] and raw["plan"]["n"] == 8


# ----------------------------------------------------------------------- the record

@pytest.mark.parametrize("plan", [RunPlan.of(Plan(5, 2, 3, "store", map_dag=True, posterior=False)),
                                  RunPlan(5, 2, "store", ((2, 1), (1, None), (2, 2)), True, False)])
def test_run_record_round_trips_every_plan_field_and_new_options(tmp_path, plan):
    rec = RunRecord(fingerprint("abc", 5, 10, {"score": "k2", "tiers": [["a", "b"], ["c"]]}),
                    plan, tuple("abcde"), "/data.csv")
    write_record(tmp_path, rec)
    back = read_record(tmp_path)
    assert back == rec and back.plan == plan
    assert back.options == {"score": "k2", "tiers": [["a", "b"], ["c"]]}
    # a record written before an option existed reads as without it (None)
    assert back.differences({**rec.fingerprint, "interventions": None}) == []
    diff = back.differences({**rec.fingerprint, "tiers": [["a"], ["b", "c"]]})
    assert diff == ["tiers: the workdir's run has a, b | c, this run a | b, c"]
    # the numerics versions are named, the engine's and the score's
    assert back.differences({**rec.fingerprint, "numerics": 99, "score_numerics": "k2-7"}) == [
        f"the workdir was computed by another bigbn version (numerics version {rec.fingerprint['numerics']}, now 99)",
        "the workdir was computed by other code of the score (its numerics None, now k2-7)"]
    assert rec.with_stages(map_dag=False, posterior=True).plan == dataclasses.replace(plan, posterior=True)


def test_a_refused_resume_names_the_constraints_by_variable_name():
    """run.json keeps forbidden / required edges, edge probabilities and per-node limits as
    node indices; the refusal of a resume with other ones says them by name."""
    rec = RunRecord(fingerprint("abc", 4, 10, {"score": "k2", "max_parents": 2,
                                               "constraints": {"forbid": [[0, 1]], "require": [[2, 3]]}}),
                    RunPlan.of(Plan(4, 2, 2, "store", map_dag=False, posterior=True)), ("a", "b", "c", "d"))
    other = {**rec.fingerprint, "constraints": {"forbid": [[1, 0], [3, 0]], "max_parents": [2, 1, 2, 2]}}
    assert rec.differences(other) == [
        "forbidden edges: the workdir's run has a -> b, this run b -> a, d -> a; "
        "required edges: the workdir's run has c -> d, this run none; "
        "max parents per node: the workdir's run has none, this run b: 1"]
    # other data whose columns are in another order: this run's constraints by its own names
    assert rec.differences(other, ("d", "c", "b", "a")) == [
        "forbidden edges: the workdir's run has a -> b, this run a -> d, c -> d; "
        "required edges: the workdir's run has c -> d, this run none; "
        "max parents per node: the workdir's run has none, this run c: 1"]
    # indices past the run's variables (other data): the raw values, as before
    far = {**rec.fingerprint, "constraints": {"forbid": [[7, 9]]}}
    assert rec.differences(far) == ["constraints: workdir has {'forbid': [[0, 1]], 'require': [[2, 3]]}, "
                                    "this run {'forbid': [[7, 9]]}"]


# ----------------------------------------------------------------------- the previous format

#: The plan of run.json as bigbn wrote it up to e83beef (run format version 1): a run
#: without tiers recorded its plain `Plan`, a run with tiers a list of tiers (the form every
#: run's plan now has). Values of the runs below, as e83beef wrote them.
LEGACY_PLAN = {
    "plain": {"alpha_mode": "recompute", "chunk_bits": 3, "k": 2, "map_dag": True, "n": 8,
              "posterior": True, "scope": ""},
    "tiered": {"alpha_mode": "recompute", "k": 2, "map_dag": True, "n": 8, "posterior": True,
               "tiers": [{"chunk_bits": 2, "nodes": 2}, {"chunk_bits": 2, "nodes": 3},
                         {"chunk_bits": None, "nodes": 1}, {"chunk_bits": 2, "nodes": 2}]},
}
LEGACY_KW = {"plain": dict(max_parents=2, chunk_bits=3, map_dag=True, workers=1),
             "tiered": dict(max_parents=2, chunk_bits=2, map_dag=True, workers=1,
                            tiers=[["asia", "smoke"], ["tub", "lung", "bronc"], ["either"], ["xray", "dysp"]])}


@pytest.mark.parametrize("kind", ["plain", "tiered"])
@pytest.mark.parametrize("state", ["finished", "half-done"])
def test_a_workdir_of_run_format_1_resumes_or_is_reported_finished(tmp_path, kind, state):
    """A workdir written by e83beef (run.json format 1, whose run without tiers recorded a
    plain `Plan`) resumes under one plan form, or is reported finished, with the same
    numbers; a finished one is read by `FinishedRun` and `bigbn status`. The workdir is a run
    of this code with its run.json replaced by the one e83beef wrote (its tables, journal and
    fingerprint are the same: no number changed since)."""
    wd = tmp_path / "w"
    first = bigbn.learn(ASIA, workdir=wd, **LEGACY_KW[kind])
    crcs = {t: r["crc"] for t, r in Workdir(wd).journal().items()}
    raw = json.loads((wd / "run.json").read_text())
    plan = read_record(wd).plan
    assert raw["plan"] == plan.to_json() and len(plan.tiers) == (1 if kind == "plain" else 4)
    (wd / "run.json").write_text(json.dumps({**raw, "format_version": 1, "plan": LEGACY_PLAN[kind]}))
    assert read_record(wd).plan == plan  # the previous form reads as the one form
    if state == "half-done":  # as if killed after half its journal lines, before the results
        lines = (wd / "journal.jsonl").read_text().splitlines(keepends=True)
        (wd / "journal.jsonl").write_text("".join(lines[: len(lines) // 2]))
        for f in ("edges.csv", "summary.json", "map_dag.csv", "parent_sets.csv"):
            (wd / f).unlink()
    again = bigbn.learn(ASIA, workdir=wd, **LEGACY_KW[kind])
    assert again.summary["already_finished"] == (state == "finished")
    assert again.posterior.tobytes() == first.posterior.tobytes()
    assert again.log_marginal == first.log_marginal and again.map_log_score == first.map_log_score
    assert {t: r["crc"] for t, r in Workdir(wd).journal().items()} == crcs
    assert finished_run(wd).posterior().tobytes() == first.posterior.tobytes()
    assert status_lines(wd)[-2:] == [f"finished: results in {wd.resolve() / 'edges.csv'}",
                                     f"MAP network: {wd.resolve() / 'map_dag.csv'}"]


# ----------------------------------------------------------------------- damage

TABLES = ["beta", "forward", "backward", "gamma", "posterior", "gamma_parts"]


@pytest.mark.parametrize("table,damage", [("", "garbled")] + [(t, d) for t in TABLES for d in ("garbled", "shape")])
def test_damaged_table_metadata_is_one_line_then_run_repairs(copy, table, damage):
    meta = copy / "tables.zarr" / table / "zarr.json"
    if damage == "garbled":
        meta.write_bytes(b"{\x00garbage")
    else:
        obj = json.loads(meta.read_text())
        obj["shape"] = [s + 3 for s in obj["shape"]]
        meta.write_text(json.dumps(obj))
    r = invoke("sample", "-w", copy, "-T", 50)
    if r.exit_code:
        one_line_error(r, str(copy / "tables.zarr"), "run the same `bigbn run` command again")
    r = invoke(*RUN, "-w", copy)
    assert r.exit_code == 0, r.output
    r = invoke("sample", "-w", copy, "-T", 50)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("path,needle", [("tables.zarr/beta/c/0/0", "beta"),
                                         ("tables.zarr/forward/c/2", "forward: chunk 2")])
def test_truncated_chunks_for_sample_name_the_file(copy, path, needle):
    f = copy / path
    f.write_bytes(f.read_bytes()[:100])
    one_line_error(invoke("sample", "-w", copy, "-T", 50), needle, "run the same `bigbn run` command again")
    assert invoke(*RUN, "-w", copy).exit_code == 0
    assert invoke("sample", "-w", copy, "-T", 50).exit_code == 0


def test_a_deeply_nested_journal_line_is_ignored(copy):
    with open(copy / "journal.jsonl", "a") as fh:
        fh.write("[" * 200_000 + "]" * 200_000 + "\n")
    assert invoke("status", "-w", copy).exit_code == 0
    assert invoke("sample", "-w", copy, "-T", 50).exit_code == 0
    r = invoke(*RUN, "-w", copy)
    assert r.exit_code == 0 and "already finished" in r.output


def test_an_edited_log_px_is_named_as_such_and_run_recomputes_it(copy):
    lines = (copy / "journal.jsonl").read_text().splitlines()
    edited = [json.loads(x) for x in lines]
    true = next(x["log_px"] for x in edited if x["task"] == "edges")
    for x in edited:
        if x["task"] == "edges":
            x["log_px"] = true + 0.5
    (copy / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in edited))
    for cmd in (["sample", "-w", copy, "-T", 50], ["effects", "-w", copy]):
        one_line_error(invoke(*cmd), "journal.jsonl", "log p(x)", "edited or damaged")
    r = invoke(*RUN, "-w", copy)
    assert r.exit_code == 0 and f"log p(data) = {true:.6f}" in r.output
    assert FinishedRun(copy).log_px == pytest.approx(true, abs=1e-9)


@pytest.mark.parametrize("make", ["missing", "empty", "tables only"])
def test_sample_and_effects_without_a_finished_run_say_so(tmp_path, finished, make):
    wd = tmp_path / "wd"
    if make == "empty":
        wd.mkdir()
    elif make == "tables only":
        import shutil

        shutil.copytree(finished / "tables.zarr", wd / "tables.zarr")
    for cmd in ("sample", "effects"):
        line = one_line_error(invoke(cmd, "-w", wd), "no finished run here")
        assert "zarr" not in line


def test_sample_checks_the_memory_budget_before_allocating(finished):
    """`bigbn sample --samples 100000000`: refused at once, not after minutes of swapping."""
    one_line_error(invoke("sample", "-w", finished, "-T", 10**8, "--memory", "1G"),
                   "100000000 samples", "budget", "--samples")
    with pytest.raises(OptionError, match="budget"):
        bigbn.sample(finished, 10**6, memory="10M")
    assert len(bigbn.sample(finished, 1000, memory="10M")) == 1000


def test_rerunning_a_finished_run_says_so_and_does_not_score_again(finished, monkeypatch):
    import bigbn.api

    def no_scores(*a, **kw):
        raise AssertionError("scored again")

    monkeypatch.setattr(bigbn.api, "score_families", no_scores)
    r = invoke(*RUN, "-w", finished)
    assert r.exit_code == 0 and "already finished" in r.output, r.output
    res = bigbn.learn(ASIA, max_parents=2, workdir=finished)
    assert res.summary["already_finished"] and np.isfinite(res.log_marginal)


@pytest.mark.parametrize("map_dag", [False, True])
def test_rerunning_a_finished_tiered_run_reads_its_family_beta_and_does_not_score_again(tmp_path, monkeypatch,
                                                                                     map_dag):
    """As without tiers: a rerun of a finished tiered run takes each tier's journaled
    family β (`runner.finished_beta`) instead of scoring the data again, with the same
    results; a family β that fails its CRC is scored again and rewritten."""
    import bigbn.api
    import bigbn.plan.tiers

    kw = dict(LEGACY_KW["tiered"], map_dag=map_dag)
    first = bigbn.learn(ASIA, workdir=tmp_path / "w", **kw)

    def no_scores(*a, **k):
        raise AssertionError("scored again")

    tiers = tmp_path / "tiers.csv"
    tiers.write_text("node,tier\n" + "".join(f"{v},{j}\n" for j, t in enumerate(kw["tiers"]) for v in t))
    with monkeypatch.context() as m:
        m.setattr(bigbn.plan.tiers, "tier_scores", no_scores)
        again = bigbn.learn(ASIA, workdir=tmp_path / "w", **kw)
        r = invoke("run", ASIA, "-k", "2", "--chunk-bits", "2", "-w", tmp_path / "w", "--tiers", tiers,
                   *(["--map"] if map_dag else []))
        assert r.exit_code == 0 and "already finished" in r.output, r.output
    assert again.summary["already_finished"] and again.log_marginal == first.log_marginal
    assert again.posterior.tobytes() == first.posterior.tobytes() and again.map_log_score == first.map_log_score
    table = tmp_path / "w" / "tables.zarr" / "tier2" / "family_beta"
    chunk = next(f for f in sorted(table.rglob("*")) if f.is_file() and f.name != "zarr.json")
    chunk.write_bytes(b"\0" * len(chunk.read_bytes()))  # damaged: scored again, and rewritten
    scored = []
    real = bigbn.plan.tiers.tier_scores
    monkeypatch.setattr(bigbn.plan.tiers, "tier_scores", lambda *a, **k: scored.append(1) or real(*a, **k))
    third = bigbn.learn(ASIA, workdir=tmp_path / "w", **kw)
    assert scored == [1] and third.posterior.tobytes() == first.posterior.tobytes()
    assert FinishedRun(tmp_path / "w").posterior().tobytes() == first.posterior.tobytes()


def test_status_sizes_and_stages(finished):
    out = invoke("status", "-w", finished).output
    # 4 chunks of 2^6 entries and their metadata, in blocks of 4 KiB (16.2 KiB in bytes)
    assert "computes the posterior" in out and "(the plan's tables: at most 224.0 KiB)" in out


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

# 5. other people's folders
def test_a_folder_that_is_not_a_workdir_is_refused_and_untouched(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "edges.csv").write_text("mine\n")
    (theirs / "notes.txt").write_text("keep me\n")
    for extra in ([], ["--fresh"]):
        r = h.cli("run", h.ASIA, "-w", theirs, "-k", 1, "-q", *extra)
        assert r.exit_code == 1 and "not a bigbn work directory" in r.output and "notes.txt" in r.output
        assert sorted(os.listdir(theirs)) == ["edges.csv", "notes.txt"]
        assert (theirs / "edges.csv").read_text() == "mine\n"


def test_empty_workdir_name_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precious.txt").write_text("x")
    r = h.cli("run", h.ASIA, "-w", "", "-k", 1, "-q", "--fresh")
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert sorted(os.listdir(tmp_path)) == ["precious.txt"]
    with pytest.raises(bigbn.errors.OptionError, match="empty work directory name"):
        bigbn.learn(h.ASIA, workdir="")


def test_a_fresh_killed_at_any_step_of_its_clearing_leaves_a_folder_fresh_takes(finished, tmp_path, monkeypatch):
    """--fresh removed run.json before edges.csv and the other outputs: killed between,
    it left a folder of bigbn's outputs without run.json, which every command refused as
    somebody else's, --fresh included. Now run.json goes last; interrupted after each of
    clear's removals in turn, the folder is bigbn's and --fresh finishes the run."""
    import shutil

    from bigbn.store import workdir as workdir_mod
    from bigbn.store.rundir import check_is_ours

    class Killed(BaseException):
        pass

    unlink, rmtree = Path.unlink, shutil.rmtree
    for step in range(60):
        wd = tmp_path / f"wd{step}"
        shutil.copytree(finished, wd)
        calls = []

        def counted(real):
            def fn(*a, **k):
                calls.append(a[0])
                if len(calls) > step:
                    raise Killed
                return real(*a, **k)
            return fn

        monkeypatch.setattr(Path, "unlink", counted(unlink))
        monkeypatch.setattr(workdir_mod.shutil, "rmtree", counted(rmtree))
        try:
            Workdir(wd).clear()
            killed = False
        except Killed:
            killed = True
        monkeypatch.undo()
        check_is_ours(wd.resolve(), fresh=True)
        if not killed:
            assert sorted(p.name for p in wd.iterdir()) == ["lock"]
            break
    else:
        raise AssertionError("clear never finished")
    assert step > 5  # the tables, the journal, the outputs and run.json were each a step
    r = invoke(*RUN, "-w", tmp_path / "wd3", "--fresh")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "wd3" / "edges.csv").read_bytes() == (finished / "edges.csv").read_bytes()


@pytest.mark.parametrize("tmp_text", ["", "{", '{\n  "created": "2026-11-27'])
def test_a_new_run_killed_before_its_run_json_was_in_place_runs_again(finished, tmp_path, tmp_text):
    """A new run killed while it wrote run.json.tmp (before the rename) left the lock and
    that file: the same command then refused the folder for ever ("not a bigbn work
    directory"). A run.json.tmp of bigbn's form begun is now taken as nothing written."""
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "lock").write_text('{"pid": 1, "host": "h", "since": 0}')
    (wd / "run.json.tmp").write_text(tmp_text)
    r = invoke(*RUN, "-w", wd)
    assert r.exit_code == 0, r.output
    assert (wd / "edges.csv").read_bytes() == (finished / "edges.csv").read_bytes()
    assert not (wd / "run.json.tmp").exists()


@pytest.mark.parametrize("name,text", [("run.json.tmp", '{"their": "data"}'), ("run.json.tmp", "notes"),
                                       ("run.json.tmpx", "")])
def test_a_folder_of_a_file_named_like_bigbns_temporary_is_still_refused(tmp_path, name, text):
    folder = tmp_path / "theirs"
    folder.mkdir()
    (folder / name).write_text(text)
    before = tree(folder)
    one_line_error(invoke(*RUN, "-w", folder), "not a bigbn work directory")
    assert tree(folder) == before


@pytest.mark.parametrize("output", ["edges.csv", "parent_sets.csv"])
def test_a_run_killed_while_it_writes_its_results_leaves_them_whole(copy, monkeypatch, output):
    """A run (here a rerun of a finished one, which writes its results again) killed in
    the middle of edges.csv left it cut short, and `bigbn status` called the run finished,
    `bigbn report` read it; now the file is the old one, whole, until the new one is."""
    from bigbn.outputs import result as result_mod

    class Killed(BaseException):
        pass

    before = (copy / output).read_bytes()
    if output == "edges.csv":
        real = result_mod.csv_field
        calls = []

        def field(s):
            calls.append(s)
            if len(calls) > 7:
                raise Killed
            return real(s)
        monkeypatch.setattr(result_mod, "csv_field", field)
    else:
        def ranked(*a, **k):
            raise Killed
        monkeypatch.setattr(bigbn.api, "ranked", ranked)
    with pytest.raises(Killed):
        bigbn.learn(ASIA, max_parents=2, chunk_bits=6, workdir=copy)
    monkeypatch.undo()
    assert (copy / output).read_bytes() == before
    assert "finished: results in" in "\n".join(status_lines(copy))
    assert invoke(*RUN, "-w", copy).exit_code == 0
    assert (copy / output).read_bytes() == before and not (copy / f"{output}.tmp").exists()


def test_a_fifo_of_a_results_temporary_name_is_replaced_not_waited_on(copy):
    """edges.csv.tmp, the name the results are written under before their rename: a FIFO
    of that name in the workdir made the rerun of a finished run wait for a reader. The
    rerun replaces it; the test holds both ends of the FIFO open so that a write through
    it fails the test (the results would not be whole) instead of blocking it."""
    import os
    import stat

    before = (copy / "edges.csv").read_bytes()
    os.mkfifo(copy / "edges.csv.tmp")
    fd = os.open(copy / "edges.csv.tmp", os.O_RDWR | os.O_NONBLOCK)
    try:
        assert invoke(*RUN, "-w", copy).exit_code == 0
    finally:
        os.close(fd)
    assert stat.S_ISREG(os.stat(copy / "edges.csv").st_mode), "the FIFO was renamed into place"
    assert (copy / "edges.csv").read_bytes() == before and not (copy / "edges.csv.tmp").exists()


def test_bigbn_folders_stay_usable(tmp_path):
    w = tmp_path / "w"
    w.mkdir()  # empty: fine
    assert h.cli("run", h.ASIA, "-w", w, "-k", 1, "-q").exit_code == 0
    (w / "my-notes.txt").write_text("x")  # a run's folder with a stray file: still ours
    assert h.cli("run", h.ASIA, "-w", w, "-k", 1, "-q").exit_code == 0
    assert h.cli("run", h.ASIA, "-w", w, "-k", 1, "-q", "--fresh").exit_code == 0
    assert (w / "my-notes.txt").read_text() == "x", "--fresh removes only bigbn's files"


def test_sample_and_effects_report_progress_as_learn_does(finished):
    """One progress protocol for every long stage: progress(stage, done, total)."""
    for stage, call in (("sample", lambda p: bigbn.sample(finished, 200, progress=p)),
                        ("effects", lambda p: bigbn.effects(finished, progress=p))):
        events = []
        call(lambda *e: events.append(e))
        assert events and {e[0] for e in events} == {stage}
        done = [d for _, d, _ in events]
        assert done == sorted(done) and events[-1][1] == events[-1][2] and len({t for *_, t in events}) == 1
    r = invoke("sample", "-w", finished, "-T", 100)
    assert r.exit_code == 0 and "[bigbn] sample: 1/1" in r.stderr  # one batch of 100


def test_another_score_is_named_once_not_as_other_code_of_the_score():
    """A resume with --score k2 on a bdeu run: the score differs (and its own parameters);
    its numerics version differs only because the score does, which was reported as 'the
    workdir was computed by other code of the score'."""
    plan = RunPlan(3, 2, "recompute", ((3, 3),), False, True)
    old = RunRecord(fingerprint("h", 3, 10, {"score": "bdeu", "score_numerics": "bdeu-1", "ess": 1.0}), plan,
                    ("a", "b", "c"))
    diff = old.differences(fingerprint("h", 3, 10, {"score": "k2", "score_numerics": "k2-1", "ess": None}))
    assert diff == ["ess: workdir has 1.0, this run None", "score: workdir has 'bdeu', this run 'k2'"]
    same_score = old.differences(fingerprint("h", 3, 10, {"score": "bdeu", "score_numerics": "bdeu-2", "ess": 1.0}))
    assert same_score == ["the workdir was computed by other code of the score (its numerics bdeu-1, now bdeu-2)"]


# ------------------------------------------------- a FIFO or a folder in the place of a file of the run

@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """A finished asia run with its MAP network, samples and effects: every file a command
    reads back."""
    wd = tmp_path_factory.mktemp("outputs") / "wd"
    for args in (RUN + ["--map", "-w", wd], ["sample", "-w", wd, "-T", 100], ["effects", "-w", wd]):
        r = invoke(*args)
        assert r.exit_code == 0, r.output
    return wd


# file -> the commands that read it back ("open": bigbn.open)
READERS = {"run.json": ("status", "run", "open"), "summary.json": ("report", "open", "run"),
           "edges.csv": ("report", "run"), "parent_sets.csv": ("report", "run"), "map_dag.csv": ("report", "run"),
           "effects.csv": ("report", "open"), "lock": ("status", "run", "sample"),
           "samples-order-modular/summary.json": ("report", "open"),
           "samples-order-modular/samples.npz": ("open",), "samples-order-modular/dags.csv": ("report",),
           "samples-order-modular/ancestors.csv": ("report",), "tables.zarr/beta/zarr.json": ("sample", "open")}
# file -> the commands that write it into the workdir: a FIFO there waited for a reader once the work was done
WRITERS = {"samples-order-modular/dags.csv": ("sample",), "effects.csv": ("effects",), "network.bif": ("export",)}


@pytest.mark.parametrize("kind", ["FIFO", "folder"])
@pytest.mark.parametrize("name,command", [(f, c) for files in (READERS, WRITERS) for f, cs in files.items() for c in cs])
def test_a_fifo_or_folder_in_the_place_of_a_file_of_the_run_is_one_line(outputs, tmp_path, name, command, kind):
    """A FIFO where run.json, summary.json, a CSV the run wrote, samples.npz or the lock
    belongs made `status`, `report`, `run`, `sample` and `bigbn.open` wait forever for a
    writer (or, as a folder, fail with an OSError, or read as "no effects"), and `sample`,
    `effects` and `export` wait for a reader of what they write: each is now one line naming
    the file and a non-zero exit, at once."""
    import shutil

    wd = tmp_path / "wd"
    shutil.copytree(outputs, wd)
    path = wd / name
    path.unlink(missing_ok=True)
    os.mkfifo(path) if kind == "FIFO" else path.mkdir()
    # a table's metadata is named as its table ("missing or damaged"), as when it is garbled
    needles = [str(path), f"is a {kind}"] if name != "tables.zarr/beta/zarr.json" else [str(wd / "tables.zarr/beta")]
    args = {"status": ["status", "-w", wd], "report": ["report", wd, "-o", tmp_path / "r.html"],
            "run": RUN + ["--map", "-w", wd], "sample": ["sample", "-w", wd, "-T", 50],
            "effects": ["effects", "-w", wd], "export": ["export", wd]}.get(command)
    # in a process of its own: a command that waits on the FIFO is killed by the timeout (a
    # thread of this one blocked in open() would never end)
    code = ["-m", "bigbn.cli", *map(str, args)] if args else \
        ["-c", "import sys, bigbn\ntry:\n    bigbn.open(sys.argv[1])\nexcept bigbn.errors.BigBNError as e:\n"
               "    sys.exit(f'Error: {e}')", str(wd)]
    r = subprocess.run([sys.executable, *code], capture_output=True, text=True, timeout=60, env=h.env(),
                       cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    lines = [x for x in r.stderr.splitlines() if not x.startswith("[bigbn] ")]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and all(x in lines[0] for x in needles), r.stderr
    assert os.path.exists(path) and not os.path.isfile(path)  # left as it was


def test_status_says_a_finished_run_whose_table_files_are_gone_is_damaged_and_run_repairs_it(copy):
    """`bigbn status` said "finished" from the journal alone, with a chunk file of the run's
    tables deleted or truncated: it stats the files the results are read from (no table data
    read) and says what is damaged and what to do; `bigbn report` reads the results files and
    still works; the same `bigbn run` command recomputes the tables (verified here)."""
    clean = invoke("status", "-w", copy).output
    assert "finished: results in" in clean and "damaged" not in clean
    (copy / "tables.zarr/forward/c/1").unlink()
    beta = copy / "tables.zarr/beta/c/0/0"
    beta.write_bytes(beta.read_bytes()[:100])
    (copy / "tables.zarr/backward/c/0").unlink(missing_ok=True)  # not read by any later command: no damage
    r = invoke("status", "-w", copy)
    assert r.exit_code == 0, r.output
    [line] = [x for x in r.output.splitlines() if "damaged" in x]
    assert line.startswith(f"finished, but its tables are damaged: {beta} is missing or not of its size "
                           "(and 1 more file); run the same `bigbn run` command again to recompute them"), line
    assert invoke("report", copy, "-o", copy.parent / "r.html").exit_code == 0
    one_line_error(invoke("sample", "-w", copy, "-T", 50), "run the same `bigbn run` command again")
    assert invoke(*RUN, "-w", copy).exit_code == 0
    out = invoke("status", "-w", copy).output
    assert "finished: results in" in out and "damaged" not in out
    assert invoke("sample", "-w", copy, "-T", 50).exit_code == 0
