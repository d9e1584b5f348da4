"""The BGe score: linear Gaussian networks with a normal-Wishart parameter prior.

Geiger and Heckerman (2002), "Parameter priors for directed acyclic graphical models and
the characterization of several probability distributions", Ann. Statist. 30(5), with the
corrections of Kuipers, Moffa and Heckerman (2014), "Addendum on the scoring of Gaussian
directed acyclic graphical models", Ann. Statist. 42(4).

Model: the m records are i.i.d. N(μ, W⁻¹) with μ | W ~ N(ν, (α_μ W)⁻¹) and
W ~ Wishart(α_w, T⁻¹) (so E[W] = α_w T⁻¹), T = t·I with
t = α_μ (α_w − n − 1) / (α_μ + 1): then the prior expected covariance of a record is I.
Because T is a scaled identity, the data should be on a unit scale (standardise columns
if their variances differ by orders of magnitude).

With the posterior scatter matrix (Kuipers et al. 2014)

    R = T + S_m + (α_μ m / (α_μ + m)) (ν − x̄)(ν − x̄)ᵀ,    S_m = Σ_t (x_t − x̄)(x_t − x̄)ᵀ,

the marginal likelihood of the columns Y (|Y| = l) is (Kuipers et al. 2014, their corrected formula)

    p(D_Y) = π^(−lm/2) (α_μ / (m + α_μ))^(l/2)
             Γ_l((m + α_w − n + l)/2) / Γ_l((α_w − n + l)/2)
             det(T_YY)^((α_w − n + l)/2) det(R_YY)^(−(m + α_w − n + l)/2),

Γ_l the multivariate gamma function, and the local score of node i with parents Π is
p(D_{Π∪{i}}) / p(D_Π) (natural logs here). The score is score-equivalent: Markov
equivalent DAGs get the same product of local scores. The ratio of multivariate gammas is
l log rising factorials of the Wishart's half degrees of freedom by m/2 (`log_gamma_ratio`:
from Stirling's series for large α_w, not as differences of log-gammas, bge-4), and
a0·l·log t − a1·log det R is taken as −(m/2)·l·log t − a1·(log det R − l·log t), the latter
from R's pivots with t apart (`log_dets`, bge-5): at large α_w or α_μ both terms are near
a1·l·log t, and their difference lost 9e-7 nats at 1e8.

Scores carry no structure prior: add `bigbn.scores.priors.log_prior` to get β.
"""

from __future__ import annotations

from math import lgamma, log, pi

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.io.data import Dataset, Table, check_carried, check_carried_together, check_exact_numbers
from bigbn.errors import DataError, OptionError
from bigbn.kernels.bits import popcounts
from bigbn.kernels.families import family_masks, family_rank
from bigbn.scores.discrete import _STIRLING_FROM, _log_rising

__all__ = ["continuous_dataset", "looks_continuous", "posterior_scatter", "bge_log_marginal", "bge_scores",
           "bge_family_scores", "scale_warnings"]

#: A column whose standard deviation is outside [1/UNIT_SCALE, UNIT_SCALE] is far from the
#: unit scale the prior assumes (`scale_warnings`).
UNIT_SCALE = 10.0


def continuous_dataset(table: Table) -> Dataset:
    """Read every column of ``table`` as a real number: a Dataset with kind="continuous".

    ``data`` is float64 (m, n), ``arities`` zeros (n,), ``levels`` n empty tuples.
    Raises DataError naming file, row and column for the first cell that is not a finite
    decimal number (so a mix of numeric and categorical columns is refused: BGe needs
    every column numeric).
    """
    m, n = table.m, table.n
    data = np.empty((m, n), dtype=np.float64)
    known = {}  # the columns' rounding errors that check_carried computed
    for j in range(n):
        distinct, codes = table.columns[j]
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                numbers = distinct.astype(np.float64)
            ok = np.isfinite(numbers)
        except ValueError:
            numbers = None
        if numbers is None or not ok.all():
            for r, cell in enumerate(table.column(j).tolist()):
                try:
                    good = np.isfinite(float(cell))
                except ValueError:
                    good = False
                if not good:
                    raise DataError(
                        f"{table.path}, row {table.line(r)}, column '{table.names[j]}': "
                        f"'{cell}' is not a finite number (the BGe score needs every column "
                        "numeric; use a discrete score for categorical data)")
        check_exact_numbers(table.path, table.names[j], distinct, numbers)
        known[j] = check_carried(table, j, numbers, LOG_ERROR_TOL)
        values = numbers[codes]
        data[:, j] = values
    check_carried_together(table, range(n), data, LOG_ERROR_TOL, known)
    return Dataset(names=table.names, data=data, arities=np.zeros(n, dtype=np.int64),
                   levels=tuple(() for _ in range(n)), kind="continuous", path=table.path)


