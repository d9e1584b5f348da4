"""Exact i.i.d. DAG samples from a finished run, and features estimated from them.

``sample(workdir, samples=T, seed=S, prior=...)`` reads the tables a finished `bigbn run`
leaves (β, the forward sums L and the exact edge posteriors) and draws T DAGs from the
exact posterior of the order-modular model in one descending sweep over the chunks of L
per batch of samples (`bigbn/kernels/sampling.py`): no MCMC, no burn-in, no mixing. Each batch is a
journaled task run through the executors (bigbn/outputs/tasks.py), so a killed draw resumes.

Priors:
- ``"order-modular"`` (the run's model): p(G | x) ∝ #LE(G) Π_i β_i(G_i); the samples have
  equal weights 1/T.
- ``"dag-modular"`` (uniform over DAGs given the same ρ_i): p(G | x) ∝ Π_i β_i(G_i). Each
  sample is reweighted by 1/#LE(G) (importance sampling, self-normalised); the effective
  sample size and standard errors say what that costs.

Features (edges, ancestor relations, Markov-blanket membership) are weighted means of
0/1 indicators; standard errors by the delta method for self-normalised weights,
se² = Σ_t w_t² (f_t − p̂)², which is p̂(1 − p̂)/T for equal weights. Distinct DAGs are
listed with their exact posterior under the order-modular prior,
#LE(G) Π_i β_i(G_i) / L(V), and under the DAG-modular prior with Π_i β_i(G_i) / Z where
Z = L(V) E[1/#LE] is estimated from the same samples (its relative standard error is
reported).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bigbn import options as opt
from bigbn.kernels import sampling as SK
from bigbn.engine.tasks import Job, computed_alpha
from bigbn.errors import EngineError, OptionError, WorkdirError
from bigbn.kernels.families import family_rank, squeeze
from bigbn.kernels.linext import log_linear_extensions
from bigbn.io.data import csv_field, csv_line
from bigbn.outputs.result import run_workdir
from bigbn.engine.progress import reporter
from bigbn.store.rundir import FinishedLattice, FinishedRun, finished_run, gib
from bigbn.store.workdir import Workdir, check_outputs, write_whole
from bigbn.outputs.tasks import PartSpec, run_parts, threads_per_task
from bigbn.engine.runner import peak_rss_bytes

PRIORS = ("order-modular", "dag-modular")
# A draw is rejected only when rounding puts its uniform beyond the computed total
# (probability ~1e-12); this many rejections of one sample mean inconsistent tables.
MAX_ATTEMPTS = 20


@dataclass
class Samples:
    """T DAGs drawn i.i.d. from the exact order-modular posterior, with weights for a prior.

    names: the n variable names (data column order); parents: int64 (T, n), bit u of
    parents[t, v] set ⟺ u → v in sample t (past 63 variables, a run with tiers: int64
    (T, n, W), u → v ⟺ bit u % 63 of parents[t, v, u // 63]: `sampling.as_words`);
    weights: float64 (T,), summing to 1 (equal for
    the order-modular prior, ∝ 1/#LE(G) for the DAG-modular one); prior; seed;
    log_linear_extensions: float64 (T,) log #LE of each sample; log_score: float64 (T,)
    Σ_i β_i(G_i) of each sample and log_marginal: log L(V) of the run, both less
    log_offset, the constant the run took off its scores (bigbn/scores/offsets.py; 0 unless a
    score was beyond ±2^20), which the outputs add back; orders: int64 (T, n), the node
    order drawn with each DAG (orders[t, 0] first). info["log_z_dag_modular"] is less
    log_offset too.
    """

    names: tuple[str, ...]
    parents: np.ndarray
    weights: np.ndarray
    prior: str
    seed: int
    log_linear_extensions: np.ndarray = field(repr=False)
    log_score: np.ndarray = field(repr=False)
    log_marginal: float = 0.0
    orders: np.ndarray = field(default=None, repr=False)
    exact_edges: np.ndarray | None = field(default=None, repr=False)
    info: dict = field(default_factory=dict)
    log_offset: float = 0.0

    @property
    def n(self) -> int:
        return len(self.names)

    def __len__(self) -> int:
        return self.parents.shape[0]

    @property
    def ess(self) -> float:
        """Effective sample size 1 / Σ w_t² (T for equal weights)."""
        return float(1.0 / np.sum(self.weights ** 2))

    def _feature(self, masks: np.ndarray, with_se: bool):
        with_se = opt.flag(with_se, "with_se")  # "no" is truthy: it gave (p, se), not p
        if self.prior == "order-modular":  # equal weights: counts / T, exact to rounding once
            T = len(self)
            counts, _ = SK.weighted_bit_sums(masks, np.ones(T))
            p = counts / T
            return (p, np.sqrt(p * (1.0 - p) / T)) if with_se else p
        s1, s2 = SK.weighted_bit_sums(masks, self.weights)
        p = np.clip(s1, 0.0, 1.0)
        if not with_se:
            return p
        w2 = float(np.sum(self.weights ** 2))
        var = s2 * (1.0 - 2.0 * p) + p * p * w2
        return p, np.sqrt(np.maximum(var, 0.0))

    def edge_probabilities(self, with_se: bool = False):
        """(n, n) [u, v] = estimated p(u → v | x) under the samples' prior (and its standard
        error if with_se)."""
        return self._feature(self.parents, with_se)

    def ancestor_probabilities(self, with_se: bool = False):
        """(n, n) [u, v] = estimated p(u ⇝ v | x): a directed path from u to v."""
        return self._feature(SK.ancestors(self.parents, self._nodes()), with_se)

    def markov_blanket_probabilities(self, with_se: bool = False):
        """(n, n) [u, v] = estimated p(u ∈ MB(v) | x) (parent, child or co-parent); symmetric."""
        return self._feature(SK.markov_blankets(self.parents), with_se)

    def _nodes(self) -> np.ndarray:
        """The node placed at each backward step (orders reversed)."""
        return np.ascontiguousarray(self.orders[:, ::-1])

    def edge_check(self) -> dict:
        """Sampled edge frequencies (equal weights) against the exact edge posteriors of the
        run: the largest |z| = |f̂ − p| / sqrt(p(1 − p)/T) over the edges where the normal
        approximation holds (T p (1 − p) ≥ 10; rarer edges have Poisson tails that make
        large |z| common), and whether every edge of posterior 0 or 1 was sampled as such."""
        if self.exact_edges is None:
            raise OptionError("no exact edge posteriors to compare with")
        T = len(self)
        counts, _ = SK.weighted_bit_sums(self.parents, np.ones(T))
        f = counts / T
        P = self.exact_edges
        np.fill_diagonal(f, 0.0)
        inner = (P > 0) & (P < 1)
        normal = inner & (T * P * (1 - P) >= 10)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(normal, (f - P) / np.sqrt(P * (1 - P) / T), 0.0)
        u, v = np.unravel_index(int(np.argmax(np.abs(z))), z.shape)
        hard = ~inner & ~np.eye(self.n, dtype=bool)
        return {"max_abs_z": float(abs(z[u, v])), "edge": [self.names[u], self.names[v]],
                "frequency": float(f[u, v]), "exact": float(P[u, v]),
                "edges_compared": int(normal.sum()),
                "hard_edges_ok": bool(np.all(counts[hard] == T * P[hard]))}

    def dags(self, top: int | None = None) -> list[dict]:
        """Distinct sampled DAGs, highest estimated probability (sum of weights) first:
        parents (n,) int64, count, estimated
        probability (sum of weights) with its standard error, log #LE, log score, and the
        exact posterior under the order-modular prior; under the DAG-modular prior also the
        posterior Π β / Ẑ with Ẑ estimated from the samples."""
        t = self._dag_table(opt.top(top))
        out = []
        for j in range(len(t["count"])):
            rec = {"parents": t["parents"][j].copy(), "count": int(t["count"][j]),
                   "probability": float(t["probability"][j]), "se": float(t["se"][j]),
                   "log_linear_extensions": float(t["log_linear_extensions"][j]),
                   "log_score": float(t["log_score"][j]), "exact_order_modular": t["exact_order_modular"][j]}
            if "estimated_dag_modular" in t:
                rec["estimated_dag_modular"] = t["estimated_dag_modular"][j]
            out.append(rec)
        return out

    def _dag_table(self, top: int | None = None) -> dict:
        """`dags` as columns: arrays (the parents (D, ...), count, probability, se, log #LE,
        log score) and lists of floats (the posteriors, each by math.exp as `dags` gives
        them), in the order of `dags`."""
        idx, inv, counts = _unique_rows(self.parents)
        uniq = self.parents[idx]
        wsum = np.bincount(inv, weights=self.weights, minlength=len(uniq))
        if self.prior == "order-modular":  # equal weights: counts / T, exact to one rounding
            wsum = counts / len(inv)
        w2 = float(np.sum(self.weights ** 2))
        w2sum = np.bincount(inv, weights=self.weights ** 2, minlength=len(uniq))
        first = np.full(len(uniq), len(inv))
        np.minimum.at(first, inv, np.arange(len(inv)))
        order = np.lexsort((first, -wsum))
        if top is not None:
            order = order[:top]
        p = wsum[order]
        lle = self.log_linear_extensions[first[order]]
        lsc = self.log_score[first[order]]
        out = {"parents": uniq[order], "count": counts[order], "probability": p,
               "se": np.sqrt(np.maximum(w2sum[order] * (1 - 2 * p) + p * p * w2, 0.0)),
               "log_linear_extensions": lle, "log_score": lsc + self.log_offset,
               # ≤ 1 exactly; the exponent carries about an ulp of |log p(x)| (1.9e-9 past 8e6:
               # a DAG holding nearly all the mass read 1.0000000018626451)
               "exact_order_modular": [min(math.exp(x), 1.0) for x in (lle + lsc - self.log_marginal).tolist()]}
        log_z_dag = self.info.get("log_z_dag_modular")
        if log_z_dag is not None:
            out["estimated_dag_modular"] = [math.exp(x) for x in (lsc - log_z_dag).tolist()]
        return out

    def to_pandas(self):
        """A pandas DataFrame with one row per ordered pair (u, v), u ≠ v: columns u, v,
        edge, edge_se (u → v), ancestor, ancestor_se (u ⇝ v), markov_blanket,
        markov_blanket_se (u ∈ MB(v)), estimated under the samples' prior."""
        from bigbn.io.frames import to_frame

        n = self.n
        pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
        cols = {"u": [self.names[u] for u, _ in pairs], "v": [self.names[v] for _, v in pairs]}
        for name, (p, se) in (("edge", self.edge_probabilities(True)),
                              ("ancestor", self.ancestor_probabilities(True)),
                              ("markov_blanket", self.markov_blanket_probabilities(True))):
            cols[name] = [float(p[u, v]) for u, v in pairs]
            cols[name + "_se"] = [float(se[u, v]) for u, v in pairs]
        return to_frame(cols)

    def to_networkx(self, t: int = 0):
        """Sample t as a networkx DiGraph (every variable a node)."""
        from bigbn.io.frames import arcs_digraph

        j = opt._integer(t, "t")  # 1.5, '0' or 5 of 5 samples were numpy's IndexError
        if not 0 <= j < len(self.parents):
            raise OptionError(f"sample t = {t!r} is not one of 0..{len(self.parents) - 1}")
        return arcs_digraph(self.names, self.arcs(self.parents[j]), "to_networkx()")

    def arcs(self, parents_row) -> list[tuple[str, str]]:
        """The arcs (parent name, child name) of one DAG given as a parents row."""
        from bigbn.io.frames import arcs

        return arcs(self.names, _as_ints(parents_row))


# ------------------------------------------------------------------------------ sampling

def _sweep(run: FinishedLattice, job: Job, T: int, seed: int, first: int,
           pool: ThreadPoolExecutor, threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Draw T (order, predecessor sets), the samples first .. first + T − 1, by the
    descending chunk sweep; rejected draws (rounding) are drawn again. Each forward chunk
    is checked against its journal record as it is read (`FinishedLattice.chunk`); α is
    computed at the sets the samples visit only, memoised (`sampling.point_alpha`), where
    `sampling.point_alpha_pays`, else per visited chunk on ``pool``'s threads as the
    forward task does (large k, or many samples on a small lattice). Either way from β
    (checked against the journal's CRC), never read from a stored α table (``--alpha
    store``), which a reader cannot check (its CRCs are per task, over whole spans) and
    whose damage gave other samples without a word; the alpha task writes that table with
    the same kernel (`computed_alpha`), so an intact one gives the same samples, bit for bit. The samples are
    walked in ``threads`` contiguous ranges side by side on ``pool`` (the kernels release
    the GIL; with point α each range has its own memo, `sampling.own_memo`): a sample's
    steps depend on its own random numbers and on values that are functions of its sets
    alone, so the split never changes a sample. Returns (nodes, preds, alphas (log α of
    each placed node at its set before it: the parents' draw's totals), attempt, chunks
    read)."""
    p, wd = job.plan, job.workdir
    n, c = p.n, p.c
    top = p.n_chunks - 1
    cur = np.full(T, (1 << n) - 1, dtype=np.int64)
    step = np.zeros(T, dtype=np.int64)
    attempt = np.zeros(T, dtype=np.int64)
    status = np.full(T, SK.ACTIVE, dtype=np.int8)
    key = np.full(T, top, dtype=np.int64)
    pu, pcum, plog = np.zeros(T), np.zeros(T), np.zeros(T)
    pbit = np.zeros(T, dtype=np.int64)
    point = SK.point_alpha_pays(n, p.k, T)
    nodes = np.zeros((T, n), dtype=np.int64)
    preds = np.zeros((T, n), dtype=np.int64)
    alphas = np.zeros((T, n))
    ranges = _walk_ranges(T, threads)
    if point:
        pa = SK.point_alpha(job.beta, p.families, p.k, SK.memo_slots((ranges[0][1] - ranges[0][0]) * n))
        memos = [pa] + [SK.own_memo(pa, pa[6].size) for _ in ranges[1:]]

    def views(r, walk=False):
        """The state of samples a .. b − 1, the range r, as the kernels take it (views: they
        write through them): `sampling.advance_pending`'s arguments, or with ``walk``
        `sampling.walk_chunk`'s (the attempts after step)."""
        a, b = r
        head = (cur[a:b], step[a:b], attempt[a:b]) if walk else (cur[a:b], step[a:b])
        return head + (status[a:b], key[a:b], pu[a:b], pcum[a:b], plog[a:b], pbit[a:b], nodes[a:b], preds[a:b],
                       alphas[a:b])

    def each(fn):
        """fn(range index, (a, b)) for every range, on pool's threads if more than one."""
        if len(ranges) == 1:
            fn(0, ranges[0])
        else:
            list(pool.map(lambda j: fn(j, ranges[j]), range(len(ranges))))

    ahead = _ReadAhead(run)
    try:
        while True:
            H = int(key.max())
            if H < 0:
                rej = status == SK.REJECTED
                if not rej.any():
                    break
                if attempt[rej].max() >= MAX_ATTEMPTS - 1:
                    raise EngineError(f"{wd.root}: a sample was rejected {MAX_ATTEMPTS} times in a row; "
                                      "the tables are inconsistent (L(S) is not the sum of its terms)")
                cur[rej] = (1 << n) - 1
                step[rej] = 0
                attempt[rej] += 1
                status[rej] = SK.ACTIVE
                key[rej] = top
                continue
            L = None  # the chunk walked last is not kept while the next is read
            L = ahead.take(H)  # CRC-checked: costs no extra read
            waiting = (status == SK.PENDING) & (key == H)
            bits = np.unique(pbit[waiting]).tolist()
            if point:
                def pending(j, r):
                    for b in bits:
                        SK.advance_pending(H, b, c, L, memos[j], *views(r))
                if bits:
                    each(pending)
            else:
                spans = list(pool.map(lambda b: computed_alpha(job, c + b, 2 * squeeze(H, b), 2), bits))
                for b, span in zip(bits, spans):
                    SK.advance_pending_tables(H, b, c, L, span, cur, step, status, key, pu, pcum, plog, pbit,
                                              nodes, preds, alphas)
            # the next chunk, unless a sample the walk leaves waiting goes to H − 2^(lowest bit), above it
            below = key[key < H]
            ahead.start(max(int(below.max()) if below.size else -1, H - (H & -H) if H else -1))
            if np.any((status == SK.ACTIVE) & (key == H)):
                if point:
                    each(lambda j, r: SK.walk_chunk(H, c, L, memos[j], seed, first + r[0], *views(r, walk=True)))
                else:
                    low = np.empty((c, p.alpha_chunk_size))
                    list(pool.map(lambda i: low.__setitem__(i, computed_alpha(job, i, H, 1)), range(c)))
                    each(lambda j, r: SK.walk_chunk_tables(H, c, L, low, seed, first + r[0],
                                                           *views(r, walk=True)))
    finally:
        ahead.close()
    return nodes, preds, alphas, attempt, ahead.reads


class _ReadAhead:
    """The sweep's chunks of L, each read (and CRC-checked, `FinishedLattice.chunk`) on a
    thread of its own while the sweep walks the chunk before it: the next chunk is the
    largest key of the samples once the chunk is walked, so the guess, made when the samples
    waiting for the chunk have been offered its high nodes, is the largest key below it or
    the chunk a sample the walk leaves waiting goes to first, whichever is larger. A wrong guess costs one
    read; the chunk is then read when it is needed. After a run the chunks of L are no
    longer in the page cache (the backward pass dropped them), so at n = 28 the reads are
    most of the sweep. At most two chunks are held: the one walked is released before the
    next is taken, and a wrong guess's before the needed chunk is read. reads: the chunks
    walked (a wrong guess's read is not counted)."""

    def __init__(self, run: FinishedLattice):
        self.run = run
        self.reads = 0
        self.pending: tuple[int, object] | None = None
        self.pool = None

    def start(self, H: int) -> None:
        if H < 0:
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=1)
        self.pending = (H, self.pool.submit(self.run.chunk, "forward", H))

    def take(self, H: int) -> np.ndarray:
        self.reads += 1
        if self.pending is not None and self.pending[0] == H:
            future, self.pending = self.pending[1], None
            return future.result()
        self._drop()
        return self.run.chunk("forward", H)

    def _drop(self) -> None:
        """Forget the chunk read ahead (waiting for its read: none is left running, and its
        array is freed before another is read; an error of its read is not raised)."""
        if self.pending is not None:
            future, self.pending = self.pending[1], None
            future.cancel() or future.exception()
            del future

    def close(self) -> None:
        self._drop()
        if self.pool is not None:
            self.pool.shutdown()


#: Fewest samples a sweep splits over threads: below, a thread's share is not worth its start.
MIN_SPLIT = 1_000


def _walk_ranges(T: int, threads: int) -> list[tuple[int, int]]:
    """The ranges of samples `_sweep` walks side by side: one per thread, from MIN_SPLIT samples."""
    return _split(T, threads if T >= MIN_SPLIT else 1)


def sample_memory_bytes(n: int, T: int) -> int:
    """Memory that T samples of n variables hold, at most: the sweep's per-sample state (8
    int64/float64 arrays and the (T, n) orders, predecessor sets and their α), the parents
    (T, n, W words), their sorted copies for the distinct DAGs, the orders returned, and the
    per-sample scores, weights and linear-extension counts."""
    return T * (8 * 8 + 1 + 8 * n * (5 + 2 * SK.n_words(n)) + 8 * 10)


def sweep_memory_bytes(n: int, k: int, c: int, T: int, threads: int = 1) -> int:
    """Memory one batch of T samples holds besides their own state while it sweeps a
    lattice of n nodes in chunks of 2^c (`_sweep`), at most: the forward chunk it walks and
    the one it reads ahead (`_ReadAhead`), and α, either at the visited sets
    (`sampling.point_alpha_pays`: the weights of the C(n, ≤ k) families of every node and,
    per thread, a memo of `sampling.memo_slots` sets of n values with its keys) or per
    visited chunk (the c low nodes' rows, the 2-chunk spans of up to
    n − c high nodes and, per thread, the exponents `_alpha_chunks` builds them with), and
    `SWEEP_OVERHEAD`."""
    chunk = 8 << c
    if SK.point_alpha_pays(n, k, T):
        families = sum(math.comb(n, j) for j in range(min(k, n) + 1))
        ranges = _walk_ranges(T, threads)
        slots = SK.memo_slots((ranges[0][1] - ranges[0][0]) * n)
        memo = 8 * (2 * slots + SK.memo_rows(slots) * n + families)  # keys, rows, values, ranks
        return SWEEP_OVERHEAD + 2 * chunk + 8 * families * (n + 1) + len(ranges) * memo
    return SWEEP_OVERHEAD + 2 * chunk + c * chunk // 2 + (n - c) * chunk + threads * chunk


#: what a batch allocates besides its arrays counted above (small arrays, Python objects:
#: 0.2–0.5 MB measured by tracemalloc at n = 12, T = 50)
SWEEP_OVERHEAD = 1 << 20


#: Samples per task by default: a task sweeps the forward tables once for its samples, so
#: fewer, larger batches read less; more, smaller ones resume at a finer grain.
BATCH = 50_000
#: the version of the draws' folder layout and of what a batch part holds (2: log #LE
#: counted on the side of each DAG with fewer extremal nodes, which can differ from 1's in
#: the last bits past 2^53 orders; a part of 1 is drawn again, not mixed in; 3: a parent
#: set drawn against the sweep's α as its total, which can pick another family than 2's
#: within a few ulps of a boundary; 4: α always from the run's β, never from an --alpha store
#: table (the same bits for an intact one), so parts drawn from a damaged table are dropped)
DRAWS_FORMAT = 4


def sample(workdir, samples: int = 10_000, *, seed: int = 0, prior: str = "order-modular",
           workers: int | None = None, memory: int | str | None = None, progress=None,
           scheduler="threads", batch: int = BATCH) -> Samples:
    """T DAGs drawn i.i.d. from the exact posterior of a finished run in ``workdir`` (a path,
    or the `Result` of learn(..., workdir=...)).

    prior: "order-modular" (the run's model; equal weights) or "dag-modular" (each sample
    weighted ∝ 1/#LE(G): the posterior under a prior uniform over DAGs, given the same
    ρ_i). The same seed gives the same samples whatever the chunk bits, workers,
    scheduler or batch size, and whether the draw was killed and resumed: sample t's
    random numbers depend on (seed, t) only.
    With tiers (a run with ``tiers=``), each tier's order and within-tier parents are drawn
    from its own lattice and each node's parents in earlier tiers given those (the tiers
    are independent given the data); #LE counts the tier-consistent orders only, so
    "dag-modular" is the prior uniform over the DAGs with no edge into an earlier tier.
    memory: the budget (bytes or text such as "4G"; default RAM/4, at most 8 GiB) that the
    T samples must fit in, checked before anything is allocated (as is the machine's RAM,
    whatever the budget).
    scheduler: as for `learn` (threads, sync, processes, tcp://HOST:PORT or a
    distributed.Client); workers: its threads or processes. batch: samples per task. The
    samples are drawn in batches, each a task that writes its draws to
    WORKDIR/samples-seedS-KEY/parts/ and is journaled there, so a killed draw resumes
    where it stopped when called again (with any T: batches already drawn are reused);
    draws folders an earlier bigbn left (another KEY: no call can use them) are removed.
    progress: a `bigbn.engine.progress.Listener` or a callable(stage, done, total), as for
    `learn`: ("sample", batches done, batches) after each batch (with tiers too).
    """
    progress = reporter(progress)  # tick(stage, done, total): one ProgressEvent
    if prior not in PRIORS:
        raise OptionError(f"unknown prior '{prior}' (choose one of: {', '.join(PRIORS)})")
    T = opt.samples(samples)
    seed = opt.seed(seed)
    workers = opt.workers(workers)
    memory = opt.memory(memory)
    scheduler = opt.scheduler(scheduler)
    batch = opt.samples(batch, "batch")
    t0 = time.perf_counter()
    run = finished_run(run_workdir(workdir, "sample"), then="sample")
    n = len(run.names)
    batches = -(-T // batch)  # the tasks are listed once the budget is known to hold them
    threads = threads_per_task(scheduler, workers, batches)
    need = sample_memory_bytes(n, T) + min(workers, batches) * max(
        [sweep_memory_bytes(lat.plan.n, lat.plan.k, lat.plan.c, min(T, batch), threads)
         for lat in (tier.lattice for tier in run.tiers) if lat is not None] or [0])
    if need > memory:
        raise OptionError(f"{T} samples of {n} variables need about {gib(need)} of memory, more "
                          f"than the budget of {gib(memory)}; draw fewer (--samples) or give a "
                          "larger --memory")
    machine = opt.machine_memory()
    if need > machine:  # a --memory past the machine's drew every batch, then died gathering them
        raise OptionError(f"{T} samples of {n} variables need about {gib(need)} of memory, more "
                          f"than this machine's {gib(machine)}; draw fewer (--samples)")
    specs = batch_specs(T, batch)
    with run.workdir.lock() as owner:
        folder = draws_folder(run, seed)
        for stale in stale_draws(folder):
            shutil.rmtree(stale, ignore_errors=True)
        recs, parts = run_parts(folder, specs, BatchTask(run, seed, threads), owner=owner,
                                scheduler=scheduler, workers=workers, progress=progress, stage="sample")
        log_px = run.log_px
        exact = run.posterior()
    d = _gather([recs[s.id] for s in specs], [parts[s.id] for s in specs])
    lle = d.lle
    info = {"samples": T, "seed": seed, "prior": prior, "chunks_read": d.reads,
            "chunks": d.chunks, "redrawn_for_rounding": d.redrawn,
            "distinct_dags": int(len(_unique_rows(d.parents)[0])),
            "batches": len(specs),
            "seconds": {"sweep": round(d.sweep_seconds, 3),
                        "parents": round(d.parents_seconds, 3),
                        "linear_extensions": round(d.le_seconds, 3)}}
    if run.tiered:
        info["tiers"] = [[run.names[v] for v in lay.nodes] for lay in run.lays]
    if prior == "order-modular":
        weights = np.full(T, 1.0 / T)
    else:
        r = -lle - np.max(-lle)
        weights = np.exp(r) / np.sum(np.exp(r))
    # Z_dag / L(V) = E_order-modular[1/#LE]; estimated with its relative standard error.
    shift = float(np.max(-lle))
    inv_le = np.exp(-lle - shift)
    mean = float(np.mean(inv_le))
    info["log_z_dag_modular"] = log_px + math.log(mean) + shift
    info["log_z_dag_modular_rel_se"] = float(np.std(inv_le) / mean / math.sqrt(T)) if T > 1 else None
    out = Samples(run.names, d.parents, weights, prior, seed, lle, d.log_score, log_px,
                  d.orders, exact, info, run.log_offset)
    info["ess"] = out.ess
    info["edge_check"] = out.edge_check()
    info["seconds"]["total"] = round(time.perf_counter() - t0, 3)
    info["peak_rss_bytes"] = peak_rss_bytes()
    return out


def batch_specs(T: int, batch: int) -> list[PartSpec]:
    """The tasks of T samples in batches of ``batch``: ("batch", "START-END", (START, END))."""
    return [PartSpec("batch", f"{a}-{min(a + batch, T)}", (a, min(a + batch, T))) for a in range(0, T, batch)]


def draws_key(run: FinishedRun) -> str:
    """What the draws of a seed depend on, hashed: the tables they read (β of every tier
    and the CRCs of the forward chunks, as journaled) and the layout of a part."""
    h = hashlib.blake2b(digest_size=6)
    h.update(f"draws-{DRAWS_FORMAT}/{len(run.names)}/{run.log_px!r}".encode())
    for tier in run.tiers:
        h.update(np.ascontiguousarray(tier.beta).tobytes())
        lat = tier.lattice
        if lat is not None:
            h.update(np.ascontiguousarray(lat.beta).tobytes())
            fwd = sorted((t, r["crc"]) for t, r in lat.records.items() if r.get("stage") == "forward")
            h.update(repr((lat.plan.c, fwd)).encode())
    return h.hexdigest()


def draws_folder(run: FinishedRun, seed: int) -> Path:
    """WORKDIR/samples-seedS-KEY: the parts and journal of the draws of seed S."""
    return Path(run.workdir.root) / f"samples-seed{seed}-{draws_key(run)}"


_DRAWS_NAME = re.compile(r"samples-seed\d+-[0-9a-f]{12}")


def stale_draws(folder: Path) -> list[Path]:
    """The draws folders beside ``folder`` (a `draws_folder` of the run) that no call can
    use again: their KEY is not the run's (`draws_key`: drawn by another DRAWS_FORMAT,
    i.e. an earlier bigbn, from the same tables, since a run of other tables starts with
    --fresh, which removes them). Only folders of bigbn's own making: the name
    samples-seedS-KEY, and nothing inside but the journal and the parts (none a symlink;
    parts/ nothing but parts and temporary files of their writers). `sample` removes
    them under the run's lock (they take about 16n + 32 bytes a sample)."""
    root, key = folder.parent, folder.name.rsplit("-", 1)[1]
    out = []
    for p in sorted(root.glob("samples-seed*-*")):
        if (_DRAWS_NAME.fullmatch(p.name) and not p.name.endswith(f"-{key}") and p.is_dir()
                and not p.is_symlink()
                and all(c.name == "parts" and c.is_dir() and not c.is_symlink()
                        and all(_PART_NAME.fullmatch(f.name) and _plain_file(f) for f in c.iterdir())
                        or c.name.startswith("journal") and c.name.endswith(".jsonl") and _plain_file(c)
                        for c in p.iterdir())):
            out.append(p)
    return out


#: what a draws folder's parts/ holds: the batches' parts, and the temporary file of a
#: writer killed before its rename (`outputs.tasks.write_part`)
_PART_NAME = re.compile(r"batch-\d+-\d+\.npz|\.batch-\d+-\d+\.npz\.\d+-\d+\.tmp")


def _plain_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


@dataclass(frozen=True)
class BatchTask:
    """compute() of a batch task (`outtasks.PartTask`): the samples START .. END − 1 of
    ``seed`` from the finished run, with ``threads`` threads inside the task."""

    run: FinishedRun
    seed: int
    threads: int

    def __call__(self, spec: PartSpec):
        first, end = spec.args
        d = _draw_batch(self.run, first, end - first, self.seed, self.threads)
        arrays = {"orders": d.orders, "parents": d.parents, "log_score": d.log_score, "lle": d.lle,
                  "attempt": d.attempt}
        extras = {"redrawn": d.redrawn, "reads": d.reads, "chunks": d.chunks,
                  "sweep_seconds": round(d.sweep_seconds, 4), "parents_seconds": round(d.parents_seconds, 4),
                  "le_seconds": round(d.le_seconds, 4)}
        return arrays, extras


@dataclass
class _Draws:
    """What a sweep drew: orders (T, n) first node first, parents (T, n) full masks
    ((T, n, W) words past 63 variables, as `Samples.parents`),
    log_score (T,) Σ_v β_v(G_v), lle (T,) log #LE, attempt (T,) the attempt each sample
    was drawn at, samples redrawn for rounding, chunks read of all chunks,
    and the seconds the sweeps over the forward tables, the parents and #LE took."""

    orders: np.ndarray
    parents: np.ndarray
    log_score: np.ndarray
    lle: np.ndarray
    attempt: np.ndarray
    redrawn: int
    reads: int
    chunks: int
    sweep_seconds: float
    parents_seconds: float = 0.0
    le_seconds: float = 0.0


def _gather(recs: list[dict], parts: list[dict]) -> _Draws:
    """The batches' draws, concatenated in sample order."""
    cat = {k: np.concatenate([p[k] for p in parts]) for k in ("orders", "parents", "log_score", "lle", "attempt")}
    return _Draws(cat["orders"], cat["parents"], cat["log_score"], cat["lle"], cat["attempt"],
                  sum(int(r.get("redrawn", 0)) for r in recs), sum(int(r.get("reads", 0)) for r in recs),
                  int(recs[0].get("chunks", 0)), sum(float(r.get("sweep_seconds", 0)) for r in recs),
                  sum(float(r.get("parents_seconds", 0)) for r in recs),
                  sum(float(r.get("le_seconds", 0)) for r in recs))


def _draw_batch(run: FinishedRun, first: int, T: int, seed: int, threads: int) -> _Draws:
    """The samples first .. first + T − 1 of a finished run, with their log #LE."""
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        if run.tiered:
            d = _draw_tiered(run, first, T, seed, pool, threads)
        else:  # one tier on the root-scope lattice: its order and parents from that lattice
            d = _draw(run.tiers[0].lattice, first, T, seed, pool, threads)
        t1 = time.perf_counter()
        idx, inv, _ = _unique_rows(d.parents)
        d.lle = _log_linear_extensions(d.parents[idx], run.lays if run.tiered else None)[inv]
        d.le_seconds = time.perf_counter() - t1
    return d


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of a (T, ...) array (a sample's parent masks or words): (index of
    each distinct row's first occurrence, inverse (T,), counts), the rows compared as raw
    bytes (one void item a row: 6x faster than np.unique(axis=0) at T = 10 000, n = 20;
    the distinct rows come in byte order, not numeric order)."""
    rows = np.ascontiguousarray(a).reshape(a.shape[0], -1)
    v = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
    _, idx, inv, counts = np.unique(v, return_index=True, return_inverse=True, return_counts=True)
    return idx, inv.reshape(-1), counts


def _split(T: int, parts: int) -> list[tuple[int, int]]:
    """[0, T) in at most ``parts`` contiguous ranges."""
    k = max(1, min(parts, T))
    cuts = [T * i // k for i in range(k + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _draw_parents(beta, fam, nodes, preds, alphas, seed: int, first: int, attempt, out, pool,
                  threads: int) -> None:
    """`sampling.draw_parents` over the rows, split in ranges across ``pool``'s threads."""
    def one(r):
        a, b = r
        SK.draw_parents(beta, fam, nodes[a:b], preds[a:b], alphas[a:b], seed, first + a, attempt[a:b], out[a:b])
    list(pool.map(one, _split(nodes.shape[0], threads)))


def _draw(run: FinishedLattice, first: int, T: int, seed: int, pool, threads: int) -> _Draws:
    """T (order, DAG) pairs of a run without tiers, from its root-scope lattice."""
    plan, beta = run.plan, run.beta
    job = Job(run.workdir, plan, beta)
    t1 = time.perf_counter()
    nodes, preds, alphas, attempt, reads = _sweep(run, job, T, seed, first, pool, threads)
    t_sweep = time.perf_counter() - t1
    parents = np.zeros((T, plan.n), dtype=np.int64)
    _draw_parents(beta, plan.families, nodes, preds, alphas, seed, first, attempt, parents, pool, threads)
    log_score = np.zeros(T)
    for v in range(plan.n):
        sq = (parents[:, v] & ((1 << v) - 1)) | ((parents[:, v] >> (v + 1)) << v)
        log_score += beta[v, family_rank(plan.families, sq)]
    return _Draws(np.ascontiguousarray(nodes[:, ::-1]), parents, log_score, None, attempt,
                  int(np.count_nonzero(attempt)), reads, plan.n_chunks, t_sweep,
                  time.perf_counter() - t1 - t_sweep)


def _draw_tiered(run: FinishedRun, first: int, T: int, seed: int, pool, threads: int) -> _Draws:
    """T (order, DAG) pairs of a run with tiers: per tier (with its own random stream), the
    order of its nodes and their within-tier parents G₂ from the tier's lattice (its "scores"
    A_v(G₂) summed over the earlier-tier parents), then each node's earlier-tier parents G₁
    with probability β_v(G₁ ∪ G₂) / A_v(G₂) (`_complete`)."""
    n = len(run.names)
    W = SK.n_words(n)
    orders = np.empty((T, n), dtype=np.int64)
    parents = np.zeros((T, n, W), dtype=np.int64)
    log_score = np.zeros(T)
    attempts = np.zeros(T, dtype=np.int64)
    redrawn = reads = chunks = 0
    t_sweep, t_all, pos = 0.0, time.perf_counter(), 0
    for tier in run.tiers:
        lay, lat = tier.lay, tier.lattice
        tseed = _tier_seed(seed, lay.index)
        if lat is None:  # one node: first in its tier, no within-tier parents
            nodes = np.zeros((T, 1), dtype=np.int64)
            within = np.zeros((T, 1), dtype=np.int64)
            attempt = np.zeros(T, dtype=np.int64)
        else:
            t1 = time.perf_counter()
            job = Job(lat.workdir, lat.plan_read, lat.beta)
            nodes, preds, alphas, attempt, r = _sweep(lat, job, T, tseed, first, pool, threads)
            t_sweep += time.perf_counter() - t1
            within = np.zeros((T, lay.m), dtype=np.int64)
            _draw_parents(lat.beta, lat.plan.families, nodes, preds, alphas, tseed, first, attempt, within,
                          pool, threads)
            reads, chunks = reads + r, chunks + lat.plan.n_chunks
            redrawn += int(np.count_nonzero(attempt))
            attempts = np.maximum(attempts, attempt)
        cols = _complete(tier.beta, lay, within, tseed, first, attempt)
        ids = np.array(lay.nodes, dtype=np.int64)
        orders[:, pos: pos + lay.m] = ids[nodes[:, ::-1]]
        pos += lay.m
        for b, v in enumerate(lay.nodes):
            picked, inv = np.unique(cols[:, b], return_inverse=True)
            words = np.zeros((picked.size, W), dtype=np.int64)
            for r, c in enumerate(picked.tolist()):
                for u in lay.parents(b, c):
                    words[r, u // SK.WORD_BITS] |= 1 << (u % SK.WORD_BITS)
            parents[:, v] = words[inv.reshape(-1)]
            log_score += tier.beta[b, cols[:, b]]
    return _Draws(orders, parents[..., 0] if W == 1 else parents, log_score, None, attempts, redrawn, reads,
                  chunks, t_sweep, time.perf_counter() - t_all - t_sweep)


def _tier_seed(seed: int, j: int) -> int:
    """Tier j's own random stream (a seed in [0, 2^63)), so that tiers draw independently."""
    digest = hashlib.blake2b(f"{seed}/{j}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _complete(beta: np.ndarray, lay, within: np.ndarray, seed: int, first: int,
              attempt: np.ndarray) -> np.ndarray:
    """The column of each sample's family for every node of tier ``lay``, given its
    within-tier parents (tier-bit masks, (T, m)): a G₁ drawn from the node's segment of
    G₂ = its within-tier parents with probability ∝ exp β (one cumulative sum per distinct
    (node, G₂), one uniform per sample; sample t's is sample first + t's). int64 (T, m)."""
    T, m = within.shape
    cols = np.empty((T, m), dtype=np.int64)
    for b in range(m):
        g = within[:, b]
        t = np.searchsorted(lay.tier_families, (g & ((1 << b) - 1)) | ((g >> (b + 1)) << b))
        u = SK.uniforms(np.int64(seed), np.int64(first), attempt, b, 2)
        order = np.argsort(t, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(t[order]) != 0])
        for lo, hi in zip(starts, np.r_[starts[1:], T]):
            idx = order[lo:hi]
            f = int(t[idx[0]])
            seg = beta[b, lay.offsets[f]: lay.offsets[f + 1]]
            w = np.exp(seg - seg.max())
            cum = np.cumsum(w)
            pick = np.searchsorted(cum, u[idx] * cum[-1], side="right")
            cols[idx, b] = lay.offsets[f] + np.minimum(pick, int(np.flatnonzero(w > 0)[-1]))
    return cols


def _log_linear_extensions(parents: np.ndarray, lays) -> np.ndarray:
    """log #LE of each DAG (rows of full parent masks); with tiers, of the tier-consistent
    orders only: Π_j #LE(G restricted to T_j), since an edge between tiers always points
    forward and so never constrains the order within a tier."""
    if lays is None:
        return log_linear_extensions(parents)
    words = SK.as_words(parents)
    out = np.zeros(parents.shape[0])
    for lay in lays:
        if lay.m < 2:
            continue
        sub = np.zeros((parents.shape[0], lay.m), dtype=np.int64)
        for b, v in enumerate(lay.nodes):
            for bb, u in enumerate(lay.nodes):
                sub[:, b] |= ((words[:, v, u // SK.WORD_BITS] >> (u % SK.WORD_BITS)) & 1) << bb
        out += log_linear_extensions(sub)
    return out


def _as_ints(parents_row) -> list[int]:
    """One DAG's parent sets as Python ints (bit u ⟺ u is a parent), from a row of masks
    (n,) or of words (n, W)."""
    row = np.asarray(parents_row)
    if row.ndim == 1:
        return [int(x) for x in row]
    return [sum(int(x) << (SK.WORD_BITS * w) for w, x in enumerate(r)) for r in row.tolist()]


# ------------------------------------------------------------------------------ outputs

def _replace_whole(path: Path, write) -> None:
    """``write(fh)`` into a temporary file of this process's own beside ``path``, renamed to
    ``path`` (`write_whole`: a link there is replaced, never written through; a reader sees
    the old file or the new one, whole)."""
    def to(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            write(fh)
    write_whole(path, to, path.with_name(f".{path.name}.{os.getpid()}.tmp"))


def _pairs_csv(path: Path, header: list[str], names, p: np.ndarray, se: np.ndarray, extra=None) -> None:
    _replace_whole(path, lambda fh: _write_pairs(fh, header, names, p, se, extra))


def _write_pairs(fh, header: list[str], names, p: np.ndarray, se: np.ndarray, extra=None) -> None:
    n = len(names)
    fh.write(csv_line(header))
    for u in range(n):
        for v in range(n):
            if u != v:
                row = [names[u], names[v], f"{p[u, v]:.17g}", f"{se[u, v]:.6g}"]
                if extra is not None:
                    row.append(f"{extra[u, v]:.17g}")
                fh.write(csv_line(row))


def _arcs_fields(names: list[str], rows) -> list[str]:
    """dags.csv's arcs field of each DAG (rows of parent masks, or of words past 63
    variables): json.dumps([[parent, child], ...], ensure_ascii=False) in `Samples.arcs`
    order (by child, then parent, in data order), as a CSV field (`result.csv_field`: a
    DAG with an arc holds the quotes of JSON strings, so it is quoted and its quotes
    doubled; "[]" is not). Each child's arcs are written and escaped once per distinct
    parent set it has among the DAGs, and a DAG's field joins its children's."""
    from bigbn.io.frames import arcs as frame_arcs

    if len(rows) == 0:
        return []
    masks = np.asarray(rows)
    if masks.ndim != 2:  # words past 63 variables: one DAG at a time
        return [csv_field(json.dumps([list(a) for a in frame_arcs(names, _as_ints(r))], ensure_ascii=False))
                for r in rows]
    n = len(names)
    jn = [json.dumps(x, ensure_ascii=False) for x in names]
    cols = []
    for v in range(n):
        sets, inv = np.unique(masks[:, v], return_inverse=True)
        text = [", ".join(f"[{jn[u]}, {jn[v]}]" for u in range(n) if m >> u & 1).replace('"', '""')
                for m in sets.tolist()]
        cols.append([text[j] for j in inv.reshape(-1).tolist()])
    joined = [", ".join([t for t in row if t]) for row in zip(*cols)]
    return ['"[' + x + ']"' if x else "[]" for x in joined]


#: what `write_outputs` writes into WORKDIR/samples-PRIOR/
SAMPLE_FILES = ("edges.csv", "ancestors.csv", "markov_blanket.csv", "dags.csv", "summary.json", "samples.npz")

_TEMPORARY = re.compile(r"\.(?:samples\.npz|summary\.json|edges\.csv|ancestors\.csv|markov_blanket\.csv"
                        r"|dags\.csv)\.(\d+)\.tmp")


def _stale_temporaries(out: Path) -> None:
    """Remove the temporary files of `write_outputs` that a killed process left in ``out``
    (their process is gone; another one's, still writing, are kept)."""
    for f in out.iterdir():
        got = _TEMPORARY.fullmatch(f.name)
        if got is None or not f.is_file() or f.is_symlink():
            continue
        try:
            os.kill(int(got.group(1)), 0)
        except ProcessLookupError:
            f.unlink(missing_ok=True)
        except (PermissionError, OverflowError, ValueError):
            pass


def write_outputs(s: Samples, workdir) -> Path:
    """Write WORKDIR/samples-PRIOR/: edges.csv, ancestors.csv, markov_blanket.csv (pairs
    with probability and standard error), dags.csv (distinct DAGs, arcs as a JSON list of
    [parent, child] names), samples.npz (the samples themselves) and summary.json.
    Every file is written to a temporary name of this process's own and renamed into place
    (a link in a file's place is replaced, never written through).
    samples.npz and summary.json go first; summary.json comes back after the CSV files and
    samples.npz last (each renamed into place whole, from a temporary file of this process's
    own), so a write killed half way never leaves either beside files of other samples: the
    page (keyed on summary.json) and `bigbn.open` (keyed on samples.npz) then see the new
    samples or none. The run's lock is held while the files are written: two samplers
    finishing side by side in one workdir (the lock was held only while they drew) wrote
    into the same files at once, and could leave edges.csv of one beside dags.csv of the
    other; the second now says that the workdir is in use, and its draws are journaled."""
    root = Path(workdir).resolve()
    out = root / f"samples-{s.prior}"
    check_samples_folder(out)
    with Workdir(root).lock():
        return _write_outputs(s, out)


def check_samples_folder(out: Path) -> None:
    """WorkdirError when something other than a folder (a file, a FIFO, a symbolic link)
    holds the name of samples-PRIOR/ or a file of a samples' name in it is not a file:
    checked before the draws (a file of the folder's name was "File exists" once they were
    drawn, and so still was a broken link) and again, under the run's lock, before the files
    are written. A symbolic link (to a folder elsewhere) was written through: the samples'
    files, and the removal of stale temporaries, changed a folder outside the workdir; it is
    refused, and nothing is written through it (the tables' chunk files never write through
    a link either)."""
    try:
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        try:
            target = f" (to {os.readlink(out)})"
        except OSError:
            target = ""
        raise WorkdirError(f"{out} is a symbolic link{target}, not the folder bigbn writes the samples in; bigbn "
                           "writes nothing through it: remove the link, then run the same command again")
    if not stat.S_ISDIR(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a file" if stat.S_ISREG(mode) else "not a folder"
        raise WorkdirError(f"{out} is {kind}, not the folder bigbn writes the samples in; remove it, then run "
                           "the same command again")
    check_outputs(out, SAMPLE_FILES)  # a FIFO of one's name: one line, not a wait for its reader


def _write_outputs(s: Samples, out: Path) -> Path:
    """`write_outputs` into folder ``out``, the run's lock held."""
    check_samples_folder(out)  # again, under the lock
    out.mkdir(exist_ok=True)
    check_outputs(out, SAMPLE_FILES)
    _stale_temporaries(out)
    (out / "samples.npz").unlink(missing_ok=True)
    (out / "summary.json").unlink(missing_ok=True)
    names = list(s.names)
    p, se = s.edge_probabilities(with_se=True)
    if s.prior == "order-modular":
        _pairs_csv(out / "edges.csv", ["parent", "child", "probability", "se", "exact"], names, p, se,
                   s.exact_edges)
    else:
        _pairs_csv(out / "edges.csv", ["parent", "child", "probability", "se"], names, p, se)
    _pairs_csv(out / "ancestors.csv", ["ancestor", "descendant", "probability", "se"], names,
               *s.ancestor_probabilities(with_se=True))
    _pairs_csv(out / "markov_blanket.csv", ["node", "member", "probability", "se"], names,
               *(m.T for m in s.markov_blanket_probabilities(with_se=True)))
    post = "exact_posterior" if s.prior == "order-modular" else "estimated_posterior"
    t = s._dag_table()
    exact = t["exact_order_modular"] if s.prior == "order-modular" else t["estimated_dag_modular"]
    rows = zip(t["count"].tolist(), t["probability"].tolist(), t["se"].tolist(), exact,
               t["log_linear_extensions"].tolist(), t["log_score"].tolist(),
               _arcs_fields(names, t["parents"]))
    _replace_whole(out / "dags.csv", lambda fh: fh.write(
        f"rank,count,probability,se,{post},log_linear_extensions,log_score,arcs\n"
        + "".join(f"{r},{c},{p:.17g},{e:.6g},{x:.17g},{le:.17g},{ls:.17g},{a}\n"
                  for r, (c, p, e, x, le, ls, a) in enumerate(rows, 1))))
    own = f".{os.getpid()}.tmp"
    info = dict(s.info)
    if "log_z_dag_modular" in info:
        info["log_z_dag_modular"] += s.log_offset
    with open(out / f".summary.json{own}", "w") as fh:
        json.dump({**info, "names": names, "log_marginal_likelihood": s.log_marginal + s.log_offset}, fh,
                  indent=2)
        fh.write("\n")
    os.replace(out / f".summary.json{own}", out / "summary.json")
    with open(out / f".samples.npz{own}", "wb") as fh:
        np.savez(fh, names=np.array(names), parents=s.parents, weights=s.weights,
                 orders=s.orders, log_linear_extensions=s.log_linear_extensions,
                 log_score=s.log_score + s.log_offset)
    os.replace(out / f".samples.npz{own}", out / "samples.npz")
    return out
