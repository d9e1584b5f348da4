"""Runs under a disk budget (#39): the forward table kept at some levels only, the
others computed again in the backward pass. The numbers are those of the run without a
budget, bit for bit (journal CRCs), with and without the MAP network; a run killed at
any point of a recomputed level resumes to the same bits; the CLI plans the trade."""

import json

import numpy as np
import pytest

import bigbn.api
from bigbn import learn
from bigbn.errors import BigBNError, OptionError
from bigbn.plan.lattice import Plan, fit_disk, least_disk
from bigbn.store.workdir import Workdir
import helpers as h
from test_resume import Count, FailOn, wrapped, write_data


def crcs(wd) -> dict:
    """The journal's CRC (and log p(x), MAP score) of every task whose output a finished
    run keeps or sums: scores, the γ level sums, edges, map_dag."""
    out = {}
    for rec in Workdir(wd).journal().values():
        if rec["task"].split(":")[0] in ("scores", "gamma", "edges", "map_dag"):
            out[rec["task"]] = (rec.get("crc"), rec.get("log_px"), rec.get("log_score"))
    return out


def budgets(plan: Plan, workers: int) -> list[int]:
    """The least disk any plan needs, and half way to the fastest plan's."""
    least = least_disk(plan, workers)
    return [least, (least + sum(plan.disk_bytes(workers).values())) // 2]


@pytest.mark.parametrize("n,k,c,map_dag,workers", [(8, 2, 3, False, 1), (9, 2, 3, True, 1), (10, 3, 4, False, 1),
                                                   (10, 2, 3, True, 1), (11, 1, 4, False, 2), (12, 1, 5, True, 2)])
def test_a_budget_changes_no_number(tmp_path, n, k, c, map_dag, workers):
    """One worker: the sync executor; two: threads (tasks of a round run side by side).
    Tiny chunks: the in-flight slack of two workers costs more than a level of L."""
    data = write_data(tmp_path / "d.csv", n=n, m=200, seed=n)
    ref = learn(data, workdir=tmp_path / "ref", chunk_bits=c, max_parents=k, map_dag=map_dag, scheduler="sync")
    plan = Plan(n, k, c, map_dag=map_dag)
    seen = set()
    for i, budget in enumerate(budgets(plan, workers)):
        wd = tmp_path / f"b{i}"
        res = learn(data, workdir=wd, chunk_bits=c, max_parents=k, map_dag=map_dag, workers=workers,
                    scheduler="sync" if workers == 1 else "threads", disk_budget=budget)
        kept = tuple(json.loads((wd / "run.json").read_text())["plan"]["kept"])
        assert kept == fit_disk(plan, budget, workers).kept
        seen.add(kept)
        assert crcs(wd) == crcs(tmp_path / "ref")
        assert np.array_equal(res.posterior, ref.posterior) and res.log_marginal == ref.log_marginal
        summary = json.loads((wd / "summary.json").read_text())
        assert sum(summary["disk_bytes"].values()) <= budget
        # all of L but L(V) is gone
        left = sorted(p.name for p in (wd / "tables.zarr" / "forward").rglob("*") if p.is_file()
                      and p.name != "zarr.json")
        assert left == [str(plan.n_chunks - 1)]
    assert any(len(kept) < plan.h + 1 for kept in seen)  # some level was computed again


def test_a_finished_budget_run_is_finished_and_cannot_be_sampled(tmp_path):
    data = write_data(tmp_path / "d.csv", n=9, m=200)
    plan = Plan(9, 2, 3)
    budget = least_disk(plan, 1)
    learn(data, workdir=tmp_path / "w", chunk_bits=3, max_parents=2, scheduler="sync", disk_budget=budget)
    count = Count()
    with wrapped(count):
        again = learn(data, workdir=tmp_path / "w", chunk_bits=3, max_parents=2, scheduler="sync")
    assert count.keys == [] and again.summary["already_finished"]
    # L's chunks deleted by the plan are no damage to `bigbn status`
    status = "\n".join(bigbn.api.workdir_status(tmp_path / "w"))
    assert "finished: results in" in status and "damaged" not in status
    # and it says the plan is a budget's (it read as one with L kept whole)
    kept = fit_disk(plan, budget, 1).kept
    assert f"under a disk budget: L kept at levels {', '.join(map(str, kept))} of 0–{plan.h}, " \
           f"{plan.h + 1 - len(kept)} levels computed again (the run cannot be sampled)" in status
    assert "disk budget" not in "\n".join(bigbn.api.workdir_status(learn(
        data, workdir=tmp_path / "plain", chunk_bits=3, max_parents=2, scheduler="sync").workdir))
    r = h.cli("sample", "-w", tmp_path / "w", "--samples", 10)
    error = [line for line in r.output.splitlines() if not line.startswith("[bigbn]")]
    assert r.exit_code == 1 and len(error) == 1 and error[0].startswith("Error: ") and "--disk-budget" in error[0]


def rounds_positions(plan: Plan) -> list[int]:
    """Positions (1-based, the sync order) of tasks at every point of a recomputed level:
    a round's first and last task, its first deletion of a chunk of L, the first backward
    task reading the round, and the deletion after it."""
    specs = plan.tasks()
    at = []
    for ell in plan.dropped:
        pos = [i for i, t in enumerate(specs) if t.key[0] == "reforward" and t.key[2] == ell]
        rel = [i for i, t in enumerate(specs) if t.kind == "release" and t.key[-1] == ell and len(t.key) == 4]
        back = [i for i, t in enumerate(specs) if t.kind == "backward" and bin(t.chunk).count("1") == ell]
        at += [pos[0], pos[len(pos) // 2], pos[-1], rel[0], back[0], back[0] + 1, rel[-1]]
    return sorted({p + 1 for p in at})


@pytest.mark.parametrize("when", ["before", "after_write", "after_journal"])
def test_a_run_killed_in_a_recomputed_level_resumes_to_the_same_bits(tmp_path, when):
    data = write_data(tmp_path / "d.csv", n=9, m=200)
    learn(data, workdir=tmp_path / "ref", chunk_bits=3, max_parents=2, scheduler="sync")
    plan = Plan(9, 2, 3)
    budget = least_disk(plan, 1)
    budgeted = fit_disk(plan, budget, 1)
    assert budgeted.dropped
    ids = {t.id for t in budgeted.tasks()}
    for fail_at in rounds_positions(budgeted):
        wd = tmp_path / f"w{fail_at}"
        with pytest.raises(RuntimeError, match="injected fault"), wrapped(FailOn(fail_at, when=when)):
            learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync", disk_budget=budget)
        done = set(Workdir(wd).journal())
        assert done < ids
        count = Count()
        with wrapped(count):  # resumed with no budget given: the recorded plan is kept
            learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync")
        assert set(count.keys) >= ids - done and len(count.keys) == len(set(count.keys))
        assert crcs(wd) == crcs(tmp_path / "ref"), fail_at
        assert set(Workdir(wd).journal()) == ids


def test_a_resume_under_a_budget_its_recorded_plan_exceeds_is_refused(tmp_path):
    """A run started without a budget (out of disk, say) and resumed with --disk-budget
    to fit kept its recorded plan, L whole, and its peak, without a word; now refused in
    one line, run.json untouched; a budget the recorded plan fits resumes it."""
    from bigbn.errors import WorkdirError

    data = write_data(tmp_path / "d.csv", n=9, m=200)
    ref = learn(data, workdir=tmp_path / "ref", chunk_bits=3, max_parents=2, scheduler="sync")
    plan = Plan(9, 2, 3)
    whole = sum(plan.disk_bytes(1).values())
    least = least_disk(plan, 1)
    assert least < whole
    wd = tmp_path / "w"
    with pytest.raises(RuntimeError, match="injected fault"), wrapped(FailOn(40)):
        learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync")
    before = (wd / "run.json").read_bytes()
    with pytest.raises(WorkdirError, match=r"was started with a plan of peak disk .* \(L kept whole; one task at "
                                           r"a time\), above the disk budget of .*; a resumed run keeps its plan"):
        learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync", disk_budget=least)
    assert (wd / "run.json").read_bytes() == before
    r = h.cli("run", data, "-w", wd, "-q", "--chunk-bits", 3, "-k", 2, "--scheduler", "sync",
              "--disk-budget", whole - 1)
    assert r.exit_code == 1 and r.output.count("\n") == 1 and f"{whole:,} bytes" in r.output, r.output
    res = learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync", disk_budget=whole)
    assert crcs(wd) == crcs(tmp_path / "ref") and np.array_equal(res.posterior, ref.posterior)
    assert "kept" not in json.loads((wd / "run.json").read_text())["plan"]


class InFlight:
    """Wrapper around the task function: the most tasks running at once."""

    def __init__(self):
        import threading

        self.now, self.most, self.lock = 0, 0, threading.Lock()

    def wrap(self, task):
        self.task = task
        return self

    def __call__(self, spec):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            return self.task(spec)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.parametrize("started_with", ["no budget", "the budget"])
def test_a_resume_with_more_workers_under_the_same_budget_runs_fewer_at_a_time(tmp_path, started_with):
    """A run killed and resumed with --workers 3 under the budget it was given: its plan's
    peak with 3 tasks at a time (more chunks alive at once) is above the budget, and the
    resume was refused. Now it runs as many at a time as the budget holds, says so in one
    line, and ends at the same bits; the budget below one task at a time is still refused."""
    import warnings

    from bigbn.errors import BigBNWarning, WorkdirError

    data = write_data(tmp_path / "d.csv", n=9, m=200)
    learn(data, workdir=tmp_path / "ref", chunk_bits=3, max_parents=2, scheduler="sync")
    plan = Plan(9, 2, 3)
    if started_with == "no budget":  # L kept whole: fits 2 tasks at a time, not 3
        budget, first = (sum(plan.disk_bytes(w).values()) for w in (2, 1))
        fitted = plan
    else:  # L kept at some levels: the least peak, one task at a time
        budget = first = least_disk(plan, 1)
        fitted = fit_disk(plan, budget, 1)
        assert fitted.dropped
    at_once = 2 if started_with == "no budget" else 1
    assert sum(fitted.disk_bytes(at_once).values()) <= budget < sum(fitted.disk_bytes(at_once + 1).values())
    wd = tmp_path / "w"
    with pytest.raises(RuntimeError, match="injected fault"), wrapped(FailOn(40)):
        learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync",
              disk_budget=None if started_with == "no budget" else budget)
    with pytest.raises(WorkdirError, match=r"\(L kept .*; one task at a time\), above the disk budget of "
                                           f"{first - 1:,} bytes; a resumed run keeps its plan"):
        learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="threads", workers=3,
              disk_budget=first - 1)
    seen = InFlight()
    if started_with == "no budget":  # through the CLI: one warning line
        with wrapped(seen):
            r = h.cli("run", data, "-w", wd, "-q", "--chunk-bits", 3, "-k", 2, "--scheduler", "threads",
                      "--workers", 3, "--disk-budget", budget)
        assert r.exit_code == 0, r.output
        said = [line[len("Warning: "):] for line in r.output.splitlines() if line.startswith("Warning: ")]
        summary = json.loads((wd / "summary.json").read_text())
    else:
        with warnings.catch_warnings(record=True) as caught, wrapped(seen):
            warnings.simplefilter("always")
            summary = learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="threads", workers=3,
                            disk_budget=budget).summary
        said = [str(w.message) for w in caught if issubclass(w.category, BigBNWarning)]
    assert len(said) == 1 and "\n" not in said[0] and "with 3 tasks at a time, above the disk budget" in said[0] \
        and f"it resumes with {at_once} at a time" in said[0], said
    assert 1 <= seen.most <= at_once
    assert crcs(wd) == crcs(tmp_path / "ref")
    assert sum(summary["disk_bytes"].values()) <= budget and summary["plan"]["workers"] == at_once
    assert json.loads((wd / "run.json").read_text())["plan"].get("kept") == (
        None if fitted.kept is None else list(fitted.kept))


