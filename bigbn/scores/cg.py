"""The CG score: conditional Gaussian networks of discrete and continuous variables.

Model (Lauritzen 1992; Bøttcher 2001, "Learning Bayesian networks with mixed variables",
AISTATS; the R package deal): a discrete node has only discrete parents and a
multinomial table per parent configuration; a continuous node with discrete parents D and
continuous parents Z is, for each configuration d of D, a linear Gaussian regression on
Z with its own intercept, coefficients and variance. So every family of a discrete node
with a continuous parent is impossible (local score −inf, the engine's "impossible"),
and every edge continuous → discrete has posterior exactly 0.

The local scores are differences of one set function (docs/posterior.md, "Mixed data"),
which makes them score equivalent within CG DAGs. For a set S of variables with discrete
part D_S and continuous part C_S,

    log p(S) = log p_Dir(x_{D_S}) + Σ_{d observed} log p_NW(x_{C_S} of the rows with D_S = d | d),

- p_Dir: the Dirichlet-multinomial marginal likelihood of the joint table of D_S with
  ess / q_S on each of its q_S cells (so that a discrete node's score is BDeu(ess));
- p_NW: the BGe marginal likelihood (`bigbn.scores.bge`, Kuipers, Moffa & Heckerman 2014)
  of the continuous columns C_S in the rows of configuration d, under a normal-Wishart
  prior on the n_c continuous variables whose imaginary sample is spread uniformly over
  the q = q_{D_S} configurations of D_S, as deal's master prior spreads it
  (its "local master" sums the prior's ν, ρ and Φ over the configurations it merges):

      α_μ(d) = α_μ / q,   α_w(d) − n_c + 1 = (α_w − n_c + 1) / q,   T(d) = T / q,   ν(d) = ν,

  with T = t·I, t = α_μ (α_w − n_c − 1) / (α_μ + 1), ν the column means (BGe's own choices,
  n_c in place of n). Every configuration's prior is proper (its Wishart has
  α_w(d) − n_c + l > l − 1 degrees of freedom on any l variables) and has the same
  location as the whole (mean ν, covariance scale T(d) / (α_w(d) − n_c + 1) = T / (α_w − n_c + 1));
  only its weight is 1/q. A configuration absent from the data contributes 0.

Local scores: a discrete node i with discrete parents D: log p(D + i) − log p(D), which is
BDeu(ess); with any continuous parent: −inf. A continuous node i with parents D ∪ Z:
Σ_d [log p_NW(Z + i | d) − log p_NW(Z | d)]. With no discrete column these are bigbn's
BGe scores bit for bit (q = 1 uses α_w itself); with no continuous column, its BDeu scores
bit for bit (the same call).

Column kinds (`column_kinds`): a column with a cell that is not a number is discrete; a
column of numbers is continuous unless all its values are whole numbers and it has at
most `MAX_INTEGER_LEVELS` of them (codes such as 0/1 or a stage 1..4), which makes it
discrete; ``discrete=`` / ``continuous=`` (``--discrete A,B``, ``--continuous C``) override
the rule column by column.
"""

from __future__ import annotations

import math
import os
import shlex
from concurrent.futures import ThreadPoolExecutor
from math import lgamma, log, pi

import numba
import numpy as np

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.io.data import (INTEGER, Dataset, Table, _natural_order, check_carried, check_carried_together,
                           check_exact_numbers, no_column, one_float_cells)
from bigbn.errors import DataError, OptionError
from bigbn.scores.bge import EPS, LOG_ERROR_TOL, check_normal_prior, collinear, prior_scale, too_large

# bge.LOG_ERROR_TOL · 1/bge.EPS and bge.PIVOT_UNITS as literals of this module: numba's cache of
# `_cell_sum` would not see an edit of bge.py (tests/test_cg.py checks that they agree)
_CELL_ERROR_UNITS = 4503599627.370496
_CELL_PIVOT_UNITS = 16.0
from bigbn.kernels.bits import popcounts
from bigbn.scores.discrete import _STIRLING_FROM, _compress, _log_rising

__all__ = ["MAX_INTEGER_LEVELS", "MAX_LEVELS", "column_kinds", "mixed_dataset", "has_text_and_numbers",
           "hyperparameters", "cg_scores", "cg_log_marginal"]

#: a column of whole numbers with at most this many distinct values is read as discrete
MAX_INTEGER_LEVELS = 10
#: most levels a discrete column of mixed data may have: each level multiplies the
#: configurations a continuous child is split into (and a discrete table's cells)
MAX_LEVELS = 10_000


# ------------------------------------------------------------------------- column kinds

def _numbers(values: np.ndarray) -> np.ndarray | None:
    """The distinct cells ``values`` (str) as float64, or None if one is not a number."""
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            return values.astype(np.float64)
    except ValueError:
        return None


def column_kinds(table: Table, discrete=None, continuous=None, where: str = "") -> tuple[str, ...]:
    """"discrete" or "continuous" for each column of ``table`` (the module docstring's
    rule); ``discrete`` / ``continuous``: column names forced to that kind. A name that is
    not a column, a name in both, or a text column forced continuous is a one-line error."""
    where = where or table.path
    forced = {}
    for kind, names, flag in (("discrete", discrete, "--discrete"), ("continuous", continuous, "--continuous")):
        for name in names or ():
            name = str(name)
            if name not in table.names:
                raise no_column(where, name, table.names, f"named by {flag}")
            if forced.get(name, kind) != kind:
                raise OptionError(f"column '{name}' is named both discrete and continuous")
            forced[name] = kind
    out = []
    for j, name in enumerate(table.names):
        values = table.columns[j][0]
        x = _numbers(values)
        if name in forced:
            if forced[name] == "continuous" and x is None:
                cell = next(v for v in values.tolist() if _numbers(np.array([v])) is None)
                raise DataError(f"{where}, column '{name}': declared continuous, but '{cell}' is not a number")
            out.append(forced[name])
        elif x is None:
            out.append("discrete")
        elif not np.isfinite(x).all():
            out.append("continuous")  # its non-finite cell is named when it is read
        elif values.size <= MAX_INTEGER_LEVELS and np.all(x == np.round(x)) and _whole_cells(values):
            out.append("discrete")
        else:
            out.append("continuous")
    return tuple(out)


def _whole_cells(values: np.ndarray) -> bool:
    """True if every cell of ``values`` (decimal numbers whose float64 are whole) is a
    whole number itself: float64 rounds 9007199254740993.5 and 2.0000000000000001 to whole
    numbers, which made such a column discrete by the rule (its cells categories) though
    its values are not whole. Compared as decimals only where a cell is not plain digits."""
    from decimal import Decimal, InvalidOperation

    for v in values.tolist():
        if INTEGER.fullmatch(v):
            continue
        try:
            d = Decimal(v)
        except (InvalidOperation, ValueError):
            return False
        if not d.is_finite() or d != d.to_integral_value():
            return False
    return True


def has_text_and_numbers(table: Table) -> bool:
    """True if some column has a cell that is not a number and the typing rule reads some
    other column as continuous: the tables `auto` scores with cg (all-number tables keep
    BGe or BDeu, as before cg existed)."""
    text = any(_numbers(table.columns[j][0]) is None for j in range(table.n))
    return text and "continuous" in column_kinds(table)


def mixed_dataset(table: Table, discrete=None, continuous=None) -> Dataset:
    """The table as a Dataset of kind "mixed": each column discrete (coded 0..r−1, levels in
    natural order, as `bigbn.io.data.discrete_dataset` codes them) or continuous (its
    numbers), by `column_kinds`. DataError (file, row, column) for a continuous cell that is
    not a finite number, a continuous column with one value in every row (zero variance:
    no information, and a degenerate Gaussian), or a discrete column with more than
    MAX_LEVELS levels, or more than 2 levels and more than m/2 of them (an identifier or
    a measurement, not a category)."""
    kinds = column_kinds(table, discrete, continuous)
    declared = {str(name) for name in discrete or ()}
    m, n, p = table.m, table.n, table.path
    data = np.empty((m, n), dtype=np.float64)
    arities = np.zeros(n, dtype=np.int64)
    levels: list[tuple[str, ...]] = []
    known = {}  # the continuous columns' rounding errors that check_carried computed
    for j, kind in enumerate(kinds):
        values, codes = table.columns[j]
        name = table.names[j]
        if kind == "discrete":
            r = values.size
            if r > MAX_LEVELS or (r > 2 and r > m / 2):
                raise DataError(f"{p}, column '{name}': read as discrete but has {r} distinct values in "
                                f"{m} rows (at most {MAX_LEVELS} levels and m/2 of them): an identifier or a "
                                f"measurement; drop it, or read it as continuous ({_declare('continuous', name)}) "
                                "if it is a number")
            if name not in declared:
                _one_spelling(table, j)
            order = _natural_order(values)
            recode = np.empty(r, dtype=np.int64)
            recode[order] = np.arange(r)
            data[:, j] = recode[codes]
            arities[j] = r
            levels.append(tuple(values[order].tolist()))
            continue
        x = _numbers(values)
        if x is None or not np.isfinite(x).all():
            for r, cell in enumerate(table.column(j).tolist()):
                bad = _numbers(np.array([cell]))
                if bad is None or not np.isfinite(bad).all():
                    raise DataError(f"{p}, row {table.line(r)}, column '{name}': '{cell}' is not a finite "
                                    "number (a continuous column of the cg score)")
        check_exact_numbers(p, name, values, x)
        known[j] = check_carried(table, j, x, LOG_ERROR_TOL)
        if np.unique(x).size == 1:
            raise DataError(f"{p}, column '{name}': one value ({values[0]}) in every row: a continuous "
                            "column with zero variance carries no information; drop it (or read it as "
                            f"discrete: --discrete {name})")
        data[:, j] = x[codes]
        levels.append(())
    cont = [j for j, kind in enumerate(kinds) if kind != "discrete"]
    check_carried_together(table, cont, data[:, cont], LOG_ERROR_TOL, known)
    return Dataset(names=table.names, data=data, arities=arities, levels=tuple(levels), kind="mixed", path=p)