def scale_warnings(ds: Dataset, columns=None, kind: str = "", prior: str = "the BGe prior") -> list[str]:
    """One line naming the columns whose standard deviation is more than `UNIT_SCALE`
    times from 1 (none: no line). The prior's T = t·I expects every column on a unit
    scale (module docstring); far from it, the prior covariance is negligible or dominant
    in R and the posterior depends on the columns' units. columns: the indices to look at
    (default all), called "{kind}columns" in the line; prior: the prior that assumes it."""
    cols = list(range(ds.n)) if columns is None else list(columns)
    if not cols:
        return []
    with np.errstate(over="ignore", invalid="ignore"):  # numbers too large: the score says so
        x = ds.data if columns is None else ds.data[:, cols]
        sd = x.std(axis=0, ddof=1) if ds.m > 1 else np.ones(len(cols))
    off = [i for i in range(len(cols)) if np.isfinite(sd[i]) and not 1 / UNIT_SCALE <= sd[i] <= UNIT_SCALE]
    if not off:
        return []
    shown = ", ".join(f"'{ds.names[cols[i]]}' (sd {sd[i]:.3g})" for i in off[:5]) + (", ..." if len(off) > 5 else "")
    return [f"{ds.path or 'data'}: {len(off)} of {len(cols)} {kind}columns are far from unit scale: {shown}; "
            f"{prior} assumes a unit scale (prior covariance I), so standardise the columns "
            "((x - mean) / sd) or the posterior depends on their units"]


def looks_continuous(table: Table) -> bool:
    """True if every cell is a number and some column has > 10 distinct values that are
    not all integers (or are integers too large to be category codes, |x| ≥ 2^53), or if
    every cell is a number and some are inf/nan (then `continuous_dataset` names the bad
    cell, instead of a discrete reading blaming another column).

    Used to pick a default score (BGe vs a discrete one); it never raises.
    """
    seen_continuous = False
    for j in range(table.n):
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                values = table.columns[j][0].astype(np.float64)  # the distinct cells
        except ValueError:
            return False
        finite = np.isfinite(values)
        if not finite.all():
            seen_continuous = True
            continue
        distinct = np.unique(values)
        if distinct.size > 10 and (np.any(distinct != np.round(distinct))
                                   or np.any(np.abs(distinct) >= 2.0**53)):
            seen_continuous = True
    return seen_continuous


def prior_scale(n: int, alpha_mu: float, alpha_w: float, given: bool) -> float:
    """t = α_μ (α_w − n − 1)/(α_μ + 1) (T = t·I); α_w not given (the default n + α_μ + 1):
    α_w − n − 1 is α_μ exactly, not float64's α_w less n + 1, which keeps only α_μ's digits
    above n's ulp (t was 4e-6 relative off at α_μ = 1e-10, n = 4, and half off at 1e-15)."""
    return alpha_mu * ((alpha_w - n - 1) if given else alpha_mu) / (alpha_mu + 1)


def check_normal_prior(who: str, n: int, m: int, alpha_mu: float, alpha_w: float, t: float) -> None:
    """OptionError when α_μ/(m + α_μ) or t (`prior_scale`), whose logarithms the
    score takes, is below float64's smallest normal number: there they hold fewer digits, and
    at 0 the log is a math domain error (a traceback). n: the continuous columns."""
    tiny = float(np.finfo(np.float64).tiny)
    share = alpha_mu / (m + alpha_mu)
    if share < tiny or t < tiny:
        raise OptionError(f"{who} alpha_mu {alpha_mu:g} with alpha_w {alpha_w:g} is too small a prior for {m} rows: "
                          f"alpha_mu/(m + alpha_mu) = {share:.3g} and t = alpha_mu·(alpha_w − n − 1)/(alpha_mu + 1) "
                          f"= {t:.3g} must be at least float64's smallest normal number ({tiny:.3g}); give a "
                          "larger alpha_mu or alpha_w")