def test_a_run_planned_in_bytes_under_its_budget_resumes_under_it(tmp_path, monkeypatch):
    """A run started under --disk-budget by bigbn before plan53 kept the levels that fit the
    budget in its tables' bytes (block 1, `runner.fs_block` made to say so here); counted in
    blocks that plan is above the budget even one task at a time, and the resume with the
    very command that started it was refused (resume without the budget, or --fresh: the
    run lost). It resumes as planned, in one warning line, to the same bits."""
    import bigbn.engine.runner as runner

    data = write_data(tmp_path / "d.csv", n=9, m=200)
    learn(data, workdir=tmp_path / "ref", chunk_bits=3, max_parents=2, scheduler="sync")
    plan = Plan(9, 2, 3)
    budget = least_disk(plan, 1, 1)  # the least peak in bytes: below any plan's blocks
    assert budget < least_disk(plan, 1)
    wd = tmp_path / "w"
    with monkeypatch.context() as m:
        m.setattr(runner, "fs_block", lambda path: 1)  # the planner before block counting
        with pytest.raises(RuntimeError, match="injected fault"), wrapped(FailOn(40)):
            learn(data, workdir=wd, chunk_bits=3, max_parents=2, scheduler="sync", disk_budget=budget)
    kept = json.loads((wd / "run.json").read_text())["plan"]["kept"]
    assert kept is not None
    # below what it was planned in: refused as before (asked while the run is unfinished; a
    # finished run is read back under any budget, test_a_finished_run_is_read_back_under_any_budget)
    r = h.cli("run", data, "-w", wd, "-q", "--chunk-bits", 3, "-k", 2, "--scheduler", "sync",
              "--disk-budget", budget - 1)
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "a resumed run keeps its plan" in r.output, r.output
    r = h.cli("run", data, "-w", wd, "-q", "--chunk-bits", 3, "-k", 2, "--scheduler", "sync",
              "--disk-budget", budget)
    assert r.exit_code == 0, r.output
    said = [line for line in r.output.splitlines() if line.startswith("Warning: ")]
    assert len(said) == 1 and "in its tables' bytes" in said[0] and "resumes as planned" in said[0], r.output
    assert crcs(wd) == crcs(tmp_path / "ref")
    assert json.loads((wd / "run.json").read_text())["plan"]["kept"] == kept


