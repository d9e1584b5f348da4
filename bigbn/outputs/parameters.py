"""Posterior-mean parameters of a family under a score's own parameter prior.

What causal effects (`bigbn.outputs.effects`) and the learned network
(`bigbn.outputs.model`) both take from the scores' models, in one place:

- Dirichlet (BDeu, K2): the posterior-mean table of a child given its parents,
  (N_zb + a) / (N_z + r a) with the cell prior a the score puts on the family
  (BDeu(ess): a = ess / (r q); K2: a = 1).
- Normal-Wishart (BGe, `bigbn.scores.bge`): with μ | W ~ N(ν, (α_μ W)⁻¹),
  W ~ Wishart(α_w, T⁻¹), the posterior is Σ = W⁻¹ ~ IW(R, α_w + m) with R the posterior
  scatter matrix and E[μ] = (α_μ ν + m x̄) / (α_μ + m) (ν = x̄, as the score takes it);
  a child's regression on its parents has the posterior means of `gaussian_conditional`
  (checked by a Monte Carlo draw of Σ in tests/test_model.py).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["bge_posterior", "gaussian_conditional", "dirichlet_table"]


def _mixed_radix(data, r, Z: list[int]) -> np.ndarray:
    """Each record's configuration of Z as its mixed-radix code (the last of Z fastest)."""
    z = np.zeros(data.shape[0], dtype=np.int64)
    for j in Z:
        z = z * r[j] + data[:, j]
    return z


def dirichlet_table(data, r, child: int, parents, k2: bool, ess: float) -> np.ndarray:
    """The posterior-mean CPT of ``child`` given ``parents`` (node indices, in that order)
    under the score's Dirichlet model: float64 (q, r_child), row z the parents'
    configuration in mixed-radix code (the last parent fastest), every configuration, seen
    or not: (N_zb + a) / (N_z + r_child a) with a = ess / (r_child q) (BDeu) or 1 (K2),
    the cell prior the score puts on the family (BDeu: Heckerman, Geiger & Chickering 1995)."""
    rc = int(r[child])
    parents = list(parents)
    q = math.prod(int(r[j]) for j in parents)
    a = 1.0 if k2 else ess / (rc * q)
    cells = _mixed_radix(data, r, parents) * rc + data[:, child]
    counts = np.bincount(cells, minlength=q * rc).astype(np.float64).reshape(q, rc)
    return (counts + a) / (counts.sum(axis=1, keepdims=True) + rc * a)


def bge_posterior(data: np.ndarray, alpha_mu: float, alpha_w: float | None):
    """The BGe score's normal-Wishart posterior of continuous data (m, n): (the posterior
    mean of μ, (α_μ ν + m x̄)/(α_μ + m) with the score's ν = x̄; R, the posterior scatter
    matrix; α_w, its default filled in). Σ ~ IW(R, α_w + m) a posteriori."""
    from bigbn.scores.bge import _check_params, posterior_scatter

    m, n = data.shape
    alpha_mu, alpha_w, _, t = _check_params(n, alpha_mu, alpha_w, None, data)
    R = posterior_scatter(data, alpha_mu, t, None)
    nu = data.mean(axis=0)
    mean = (alpha_mu * nu + m * data.mean(axis=0)) / (alpha_mu + m)
    return mean, R, alpha_w


def gaussian_conditional(mean: np.ndarray, R: np.ndarray, df: float, y: int, X) -> tuple[float, np.ndarray, float]:
    """The posterior-mean parameters of y's linear Gaussian CPD given parents X (node
    indices, in that order): (intercept, coefficients (|X|,), residual variance), with
    Σ ~ IW(R, df) on all n variables a posteriori (df = α_w + m) and E[μ] = ``mean``.

    The block of A = X ∪ {y} is IW(R_AA, d_A), d_A = df − n + |A|; the Schur complement
    keeps the degrees of freedom, Σ_y·X ~ IW₁(R_y·X, d_A), and given it the coefficients
    are normal with mean R_XX⁻¹ R_Xy (`bigbn.outputs.effects`, module docstring). So
    E[coefficients] = R_XX⁻¹ R_Xy, E[variance] = R_y·X / (d_A − 2) (not the plug-in of
    E[Σ] = R / (df − n − 1): the variance's divisor grows with |X|), and, as E[μ | Σ] is
    the posterior mean whatever Σ, E[intercept] = E[μ_y] − E[coefficients]·E[μ_X]."""
    X = list(X)
    n = R.shape[0]
    if X:
        coef = np.linalg.solve(R[np.ix_(X, X)], R[X, y])
        resid = float(R[y, y] - R[X, y] @ coef)
    else:
        coef, resid = np.zeros(0), float(R[y, y])
    d_a = df - n + len(X) + 1
    return float(mean[y] - coef @ mean[X]), coef, resid / (d_a - 2)