def _one_spelling(table: Table, j: int) -> None:
    """DataError when column j, read as discrete because its cells are whole numbers (not
    declared so), writes one number two ways ('1' and '1.0', '0' and '-0', '7' and '07'):
    each distinct cell is a level, so one value would be two levels, and its rows split
    between them (a column 1, 1.0, 2, 2.0 was four levels, and whatever else followed the
    spelling looked like a dependence). Named by its two cells and the row of the second."""
    values, codes = table.columns[j]
    x = _numbers(values)
    if x is None:
        return
    for a, b, same in one_float_cells(values, x):
        if same:
            r = int(np.flatnonzero(codes == b)[0])
            raise DataError(f"{table.path}, row {table.line(r)}, column '{table.names[j]}': '{values[b]}' is "
                            f"'{values[a]}' written another way; read as discrete (whole numbers, at most "
                            f"{MAX_INTEGER_LEVELS} of them) each spelling would be a level of its own: write each "
                            f"value one way, or declare the column ({_declare('discrete', table.names[j])}: its "
                            f"cells as text categories; {_declare('continuous', table.names[j])}: as numbers)")


def _declare(kind: str, name: str) -> str:
    """How to declare column ``name`` of kind "discrete" or "continuous", in both spellings
    (a message that reaches the command line and Python, left as it is by
    `options.python_spelling` in backticks): "`--discrete z` / `discrete=['z']`"."""
    return f"`--{kind} {shlex.quote(name)}` / `{kind}=[{name!r}]`"


# ------------------------------------------------------------------------- the score

def hyperparameters(n_c: int, alpha_mu: float, alpha_w) -> tuple[float, float, float]:
    """(α_μ, α_w, t) of the continuous part: α_w defaults to n_c + α_μ + 1 and must exceed
    n_c + 1; t = α_μ (α_w − n_c − 1) / (α_μ + 1) (T = t·I), as BGe with n_c variables."""
    from bigbn.scores.discrete import MAX_HYPER

    alpha_mu = float(alpha_mu)
    if not (math.isfinite(alpha_mu) and alpha_mu > 0):
        raise OptionError(f"CG alpha_mu must be a positive number, got {alpha_mu}")
    if alpha_w is None and not n_c + alpha_mu + 1 > n_c + 1:
        raise OptionError(f"CG alpha_mu {alpha_mu:g} is too small: the default alpha_w = n_c + alpha_mu + 1 is "
                          f"n_c + 1 = {n_c + 1} in float64; give a larger alpha_mu (or alpha_w)")
    given = alpha_w is not None
    alpha_w = float(n_c + alpha_mu + 1 if alpha_w is None else alpha_w)
    if not (math.isfinite(alpha_w) and alpha_w > n_c + 1):
        raise OptionError(f"CG alpha_w must exceed n_c + 1 = {n_c + 1} (n_c: the continuous columns), "
                          f"got {alpha_w:g}")
    for name, value in (("alpha_mu", alpha_mu), ("alpha_w", alpha_w)):
        if value > MAX_HYPER:
            raise OptionError(f"CG {name} {value:g} is above {MAX_HYPER:g}, the largest accepted "
                              "(as it grows the posteriors tend to the prior's anyway)")
    return alpha_mu, alpha_w, prior_scale(n_c, alpha_mu, alpha_w, given)


class _Split:
    """A mixed dataset in parts: discrete columns (global ids, codes, arities), continuous
    columns (global ids, values), the prior's ν and constants, and each global id's local
    index within its kind."""

    def __init__(self, ds: Dataset, alpha_mu, alpha_w):
        if ds.kind != "mixed":
            raise OptionError(f"the cg score needs mixed data (a Dataset of kind 'mixed'), got {ds.kind} data")
        if ds.m < 1:
            raise DataError(f"{ds.path or 'dataset'}: the cg score needs at least one record")
        self.ds = ds
        self.disc = np.flatnonzero(ds.arities > 0)
        self.cont = np.flatnonzero(ds.arities == 0)
        self.codes = np.ascontiguousarray(ds.data[:, self.disc]).astype(np.int64)
        self.r = ds.arities[self.disc]
        # the continuous columns less their float64 means c (each x − c to float64's relative
        # accuracy), so that ν − x̄_d and x − x̄_d are differences of numbers on the data's
        # spread, not of numbers near c, whose rounding (about ε|c|: a column near 1e12 or
        # 2^53) is then most of the spread; the score is the same (ν moves with the data)
        raw = ds.data[:, self.cont]
        self.names_c = tuple(ds.names[j] for j in self.cont)
        too_large(ds.path, self.names_c, raw)
        self.x = np.ascontiguousarray(raw - raw.mean(axis=0))
        self.local = np.full(ds.n, -1, dtype=np.int64)
        self.local[self.disc] = np.arange(self.disc.size)
        self.local[self.cont] = np.arange(self.cont.size)
        self.n_c = int(self.cont.size)
        if self.n_c:
            self.alpha_mu, self.alpha_w, self.t = hyperparameters(self.n_c, alpha_mu, alpha_w)
            check_normal_prior("CG", self.n_c, ds.m, self.alpha_mu, self.alpha_w, self.t)  # md ≤ m per configuration
            self.nu = self.x.mean(axis=0)

    def check_spread(self, q: int, D) -> None:
        """OptionError when the prior spread over the q configurations of the discrete
        columns D (local ids) has α_μ(d)/(m + α_μ(d)) or t(d) (α_μ/q, t/q) below float64's
        smallest normal number, as `bigbn.scores.bge.check_normal_prior` refuses the whole
        table's: subnormal, they keep fewer digits (α_μ = 1e-300 over 2^60 configurations of
        12 rows scored 1.9e-6 nats off the exact rational scores), and at 0 log t(d) was a
        'math domain error' traceback. The largest q of a scoring is the one to check."""
        tiny = float(np.finfo(np.float64).tiny)
        qf = float(q) if q < 2**1023 else math.inf
        a_mu, t = self.alpha_mu / qf, self.t / qf
        share = a_mu / (self.ds.m + a_mu)
        if share < tiny or t < tiny:
            cols = ", ".join(f"'{self.ds.names[self.disc[a]]}'" for a in D)
            raise OptionError(f"CG alpha_mu {self.alpha_mu:g} with alpha_w {self.alpha_w:g} is too small a prior "
                              f"to spread over the {qf:.3g} configurations of {cols} for {self.ds.m} rows: "
                              f"alpha_mu/q/(m + alpha_mu/q) = {share:.3g} and t/q = {t:.3g} must be at least "
                              f"float64's smallest normal number ({tiny:.3g}); give a larger alpha_mu or "
                              "alpha_w, or fewer levels or discrete parents")

    def discrete_dataset(self) -> Dataset:
        ds = self.ds
        return Dataset(tuple(ds.names[j] for j in self.disc), self.codes.astype(np.int32), self.r,
                       tuple(ds.levels[j] for j in self.disc), "discrete", ds.path)

    def configurations(self, D: tuple[int, ...]) -> tuple[int, np.ndarray, int]:
        """(q, each row's observed-configuration index 0..G−1 (in order of configuration),
        G) of the discrete columns D (local ids); q counts every configuration."""
        if not D:
            return 1, np.zeros(self.ds.m, dtype=np.int64), 1
        q = math.prod(int(self.r[a]) for a in D)
        if q < 2**62:
            key = np.zeros(self.ds.m, dtype=np.int64)
            for a in D:
                key = key * int(self.r[a]) + self.codes[:, a]
        else:
            key = np.unique(self.codes[:, list(D)], axis=0, return_inverse=True)[1].reshape(-1)
        if q <= 4 * self.ds.m:  # dense: which configurations occur, without a sort
            seen = np.zeros(q, dtype=np.int64)
            seen[key] = 1
            index = np.cumsum(seen) - 1
            return q, index[key], int(seen.sum())
        uniq, inverse = np.unique(key, return_inverse=True)
        return q, inverse.reshape(-1).astype(np.int64), int(uniq.size)

    def groups(self, D: tuple[int, ...], diagonal: bool = False) -> "_Groups":
        """The observed configurations of D with their posterior scatter matrices' data
        parts P_d = R_d − T(d) (`bigbn.scores.bge.data_scatter`); diagonal: only their
        diagonals are wanted (sets C of one continuous variable), the rest 0."""
        q, index, G = self.configurations(D)
        if q > 1:
            self.check_spread(q, D)
        if q == 1:
            from bigbn.scores.bge import data_scatter

            raw = np.ascontiguousarray(self.ds.data[:, self.cont])  # as BGe's, bit for bit
            P = data_scatter(raw, self.alpha_mu, None)
            return _Groups(P[None], np.array([self.ds.m]), self.alpha_mu, self.alpha_w, self.t, whole=True)
        # α_w(d) − n_c + 1, not α_w(d) = n_c − 1 + that: with many configurations it is far
        # below n_c, whose ulp it would lose (2e-10 relative in the scores at q = 10^8, n_c = 8)
        a_mu = self.alpha_mu / q
        dof = (self.alpha_w - self.n_c + 1) / q
        t = self.t / q
        counts, means, S = _scatters(index, G, self.x, diagonal)
        d = self.nu[None, :] - means  # (G, n_c)
        w = a_mu * counts / (a_mu + counts)
        outer = d[:, :, None] * d[:, None, :]
        if diagonal:
            outer *= np.eye(self.n_c)[None]
        P = S + w[:, None, None] * outer  # R_d less T(d) = t(d)·I, which `log_dets` keeps apart
        return _Groups((P + np.swapaxes(P, 1, 2)) / 2, counts, a_mu, dof, t)