def _check_params(n: int, alpha_mu, alpha_w, nu, data: np.ndarray):
    from bigbn.scores.discrete import MAX_HYPER

    alpha_mu = float(alpha_mu)
    if not (np.isfinite(alpha_mu) and alpha_mu > 0):
        raise OptionError(f"BGe alpha_mu must be a positive number, got {alpha_mu}")
    if alpha_w is None and not n + alpha_mu + 1 > n + 1:
        raise OptionError(f"BGe alpha_mu {alpha_mu:g} is too small: the default alpha_w = n + alpha_mu + 1 is "
                          f"n + 1 = {n + 1} in float64; give a larger alpha_mu (or alpha_w)")
    given = alpha_w is not None
    alpha_w = float(n + alpha_mu + 1 if alpha_w is None else alpha_w)
    if not (np.isfinite(alpha_w) and alpha_w > n + 1):
        raise OptionError(f"BGe alpha_w must exceed n + 1 = {n + 1}, got {alpha_w}")
    for name, value in (("alpha_mu", alpha_mu), ("alpha_w", alpha_w)):
        if value > MAX_HYPER:
            raise OptionError(f"BGe {name} {value:g} is above {MAX_HYPER:g}, the largest accepted "
                              "(as it grows the posteriors tend to the prior's anyway)")
    t = prior_scale(n, alpha_mu, alpha_w, given)
    check_normal_prior("BGe", n, data.shape[0], alpha_mu, alpha_w, t)
    if nu is None:
        return alpha_mu, alpha_w, None, t  # ν: the column means, exactly (`posterior_scatter`)
    nu = np.asarray(nu, dtype=np.float64)
    if nu.shape != (n,) or not np.isfinite(nu).all():
        raise OptionError(f"BGe nu must be {n} finite numbers (one prior mean per column)")
    return alpha_mu, alpha_w, nu, t


def posterior_scatter(data: np.ndarray, alpha_mu: float, t: float, nu: np.ndarray):
    """The posterior scatter matrix R, float64 (n, n), with T = t·I (`prior_scale`);
    ν None: the column means (the default), so that ν − x̄ is 0 exactly (their float64
    value is off by about ε|x̄|, whose square, m times, would join R).

    Kuipers, Moffa and Heckerman (2014) (see module docstring).

    Centred twice: first by the float64 column means c (each x − c to float64's relative
    accuracy of the difference), then by the mean of x − c, which carries c's own rounding
    error (about ε|c|): one centring leaves it in every row, and m times its square in S,
    which far from 0 (a column near 1e12 or 2^53) is most of the spread (a relative error
    of 1e-6 in the scores of integers near 2^53; tests/test_bge.py).

    t·I + S in one float64 matrix is what the effects need (`bigbn.outputs.parameters.bge_posterior`):
    their regressions R_XX⁻¹ R_Xy and Schur complements R_y·X have no two large terms that
    cancel, unlike the scores' a0·l·log t − a1·log det R (which take t apart: `data_scatter`,
    `log_dets`). Measured against exact rationals (naive.exact_bge_effects_by_dags): within
    4e-14 of the interval's width at α_w, α_μ up to 1e8 and columns of sd 1e-4 at 1e8. Near
    collinear columns the float64 R itself is the limit (a correctly rounded R errs as much),
    within the scores' own `LOG_ERROR_TOL`: 3e-9 of a t's scale where the scores accept."""
    m, n = data.shape
    centred, shift, mean = _centred(data)
    d = np.zeros(n) if nu is None else (nu - shift) - mean
    R = t * np.eye(n) + scatter(np.ascontiguousarray(centred)) + (alpha_mu * m / (alpha_mu + m)) * np.outer(d, d)
    return R


def data_scatter(data: np.ndarray, alpha_mu: float, nu: np.ndarray):
    """P = R − T of `posterior_scatter`, the data's part, S_m + (α_μ m/(α_μ + m))(ν − x̄)(ν − x̄)ᵀ,
    float64 (n, n), centred as there: the scores take R = t·I + P through `log_dets`, which
    keeps t apart (R's diagonal t + P_jj, rounded, loses P_jj's digits below t's ulp)."""
    m, n = data.shape
    centred, shift, mean = _centred(data)
    P = scatter(np.ascontiguousarray(centred))
    if nu is not None:
        d = (nu - shift) - mean
        P = P + (alpha_mu * m / (alpha_mu + m)) * np.outer(d, d)
    return P


