"""Edge confidence in bnlearn's language: strength and direction, an averaged DAG, CPDAG marks.

bnlearn (R) reads structure uncertainty as a table of unordered pairs listed in both
orientations, ``from, to, strength, direction`` (`boot.strength`, `custom.strength`):

    strength(u, v)  = p(u and v adjacent | data) = p(u → v) + p(v → u)   (the same both ways)
    direction(u, v) = p(u → v | u, v adjacent)   = p(u → v) / strength   (0 when strength = 0)

bigbn has the p(u → v) exactly, so both columns are exact posteriors, not bootstrap
frequencies (`strength_rows`; a run writes them as WORKDIR/strength.csv).

`averaged_arcs` is the DAG `Result.averaged` returns. Thresholding p(u → v) ≥ t can give a
cycle (on examples/asia.csv at t = 0.4: smoke ⇄ lung, each direction 0.41), so the arcs
are taken greedily: every arc with p(u → v) ≥ t by decreasing posterior (ties in node
order), skipping an arc that would close a directed cycle with the arcs already taken
(in particular the weaker direction of a pair whose both directions pass). The result
is acyclic by construction, and it is the thresholded graph whenever that has no cycle.
``by="adjacency"`` is bnlearn's own rule instead (`averaged.network`: a pair whose strength
exceeds the threshold, oriented by a direction ≥ 0.5), cycles broken the same way.

`cpdag` gives the edge marks of a DAG's Markov equivalence class (its CPDAG: an arc is
compelled, the same in every DAG of the class, or reversible, an undirected edge):
the v-structures oriented, then Meek's rules R1–R3 to closure (Meek 1995; R4 is not
needed when starting from the pattern of a DAG). `cpdag_probabilities` averages those
marks over sampled DAGs (weighted, as `bigbn.outputs.samples.Samples` holds them):
p(u → v compelled) and p(u — v reversible) under the posterior, which is what a
score-equivalent model can say about a direction.
"""

from __future__ import annotations


import numpy as np

from bigbn.errors import OptionError

__all__ = ["HEADER", "RULES", "strength_rows", "write_strength", "averaged_arcs", "cpdag", "cpdag_probabilities"]

#: the columns of strength.csv, as bnlearn names them
HEADER = ("from", "to", "strength", "direction")


