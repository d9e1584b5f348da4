"""Tiers: exact posteriors over the orders that list every earlier tier first.

A bucket order T_1 < T_2 < … < T_t of the variables (Koivisto & Parviainen, AISTATS 2010;
Parviainen & Koivisto, JMLR 2013) restricts the order-modular prior to the linear orders
that list all of T_1, then all of T_2, and so on. The orders then pass only through the
sets P_j ∪ S, P_j = T_1 ∪ … ∪ T_{j−1}, S ⊆ T_j, and the run factorises over the tiers
(docs/design.md, "Tiers"):

- node v ∈ T_j may take parents G = G₁ ∪ G₂ with G₁ ⊆ P_j (every earlier tier) and
  G₂ ⊆ T_j − v (its own tier, before it in the order), |G| ≤ k;
- tier j is an ordinary Koivisto problem on its |T_j| nodes whose local "scores" are
  A_v(G₂) = Σ_{G₁ ⊆ P_j, |G₁| ≤ k − |G₂|} β_v(G₁ ∪ G₂), run on the out-of-core lattice
  exactly as a run of |T_j| variables (its own plan, tables and tasks in the run's one
  journal, scope "tier<j>");
- p(x) = Π_j Z_j, Z_j the tier's L(T_j); the posterior of a parent set G of v ∈ T_j is
  β_v(G) γ_v(G ∩ T_j) / Z_j with γ_v the tier's γ; an edge u → v is the sum of that over
  the G ∋ u (within a tier: the tier's own edge posterior; from an earlier tier: summed
  here; from a later tier: 0).

The MAP network is the same factorisation in max-plus: tier j's "scores" are
max_{G₁} β_v(G₁ ∪ G₂), its MAP run gives each G₂, and G₁ is the best completion.

Layout of a node's families (`TierLayout`): for each within-tier family G₂ (squeezed mask
over the tier's other m − 1 nodes, `family_masks(m − 1, k_t)` order) a segment of the
sets G₁ ⊆ P_j with |G₁| ≤ k − |G₂|: the first N(p, k − |G₂|) entries of the list of all
G₁ ⊆ P_j, |G₁| ≤ k, ordered by size and, within a size, colexicographically (so the sets
up to any size are a prefix). Every node of a tier has the same layout.
"""

from __future__ import annotations

import io
import math
import os
import re
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from math import comb

import numba
import numpy as np

from bigbn.errors import DataError, EngineError, OptionError
from bigbn.kernels.bits import popcounts
from bigbn.kernels.families import family_masks, n_families
from bigbn.plan.lattice import Plan, choose_chunk_bits, fits_free_disk

NEG_INF = -np.inf
#: Most variables a tiered run takes (each tier is at most plan.MAX_NODES).
MAX_TIERED_NODES = 512
#: The table, in a tier's folder, of its nodes' family β in the tier's layout (m, width):
#: kept for what reads a finished run (samples, causal effects), journaled with its CRC.
FAMILY_BETA = "family_beta"


def family_beta_id(lay: "TierLayout") -> str:
    """The journal id of tier ``lay``'s family β."""
    return f"{lay.scope}/{FAMILY_BETA}"


# ------------------------------------------------------------------------------ input

def read_tiers(path, names) -> dict[str, int]:
    """Read a CSV ``node,tier`` (an integer tier per node, lower = earlier; the header line
    is optional) into {name: tier}, with the other constraint files' one-line errors."""
    from bigbn.scores.priors import _index

    index = {str(x): j for j, x in enumerate(names)}
    out: dict[str, int] = {}
    first: dict[str, int] = {}
    for line, (name, t) in _tier_records(path):
        _index(path, line, "node", name, index)
        if name in first:
            raise DataError(f"{path}, line {line}: node '{name}' is listed again (first on line "
                            f"{first[name]}); give each node one tier")
        first[name] = line
        out[name] = _tier_label(path, line, t)
    if not out:
        raise DataError(f"{path}: no node,tier rows")
    return out




def _tier_label(path, line: int, t: str) -> int:
    """The tier on ``line`` of a tiers file: a plain integer (ASCII digits, optionally
    signed: `data.INTEGER`; int() also takes "1_0"), or a DataError."""
    from bigbn.io.data import INTEGER

    if not INTEGER.fullmatch(t):
        raise DataError(f"{path}, line {line}, column tier: {t!r} is not an integer "
                        "(digits 0-9, optionally signed)")
    return int(t)