def test_a_map_only_run_under_a_budget_below_its_tables_is_refused(tmp_path):
    """`--map-only --disk-budget 1K` ran and took its 9·2^n bytes: the budget was ignored
    without a word (fit_disk returned any plan without the posterior as it was), and `bigbn
    plan` showed it the posterior's trade, "L kept whole (can be sampled)". Now one line
    naming what the MAP network needs; a budget it fits runs as without one."""
    data = write_data(tmp_path / "d.csv", n=9, m=200)
    plan = Plan(9, 2, 3, map_dag=True, posterior=False)
    need = sum(plan.disk_bytes(1).values())
    with pytest.raises(OptionError, match=r"^disk budget of .* is too small for n = 9 \(chunk bits 3\): a MAP-only "
                                          r"run needs "):
        learn(data, workdir=tmp_path / "w", chunk_bits=3, max_parents=2, posterior=False, map_dag=True,
              scheduler="sync", disk_budget=need - 1)
    assert not (tmp_path / "w" / "run.json").exists()
    ref = learn(data, workdir=tmp_path / "ref", chunk_bits=3, max_parents=2, posterior=False, map_dag=True,
                scheduler="sync")
    res = learn(data, workdir=tmp_path / "w", chunk_bits=3, max_parents=2, posterior=False, map_dag=True,
                scheduler="sync", disk_budget=need)
    assert crcs(tmp_path / "w") == crcs(tmp_path / "ref") and res.map_parents.tolist() == ref.map_parents.tolist()
    r = h.cli("plan", "--n", 9, "-k", 2, "--chunk-bits", 3, "--workers", 1, "--map-only", "--disk-budget", need - 1)
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "a MAP-only run needs" in r.output, r.output
    r = h.cli("plan", "--n", 9, "-k", 2, "--chunk-bits", 3, "--workers", 1, "--map-only", "--disk-budget", need)
    assert r.exit_code == 0 and "the MAP network's tables fit it" in r.output and "L kept" not in r.output, r.output