#: The most a log marginal may err by its Cholesky's cancellation, in nats: estimated as
#: a1·ε·Σ_j (t + 16·P_jj)/d_j (a pivot d_j, the difference of numbers near R_jj = t + P_jj,
#: carries an error near ε·t + `PIVOT_UNITS`·ε·P_jj; the score takes −a1·log det R), per
#: determinant (the whole table's, or one configuration's in CG). Beyond it the scores refuse (`collinear`): a
#: posterior would be off by as much, relatively. R = T + S + ... is positive definite
#: (T = t·I), so only columns (nearly) linearly dependent at a spread far above t reach it:
#: x2 = x1·1e6 scored 1e-3 off (numerical audit, tests/test_bge.py); x2 = x1·1e3 at 12 rows,
#: estimated 6e-7, err 4e-9 and pass. The estimate is an upper bound in practice (at least
#: 1.4× the error measured against exact rational scores in 824 nearly collinear sets, a
#: median 18×; far more in a configuration with fewer rows than columns, whose
#: rank-deficient scatter cancels almost exactly).
LOG_ERROR_TOL = 1e-6
EPS = float(np.finfo(np.float64).eps)
#: What the estimate above charges a pivot for P's part of R_jj, in units of ε·P_jj: not the
#: Cholesky's one ε alone but P's own entries too, whose centring, products and block sums
#: (`scatter`) err by up to 2ε each, which the pivot's cancellation magnifies as much.
#: Charged one ε, the scores of nearly collinear columns erred by up to 11× the estimate
#: (exact54: 824 sets, m = 50–10 000, against exact rationals; 3.2e-10 nats at an estimate
#: of 1.1e-10, m = 1000), so an accepted score could be 1e-5 nats off; with 16 the estimate
#: is again above every error measured. t, kept apart and exact (`log_dets`), is charged
#: one ε: a large α_w (t near α_w/2) is not refused for it.
PIVOT_UNITS = 16.0


def _centred(data: np.ndarray):
    """(data less c less the mean of data − c, c, that mean), c the float64 column means
    (`posterior_scatter`). A constant column comes out 0 exactly, however large: data − c
    is exact there (Sterbenz), the same in every row, and so is its mean."""
    shift = data.mean(axis=0)
    shifted = data - shift
    mean = shifted.mean(axis=0)
    shifted -= mean  # in place: one copy of the data, not two
    return shifted, shift, mean


@njit(cache=True, nogil=True)
def log_dets(p, t, amp):
    """log det(t·I + p[s]) − l·log t of each p[s] (float64 (S, l, l), symmetric, t·I + p[s]
    positive definite, t > 0), by a Cholesky factorisation of t·I + p[s] in one fixed order
    that keeps t apart: each pivot is d_j = t + u_j, u_j = p_jj − Σ_{q<j} L_jq², and the
    result Σ_j log1p(u_j/t) = Σ_j log(d_j/t). NaN where a pivot is not positive (not
    positive definite), +inf where one is not finite (overflow). amp (S,): Σ_j (t + 16·p_jj)/d_j
    over the pivots (`PIVOT_UNITS`), how much cancellation magnifies the rounding of the
    entries, in units of ε (`LOG_ERROR_TOL`).

    t apart: the score takes a0·l·log t − a1·log det R = −(m/2)·l·log t − a1·(this), and
    with a large α_w (t near α_w/2, a1 near α_w/2) both a0·l·log t and a1·log det R are near
    a1·l·log t (8e8 nats at α_w = 1e8): as a difference they lost 4e-7 nats, and R's
    diagonal t + p_jj in float64 keeps p_jj only to t's ulp. Here u_j carries p's own
    digits and log1p(u_j/t) its own relative accuracy (bge-5). Where u_j/t is not finite (t
    tiny) log d_j − log t instead.

    Not ``np.linalg.slogdet``: LAPACK's LU goes through BLAS kernels chosen by processor at
    run time, and gave other last bits for the same 4 × 4 matrices on a Haswell and on an
    AVX-512 host (see `scatter`)."""
    S, l = p.shape[0], p.shape[1]
    out = np.empty(S)
    L = np.zeros((l, l))
    for s in range(S):
        acc = 0.0
        gain = 0.0
        for j in range(l):
            u = p[s, j, j]
            for q in range(j):
                u -= L[j, q] * L[j, q]
            d = t + u
            if not np.isfinite(d):  # overflow: non-finite, as the caller's check expects
                acc = np.inf
                break
            if d <= 0.0:
                acc = np.nan
                break
            gain += (t + PIVOT_UNITS * p[s, j, j]) / d
            L[j, j] = np.sqrt(d)
            r = u / t
            acc += np.log1p(r) if -1.0 < r < np.inf else np.log(d) - np.log(t)
            for i in range(j + 1, l):
                x = p[s, i, j]
                for q in range(j):
                    x -= L[i, q] * L[j, q]
                L[i, j] = x / L[j, j]
        out[s] = acc
        amp[s] = gain
    return out