def _tier_records(path):
    """csv_records with the header ``node,tier`` optional: a file whose first line is a
    data row is read as if the header were there (a first line with another header, such
    as tier,node, is refused as one). Read once, as every input file is
    (`data.read_text`: a regular file or a pipe, not a device or a pipe with no writer)."""
    from bigbn.io.data import INTEGER, read_text, sniff_separator, text_records

    text = read_text(os.fspath(path))
    head = io.StringIO(text, newline="").readline()
    sep = sniff_separator(head)
    headed = [c.strip() for c in head.split(sep)][:2] == ["node", "tier"]
    first = not headed
    for line, row in text_records(path, text, ("node", "tier"), headed=headed):
        if first:  # a header row other than node,tier is not read as a node and its tier
            first = False
            if sorted(c.lower() for c in row) == ["node", "tier"]:
                raise DataError(f"{path}, line {line}: header {','.join(row)}: the header of a tiers "
                                "file is node,tier (each node, then its tier), in that order")
            if not INTEGER.fullmatch(row[1]):
                raise DataError(f"{path}, line {line}, column tier: {row[1]!r} is not an integer "
                                "(a header line must be node,tier)")
        yield line, row


def tier_sizes_option(text: str) -> tuple[int, ...]:
    """``--tier-sizes 25,25,25,25`` for `bigbn plan`: positive integers, earliest first."""
    parts = [x.strip() for x in str(text).split(",")]
    if not all(re.fullmatch(r"\+?[0-9]+", x) for x in parts):
        raise OptionError(f"--tier-sizes {text!r}: give comma-separated positive integers, e.g. 25,25,25,25")
    sizes = tuple(int(x) for x in parts)
    if not sizes or min(sizes) < 1:
        raise OptionError(f"--tier-sizes {text!r}: every tier needs at least one variable")
    return sizes


# ------------------------------------------------------------------------------ layout

