"""Local scores of any magnitude: a per-node shift, exact where it matters.

The posterior is invariant to adding a constant c_i to every local score of node i: each
DAG has exactly one family of each node, so every term of Σ_G Π_i exp β_i(G_i) gains the
same factor exp(Σ_i c_i). The engine's sums, however, are formed in float64 from the
scores as they are: with scores near 1e16 (a jkl file written by another program, or one
score of 1e20) β + γ − log p(x) cancels digits that are not there, and posteriors come
out wrong — above 1 for a pair u→v, v→u — with no error.

`centre` takes β (n, width) and, for every node whose finite scores exceed `SAFE` in
magnitude, subtracts the node's largest finite score: the engine then sees scores ≤ 0
whose largest is 0, and log p(x) = L(V) + Σ_i c_i. For nearby values the subtraction is
exact (Sterbenz); a score far below the node's maximum loses at most half an ulp of the
difference, which is exact in every digit that can change a float64 posterior — unless
that score still matters. A family G of node i can matter only while β_i(G) is within
`NEGLIGIBLE` nats of β_i(∅): replacing G by ∅ in any DAG keeps it a DAG and only adds
linear extensions, so the DAGs with i ← G carry at most exp(β_i(G) − β_i(∅)) of the
total mass. Those families (all of them where ∅ is impossible) must be carried to
`RESOLUTION` nats after the shift, or the run is refused with one line naming the node:
float64 cannot hold them apart, and no answer would be exact. Families more than `CLAMP`
nats below β_i(∅) are raised to that floor: their posterior is 0 in float64 either way.

Nodes within ±SAFE are left untouched, so runs on data (whose scores are that small up to
about 10^5 rows) give the same bits as before this shift existed.
"""

from __future__ import annotations

import numpy as np

from bigbn.errors import DataError

__all__ = ["SAFE", "RESOLUTION", "NEGLIGIBLE", "CLAMP", "centre", "total"]

#: nodes whose finite scores all lie within ±SAFE nats go to the engine unshifted (float64
#: spacing there is at most 2.3e-10 nats)
SAFE = 2.0 ** 20
#: the coarsest float64 spacing accepted for a score that can still change a posterior
#: (a posterior then errs by at most about this, relatively; scores up to 2^33 ≈ 8.6e9 in
#: magnitude are always carried this finely)
RESOLUTION = 1e-6
#: families more than this far below β_i(∅) are raised to β_i(∅) − CLAMP (when that is
#: finite): their posterior, < e^-CLAMP, is 0 in float64 either way, and the kernels are
#: tested on spans of this size, not on spans of 1e300 nats
CLAMP = 2.0 ** 20
#: nats below β_i(∅) past which a family's share of the posterior is below e^-800, i.e.
#: 0 in float64 (and so cannot be printed wrong)
NEGLIGIBLE = 800.0


def centre(beta: np.ndarray, names, where: str = "scores", empty: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(β shifted, c): β − c[:, None] with c_i the largest finite score of node i where any
    finite |β_i| > SAFE, else 0 (β returned as it is when no node needs a shift). ``names``:
    the rows' variable names, for the error; ``where``: the scores' source (a file path);
    ``empty``: the column of the empty parent set. DataError when a shifted node's scores
    that can matter are spaced more coarsely than RESOLUTION (module docstring)."""
    finite = np.isfinite(beta)
    mag = np.where(finite, np.abs(beta), 0.0).max(axis=1, initial=0.0)
    shift = np.flatnonzero(mag > SAFE)
    c = np.zeros(beta.shape[0])
    if shift.size == 0:
        return beta, c
    out = beta.copy()
    for i in shift.tolist():
        top = float(np.max(beta[i][finite[i]]))
        c[i] = top
        row = beta[i] - top
        floor = row[empty] - NEGLIGIBLE if finite[i, empty] else -np.inf
        if finite[i, empty]:  # below this a family's posterior and its share of every other are 0
            row = np.where(finite[i], np.maximum(row, row[empty] - CLAMP), row)
        out[i] = row
        live = row[finite[i] & (row >= floor)]
        worst = float(np.max(np.spacing(np.abs(live)), initial=0.0))
        if worst > RESOLUTION:
            low = float(np.min(live))
            raise DataError(f"{where}: scores of '{names[i]}' reach {-low:.6g} nats below its best "
                            f"({top:.17g}) and may still matter (its empty parent set is not far above "
                            f"them); float64 holds them there only to {worst:.3g} nats, too coarse for an "
                            "exact answer: drop the parent sets that cannot matter, or narrow the scores")
    return out, c


def total(c: np.ndarray, where: str = "scores") -> float:
    """Σ_i c_i, the constant log p(x) gains back; DataError when it is beyond float64
    (log p(x) itself could not be written down)."""
    with np.errstate(over="ignore"):  # an overflow is refused below, not warned about
        t = float(np.sum(c))
    if not np.isfinite(t):
        raise DataError(f"{where}: the scores add up beyond float64's range (log p(data) would be "
                        f"{t}): subtract a constant from the largest variables' scores")
    return t