@pytest.mark.parametrize("text,size", [("5", 5), ("5b", 5), ("5k", 5 << 10), ("5KiB", 5 << 10), ("5 kb", 5 << 10),
                                       ("2.5GiB", 5 << 29), ("10 TiB", 10 << 40), (".5g", 1 << 29),
                                       ("5i", None), ("5ib", None), ("1 iB", None), ("5 GB GB", None),
                                       ("1e400", None), ("-5GB", None), ("nan", None), ("١٠G", None)])
def test_a_size_is_read_with_its_unit_or_refused(text, size):
    """"5i" and "5ib" were read as 5 bytes: an "i" is now read only after a unit."""
    from bigbn.options import disk_budget

    if size is None:
        with pytest.raises(OptionError, match="cannot read size"):
            disk_budget(text)
    else:
        assert disk_budget(text) == size


def test_budgets_are_refused_in_one_line(tmp_path):
    data = write_data(tmp_path / "d.csv", n=9, m=100)
    least = least_disk(Plan(9, 2, 3), 2)
    # tiny chunks: in bytes, the in-flight slack made the plan without a budget the least; in
    # blocks (a chunk of 64 bytes takes 4096, as a γ part does) a plan with levels dropped is
    assert least_disk(Plan(9, 2, 3), 2, 1) == sum(Plan(9, 2, 3).disk_bytes(2, 1).values())
    assert least < sum(Plan(9, 2, 3).disk_bytes(2).values())
    with pytest.raises(OptionError, match=r"^disk budget of .* is too small for n = 9 \(chunk bits 3\): "
                                          r"the least any plan needs is "):
        learn(data, workdir=tmp_path / "w", chunk_bits=3, max_parents=2, workers=2, disk_budget=least - 1)
    assert not (tmp_path / "w" / "run.json").exists()  # refused before the workdir is touched
    with pytest.raises(OptionError, match="disk budget: cannot read size 'lots'"):
        learn(data, workdir=tmp_path / "w", disk_budget="lots")
    with pytest.raises(OptionError, match="runs without tiers"):
        learn(data, workdir=tmp_path / "w", tiers=[["V0", "V1"], [f"V{j}" for j in range(2, 9)]],
              disk_budget="1G")
    r = h.cli("run", data, "-w", tmp_path / "c", "-q", "--chunk-bits", 3, "-k", 2, "--workers", 2,
              "--disk-budget", least - 1)
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "the least any plan needs is" in r.output
    assert issubclass(OptionError, BigBNError)