@dataclass(frozen=True)
class TierLayout:
    """Tier j of a run: its nodes, the nodes of the earlier tiers, and its families' layout.

    nodes: global node ids of T_j, ascending (the tier's lattice bit b is nodes[b]);
    pred: global node ids of P_j, ascending; k: the run's max parents.
    """

    index: int
    nodes: tuple[int, ...]
    pred: tuple[int, ...]
    k: int

    @property
    def m(self) -> int:
        return len(self.nodes)

    @property
    def p(self) -> int:
        return len(self.pred)

    @property
    def k_tier(self) -> int:
        """Max within-tier parents: min(k, m − 1)."""
        return min(self.k, self.m - 1)

    @property
    def scope(self) -> str:
        return f"tier{self.index + 1}"

    @cached_property
    def tier_families(self) -> np.ndarray:
        """Within-tier families G₂: squeezed masks over m − 1 bits, int64 (F_t,)."""
        return family_masks(self.m - 1, self.k_tier)

    @cached_property
    def pred_sets(self) -> np.ndarray:
        """Every G₁ ⊆ P_j, |G₁| ≤ k, by size then colex: positions in ``pred``, int64
        (Q, max(k, 1)), ascending, −1 padded."""
        p, k = self.p, min(self.k, self.p)
        out = np.full((n_families(p, k), max(self.k, 1)), -1, dtype=np.int64)
        row = 0
        for s in range(k + 1):
            combos = sorted(combinations(range(p), s), key=lambda c: c[::-1])  # colex
            for c in combos:
                out[row, :s] = c
                row += 1
        return out

    @cached_property
    def segment_lengths(self) -> np.ndarray:
        """N(p, k − |G₂|) for each within-tier family: int64 (F_t,)."""
        sizes = popcounts(self.tier_families)
        return np.array([n_families(self.p, self.k - int(s)) for s in sizes], dtype=np.int64)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Start of each within-tier family's segment, int64 (F_t + 1,)."""
        return np.concatenate([[0], np.cumsum(self.segment_lengths)]).astype(np.int64)

    @property
    def width(self) -> int:
        """Families per node of this tier."""
        return int(self.offsets[-1])

    @cached_property
    def column_tier_family(self) -> np.ndarray:
        """The within-tier family index of every column, int64 (width,)."""
        return np.repeat(np.arange(self.tier_families.size, dtype=np.int64), self.segment_lengths)

    @cached_property
    def column_sizes(self) -> np.ndarray:
        """|G| of every column, int64 (width,)."""
        k = min(self.k, self.p)  # `pred_sets`' rows by size: C(p, s) of size s (without building them)
        pred_size = np.repeat(np.arange(k + 1, dtype=np.int64), [comb(self.p, s) for s in range(k + 1)])
        t = self.column_tier_family
        return popcounts(self.tier_families)[t] + pred_size[np.arange(self.width) - self.offsets[t]]

    def parents(self, b: int, col: int) -> tuple[int, ...]:
        """Global parent ids (ascending) of column ``col`` of the tier's node at bit b."""
        t = int(np.searchsorted(self.offsets, col, side="right")) - 1
        q = col - int(self.offsets[t])
        mask = int(self.tier_families[t])
        full = (mask & ((1 << b) - 1)) | ((mask >> b) << (b + 1))  # unsqueeze at b
        within = [self.nodes[j] for j in range(self.m) if full >> j & 1]
        before = [self.pred[a] for a in self.pred_sets[q] if a >= 0] if q else []  # row 0: ∅
        return tuple(sorted(within + before))

    def column_index(self, parent_sets: np.ndarray) -> np.ndarray:
        """For every parent set (global ids, ascending, −1 padded: int64 (P, kk)) and every
        node of the tier: its column, or −1 where it is not a family of that node.
        int64 (P, m)."""
        n_all = int(max(self.nodes + self.pred)) + 2
        tier_pos = np.full(n_all, -1, dtype=np.int64)
        tier_pos[list(self.nodes)] = np.arange(self.m)
        pred_pos = np.full(n_all, -1, dtype=np.int64)
        pred_pos[list(self.pred)] = np.arange(self.p)
        ps = np.where(parent_sets >= 0, parent_sets, n_all - 1)
        ps = np.minimum(ps, n_all - 1)
        outside = (parent_sets >= n_all - 1) & (parent_sets >= 0)
        valid = ~outside.any(axis=1)
        tmask = np.zeros(ps.shape[0], dtype=np.int64)
        rank = np.zeros(ps.shape[0], dtype=np.int64)
        count = np.zeros(ps.shape[0], dtype=np.int64)
        binom = np.array([[comb(a, s) for s in range(self.k + 2)] for a in range(self.p + 1)], dtype=np.int64)
        for col in range(ps.shape[1]):
            real = parent_sets[:, col] >= 0
            tp, pp = tier_pos[ps[:, col]], pred_pos[ps[:, col]]
            valid &= ~real | (tp >= 0) | (pp >= 0)
            has_t = real & (tp >= 0)
            tmask[has_t] |= np.left_shift(1, tp[has_t])
            has_p = real & (pp >= 0)
            rank[has_p] += binom[pp[has_p], count[has_p] + 1]
            count[has_p] += 1
        below = np.array([n_families(self.p, s - 1) if s else 0 for s in range(self.k + 2)], dtype=np.int64)
        qrank = below[count] + rank
        out = np.full((ps.shape[0], self.m), -1, dtype=np.int64)
        for b in range(self.m):
            ok = valid & ((tmask >> b) & 1 == 0)
            sq = (tmask & ((1 << b) - 1)) | ((tmask >> (b + 1)) << b)
            t = np.searchsorted(self.tier_families, sq[ok])
            out[ok, b] = self.offsets[t] + qrank[ok]
        return out


def layouts(tiers: tuple[tuple[int, ...], ...], k: int) -> tuple[TierLayout, ...]:
    out, before = [], []
    for j, tier in enumerate(tiers):
        out.append(TierLayout(j, tuple(tier), tuple(sorted(before)), k))
        before.extend(tier)
    return tuple(out)


# ------------------------------------------------------------------------------ scores