#: rows summed plainly before their block's sum joins the compensated total (`scatter`)
SCATTER_BLOCK = 256


@njit(cache=True, nogil=True)
def scatter(c):
    """S = Σ_t c_t c_tᵀ of the rows of ``c`` (float64 (m, n)), symmetric, in one fixed order
    of operations on every machine: each entry sums the rows in blocks of `SCATTER_BLOCK`,
    ascending, and adds each block's sum to a compensated (Neumaier) total.

    Not ``c.T @ c``: BLAS (OpenBLAS picks its kernel by processor at run time) sums in an
    order of its own, so the same data gave BGe scores that differ in the last bits on a
    Haswell and on an AVX-512 host, and a resumed run, or the golden numbers, would not be
    the same bits from one machine to the next."""
    m, n = c.shape
    total = np.zeros((n, n))
    comp = np.zeros((n, n))
    block = np.zeros((n, n))
    for lo in range(0, m, SCATTER_BLOCK):
        block[:] = 0.0
        for r in range(lo, min(lo + SCATTER_BLOCK, m)):
            for i in range(n):
                ci = c[r, i]
                for j in range(i, n):
                    block[i, j] += ci * c[r, j]
        for i in range(n):
            for j in range(i, n):
                a, x = total[i, j], block[i, j]
                s = a + x
                comp[i, j] += (a - s) + x if abs(a) >= abs(x) else (x - s) + a
                total[i, j] = s
    for i in range(n):
        for j in range(i, n):
            total[i, j] += comp[i, j]
            total[j, i] = total[i, j]
    return total


def collinear(path: str, names, where: str = "", standardising=None) -> DataError:
    """The error for columns ``names`` whose posterior scatter matrix float64 cannot factor
    to the scores' accuracy (`LOG_ERROR_TOL`); where: e.g. " (in the rows of one
    configuration of ...)". standardising: whether standardising the columns would make
    them carried (`_standardising`), None where not known: the advice follows it.

    The estimate's P_jj/d_j is about 1/(1 − r_j²) of the columns' multiple correlations r_j
    whatever their scale or offset (P is taken about the means) where the noise's spread
    holds the pivot up, not the prior's t: there standardising does not help (a year and
    3·year + noise at 10^6 rows: refused as given, centred, standardised and less an offset
    alike); it helps columns dependent (about) exactly at a spread far above t (b = a·1e6)."""
    cols = ", ".join(f"'{c}'" for c in names)
    if standardising:
        advice = ("standardise the columns ((x - mean) / sd; at unit scale float64 carries them), "
                  "or drop one of them")
    elif standardising is None:
        advice = ("drop one of them, or replace one by its residual on the others (standardising helps only "
                  "where their spread, not their correlation, is the cause)")
    else:
        advice = ("drop one of them, or replace one by its residual on the others (their correlation is the "
                  "cause: standardising or subtracting an offset does not help)")
    return DataError(f"{path or 'data'}: columns {cols} are linearly dependent, or nearly so{where}, at a spread "
                     "where float64 cannot carry their posterior scatter matrix (its Cholesky factorisation "
                     f"cancels so much that a score could be off by more than {LOG_ERROR_TOL:g}); {advice}")