def test_plan_prints_the_trade(tmp_path):
    """n = 32 within 24 GiB: the chosen plan is the fastest row at or under the budget,
    and the rows are ordered by peak, down, and by time, up; n = 33 fits 79 GB with no
    level computed again."""
    r = h.cli("plan", "--n", 32, "-k", 3, "--workers", 2, "--memory", "8G", "--disk-budget", "24G")
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if "GiB  " in line and "≈" in line]
    peaks = [float(line.split()[0]) for line in rows]
    assert peaks == sorted(peaks, reverse=True) and len(rows) >= 4
    chosen = [i for i, line in enumerate(rows) if line.endswith("← chosen")]
    assert len(chosen) == 1 and peaks[chosen[0]] <= 24 < peaks[chosen[0] - 1]
    assert "computed again" in rows[chosen[0]] and "disk budget 24.0 GiB: L kept at levels" in r.output
    assert "L kept whole" in rows[0] and "L deleted after its last reader" in rows[1]
    r = h.cli("plan", "--n", 33, "-k", 3, "--workers", 2, "--memory", "8G", "--disk-budget", str(79 * 10**9))
    chosen = [line for line in r.output.splitlines() if line.endswith("← chosen")]
    assert r.exit_code == 0 and len(chosen) == 1 and "L deleted after its last reader;" in chosen[0], r.output
    r = h.cli("plan", "--n", 32, "-k", 3, "--workers", 2, "--memory", "8G", "--disk-budget", "5G")
    assert r.exit_code == 1 and "the least any plan needs is 15.1G" in r.output