def tier_scores(ds, lays: tuple[TierLayout, ...], score, k: int, options: dict, *,
                structure_prior: str = "koivisto-sood", prior_kwargs=None) -> list[np.ndarray]:
    """β = log ρ_v(G) + log p(x_v | x_G) of every family of every node, in the tiers'
    layouts: one float64 (m_j, width_j) array per tier.

    score: a `bigbn.scores.base.Score` with ``family_scores`` (BDeu and K2: each parent set G
    (|G| ≤ k, global ids) has its rows' configurations built once and every child it is a
    family of scored from them; BGe: batched log-determinants); options: its checked
    options. With interventional data each node is scored from the rows where it is not a
    target (`bigbn.scores.interventions.local_scores`).
    """
    from bigbn.scores.interventions import local_scores
    from bigbn.scores.priors import KINDS
    from bigbn.scores.discrete import parent_sets_of

    if structure_prior not in KINDS:
        raise OptionError(f"unknown structure prior '{structure_prior}' (choose one of: {', '.join(KINDS)})")
    n = ds.n
    prior = _tier_prior(n, k, lays, structure_prior, ds.names, prior_kwargs or {})
    parent_sets = parent_sets_of(n, k)  # row 0: ∅, every node's column 0
    index = np.full((parent_sets.shape[0], n), -1, dtype=np.int64)
    for lay, rho in zip(lays, prior):
        # a family the prior rules out (ρ = 0: a forbidden or missing required edge, too many
        # parents) has β = −∞ whatever its score: not scored. A time series' lagged variable
        # (max parents 0) keeps only ∅ of its C(p, ≤ k) columns, without their index.
        ruled_out = np.isneginf(rho)
        if ruled_out[:, 1:].all():
            index[0, list(lay.nodes)] = np.where(ruled_out[:, 0], -1, 0)
            continue
        cols = lay.column_index(parent_sets)
        g, b = np.nonzero(cols >= 0)
        drop = ruled_out[b, cols[g, b]]
        cols[g[drop], b[drop]] = -1
        index[:, list(lay.nodes)] = cols
    width = max(lay.width for lay in lays)
    flat = local_scores(score, ds, k, options, sets=(parent_sets, index, width))
    out = []
    for lay, rho in zip(lays, prior):
        beta = flat[list(lay.nodes), : lay.width]
        beta[np.isneginf(rho)] = -np.inf  # not scored (above); −∞ + log ρ = −∞, as when scored
        beta += rho
        if np.isnan(beta).any():
            raise EngineError("a tier's family was not scored (bug)")
        dead = np.flatnonzero(~np.isfinite(beta).any(axis=1))
        if dead.size:
            raise OptionError(f"{ds.path or 'data'}: every parent set of '{ds.names[lay.nodes[int(dead[0])]]}' "
                              f"that the tiers allow (nodes of earlier tiers and its own, at most {k}) "
                              "is impossible")
        bad = np.isposinf(beta)
        if bad.any():
            raise DataError(f"{ds.path or 'data'}: the {score.name} score of column "
                            f"'{ds.names[lay.nodes[int(np.argwhere(bad)[0][0])]]}' is not finite")
        out.append(beta)
    return out


def _tier_prior(n: int, k: int, lays, kind: str, names, kw: dict) -> list[np.ndarray]:
    """log ρ_v(G) in the tiers' layouts: `priors.family_log_prior`, the untiered run's
    computation (so a family's prior has the same bits in either layout), with required
    edges that point against the tiers refused."""
    from bigbn.scores.priors import check, family_log_prior

    unknown = set(kw) - {"edge_prob", "forbid", "require", "max_parents"}
    if unknown:
        raise OptionError(f"unknown constraint option(s): {', '.join(sorted(unknown))}")
    prior = check(n, k, kind, kw.get("edge_prob"), kw.get("forbid", ()), kw.get("require", ()),
                  kw.get("max_parents"), names)
    tier_of = {v: lay.index for lay in lays for v in lay.nodes}
    for u, v in prior.require:
        if tier_of[u] > tier_of[v]:
            raise OptionError(f"required edge {names[u]} -> {names[v]} points from tier "
                              f"{tier_of[u] + 1} back to tier {tier_of[v] + 1}: no tier-consistent "
                              "order allows it")
    out = []
    for lay in lays:
        size = lay.column_sizes
        out.append(np.stack([family_log_prior(prior, v, size, _Members(lay, b).get,
                                              "the constraints and tiers")
                             for b, v in enumerate(lay.nodes)]))
    return out


