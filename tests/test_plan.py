"""Plan.tasks(): the one definition of what every task reads and writes, checked on
hundreds of plans (every (n, c, k, alpha mode) of a small grid, and random larger ones)."""

import heapq
import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bigbn.errors import EngineError, OptionError
from bigbn.plan.lattice import STAGES, Plan, Region, _io_maps, live_chunks
from bigbn.store.workdir import Workdir
import helpers as h


def chunk_grid(plan, table):
    shape, chunks = plan.tables()[table][:2]
    return set(itertools.product(*(range(-(-s // c)) for s, c in zip(shape, chunks))))


def check_plan(plan: Plan) -> None:
    specs = plan.tasks()
    keys = [t.key for t in specs]
    assert len(set(keys)) == len(keys)
    position = {k: i for i, k in enumerate(keys)}
    writer = {}
    for t in specs:
        for r in t.writes:
            assert r.table in plan.tables()
            for cc in r.chunks:
                assert (r.table, cc) not in writer, f"{r.table}{cc} written twice"
                writer[r.table, cc] = t.key
    # every chunk of every table is written, exactly once (above)
    for table in plan.tables():
        assert {cc for (tb, cc) in writer if tb == table} == chunk_grid(plan, table), table
    readers = {}
    for t in specs:
        for r in t.reads:
            for cc in r.chunks:
                readers.setdefault((r.table, cc), set()).add(t.key)
    for t in specs:
        read_writers = {writer[r.table, cc] for r in t.reads for cc in r.chunks}
        # every read is written by a dependency; the only other dependencies: a release
        # waits for the readers and writers of what it deletes, the γ sum of level l for
        # the releases of level l + 1, and a backward task of level l for the γ sum of
        # level l + 1 (so two adjacent levels of B on disk at most)
        extra = set()
        if t.kind == "release":
            extra = {k for r in t.deletes for cc in r.chunks for k in readers.get((r.table, cc), ())}
            extra |= {writer[r.table, cc] for r in t.deletes for cc in r.chunks}
        if t.kind == "backward" and bin(t.chunk).count("1") < plan.h:
            extra = {("gamma", bin(t.chunk).count("1") + 1)}
        if t.kind == "gamma":
            extra = {("release", S) for S in range(plan.n_chunks) if bin(S).count("1") == t.chunk + 1}
        assert set(t.deps) == read_writers | extra, t.key
        assert t.key not in t.deps
        # the sync order respects the dependencies
        assert all(position[d] < position[t.key] for d in t.deps), t.key
        assert t.kind in STAGES
    # what the task functions combine is what they read
    c, h = plan.c, plan.h
    for t in specs:
        if t.kind in ("forward", "backward"):
            H = t.chunk
            bits = [b for b in range(h) if (H >> b & 1) == (t.kind == "forward")]
            assert [node for node, _, _ in t.terms] == [c + b for b in bits]
            assert [G for _, _, G in t.terms] == [H ^ (1 << b) for b in bits]
            assert all(plan.task((t.kind, G)).key in t.deps for _, _, G in t.terms)
            origin = {"forward": (0, 0), "backward": (plan.n_chunks - 1, plan.chunk_size - 1)}[t.kind]
            assert t.origin == (origin[1] if H == origin[0] else None)
        if t.kind == "map":  # the forward recursion's lattice, in max-plus
            H = t.chunk
            assert t.terms == plan.task(("forward", H)).terms
            assert set(t.deps) == {("scores",)} | {("map", G) for _, _, G in t.terms}
        if t.kind == "backward":  # and chunk H's part of γ: L(H), B(H + b) for b ∉ H
            H = t.chunk
            assert ("forward", H) in t.deps
            assert [(node, G) for node, _, G in t.gamma_terms] == [(c + b, H | (1 << b)) for b in range(h)
                                                                   if not H >> b & 1]
        if t.kind == "gamma":  # one level's parts, once the level above is released
            assert set(t.deps) == {("backward", H) for H in range(plan.n_chunks)
                                   if bin(H).count("1") == t.chunk} | {
                ("release", S) for S in range(plan.n_chunks) if bin(S).count("1") == t.chunk + 1}
        if t.kind == "release":  # B and the γ part of a chunk of level ≥ 1
            assert t.deletes == (Region("backward", ((t.chunk,),)), Region("gamma_parts", ((t.chunk, 0, 0),)))
    assert keys[0] == ("scores",) and keys[-1] == (("map_dag",) if plan.map_dag else ("edges",))
    assert len(plan.stage_tasks("map")) == (plan.n_chunks if plan.map_dag else 0)
    assert len(plan.stage_tasks("forward")) == plan.n_chunks == len(plan.stage_tasks("backward"))
    assert len(plan.stage_tasks("gamma")) == h + 1
    assert sorted(plan.stage_tasks("release")) == [("release", S) for S in range(1, plan.n_chunks)]
    check_releases(plan, specs, readers)


def check_releases(plan, specs, readers):
    """Nothing is read after it is deleted, in any order the dependencies allow; level 0
    of B (read by edges) is never deleted; and in the plan's order B never holds more
    chunks than `Plan.disk_bytes` counts for one worker (nor the γ parts more)."""
    deleted_by = {}
    for t in specs:
        for r in t.deletes:
            for cc in r.chunks:
                deleted_by[r.table, cc] = t.key
                assert readers.get((r.table, cc), set()) <= set(t.deps)
    assert ("backward", (0,)) not in deleted_by
    live, peak = {"backward": set(), "gamma_parts": set()}, {"backward": 0, "gamma_parts": 0}
    for t in specs:
        for table in live:
            live[table] |= {cc for r in t.writes if r.table == table for cc in r.chunks}
            peak[table] = max(peak[table], len(live[table]))
            live[table] -= {cc for r in t.deletes if r.table == table for cc in r.chunks}
    disk = plan.disk_bytes(workers=1)
    assert peak["backward"] * 8 * plan.chunk_size <= disk["backward"]
    assert peak["gamma_parts"] * 8 * plan.n * plan.n_families <= disk["gamma_parts"]
    assert disk["backward"] <= plan.disk_bytes()["backward"]


GRID = [Plan(n, k, c, mode, map_dag=(mode == "recompute" and (n + c) % 2 == 0))
        for n in range(2, 9) for c in range(1, n + 1) for k in sorted({0, 1, 2, n - 1} & set(range(n)))
        for mode in ("recompute", "store")]


@pytest.mark.parametrize("plan", GRID, ids=lambda p: f"n{p.n}k{p.k}c{p.c}{p.alpha_mode[0]}{'m' * p.map_dag}")
def test_every_read_is_written_by_a_dependency_once(plan):
    check_plan(plan)


@settings(max_examples=60, deadline=None)
@given(st.integers(8, 14), st.data())
def test_random_larger_plans(n, data):
    c = data.draw(st.integers(max(1, n - 7), n))
    k = data.draw(st.integers(0, n - 1))
    mode = data.draw(st.sampled_from(["recompute", "store"]))
    check_plan(Plan(n, k, c, mode, map_dag=data.draw(st.booleans())))


def run_backward_stage(plan, workers, rng, in_plan_order=True):
    """Execute the plan's tasks as an executor would, ``workers`` at a time with random
    durations: the ready task first in the plan's order (the sync and threads executors),
    or a random ready one (any order a cluster may choose). Returns the most chunks of B
    and of the γ parts that existed at once; asserts nothing is read once deleted."""
    from bigbn.engine.executors import Ready

    ready = Ready(plan.tasks())
    running, clock, seq = [], 0.0, 0
    live = {"backward": set(), "gamma_parts": set()}
    deleted, peak = set(), 0
    while ready or running:
        while ready and len(running) < workers:
            if in_plan_order:
                spec = ready.pop()
            else:  # any ready task: take them all out, put back all but one
                pool = [ready.pop() for _ in range(len(ready.heap))]
                spec = pool.pop(rng.randrange(len(pool)))
                for other in pool:
                    heapq.heappush(ready.heap, ready.order[other.id])
            assert not {(r.table, cc) for r in spec.reads for cc in r.chunks} & deleted, spec.key
            for table in live:  # a task's chunks count from its start
                live[table] |= {cc for r in spec.writes if r.table == table for cc in r.chunks}
            peak = max([peak] + [len(v) for v in live.values()])
            heapq.heappush(running, (clock + rng.choice([0.01, 1, 1, 2, 7]), seq, spec))
            seq += 1
        clock, _, spec = heapq.heappop(running)
        for r in spec.deletes:
            live[r.table] -= set(r.chunks)
            deleted |= {(r.table, cc) for cc in r.chunks}
        ready.finish(spec.id)
    assert live["backward"] == {(0,)}
    return peak


@pytest.mark.parametrize("n,c", [(9, 4), (10, 2), (14, 5)])
@pytest.mark.parametrize("workers", [1, 2, 3, 16])
def test_disk_bound_holds_for_executors_with_random_task_times(n, c, workers):
    """`Plan.disk_bytes(workers)` bounds B's chunks for tasks started in the plan's order
    whatever they take; `disk_bytes()` (two adjacent levels) for tasks in any order (in
    bytes: block 1)."""
    rng = random.Random(n * 100 + workers)
    plan = Plan(n, 2, c)
    chunk = 8 * plan.chunk_size
    assert plan.disk_bytes(None, 1)["backward"] == chunk * max(
        math.comb(plan.h, l) + math.comb(plan.h, l + 1) for l in range(plan.h))
    ordered = max(run_backward_stage(plan, workers, rng) for _ in range(8))
    assert ordered * chunk <= plan.disk_bytes(workers, 1)["backward"] <= plan.disk_bytes(None, 1)["backward"]
    anyhow = max(run_backward_stage(plan, workers, rng, in_plan_order=False) for _ in range(8))
    assert anyhow * chunk <= plan.disk_bytes(None, 1)["backward"]
    if plan.h >= 6:  # released chunk by chunk, B holds far less than two levels
        assert plan.disk_bytes(2, 1)["backward"] < 0.75 * plan.disk_bytes(None, 1)["backward"]


@pytest.mark.parametrize("workers", [1, 2, 3, 16])
def test_the_tiers_run_together_within_the_sum_of_their_disk_bounds(workers):
    """A run's tiers go to the executor in one call (`engine.execute` over every lattice's
    specs, tier after tier): each tier's tasks still start in its plan's order, so B holds
    at most each tier's own bound at once, and the run at most their sum (what `prepare`
    checks and summary.json reports), whatever the tasks take; and tasks of later tiers
    start while earlier ones run (so a cluster runs the tiers side by side)."""
    from bigbn.engine.executors import Ready

    rng = random.Random(workers)
    plans = [Plan(9, 2, 4, scope="tier1"), Plan(10, 2, 2, scope="tier2"), Plan(8, 2, 3, scope="tier3")]
    bound = {p.scope: p.disk_bytes(workers)["backward"] for p in plans}
    size = {p.scope: 8 * p.chunk_size for p in plans}
    for _ in range(4):
        ready = Ready([s for p in plans for s in p.tasks()])
        running, clock, seq, live, peak, peak_all, overlap = [], 0.0, 0, {}, {}, 0, False
        while ready or running:
            while ready and len(running) < workers:
                spec = ready.pop()
                overlap |= any(other.scope != spec.scope for _, _, other in running)
                live.setdefault(spec.scope, set()).update(
                    cc for r in spec.writes if r.table == "backward" for cc in r.chunks)
                peak[spec.scope] = max(peak.get(spec.scope, 0), size[spec.scope] * len(live[spec.scope]))
                peak_all = max(peak_all, sum(size[sc] * len(v) for sc, v in live.items()))
                heapq.heappush(running, (clock + rng.choice([0.01, 1, 1, 2, 7]), seq, spec))
                seq += 1
            clock, _, spec = heapq.heappop(running)
            for r in spec.deletes:
                if r.table == "backward":
                    live[spec.scope] -= set(r.chunks)
            ready.finish(spec.id)
        ready.check_done()
        assert all(peak[sc] <= bound[sc] for sc in bound), (peak, bound)
        assert peak_all <= sum(bound.values())
        assert overlap == (workers > 1)


def test_live_chunks_of_the_n28_and_n32_plans():
    """The figures docs/design.md quotes: 2^8 and 2^12 chunks, two workers."""
    assert (live_chunks(8), live_chunks(8, 2), live_chunks(12), live_chunks(12, 2)) == (126, 88, 1716, 1002)


def test_live_chunks_are_kept_on_the_plan_not_in_a_module_cache():
    assert not hasattr(live_chunks, "cache_info")  # no lru_cache: nothing global grows
    plan, twin = Plan(28, 3, 20), Plan(28, 3, 20)
    assert plan.disk_bytes(2)["backward"] == 8 * 88 * 2**20
    assert plan.disk_bytes()["backward"] == 8 * 126 * 2**20
    assert plan._live == {2: 88, None: 126} and twin._live == {}
    assert plan == twin and hash(plan) == hash(twin)  # the kept figures are not part of the plan


def test_forward_and_backward_are_mirrors_in_the_plan():
    """Backward on chunk H is forward on the complement chunk, with mirrored terms."""
    plan = Plan(9, 2, 4)
    last = plan.n_chunks - 1
    for H in range(plan.n_chunks):
        f, b = plan.task(("forward", last ^ H)), plan.task(("backward", H))
        assert [node for node, _, _ in f.terms] == [node for node, _, _ in b.terms]
        assert [last ^ G for _, _, G in f.terms] == [G for _, _, G in b.terms]
        # the alpha span of the mirror is the complement span (within n - 1 bits)
        spans = 1 << (plan.h - 1)  # 2-chunk spans per node
        assert [(spans - 1) - first // 2 for _, first, _ in f.terms] == [first // 2 for _, first, _ in b.terms]


def test_regions_index_whole_chunks(tmp_path):
    plan = Plan(8, 2, 5, "store", map_dag=True)
    wd = Workdir(tmp_path)
    wd.create_tables(plan)
    for t in plan.tasks():
        for r in t.writes:
            index = wd.region_index(r)
            shape, chunks = plan.tables()[r.table][:2]
            size = int(np.prod([sl.stop - sl.start for sl in index]))
            assert size == len(r.chunks) * int(np.prod(chunks))
            data = np.arange(size) % 100  # fits every table's dtype (map_sink is int8)
            wd.write_region(r, data)
            np.testing.assert_array_equal(wd.read_region(r).ravel(), data)
            for cc in r.chunks:
                assert wd.chunk_file(r.table, cc).is_file()


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

def test_plan_with_a_missing_workdir_prints_no_plan(tmp_path):
    r = h.cli("plan", "--n", 20, "--workdir", tmp_path / "nope")
    assert r.exit_code == 1 and r.output.startswith("Error:") and "disk:" not in r.output


def test_tiny_memory_budget_names_a_usable_size(tmp_path):
    r = h.cli("run", h.ASIA, "-w", tmp_path / "w", "-q", "--memory", "1k")
    assert r.exit_code == 1 and "at least 0M" not in r.output
    need = r.output.split("at least ")[1].split()[0]
    assert h.cli("run", h.ASIA, "-w", tmp_path / "w", "-q", "--memory", need).exit_code == 0


def test_a_huge_memory_need_is_named_as_a_size_memory_reads():
    """n = 40, k = 39 needs 1184 TiB a task: said "1.21242e+06G", which --memory refuses."""
    from bigbn.options import memory

    r = h.cli("plan", "--n", 40, "-k", 39)
    need = r.output.split("at least ")[1].split()[0]
    assert r.exit_code == 1 and need == "1184.1T", r.output
    assert memory(need) >= 1184 * 2**40


# 7. silently questionable
def test_tiny_chunks_get_an_honest_plan():
    r = h.cli("plan", "--n", 14, "-k", 2, "--chunk-bits", 4)
    seconds = float(r.output.split("time:   ≈ ")[1].split()[0])
    assert r.exit_code == 0 and seconds >= 10, r.output  # 3074 tasks: measured ≈ 38 s


def test_unknown_stage_and_a_chunk_written_twice_are_refused():
    plan = Plan(8, 2, 6)
    with pytest.raises(OptionError, match="stage 'forwards': choose one of scores, alpha, forward"):
        plan.stage_tasks("forwards")
    assert plan.stage_tasks("forward") == [("forward", H) for lvl in plan.levels() for H in lvl]
    twice = [(("forward", 1), (), (Region("forward", ((1,),)),)),
             (("backward", 1), (), (Region("forward", ((1,),)),))]
    with pytest.raises(EngineError, match=r"chunk forward\(1,\) written by \('forward', 1\) and \('backward', 1\)"):
        _io_maps(twice)


# ------------------------------------------------------------ the disk budget (#39)

from bigbn.plan.lattice import choose_kept, fit_disk, least_disk, refwd_chunks  # noqa: E402
import naive  # noqa: E402

BUDGET_LATTICES = [(6, 2, 1), (8, 2, 3), (9, 2, 3), pytest.param(9, 3, 2, marks=pytest.mark.slow),
                   pytest.param(10, 2, 3, marks=pytest.mark.slow), (11, 2, 4)]


@pytest.mark.parametrize("n,k,c", BUDGET_LATTICES)
@pytest.mark.parametrize("block", [1, 4096])
def test_budget_peak_is_the_simulated_peak_of_every_kept_set(n, k, c, block):
    """For every set of kept levels, the plan's peak (one task at a time, its order) is
    exactly the sync order's simulated peak, and its recomputation the rounds' tasks:
    in bytes (block 1), and with each chunk file counted in blocks of 4096 bytes."""
    import dataclasses

    plan = Plan(n, k, c)
    every = naive.every_kept_set(plan, block)
    assert len(every) == 2 ** max(plan.h - 1, 0)
    for kept, (peak, work) in every.items():
        p = dataclasses.replace(plan, kept=kept)
        assert p.disk_bytes(1, block)["lattice"] == peak, kept
        assert refwd_chunks(plan.h, kept) == p.refwd_chunks() == work, kept
        check_budget_plan(p)


@pytest.mark.parametrize("n,k,c", BUDGET_LATTICES)
@pytest.mark.parametrize("block", [1, 4096])
def test_the_chosen_kept_levels_are_the_best_of_every_subset(n, k, c, block):
    """choose_kept (dynamic programming) against every subset of levels, simulated: at
    every limit between the least peak and L kept whole, the same least recomputation
    (and the same peak among the sets of that work); below the least peak, nothing. In
    bytes, and in blocks of 4096 (tiny chunks: a chunk of L and a γ part weigh the same)."""
    plan = Plan(n, k, c)
    st = plan.steps(block)
    every = naive.every_kept_set(plan, block)
    peaks = sorted({pk for pk, _ in every.values()})
    least = choose_kept(st, math.inf, 1, least=True)
    assert least[1] == peaks[0]
    assert choose_kept(st, peaks[0] - 1, 1) is None
    for limit in peaks:
        want, _ = naive.best_kept_by_brute_force(plan, limit, every)
        got = choose_kept(st, limit, 1)
        assert (got[2], got[1]) == (want[2], want[1]), limit
        assert every[got[0]] == (got[1], got[2])


def test_no_budget_is_todays_plan_and_a_budget_that_fits_changes_nothing():
    plan = Plan(12, 3, 4)
    assert plan.kept is None and not [t for t in plan.tasks() if t.kind == "reforward"]
    whole = sum(plan.disk_bytes(1).values())
    assert fit_disk(plan, None, 1) is plan
    assert fit_disk(plan, whole, 1) == plan
    tight = fit_disk(plan, whole - 1, 1)
    assert tight.kept is not None and sum(tight.disk_bytes(1).values()) <= whole - 1
    least = least_disk(plan, 1)
    assert sum(fit_disk(plan, least, 1).disk_bytes(1).values()) == least
    with pytest.raises(OptionError, match=r"^disk budget of .* is too small for n = 12 \(chunk bits 4\): "
                                          r"the least any plan needs is [0-9.]+M$") as e:
        fit_disk(plan, least - 1, 1)
    assert "\n" not in str(e.value)
    # a smaller budget never asks for less recomputation
    works = [fit_disk(plan, b, 1).refwd_chunks() for b in range(least, whole, (whole - least) // 20)]
    assert works == sorted(works, reverse=True) and works[0] > 0 == works[-1]


def test_n32_under_24g_and_n33_on_79_gb():
    """The figures docs/design.md quotes (c = 20, k = 3, two workers)."""
    p32 = fit_disk(Plan(32, 3, 20), 24 * 2**30, 2)
    assert sum(p32.disk_bytes(2).values()) <= 24 * 2**30 and 0 < p32.refwd_chunks() < 0.3 * p32.n_chunks
    p33 = fit_disk(Plan(33, 3, 20), 79 * 10**9, 2)
    assert p33.kept == tuple(range(14)) and p33.refwd_chunks() == 0
    assert sum(p33.disk_bytes(2).values()) < 70 * 2**30 < sum(Plan(33, 3, 20).disk_bytes(2).values())


def check_budget_plan(plan):
    """A plan with a disk budget: every read written by a dependency (or kept), each
    chunk written once, deps derived (plus the γ barriers), the sync order respecting
    them; L(V) and B(∅) never deleted, every other chunk of L deleted, nothing read
    after its deletion (naive.disk_peak_by_simulation asserts it)."""
    specs = plan.tasks()
    position = {t.key: i for i, t in enumerate(specs)}
    assert len(position) == len(specs)
    writer, readers = _io_maps((t.key, t.reads, t.writes) for t in specs)
    deleted = {}
    for t in specs:
        for r in t.deletes:
            for cc in r.chunks:
                assert (r.table, cc) not in deleted
                deleted[r.table, cc] = t.key
    last = plan.n_chunks - 1
    for t in specs:
        derived = {writer[r.table, cc] for r in t.reads for cc in r.chunks}
        derived |= {k for r in t.deletes for cc in r.chunks for k in readers.get((r.table, cc), ())}
        derived |= {writer[r.table, cc] for r in t.deletes for cc in r.chunks}
        extra = set(t.deps) - derived
        assert all(k[0] in ("gamma", "release") for k in extra), (t.key, extra)
        assert all(position[d] < position[t.key] for d in t.deps)
        if t.kind == "reforward":  # the forward task's terms, from the kept level or the round
            H, ell = t.chunk, t.key[2]
            assert t.terms == plan.task(("forward", H)).terms and ell not in plan.kept
            assert t.writes == (Region(f"reforward{ell}", ((H,),)),)
    assert ("forward", (last,)) not in deleted and ("backward", (0,)) not in deleted
    L = {(r.table, cc) for r in (w for t in specs for w in t.writes)
         for cc in r.chunks if naive.lattice_table(r.table) and r.table != "backward" and r.table != "gamma_parts"}
    assert L - set(deleted) == {("forward", (last,))}
    rounds = {t.key[2] for t in specs if t.kind == "reforward"}
    assert rounds == set(plan.dropped)


def run_lattice_bytes(plan, workers, rng, in_plan_order=True):
    """`run_backward_stage` for every chunk of L, B and the γ parts: the most bytes of
    them on disk at once, tasks started in the plan's order, ``workers`` at a time with
    random durations (a task's writes count from its start)."""
    from bigbn.engine.executors import Ready

    size = {t: (8 * plan.n * plan.n_families if t == "gamma_parts" else 8 * plan.chunk_size)
            for t in plan.tables() if naive.lattice_table(t)}
    ready = Ready(plan.tasks())
    running, clock, seq, live, deleted, peak = [], 0.0, 0, set(), set(), 0
    while ready or running:
        while ready and len(running) < workers:
            if in_plan_order:
                spec = ready.pop()
            else:  # any ready task (a cluster)
                pool = [ready.pop() for _ in range(len(ready.heap))]
                spec = pool.pop(rng.randrange(len(pool)))
                for other in pool:
                    heapq.heappush(ready.heap, ready.order[other.id])
            assert not {(r.table, cc) for r in spec.reads for cc in r.chunks} & deleted, spec.key
            live |= {(r.table, cc) for r in spec.writes if r.table in size for cc in r.chunks}
            peak = max(peak, sum(size[t] for t, _ in live))
            heapq.heappush(running, (clock + rng.choice([0.01, 1, 1, 2, 7]), seq, spec))
            seq += 1
        clock, _, spec = heapq.heappop(running)
        for r in spec.deletes:
            live -= {(r.table, cc) for cc in r.chunks}
            deleted |= {(r.table, cc) for cc in r.chunks}
        ready.finish(spec.id)
    return peak


@pytest.mark.parametrize("n,c", [(10, 3), (13, 5)])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_budget_plans_stay_within_their_disk_with_random_task_times(n, c, workers):
    """`Plan.disk_bytes(workers)` of a plan with a disk budget bounds L, B and the γ parts
    for tasks started in the plan's order whatever they take (the threads executor)."""
    import dataclasses

    rng = random.Random(n * 10 + workers)
    plan = Plan(n, 2, c)
    least = choose_kept(plan.steps(1), math.inf, 1, least=True)[0]
    for kept in {least, (0, plan.h), tuple(range(plan.h + 1)), (0, 2, plan.h - 1, plan.h)}:
        p = dataclasses.replace(plan, kept=kept)
        bound = p.disk_bytes(workers, 1)["lattice"]
        assert max(run_lattice_bytes(p, workers, rng) for _ in range(4)) <= bound, kept
        if workers == 1:
            assert run_lattice_bytes(p, 1, rng) == bound == naive.disk_peak_by_simulation(p)
        anyhow = max(run_lattice_bytes(p, workers, rng, in_plan_order=False) for _ in range(4))
        assert anyhow <= p.disk_bytes(None, 1)["lattice"], kept
    with pytest.raises(OptionError, match="a dask cluster may start tasks in any order"):
        fit_disk(plan, sum(plan.disk_bytes().values()) - 1, None)


@pytest.mark.parametrize("n,c", [(10, 3), (12, 5)])
def test_the_workers_a_budget_holds_keep_the_simulated_peak_within_it(n, c):
    """`workers_within` (how many tasks at a time a resumed run under a budget may keep in
    flight): the most, up to those asked, whose planned peak fits, and with that many the
    executors' scheduling with random task times (`run_lattice_bytes`, the brute force)
    stays within the budget; 0 below one task at a time."""
    import dataclasses

    from bigbn.plan.lattice import workers_within

    rng = random.Random(n)
    plan = Plan(n, 2, c)
    least = choose_kept(plan.steps(), math.inf, 1, least=True)[0]
    for kept in (None, least, (0, plan.h)):
        p = dataclasses.replace(plan, kept=kept)
        peaks = [sum(p.disk_bytes(w).values()) for w in range(1, 6)]
        other = peaks[0] - (p.disk_bytes(1)["lattice"] if kept is not None else
                            sum(p.disk_bytes(1)[t] for t in ("forward", "backward", "gamma_parts")))
        assert peaks == sorted(peaks)
        for budget in sorted({peaks[0] - 1, *peaks, *(x + 1 for x in peaks)}):
            w = workers_within(p, budget, 5)
            assert w == sum(1 for x in peaks if x <= budget), (kept, budget)
            if w:
                assert max(run_lattice_bytes(p, w, rng) for _ in range(3)) + other <= budget, (kept, budget, w)
        assert workers_within(p, peaks[4], 3) == 3


def test_a_lattice_of_more_than_2_to_the_24_chunks_is_refused_before_it_is_planned():
    """`bigbn plan --n 40 --chunk-bits 10` walked arrays of 2^30 entries (23 GB, killed);
    --chunk-bits 1 asked numpy for 4 TiB (a traceback)."""
    from bigbn.plan.lattice import MAX_CHUNK_LEVEL_BITS

    for c in (1, 10, 40 - MAX_CHUNK_LEVEL_BITS - 1):
        with pytest.raises(OptionError, match=f"chunk bits {c} make 2\\^{40 - c} chunks per table at n = 40: "
                                              "give chunk bits of at least n − 24 = 16"):
            Plan(40, 3, c)
    assert Plan(40, 3, 16).n_chunks == 2**24


def test_the_chosen_chunk_bits_keep_to_2_to_the_24_chunks():
    """A small budget at n = 40 chose from c = 10 (2^30 chunks) on; now from n − 24."""
    from bigbn.plan.lattice import choose_chunk_bits

    assert choose_chunk_bits(40, 3, 64 << 20, 2) == 16
    with pytest.raises(OptionError, match="memory budget of 10M is too small for n = 40"):
        choose_chunk_bits(40, 3, 10 << 20, 2)