def test_plan_of_tiers_takes_a_budget_as_the_run_does(tmp_path):
    """`bigbn plan --tier-sizes 5,5 --disk-budget X` printed the tiers' plan and exit 0 for
    any X, "banana" included, where `bigbn run --tiers` refuses a budget; one tier of every
    variable is the run without tiers, planned under the budget as `--n` is."""
    for bad, said in (("banana", "--disk-budget: cannot read size 'banana'"), ("1G", "runs without tiers")):
        r = h.cli("plan", "--tier-sizes", "5,5", "--disk-budget", bad)
        assert r.exit_code == 1 and r.output.count("\n") == 1 and said in r.output, r.output
    (tmp_path / "t.csv").write_text("".join(f"X{j},1\n" for j in range(10)))
    least = least_disk(Plan(10, 3, 4), 2)
    for tiers in (["--tier-sizes", "10"], ["--tiers", tmp_path / "t.csv"]):
        one = h.cli("plan", *tiers, "--chunk-bits", 4, "--workers", 2, "--disk-budget", least - 1)
        plain = h.cli("plan", "--n", 10, "--chunk-bits", 4, "--workers", 2, "--disk-budget", least - 1)
        assert one.exit_code == 1 and one.output == plain.output and "too small" in one.output
        one = h.cli("plan", *tiers, "--chunk-bits", 4, "--workers", 2, "--disk-budget", "1G")
        plain = h.cli("plan", "--n", 10, "--chunk-bits", 4, "--workers", 2, "--disk-budget", "1G")
        assert one.exit_code == 0 and one.output == plain.output and "← chosen" in one.output
    for more in ([], ["--disk-budget", "1G"]):  # one variable: `bigbn run` refuses such data
        r = h.cli("plan", "--tier-sizes", "1", *more)
        assert r.exit_code == 1 and r.output == "Error: 1 variable: a run needs at least 2\n", r.output


def test_the_trade_of_a_lattice_of_2_to_the_16_chunks_is_planned_in_a_few_level_choices(monkeypatch):
    """`bigbn plan --n 36 --disk-budget ...` walked every plan of the frontier (a
    choose_kept each): 30 s at h = 16. Past h = 14 the rows come from limits spread evenly
    from L kept whole to the least peak: the same kind of rows, fastest first, from one
    choose_kept a row (counted, not timed: a clock says more about the machine's load)."""
    import bigbn.plan.lattice as lattice

    calls = []
    choose = lattice.choose_kept
    monkeypatch.setattr(lattice, "choose_kept", lambda *a, **kw: calls.append(1) or choose(*a, **kw))
    plan = Plan(36, 3, 20)
    rows = lattice.disk_trade(plan, 2)
    assert 0 < len(calls) <= 8
    peaks = [sum(q.disk_bytes(2).values()) for q in rows]
    work = [q.refwd_chunks() for q in rows]
    assert rows[0].kept is None and len(rows[1].kept) == plan.h + 1 and 5 <= len(rows) <= 8
    assert peaks == sorted(peaks, reverse=True) and len(set(peaks)) == len(peaks)
    assert work == sorted(work) and peaks[-1] == least_disk(plan, 2)