class _Members:
    """u ↦ bool (width,): whether each column's parent set (of the tier's node at bit b)
    holds u, for every candidate u, each made when first asked for (the prior asks only
    for the parents its constraints name: a time series' lagged variable, whose tier has
    up to C(n(L + 1), ≤ k) columns, for none of them)."""

    def __init__(self, lay: TierLayout, b: int):
        self.lay, self.b = lay, b
        self.made: dict[int, np.ndarray] = {}
        t = lay.column_tier_family
        self._t, self._q = t, np.arange(lay.width) - lay.offsets[t]
        self.bit = {u: (j if j < b else j - 1) for j, u in enumerate(lay.nodes) if j != b}
        self.at = {u: a for a, u in enumerate(lay.pred)}

    def get(self, u: int) -> np.ndarray | None:
        if u not in self.made:
            if u in self.bit:
                self.made[u] = (self.lay.tier_families[self._t] >> self.bit[u]) & 1 == 1
            elif u in self.at:
                self.made[u] = (self.lay.pred_sets[self._q] == self.at[u]).any(axis=1)
            else:
                return None
        return self.made[u]

    def items(self):
        """(u, its columns) for every candidate u: the tier's others, then the earlier tiers'."""
        return [(u, self.get(u)) for u in (*self.bit, *self.at)]


def _members(lay: TierLayout, b: int) -> dict[int, np.ndarray]:
    """{u: bool (width,) whether column's parent set holds u} for every candidate u of the
    tier's node at bit b."""
    return dict(_Members(lay, b).items())


@numba.njit(cache=True, nogil=True)
def _segment_reduce(beta, offsets, total, best):
    """total[v, t] = log Σ exp(beta[v, segment t]) and best[v, t] = max of it (−inf for a
    segment with no finite entry). beta float64 (m, W); offsets int64 (F_t + 1,)."""
    m = beta.shape[0]
    for v in range(m):
        for t in range(offsets.size - 1):
            mx = -np.inf
            for c in range(offsets[t], offsets[t + 1]):
                if beta[v, c] > mx:
                    mx = beta[v, c]
            best[v, t] = mx
            if mx == -np.inf:
                total[v, t] = -np.inf
                continue
            s = 0.0
            for c in range(offsets[t], offsets[t + 1]):
                s += math.exp(beta[v, c] - mx)
            total[v, t] = mx + math.log(s)


def tier_local_scores(beta: np.ndarray, lay: TierLayout) -> tuple[np.ndarray, np.ndarray]:
    """(A, M): A_v(G₂) = log Σ_{G₁} exp β_v(G₁ ∪ G₂) (the tier's posterior "scores") and
    M_v(G₂) = max_{G₁} β_v(G₁ ∪ G₂) (its MAP "scores"); float64 (m, F_t) each."""
    total = np.empty((lay.m, lay.tier_families.size))
    best = np.empty_like(total)
    _segment_reduce(np.ascontiguousarray(beta), lay.offsets, total, best)
    return total, best


@numba.njit(cache=True, nogil=True)
def _family_weights(beta, gamma, offsets, log_z, out):
    """out[v, c] = exp(beta[v, c] + gamma[v, t(c)] − log_z): the posterior of every family."""
    for v in range(beta.shape[0]):
        for t in range(offsets.size - 1):
            g = gamma[v, t] - log_z
            for c in range(offsets[t], offsets[t + 1]):
                out[v, c] = math.exp(beta[v, c] + g)


def family_posteriors(beta: np.ndarray, gamma: np.ndarray, lay: TierLayout, log_z: float) -> np.ndarray:
    """p(G_v = G | x) for every column of every node of the tier, float64 (m, width); each
    row sums to 1 (checked to 1e−9: the same check as the untiered run's)."""
    out = np.empty_like(beta)
    _family_weights(np.ascontiguousarray(beta), np.ascontiguousarray(gamma), lay.offsets, float(log_z), out)
    sums = out.sum(axis=1)
    for b, s in enumerate(sums):
        if not math.isclose(s, 1.0, rel_tol=1e-9):
            raise EngineError(f"tier {lay.index + 1}: the parent-set posteriors of node {lay.nodes[b]} "
                              f"sum to {s!r}, not 1: bug or corrupted tables")
    return out


def edge_posteriors_from(post: np.ndarray, lay: TierLayout, n: int) -> np.ndarray:
    """P[u, v] for the tier's children v and every u: Σ of post over the families ∋ u;
    float64 (n, m)."""
    out = np.zeros((n, lay.m))
    for b in range(lay.m):
        if not post[b, 1:].any():  # all on column 0, ∅ (a time series' lagged variable): no edge into it
            continue
        for u, has in _members(lay, b).items():
            out[u, b] = float(post[b][has].sum())
    return np.clip(out, 0.0, 1.0)