def standardised_estimate(P: np.ndarray, m: int, t: float, a1: float) -> float:
    """The estimate of `log_dets` (`LOG_ERROR_TOL`), in nats, of the columns whose data
    scatter is ``P`` (float64 (l, l)) were they standardised (sd 1: P_ij·(m − 1)/√(P_ii·P_jj));
    t, a1: the prior's t and the score's a1 as `_log_marginals_of` has them; +inf where
    float64 cannot factor them at all. For `collinear`'s advice only: no score is taken
    from it. (The prior's t·I weighs with a column's scale: in R = t·I + P it adds about
    t·b² to the pivot of y = b·x + noise, so standardising helps where that term, not the
    noise's own spread m·σ², holds the pivot up, and not otherwise.)"""
    d = np.sqrt(np.diagonal(P))
    d = np.where(d > 0, d, 1.0)
    unit = np.ascontiguousarray((P / np.outer(d, d) * max(m - 1, 1))[None])
    amp = np.empty(1)
    logdet = log_dets(unit, t, amp)
    return float(a1 * EPS * amp[0]) if np.isfinite(logdet[0]) else np.inf


def _standardising(estimate: float):
    """`collinear`'s standardising from a `standardised_estimate`: True up to 0.9 of
    `LOG_ERROR_TOL`, False beyond 1.1 of it, None (not known) between: the standardised
    cells' own rounding moves the estimate far less than that (by about a score's own
    error, 1e-6/a1 relative), and so does sd's m − 1 or m."""
    return True if estimate <= 0.9 * LOG_ERROR_TOL else False if estimate > 1.1 * LOG_ERROR_TOL else None


def too_large(path: str, names, data: np.ndarray) -> None:
    """DataError naming the first column of ``data`` (float64 (m, n)) whose sum of squares
    about its mean, four times over, is not finite in float64: the posterior scatter matrix
    (t·I + S + a term of at most S's size, and each configuration's, at most the whole
    table's) would overflow. names: the columns' names."""
    with np.errstate(over="ignore", invalid="ignore"):
        x = _centred(data)[0]  # as `posterior_scatter` centres them
        ss = 4.0 * np.einsum("ij,ij->j", x, x)
    bad = np.flatnonzero(~np.isfinite(ss))
    if bad.size:
        j = int(bad[0])
        raise DataError(f"{path or 'data'}, column '{names[j]}': values too large for float64 (up to "
                        f"{np.abs(data[:, j]).max():.3g}: their mean, or their sum of squares about it, overflows); "
                        "rescale the column")


def _log_marginals(P: np.ndarray, sets: np.ndarray, m: int, n: int, t: float,
                   alpha_mu: float, alpha_w: float, names, path: str = "", where: str = "") -> np.ndarray:
    """log p(D_Y) for every full n-bit mask Y in ``sets`` (int64 (S,)); float64 (S,).
    P: `data_scatter`; names, path, where: the columns' names, the data's path and a clause
    for `collinear`'s message."""
    sizes = popcounts(sets)
    out = np.zeros(sets.size, dtype=np.float64)
    bits = np.arange(n, dtype=np.int64)
    for l in range(1, int(sizes.max(initial=0)) + 1):
        sel = np.flatnonzero(sizes == l)
        members = ((sets[sel, None] >> bits) & 1).astype(bool)  # (S_l, n)
        idx = np.nonzero(members)[1].reshape(sel.size, l)  # ascending node indices
        out[sel] = _log_marginals_of(P, idx, m, n, t, alpha_mu, alpha_w, names, path, where)
    return out


def _log_marginals_of(P: np.ndarray, idx: np.ndarray, m: int, n: int, t: float,
                      alpha_mu: float, alpha_w: float, names, path: str = "", where: str = "") -> np.ndarray:
    """log p(D_Y) for sets Y of one size l ≥ 1 given as node indices, ascending, int64
    (S, l): the module docstring's formula with batched log-determinants of R = t·I + P
    (P: `data_scatter`), its a0·l·log t − a1·log det R_YY taken as −(m/2)·l·log t −
    a1·(log det R_YY − l·log t) (`log_dets`: no two terms near a1·l·log t cancel); float64
    (S,). A determinant float64 cannot carry (`log_dets` NaN, or its estimated error in the
    score above `LOG_ERROR_TOL`) is `collinear`'s error, naming the set by ``names`` (of P's
    indices), ``path`` and ``where``."""
    l = idx.shape[1]
    sub = P[idx[:, :, None], idx[:, None, :]]  # (S, l, l)
    amp = np.empty(idx.shape[0])
    logdet = log_dets(np.ascontiguousarray(sub), t, amp)
    a0 = (alpha_w - n + l) / 2  # prior degrees of freedom / 2 (Kuipers et al. correction)
    a1 = (m + alpha_w - n + l) / 2
    bad = np.isnan(logdet) | (a1 * EPS * amp > LOG_ERROR_TOL)
    if bad.any():
        first = idx[int(np.flatnonzero(bad)[0])]
        # the advice judged for the whole table with ν at the means (where a far ν is the
        # cause, `where` names it and standardising is no remedy of its own)
        helps = None if where else _standardising(standardised_estimate(P[first[:, None], first[None, :]], m, t, a1))
        raise collinear(path, [names[j] for j in first.tolist()], where, helps)
    const = (-l * m / 2 * log(pi) + l / 2 * log(alpha_mu / (m + alpha_mu))
             + log_gamma_ratio(a0, a1, m, l) - l * m / 2 * log(t))
    return const - a1 * logdet


