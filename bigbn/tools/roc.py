"""ROC curves of undirected edge discovery (Koivisto 2006, section 5.1).

Each undirected edge {u, v} is claimed iff p(u->v | x) + p(v->u | x) exceeds a
threshold tau; over all tau, sensitivity TP/(TP+FN) is plotted against the
complementary specificity FP/(FP+TN). The curve has one point per distinct score
(plus (0, 0)), so tied scores give one straight segment, and the area under it
(trapezoid rule) equals P(s+ > s-) + P(s+ = s-)/2 for a random true edge s+ and a
random non-edge s- (the Mann-Whitney statistic).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from bigbn.io.data import read_text, sniff_separator, text_records
from bigbn.errors import DataError


@dataclass(frozen=True)
class RocCurve:
    """An ROC curve: point j claims every pair with score >= thresholds[j].

    fpr, tpr : float64 (J+1,), from (0, 0) to (1, 1), non-decreasing
    thresholds : float64 (J+1,), ``inf`` then the J distinct scores, descending
    auc : area under the curve (trapezoid rule)
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float


def roc_curve(scores, labels) -> RocCurve:
    """ROC curve and AUC of a ranking; one point per distinct score (ties handled).

    scores : float (N,), higher = more confident that the pair is an edge
    labels : bool (N,), true for real edges; both classes must be present
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=bool).ravel()
    if s.shape != y.shape:
        raise DataError(f"roc: {s.size} scores but {y.size} labels")
    if np.isnan(s).any():
        raise DataError("roc: a score is NaN")
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise DataError(
            f"roc: ROC is undefined with {n_pos} true and {n_neg} false pairs "
            "(the truth needs at least one edge and one non-edge)"
        )
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    # last index of each run of equal scores (descending)
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    tp = np.cumsum(y)[ends]
    fp = (ends + 1) - tp
    tpr = np.r_[0.0, tp / n_pos]
    fpr = np.r_[0.0, fp / n_neg]
    thresholds = np.r_[np.inf, s[ends]]
    return RocCurve(fpr, tpr, thresholds, float(np.trapezoid(tpr, fpr)))


def _pairs(n: int, children=None) -> tuple[np.ndarray, np.ndarray]:
    """The unordered pairs u < v (``np.triu_indices(n, 1)`` order) the model can join: all
    of them, or with ``children`` (bool (n,), a dynamic network's slice t) those with at
    least one child; two lagged variables are never joined, so their pair is no question."""
    iu, ju = np.triu_indices(n, 1)
    if children is None:
        return iu, ju
    c = np.asarray(children, dtype=bool)
    keep = c[iu] | c[ju]
    return iu[keep], ju[keep]


def undirected_scores(posterior, children=None) -> np.ndarray:
    """Scores of the n(n-1)/2 unordered pairs u < v: P[u, v] + P[v, u].

    posterior : float (n, n), ``[u, v]`` = p(u -> v | x). Returns float64 (n(n-1)/2,)
    in the order of ``np.triu_indices(n, 1)`` (with ``children``: only the pairs with a
    child, see `_pairs`).
    """
    p = np.asarray(posterior, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise DataError(f"posterior must be a square matrix, got shape {p.shape}")
    iu, ju = _pairs(p.shape[0], children)
    return p[iu, ju] + p[ju, iu]


def undirected_labels(adjacency, children=None) -> np.ndarray:
    """True edges of the unordered pairs u < v (either direction), bool (n(n-1)/2,)."""
    a = np.asarray(adjacency, dtype=bool)
    iu, ju = _pairs(a.shape[0], children)
    return a[iu, ju] | a[ju, iu]


def edge_roc(posterior, adjacency, children=None) -> RocCurve:
    """The paper's undirected-edge ROC of a posterior matrix against a true DAG.

    children : None, or bool (n,) marking a dynamic network's variables of slice t (the
        others, lagged copies, are never children): pairs of two lagged variables are left
        out. They were counted as sure non-edges at score 0 and raised the AUC (3/4 became
        4/5 with one such pair)."""
    return roc_curve(undirected_scores(posterior, children), undirected_labels(adjacency, children))


#: The edge files read: a run's edges.csv, and the one `bigbn sample` writes
#: (samples-PRIOR/edges.csv: the sampled frequency, its se and, for the order-modular
#: prior, the exact posterior)
EDGE_HEADERS = (("parent", "child", "posterior"), ("parent", "child", "probability"))


#: How far p(u->v) + p(v->u) may lie above 1 in a file bigbn wrote. The two directions of a
#: pair exclude each other, so their posteriors sum to at most 1. bigbn writes each value with
#: 17 significant digits (`Result.to_csv`, the study's cells, `bigbn sample`), which reads back
#: as the very float it computed: the file adds no rounding. What is left is the engine's own:
#: p(u->v) and p(v->u) are quotients by two nodes' sums over their parent sets (the same L(V)
#: up to round-off), documented as exact to about 1e-9 (`bigbn.outputs.plot`, the report's
#: `_ROUNDING`). Measured: sums reach 1 + 3e-14 at five variables and 300 rows, 1 + 5e-12 at
#: twelve and 5000 rows (log p(x) ≈ -5e4 nats); the excess grows about with |log p(x)| · 1e-16,
#: so 1e-9 holds to runs of some 1e7 nats. Each value itself is clipped to [0, 1] before it
#: is written, so one outside [0, 1] is refused whatever its distance.
PAIR_ROUNDING = 1e-9


def read_edges(path) -> tuple[list[str], np.ndarray]:
    """(names, P) of `read_edges_and_children`."""
    names, P, _ = read_edges_and_children(path)
    return names, P


def read_edges_and_children(path) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Read an edge-posterior CSV ``parent,child,posterior`` (all n(n-1) directed rows),
    or a sampler's ``parent,child,probability,...`` (its third column is read).

    Returns (names, P, children) with names in order of first appearance, P float64 (n, n),
    ``P[u, v]`` = p(u -> v), zero diagonal, and children None, or for a dynamic network's
    edges (`bigbn run --lag`: no pair into a lagged variable) bool (n,) marking slice t. Errors name the file, line and column: a
    value that is no probability (NaN, outside [0, 1]), a self-loop, a pair listed twice,
    an empty name, and a pair whose two directions sum past 1 (+ `PAIR_ROUNDING`).
    """
    names: dict[str, int] = {}
    entries: dict[tuple[int, int], float] = {}
    lines: dict[tuple[int, int], tuple[int, str]] = {}  # where each pair is, as written
    text = read_text(os.fspath(path))  # once: EDGES may be a pipe
    for line, row in text_records(path, text, _edge_header(text), extra_columns=True):
        u, v = row[0], row[1]
        for col, name in ((1, u), (2, v)):
            if not name:
                raise DataError(f"{path}, line {line}, column {col}: empty node name")
        if u == v:
            raise DataError(f"{path}, line {line}, column 2: self-loop {u!r} -> {v!r}")
        try:
            if "_" in row[2]:  # float() reads "0.1_2" as 0.12
                raise ValueError
            p = float(row[2])
        except ValueError:
            raise DataError(f"{path}, line {line}, column 3: not a number: {row[2]!r}") from None
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise DataError(f"{path}, line {line}, column 3: posterior {row[2]} is not in [0, 1]")
        iu = names.setdefault(u, len(names))
        iv = names.setdefault(v, len(names))
        if (iu, iv) in entries:
            raise DataError(f"{path}, line {line}, column 2: pair {u!r} -> {v!r} listed twice "
                            f"(first on line {lines[(iu, iv)][0]})")
        back = entries.get((iv, iu))
        if back is not None and p + back > 1.0 + PAIR_ROUNDING:
            raise DataError(f"{path}, line {line}, column 3: p({u} -> {v}) + p({v} -> {u}) = {row[2]} + "
                            f"{lines[(iv, iu)][1]} (line {lines[(iv, iu)][0]}) is more than 1; the two "
                            "directions of a "
                            "pair exclude each other, so these are no posteriors")
        entries[(iu, iv)] = p
        lines[(iu, iv)] = (line, row[2])
    n = len(names)
    if n < 2:
        raise DataError(f"{path}: needs at least 2 nodes, found {n}")
    children = None
    if _dynamic(names, entries):  # a dynamic network's: every pair into slice t, the lagged never children
        kids = {v for _, v in entries}
        children = np.array([i in kids for i in range(n)])
    elif len(entries) != n * (n - 1):
        shown = list(names)
        u, v = next((u, v) for u in range(n) for v in range(n) if u != v and (u, v) not in entries)
        raise DataError(
            f"{path}: {len(entries)} rows for {n} nodes; expected all n(n-1) = {n * (n - 1)} "
            f"directed pairs (no row for {shown[u]} -> {shown[v]})"
        )
    P = np.zeros((n, n))
    for (iu, iv), p in entries.items():
        P[iu, iv] = p
    return list(names), P, children