class TieredFamilies:
    """The parent-set posteriors of a tiered run: per tier, float64 (m_j, width_j) in the
    tier's layout. ``ranked`` answers as `parentsets.ranked` does for an untiered run."""

    def __init__(self, lays: tuple[TierLayout, ...], posts: list[np.ndarray]):
        self.lays = lays
        self.posts = posts
        self.where = {v: (j, b) for j, lay in enumerate(lays) for b, v in enumerate(lay.nodes)}

    def ranked(self, v: int, mass: float = 1.0, top: int | None = None) -> list[tuple[tuple[int, ...], float]]:
        """Node v's parent sets of nonzero posterior as (parent ids ascending, posterior),
        highest first (ties: the tier's column order); with mass < 1 only the leading
        ones that carry ``mass``; at most ``top``."""
        j, b = self.where[v]
        row = self.posts[j][b]
        nz = np.flatnonzero(row > 0)
        order = nz[np.lexsort((nz, -row[nz]))]
        if mass < 1:
            reached = np.cumsum(row[order]) >= mass
            order = order[: int(np.argmax(reached)) + 1] if reached.any() else order
        if top is not None:
            order = order[:top]
        return [(self.lays[j].parents(b, c), float(row[c])) for c in order.tolist()]


def map_completion(beta: np.ndarray, lay: TierLayout, tier_parents) -> tuple[list[int], float]:
    """The MAP network's parents in a tier: each node's within-tier parents (global-id
    masks over the tier's bits, from the tier's max-plus run) completed by the best G₁.
    Returns (global parent masks as Python ints, Σ_v β_v(G_v))."""
    out, score = [], 0.0
    for b in range(lay.m):
        mask = int(tier_parents[b])
        sq = (mask & ((1 << b) - 1)) | ((mask >> (b + 1)) << b)
        t = int(np.searchsorted(lay.tier_families, sq))
        seg = beta[b, lay.offsets[t]: lay.offsets[t + 1]]
        c = int(lay.offsets[t] + np.argmax(seg))
        score += float(beta[b, c])
        out.append(sum(1 << u for u in lay.parents(b, c)))
    return out, score


# ------------------------------------------------------------------------------ planning

