"""The run plan: chunk lattice arithmetic and task lists, a pure function of (n, k, c).

Tables over n-bit masks (forward L, backward B) are cut into 2^h chunks of 2^c entries,
h = n - c (docs/design.md, "The chunk lattice"). Tables over the (n-1)-bit squeezed masks of a
node (alpha_i, the gamma input) use chunks of 2^(c-1) entries, so that chunk id H of L
lines up with chunk id H of every low node's alpha (nodes i < c), and a high node
c+b needs the two alpha chunks 2Q, 2Q+1 with Q = squeeze(H - b, b).

`Plan.tasks()` lists every task as a frozen `TaskSpec`: its key, the regions (whole
chunks of named tables) it reads and writes, and its dependencies, derived from those
reads. The engine's task functions, the journal CRC, fsync, verification and resume all
use these specs; nothing else says what a task touches.

- ``scores``   ("scores",): writes beta
- ``alpha``    (only when alpha is stored): ("alpha", node, first_chunk) for runs of chunks
- ``forward``  ("forward", H): reads forward H - {b} for each high bit b in H
- ``backward`` ("backward", H): reads backward H + {b} for each high bit b not in H and
  forward H; writes backward H and chunk H's part of γ
- ``gamma``    ("gamma", level): sums the γ parts of a level
- ``release``  ("release", H): deletes backward H and its γ part once nothing reads them
- under a disk budget (`Plan.kept`, `fit_disk`): ``reforward`` ("reforward", H, ℓ)
  computes L on chunk H again for the backward level ℓ, and ("release", H, "L"[, ℓ])
  deletes a chunk of L after its last reader
- ``edges``    ("edges",): reads the level sums, writes gamma and the posterior
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bigbn.kernels.bits import popcounts
from bigbn.errors import EngineError, OptionError
from bigbn.kernels.families import family_masks, n_families, squeeze

MAX_NODES = 40
#: The file-system block the disk plan counts files in where the work directory's is not
#: known (`fs_block`): a chunk file of 128 bytes takes 4096 on ext4, xfs, btrfs and APFS.
BLOCK = 4096
#: The largest f_frsize `fs_block` takes for an allocation unit (ext4 4 KiB, xfs at most
#: 64 KiB). Above it the figure is no allocation unit: Linux's NFS client reports its
#: wsize there (1 MiB on current mounts), ZFS on Linux its largest record (128 KiB by
#: default), both of which hold a small file in far less; counted in 1 MiB, a chunk of
#: 2^14 entries took 8 times its disk. `BLOCK` is used.
MAX_BLOCK = 1 << 16
#: At most the bytes of a table's (or the group's) zarr.json (they are 100 to 600).
META_BYTES = 1024
#: At most the bytes of a journal line (one per task; about 140, more in a tier's scope).
JOURNAL_LINE_BYTES = 192
MAX_DEFAULT_CHUNK_BITS = 20
#: The most chunk bits a lattice may have (h = n − c; 2^h chunks of each table): planning
#: it walks arrays of 2^h entries (`live_chunks`), so `bigbn plan --n 40 --chunk-bits 10`
#: (h = 30) took 23 GB and was killed, and --chunk-bits 1 asked numpy for 4 TiB (a
#: traceback); the run itself would keep 2^h files per table. 2^24 chunks are planned in
#: about a second and 0.6 GB.
MAX_CHUNK_LEVEL_BITS = 24
MIN_CHUNK_BITS = 10
# Tile size (bits) of the α a forward/backward task recomputes: 2^TILE_BITS entries of α
# at a time, built right where the recursion uses them (kernels._recursion_tiles), so a
# task holds a tile of α rather than the chunk's c·2^(c-1) values, and it stays in cache.
TILE_BITS = 15
ALPHA_MODES = ("recompute", "store")
STAGES = ("scores", "alpha", "forward", "reforward", "backward", "gamma", "release", "edges", "map", "map_dag")
BYTES = 8


@dataclass(frozen=True)
class Region:
    """Whole chunks of one table: ``chunks`` are zarr chunk coordinates (a box, listed in
    C order). A task reads and writes only regions; the journal CRC covers its writes."""

    table: str
    chunks: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class TaskSpec:
    """One task of the plan: what it is, what it reads, what it writes.

    key: ("scores",), ("alpha", node, first_chunk), ("forward", H), ("reforward", H, round)
    (a plan with a disk budget: L on chunk H again, for the backward pass of level
    ``round``), ("backward", H), ("gamma", level), ("release", S) (B and the γ part of
    chunk S), ("release", S, "L") and ("release", S, "L", round) (L on chunk S, of the
    forward pass or of a round; a plan with a disk budget), ("edges",), ("map", H) or
    ("map_dag",).
    reads / writes: the regions it reads and writes (alpha chunks that are recomputed
    rather than stored are read as ``beta``). deletes: the regions a release task
    removes. deps: keys of the tasks that write what it reads, derived from the regions,
    and for a release task the tasks that read what it deletes; never listed by hand.
    chunk: the chunk id H of chunk tasks (the level of gamma and release tasks). terms:
    what the task combines, so that it never re-derives lattice neighbours:

    - forward/backward: (node c+b, first alpha chunk of its 2-chunk span, neighbour chunk
      id) for every high bit b of the recursion (b ∈ H forward, b ∉ H backward);
    - alpha: ((node, first_chunk, number of chunks),).

    gamma_terms (backward tasks, which also compute chunk H's part of γ): (node c+b,
    squeezed chunk id of S within V - (c+b), backward chunk id H + b) for every high bit
    b ∉ H (low nodes v < c need nothing but chunk H). origin: offset in chunk H of the
    recursion's log 1 (L(∅) forward, B(V) backward).
    """

    key: tuple
    reads: tuple[Region, ...]
    writes: tuple[Region, ...]
    deps: tuple[tuple, ...]
    chunk: int | None = None
    terms: tuple = ()
    origin: int | None = None
    gamma_terms: tuple = ()
    deletes: tuple[Region, ...] = ()
    scope: str = ""

    @property
    def kind(self) -> str:
        return self.key[0]

    @property
    def id(self) -> str:
        """The task's name in the journal: its key, after its plan's scope if it has one
        ("tier2/forward:5" for a tier of a tiered run, bigbn/plan/tiers.py)."""
        return f"{self.scope}/{task_id(self.key)}" if self.scope else task_id(self.key)


@dataclass(frozen=True)
class Plan:
    """What a run computes and how it is cut into chunk tasks.

    n: number of variables; k: max parents (already capped at n-1); chunk_bits: c,
    1 ≤ c ≤ n; alpha_mode: "recompute" (alpha chunks are rebuilt from beta inside the
    forward and backward tasks; disk O(2^n)) or "store" (an alpha stage writes
    n·2^(n-1) values once; disk O(n·2^n)). posterior: the posterior stages (alpha,
    forward, backward, gamma, edges); map_dag: the MAP stages (map, map_dag); one of the
    two at least. scope: "" for a whole run; a tiered run (bigbn/plan/tiers.py) runs one plan
    per tier, each with its own scope, which names its tables' folder and prefixes its
    task ids in the run's one journal. kept: None (L is kept whole to the end, for the
    sampler) or the levels of L the forward pass keeps under a disk budget (0 and h
    always): L chunks are then deleted after their last reader, and a level not kept is
    computed again from the nearest kept level below, just before its backward level
    (docs/design.md, "The disk budget"; `fit_disk`).
    """

    n: int
    k: int
    chunk_bits: int
    alpha_mode: str = "recompute"
    map_dag: bool = False
    posterior: bool = True
    scope: str = ""
    kept: tuple[int, ...] | None = None

    def __post_init__(self):
        if not 2 <= self.n <= MAX_NODES:
            raise OptionError(f"n = {self.n}: the engine supports 2 to {MAX_NODES} variables")
        if not 0 <= self.k <= self.n - 1:
            raise OptionError(f"max parents k = {self.k} must be between 0 and n-1 = {self.n - 1}")
        if not 1 <= self.chunk_bits <= self.n:
            raise OptionError(f"chunk bits {self.chunk_bits} must be between 1 and n = {self.n}")
        if self.n - self.chunk_bits > MAX_CHUNK_LEVEL_BITS:
            raise OptionError(f"chunk bits {self.chunk_bits} make 2^{self.n - self.chunk_bits} chunks per table at "
                              f"n = {self.n}: give chunk bits of at least n − {MAX_CHUNK_LEVEL_BITS} = "
                              f"{self.n - MAX_CHUNK_LEVEL_BITS} (--chunk-bits)")
        if self.alpha_mode not in ALPHA_MODES:
            raise OptionError(f"alpha mode {self.alpha_mode!r}: choose one of {', '.join(ALPHA_MODES)}")
        if not (self.posterior or self.map_dag):
            raise OptionError("a run computes the posterior, the MAP network or both")
        if self.kept is not None:
            kept = tuple(self.kept)
            if (kept != tuple(sorted(set(kept))) or not kept or kept[0] != 0 or kept[-1] != self.h
                    or not all(isinstance(x, int) for x in kept)):
                raise OptionError(f"kept levels {kept}: ascending levels of 0..{self.h}, with 0 and {self.h}")
            object.__setattr__(self, "kept", kept)

    @property
    def dropped(self) -> tuple[int, ...]:
        """The levels of L a plan with a disk budget computes again in the backward pass."""
        return () if self.kept is None else tuple(sorted(set(range(self.h + 1)) - set(self.kept)))

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

    @property
    def alpha_run(self) -> int:
        """Alpha chunks per alpha-stage task: enough for ≈ 2^20 entries, at most all."""
        per = max(1, (1 << 20) // self.alpha_chunk_size)
        return min(per, self.n_chunks)

    # -- tables ---------------------------------------------------------------------------
    def tables(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """Every stored table: name -> (shape, chunk shape); float64, one zarr array each."""
        n, F, size = self.n, self.n_families, self.chunk_size
        out = {"beta": ((n, F), (n, F))}
        if self.posterior:
            out.update({
                "forward": ((1 << n,), (size,)),
                "backward": ((1 << n,), (size,)),
                "gamma_parts": ((self.n_chunks, n, F), (1, n, F)),
                "gamma_levels": ((self.h + 1, n, F), (1, n, F)),
                "gamma": ((n, F), (n, F)),
                "posterior": ((n, n), (n, n)),
            })
        if self.posterior:  # L on the levels a disk budget drops, one table per round
            out.update({f"reforward{ell}": ((1 << n,), (size,)) for ell in self.dropped})
        if self.posterior and self.alpha_mode == "store":
            out["alpha"] = ((n, 1 << (n - 1)), (1, self.alpha_chunk_size))
        if self.map_dag:  # M(S), its best sink (int8), the MAP parent masks
            out["map"] = ((1 << n,), (size,))
            out["map_sink"] = ((1 << n,), (size,), "i1")
            out["map_parents"] = ((n,), (n,))
        return out

    # -- tasks --------------------------------------------------------------------------
    def tasks(self) -> tuple[TaskSpec, ...]:
        """Every task of the run, in an order that respects dependencies (the sync order).

        Each spec says what the task reads and writes (whole chunks of the tables); its
        dependencies are the tasks that write what it reads. See `TaskSpec`.
        """
        return self._tasks

    def task(self, key: tuple) -> TaskSpec:
        return self._task_index[key]

    def stage_tasks(self, stage: str) -> list[tuple]:
        """The task keys of a stage, in an order that respects dependencies."""
        if stage not in STAGES:
            raise OptionError(f"stage {stage!r}: choose one of {', '.join(STAGES)}")
        return [t.key for t in self._tasks if t.kind == stage]

    @cached_property
    def _task_index(self) -> dict[tuple, TaskSpec]:
        return {t.key: t for t in self._tasks}

    @cached_property
    def _tasks(self) -> tuple[TaskSpec, ...]:
        c, h, last = self.c, self.h, self.n_chunks - 1
        beta = Region("beta", ((0, 0),))
        store = self.alpha_mode == "store"

        def alpha(node: int, first: int, count: int) -> Region:
            """Where alpha_node's chunks come from: the alpha table, or beta (recomputed)."""
            return Region("alpha", tuple((node, first + t) for t in range(count))) if store else beta

        def chunk(table: str, H: int) -> Region:
            return Region(table, ((H,),))

        drafts: list[tuple] = [(("scores",), (), (beta,), None, (), None)]
        if self.posterior:
            self._posterior_drafts(drafts, alpha, chunk)
        if self.map_dag:  # the MAP network: the forward recursion in max-plus (mapdag.py)
            for lvl in self.levels():
                for H in lvl:
                    terms = tuple((c + b, 2 * squeeze(H ^ (1 << b), b), H ^ (1 << b))
                                  for b in range(h) if H >> b & 1)
                    reads = (beta,) + tuple(chunk("map", G) for _, _, G in terms)
                    drafts.append((("map", H), reads, (chunk("map", H), chunk("map_sink", H)), H, terms,
                                   0 if H == 0 else None))
            reads = (beta, chunk("map", last)) + tuple(chunk("map_sink", H) for H in range(self.n_chunks))
            drafts.append((("map_dag",), reads, (Region("map_parents", ((0,),)),), None, (), None))

        writer, readers = _io_maps((d[0], d[1], d[2]) for d in drafts)
        order = {d[0]: i for i, d in enumerate(drafts)}
        out = []
        for key, reads, writes, H, terms, origin, *extra in drafts:
            extra = extra[0] if extra else {}
            deletes = extra.get("deletes", ())
            deps = {writer[r.table, cc] for r in reads for cc in r.chunks}
            # a release waits for every task that reads what it deletes (and its writers)
            deps |= {k for r in deletes for cc in r.chunks for k in readers.get((r.table, cc), ())}
            deps |= {writer[r.table, cc] for r in deletes for cc in r.chunks}
            deps |= set(extra.get("after", ()))
            out.append(TaskSpec(key=key, reads=reads, writes=writes,
                                deps=tuple(sorted(deps, key=order.__getitem__)),
                                chunk=H, terms=terms, origin=origin,
                                gamma_terms=extra.get("gamma_terms", ()), deletes=deletes,
                                scope=self.scope))
        return tuple(out)

    @cached_property
    def io_maps(self) -> tuple[dict, dict]:
        """(writer, readers): the key of the task that writes each chunk (table, chunk
        coordinates), and the keys of the tasks that read it."""
        return _io_maps((t.key, t.reads, t.writes) for t in self._tasks)

    def _posterior_drafts(self, drafts: list, alpha, chunk) -> None:
        """Drafts of the posterior stages (docs/design.md, "Stages and tasks", "Disk"):

        - alpha (if stored); forward: L on every chunk, ascending levels, kept whole;
        - backward, level by level from the top: B on chunk H, and at once chunk H's part
          of γ (it needs L(H), B(H) and the B(H + b) the recursion has just read);
        - gamma, per level: the level's parts summed (log-add-exp) into one (n, F) row;
        - release, per chunk S of level ℓ ≥ 1: B(S) and its γ part are deleted once the
          tasks that read them (the backward tasks of S's subsets, the sum of level ℓ)
          have run, right after the last of them in the plan's order (`live_chunks`);
        - edges: γ from the level sums, then the edge posteriors.
        """
        if self.kept is not None:
            return self._budget_drafts(drafts, alpha, chunk)
        self._alpha_drafts(drafts, alpha)
        levels = self.levels()
        for lvl in levels:
            for H in lvl:  # L on chunk H needs L on chunks H - {b}, b ∈ H
                drafts.append(self._recursion("forward", H, self._forward_terms(H), 0 if H == 0 else None,
                                              alpha, chunk))
        for ell in range(self.h, -1, -1):
            self._backward_level(drafts, levels, ell, "forward", alpha, chunk)
        self._edges_draft(drafts, chunk)

    def _alpha_drafts(self, drafts: list, alpha) -> None:
        """With ``--alpha store``: α of every node, a run of chunks per task."""
        if self.alpha_mode != "store":
            return
        beta = Region("beta", ((0, 0),))
        for i in range(self.n):
            for first in range(0, self.n_chunks, self.alpha_run):
                run = min(self.alpha_run, self.n_chunks - first)
                drafts.append((("alpha", i, first), (beta,), (alpha(i, first, run),), None,
                               ((i, first, run),), None))

    def _forward_terms(self, H: int) -> tuple:
        """L on chunk H needs L on chunks H - {b}, b ∈ H: (node, α chunk, neighbour)."""
        c, h = self.c, self.h
        return tuple((c + b, 2 * squeeze(H ^ (1 << b), b), H ^ (1 << b)) for b in range(h) if H >> b & 1)

    def _backward_level(self, drafts: list, levels, ell: int, source: str, alpha, chunk) -> None:
        """The backward tasks of level ℓ (reading L from table ``source``), each with its
        chunk's γ part, the releases of level ℓ + 1's B, and the sum of level ℓ's parts."""
        c, h, last = self.c, self.h, self.n_chunks - 1
        for H in levels[ell]:  # B on chunk H needs B on chunks H + {b}, b ∉ H
            terms = tuple((c + b, 2 * squeeze(H, b), H | (1 << b)) for b in range(h) if not H >> b & 1)
            origin = self.chunk_size - 1 if H == last else None
            key, reads, writes, _, _, _ = self._recursion("backward", H, terms, origin, alpha, chunk)
            # γ: low nodes v < c: S and S+v in chunk H; high node c+b, b ∉ H: S+v in H+b
            gamma_terms = tuple((c + b, squeeze(H, b), H | (1 << b)) for b in range(h) if not H >> b & 1)
            # level ell starts once level ell + 1 is summed, and so level ell + 2 released
            after = (("gamma", ell + 1),) if ell < h else ()
            drafts.append((key, reads + (chunk(source, H),),
                           writes + (Region("gamma_parts", ((H, 0, 0),)),), H, terms, origin,
                           {"gamma_terms": gamma_terms, "after": after}))
            # B and the γ part of chunk S = H + b of level ell + 1 are deleted as soon as
            # the last of their readers in this (colex) order has run: H for every bit b
            # below H's lowest (`live_chunks`)
            for b in range(h if H == 0 else (H & -H).bit_length() - 1):
                S = H | 1 << b
                drafts.append((("release", S), (), (), S, (), None,
                               {"deletes": (chunk("backward", S), Region("gamma_parts", ((S, 0, 0),)))}))
        # the level's parts summed once level ell + 1 is all released: two levels at most
        after = tuple(("release", S) for S in levels[ell + 1]) if ell < h else ()
        parts = Region("gamma_parts", tuple((H, 0, 0) for H in levels[ell]))
        drafts.append((("gamma", ell), (parts,), (Region("gamma_levels", ((ell, 0, 0),)),), ell,
                       (), None, {"after": after}))

    def _edges_draft(self, drafts: list, chunk) -> None:
        """γ from the level sums, then the edge posteriors."""
        h, last = self.h, self.n_chunks - 1
        reads = ((Region("beta", ((0, 0),)), Region("gamma_levels", tuple((ell, 0, 0) for ell in range(h + 1))),
                  chunk("forward", last), chunk("backward", 0)))
        drafts.append((("edges",), reads, (Region("gamma", ((0, 0),)), Region("posterior", ((0, 0),))),
                       None, (), None))

    def _budget_drafts(self, drafts: list, alpha, chunk) -> None:
        """Drafts of the posterior stages under a disk budget (docs/design.md, "The disk
        budget"): the stages of `_posterior_drafts`, and

        - forward: each level's chunks in descending order, so that a chunk of a level
          not kept is deleted right after its last reader (its superset S + its lowest
          missing bit) early in the next level, as B's chunks are in the backward pass;
        - before the backward tasks of a level ℓ not kept, round ℓ computes L again,
          level by level from the nearest kept level j < ℓ up to ℓ, into table
          ``reforward{ℓ}`` (the same bits: the same task function on the same inputs),
          once the γ sum of level ℓ + 1 is done (so B holds one level, level ℓ + 1);
        - every chunk of L (but L(V), which edges reads) is deleted right after its last
          reader: the next level of its round, or the backward task of its chunk.
        """
        h = self.h
        kept = set(self.kept)
        start = len(drafts)
        self._alpha_drafts(drafts, alpha)
        levels = self.levels()
        for lvl in levels:
            for H in reversed(lvl):
                drafts.append(self._recursion("forward", H, self._forward_terms(H), 0 if H == 0 else None,
                                              alpha, chunk))
        for ell in range(h, -1, -1):
            source = "forward"
            if ell not in kept:  # round ell: L from the kept level j below, up to level ell
                j, source = max(x for x in kept if x < ell), f"reforward{ell}"
                for i in range(j + 1, ell + 1):
                    for H in reversed(levels[i]):
                        terms = self._forward_terms(H)
                        _, reads, _, _, _, _ = self._recursion("forward", H, terms, None, alpha, chunk)
                        table = "forward" if i == j + 1 else source
                        reads = tuple(Region(table, r.chunks) if r.table == "forward" else r for r in reads)
                        drafts.append((("reforward", H, ell), reads, (chunk(source, H),), H, terms, None,
                                       {"after": (("gamma", ell + 1),)} if i == j + 1 else {}))
            self._backward_level(drafts, levels, ell, source, alpha, chunk)
        self._edges_draft(drafts, chunk)
        last = self.n_chunks - 1
        # every chunk of L but L(V) deleted right after its last reader
        lattice = [d for d in drafts[start:]]
        last_reader: dict[int, list] = {}
        for pos, d in enumerate(lattice):
            for r in d[1]:
                if r.table == "forward" or r.table.startswith("reforward"):
                    for cc in r.chunks:
                        if (r.table, cc) != ("forward", (last,)):
                            last_reader[(r.table, cc)] = pos
        after_pos: dict[int, list] = {}
        for (table, cc), pos in last_reader.items():
            after_pos.setdefault(pos, []).append((table, cc))
        del drafts[start:]
        for pos, d in enumerate(lattice):
            drafts.append(d)
            for table, cc in sorted(after_pos.get(pos, ()), key=lambda x: (x[1], x[0])):
                key = ("release", cc[0], "L") if table == "forward" else ("release", cc[0], "L", int(table[9:]))
                drafts.append((key, (), (), cc[0], (), None, {"deletes": (Region(table, (cc,)),)}))

    def _recursion(self, kind, H, terms, origin, alpha, chunk) -> tuple:
        """Draft of a forward/backward task on chunk H (one computation, mirrored)."""
        reads = tuple(alpha(i, j, 2) for i, j, _ in terms)
        reads += tuple(chunk(kind, G) for _, _, G in terms)
        reads += tuple(alpha(i, H, 1) for i in range(self.c))  # low nodes: alpha chunk H
        return ((kind, H), tuple(dict.fromkeys(reads)), (chunk(kind, H),), H, terms, origin)

    def levels(self) -> list[list[int]]:
        """Chunk ids grouped by popcount (the chunk lattice's levels), lowest first."""
        level = popcounts(np.arange(self.n_chunks, dtype=np.int64))
        return [np.flatnonzero(level == ell).tolist() for ell in range(self.h + 1)]

    # -- resources ---------------------------------------------------------------------
    def disk_bytes(self, workers: int | None = None, block: int = BLOCK) -> dict[str, int]:
        """Peak bytes each stored table takes on disk (uncompressed float64), each chunk
        file counted as the blocks of ``block`` bytes it occupies (`fs_block`: the work
        directory's file system's; 1 counts the tables' bytes alone), and under
        ``metadata`` what the tables' chunks are not (`Plan.metadata_bytes`).

        workers: how many tasks run at once when they start in the plan's order (the
        sync, dask and threads executors); None for any order the dependencies allow (a
        cluster). B and the γ parts then hold at most `live_chunks` chunks at a time.
        """
        return self._disk_bytes(workers, block, lattice=True)

    def _disk_bytes(self, workers: int | None, block: int, lattice: bool) -> dict[str, int]:
        """`disk_bytes`, or without L, B and the γ parts (``lattice`` False: what a
        budget leaves as it is, `_other_disk`, without the peak it need not compute)."""
        u, row = _blocks(BYTES * self.chunk_size, block), _blocks(BYTES * self.n * self.n_families, block)
        out = {"beta": row}
        if self.posterior and lattice and self.kept is not None:  # L, B and the γ parts at their joint peak
            out["lattice"] = budget_peak(self.h, self.kept, self.steps(block), workers)
        elif self.posterior and lattice:
            live = self._live_chunks(workers)
            out.update({
                "forward": self.n_chunks * u,
                "backward": live * u,
                "gamma_parts": live * self._part_bytes(block),
            })
        if self.posterior:
            out["gamma_levels"] = (self.h + 1) * row
        if self.posterior and self.alpha_mode == "store":
            out["alpha"] = self.n * self.n_chunks * _blocks(BYTES * self.alpha_chunk_size, block)
        if self.map_dag:
            out["map"] = self.n_chunks * u
            out["map_sink"] = self.n_chunks * _blocks(self.chunk_size, block)
        if block > 1:
            out["metadata"] = self.metadata_bytes(block)
        return out

    def metadata_bytes(self, block: int = BLOCK) -> int:
        """Bytes on disk beyond the chunks `disk_bytes` counts, at most: every table's
        zarr.json and folders (one per chunk-key prefix, but a γ part's, which are deleted
        with it; a folder of many names takes more blocks, `_folder_bytes`), the group's,
        the results' small tables (γ, the posterior, the MAP parents), run.json and the journal's lines (one per task, `_task_count`). With
        tiny chunks these are much of the run's disk."""
        def b(size: int) -> int:
            return _blocks(size, block)

        # a plan under a budget counts a table for every level a round may compute again,
        # so that what is not L, B or the γ parts is the same whichever levels it keeps
        # (`choose_kept` trades those alone)
        tables = self.tables() if self.kept is None else \
            dataclasses.replace(self, kept=(0, self.h) if self.h else (0,)).tables()
        total = 2 * b(META_BYTES) + _folder_bytes(len(tables) + 1, max(map(len, tables)), block)
        for name, spec in tables.items():
            shape, chunks = spec[0], spec[1]
            total += b(META_BYTES) + _folder_bytes(2, len("zarr.json"), block)  # zarr.json, its folder
            count = 1
            for size, step in zip(shape, chunks):  # c/, then one folder per prefix of the chunk key
                grid = -(-size // step)
                total += count * _folder_bytes(grid, len(str(grid - 1)), block)
                count *= grid
                if name == "gamma_parts":  # a γ part's folders come and go with it (`_part_bytes`)
                    break
        small = {"gamma": BYTES * self.n * self.n_families, "posterior": BYTES * self.n * self.n,
                 "map_parents": BYTES * self.n}
        total += sum(b(x) for t, x in small.items() if t in tables)
        return total + b(JOURNAL_LINE_BYTES * self._task_count())

    def _task_count(self) -> int:
        """The plan's tasks, counted rather than listed (`tasks` at 2^24 chunks would take
        minutes): at most this many journal lines, but for the rounds' under a budget
        (two per chunk computed again: left to `DISK_MARGIN`, so that what a budget's
        kept levels change is L, B and the γ parts alone)."""
        N = self.n_chunks
        count = 1
        if self.posterior:
            count += 3 * N + self.h + 2 + (N if self.kept is not None else 0)
            if self.alpha_mode == "store":
                count += self.n * -(-N // self.alpha_run)
        if self.map_dag:
            count += N + 1
        return count

    def _live_chunks(self, workers: int | None) -> int:
        """`live_chunks` of this plan, computed once per ``workers`` and kept on the plan
        (at h = 20 it takes a fraction of a second, and a run asks several times)."""
        if workers not in self._live:
            self._live[workers] = live_chunks(self.h, workers)
        return self._live[workers]

    @cached_property
    def _live(self) -> dict[int | None, int]:
        return {}

    def steps(self, block: int = BLOCK) -> "LatticeSteps":
        """The disk-budget phases' figures (`lattice_steps`) with chunk files counted in
        blocks of ``block`` bytes; kept on the plan per block size."""
        if block not in self._steps_by_block:
            self._steps_by_block[block] = lattice_steps(self.h, _blocks(BYTES * self.chunk_size, block),
                                                        self._part_bytes(block))
        return self._steps_by_block[block]

    def _part_bytes(self, block: int) -> int:
        """Bytes of one γ part on disk: its file, and the two folders of its chunk key
        (c/H/0/0), which go with it (`TableStore.delete_region`)."""
        return _blocks(BYTES * self.n * self.n_families, block) + 2 * _folder_bytes(1, 1, block)

    @cached_property
    def _steps_by_block(self) -> dict[int, "LatticeSteps"]:
        return {}

    def refwd_chunks(self) -> int:
        """Chunk tasks of L computed again under a disk budget (0 without one)."""
        return 0 if self.kept is None else refwd_chunks(self.h, self.kept)

    @property
    def tile_bits(self) -> int:
        """Bits of the α tiles the forward/backward tasks recompute (`TILE_BITS`)."""
        return min(TILE_BITS, self.c)

    def task_memory_bytes(self) -> int:
        """Peak bytes held by one forward/backward/gamma task (the largest)."""
        size, tile = self.chunk_size, 1 << self.tile_bits
        # forward/backward: the chunk and a neighbour chunk as extended numbers (mantissas,
        # exponents), the neighbour's logs as read; the α tiles (tile_bits rows of half a
        # tile and 3 tiles, as extended numbers) and the block weights (3 tiles); the
        # families of the c low nodes inside the chunk (score and mask)
        fb = BYTES * (5 * size + (self.tile_bits + 8) * tile + 2 * (self.c + 1) * self.n_families)
        if self.alpha_mode == "store":  # the c low rows and a span read, as extended numbers
            fb += BYTES * (self.c * size + 3 * size)
        # backward adds γ: L on the chunk and s, as extended numbers, the (n, F) partial
        gm = BYTES * (4 * size + self.n * self.n_families)
        return fb + gm


def live_chunks(h: int, workers: int | None = None) -> int:
    """The most chunks of B (and as many γ parts) on disk at once in a plan of 2^h
    chunks, ``workers`` tasks at a time in the plan's order (None: in any order).

    While level ℓ is computed, level ℓ + 2 is gone (level ℓ waits for γ of level ℓ + 1,
    which waits for the releases of level ℓ + 2), so two adjacent levels is the bound for
    any order. In the plan's order (colex within a level) chunk S of level ℓ + 1 is
    released right after its last reader, S minus its lowest bit: once j tasks of the
    level have started, j chunks of level ℓ are written and those of level ℓ + 1 whose
    last reader is not among them are still there, and so are at most h − ℓ more for
    each task (or release) still in flight.
    """
    pair = max(math.comb(h, ell) + math.comb(h, ell + 1) for ell in range(h)) if h else 1
    if workers is None:
        return pair
    H = np.arange(1 << h, dtype=np.int64)
    level = popcounts(H)
    # chunks of level ell + 1 whose last reader is H: one per bit of H's below its lowest
    low = np.where(H == 0, h, np.log2(np.maximum(H & -H, 1)).astype(np.int64))
    most = 1
    for ell in range(h):
        released = np.cumsum(low[level == ell])
        j = np.arange(1, len(released) + 1)
        kept = np.minimum(released, workers * (h - ell))
        most = max(most, int((j + math.comb(h, ell + 1) - released + kept).max()))
    return min(pair, most)


# -- the disk budget ---------------------------------------------------------------------
# (docs/design.md, "The disk budget"). A plan with kept levels K (0 and h always) runs
# in phases, each of which, in the plan's order, holds on disk (in chunks of u bytes for
# L and B, plus g bytes per γ part of a B chunk):
#   forward level i:  the kept levels below i − 1, and then N(i−1) + N(i) if i − 1 is
#                     kept, else P(i) (level i − 1 deleted chunk by chunk: `_forward_step`);
#   round ℓ ∉ K, its level i (j = the kept level below ℓ): the kept levels below ℓ, L(V),
#                     B and the γ parts of level ℓ + 1 whole, and N(j+1) (i = j + 1) or P(i);
#   backward level ℓ: the kept levels below ℓ, L(V) (ℓ < h), and `_backward_step` (L(ℓ)
#                     whole and B(ℓ + 1) whole as it starts, then one chunk of L for one of B).
# The peak is the largest of these; `choose_kept` finds the K of least recomputation
# under a limit (exactly, by dynamic programming over the kept levels in ascending order:
# every phase up to the next kept level depends only on the last kept level j and the
# sum of the kept levels' sizes below it). tests/naive.py simulates the tasks instead.

@dataclass(frozen=True)
class LatticeSteps:
    """Per-level figures of the disk-budget phases (bytes): N[l] chunks of level l,
    P[i] bytes of levels i − 1 and i while level i is computed and level i − 1 deleted
    chunk by chunk, B[l] bytes of L and B in the backward tasks of level l (beyond the
    kept levels below l and L(V)); u bytes per chunk of L or B, g per γ part."""

    h: int
    u: int
    g: int
    N: tuple[int, ...]
    P: tuple[int, ...]
    B: tuple[int, ...]


def lattice_steps(h: int, u: int, g: int) -> LatticeSteps:
    H = np.arange(1 << h, dtype=np.int64)
    level = popcounts(H)
    N = tuple(math.comb(h, ell) for ell in range(h + 1))
    # forward, level i in descending order: chunk T is the last reader of as many chunks
    # of level i − 1 as T has trailing ones (S = T − b, every bit below b in T)
    ones = np.log2((~H & (H + 1)).astype(np.float64)).astype(np.int64)
    P = [0]
    for i in range(1, h + 1):
        rel = ones[level == i][::-1]
        before = np.concatenate(([0], np.cumsum(rel)[:-1]))
        m = np.arange(1, len(rel) + 1)
        P.append(u * int((m + N[i - 1] - before).max()))
    # backward, level l ascending: chunk H is the last reader of as many chunks of level
    # l + 1 as it has trailing zeros (h for H = 0), and of its own L
    zeros = np.where(H == 0, h, np.log2(np.maximum(H & -H, 1).astype(np.float64)).astype(np.int64))
    B = []
    for ell in range(h + 1):
        up = N[ell + 1] if ell < h else 0
        rel = zeros[level == ell]
        before = np.concatenate(([0], np.cumsum(rel)[:-1]))
        m = np.arange(1, len(rel) + 1)
        B.append(int((u * (N[ell] + 1 + up - before) + g * (m + up - before)).max()))
    return LatticeSteps(h, u, g, N, tuple(P), tuple(B))


def _slack(st: LatticeSteps, workers: int | None) -> int:
    """Bytes tasks in flight may hold beyond the plan's order, one at a time: each of the
    other workers' tasks its output and the h + 1 chunks whose deletion waits for it."""
    return max((workers or 1) - 1, 0) * (st.h + 2) * (st.u + st.g)


def refwd_chunks(h: int, kept) -> int:
    """Chunk tasks of the rounds: level ℓ ∉ K is computed from the kept level j below,
    levels j + 1 .. ℓ."""
    kept = sorted(kept)
    N = [math.comb(h, ell) for ell in range(h + 1)]
    return sum(sum(N[max(x for x in kept if x < ell) + 1:ell + 1]) for ell in range(h + 1) if ell not in kept)


def budget_peak(h: int, kept, st: LatticeSteps, workers: int | None = 1) -> int:
    """Bytes of L, B and the γ parts on disk at once in the plan with kept levels
    ``kept``: in the plan's order, ``workers`` tasks at a time (None: any order a
    cluster may choose, in which a release may wait until the end: every chunk of L
    ever written, and two levels of B)."""
    K = set(kept)
    N, u, g = st.N, st.u, st.g
    if workers is None:  # a release may wait for ever: every chunk of L, two levels of B
        pair = max(N[ell] + N[ell + 1] for ell in range(h)) if h else 1
        return u * ((1 << h) + refwd_chunks(h, kept)) + (u + g) * pair

    def below(ell):
        return sum(N[x] for x in K if x < ell)

    vals = [u]
    for i in range(1, h + 1):
        vals.append(u * below(i - 1) + (u * (N[i - 1] + N[i]) if i - 1 in K else st.P[i]))
    for ell in range(h, -1, -1):
        base = u * (below(ell) + (ell < h))
        if ell not in K:
            j = max(x for x in K if x < ell)
            for i in range(j + 1, ell + 1):
                vals.append(base + (u + g) * N[ell + 1] + (u * N[i] if i == j + 1 else st.P[i]))
        vals.append(base + st.B[ell])
    return max(vals) + _slack(st, workers)


def choose_kept(st: LatticeSteps, limit: float, workers: int = 1,
                least: bool = False) -> tuple[tuple[int, ...], int, int] | None:
    """The kept levels of least recomputation (`refwd_chunks`) whose `budget_peak` is at
    most ``limit`` bytes (ties: the lower peak), or with ``least`` those of the lowest
    peak (ties: less recomputation); (kept, peak, chunks computed again), or None if none
    fits; ``workers`` tasks at a time in the plan's order (a cluster's any order gains
    nothing from a budget: `budget_peak`). Exact: dynamic programming over the kept
    levels, ascending, keeping at each the sets no other beats in (size of the kept
    levels below, work, peak so far)."""
    h, N, u, g, P = st.h, st.N, st.u, st.g, st.P
    slack = _slack(st, workers)
    if h == 0:
        peak = budget_peak(0, (0,), st, workers)
        return ((0,), peak, 0) if peak <= limit else None
    # every phase from kept level j to the next kept level j2 holds u·S + M[j][j2] bytes
    # at most (S: the kept levels' chunks below j), and computes W[j][j2] chunks again
    M = [[0] * (h + 1) for _ in range(h + 1)]
    Wk = [[0] * (h + 1) for _ in range(h + 1)]
    for j in range(h):
        for j2 in range(j + 1, h + 1):
            vals = [u * (N[j] + N[j + 1])] + [u * N[j] + P[i] for i in range(j + 2, j2 + 1)]
            work = 0
            for ell in range(j + 1, j2):
                base = u * (N[j] + 1)
                chain = max([u * N[j + 1]] + [P[i] for i in range(j + 2, ell + 1)])
                vals += [base + (u + g) * N[ell + 1] + chain, base + st.B[ell]]
                work += sum(N[j + 1:ell + 1])
            vals.append(u * (N[j] + (j2 < h)) + st.B[j2])
            M[j][j2], Wk[j][j2] = max(vals) + slack, work
    # states at kept level j: (sum of the kept levels below j, work, peak, kept levels),
    # none beaten by another in all three
    first = max(u, u * 1 + st.B[0]) + slack
    states: dict[int, list] = {0: [(0, 0, first, (0,))]} if first <= limit else {}
    # past h = 14 the fronts grow large: beaten in (S, the objective) alone is enough for
    # the objective, and the other only breaks ties among what is left
    x, y = (1, 2) if h <= 14 else (2, 2) if least else (1, 1)
    for j in range(h):
        for S, W, peak, kept in states.get(j, ()):
            for j2 in range(j + 1, h + 1):
                p2 = max(peak, u * S + M[j][j2])
                if p2 > limit:
                    continue
                new = (S + N[j], W + Wk[j][j2], p2, kept + (j2,))
                front = states.setdefault(j2, [])
                s0, s1, s2 = new[0], new[x], new[y]
                if any(a[0] <= s0 and a[x] <= s1 and a[y] <= s2 for a in front):
                    continue
                front[:] = [a for a in front if not (s0 <= a[0] and s1 <= a[x] and s2 <= a[y])]
                front.append(new)
    done = states.get(h, [])
    if not done:
        return None
    S, W, peak, kept = min(done, key=lambda a: (a[2], a[1]) if least else (a[1], a[2]))
    return kept, peak, W


# Past 2^16 chunks (n = 36 with chunks of 2^20) choosing the kept levels exactly takes
# seconds to minutes; such runs (512 GiB of L and more) are refused a disk budget.
BUDGET_MAX_CHUNK_LEVELS = 16


DISK_MARGIN = 1.05
"""A run starts only where the free disk is this many times its planned peak (the plan
counts the tables' chunk files in file-system blocks, and their metadata, folders and the
journal, `Plan.metadata_bytes`; the margin is for what it does not know: another file
system's folders, the results' CSVs): `bigbn run` and `bigbn plan --workdir` both judge
free disk by it."""


def _blocks(size: int, block: int) -> int:
    """Bytes of the whole blocks a file of ``size`` bytes occupies."""
    return -(-size // block) * block


def _folder_bytes(entries: int, name_chars: int, block: int) -> int:
    """Bytes a folder of ``entries`` names of up to ``name_chars`` characters occupies, as
    ext4 lays it out: 8 bytes and the name, rounded up to 4, per name (and "." and ".."),
    in one block while they fit; past one, a hashed tree whose leaf blocks are about 0.7
    full, and its root. (Measured 2^8..2^16 names of chunk ids: 1, 3, 5, 9, 18, 77, 349
    blocks; this gives 1, 4, 6, 10, 19, 93, 367.) A folder never shrinks on deletion."""
    if block <= 1:
        return 0
    used = 24 + entries * (8 + -(-name_chars // 4) * 4)
    return block if used <= block else (math.ceil(used / (0.7 * block)) + 1) * block


def fs_block(path) -> int:
    """The block of the file system that holds ``path`` (its nearest existing folder):
    ``os.statvfs``'s f_frsize, or `BLOCK` where that is not known or not an allocation
    unit (above `MAX_BLOCK`: an NFS mount's wsize)."""
    import os
    from pathlib import Path

    try:
        where = Path(path).absolute()
        while not where.exists() and where != where.parent:
            where = where.parent
        got = os.statvfs(where).f_frsize
    except (OSError, AttributeError, ValueError):
        return BLOCK
    return int(got) if isinstance(got, int) and 0 < got <= MAX_BLOCK else BLOCK


def fits_free_disk(need: float, free: float) -> bool:
    """Whether ``need`` bytes of planned peak fit ``free`` bytes with the margin."""
    return need * DISK_MARGIN <= free


def free_disk_budget(free: float) -> int:
    """The largest planned peak that ``free`` bytes hold with the margin: the budget of a
    run that does not fit the free disk as planned."""
    return int(free / DISK_MARGIN)


def fit_disk(plan: Plan, budget: int | None, workers: int | None = 1, block: int = BLOCK) -> Plan:
    """The fastest plan whose disk fits ``budget`` bytes (None: no budget, ``plan`` as it
    is): ``plan`` itself (L kept whole) if it fits, else the kept levels of least
    recomputation (`choose_kept`). A budget no plan fits is an OptionError naming the
    least that does (`least_disk`); so is one below a MAP-only plan's disk, which no
    budget changes (it was ignored, the run taking its 9·2^n bytes)."""
    if budget is None:
        return plan
    whole = dataclasses.replace(plan, kept=None)
    if sum(whole.disk_bytes(workers, block).values()) <= budget:
        return whole
    if not plan.posterior:
        raise OptionError(f"disk budget of {_size(budget)} is too small for n = {plan.n} (chunk bits {plan.c}): "
                          f"a MAP-only run needs {_size(least_disk(whole, workers, block), up=True)} (a budget trades "
                          "the posterior's tables for time, not the MAP network's)")
    if workers is None:
        raise OptionError(f"disk budget of {_size(budget)}: a dask cluster may start tasks in any order, so "
                          f"no plan is sure to take less than the {_size(least_disk(whole, None, block), up=True)} "
                          "of the plan without a budget (a run on a cluster under a budget keeps --workers tasks in "
                          "flight in the plan's order, and is planned for them)")
    if plan.h > BUDGET_MAX_CHUNK_LEVELS:
        raise OptionError(f"a disk budget needs at most 2^{BUDGET_MAX_CHUNK_LEVELS} chunks; n = {plan.n} with "
                          f"chunk bits {plan.c} has 2^{plan.h}: give --chunk-bits {plan.n - BUDGET_MAX_CHUNK_LEVELS}")
    pick = choose_kept(whole.steps(block), budget - _other_disk(whole, workers, block), workers)
    if pick is None:
        raise OptionError(f"disk budget of {_size(budget)} is too small for n = {plan.n} (chunk bits "
                          f"{plan.c}{'' if workers is not None else ', a dask cluster'}): "
                          f"the least any plan needs is {_size(least_disk(whole, workers, block), up=True)}")
    return dataclasses.replace(plan, kept=pick[0])


def workers_within(plan: Plan, budget: int, workers: int, block: int = BLOCK) -> int:
    """The most tasks at a time, ``workers`` at most, started in the plan's order, whose
    peak disk (`Plan.disk_bytes`) fits ``budget`` bytes; 0 where one at a time does not.
    A resumed run keeps its plan (its kept levels), so under a budget its one freedom is
    how many tasks it keeps in flight: more workers keep more chunks alive (the slack of
    `budget_peak`, `live_chunks`), and the peak only grows with them."""
    def fits(w: int) -> bool:
        return sum(plan.disk_bytes(w, block).values()) <= budget

    if workers < 1 or not fits(1):
        return 0
    lo, hi = 1, workers  # fits(lo); the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def disk_trade(plan: Plan, workers: int | None = 1, rows: int = 8, block: int = BLOCK) -> list[Plan]:
    """The plans worth choosing between under a disk budget, fastest first: L kept whole,
    then L deleted after its backward reader (no level computed again), then the plans of
    least recomputation at lower and lower peaks, down to the least peak (at most
    ``rows``, evenly spread over the peaks)."""
    whole = dataclasses.replace(plan, kept=None)
    out, limit = [whole], sum(whole.disk_bytes(workers, block).values()) - 1
    other, steps = _other_disk(whole, workers, block), whole.steps(block)
    if plan.h > BUDGET_MAX_CHUNK_LEVELS or not plan.posterior or workers is None:
        return out
    least = least_disk(whole, workers, block)
    frontier = []
    if plan.h > 14:  # every plan of the frontier, one choose_kept each, took 30 s at h = 16: limits spread evenly
        for i in range(rows - 1):
            pick = choose_kept(steps, limit - round(i * (limit - least) / (rows - 2)) - other, workers)
            if pick is not None and all(q.kept != pick[0] for q in frontier):
                frontier.append(dataclasses.replace(plan, kept=pick[0]))
        return out + frontier
    while limit >= least:
        pick = choose_kept(steps, limit - other, workers)
        if pick is None:
            break
        frontier.append(dataclasses.replace(plan, kept=pick[0]))
        limit = other + pick[1] - 1
    if len(frontier) > rows - 1:
        idx = sorted({round(i * (len(frontier) - 1) / (rows - 2)) for i in range(rows - 1)})
        frontier = [frontier[i] for i in idx]
    return out + frontier


def _other_disk(plan: Plan, workers: int | None, block: int = BLOCK) -> int:
    """Bytes of the tables a disk budget leaves as they are (β, the γ level sums, α, MAP,
    the metadata), in any plan under a budget (`Plan.metadata_bytes`)."""
    if plan.posterior:
        plan = dataclasses.replace(plan, kept=(0, plan.h) if plan.h else (0,))
    return sum(plan._disk_bytes(workers, block, lattice=False).values())


def least_disk(plan: Plan, workers: int | None = 1, block: int = BLOCK) -> int:
    """The least peak disk (bytes) of any plan of ``plan``'s lattice: L kept whole, or
    kept levels chosen for the least peak (with tiny chunks, the γ parts and the chunks
    in flight can make the plan without a budget the least)."""
    whole = dataclasses.replace(plan, kept=None)
    total = sum(whole.disk_bytes(workers, block).values())
    if plan.h > BUDGET_MAX_CHUNK_LEVELS or not plan.posterior or workers is None:
        return total
    pick = choose_kept(whole.steps(block), math.inf, workers, least=True)
    return min(total, _other_disk(whole, workers, block) + pick[1])


def ordered_workers(scheduler, workers: int) -> int | None:
    """Tasks at once in the plan's order (`Plan.disk_bytes`): one for the sync executor,
    ``workers`` for local threads (bigbn's or dask's threaded scheduler, given the plan's
    order); None for a dask cluster given every ready task, which may start them in
    another order than their priorities (under a disk budget the client gives it
    ``workers`` at a time in the plan's order instead: `bigbn.api.learn`)."""
    if isinstance(scheduler, str) and scheduler in ("sync", "threads", "dask"):
        return 1 if scheduler == "sync" else workers
    return None


def _io_maps(entries) -> tuple[dict, dict]:
    """From (key, reads, writes) of every task: {(table, chunk): writer key} (each chunk
    written once) and {(table, chunk): [reader keys]}."""
    writer: dict[tuple, tuple] = {}
    readers: dict[tuple, list] = {}
    for key, reads, writes in entries:
        for r in writes:
            for cc in r.chunks:
                if (r.table, cc) in writer:
                    raise EngineError(f"chunk {r.table}{cc} written by {writer[r.table, cc]} and {key}")
                writer[r.table, cc] = key
        for r in reads:
            for cc in r.chunks:
                readers.setdefault((r.table, cc), []).append(key)
    return writer, readers


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
    floor = max(min(n, MIN_CHUNK_BITS), n - MAX_CHUNK_LEVEL_BITS)  # (smaller chunks: too many of them)
    best = None
    for c in range(floor, min(n, MAX_DEFAULT_CHUNK_BITS) + 1):
        p = Plan(n, min(k, n - 1), c, alpha_mode)
        if p.task_memory_bytes() * max(workers, 1) <= memory_bytes // 2:
            best = c
    if best is None:
        need = Plan(n, min(k, n - 1), floor, alpha_mode).task_memory_bytes() * max(workers, 1) * 2
        raise OptionError(f"memory budget of {_size(memory_bytes)} is too small for n = {n} with "
                          f"{workers} workers: give --memory at least {_size(need, up=True)} "
                          f"(or --chunk-bits to choose the chunk size yourself)")
    return best


def _size(b: float, up: bool = False) -> str:
    """Bytes as --memory would take them: '512K', '3M', '1.5G' (rounded up if ``up``)."""
    import math

    # T too: 1.2 million G were "1.21242e+06G" (`bigbn plan --n 40 -k 39`), which --memory
    # reads as no size
    for unit, size in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if b >= size:
            x = b / size
            return f"{(math.ceil(x * 10) / 10 if up else round(x, 1)):g}{unit}"
    return f"{math.ceil(b) if up else int(b)}"


def _transform_updates(d: int, k: int) -> int:
    """Log-add-exp updates of one k-truncated transform over d bits: Σ_j 2^j·B(d-j-1, k)."""
    from math import comb

    return sum((1 << j) * sum(comb(d - j - 1, i) for i in range(min(k, d - j - 1) + 1))
               for j in range(d))


# Seconds per elementary operation on one core on the reference machine (2-core Zen 4
# VM): one update of the truncated transforms (α, γ: an addition of plain floats or of
# extended numbers), one term of the forward/backward recursions (a multiply-add or a
# product and an extended add; the task's conversions from and to logs included).
# Relative least-squares fit to the forward and backward task-seconds (I/O and zarr
# overhead included, less the disk terms below) of scripts/bench.py at n = 24, 26, 28
# (k = 3, c = 20, binary data, m = 1000; 2026-11-23, 1-minute load ≤ 0.35 before each
# run): each stage within 11 %. Then scaled by 0.65 (2026-11-24, after α's transform
# began to copy the runs it fills) and by 0.932 (2026-11-24, once the tasks converted
# their neighbour chunks inside the kernels, engine._task_recursion): the least-squares
# common factor (relative) to the forward and backward stage walls of scripts/bench.py
# at n = 24, 28 and 32; `bigbn plan` then says 34.7 s and 10.0 min at n = 28 and 32,
# measured 33.3 s and 9.6 min (forward 1.07 and 1.04 of the measured, backward 1.10 and
# 1.04; n = 24 0.72 and 0.92). Until that change a backward task also cost ≈ 5 ns per
# entry and high node beyond these counts (reading that neighbour's B and converting it
# whole; without a constant for it, SECONDS_PER_HIGH_ENTRY, the plan fell 14, 18 and 23 %
# short at n = 24, 28 and 32); fitted again to the runs above, that constant is 0.
SECONDS_PER_LAE = 4.71e-10
SECONDS_PER_TERM = 2.36e-9
# The MAP stage (max-plus, no exp or log) per update and per term. Measured (2 cores,
# binary data, k = 3): map stage wall 1.65 s, 25.7 s and 550 s at n = 24, 28, 32, which
# need 0.55, 0.46 and 0.58 of the log-domain constants of the first landing (3.1e-9 and
# 9.8e-9), whose 0.53 these are.
SECONDS_PER_MAX_UPDATE = 1.64e-9
SECONDS_PER_MAX_TERM = 5.19e-9
DISK_WRITE_BPS = 0.65e9
# Fixed cost of one task (scheduling, two fsyncs, the journal line), seconds per worker:
# it dominates with tiny chunks (n = 14, c = 4: 3074 tasks took 38 s more than one chunk).
SECONDS_PER_TASK = 0.02
DISK_READ_BPS = 1.6e9
# Starting a run's process: Python's imports (numba, zarr, dask ≈ 1 s) and loading the
# compiled kernels from numba's cache, before the first stage. Measured on this kind of
# machine on 2026-11-26 as a whole `bigbn run` process's wall less its stage walls, at
# n = 24 and 28 (scripts/bench.py): 1.3 s and 1.5 s; at n ≤ 24 it is most of the wall.
SECONDS_START = 1.4
# A tiered run's scores stage (`plan.tiers.tier_scores`) counts every family of every node
# over the rows, on all cores: core-seconds per family and row, binary data, k = 3, from
# its measured wall on 2 cores (docs/benchmarks.md, "Tiers"): 4 × 16 3.1 s (1 034 240
# families), 4 × 25 18 s (6 284 375), 2 × 30 3.0 s (1 151 100), m = 1000: 6.0, 5.7 and
# 5.2 ns. (A run without tiers scores its n·C(n−1, ≤ k) families in well under a second.)
SECONDS_PER_FAMILY_ROW = 5.7e-9


def work_estimate(plan: Plan) -> dict[str, float]:
    """Elementary operations per stage (exact counts from the plan)."""
    n, h, c = plan.n, plan.h, plan.c
    alpha_one = (1 << h) * _transform_updates(c - 1, plan.k)  # one node, all chunks
    alpha = n * alpha_one
    recursion = (1 << n) * (n / 2 + 1)
    gamma_low = c * (1 << h) * _transform_updates(c - 1, plan.k)
    gamma_high = h * (1 << max(h - 1, 0)) * _transform_updates(c, plan.k) if h else 0
    out = {}
    if plan.posterior:
        out.update({"forward": recursion, "backward": recursion, "gamma": gamma_low + gamma_high})
        if plan.alpha_mode == "store":
            out["alpha"] = alpha
        else:  # rebuilt inside forward and backward
            out["forward_alpha"] = alpha
            out["backward_alpha"] = alpha
    if plan.map_dag:  # max for log-add-exp; the best-parent tables always rebuilt
        out["map"] = recursion
        out["map_alpha"] = alpha
    return out


def time_estimate(plan: Plan, workers: int, factors: dict[str, float] | None = None) -> dict[str, float]:
    """Rough wall seconds per stage on `workers` cores of the reference machine; with
    ``factors`` (per stage, this machine's wall over the reference machine's:
    `bigbn.tools.calibrate`), on this one."""
    w = work_estimate(plan)
    lae = SECONDS_PER_LAE / max(workers, 1)
    term = SECONDS_PER_TERM / max(workers, 1)
    disk = plan.disk_bytes()
    per_task = SECONDS_PER_TASK / max(workers, 1)
    out = {}
    if plan.posterior:
        table = BYTES << plan.n  # all of L, and all of B over the run
        parts = BYTES * plan.n_chunks * plan.n * plan.n_families
        out = {
            "forward": w["forward"] * term + w.get("forward_alpha", 0) * lae + table / DISK_WRITE_BPS
                       + plan.n_chunks * per_task,
            # backward tasks compute their chunk's part of γ too, reading L and B(H + b) again
            "backward": w["backward"] * term + w.get("backward_alpha", 0) * lae + w["gamma"] * lae
                        + table / DISK_WRITE_BPS + 2 * table / DISK_READ_BPS + plan.n_chunks * per_task,
            "gamma": parts / DISK_READ_BPS + (plan.h + 1) * per_task,  # the level sums
        }
    if "map" in w:
        out["map"] = ((w["map"] * SECONDS_PER_MAX_TERM + w["map_alpha"] * SECONDS_PER_MAX_UPDATE) / max(workers, 1)
                      + disk["map"] / DISK_WRITE_BPS
                      + plan.n_chunks * per_task)
    if plan.posterior and plan.kept is not None:  # rounds: forward tasks again, chunk for chunk
        out["reforward"] = out["forward"] * plan.refwd_chunks() / plan.n_chunks
    if "alpha" in w:
        out["alpha"] = w["alpha"] * lae + disk["alpha"] / DISK_WRITE_BPS
        out["forward"] += disk["alpha"] / DISK_READ_BPS
        out["backward"] += disk["alpha"] / DISK_READ_BPS
    out["start"] = SECONDS_START
    if factors is not None:
        out = {s: t * factors[s] for s, t in out.items()}
    return out