class _Groups:
    """A discrete set's observed configurations: P (G, n_c, n_c), the posterior scatter
    matrices less T(d) = t(d)·I, rows per configuration m_d (G,), and the spread prior's
    α_μ(d), a_w, t(d) (the same for each), a_w its degrees of freedom of one variable
    α_w(d) − n_c + 1; whole: the empty set's one configuration, the whole table (BGe's
    prior), a_w then α_w itself."""

    def __init__(self, P, counts, a_mu, a_w, t, whole=False):
        self.P, self.counts, self.a_mu, self.a_w, self.t = P, counts.astype(np.float64), a_mu, a_w, t
        self.whole = whole


@numba.njit(cache=True, nogil=True)
def _scatters(index, G, x, diagonal):
    """Rows per configuration (G,), their means (G, n_c) and centred scatter matrices
    (G, n_c, n_c) of the values x (m, n_c) grouped by ``index`` (m,) in 0..G−1: two passes
    over the rows (the means, then the products of the rows less their configuration's
    mean), so that no digits cancel however far a configuration's mean lies from the rest.
    diagonal: only the diagonal (sums of squares), the rest 0 (a k-th discrete parent
    leaves room for one continuous variable only: n_c products per row instead of
    n_c (n_c + 1) / 2)."""
    m, n = x.shape
    counts = np.zeros(G)
    means = np.zeros((G, n))
    for t in range(m):
        g = index[t]
        counts[g] += 1.0
        for a in range(n):
            means[g, a] += x[t, a]
    for g in range(G):
        for a in range(n):
            means[g, a] /= counts[g]
    S = np.zeros((G, n, n))
    c = np.empty(n)
    for t in range(m):
        g = index[t]
        for a in range(n):
            c[a] = x[t, a] - means[g, a]
        if diagonal:
            for a in range(n):
                S[g, a, a] += c[a] * c[a]
            continue
        for a in range(n):
            ca = c[a]
            for b in range(a, n):
                S[g, a, b] += ca * c[b]
    for g in range(G):
        for a in range(n):
            for b in range(a + 1, n):
                S[g, b, a] = S[g, a, b]
    return counts, means, S


def _group_log_marginals(split: _Split, groups: _Groups, C: np.ndarray) -> np.ndarray:
    """Σ_d log p_NW(C | d) for sets C of one size l ≥ 1 (local continuous ids, ascending,
    int64 (S, l)) over the observed configurations ``groups``; float64 (S,). One
    configuration (q = 1, the whole table) is BGe's own computation, bit for bit."""
    from bigbn.scores.bge import _log_marginals_of, log_dets

    if groups.whole:
        return _log_marginals_of(groups.P[0], C, int(groups.counts[0]), split.n_c, groups.t, groups.a_mu,
                                 groups.a_w, split.names_c, split.ds.path)
    l = C.shape[1]
    sub = groups.P[:, C[:, :, None], C[:, None, :]]  # (G, S, l, l)
    # BGe's fixed-order Cholesky, not LAPACK (whose kernels depend on the processor), t apart:
    # log det R_d[C, C] − l·log t(d)
    amp = np.empty(sub.shape[0] * sub.shape[1])
    logdet = log_dets(np.ascontiguousarray(sub).reshape(-1, l, l), groups.t, amp).reshape(sub.shape[:2])
    md = groups.counts
    df = groups.a_w  # α_w(d) − n_c + 1
    a1 = (md + df + (l - 1)) / 2  # (G,)
    # per configuration, as `_cell_sum` judges them (bge.LOG_ERROR_TOL)
    est = a1[:, None] * EPS * amp.reshape(sub.shape[:2])
    bad = (np.isnan(logdet) | (est > LOG_ERROR_TOL)).any(axis=0)
    if bad.any():
        raise collinear(split.ds.path, [split.names_c[j] for j in C[int(np.flatnonzero(bad)[0])].tolist()],
                        " (in the rows of one configuration)")
    gammas = _log_gamma_ratios(a1, md, np.full(md.size, df), l)
    # a0·l·log t(d) − a1·log det R_d = −(m_d/2)·l·log t(d) − a1·(logdet): as BGe's
    const = (-l * md / 2 * log(pi) + l / 2 * np.log(groups.a_mu / (md + groups.a_mu)) + gammas
             - l * md / 2 * log(groups.t))
    return (const[:, None] - a1[:, None] * logdet).sum(axis=0)


def cg_scores(ds: Dataset, k: int, ess: float = 1.0, alpha_mu: float = 1.0, alpha_w=None,
              sets=None) -> np.ndarray:
    """CG local log scores log p(x_i | x_G) (module docstring), float64 (n, F) in the layout
    of `bigbn.kernels.families` (F = Σ_{j ≤ k} C(n − 1, j)); −inf for a discrete node with a
    continuous parent. ``sets`` = (parent_sets, family_index, width): the families named
    there instead (the tiers' layouts; see `bigbn.scores.discrete.local_scores`), float64
    (n, width), NaN where none is named."""
    from bigbn.scores.discrete import parent_set_index

    split = _Split(ds, alpha_mu, alpha_w)
    n = ds.n
    k = min(int(k), n - 1)
    if sets is None:
        parent_sets, family_index = parent_set_index(n, k)
        width = int(family_index.max(initial=-1)) + 1 if n > 1 else 1
        out = np.empty((n, width))
    else:
        parent_sets, family_index, width = sets
        out = np.full((n, width), np.nan)
    is_cont = ds.arities == 0
    members = parent_sets >= 0
    has_cont = (members & is_cont[np.where(members, parent_sets, 0)]).any(axis=1)
    # discrete children: BDeu over the discrete columns; −inf with a continuous parent
    disc = split.disc
    if disc.size:
        fi = family_index[:, disc]
        rows, cols = np.nonzero((fi >= 0) & has_cont[:, None])
        out[disc[cols], fi[rows, cols]] = -np.inf
        _discrete_children(split, k, float(ess), parent_sets, family_index, ~has_cont, sets is None, width, out)
    if split.n_c:
        with np.errstate(all="ignore"):
            _continuous_children(split, parent_sets, family_index, out)
        for i in split.cont.tolist():
            row = out[i][family_index[:, i][family_index[:, i] >= 0]]
            if not np.isfinite(row).all():
                raise DataError(f"{ds.path or 'data'}: the cg score of column '{ds.names[i]}' is not finite "
                                "(values too large or degenerate: rescale the data)")
    return out