@dataclass(frozen=True)
class RunPlan:
    """The plan of a run, the one form run.json records: one or more tiers (earliest
    first), each (its number of nodes, its chunk bits; None for a one-node tier, which
    needs no lattice), the run's n, k (capped at n − 1) and alpha mode, and the stages
    any invocation asked for (posterior, MAP).

    A run without tiers is one tier of every variable: its one lattice plan (`lattices`)
    is at the workdir's root and runs every stage asked for, so its tables, task ids and
    numbers are those of every untiered run. With two or more tiers, a tier of two or more
    nodes has a posterior lattice in scope "tierJ" and a MAP lattice in "tierJ-map"."""

    n: int
    k: int
    alpha_mode: str
    tiers: tuple[tuple[int, int | None], ...]
    map_dag: bool = False
    posterior: bool = True
    kept: tuple[int, ...] | None = None  # a run without tiers under a disk budget: `Plan.kept`

    def __post_init__(self):
        ok = len(self.tiers) >= 1 and sum(m for m, _ in self.tiers) == self.n and all(
            isinstance(m, int) and m >= 1 and (c is None or isinstance(c, int)) and (c is None) == (m < 2)
            for m, c in self.tiers)
        if not ok:
            raise OptionError(f"a run plan's tiers {self.tiers!r} do not cover n = {self.n} variables")

    @property
    def tiered(self) -> bool:
        """Whether the run has two or more tiers (scoped lattices), not one root lattice."""
        return len(self.tiers) > 1

    def lattices(self, j: int) -> tuple[Plan | None, Plan | None]:
        """Tier j's (posterior lattice plan, MAP lattice plan); None where the stage is not
        asked for or the tier has one node. The run without tiers has one plan for both
        (the same object)."""
        m, c = self.tiers[j]
        if c is None:
            return None, None
        if not self.tiered:
            plan = Plan(self.n, self.k, c, self.alpha_mode, self.map_dag, self.posterior, kept=self.kept)
            return (plan if self.posterior else None), (plan if self.map_dag else None)
        k, scope = min(self.k, m - 1), f"tier{j + 1}"  # `TierLayout.k_tier`, `TierLayout.scope`
        return (Plan(m, k, c, self.alpha_mode, False, True, scope=scope) if self.posterior else None,
                Plan(m, k, c, self.alpha_mode, True, False, scope=scope + "-map") if self.map_dag else None)

    def plans(self) -> list[tuple[Plan | None, Plan | None]]:
        """`lattices` of every tier, earliest first."""
        return [self.lattices(j) for j in range(len(self.tiers))]

    def distinct(self) -> list[Plan]:
        """Every lattice plan of the run, once (the run without tiers has one)."""
        return list({id(p): p for pair in self.plans() for p in pair if p is not None}.values())

    def to_json(self) -> dict:
        return {"n": self.n, "k": self.k, "alpha_mode": self.alpha_mode, "map_dag": self.map_dag,
                "posterior": self.posterior,
                "tiers": [{"nodes": m, "chunk_bits": c} for m, c in self.tiers],
                **({} if self.kept is None else {"kept": list(self.kept)})}

    @classmethod
    def from_json(cls, pl: dict) -> RunPlan:
        """The plan in run.json: this form, or the plain `Plan` a run without tiers recorded
        before (bigbn 0.x up to e83beef), read as its one tier. ValueError (OptionError)
        or KeyError / TypeError when it is damaged."""
        if "tiers" not in pl:
            known = {"n", "k", "chunk_bits", "alpha_mode", "map_dag", "posterior", "scope"}
            plan = Plan(**{k: v for k, v in pl.items() if k in known})
            if plan.scope:
                raise ValueError("a scoped plan is not a run's")
            return cls.of(plan)
        tiers = tuple((t["nodes"], t.get("chunk_bits")) for t in pl["tiers"])
        if pl["alpha_mode"] not in ("recompute", "store") or not isinstance(pl["k"], int):
            raise ValueError("run plan")
        kept = pl.get("kept")
        out = cls(int(pl["n"]), int(pl["k"]), pl["alpha_mode"], tiers, bool(pl.get("map_dag", False)),
                  bool(pl.get("posterior", True)), None if kept is None else tuple(int(x) for x in kept))
        out.plans()  # every lattice plan valid (chunk bits within its tier, ...)
        return out

    @classmethod
    def of(cls, plan: Plan) -> RunPlan:
        """The run without tiers whose one lattice is ``plan``."""
        return cls(plan.n, plan.k, plan.alpha_mode, ((plan.n, plan.chunk_bits),), plan.map_dag, plan.posterior,
                   plan.kept)


def run_plan(lays, chunk_bits, alpha_mode, map_dag: bool, posterior: bool, memory: int,
             workers: int) -> RunPlan:
    """A new run's plan: chunk bits per tier (``chunk_bits``, capped at a tier's size when
    there are tiers, else from the memory budget; none for a one-node tier)."""
    mode = alpha_mode or "recompute"
    plain = len(lays) == 1
    bits = []
    for lay in lays:
        if lay.m < 2:
            bits.append(None)
        elif chunk_bits is not None:
            bits.append(int(chunk_bits if plain else min(chunk_bits, lay.m)))
        else:
            bits.append(int(choose_chunk_bits(lay.m, lay.k_tier, memory, workers, mode)))
    return RunPlan(sum(lay.m for lay in lays), lays[0].k, mode, tuple((lay.m, c) for lay, c in zip(lays, bits)),
                   map_dag, posterior)


def tier_sizes_from_file(path) -> tuple[int, ...]:
    """Tier sizes (earliest first) of a ``node,tier`` file, for `bigbn plan --tiers`."""
    counts: dict[int, int] = {}
    seen: dict[str, int] = {}
    for line, (name, t) in _tier_records(path):
        if name in seen:
            raise DataError(f"{path}, line {line}: node '{name}' is listed again (first on line {seen[name]})")
        seen[name] = line
        t = _tier_label(path, line, t)
        counts[t] = counts.get(t, 0) + 1
    if not counts:
        raise DataError(f"{path}: no node,tier rows")
    return tuple(counts[t] for t in sorted(counts))


def score_memory_bytes(sizes, k: int) -> int:
    """Peak bytes of the tiered scores stage: the parent sets (P × k ids) and where each
    family's score goes (P × n), the scored table (n × the widest tier's width) and the
    tiers' β in their layouts."""
    n = sum(sizes)
    lays = layouts(_consecutive(sizes), k)
    P = n_families(n, min(k, n))
    width = max(lay.width for lay in lays)
    return 8 * (P * (max(k, 1) + n) + n * width + sum(lay.m * lay.width for lay in lays))


