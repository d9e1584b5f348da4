"""Causal effects averaged over structures: Bayesian IDA with exact parent-set posteriors.

The effect of an intervention on x on another variable y, in a DAG G without hidden
confounders, is identified by back-door adjustment for the parents of x (IDA: Maathuis,
Kalisch and Bühlmann 2009). Under structure uncertainty it is averaged over the posterior
of Pa(x) (Bayesian IDA: Pensar, Talvitie, Hyttinen and Koivisto, AAAI 2020); bigbn has
that posterior exactly for every node (`bigbn.outputs.parentsets`, Koivisto 2006 section 3):

    p(effect of x on y | data) = Σ_Z p(Pa(x) = Z | data) p(effect | Pa(x) = Z, data)

with the effect zero when y ∈ Z (y is then a cause of x, not an effect).

Continuous data (BGe). Given Z, the effect is the coefficient of x in the regression of
y on X = (x, Z). Under the normal-Wishart model of the BGe score (`bigbn.scores.bge`) the
posterior covariance is Σ ~ IW(R, α_w + m) with R the posterior scatter matrix. Its block
on A = X ∪ {y} is IW(R_AA, d) with d = α_w + m − n + |A| (the BGe score's own
marginalisation), and then Σ_y·X ~ IW₁(R_y·X, d) and
(Σ_XX⁻¹ Σ_Xy) | Σ_y·X ~ N(R_XX⁻¹ R_Xy, Σ_y·X R_XX⁻¹) (the Schur complement keeps the
degrees of freedom). So the coefficient of x is a Student t with d = α_w + m − n + |Z| + 2
degrees of freedom, location (R_XX⁻¹ R_Xy)_x and squared scale R_y·X (R_XX⁻¹)_xx / d. The effect's posterior
is the mixture of these t's and an atom at 0 of mass p_zero = p(y ∈ Pa(x) | data). Its
mean and p_zero sum over every parent set of nonzero posterior; the equal-tailed credible
interval solves F(t) = q (lower) and 1 − F(t) = q (upper), q = (1 − level)/2, for the
mixture's CDF F by Brent's method (the upper one as the lower endpoint of the mirrored
mixture, so that no F near 1 holds the tail to float64's absolute ε), with the parent sets
of smallest posterior left out while their total stays below TAIL·(1 − level) (so each
endpoint's tail mass is within 2·TAIL = 2e−14 of q, relatively).

Discrete data (BDeu, K2). For each level a of x and b of y,

    p(y = b | do(x = a)) = Σ_Z p(Z | data) Σ_z p̂(y = b | x = a, Z = z) p̂(Z = z)

with the posterior-mean tables of the score's Dirichlet model: BDeu(ess) puts
ess/(r_y r_x q_Z) on each cell of y's table given (x, Z) and ess/q_Z on each cell of the
joint of Z; K2 puts 1 on every cell. When y ∈ Z the intervention leaves y at its
posterior-mean marginal p̂(y). The sum over Z leaves out the least probable parent sets
while their total stays below TAIL (so each probability is within 1e−14 of the full sum,
at a fraction of the work: most of the C(n−1, ≤k) sets have posteriors far below that).

What this assumes: no hidden common causes (causal sufficiency), the run's structure
prior and maximum in-degree, and for BGe linear effects with Gaussian noise.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numba
import numpy as np

from bigbn import options as opt
from bigbn.inputs import load_dataset
from bigbn.kernels.bits import popcounts
from bigbn.io.data import Dataset, csv_records
from bigbn.errors import DataError, OptionError
from bigbn.kernels.families import unsqueeze
from bigbn.io.frames import SOURCE
from bigbn.outputs.tasks import PartSpec, run_parts
from bigbn.plan.tiers import MAX_TIERED_NODES
from bigbn.outputs.parameters import _mixed_radix, bge_posterior, dirichlet_table
from bigbn.outputs.parentsets import parent_set_posteriors
from bigbn.engine.progress import reporter
from bigbn.io.data import csv_line
from bigbn.outputs.result import Result, open_for_writing, run_workdir
from bigbn.store.rundir import finished_run
from bigbn.scores.base import BUILTIN, check_options

__all__ = ["effects", "Effects", "bge_effect_components", "continuous_effects", "discrete_effects",
           "mixture_quantile"]

#: the least probable parent sets of a cause, while their posteriors add up to less than
#: this, are left out of the credible interval's CDF and of the discrete tables
TAIL = 1e-14
#: the version of what an effects task's part holds (part of its key, so a part written by
#: other numbers is never reused: 2, an interventional effect's rows are `effect_rows`, and
#: the upper endpoint solves 1 − F = q on the mirrored mixture). A part also holds its folder's
#: KEY and its pairs (`CauseTask.valid`): a part of before that, lacking them, runs again in place.
EFFECTS_FORMAT = 2


def _tail(w: np.ndarray, limit: float = TAIL) -> np.ndarray:
    """Mask of the weights kept: all but the smallest ones whose sum stays below ``limit``."""
    order = np.argsort(w, kind="stable")
    cut = np.searchsorted(np.cumsum(w[order]), limit, side="right")
    kept = np.zeros(w.size, dtype=bool)
    kept[order[cut:]] = True
    return kept


@dataclass
class Effects:
    """Posterior causal effects of a finished run.

    names: the variable names; kind: "continuous" (BGe) or "discrete"; pairs: the
    (cause, effect) index pairs, in order; level: the credible level of the intervals.

    Continuous: ``mean``, ``p_zero``, ``lower``, ``upper``: float64 arrays with one value
    per pair (the posterior mean of the linear effect, the probability that it is exactly 0,
    and the equal-tailed credible interval).

    Discrete: ``table[i]`` is float64 (r_cause, r_effect) with p(effect = b | do(cause = a))
    for pair i, ``p_zero[i]`` the probability that the effect is a parent of the cause;
    ``levels`` the level labels of each variable.
    """

    names: tuple[str, ...]
    kind: str
    pairs: list[tuple[int, int]]
    level: float
    p_zero: np.ndarray
    mean: np.ndarray | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    table: list[np.ndarray] | None = field(default=None, repr=False)
    levels: tuple[tuple[str, ...], ...] | None = field(default=None, repr=False)

    @property
    def header(self) -> list[str]:
        if self.kind == "continuous":
            return ["cause", "effect", "mean", "p_zero", "lower", "upper"]
        return ["cause", "cause_level", "effect", "effect_level", "probability", "p_zero"]

    def rows(self) -> list[list]:
        """The rows of effects.csv (values as Python floats and strings)."""
        out = []
        for i, (x, y) in enumerate(self.pairs):
            if self.kind == "continuous":
                out.append([self.names[x], self.names[y], float(self.mean[i]), float(self.p_zero[i]),
                            float(self.lower[i]), float(self.upper[i])])
            else:
                tab = self.table[i]
                for a in range(tab.shape[0]):
                    for b in range(tab.shape[1]):
                        out.append([self.names[x], self.levels[x][a], self.names[y], self.levels[y][b],
                                    float(tab[a, b]), float(self.p_zero[i])])
        return out

    def to_csv(self, path) -> None:
        """Write effects.csv. Names and levels are quoted as `result.csv_field` quotes them
        (csv.writer with lineterminator "\n" left a carriage return bare, which csv.reader
        takes for the row's end: a name holding one made `bigbn.open` call the file damaged).
        Opened as `Result.to_csv` opens its file (`result.open_for_writing`): a folder, a
        named pipe that nothing reads (a wait, forever) or a file that cannot be written is
        one line."""
        with open_for_writing(path, "to_csv()") as fh:
            fh.write(csv_line(self.header))
            for r in self.rows():
                fh.write(csv_line(f"{v:.17g}" if isinstance(v, float) else v for v in r))

    def to_pandas(self):
        """A DataFrame with the columns of effects.csv (pandas is optional)."""
        from bigbn.io import frames

        rows = self.rows()
        return frames.to_frame({h: [r[j] for r in rows] for j, h in enumerate(self.header)})


# ------------------------------------------------------------------------- continuous

def bge_effect_components(R: np.ndarray, d0: float, x: int, parent_sets: np.ndarray,
                          effects_on=None):
    """Per parent set Z of x (full n-bit masks, int64 (P,), or Python ints past 62 variables)
    and effect y in ``effects_on`` (variable indices; None: all n): the Student t of the
    coefficient of x in the regression of y on (x, Z). Returns (loc, scale, df): loc and
    scale float64 (P, len(effects_on)), NaN where y = x or y ∈ Z; df float64 (P,), d0 + |Z|
    where d0 = α_w + m − n + 2.

    Only the asked-for effects are solved for, and the sets a block at a time: all n effects
    of every set at once took (P, k + 1, n) arrays, about 1.3 GB a cause at n = 100, k = 3,
    however few pairs were asked for. Each effect's numbers are those of the all-n solve, to
    the bit (tests/test_effects.py)."""
    n = R.shape[0]
    ys = np.arange(n, dtype=np.int64) if effects_on is None else np.asarray(effects_on, dtype=np.int64)
    P = parent_sets.size
    loc = np.full((P, ys.size), np.nan)
    scale = np.full((P, ys.size), np.nan)
    wide = parent_sets.dtype == object  # Python ints: a tiered run of n > 62 (`tiered_parent_sets`)
    sizes = np.array([int(z).bit_count() for z in parent_sets], dtype=np.int64) if wide \
        else popcounts(parent_sets)
    df = d0 + sizes.astype(np.float64)
    bits = np.arange(n, dtype=np.int64)
    diag = np.diag(R)[ys]
    # one right-hand side takes another LAPACK path (a vector solve) whose last bits differ
    # from the all-n solve's: solve for a second column too (x's, or x + 1's), dropped after
    cols = ys if ys.size > 1 else np.append(ys, x if ys[0] != x else (x + 1) % n)
    for s in np.unique(sizes):
        of_size = np.flatnonzero(sizes == s)
        for start in range(0, of_size.size, _SETS_AT_ONCE):
            sel = of_size[start:start + _SETS_AT_ONCE]
            if wide:  # (popcounts and int64 shifts of those overflowed)
                members = np.array([[int(parent_sets[i]) >> j & 1 for j in range(n)] for i in sel],
                                   dtype=bool).reshape(sel.size, n)
            else:
                members = ((parent_sets[sel, None] >> bits) & 1).astype(bool)
            Z = np.nonzero(members)[1].reshape(sel.size, s)
            X = np.concatenate([np.full((sel.size, 1), x, dtype=np.int64), Z], axis=1)  # (S, q)
            A = R[X[:, :, None], X[:, None, :]]  # (S, q, q)
            rhs = R[X[:, :, None], cols[None, None, :]]  # (S, q, ≥ 2): R_Xy for each asked-for y
            B = np.linalg.solve(A, rhs)[:, :, :ys.size]  # R_XX⁻¹ R_Xy
            rhs = rhs[:, :, :ys.size]
            resid = diag[None, :] - np.einsum("sqy,sqy->sy", rhs, B)  # R_y·X
            e0 = np.zeros((sel.size, s + 1, 1))
            e0[:, 0, 0] = 1.0
            c = np.linalg.solve(A, e0)[:, 0, 0]  # (R_XX⁻¹)_xx
            inside = members[:, ys] | (ys == x)[None, :]
            loc[sel] = np.where(inside, np.nan, B[:, 0, :])
            scale[sel] = np.where(inside, np.nan,
                                  np.sqrt(np.maximum(resid, 0.0) * c[:, None] / (d0 + s)))
    return loc, scale, df


#: parent sets solved for at once by `bge_effect_components` (a block's arrays are
#: (block, k + 1, asked-for effects) float64: 2 MB for 16 effects at k = 3)
_SETS_AT_ONCE = 4096


def mixture_quantile(p: float, weights: np.ndarray, loc: np.ndarray, scale: np.ndarray,
                     df: np.ndarray, atom: float) -> float:
    """inf{t : F(t) ≥ p} for F = atom·[t ≥ 0] + Σ_j weights_j T_{df_j}((t − loc_j)/scale_j).

    The weights and the atom add up to 1 (up to the left-out tail, < p and < 1 − p).
    F is a sum of float64 terms, so F(t) = p holds t to F's absolute ε: a p near 1 leaves
    its tail 1 − p only ε/(1 − p) relatively (an upper endpoint at level 1 − 1e−12 was 4e−4
    off). For an upper quantile pass the mirrored mixture (−loc) and the tail 1 − p, and
    negate (`continuous_effects`)."""
    from scipy.optimize import brentq
    from scipy.special import stdtr, stdtrit

    if weights.size == 0:
        return 0.0

    def F(t: float) -> float:  # without the atom
        return float(np.dot(weights, stdtr(df, (t - loc) / scale)))

    below = F(0.0)  # F(0−); F(0) = below + atom
    if below < p <= below + atom:
        return 0.0
    q = stdtrit(df, p)
    lo = min(float(np.min(loc + scale * q)), 0.0)
    hi = max(float(np.max(loc + scale * q)), 0.0)
    span = max(hi - lo, float(np.max(scale)), 1e-300)
    if p <= below:  # the root is below 0, where F has no atom
        lo, hi, shift = lo - 1e-3 * span, 0.0, 0.0
    else:
        lo, hi, shift = 0.0, hi + 1e-3 * span, atom
    g = (lambda t: F(t) + shift - p)
    if g(hi) < 0:  # only the left-out tail can cause this
        return hi
    if g(lo) >= 0:
        return lo
    return brentq(g, lo, hi, xtol=1e-15 * span, rtol=4 * np.finfo(float).eps, maxiter=500)


def table_parent_sets(ps: np.ndarray, families: np.ndarray):
    """``parent_sets(x)`` of a run without tiers, from its parent-set posteriors ps (n, F)
    over the squeezed family masks ``families``: (the posteriors of x's parent sets of
    nonzero posterior, those sets as full n-bit int64 masks)."""
    def parent_sets(x: int):
        keep = np.flatnonzero(ps[x] > 0)
        return ps[x, keep], np.array([unsqueeze(int(f), x) for f in families[keep]], dtype=np.int64)
    return parent_sets


def tiered_parent_sets(tiered, n: int):
    """``parent_sets(x)`` of a run with tiers (a `tiers.TieredFamilies`); the masks are
    Python ints (an object array) when n > 62 variables do not fit an int64."""
    def parent_sets(x: int):
        rows = tiered.ranked(x)
        masks = [sum(1 << u for u in ps) for ps, _ in rows]
        return (np.array([p for _, p in rows], dtype=np.float64),
                np.array(masks, dtype=np.int64 if n <= 62 else object))
    return parent_sets


def _by_cause(parent_sets, pairs, progress=None):
    """Per cause x of ``pairs``: (x, the indices of its pairs, the posteriors of its parent
    sets of nonzero posterior, those sets as full n-bit masks), from ``parent_sets(x)``
    (`table_parent_sets`, `tiered_parent_sets`). progress("effects", causes done, causes)
    as each cause's work is done."""
    idx: dict[int, list[int]] = {}
    for i, (x, _) in enumerate(pairs):
        idx.setdefault(x, []).append(i)
    for done, (x, ii) in enumerate(idx.items()):
        yield x, ii, *parent_sets(x)
        if progress is not None:
            progress("effects", done + 1, len(idx))


def _holds(masks: np.ndarray, y: int) -> np.ndarray:
    """Which parent sets (full masks) hold y: then the effect of x on y is zero."""
    return ((masks >> y) & 1 == 1).astype(bool)


def continuous_effects(ds, parent_sets, pairs, level: float, *,
                       alpha_mu: float, alpha_w: float | None, progress=None) -> dict:
    """The BGe score's effects (module docstring): the fields mean, p_zero, lower, upper of
    `Effects`, one value per pair. parent_sets, progress: as for `_by_cause`."""
    data = np.asarray(ds.data, dtype=np.float64)
    m, n = data.shape
    _, R, alpha_w = bge_posterior(data, alpha_mu, alpha_w)
    d0 = alpha_w + m - n + 2
    P = len(pairs)
    mean, p_zero = np.empty(P), np.empty(P)
    lower, upper = np.empty(P), np.empty(P)
    q = (1 - level) / 2  # each endpoint's tail mass (1 − level exact for level ≥ 1/2: Sterbenz)
    for x, idx, w, masks in _by_cause(parent_sets, pairs, progress):
        ys = sorted({pairs[i][1] for i in idx})
        loc, scale, df = bge_effect_components(R, d0, x, masks, ys)
        column = {y: j for j, y in enumerate(ys)}
        # the interval's CDF leaves out the least probable sets, a total below TAIL·2q: their
        # mass moves an endpoint's tail by a relative 2·TAIL at most (an absolute TAIL = 1e-14
        # was 2% of the tail 5e-13 at level 1 − 1e-12)
        in_cdf = _tail(w, TAIL * 2 * q)
        for i in idx:
            y = pairs[i][1]
            has_y = _holds(masks, y)
            p_zero[i] = float(np.sum(w[has_y]))
            j = column[y]
            mean[i] = float(np.dot(w[~has_y], loc[~has_y, j]))
            comp = in_cdf & ~has_y
            atom = float(np.sum(w[in_cdf & has_y]))
            lower[i] = mixture_quantile(q, w[comp], loc[comp, j], scale[comp, j], df[comp], atom)
            # the upper endpoint: the lower of the mirrored effect −β (its tail q, not F = 1 − q)
            # (0.0 − it, not −it: an endpoint the atom holds is 0.0, and −0.0 printed "-0")
            upper[i] = 0.0 - mixture_quantile(q, w[comp], -loc[comp, j], scale[comp, j], df[comp], atom)
    return dict(mean=mean, p_zero=_probability(p_zero), lower=lower, upper=upper)


# --------------------------------------------------------------------------- discrete

def discrete_effects(ds, parent_sets, pairs, *, k2: bool, ess: float,
                     progress=None) -> dict:
    """The Dirichlet scores' effects (module docstring; K2 if ``k2``, else BDeu(ess)): the
    fields table and p_zero of `Effects`. parent_sets, progress: as for `_by_cause`."""
    data = np.asarray(ds.data, dtype=np.int64)
    n = data.shape[1]
    r = np.asarray(ds.arities, dtype=np.int64)
    data_t = np.ascontiguousarray(data.T)
    marginals = {y: _marginal(data[:, y], r[y], k2, ess) for y in {y for _, y in pairs}}
    tables = [np.zeros((r[x], r[y])) for x, y in pairs]
    p_zero = np.zeros(len(pairs))
    for x, idx, w_all, masks in _by_cause(parent_sets, pairs, progress):
        for i in idx:  # p_zero from every set
            p_zero[i] = float(np.sum(w_all[_holds(masks, pairs[i][1])]))
        in_table = _tail(w_all)  # the tables leave out the least probable sets (< TAIL in all)
        for zmask, w in zip(masks[in_table].tolist(), w_all[in_table].tolist()):
            Z = [j for j in range(n) if zmask >> j & 1]
            z, qz = _configurations(data, r, Z)
            outside = [i for i in idx if not zmask >> pairs[i][1] & 1]
            for i in idx:
                if zmask >> pairs[i][1] & 1:  # y is a parent of x: y keeps its marginal
                    tables[i] += w * marginals[pairs[i][1]][None, :]
            adjusted = _adjusted(data_t, r, x, [pairs[i][1] for i in outside], z, qz, k2, ess)
            for i, tab in zip(outside, adjusted):
                tables[i] += w * tab
    return dict(table=[_probability(t) for t in tables], p_zero=_probability(p_zero))


def _probability(p: np.ndarray) -> np.ndarray:
    """Sums of posterior weights as probabilities: within [0, 1], as their exact values are
    (a sum of weights that add up to 1, such as P(zero) when every parent set of the cause
    holds the effect, came out 1 + a few ulps: 1.0000000000000036 in effects.csv)."""
    return np.clip(p, 0.0, 1.0)


def _configurations(data, r, Z: list[int]) -> tuple[np.ndarray, int]:
    """(an index of each record's configuration of Z, q_Z = the number of configurations,
    observed or not): the mixed-radix code when q_Z is small, else the rank among the
    observed configurations. q_Z is a Python int (it may exceed int64)."""
    m = data.shape[0]
    qz = math.prod(int(r[j]) for j in Z)
    if qz <= max(4 * m, 1024):  # the mixed-radix code itself is a small enough index
        return _mixed_radix(data, r, Z), qz
    _, inverse = np.unique(data[:, Z], axis=0, return_inverse=True)
    return inverse.reshape(m).astype(np.int64), qz


def _marginal(col: np.ndarray, r: int, k2: bool, ess: float) -> np.ndarray:
    """p̂(y): `dirichlet_table` of y without parents."""
    return dirichlet_table(col[:, None], np.array([r]), 0, [], k2, ess)[0]


def _adjusted(data_t, r, x: int, ys: list[int], z: np.ndarray, qz: int, k2: bool,
              ess: float) -> list[np.ndarray]:
    """Σ_z p̂(y = b | x = a, z) p̂(z) for every a, b and every y in ys: float64 (r_x, r_y)
    each. data_t: int64 (n, m), the data's columns; z: each record's configuration index
    of Z (`_configurations`), q_Z the number of configurations."""
    rx = int(r[x])
    sizes = [rx * int(r[y]) for y in ys]
    out = np.zeros(sum(sizes))
    _adjusted_kernel(data_t, r, x, np.asarray(ys, dtype=np.int64), z, int(z.max()) + 1, float(qz),
                     k2, ess, out)
    offsets = np.cumsum([0] + sizes)
    return [out[offsets[t]:offsets[t + 1]].reshape(rx, int(r[y])) for t, y in enumerate(ys)]


@numba.njit(cache=True, nogil=True)
def _adjusted_kernel(data_t, r, x, ys, z, Q, qz, k2, ess, out):
    """The tables of `_adjusted`, one block after another in ``out`` (zeros on entry).

    Every configuration z of Z counts, observed or not: an unobserved (a, z) has the
    uniform p̂(y | a, z) = 1/r_y, and Σ_z p̂(z) = 1, so each entry is 1/r_y plus the
    departures from uniform of the observed (a, z), weighted by p̂(z): O(m) work however
    large q_Z is. BDeu(ess): ess/(r_y r_x q_Z) on each cell of y's table, ess/q_Z on each
    cell of Z's joint; K2: 1 on every cell."""
    m = z.size
    rx = r[x]
    xv = data_t[x]
    n_z = np.zeros(Q)
    n_az = np.zeros(Q * rx)
    for t in range(m):
        n_z[z[t]] += 1.0
        n_az[z[t] * rx + xv[t]] += 1.0
    a_z = 1.0 if k2 else ess / qz
    off = 0
    for y in ys:
        ry = r[y]
        yv = data_t[y]
        a_y = 1.0 if k2 else ess / (ry * rx * qz)
        counts = np.zeros(Q * rx * ry)
        for t in range(m):
            counts[(z[t] * rx + xv[t]) * ry + yv[t]] += 1.0
        for zi in range(Q):
            if n_z[zi] == 0.0:
                continue
            pz = (n_z[zi] + a_z) / (m + qz * a_z)
            for a in range(rx):
                nax = n_az[zi * rx + a]
                if nax == 0.0:
                    continue
                for b in range(ry):
                    cond = (counts[(zi * rx + a) * ry + b] + a_y) / (nax + ry * a_y)
                    out[off + a * ry + b] += pz * (cond - 1.0 / ry)
        for c in range(rx * ry):
            out[off + c] += 1.0 / ry
        off += rx * ry


# ------------------------------------------------------------------------------ entry

def effects(source, data=None, *, pairs=None, level: float = 0.95, sep: str | None = None,
            score=None, interventions=None, progress=None, scheduler="threads",
            workers: int | None = None) -> Effects:
    """Posterior causal effects (Bayesian IDA) from a finished run.

    source: a work directory of a finished `bigbn run` (or `learn(..., workdir=...)`), or
    the `Result` of `learn`. data: the run's data (a path, DataFrame, array or Dataset; the
    same as the run's, which is checked by content hash). For a work directory it may be
    left out: then the file the run read is read again. pairs: (cause, effect) names or
    indices, or a CSV path with header cause,effect, each pair once; default every ordered
    pair. level:
    of the equal-tailed credible intervals (continuous data). score: the `bigbn.scores.base.Score`
    object of a run whose score bigbn does not ship (the built-in ones are found by name).
    interventions: the run's targets per row if it was given them as a list (a run's
    intervention column is read again from the data). With interventional data each
    effect's parameters come from the rows where no variable but its cause was intervened
    on (`effect_rows`; none: a one-line DataError).
    progress: a `bigbn.engine.progress.Listener` or a callable(stage, done, total), as for
    `learn`: ("effects", causes done, causes).
    scheduler, workers: as for `learn` (threads, sync, processes, tcp://HOST:PORT or a
    distributed.Client). Each cause's pairs are one task; in a work directory its part is
    written to WORKDIR/effects-KEY/ and journaled there, so a killed call resumes where it
    stopped when made again (KEY: a hash of everything the numbers depend on).
    """
    progress = reporter(progress)  # tick(stage, done, total): one ProgressEvent
    # any real number (a numpy float32 0.9 was refused as "not in (0, 1)"), not a bool
    if not (isinstance(level, numbers.Real) and not isinstance(level, (bool, np.bool_)) and 0 < level < 1):
        raise OptionError(f"credible level must be a number in (0, 1), got {level!r}")
    level = float(level)
    if not 0 < level < 1:  # a Fraction or Decimal just below 1 rounds to 1.0
        raise OptionError(f"credible level must be in (0, 1) as a float64, got {level!r}")
    scheduler = opt.scheduler(scheduler)
    workers = opt.workers(workers)
    workdir = None
    if isinstance(source, Result):
        names = tuple(source.names)
        if source.tiered is not None:
            parent_sets = tiered_parent_sets(source.tiered, len(names))
        elif source.parent_set_posterior is not None:
            parent_sets = table_parent_sets(source.parent_set_posterior, source.families)
        else:
            raise OptionError("this result has no parent-set posteriors")
        from bigbn.outputs.model import _options

        options = _options(source)  # an edited summary.json's: one line naming it, not a traceback
        digest_run = source.summary.get("data_sha256")
        if data is None:
            raise OptionError("give the run's data: effects(result, data)")
    else:
        run = finished_run(run_workdir(source, "effects"), then="compute the effects")
        options = dict(run.record.fingerprint)
        digest_run = options.get("data_sha256")
        names = run.names
        workdir = run.workdir
        if run.tiered:
            parent_sets = tiered_parent_sets(run.families(), len(names))
        else:  # one tier on the root-scope lattice: its parent-set table, as the run wrote it
            lat = run.tiers[0].lattice
            parent_sets = table_parent_sets(parent_set_posteriors(lat.beta, lat.gamma(), lat.log_px),
                                            lat.plan.families)
        if data is None:
            data = run.record.source
            if data in (None, "", "array", SOURCE):  # a run on data in memory
                raise OptionError(f"{run.root}: the run's data came from memory (a DataFrame or an "
                                  "array), not a file; give the data (effects(workdir, data))")
            if not os.path.isfile(data):
                raise OptionError(f"{run.root}: the run's data file {data} is not there; give the "
                                  "data (--data FILE)")
    used = options.get("score") or "auto"
    if score is not None and score.name != used:
        raise OptionError(f"the run used the {used} score, not {score.name}")
    if used == "jkl":
        raise OptionError("this run's local scores came from a .jkl file: causal effects need the "
                          "data (run on the data to estimate them)")
    if used == "cg":
        raise OptionError("causal effects are not defined for mixed data (the cg score): adjusting for a "
                          "cause's parents would mix discrete tables and per-configuration regressions, and "
                          "bigbn has no estimator of that; run on an all-discrete or all-continuous table")
    if score is None and used not in BUILTIN:
        raise OptionError(f"the run used the {used} score, which bigbn does not ship: pass its "
                          "object, effects(..., score=...)")
    if interventions is not None and options.get("intervention_column") is not None:
        raise OptionError(f"this run read its interventions from the column {options['intervention_column']!r} of "
                          "its data, which gives them again: drop interventions=")
    dynamic = options.get("dbn")
    if dynamic and len(dynamic["nodes"]) == 1:  # before the data are read again: no pair to estimate
        raise OptionError(f"this time series has one variable ({dynamic['nodes'][0]}): causal effects are between "
                          "variables of slice t, and it has no pair of them")
    if dynamic and not isinstance(data, Dataset):  # a time series: its transition rows, as the run read them
        from bigbn import dbn

        data = dbn.load(data, lag=dynamic["lag"], series=dynamic["series_column"], time=dynamic["time_column"],
                        score=score or used, sep=sep).dataset
    # max_nodes: the run's own size is checked by its names below (a run in tiers of more than
    # 40 variables was refused: "the engine supports at most 40")
    ds, score, digest = load_dataset(data, names=names, score=score or used, sep=sep,  # names: for
                                    intervention_column=options.get("intervention_column"),  # an array,
                                    interventions=interventions,  # the run's
                                    max_nodes=max(MAX_TIERED_NODES, len(names)))
    score_opts = check_options(score, {o.name: options.get(o.name) for o in score.options})
    if digest_run is not None and digest != digest_run:
        raise OptionError(f"{getattr(ds, 'path', '') or 'data'}: not the data of this run "
                          f"(content hash {digest[:12]} vs the run's {str(digest_run)[:12]})")
    if tuple(ds.names) != names:
        raise OptionError("the data's column names differ from the run's")
    pair_list = _pairs(pairs, names)
    if ds.intervened is not None:  # a pair with no rows to estimate it: one line, before any work
        for x, y in pair_list:
            effect_rows(ds, x, y)
    if dynamic:  # a DBN models the parents of slice t only: its effects are within slice t
        n_now = len(dynamic["nodes"])
        if pairs is None:
            pair_list = [(x, y) for x, y in pair_list if x < n_now and y < n_now]
        for x, y in pair_list:
            if max(x, y) >= n_now:
                raise OptionError(f"effect {names[x]} -> {names[y]}: a lagged variable's parents are not "
                                  "modelled in a dynamic network; effects are between variables of slice t")
    prior = score.parameter_prior(score_opts)
    if prior is None:
        raise OptionError(f"the {score.name} score has no parameter model, so bigbn cannot "
                          "estimate causal effects under it")
    causes = list(dict.fromkeys(x for x, _ in pair_list))
    sets = {x: parent_sets(x) for x in causes}
    task = CauseTask(ds, sets, tuple(pair_list), float(level), prior)
    specs = [PartSpec("cause", str(x), (x,)) for x in causes]
    key = _effects_key(task, digest, score.name, score_opts, interventions)
    task = replace(task, key=key)  # each part says whose it is (`CauseTask.valid`)
    if workdir is None:  # a Result: its tasks in a temporary folder
        import tempfile

        with tempfile.TemporaryDirectory(prefix="bigbn-effects-") as tmp:
            _, parts = run_parts(Path(tmp) / "effects", specs, task, scheduler=scheduler, workers=workers,
                                 progress=progress, stage="effects")
    else:
        with workdir.lock() as owner:
            _, parts = run_parts(Path(workdir.root) / f"effects-{key}", specs, task, owner=owner,
                                 scheduler=scheduler, workers=workers, progress=progress, stage="effects")
    out = task.assemble([parts[s.id] for s in specs])
    if ds.kind == "continuous":
        return Effects(names, "continuous", pair_list, float(level), **out)
    return Effects(names, "discrete", pair_list, float(level), levels=tuple(ds.levels), **out)


@dataclass(frozen=True)
class CauseTask:
    """compute() of an effects task (`outtasks.PartTask`): the effects of one cause x on
    its effects in ``pairs``, from x's parent-set posterior (``sets[x]``: weights, full
    masks). The numbers are those of one call over all pairs: each pair's depends only on
    its cause's parent sets, the data and its effect's rows."""

    ds: object
    sets: dict
    pairs: tuple
    level: float
    prior: dict
    key: str = ""  # the effects folder's KEY (`_effects_key`), written into each part

    def of(self, x: int) -> list[int]:
        return [i for i, (c, _) in enumerate(self.pairs) if c == x]

    def __call__(self, spec: PartSpec):
        (x,) = spec.args
        some = [self.pairs[i] for i in self.of(x)]
        ps = self.sets.__getitem__
        out = _by_effect_rows(self.ds, some, lambda sub, prs: (
            continuous_effects(sub, ps, prs, self.level, **self.prior) if self.ds.kind == "continuous"
            else discrete_effects(sub, ps, prs, **self.prior)))
        whose = self._whose(x)
        if "table" in out:
            flat = [np.asarray(t, dtype=np.float64).reshape(-1) for t in out["table"]]
            return {"p_zero": np.asarray(out["p_zero"], dtype=np.float64),
                    "table": np.concatenate(flat) if flat else np.zeros(0), **whose}, {"pairs": len(some)}
        return {**{k: np.asarray(v, dtype=np.float64) for k, v in out.items()}, **whose}, {"pairs": len(some)}

    def _whose(self, x: int) -> dict:
        """What a part of cause x holds beside its numbers: the folder's key and the pairs
        (cause first, then its effects in order)."""
        return {"key": np.array(self.key), "pairs": np.array([x, *(self.pairs[i][1] for i in self.of(x))],
                                                                dtype=np.int64)}

    def valid(self, spec: PartSpec, arrays: dict) -> bool:
        """Whether a part read back holds what `__call__` writes for spec's cause: float64
        arrays of its pairs' numbers, and this folder's key and spec's pairs (`tasks.run_parts`
        runs the task again if not). Shapes alone passed a part copied with its journal line
        from another effects folder whose cause had as many pairs: its numbers were given
        as those of other effects (X1 -> X3's for X1 -> X4), without a word."""
        (x,) = spec.args
        ys = [self.pairs[i][1] for i in self.of(x)]
        if self.ds.kind == "continuous":
            sizes = dict.fromkeys(("mean", "p_zero", "lower", "upper"), len(ys))
        else:
            r = self.ds.arities
            sizes = {"p_zero": len(ys), "table": sum(int(r[x]) * int(r[y]) for y in ys)}
        whose = self._whose(x)
        return set(arrays) == set(sizes) | set(whose) and all(
            arrays[k].dtype == np.float64 and arrays[k].shape == (size,) for k, size in sizes.items()) and all(
            arrays[k].dtype == w.dtype and np.array_equal(arrays[k], w) for k, w in whose.items())

    def assemble(self, parts: list[dict]) -> dict:
        """The fields of `Effects` for every pair, from each cause's part (in cause order)."""
        P = len(self.pairs)
        causes = list(dict.fromkeys(x for x, _ in self.pairs))
        if self.ds.kind == "continuous":
            out = {k: np.empty(P) for k in ("mean", "p_zero", "lower", "upper")}
            for x, part in zip(causes, parts):
                for k in out:
                    out[k][self.of(x)] = part[k]
            return out
        r = np.asarray(self.ds.arities, dtype=np.int64)
        p_zero, tables = np.empty(P), [None] * P
        for x, part in zip(causes, parts):
            pos = 0
            for j, i in enumerate(self.of(x)):
                y = self.pairs[i][1]
                size = int(r[x]) * int(r[y])
                tables[i] = part["table"][pos: pos + size].reshape(int(r[x]), int(r[y])).copy()
                pos += size
                p_zero[i] = part["p_zero"][j]
        return dict(table=tables, p_zero=p_zero)


def _effects_key(task: CauseTask, digest, score_name: str, score_opts, interventions) -> str:
    """What the effects tasks' parts depend on, hashed: the parent-set posteriors, the data
    (its content hash), the pairs, the level, the score and its options, the interventions."""
    h = hashlib.blake2b(digest_size=6)
    h.update(repr((EFFECTS_FORMAT, digest, task.pairs, task.level, score_name, sorted(score_opts.items()),
                   sorted(task.prior.items()), None if interventions is None else list(interventions))).encode())
    for x, (w, masks) in sorted(task.sets.items()):
        h.update(repr((x, masks.tolist())).encode())
        h.update(np.ascontiguousarray(w, dtype=np.float64).tobytes())
    return h.hexdigest()


def _by_effect_rows(ds, pairs, estimate) -> dict:
    """``estimate(dataset, pairs)`` (a dict of per-pair arrays or lists), with each pair's
    parameters from the rows where no variable but its cause was intervened on (`effect_rows`):
    one call per distinct set of rows, the results put back in the order of ``pairs``."""
    if ds.intervened is None:
        return estimate(ds, pairs)
    groups: dict[bytes, tuple[np.ndarray, list[int]]] = {}
    for i, (x, y) in enumerate(pairs):
        keep = effect_rows(ds, x, y)
        groups.setdefault(np.packbits(keep).tobytes(), (keep, []))[1].append(i)
    out: dict = {}
    for keep, idx in groups.values():
        part = estimate(ds.rows(keep), [pairs[i] for i in idx])
        for key, values in part.items():
            slot = out.setdefault(key, [None] * len(pairs))
            for i, v in zip(idx, values):
                slot[i] = v
    return {key: (v if key == "table" else np.array(v, dtype=np.float64)) for key, v in out.items()}


def effect_rows(ds, x: int, y: int) -> np.ndarray:
    """The rows (bool (m,)) that estimate the effect of x on y in interventional data: those
    where no variable other than x was a target.

    Why not every row where y was not a target: the estimand, Σ_z p(y | x, z) p(z) with
    Z = Pa(x) (and the regression of y on (x, Z) for BGe), is a functional of the whole
    observational distribution, not of y's mechanism alone: a row whose mediator b on
    x → b → y was set from outside has c's regression on a cut to 0, and pooled with the
    observational rows it pulled the effect of a on c to 0.49 with a 95% interval
    [0.46, 0.53], for a true effect of 1 (4000 rows, half of them setting b;
    tests/test_interventions.py). Likewise a row that set a parent of x, or a confounder,
    changes p(z) and p(y | x, z). A row that set only x keeps both: Z are not descendants
    of x, so p(z) is unchanged, and p(y | x, z) under do(x) is the observational one (back
    door: Pa(x) blocks every back-door path). Which other targets are harmless depends on
    the DAG, which the parent-set posterior averages over, so every other target is left out.

    DataError when no row is left (every row set some variable other than x)."""
    others = np.delete(ds.intervened, x, axis=1)
    keep = ~others.any(axis=1)
    if not keep.any():
        raise DataError(f"{ds.path or 'data'}: no row estimates the effect of '{ds.names[x]}' on "
                        f"'{ds.names[y]}': every row intervened on a variable other than '{ds.names[x]}', "
                        "and such a row's distribution is not the observational one the effect is a "
                        "functional of (bigbn.outputs.effects.effect_rows); leave the pair out (--pairs)")
    return keep


def _pairs(pairs, names) -> list[tuple[int, int]]:
    n = len(names)
    if pairs is None:
        return [(x, y) for x in range(n) for y in range(n) if x != y]
    index = {s: j for j, s in enumerate(names)}
    if isinstance(pairs, (str, os.PathLike)):
        out, first = [], {}
        for line, (c, e) in csv_records(pairs, ("cause", "effect")):
            for col, nm in (("cause", c), ("effect", e)):
                if nm not in index:
                    raise DataError(f"{pairs}, line {line}, column {col}: unknown variable {nm!r} "
                                    "(not a column of the data)")
            if c == e:
                raise DataError(f"{pairs}, line {line}: cause and effect are both {c!r}")
            # a pair twice wrote its table twice to effects.csv, which bigbn.open then called
            # damaged (a discrete pair's cells came twice)
            if (c, e) in first:
                raise DataError(f"{pairs}, line {line}: the pair {c!r} -> {e!r} again (first on line "
                                f"{first[c, e]}); give each pair once")
            first[c, e] = line
            out.append((index[c], index[e]))
        if not out:
            raise DataError(f"{pairs}: no pairs (expected rows cause,effect after the header)")
        return out

    def one(v) -> int:
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            if 0 <= v < n:
                return int(v)
            raise OptionError(f"variable index {v} out of range 0..{n - 1}")
        if isinstance(v, str) and v in index:
            return index[v]
        raise OptionError(f"no variable named {v!r}")

    out = []
    if isinstance(pairs, (bytes, dict)) or (hasattr(pairs, "columns") and hasattr(pairs, "dtypes")):
        raise OptionError(f"pairs are a list of (cause, effect) or a CSV path, got {type(pairs).__name__}")
    first = {}
    for j, p in enumerate(pairs, start=1):
        try:
            if isinstance(p, (str, bytes)):  # "ab" unpacked as the pair ('a', 'b')
                raise TypeError
            c, e = p
        except (TypeError, ValueError):
            raise OptionError(f"a pair is (cause, effect), got {p!r}") from None
        c, e = one(c), one(e)
        if c == e:
            raise OptionError(f"cause and effect are both {names[c]!r}")
        # as in a pairs file: a pair twice (by name or index) put its row twice into
        # effects.csv, which bigbn.open then called damaged
        if (c, e) in first:
            raise OptionError(f"the pair {names[c]!r} -> {names[e]!r} again (pair {j}, first pair "
                              f"{first[c, e]}); give each pair once")
        first[c, e] = j
        out.append((c, e))
    if not out:
        raise OptionError("no pairs given")
    return out