def _discrete_children(split, k, ess, parent_sets, family_index, only_discrete, full, width, out) -> None:
    """out[i, f] = BDeu(ess) of each discrete child i and parent set without continuous
    members: the discrete columns' own BDeu scores, all of them at once (the same call, so
    the same bits, as `bigbn.scores.discrete.local_scores` on those columns), or those named."""
    from bigbn.scores.discrete import local_scores

    disc = split.disc
    n_d = disc.size
    kd = min(k, n_d - 1)
    sub = split.discrete_dataset()
    sel = np.flatnonzero(only_discrete & (family_index[:, disc] >= 0).any(axis=1))
    local_ps = np.where(parent_sets[sel] >= 0, split.local[np.maximum(parent_sets[sel], 0)], -1)
    if full:
        from bigbn.kernels.families import family_masks, family_rank

        beta = local_scores(sub, kd, "bdeu", ess)
        fam = family_masks(max(n_d - 1, 0), kd)
        bits = np.where(local_ps >= 0, np.left_shift(np.int64(1), np.maximum(local_ps, 0)), 0).sum(axis=1)
        for a, i in enumerate(disc.tolist()):
            f = family_index[sel, i]
            ok = f >= 0
            g = bits[ok]
            sq = (g & ((1 << a) - 1)) | ((g >> (a + 1)) << a)
            out[i, f[ok]] = beta[a, family_rank(fam, sq)]
        return
    if not sel.size:
        return
    kk = max(kd, 1)
    ps = np.full((sel.size, kk), -1, dtype=np.int64)
    ps[:, :min(kk, local_ps.shape[1])] = local_ps[:, :kk]
    beta = local_scores(sub, kd, "bdeu", ess, sets=(ps, family_index[sel][:, disc], width))
    named = ~np.isnan(beta)
    out[disc] = np.where(named, beta, out[disc])


