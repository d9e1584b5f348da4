"""The run plan: chunk lattice arithmetic and task lists, a pure function of (n, k, c).

Tables over n-bit masks (forward L, backward B) are cut into 2^h chunks of 2^c entries,
h = n - c (DESIGN.md, "The chunk lattice"). Tables over the (n-1)-bit squeezed masks of a
node (alpha_i, the gamma input) use chunks of 2^(c-1) entries, so that chunk id H of L
lines up with chunk id H of every low node's alpha (nodes i < c), and a high node
c+b needs the two alpha chunks 2Q, 2Q+1 with Q = squeeze(H - b, b).

Stages and their tasks (each task is identified by a key tuple):
- ``alpha``    (only when alpha is stored): ("alpha", node, first_chunk) for runs of chunks
- ``forward``  ("forward", H): needs ("forward", H - {b}) for each high bit b in H
- ``backward`` ("backward", H): needs ("backward", H + {b}) for each high bit b not in H
- ``gamma``    ("gamma", H): needs forward H and backward H, H + {b}
- ``edges``    ("edges",): needs every gamma task
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .errors import OptionError
from .families import family_masks, n_families

MAX_NODES = 40
MAX_DEFAULT_CHUNK_BITS = 20
MIN_CHUNK_BITS = 10
ALPHA_MODES = ("recompute", "store")
STAGES = ("scores", "alpha", "forward", "backward", "gamma", "edges")
BYTES = 8


def popcount(x: int) -> int:
    return bin(x).count("1")


@dataclass(frozen=True)
class Plan:
    """What a run computes and how it is cut into chunk tasks.

    n: number of variables; k: max parents (already capped at n-1); chunk_bits: c,
    1 ≤ c ≤ n; alpha_mode: "recompute" (alpha chunks are rebuilt from beta inside the
    forward and backward tasks; disk O(2^n)) or "store" (an alpha stage writes
    n·2^(n-1) values once; disk O(n·2^n)).
    """

    n: int
    k: int
    chunk_bits: int
    alpha_mode: str = "recompute"

    def __post_init__(self):
        if not 2 <= self.n <= MAX_NODES:
            raise OptionError(f"n = {self.n}: the engine supports 2 to {MAX_NODES} variables")
        if not 0 <= self.k <= self.n - 1:
            raise OptionError(f"max parents k = {self.k} must be between 0 and n-1 = {self.n - 1}")
        if not 1 <= self.chunk_bits <= self.n:
            raise OptionError(f"chunk bits {self.chunk_bits} must be between 1 and n = {self.n}")
        if self.alpha_mode not in ALPHA_MODES:
            raise OptionError(f"alpha mode {self.alpha_mode!r}: choose one of {', '.join(ALPHA_MODES)}")

    # -- sizes -------------------------------------------------------------------------
    @property
    def c(self) -> int:
        return self.chunk_bits

    @property
    def h(self) -> int:
        """Number of high (chunk id) bits of the 2^n tables."""
        return self.n - self.chunk_bits

    @property
    def n_chunks(self) -> int:
        return 1 << self.h

    @property
    def chunk_size(self) -> int:
        """Entries per chunk of forward/backward (2^c)."""
        return 1 << self.chunk_bits

    @property
    def alpha_chunk_size(self) -> int:
        """Entries per chunk of alpha_i (2^(c-1)); there are 2^h such chunks per node."""
        return 1 << (self.chunk_bits - 1)

    @property
    def n_families(self) -> int:
        return n_families(self.n - 1, self.k)

    @cached_property
    def families(self) -> np.ndarray:
        """Squeezed family masks, int64 (F,), ascending (see families.py)."""
        return family_masks(self.n - 1, self.k)

    @cached_property
    def small_masks(self) -> np.ndarray:
        """Masks over c bits with ≤ k bits, ascending: the truncation sets of the transforms."""
        return family_masks(self.chunk_bits, min(self.k, self.chunk_bits))

    # -- tasks --------------------------------------------------------------------------
    def levels(self) -> list[list[int]]:
        """Chunk ids grouped by popcount (the chunk lattice's levels), lowest first."""
        out: list[list[int]] = [[] for _ in range(self.h + 1)]
        for H in range(self.n_chunks):
            out[popcount(H)].append(H)
        return out

    def forward_deps(self, H: int) -> list[int]:
        return [H ^ (1 << b) for b in range(self.h) if H >> b & 1]

    def backward_deps(self, H: int) -> list[int]:
        return [H | (1 << b) for b in range(self.h) if not H >> b & 1]

    @property
    def alpha_run(self) -> int:
        """Alpha chunks per alpha-stage task: enough for ≈ 2^20 entries, at most all."""
        per = max(1, (1 << 20) // self.alpha_chunk_size)
        return min(per, self.n_chunks)

    def stage_tasks(self, stage: str) -> list[tuple]:
        """The task keys of a stage, in an order that respects dependencies."""
        if stage == "scores":
            return [("scores",)]
        if stage == "alpha":
            if self.alpha_mode != "store":
                return []
            run = self.alpha_run
            return [("alpha", i, K) for i in range(self.n) for K in range(0, self.n_chunks, run)]
        if stage == "forward":
            return [("forward", H) for lvl in self.levels() for H in lvl]
        if stage == "backward":
            return [("backward", H) for lvl in reversed(self.levels()) for H in lvl]
        if stage == "gamma":
            return [("gamma", H) for H in range(self.n_chunks)]
        if stage == "edges":
            return [("edges",)]
        raise ValueError(stage)

    def task_deps(self, key: tuple) -> list[tuple]:
        """Task keys whose output this task reads (the scores and, when stored, the
        alpha stage are finished before forward/backward start; the executor adds
        that stage barrier)."""
        stage = key[0]
        if stage in ("scores", "alpha"):
            return []
        if stage == "forward":
            return [("forward", G) for G in self.forward_deps(key[1])]
        if stage == "backward":
            return [("backward", G) for G in self.backward_deps(key[1])]
        if stage == "gamma":
            H = key[1]
            return [("forward", H), ("backward", H)] + [("backward", G) for G in self.backward_deps(H)]
        if stage == "edges":
            return self.stage_tasks("gamma") + [("forward", self.n_chunks - 1), ("backward", 0)]
        raise ValueError(stage)

    # -- resources ---------------------------------------------------------------------
    def disk_bytes(self) -> dict[str, int]:
        """Bytes each stored table takes on disk (uncompressed float64)."""
        out = {
            "beta": BYTES * self.n * self.n_families,
            "forward": BYTES << self.n,
            "backward": BYTES << self.n,
            "gamma_parts": BYTES * self.n_chunks * self.n * self.n_families,
        }
        if self.alpha_mode == "store":
            out["alpha"] = BYTES * self.n << (self.n - 1)
        return out

    def task_memory_bytes(self) -> int:
        """Peak bytes held by one forward/backward/gamma task (the largest)."""
        size = self.chunk_size
        # forward/backward: alpha_low (c × 2^(c-1)), acc, out, one dependency chunk,
        # one alpha span of 2^c, plus temporaries.
        fb = BYTES * (self.c * size // 2 + 5 * size)
        # gamma: fwd, bwd, one neighbour bwd, s buffer, (n, F) partial.
        gm = BYTES * (4 * size + self.n * self.n_families)
        return max(fb, gm)


def task_id(key: tuple) -> str:
    """Stable string name of a task key, as written in the journal."""
    return ":".join(str(x) for x in key)


def choose_chunk_bits(n: int, k: int, memory_bytes: int, workers: int, alpha_mode: str = "recompute") -> int:
    """Largest c ≤ min(n, MAX_DEFAULT_CHUNK_BITS) whose tasks, `workers` at a time, fit
    in half the budget.

    Half, because zarr/numpy temporaries and the Python process itself need room too.
    The cap (2^20 entries, 8 MiB chunks) keeps tasks near 0.1–1 s, gives n ≥ 22 several
    chunks per lattice level to run in parallel, and keeps a task's memory near 100 MiB.
    Below 2^MIN_CHUNK_BITS entries per chunk the per-task overhead (scheduling, two
    fsyncs) dominates, so a budget that cannot hold such chunks is refused.
    """
    floor = min(n, MIN_CHUNK_BITS)
    best = None
    for c in range(floor, min(n, MAX_DEFAULT_CHUNK_BITS) + 1):
        p = Plan(n, min(k, n - 1), c, alpha_mode)
        if p.task_memory_bytes() * max(workers, 1) <= memory_bytes // 2:
            best = c
    if best is None:
        need = Plan(n, min(k, n - 1), floor, alpha_mode).task_memory_bytes() * max(workers, 1) * 2
        raise OptionError(f"memory budget of {memory_bytes / 2**20:.1f} MiB is too small for n = {n} "
                          f"with {workers} workers: give --memory at least {need / 2**20:.0f}M "
                          f"(or --chunk-bits to choose the chunk size yourself)")
    return best


def _transform_updates(d: int, k: int) -> int:
    """Log-add-exp updates of one k-truncated transform over d bits: Σ_j 2^j·B(d-j-1, k)."""
    from math import comb

    return sum((1 << j) * sum(comb(d - j - 1, i) for i in range(min(k, d - j - 1) + 1))
               for j in range(d))


# Seconds per elementary operation on one core, measured by scripts/bench.py on the
# reference machine (2-core Zen 4 VM, AVX2): a vectorised log-add-exp in the transforms,
# one max-shifted exp term of the forward/backward recursions (n = 28 task-seconds,
# I/O and zarr overhead included).
SECONDS_PER_LAE = 5.5e-9
SECONDS_PER_TERM = 12e-9
DISK_WRITE_BPS = 0.65e9
DISK_READ_BPS = 1.6e9


def work_estimate(plan: Plan) -> dict[str, float]:
    """Elementary operations per stage (exact counts from the plan)."""
    n, h, c = plan.n, plan.h, plan.c
    alpha_one = (1 << h) * _transform_updates(c - 1, plan.k)  # one node, all chunks
    alpha = n * alpha_one
    recursion = (1 << n) * (n / 2 + 1)
    gamma_low = c * (1 << h) * _transform_updates(c - 1, plan.k)
    gamma_high = h * (1 << max(h - 1, 0)) * _transform_updates(c, plan.k) if h else 0
    out = {"forward": recursion, "backward": recursion, "gamma": gamma_low + gamma_high}
    if plan.alpha_mode == "store":
        out["alpha"] = alpha
    else:  # rebuilt inside forward and backward
        out["forward_alpha"] = alpha
        out["backward_alpha"] = alpha
    return out


def time_estimate(plan: Plan, workers: int) -> dict[str, float]:
    """Rough wall seconds per stage on `workers` cores of the reference machine."""
    w = work_estimate(plan)
    lae = SECONDS_PER_LAE / max(workers, 1)
    term = SECONDS_PER_TERM / max(workers, 1)
    disk = plan.disk_bytes()
    out = {
        "forward": w["forward"] * term + w.get("forward_alpha", 0) * lae + disk["forward"] / DISK_WRITE_BPS,
        "backward": w["backward"] * term + w.get("backward_alpha", 0) * lae + disk["backward"] / DISK_WRITE_BPS,
        "gamma": w["gamma"] * lae + (disk["forward"] + 2 * disk["backward"]) / DISK_READ_BPS,
    }
    if "alpha" in w:
        out["alpha"] = w["alpha"] * lae + disk["alpha"] / DISK_WRITE_BPS
        out["forward"] += disk["alpha"] / DISK_READ_BPS
        out["backward"] += disk["alpha"] / DISK_READ_BPS
    return out