def _consecutive(sizes) -> tuple[tuple[int, ...], ...]:
    out, start = [], 0
    for m in sizes:
        out.append(tuple(range(start, start + m)))
        start += m
    return tuple(out)


def plan_lines(sizes, k: int, memory: int, workers: int, alpha_mode: str, map_dag: bool,
               posterior: bool, chunk_bits, workdir, factors: dict | None = None,
               clock: str = "the reference machine", rows: int = 1000, parentless: int = 0) -> list[str]:
    """`bigbn plan` for a tiered run: per tier its lattice, disk and time (``factors``,
    ``clock``: the machine's, as `time_estimate` takes them and as the line names it); the
    scores stage's families, memory and time over ``rows`` rows; the totals. parentless:
    how many of the first tiers are one node with no parents (a time series' lagged
    variables), which the scores stage scores at ∅ alone (`tier_scores`)."""
    import shutil

    from bigbn.plan.lattice import MAX_NODES, SECONDS_PER_FAMILY_ROW, SECONDS_START, time_estimate

    n = sum(sizes)
    if n > MAX_TIERED_NODES:
        raise OptionError(f"{n} variables: a tiered run takes at most {MAX_TIERED_NODES}")
    if n < 2:  # `bigbn run` refuses data of one variable; its plan was shown
        raise OptionError("1 variable: a run needs at least 2")
    if max(sizes) > MAX_NODES:
        raise OptionError(f"a tier of {max(sizes)} variables: a tier holds at most {MAX_NODES}")
    if k < 0:
        raise OptionError(f"max parents must be ≥ 0, got {k}")
    k = min(k, n - 1)
    lays = layouts(_consecutive(sizes), k)
    plans = run_plan(lays, chunk_bits, alpha_mode, map_dag, posterior, memory, workers).plans()
    fams = sum(lay.m * lay.width for lay in lays)
    scored = sum(1 if lay.index < parentless else lay.m * lay.width for lay in lays)
    lines = [f"n = {n} in {len(sizes)} tiers ({','.join(map(str, sizes))}), k = {k}: "
             f"{fams} families in all (a node of the last tier has {lays[-1].width})"
             + (f", {scored} of them scored (the {parentless} parentless ones' ∅ alone)" if parentless else "")]
    disk = total_t = 0.0
    task_mem = 0
    for lay, pair in zip(lays, plans):
        parts = [p for p in pair if p is not None]
        if not parts:
            lines.append(f"  tier {lay.index + 1}: 1 node, no lattice")
            continue
        d = sum(sum(p.disk_bytes(workers).values()) for p in parts)
        t = sum(v for p in parts for stage, v in time_estimate(p, workers, factors).items() if stage != "start")
        disk += d
        total_t += t
        task_mem = max(task_mem, max(p.task_memory_bytes() for p in parts))
        lines.append(f"  tier {lay.index + 1}: {lay.m} nodes after {lay.p}, chunk bits {parts[0].chunk_bits}, "
                     f"disk {_bytes(d)}, ≈ {t:.1f} s")
    score_mem = score_memory_bytes(sizes, k)
    lines.append(f"disk:   {_bytes(disk)} (the tiers' tables, kept until the run ends)")
    lines.append(f"memory: scores stage {_bytes(score_mem)}; {_bytes(task_mem)} per task × {workers} workers "
                 f"(budget {_bytes(memory)})")
    score_t = scored * rows * SECONDS_PER_FAMILY_ROW / max(workers, 1)
    start_t = SECONDS_START * (factors or {}).get("start", 1.0)
    lines.append(f"time:   ≈ {_seconds(total_t + score_t + start_t)} on {workers} cores of {clock}: the tiers' "
                 f"lattices {_seconds(total_t)}, the scores stage {_seconds(score_t)} ({scored} families "
                 f"counted over {rows} rows; `--rows`), start {_seconds(start_t)}")
    if workdir is not None:
        free = shutil.disk_usage(workdir).free
        lines.append(f"workdir {workdir}: {_bytes(free)} free — {'enough' if fits_free_disk(disk, free) else 'NOT enough'}")
    return lines


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 100 else f"{s / 60:.1f} min" if s < 6000 else f"{s / 3600:.1f} h"


def _bytes(b: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{int(b)} B"