def _continuous_children(split: _Split, parent_sets, family_index, out) -> None:
    """out[i, f] = Σ_d [log p_NW(Z + i | d) − log p_NW(Z | d)] for each continuous child i
    and parent set D ∪ Z named in family_index, the parent sets grouped by D so that each
    D's configurations and posterior scatter matrices are formed once.

    The discrete sets with more than one configuration go to `_discrete_sets` (numba
    kernels on threads: each D's cells, their means and scatter matrices, and every set's
    log-determinants, once per D); the empty set (and sets of one-level columns, q = 1) is
    the whole table, BGe's own computation."""
    cont = split.cont
    fi = family_index[:, cont]
    sel = np.flatnonzero((fi >= 0).any(axis=1))
    if not sel.size:
        return
    is_disc = split.ds.arities > 0
    ps = parent_sets[sel]
    member = ps >= 0
    at = np.maximum(ps, 0)
    big = np.int64(1) << 40
    # each set's discrete part D and continuous part Z as local ids, ascending, −1 padded
    D = np.sort(np.where(member & is_disc[at], split.local[at], big), axis=1)
    Z = np.sort(np.where(member & ~is_disc[at], split.local[at], big), axis=1)
    D[D == big] = -1
    Z[Z == big] = -1
    base = split.disc.size + 1
    if D.shape[1] and base ** D.shape[1] < 1 << 62:  # one integer per D: a faster grouping
        key = np.zeros(D.shape[0], dtype=np.int64)
        for p in range(D.shape[1]):
            key = key * base + (D[:, p] + 1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        uD = D[first]
    else:
        uD, inverse = np.unique(D, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    dlen = (uD >= 0).sum(axis=1)
    q = [math.prod(int(split.r[a]) for a in row[:c]) for row, c in zip(uD.tolist(), dlen.tolist())]
    whole = [j for j in range(uD.shape[0]) if q[j] == 1]
    for j in whole:  # the whole table: BGe's prior and computation
        _whole_table(split, ps[inverse == j], fi[sel[inverse == j]], cont, out)
    split_d = [j for j in range(uD.shape[0]) if q[j] > 1]
    if split_d:
        _discrete_sets(split, uD[split_d], dlen[split_d], [q[j] for j in split_d],
                       np.searchsorted(split_d, inverse[np.isin(inverse, split_d)]),
                       Z[np.isin(inverse, split_d)], fi[sel[np.isin(inverse, split_d)]], cont, out)


def _whole_table(split: _Split, ps, fi, cont, out) -> None:
    """The families whose discrete parents have one configuration (q = 1): log p_NW over
    the whole table with BGe's prior (`bigbn.scores.bge._log_marginals_of`)."""
    is_disc = split.ds.arities > 0
    Z = np.where((ps >= 0) & ~is_disc[np.maximum(ps, 0)], split.local[np.maximum(ps, 0)], -1)
    Z = -np.sort(-Z, axis=1)  # members first (descending), −1 padding last
    sizes = (Z >= 0).sum(axis=1)
    groups = split.groups(())
    for l in range(int(sizes.max(initial=0)) + 1):
        at = np.flatnonzero(sizes == l)
        if not at.size:
            continue
        C = np.sort(Z[at, :l], axis=1)
        base = _group_log_marginals(split, groups, C) if l else np.zeros(at.size)
        rows, child = np.nonzero(fi[at] >= 0)
        union = np.sort(np.concatenate([C[rows], child[:, None]], axis=1), axis=1)
        fam = _group_log_marginals(split, groups, union)
        out[cont[child], fi[at][rows, child]] = fam - base[rows]


def _discrete_sets(split: _Split, Ds, dlen, qs, which, Z, fi, cont, out) -> None:
    """The families of the discrete sets Ds (local ids, −1 padded; q > 1 configurations
    each): ``which`` names each parent set's D (a row of Ds), Z its continuous part
    (ascending, −1 padded), fi its row of family_index over the continuous children.

    Steps: the cells of each D and their rows (`_cell_index`, `_cell_counts`); the per-cell
    constants of each set size l (log-gamma ratios, `_log_gamma_ratios`); the cells' means
    (and sums of squares, `_cell_moments`); then, per D, the scatter matrices and every set's
    Σ_d (`_score_sets`). The kernels are numba's, on threads. Each step computes the same
    floating-point operations in the same order as `_Split.groups` and
    `_group_log_marginals` do, so the scores are the same bits.

    Where the rows fall into few joint cells (`_joint_cells`: configurations of every
    discrete column, at most `JOINT_SHARE` of the rows), the same steps run on those cells
    instead of the rows: a D-cell's rows, mean and centred scatter matrix are merged from
    its joint cells' (`_cell_counts_w`, `_joint_moments`, `_joint_scatters`), exactly so in
    real numbers and with no digits cancelled, in float64 within a few ulps of the rows'
    sums (2e-15 relative in the scores of tests/test_cg.py). Each D then costs K joint
    cells instead of m rows (K = 973 of m = 10^4 rows for 12 binary columns in a chain,
    2 064 of 10^5). Where the joint cells are many too (12 independent binary columns:
    3 724 of 10^4 rows), the columns are cut into groups, and each pair of groups and
    each three get a table merged from the joint cells or the rows (`_sources`,
    `_table`); a D within two groups then costs its pair's cells (at most 256 for 8
    binary columns), a D of k columns across three groups its three's."""
    m, n_c = split.x.shape
    nD = Ds.shape[0]
    big = max(range(nD), key=lambda j: qs[j])  # the smallest prior of a configuration
    split.check_spread(qs[big], Ds[big][:dlen[big]].tolist())
    codes_t = np.ascontiguousarray(split.codes.T)
    threads = _threads()
    zl = (Z >= 0).sum(axis=1)
    full = np.zeros(nD, dtype=np.bool_)
    np.logical_or.at(full, which, zl > 0)  # off-diagonal entries needed
    lmax = np.zeros(nD, dtype=np.int64)
    np.maximum.at(lmax, which, zl + 1)  # set sizes 1..lmax occur (Z and Z + i)
    src, sources = _sources(split, codes_t, Ds, full)
    perm = np.argsort(src, kind="stable")  # the sets of one source together
    newpos = np.empty(nD, dtype=np.int64)
    newpos[perm] = np.arange(nD)
    Ds, dlen, src, full, lmax = Ds[perm], dlen[perm], src[perm], full[perm], lmax[perm]
    qs = [qs[j] for j in perm.tolist()]
    order = np.argsort(newpos[which], kind="stable")
    which, Z, zl, fi = newpos[which][order], Z[order], zl[order], fi[order]
    set_off = np.searchsorted(which, np.arange(nD + 1))
    rows, child = np.nonzero(fi >= 0)  # the families, grouped by set, so by D
    fam_off = np.searchsorted(rows, set_off)
    fam_col = fi[rows, child]
    bounds = np.searchsorted(src, np.arange(len(sources) + 1))
    with ThreadPoolExecutor(max(1, threads)) as pool:
        for b, (codes_t, wts, xs, wscatter, wdiag, nu) in enumerate(sources):
            _source_sets(split, pool, threads, codes_t, wts, xs, wscatter, wdiag, nu, int(bounds[b]),
                         int(bounds[b + 1]), Ds, dlen, qs, lmax, full, set_off, Z, zl, fam_off, rows, child, fam_col,
                         cont, out)


def _source_sets(split, pool, threads, codes_t, wts, xs, wscatter, wdiag, nu, b0, b1, Ds, dlen, qs, lmax, full,
                 set_off, Z, zl, fam_off, rows, child, fam_col, cont, out) -> None:
    """`_discrete_sets` for its sets b0 .. b1 − 1, whose cells come from one source: the
    rows (``wts`` empty, ``xs`` the values, codes_t the rows' codes), or cells of a table
    (codes_t, rows wts, means xs, scatter matrices wscatter and their diagonals wdiag)."""
    n_c = split.n_c
    joint = wts.shape[0] > 0
    points = xs.shape[0]  # rows, or cells
    if points * (b1 - b0) * max(n_c, 1) ** 2 < PARALLEL_WORK:
        threads = 1  # too little to share: the threads' hand-offs cost more
    # cells: chunks of D whose indices fit in about 64 MiB
    chunk = max(1, (1 << 24) // max(points, 1))
    for lo in range(b0, b1, chunk):
        hi = min(b1, lo + chunk)
        index = np.empty((hi - lo, points), dtype=np.int32)
        G = np.empty(hi - lo, dtype=np.int64)
        _on_threads(pool, threads, hi - lo, points * dlen[lo:hi] + 1,
                    lambda a, b: _cell_index(codes_t, split.r, Ds[lo:hi], dlen[lo:hi], a, b, index, G))
        goff = np.concatenate([[0], np.cumsum(G)])
        counts = np.zeros(int(goff[-1]), dtype=np.int64)
        if not joint:
            _on_threads(pool, threads, hi - lo, np.ones(hi - lo), lambda a, b: _cell_counts(index, goff, a, b, counts))
        else:
            _cell_counts_w(index, goff, 0, hi - lo, wts, counts)
        # per-cell constants of each set size l = 1..lmax: the terms of _group_log_marginals
        a_mu = np.array([split.alpha_mu / qq for qq in qs[lo:hi]])
        df = np.array([(split.alpha_w - split.n_c + 1) / qq for qq in qs[lo:hi]])  # α_w(d) − n_c + 1
        t = np.array([split.t / qq for qq in qs[lo:hi]])
        L = lmax[lo:hi]
        nent = L * G
        coff = np.concatenate([[0], np.cumsum(nent)])
        dof = np.repeat(np.arange(hi - lo), nent)
        within = np.arange(int(coff[-1])) - coff[dof]
        l_f = within // G[dof] + 1
        md = counts[goff[dof] + within % G[dof]].astype(np.float64)
        a1 = (md + df[dof] + (l_f - 1)) / 2
        gammas = np.empty(a1.size)
        for l in range(1, int(L.max(initial=0)) + 1):
            sel = np.flatnonzero(l_f == l)
            gammas[sel] = _log_gamma_ratios(a1[sel], md[sel], df[dof[sel]], l)
        log_t = np.array([log(tt) for tt in t.tolist()])  # per D, math.log as `_group_log_marginals`
        const = (-l_f * md / 2 * log(pi) + l_f / 2 * np.log(a_mu[dof] / (md + a_mu[dof])) + gammas
                 - l_f * md / 2 * log_t[dof])
        # every set's cell means, and the diagonal sets' sums of squares
        cell_means = np.zeros((int(goff[-1]), n_c))
        cell_sq = np.zeros((int(goff[-1]), n_c))
        if not joint:
            _on_threads(pool, threads, hi - lo, np.where(full[lo:hi], 1, 2),
                        lambda a, b: _cell_moments(xs, index, goff, counts, ~full[lo:hi], a, b, cell_means, cell_sq))
        else:
            _on_threads(pool, threads, hi - lo, np.where(full[lo:hi], 1, 2),
                        lambda a, b: _joint_moments(xs, wdiag, wts, index, goff, counts, ~full[lo:hi], a, b,
                                                    cell_means, cell_sq))
        err = np.zeros(hi - lo, dtype=np.int64)
        sl = slice(set_off[lo], set_off[hi])
        fl = slice(fam_off[lo], fam_off[hi])
        _on_threads(pool, threads, hi - lo, np.where(full[lo:hi], n_c * n_c, n_c) * points + 1,
                    lambda a, b: _score_sets(xs, wscatter, wts, nu, index, G, goff, counts, cell_means, cell_sq,
                                             a_mu, t, full[lo:hi],
                                             const, a1, coff, set_off[lo:hi + 1] - set_off[lo], Z[sl], zl[sl],
                                             fam_off[lo:hi + 1] - fam_off[lo], rows[fl] - set_off[lo],
                                             child[fl], fam_col[fl], cont, a, b, out, err))
        if err.any():  # the first set float64 cannot factor: 1 + its index, or −1 − its family's
            s = int(np.flatnonzero(err)[0])
            code = int(err[s])
            if code > 0:
                cols = Z[sl][code - 1]
            else:
                f = -1 - code
                cols = np.append(Z[sl][rows[fl][f] - set_off[lo]], child[fl][f])
            names = sorted((split.names_c[j] for j in cols.tolist() if j >= 0), key=split.names_c.index)
            disc = ", ".join(f"'{split.ds.names[split.disc[a]]}'" for a in Ds[lo + s][:dlen[lo + s]].tolist())
            raise collinear(split.ds.path, names, f" (in the rows of one configuration of {disc})")


def _lgamma_prior(df: float, l: int) -> float:
    """log Γ_l(a0) less its π term, a0 = (df + l − 1)/2: Σ_{j < l} lgamma((df + l − 1 − j)/2),
    each argument formed from df (α_w(d) − n_c + 1) directly, not as a0 − j/2, which for
    j = l − 1 leaves df/2 with the rounding of a0 (df is tiny with many configurations)."""
    return sum(lgamma((df + (l - 1 - j)) / 2) for j in range(l))


def _log_gamma_ratios(a1: np.ndarray, md: np.ndarray, df: np.ndarray, l: int) -> np.ndarray:
    """log Γ_l(a1) − log Γ_l(a0) less their π terms, which cancel, for each cell: Σ_{j < l}
    [lgamma(a1 − j/2) − lgamma(a0 − j/2)], a0 = (df + l − 1)/2, a1 = a0 + md/2 (float64
    arrays of one shape: a1 as the caller forms it, md the cell's rows, df its
    α_w(d) − n_c + 1).

    As BGe's (`bigbn.scores.bge.log_gamma_ratio`): where df/2, the smallest base a0 − (l − 1)/2,
    is at least 16, each term is `bigbn.scores.discrete._log_rising`(a0 − j/2, md/2), from
    Stirling's series, for each distinct (df, md) once; below, Σ_j lgamma(a1 − j/2) less
    `_lgamma_prior` (df's log-gammas once per distinct df), as before, bit for bit. A
    difference of log-gammas near a0·log a0 lost an ulp of them per term, 2e-7 nats at
    α_w = 1e8 (cg-6)."""
    out = np.empty(a1.size)
    far = df / 2 >= _STIRLING_FROM
    near = ~far
    if near.any():
        uniq, inverse = np.unique(df[near], return_inverse=True)
        prior = np.array([_lgamma_prior(d, l) for d in uniq.tolist()])
        out[near] = _lgamma_sums(a1[near], l) - prior[inverse.reshape(-1)]
    if far.any():
        pairs, inverse = np.unique(np.stack([df[far], md[far]]), axis=1, return_inverse=True)
        sums = [sum(_log_rising((d + (l - 1 - j)) / 2, v / 2) for j in range(l)) for d, v in pairs.T.tolist()]
        out[far] = np.array(sums)[inverse.reshape(-1)]
    return out


def _lgamma_sums(a: np.ndarray, l: int) -> np.ndarray:
    """Σ_{j < l} lgamma(a − j/2) for each a (float64), the numbers
    ``sum(lgamma(a - j / 2) for j in range(l))`` gives (the same math.lgamma, the same
    arguments, added in order of j from 0), each distinct a computed once."""
    uniq, inverse = np.unique(a, return_inverse=True)
    total = 0.0
    for j in range(l):
        total = total + np.array(list(map(lgamma, (uniq - j / 2).tolist())))
    return np.asarray(total)[inverse.reshape(-1)]


def _on_threads(pool, threads: int, n: int, cost, fn) -> None:
    """fn(a, b) on the index blocks [a, b) of range(n), on up to ``threads`` threads of
    ``pool`` (a ThreadPoolExecutor; one for all the calls of a scoring): blocks of about
    equal ``cost`` (n,), a few per thread so that a slow thread is not waited for. The
    kernels release the GIL and write disjoint entries, each the same number whichever
    thread computes it."""
    blocks = min(n, 1 if threads <= 1 else 4 * threads)
    if blocks <= 1:
        fn(0, n)
        return
    edges = np.searchsorted(np.cumsum(cost), np.sum(cost) * np.arange(1, blocks) / blocks)
    edges = np.unique(np.concatenate([[0], np.minimum(edges + 1, n), [n]]))
    pairs = list(zip(edges[:-1].tolist(), edges[1:].tolist()))
    list(pool.map(lambda ab: fn(*ab), pairs))


#: past this many configurations a key is renumbered densely before the next column
_KEY_LIMIT = 1 << 62


@numba.njit(cache=True, nogil=True)
def _cell_index(codes_t, r, Ds, dlen, lo, hi, index, G):
    """For each discrete set Ds[s] (s in [lo, hi)): each row's configuration index 0..G−1
    among the configurations seen, in ascending order of configuration (the mixed-radix
    key, first column most significant, as `_Split.configurations`), into index[s] (m,);
    G[s] the number seen. A key that would pass `_KEY_LIMIT` is first renumbered by rank
    (which keeps the order)."""
    m = codes_t.shape[1]
    key = np.empty(m, dtype=np.int64)
    for s in range(lo, hi):
        key[:] = 0
        q = 1
        for p in range(dlen[s]):
            a = Ds[s, p]
            ra = r[a]
            if q > _KEY_LIMIT // ra:
                q = _rank(key)
            for t in range(m):
                key[t] = key[t] * ra + codes_t[a, t]
            q *= ra
        if q <= 4 * m:
            seen = np.zeros(q, dtype=np.int64)
            for t in range(m):
                seen[key[t]] = 1
            c = 0
            for v in range(q):
                if seen[v]:
                    seen[v] = c
                    c += 1
            for t in range(m):
                index[s, t] = seen[key[t]]
            G[s] = c
        else:
            G[s] = _rank(key)
            for t in range(m):
                index[s, t] = key[t]


@numba.njit(cache=True, nogil=True)
def _rank(key):
    """Replace each key by its rank among the distinct keys (ascending); their number."""
    return int(_compress(key))


@numba.njit(cache=True, nogil=True)
def _cell_counts(index, goff, lo, hi, counts):
    """Rows per configuration of the sets s in [lo, hi), into counts[goff[s]:goff[s + 1]]
    (zeros before)."""
    for s in range(lo, hi):
        o = goff[s]
        for t in range(index.shape[1]):
            counts[o + index[s, t]] += 1


#: the joint cells replace the rows when there are at most this share of them (12
#: independent binary columns, m = 10^4, K = 3 724: 36.3 ms of thread CPU at 0.5, 56.9 at 0.25)
JOINT_SHARE = 0.5
#: ... and their scatter matrices take at most this many bytes
JOINT_BYTES = 1 << 28


#: the discrete columns are cut into groups of at most this many configurations, whose
#: pairs and threes get tables of their columns' cells (`_sources`, `_table`)
GROUP_CELLS = 16
#: a source's sets go on threads from about this many products (points · sets · n_c²):
#: below it (12 + 12 columns, 973 joint cells, m = 10^4) one thread took 17.6 ms, two 23.3
PARALLEL_WORK = 1 << 25


def _sources(split: _Split, codes_t: np.ndarray, Ds: np.ndarray, full: np.ndarray):
    """Where each discrete set D's cells come from: (src (nD,), sources), a source being
    (codes (p, P), rows per point (P,) or empty, values or means (P, n_c), scatter
    matrices (P, n_c, n_c) or empty, their diagonals (P, n_c), the prior's ν in the
    source's coordinates).

    What is merged (the joint cells, the tables) is formed from the rows less ν (the
    columns' means), so that a cell's mean carries the rounding of its spread, not of
    its distance from 0 (merging adds a first-order term in it, where the rows' two
    passes do not); its ν is then 0. The rows themselves, where they are the source, are
    not moved (cg-1's numbers).

    The base is the rows themselves, or the joint cells where those are few
    (`_joint_cells`). Then the columns are cut into groups (`_groups`) and, for each pair
    of groups, and for each three groups, a table of their columns' cells is merged from
    the base (`_table`): a D within two groups takes the pair's table, a D within three
    that needs only diagonals (a set of k discrete columns leaves room for one continuous
    variable) the three's; each table is kept only if its cells are at most a quarter of
    the base's points, and all of them within `JOINT_BYTES`."""
    nD = Ds.shape[0]
    rows = (codes_t, np.empty(0, dtype=np.int64), split.x, np.empty((0, 0, 0)), np.empty((0, 0)), split.nu)
    if nD < 2 or codes_t.shape[0] < 2:
        return np.zeros(nD, dtype=np.int64), [rows]
    xc = split.x - split.nu  # the rows less ν: what is merged is formed from these
    joint = _joint_cells(split, codes_t, xc)
    if joint is None:
        sources = [rows]
        base = (codes_t, np.empty(0, dtype=np.int64), xc, np.empty((0, 0, 0)), np.empty((0, 0)), np.zeros(split.n_c))
    else:
        sources = [joint]
        base = joint
    src = np.zeros(nD, dtype=np.int64)
    group = _groups(split)
    ng = int(group.max(initial=-1)) + 1
    if ng < 3 or ng > 62:  # two groups or fewer: their tables are the base; past 62, no masks
        return src, sources
    # each D's groups as a mask (the union of its columns' groups); a D within one group g
    # takes the pair {0, g} ({0, 1} for g = 0), one within two groups their pair, one
    # within three that needs only diagonals the three: a table for each such set of
    # groups that some D takes (not every pair and three of groups: a pass over the
    # base's points each)
    gmask = np.bitwise_or.reduce(np.where(Ds >= 0, np.left_shift(np.int64(1), group[np.maximum(Ds, 0)]), 0),
                                 axis=1)
    pc = popcounts(gmask)
    key = np.where(pc == 1, np.where(gmask == 1, 3, gmask | 1), gmask)
    room = [JOINT_BYTES]
    for size, takers in ((2, pc <= 2), (3, (pc == 3) & ~full)):
        for mask in np.unique(key[takers]).tolist():
            inside = takers & (key == mask)
            C = np.flatnonzero((np.int64(mask) >> group) & 1)
            table = _table(split, base, C, size == 2 and bool(full[inside].any()), room)
            if table is not None:
                src[inside] = len(sources)
                sources.append(table)
    return src, sources


def _groups(split: _Split) -> np.ndarray:
    """The group of each discrete column: the columns cut, in order, into groups of at most
    `GROUP_CELLS` configurations (4 binary columns, 2 ternary)."""
    p = split.r.size
    group = np.zeros(p, dtype=np.int64)
    cells, g = 1, 0
    for a in range(p):
        if cells * int(split.r[a]) > GROUP_CELLS and cells > 1:
            g += 1
            cells = 1
        cells *= int(split.r[a])
        group[a] = g
    return group


def _table(split: _Split, base, C: np.ndarray, with_full: bool, room: list, share: float = 0.25):
    """The cells of the columns C merged from the base source (rows: `_cell_counts`,
    `_cell_moments`, `_full_scatters`; joint cells: `_cell_counts_w`, `_joint_moments`,
    `_joint_scatters`), as a source: with the whole scatter matrices if ``with_full``,
    else their diagonals only. None if its cells are more than ``share`` of the base's
    points, or its matrices more than room[0] bytes (else taken from it)."""
    codes, w, x, S0, d0, nu = base
    P = x.shape[0]
    n_c = split.n_c
    index = np.empty((1, P), dtype=np.int32)
    G = np.empty(1, dtype=np.int64)
    _cell_index(codes, split.r, C[None].astype(np.int64), np.array([C.size]), 0, 1, index, G)
    G = int(G[0])
    need = G * n_c * ((n_c if with_full else 0) + 2) * 8
    if G > share * P or need > room[0]:
        return None
    room[0] -= need
    goff = np.array([0, G])
    counts = np.zeros(G, dtype=np.int64)
    means = np.zeros((G, n_c))
    sq = np.zeros((G, n_c))
    diagonal = np.array([not with_full])
    if w.size:
        _cell_counts_w(index, goff, 0, 1, w, counts)
        _joint_moments(x, d0, w, index, goff, counts, diagonal, 0, 1, means, sq)
    else:
        _cell_counts(index, goff, 0, 1, counts)
        _cell_moments(x, index, goff, counts, diagonal, 0, 1, means, sq)
    if with_full:
        S = np.zeros((G, n_c, n_c))
        if w.size:
            _joint_scatters(x, S0, w, index[0], means, S)
        else:
            _full_scatters(x, index[0], means, counts, np.empty(P, dtype=np.int64),
                           np.empty((int(counts.max()), n_c)), S)
        sq = np.ascontiguousarray(np.diagonal(S, axis1=1, axis2=2))
    else:
        S = np.empty((0, 0, 0))
    first = np.full(G, P, dtype=np.int64)
    np.minimum.at(first, index[0].astype(np.int64), np.arange(P))
    return np.ascontiguousarray(codes[:, first]), counts, means, S, sq, nu


def _joint_cells(split: _Split, codes_t: np.ndarray, x: np.ndarray):
    """The rows grouped by their configuration of every discrete column (the joint cells),
    as a source (`_table` of all the columns from the rows x, in coordinates whose ν is 0):
    each cell's rows, mean and centred scatter matrix formed from its rows in order of
    the rows, if they are at most `JOINT_SHARE` of the rows (and within `JOINT_BYTES`), so
    that each D's cells merged from them cost less than from the rows; else None."""
    rows = (codes_t, np.empty(0, dtype=np.int64), x, np.empty((0, 0, 0)), np.empty((0, 0)), np.zeros(split.n_c))
    return _table(split, rows, np.arange(codes_t.shape[0]), True, [JOINT_BYTES], JOINT_SHARE)


@numba.njit(cache=True, nogil=True)
def _cell_counts_w(index, goff, lo, hi, w, counts):
    """Rows per configuration of the sets s in [lo, hi) from the joint cells: each adds
    its w[j] rows (zeros before)."""
    for s in range(lo, hi):
        o = goff[s]
        for j in range(index.shape[1]):
            counts[o + index[s, j]] += w[j]


@numba.njit(cache=True, nogil=True)
def _joint_moments(mu, wdiag, w, index, goff, counts, diagonal, lo, hi, means, sq):
    """`_cell_moments` from the joint cells (means mu, the diagonals ``wdiag`` of their
    scatter matrices, rows w): a cell's mean is Σ_j w_j mu_j / its rows, and, if
    diagonal[s], its sums of squares about it Σ_j (wdiag_j[a] + w_j (mu_j[a] − mean[a])²),
    the joint cells in order."""
    K, n = mu.shape
    for s in range(lo, hi):
        idx = index[s]
        o = goff[s]
        for j in range(K):
            g = o + idx[j]
            wj = float(w[j])
            for a in range(n):
                means[g, a] += wj * mu[j, a]
        for g in range(goff[s], goff[s + 1]):
            for a in range(n):
                means[g, a] /= float(counts[g])
        if not diagonal[s]:
            continue
        for j in range(K):
            g = o + idx[j]
            wj = float(w[j])
            for a in range(n):
                c = mu[j, a] - means[g, a]
                sq[g, a] += wdiag[j, a] + wj * (c * c)


@numba.njit(cache=True, nogil=True)
def _joint_scatters(mu, within, w, idx, means, S):
    """S[g] += Σ_j within_j + w_j (mu_j − x̄_g)(mu_j − x̄_g)ᵀ over the joint cells j of
    cell g (idx[j] = g), in order of j: the centred scatter of the cell's rows, exactly
    so in real numbers (the parallel-axis rule), with no digits cancelled (every term is
    formed about the cell's own mean). Symmetric bit for bit (c_a c_b is c_b c_a); the
    whole square, not the triangle (measured 10.0 against 6.0 ms of `_score_sets` at
    n = 12 + 12, m = 10^4: fixed-length loops vectorise)."""
    K, n = mu.shape
    c = np.empty(n)
    for j in range(K):
        g = idx[j]
        wj = float(w[j])
        for a in range(n):
            c[a] = mu[j, a] - means[g, a]
        Wj = within[j]
        Sg = S[g]
        for a in range(n):
            ca = c[a]
            Sa = Sg[a]
            Wa = Wj[a]
            for b in range(n):
                Sa[b] += Wa[b] + wj * (ca * c[b])


@numba.njit(cache=True, nogil=True)
def _score_sets(x, within, wts, nu, index, G, goff, counts, cell_means, cell_sq, a_mu, t, full, const, a1, coff,
                set_off, Z, zl, fam_off, fam_set, fam_child, fam_col, cont, lo, hi, out, err):
    """The families of the discrete sets s in [lo, hi) (see `_discrete_sets`): for each,
    the centred scatter matrices (all entries if ``full[s]``: from the rows x,
    `_full_scatters`, or, where ``wts`` is not empty, merged from the joint cells whose
    means are x, scatter matrices ``within`` and rows ``wts``, `_joint_scatters`; else the
    diagonal, ``cell_sq``, from `_cell_moments` or `_joint_moments` with the means),
    posterior matrices' data parts P (R less t(d)·I) as `_Split.groups` forms them, then
    Σ_d (const − a1 · (log det R_d[C, C] − l·log t(d))) for every set Z and Z + i
    (`_cell_sum`), and out[cont[i], col] = the difference."""
    m, n = x.shape
    joint = wts.shape[0] > 0
    perm = np.empty(m, dtype=np.int64)
    cap = 0  # the largest cell of a full set: the rows of the centred buffer
    for s in range(lo, hi):
        if full[s] and not joint:
            for g in range(goff[s], goff[s] + G[s]):
                cap = max(cap, counts[g])
    cb = np.empty((cap, n))
    kz = Z.shape[1]
    C = np.empty(kz + 1, dtype=np.int64)
    L = np.zeros((kz + 1, kz + 1))
    for s in range(lo, hi):
        g_n = G[s]
        cnt = counts[goff[s]:goff[s] + g_n]
        idx = index[s]
        means = cell_means[goff[s]:goff[s] + g_n]
        S = np.zeros((g_n, n, n))
        if full[s] and joint:
            _joint_scatters(x, within, wts, idx, means, S)
        elif full[s]:
            _full_scatters(x, idx, means, cnt, perm, cb, S)
        else:
            for g in range(g_n):
                for a in range(n):
                    S[g, a, a] = cell_sq[goff[s] + g, a]
        P = _posterior(S, means, nu, cnt, a_mu[s], full[s])
        # every set of the group: its Σ_d, then the families' differences
        sets = set_off[s + 1] - set_off[s]
        base = np.zeros(sets)
        nl = np.zeros(kz + 2, dtype=np.int64)  # sets per size |Z|
        nf = np.zeros(kz + 2, dtype=np.int64)  # families per size |Z|
        for j in range(set_off[s], set_off[s + 1]):
            nl[zl[j]] += 1
        for f in range(fam_off[s], fam_off[s + 1]):
            nf[zl[fam_set[f]]] += 1
        for j in range(set_off[s], set_off[s + 1]):
            l = zl[j]
            if l == 0:
                continue
            for p in range(l):
                C[p] = Z[j, p]
            base[j - set_off[s]] = _cell_sum(P, t[s], C, l, const, a1, coff[s] + (l - 1) * g_n, nl[l] == 1, L,
                                             err, s, 1 + j)
        for f in range(fam_off[s], fam_off[s + 1]):
            j = fam_set[f]
            l = zl[j]
            i = fam_child[f]
            p = 0
            for e in range(l):  # Z + i, ascending
                if p == e and Z[j, e] > i:
                    C[p] = i
                    p += 1
                C[p] = Z[j, e]
                p += 1
            if p == l:
                C[p] = i
            fam = _cell_sum(P, t[s], C, l + 1, const, a1, coff[s] + l * g_n, nf[l] == 1, L, err, s, -1 - f)
            out[cont[i], fam_col[f]] = fam - base[j - set_off[s]]


@numba.njit(cache=True, nogil=True)
def _cell_moments(x, index, goff, counts, diagonal, lo, hi, means, sq):
    """For the sets s in [lo, hi): the means of their cells (rows goff[s] + g of ``means``)
    and, if diagonal[s], the sums of squares about them (of ``sq``): each entry adds its
    rows in order of the rows, from 0.0, then divides by the count, as `_scatters` does (so
    the same bits). (Blocks of rows taken through every set, so as to read x once per
    block, measured slower.)"""
    m, n = x.shape
    for s in range(lo, hi):
        idx = index[s]
        o = goff[s]
        for r in range(m):
            g = o + idx[r]
            for a in range(n):
                means[g, a] += x[r, a]
        for g in range(goff[s], goff[s + 1]):
            for a in range(n):
                means[g, a] /= float(counts[g])
        if not diagonal[s]:
            continue
        for r in range(m):
            g = o + idx[r]
            for a in range(n):
                c = x[r, a] - means[g, a]
                sq[g, a] += c * c


@numba.njit(cache=True, nogil=True)
def _full_scatters(x, idx, means, cnt, perm, cb, S):
    """S[g] += Σ (x_r − x̄_g)(x_r − x̄_g)ᵀ over the rows r of each cell g (idx[r] = g), every
    entry (the square, not the triangle: fixed-length loops the compiler vectorises; S[g]
    comes out symmetric bit for bit, a·b being b·a). Each entry adds its rows' products one
    by one in order of the rows, as `_scatters` does, so the same bits: the rows are first
    sorted by cell (a stable counting sort, into ``perm``), each cell's centred into ``cb``
    (at least as many rows as the largest cell), then taken four at a time (one load and
    store of S[g] per four products)."""
    m, n = x.shape
    g_n = means.shape[0]
    start = np.zeros(g_n + 1, dtype=np.int64)
    for g in range(g_n):
        start[g + 1] = start[g] + cnt[g]
    pos = start[:g_n].copy()
    for r in range(m):
        g = idx[r]
        perm[pos[g]] = r
        pos[g] += 1
    for g in range(g_n):
        mg = means[g]
        for u in range(cnt[g]):
            xr = x[perm[start[g] + u]]
            cu = cb[u]
            for a in range(n):
                cu[a] = xr[a] - mg[a]
        Sg = S[g]
        u = 0
        hi = cnt[g]
        while u + 4 <= hi:
            c1 = cb[u]
            c2 = cb[u + 1]
            c3 = cb[u + 2]
            c4 = cb[u + 3]
            for a in range(n):
                a1 = c1[a]
                a2 = c2[a]
                a3 = c3[a]
                a4 = c4[a]
                Sa = Sg[a]
                for b in range(n):
                    Sa[b] = (((Sa[b] + a1 * c1[b]) + a2 * c2[b]) + a3 * c3[b]) + a4 * c4[b]
            u += 4
        while u < hi:
            c1 = cb[u]
            for a in range(n):
                a1 = c1[a]
                Sa = Sg[a]
                for b in range(n):
                    Sa[b] += a1 * c1[b]
            u += 1


@numba.njit(cache=True, nogil=True)
def _posterior(S, means, nu, cnt, a_mu, full):
    """P_d = S_d + w_d (ν − x̄_d)(ν − x̄_d)ᵀ, w_d = α_μ m_d / (α_μ + m_d), then (P + Pᵀ) / 2:
    `_Split.groups`'s operations, in its order (off the diagonal 0 unless ``full``); the
    posterior scatter matrix is R_d = t(d)·I + P_d, t kept apart (`_cell_sum`)."""
    g_n, n = means.shape
    P = np.empty((g_n, n, n))
    d = np.empty(n)
    for g in range(g_n):
        md = float(cnt[g])
        w = a_mu * md / (a_mu + md)
        for a in range(n):
            d[a] = nu[a] - means[g, a]
        for a in range(n):
            for b in range(n):
                o = d[a] * d[b]
                if not full:
                    o *= 1.0 if a == b else 0.0
                P[g, a, b] = S[g, a, b] + w * o
        for a in range(n):
            for b in range(a + 1, n):
                v = (P[g, a, b] + P[g, b, a]) / 2
                P[g, a, b] = v
                P[g, b, a] = v
            P[g, a, a] = (P[g, a, a] + P[g, a, a]) / 2
    return P


@numba.njit(cache=True, nogil=True)
def _cell_sum(P, t, C, l, const, a1, o, single, L, err, s, code):
    """Σ_d (const[o + d] − a1[o + d] · (log det R_d[C, C] − l·log t)) over the cells d of
    P (R_d = t·I + P_d), summed as numpy's ``sum(axis=0)`` of `_group_log_marginals` sums:
    in order of the cells, or, when the group has one set of this size (``single``: a
    (G, 1) array), numpy's pairwise summation of a contiguous vector (`_pairwise`). The
    log-determinant is BGe's fixed-order Cholesky with t apart (`bigbn.scores.bge.log_dets`,
    the same operations); a pivot ≤ 0, or a cell whose estimated error a1·ε·Σ_j (t + 16·P_jj)/d_j
    is above `bigbn.scores.bge.LOG_ERROR_TOL` (`_CELL_ERROR_UNITS` of ε; bge.PIVOT_UNITS), sets err[s] to
    ``code`` (the set's, for the message), if not set."""
    g_n = P.shape[0]
    v = np.empty(g_n)
    for g in range(g_n):
        acc = 0.0
        gain = 0.0
        for j in range(l):
            u = P[g, C[j], C[j]]
            for p in range(j):
                u -= L[j, p] * L[j, p]
            d = t + u
            if not np.isfinite(d):
                acc = np.inf
                break
            if d <= 0.0:
                acc = np.nan
                break
            gain += (t + _CELL_PIVOT_UNITS * P[g, C[j], C[j]]) / d
            L[j, j] = np.sqrt(d)
            r = u / t
            acc += np.log1p(r) if -1.0 < r < np.inf else np.log(d) - np.log(t)
            for i in range(j + 1, l):
                xx = P[g, C[i], C[j]]
                for p in range(j):
                    xx -= L[i, p] * L[j, p]
                L[i, j] = xx / L[j, j]
        if (acc != acc or a1[o + g] * gain > _CELL_ERROR_UNITS) and err[s] == 0:
            err[s] = code
        v[g] = const[o + g] - a1[o + g] * acc
    if single:
        return 0.0 + _pairwise(v, 0, g_n)
    total = v[0]
    for g in range(1, g_n):
        total += v[g]
    return total


@numba.njit(cache=True, nogil=True)
def _pairwise_block(a, lo, n):
    """numpy's pairwise sum of a[lo:lo + n] for n ≤ 128: in order below 8, else 8
    accumulators over blocks of 8, combined as a tree, then the rest in order."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r = a[lo:lo + 8].copy()
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            r[j] += a[lo + i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(cache=True, nogil=True)
def _pairwise(a, lo, n):
    """numpy's pairwise summation of a[lo:lo + n] (numpy/_core/src/umath/loops_utils.h.src:
    halves, rounded down to a multiple of 8, until blocks of ≤ 128), the order np.add.reduce
    sums a contiguous float64 vector. Without recursion (numba's cache cannot load
    recursive functions): a post-order walk of the halving tree with explicit stacks."""
    if n <= 128:
        return _pairwise_block(a, lo, n)
    # the tree has depth ≤ 64; each node is (lo, n, children done?)
    s_lo = np.empty(130, dtype=np.int64)
    s_n = np.empty(130, dtype=np.int64)
    s_done = np.zeros(130, dtype=np.bool_)
    vals = np.empty(130)
    top, nv = 0, 0
    s_lo[0], s_n[0], s_done[0] = lo, n, False
    while top >= 0:
        lo_, n_ = s_lo[top], s_n[top]
        if n_ <= 128:
            vals[nv] = _pairwise_block(a, lo_, n_)
            nv += 1
            top -= 1
        elif s_done[top]:
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
        else:
            s_done[top] = True
            n2 = n_ // 2
            n2 -= n2 % 8
            # push the right half first, so that the left one is summed first
            s_lo[top + 1], s_n[top + 1], s_done[top + 1] = lo_ + n2, n_ - n2, False
            s_lo[top + 2], s_n[top + 2], s_done[top + 2] = lo_, n2, False
            top += 2
    return vals[0]


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cg_log_marginal(ds: Dataset, columns, ess: float = 1.0, alpha_mu: float = 1.0, alpha_w=None) -> float:
    """log p(S) of the variable set S = ``columns`` (indices): the Dirichlet-multinomial
    marginal of its discrete part plus Σ_d of the BGe marginals of its continuous part in
    each observed configuration d (module docstring); the empty set gives 0."""
    split = _Split(ds, alpha_mu, alpha_w)
    S = sorted(int(j) for j in columns)
    D = tuple(int(split.local[j]) for j in S if ds.arities[j] > 0)
    C = [int(split.local[j]) for j in S if ds.arities[j] == 0]
    q, index, G = split.configurations(D)
    total = 0.0
    if D:
        a = float(ess) / q
        # log Γ(a + c) − log Γ(a) and log Γ(ess + m) − log Γ(ess) as rising factorials, as
        # BDeu's kernels take them (`_log_rising`: from Stirling's series for a ≥ 16)
        total += sum(_log_rising(a, float(c)) for c in np.bincount(index, minlength=G).tolist()) \
            - _log_rising(float(ess), float(ds.m))
    if C:
        total += float(_group_log_marginals(split, split.groups(D), np.array([C], dtype=np.int64))[0])
    return total