def _edge_header(text: str) -> tuple[str, ...]:
    """The `EDGE_HEADERS` entry the text's first line starts with (else the first, whose
    mismatch `text_records` reports)."""
    head = text.split("\n", 1)[0].strip()
    cells = tuple(c.strip() for c in head.split(sniff_separator(head)))
    return next((h for h in EDGE_HEADERS if cells[:3] == h), EDGE_HEADERS[0])


def _dynamic(names: dict[str, int], entries) -> bool:
    """Whether the edges are a dynamic network's (`bigbn run --lag`): every name that is no
    child is a lagged copy NAME[t-l] of a child, and every pair into a child is there."""
    from bigbn.io.series import lag_of

    children = {v for _, v in entries}
    kids = [x for x, i in names.items() if i in children]
    others = [x for x, i in names.items() if i not in children]
    return bool(others) and all(lag_of(x, kids) > 0 for x in others) \
        and len(entries) == len(children) * (len(names) - 1)


def plot_roc(curves, path, labels=None, title=None) -> None:
    """Write a PNG/SVG/PDF (by suffix) of one or more ROC curves with the diagonal."""
    from bigbn.outputs.plot import figure, save_figure

    fig, ax = figure(figsize=(4.5, 4.5))
    draw_roc_panel(ax, curves, labels)
    if title:
        import textwrap

        ax.set_title("\n".join(textwrap.wrap(title, 40)), fontsize="medium")
    save_figure(fig, path)


def draw_roc_panel(ax, curves, labels=None) -> None:
    """Draw ROC curves on a matplotlib Axes: unit square, diagonal, legend if labelled."""
    ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="-")
    for j, c in enumerate(curves):
        lab = None if labels is None else labels[j]
        ax.plot(c.fpr, c.tpr, lw=1.4, label=lab, drawstyle="default")
    # A small margin, so that perfect curves along the frame (AUC 1) stay visible.
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("equal")
    ax.set_xlabel("1 - specificity")
    ax.set_ylabel("sensitivity")
    if labels is not None:
        ax.legend(loc="lower right", fontsize="small", frameon=False)