def test_without_a_budget_a_run_too_big_for_the_free_disk_fits_it(tmp_path, monkeypatch):
    """No --disk-budget: the free disk is the budget when the fastest plan does not fit
    it (same numbers, the levels fit_disk picks for it, said on the command line); a run
    that fits keeps L whole; one no plan fits is refused naming its need."""
    from collections import namedtuple

    from bigbn.engine import runner

    data = write_data(tmp_path / "d.csv", n=10, m=200, seed=3)
    learn(data, workdir=tmp_path / "ref", chunk_bits=3, max_parents=2, scheduler="sync")
    plan = Plan(10, 2, 3)
    whole, least = sum(plan.disk_bytes(1).values()), least_disk(plan, 1)
    usage = namedtuple("usage", "total used free")

    def free_disk(free):
        monkeypatch.setattr(runner.shutil, "disk_usage", lambda path: usage(10**12, 0, free))

    free = int(least * 1.05) + 2
    free_disk(free)
    r = h.cli("run", data, "--workdir", tmp_path / "w", "--chunk-bits", 3, "-k", 2, "--scheduler", "sync")
    assert r.exit_code == 0, r.output
    kept = tuple(json.loads((tmp_path / "w" / "run.json").read_text())["plan"]["kept"])
    assert kept == fit_disk(plan, int(free / 1.05), 1).kept and len(kept) < plan.h + 1
    assert "disk: L kept at levels" in r.output and "to fit the free disk" in r.output
    assert crcs(tmp_path / "w") == crcs(tmp_path / "ref")
    r = h.cli("plan", "--n", 10, "-k", 2, "--chunk-bits", 3, "--workers", 1, "--workdir", tmp_path)
    assert "NOT enough" in r.output and "a run there fits it: L kept at levels" in r.output, r.output
    free_disk(int(whole * 1.06))
    learn(data, workdir=tmp_path / "fits", chunk_bits=3, max_parents=2, scheduler="sync")
    assert "kept" not in json.loads((tmp_path / "fits" / "run.json").read_text())["plan"]
    free_disk(least // 2)
    with pytest.raises(BigBNError, match=r"this run needs .* of disk, only .* free"):
        learn(data, workdir=tmp_path / "none", chunk_bits=3, max_parents=2, scheduler="sync")


# ------------------------------------------------------------ a budget on a dask cluster

@pytest.fixture(scope="module")
def inproc_client():
    """A dask.distributed cluster in this process (one worker of four threads), so the
    task functions' counters are shared with the test."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=4, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.mark.slow
def test_a_cluster_given_tasks_in_plan_order_keeps_b_within_the_plans_bound(inproc_client):
    """`executors.distributed` with ``in_flight``: the cluster (four threads) runs only what
    the client submitted, the ready tasks first in the plan's order, so B stays within
    `live_chunks(h, in_flight)`, the bound of that many ordered local threads; given every
    ready task at once it goes past the bound even of four."""
    from test_executors import LiveChunks, Recorder

    from bigbn.engine.executors import distributed as D
    from bigbn.plan.lattice import live_chunks

    plan = Plan(10, 2, 2)  # 2^8 chunks of B
    fn = LiveChunks(0)
    D.run(plan.tasks(), fn, inproc_client, in_flight=2)
    assert fn.live == {(0,)} and fn.peak <= live_chunks(plan.h, 2)
    rec = Recorder(plan.tasks(), seconds=0.002)
    D.run(plan.tasks(), rec, inproc_client, in_flight=2)
    assert rec.violations == [] and sorted(rec.runs) == sorted(s.key for s in plan.tasks())
    events = sorted([(t, 1) for t in rec.started.values()] + [(t, -1) for t in rec.ended.values()])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak <= 2
    fn = LiveChunks(0)
    D.run(plan.tasks(), fn, inproc_client)
    assert fn.peak > live_chunks(plan.h, 4)


@pytest.mark.slow
def test_a_budget_on_a_cluster_keeps_the_numbers_and_the_planned_disk(tmp_path, inproc_client):
    """learn on a dask cluster under a disk budget: the plan is made for ``workers`` tasks
    in flight in its order (the cluster is given no more), it keeps L at some levels only,
    and the run gives the sync run's bits; summary.json counts the disk for those
    workers, within the budget. Without a budget a cluster run counts any order's disk."""
    n, k, c, workers = 11, 1, 4, 2
    data = write_data(tmp_path / "d.csv", n=n, m=200, seed=n)
    ref = learn(data, workdir=tmp_path / "ref", chunk_bits=c, max_parents=k, scheduler="sync")
    plan = Plan(n, k, c)
    budget = least_disk(plan, workers)
    wd = tmp_path / "b"
    res = learn(data, workdir=wd, chunk_bits=c, max_parents=k, workers=workers, scheduler=inproc_client,
                disk_budget=budget)
    kept = tuple(json.loads((wd / "run.json").read_text())["plan"]["kept"])
    assert kept == fit_disk(plan, budget, workers).kept and len(kept) < plan.h + 1
    assert crcs(wd) == crcs(tmp_path / "ref")
    assert np.array_equal(res.posterior, ref.posterior) and res.log_marginal == ref.log_marginal
    disk = json.loads((wd / "summary.json").read_text())["disk_bytes"]
    assert disk == fit_disk(plan, budget, workers).disk_bytes(workers) and sum(disk.values()) <= budget
    learn(data, workdir=tmp_path / "u", chunk_bits=c, max_parents=k, workers=workers, scheduler=inproc_client)
    assert json.loads((tmp_path / "u" / "summary.json").read_text())["disk_bytes"] == plan.disk_bytes(None)


def test_a_budget_run_resumed_without_its_budget_does_not_say_it_fitted_the_free_disk(tmp_path):
    """The same `bigbn run` again without --disk-budget keeps the plan the run started with
    (a resumed run keeps its plan), and says so: it said the levels were kept 'to fit the
    free disk', which had room for all of them."""
    data = write_data(tmp_path / "d.csv", n=9, m=200)
    budget = least_disk(Plan(9, 2, 3), 1)
    args = ("run", data, "--workdir", tmp_path / "w", "--chunk-bits", 3, "-k", 2, "--scheduler", "sync")
    r = h.cli(*args, "--disk-budget", budget)
    assert r.exit_code == 0 and "disk: L kept at levels" in r.output and "free disk" not in r.output, r.output
    r = h.cli(*args)
    assert r.exit_code == 0, r.output
    [line] = [x for x in r.output.splitlines() if x.startswith("disk: L kept at levels")]
    assert line.endswith(", as the run was planned when it started") and "free disk" not in line


def test_a_finished_run_is_read_back_under_any_budget(tmp_path):
    """A finished run takes no more disk: the same command again with a --disk-budget below
    its plan's peak reads it back (it was refused: 'a resumed run keeps its plan', though
    nothing was left to run), with no warning about the tasks it would run at a time."""
    data = write_data(tmp_path / "d.csv", n=9, m=200)
    args = ("run", data, "--workdir", tmp_path / "w", "--chunk-bits", 3, "-k", 2, "--scheduler", "sync")
    first = h.cli(*args)
    assert first.exit_code == 0, first.output
    for extra in (("--disk-budget", least_disk(Plan(9, 2, 3), 1)), ("--disk-budget", 1_000_000, "--workers", 8,
                                                                      "--scheduler", "threads")):
        r = h.cli(*args[:-2], *extra)
        assert r.exit_code == 0 and "already finished" in r.output and "Warning" not in r.output, r.output
        assert r.output.split("log p(data)")[1] == first.output.split("log p(data)")[1]