def log_gamma_ratio(a0: float, a1: float, m: float, l: int) -> float:
    """log Γ_l(a1) − log Γ_l(a0) less their π terms, which cancel: Σ_{j < l} [lgamma(a1 − j/2)
    − lgamma(a0 − j/2)], a1 = a0 + m/2 (m: the rows, a whole number, so m/2 may be a half).

    Each term is the log of a rising factorial, `bigbn.scores.discrete._log_rising`(a0 − j/2,
    m/2): where the smallest base a0 − (l − 1)/2 (α_w − n + 1)/2 is at least 16 (α_w ≥ n + 31),
    from Stirling's series, not as a difference of two log-gammas near a0·log a0, which at
    α_w = 1e8 (a0 = 5e7, each log-gamma near 8e8) lost up to 3e-7 nats (the BDeu story of
    bdeu-2, here bge-4; the determinant terms' cancellation, as large, is `log_dets`'). Below that, the differences of
    math.lgamma as before, bit for bit: the log-gammas of a0 < 16 are small (below 28) and
    carry the result to an ulp of lgamma(a1)."""
    if a0 - (l - 1) / 2 < _STIRLING_FROM:
        return sum(lgamma(a1 - j / 2) - lgamma(a0 - j / 2) for j in range(l))
    return sum(_log_rising(a0 - j / 2, m / 2) for j in range(l))


def bge_log_marginal(ds: Dataset, columns, alpha_mu: float = 1.0, alpha_w=None, nu=None) -> float:
    """log p(D_Y) of the column set Y (indices); the empty set gives 0."""
    data = np.asarray(ds.data, dtype=np.float64)
    m, n = data.shape
    alpha_mu, alpha_w, nu, t = _check_params(n, alpha_mu, alpha_w, nu, data)
    names = _names(ds, n)
    too_large(ds.path, names, data)
    P = data_scatter(data, alpha_mu, nu)
    mask = 0
    for j in columns:
        mask |= 1 << int(j)
    return float(_log_marginals(P, np.array([mask], dtype=np.int64), m, n, t, alpha_mu, alpha_w, names,
                                ds.path, _far_prior_mean(data, alpha_mu, nu))[0])


def _far_prior_mean(data: np.ndarray, alpha_mu: float, nu) -> str:
    """`collinear`'s clause where a given prior mean ν puts the columns' R near rank one: its
    term (α_μ m/(α_μ + m))(ν − x̄)_j² above some column's own scatter S_jj (ν = x̄ + 3e4 sd
    scored 6e-8 nats off, 1e5 sd is refused, and the columns are not what is dependent);
    else ""."""
    if nu is None:
        return ""
    m = data.shape[0]
    with np.errstate(all="ignore"):
        centred, shift, mean = _centred(data)
        d = (nu - shift) - mean
        far = alpha_mu * m / (alpha_mu + m) * d * d > np.einsum("ij,ij->j", centred, centred)
    return " (with the prior mean nu far from their means: give a nu near them, or none)" if far.any() else ""


def _names(ds, n: int):
    """The columns' names of ``ds`` (a Dataset), or "#1".."#n" (an object with data only)."""
    names = getattr(ds, "names", None)
    return tuple(names) if names is not None and len(names) == n else tuple(f"#{j + 1}" for j in range(n))