def strength_matrices(posterior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(strength, direction), float64 (n, n): strength[u, v] = p(u → v) + p(v → u) (at most
    1), direction[u, v] = p(u → v) / strength[u, v] (0 where the strength is 0)."""
    p = np.asarray(posterior, dtype=np.float64)
    strength = np.minimum(p + p.T, 1.0)
    np.fill_diagonal(strength, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        direction = np.where(strength > 0, p / np.where(strength > 0, p + p.T, 1.0), 0.0)
    np.fill_diagonal(direction, 0.0)
    return strength, direction


def strength_rows(names, posterior: np.ndarray) -> list[tuple[str, str, float, float]]:
    """Every ordered pair (from, to, strength, direction), from in data order, then to."""
    s, d = strength_matrices(posterior)
    n = len(names)
    return [(names[u], names[v], float(s[u, v]), float(d[u, v]))
            for u in range(n) for v in range(n) if u != v]


def write_strength(path, names, posterior: np.ndarray) -> None:
    """WORKDIR/strength.csv: the header from,to,strength,direction and every ordered pair
    (R: ``read.csv``; docs/tutorial.md shows how `averaged.network` takes it)."""
    from bigbn.io.data import csv_line

    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write(csv_line(HEADER))
        for a, b, s, d in strength_rows(names, posterior):
            fh.write(csv_line([a, b, f"{s:.17g}", f"{d:.17g}"]))


#: the two rules of `averaged_arcs`
RULES = ("arc", "adjacency")


def averaged_arcs(posterior: np.ndarray, threshold: float,
                  by: str = "arc") -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(arcs kept, arcs skipped) of the averaged DAG (module docstring).

    by="arc": the candidates are every (u, v) with p(u → v) ≥ threshold, by decreasing
    p(u → v). by="adjacency" (bnlearn's `averaged.network`): every (u, v) with strength >
    threshold (or strength 1) and direction ≥ 0.5, by decreasing strength, then direction.
    Ties in node order (u, then v). A candidate is kept unless v already reaches u through
    the arcs kept before it, so the kept arcs form a DAG."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)) \
            or not 0 < threshold <= 1:  # compared as it is: float(10**400) was an OverflowError
        raise OptionError(f"the threshold is a probability in (0, 1], got {threshold!r}")
    if by not in RULES:
        raise OptionError(f"by is one of {', '.join(RULES)}, got {by!r}")
    p = np.asarray(posterior, dtype=np.float64)
    n = p.shape[0]
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
    if by == "arc":
        cand = sorted((-p[u, v], u, v) for u, v in pairs if p[u, v] >= threshold)
    else:
        s, d = strength_matrices(p)
        cand = sorted((-s[u, v], -d[u, v], u, v) for u, v in pairs
                      if (s[u, v] > threshold or s[u, v] == 1.0) and d[u, v] >= 0.5)
    reach = np.eye(n, dtype=bool)  # reach[a, b]: a path a ⇝ b through the kept arcs
    kept, skipped = [], []
    for *_, u, v in cand:
        if reach[v, u]:
            skipped.append((u, v))
            continue
        kept.append((u, v))
        # everything that reaches u now reaches everything v reaches
        reach[np.ix_(reach[:, u], reach[v])] = True
    return kept, skipped


def _adjacency(parents) -> np.ndarray:
    """Boolean (n, n) [u, v] = u → v from int64 parent masks (n,)."""
    masks = np.asarray(parents, dtype=np.int64)
    n = masks.size
    return ((masks[None, :] >> np.arange(n, dtype=np.int64)[:, None]) & 1).astype(bool)


def cpdag(adjacency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CPDAG of a DAG (boolean (n, n), [u, v] = u → v): (compelled, reversible), boolean
    (n, n): compelled[u, v] when u → v is in every DAG of the equivalence class,
    reversible[u, v] = reversible[v, u] when the edge u — v is undirected."""
    A = np.asarray(adjacency, dtype=bool)
    n = A.shape[0]
    adj = A | A.T
    directed = np.zeros((n, n), dtype=bool)
    for c in range(n):  # v-structures a → c ← b, a and b not adjacent
        pa = np.flatnonzero(A[:, c])
        for i, a in enumerate(pa):
            for b in pa[i + 1:]:
                if not adj[a, b]:
                    directed[a, c] = directed[b, c] = True
    undirected = adj & ~directed & ~directed.T
    others = ~np.eye(n, dtype=bool)
    changed = True
    while changed:
        changed = False
        for a, b in np.argwhere(undirected):  # each undirected edge, both ways
            if not undirected[a, b]:  # oriented earlier in this pass
                continue
            # R1: c → a, a — b, c and b not adjacent  ⇒  a → b
            r1 = np.any(directed[:, a] & ~adj[:, b] & others[b])
            # R2: a → c → b, a — b  ⇒  a → b
            r2 = r1 or np.any(directed[a] & directed[:, b])
            # R3: a — c → b, a — d → b, c and d not adjacent, a — b  ⇒  a → b
            cs = np.flatnonzero(undirected[a] & directed[:, b]) if not r2 else ()
            r3 = len(cs) > 1 and bool((~adj[np.ix_(cs, cs)] & others[np.ix_(cs, cs)]).any())
            if r2 or r3:
                directed[a, b] = True
                undirected[a, b] = undirected[b, a] = False
                changed = True
    return directed, undirected


def cpdag_probabilities(parents: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From sampled DAGs (int64 parent masks (T, n), weights (T,) summing to 1):
    (p_compelled, p_reversible), float64 (n, n): the posterior probability that u → v is a
    compelled arc of the sample's CPDAG, and that u — v is an undirected edge of it
    (symmetric). p_compelled[u, v] + p_reversible[u, v] is p(u → v as a directed-or-
    undirected mark); with p_compelled[v, u] they add up to the strength of the pair."""
    parents = np.asarray(parents)
    if parents.ndim != 2:
        raise OptionError("CPDAG marks need samples of at most 63 variables (one int64 mask per parent set)")
    n = parents.shape[1]
    dags, inverse = np.unique(parents, axis=0, return_inverse=True)
    w = np.bincount(inverse.reshape(-1), weights=np.asarray(weights, dtype=np.float64), minlength=len(dags))
    comp, rev = np.zeros((n, n)), np.zeros((n, n))
    for row, wt in zip(dags, w):
        d, u = cpdag(_adjacency(row))
        comp += wt * d
        rev += wt * u
    return comp, rev