def bge_family_scores(ds: Dataset, sets, alpha_mu: float = 1.0, alpha_w=None, nu=None) -> np.ndarray:
    """BGe local log scores of the families named by ``sets`` = (parent_sets, family_index,
    width) as for `bigbn.scores.discrete.local_scores`: parent sets as node ids ascending, −1 padded
    (P, kk); family_index (P, n) the column of (child i, parent set g), or −1. Returns
    float64 (n, width), NaN where no family was named (the tiers' layouts, bigbn/plan/tiers.py).

    Each log p(D_Y) is the same batched log-determinant as `bge_scores`'s, of the same
    submatrix in the same (ascending) order, so a family scores the same bits either way;
    no bit mask is formed, so n is not bounded by 64."""
    parent_sets, family_index, width = sets
    data = np.ascontiguousarray(ds.data, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] < 1:
        raise DataError(f"{ds.path or 'dataset'}: BGe needs at least one record")
    m, n = data.shape
    alpha_mu, alpha_w, nu, t = _check_params(n, alpha_mu, alpha_w, nu, data)
    names = _names(ds, n)
    too_large(ds.path, names, data)
    out = np.full((n, width), np.nan)
    sizes = (parent_sets >= 0).sum(axis=1)
    sizes[~(family_index >= 0).any(axis=1)] = -1  # a set that is no family's parents: not computed
    batch = 1 << 14
    far = _far_prior_mean(data, alpha_mu, nu)
    with np.errstate(all="ignore"):
        P = data_scatter(data, alpha_mu, nu)
        for l in range(int(sizes.max(initial=0)) + 1):
            for lo in range(0, int((sizes == l).sum()), batch):
                sel = np.flatnonzero(sizes == l)[lo: lo + batch]
                G = parent_sets[sel, :l]
                base = _log_marginals_of(P, G, m, n, t, alpha_mu, alpha_w, names, ds.path, far) if l else \
                    np.zeros(sel.size)
                rows, child = np.nonzero(family_index[sel] >= 0)
                union = np.sort(np.concatenate([G[rows], child[:, None]], axis=1), axis=1)
                fam = _log_marginals_of(P, union, m, n, t, alpha_mu, alpha_w, names, ds.path, far)
                out[child, family_index[sel][rows, child]] = fam - base[rows]
    return out


def bge_scores(ds: Dataset, max_parents: int, alpha_mu: float = 1.0, alpha_w=None, nu=None) -> np.ndarray:
    """BGe local log scores log p(x_i | x_G) for every node and family; float64 (n, F).

    ``out[i, f]`` = log p(D_{G∪{i}}) − log p(D_G) with G = unsqueeze(family_masks(n-1, k)[f], i)
    and k = ``max_parents``. Defaults follow Kuipers et al. (2014): α_w = n + α_μ + 1,
    ν = the column means. Every log p(D_Y) with |Y| <= k+1 is computed once (batched
    log-determinants of submatrices of R), then differenced.
    """
    data = np.ascontiguousarray(ds.data, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] < 1:
        raise DataError(f"{ds.path or 'dataset'}: BGe needs at least one record")
    m, n = data.shape
    k = int(max_parents)
    if not 0 <= k <= n - 1:
        raise OptionError(f"max parents k={k} must be in 0..n-1={n - 1}")
    alpha_mu, alpha_w, nu, t = _check_params(n, alpha_mu, alpha_w, nu, data)
    names = _names(ds, n)
    # Overflow (a spread near 1e154 and beyond) is one error line naming the column, with
    # no numpy warnings on the way
    too_large(ds.path, names, data)
    with np.errstate(all="ignore"):
        P = data_scatter(data, alpha_mu, nu)
        sets = family_masks(n, k + 1)  # every Y with |Y| <= k+1, ascending
        logml = _log_marginals(P, sets, m, n, t, alpha_mu, alpha_w, names, ds.path,
                               _far_prior_mean(data, alpha_mu, nu))
    masks = family_masks(n - 1, k)
    out = np.empty((n, masks.size), dtype=np.float64)
    for i in range(n):
        low = masks & ((1 << i) - 1)
        parents = low | ((masks >> i) << (i + 1))  # unsqueeze, vectorised
        with np.errstate(invalid="ignore"):
            out[i] = logml[family_rank(sets, parents | (1 << i))] - logml[family_rank(sets, parents)]
    return out
