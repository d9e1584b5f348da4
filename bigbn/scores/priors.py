"""Structure priors ρ_i(G) and hard constraints on the structure.

Koivisto (2006), section 2: the prior is order-modular,
``p(≺, G) = Π_i q_i(U_i) ρ_i(G_i)``. This module builds the log ρ part, one value per
family, in the same (n, F) layout as a local-score table (see `bigbn.kernels.families`), so that
``beta = scores + log_prior(...)`` is the β of the paper (q is handled by the engine).

``kind`` selects the base ρ:

* ``"uniform"``: ρ_i(G) = 1 for every family (log 0).
* ``"koivisto-sood"``: ρ_i(G) = 1 / C(n-1, |G|) (Koivisto and Sood 2004): every parent-set
  *size* is equally likely a priori, so small and large families are not swamped by the
  number of medium-sized ones.

On top of the base ρ, optional factors multiply in (in the log domain: add):

* ``edge_prob``: an (n, n) matrix p with p[u, v] the prior probability of the edge u → v.
  Each node's ρ gets the factor Π_{u∈G} p[u, i] · Π_{u∉G, u≠i} (1 − p[u, i]), i.e. the
  edges into i are independent a priori with these probabilities. The factor *multiplies*
  the base ρ (use ``kind="uniform"`` for the pure edge-probability prior). An entry that is
  NaN means "no opinion": that edge contributes no factor. p = 0.5 also leaves every
  posterior unchanged (its factor 0.5 is the same for all families of the node), but it
  shifts log p(x) by log 0.5. p = 0 forbids the edge (log ρ = -inf for families that
  contain u), p = 1 requires it (-inf for families that lack u). The diagonal is ignored.
* ``forbid``: (u, v) pairs; every family of v that contains u gets -inf.
* ``require``: (u, v) pairs; every family of v that lacks u gets -inf.
* ``max_parents``: per-node limits (int array (n,), each 0..k); families of i with more
  than ``max_parents[i]`` parents get -inf.

Unsatisfiable combinations are refused before any table is built (`OptionError`, one line,
naming the nodes). The readers at the end turn the CLI's CSV files into these arguments.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from math import comb, log

import numpy as np

from bigbn.io.data import DECIMAL, INTEGER, csv_records, same_letters
from bigbn.errors import DataError, OptionError
from bigbn.kernels.bits import popcounts
from bigbn.kernels.families import family_masks

KINDS = ("uniform", "koivisto-sood")


def _name(names, i: int) -> str:
    return str(names[i]) if names is not None else str(i)


def _as_pairs(pairs, n: int, what: str) -> list[tuple[int, int]]:
    out = []
    for pair in pairs:
        try:
            u, v = (int(x) for x in pair)
        except (TypeError, ValueError):
            raise OptionError(f"{what} edge {pair!r} is not a pair of node indices") from None
        for x in (u, v):
            if not 0 <= x < n:
                raise OptionError(f"{what} edge ({u}, {v}): node index {x} is not in 0..{n - 1}")
        out.append((u, v))
    return out


def _find_cycle(n: int, edges) -> list[int] | None:
    """A directed cycle [a, b, ..., a] among edges (u, v) meaning u -> v, or None."""
    children = [[] for _ in range(n)]
    for u, v in sorted(set(edges)):
        children[u].append(v)
    state = [0] * n  # 0 unseen, 1 on the stack, 2 done
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, iter(children[root]))]
        path = [root]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(children[nxt])))
                path.append(nxt)
    return None


def _edge_prob_matrix(value, n: int, names) -> np.ndarray:
    """edge_prob as a float64 (n, n) matrix; OptionError for what is not one, naming the
    first pair whose entry is not a number (the diagonal is ignored)."""
    what = f"edge_prob must be a ({n}, {n}) matrix (entry [u][v]: the prior probability of u -> v)"
    if isinstance(value, (dict, str, bytes)):
        raise OptionError(f"{what}, got a {type(value).__name__}")
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError):  # ragged rows
        raise OptionError(f"{what}; cannot read it as one") from None
    if raw.shape != (n, n):
        raise OptionError(f"edge_prob must have shape ({n}, {n}), got {raw.shape}")
    if raw.dtype.kind in "biuf":
        return raw.astype(np.float64)
    out = np.full((n, n), np.nan)
    for u in range(n):
        for v in range(n):
            x = raw[u, v]
            if u == v:
                continue
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
                raise OptionError(f"edge_prob of {_name(names, u)} -> {_name(names, v)} (entry [{u}][{v}]) "
                                  f"must be a probability in [0, 1] (or NaN for no opinion), got {x!r}")
            out[u, v] = float(x)
    return out


def _validate(n, k, kind, edge_prob, forbid, require, max_parents, names):
    """Check every option and return them normalised (raises OptionError)."""
    if kind not in KINDS:
        raise OptionError(f"unknown prior {kind!r}; choose one of {', '.join(KINDS)}")
    if n < 1 or k < 0:
        raise OptionError(f"need n >= 1 and k >= 0, got n={n}, k={k}")
    if names is not None and len(names) != n:
        raise OptionError(f"{len(names)} node names given for {n} nodes")
    forbid = _as_pairs(forbid, n, "forbidden")
    require = _as_pairs(require, n, "required")

    if edge_prob is not None:
        edge_prob = _edge_prob_matrix(edge_prob, n, names)
        off = edge_prob[~np.eye(n, dtype=bool)]
        bad = ~np.isnan(off) & ((off < 0) | (off > 1))
        if np.any(bad):
            raise OptionError("edge_prob entries must lie in [0, 1] (or be NaN for no opinion)")
        # p = 0 / p = 1 are hard constraints too: validate them with the explicit ones.
        for u, v in zip(*np.nonzero(edge_prob == 0.0)):
            if u != v:
                forbid.append((int(u), int(v)))
        for u, v in zip(*np.nonzero(edge_prob == 1.0)):
            if u != v:
                require.append((int(u), int(v)))

    both = sorted(set(forbid) & set(require))
    if both:
        u, v = both[0]
        raise OptionError(
            f"edge {_name(names, u)} -> {_name(names, v)} is both required and forbidden")
    for u, v in require:
        if u == v:
            raise OptionError(f"required edge {_name(names, u)} -> {_name(names, v)} is a self-loop")

    if max_parents is None:
        limits = np.full(n, k, dtype=np.int64)
    else:
        limits = np.asarray(max_parents)
        if limits.shape != (n,) or not np.issubdtype(limits.dtype, np.integer):
            raise OptionError(f"max_parents must be an integer array of shape ({n},)")
        limits = limits.astype(np.int64)
        for i in range(n):
            if not 0 <= limits[i] <= k:
                raise OptionError(
                    f"max parents of {_name(names, i)} is {limits[i]}, must be in 0..k={k}")

    n_required = np.zeros(n, dtype=np.int64)
    for _, v in set(require):
        n_required[v] += 1
    for i in range(n):
        if n_required[i] > limits[i]:
            req = sorted(u for u, v in set(require) if v == i)
            raise OptionError(
                f"{_name(names, i)} has {n_required[i]} required parent{'s' * bool(n_required[i] != 1)} "
                f"({', '.join(_name(names, u) for u in req)}) but at most {limits[i]} allowed")

    cycle = _find_cycle(n, require)
    if cycle is not None:
        raise OptionError(
            "required edges form a cycle: " + " -> ".join(_name(names, x) for x in cycle))
    return edge_prob, sorted(set(forbid)), sorted(set(require)), limits


def log_prior(n: int, k: int, kind: str = "koivisto-sood", *, edge_prob=None, forbid=(),
              require=(), max_parents=None, names=None) -> np.ndarray:
    """log ρ_i(G) for every node and family; float64 array (n, F), F = C(n-1, <=k).

    ``out[i, f]`` is log ρ_i(G) for G = unsqueeze(family_masks(n-1, k)[f], i), with the
    base prior ``kind`` times the optional edge-probability factor, and -inf where a hard
    constraint (forbid, require, edge_prob 0/1, max_parents) rules the family out. See the
    module docstring for the definitions. ``names`` (length n) is only used in messages.
    Raises OptionError for an unknown kind, malformed options or unsatisfiable constraints.
    This is `family_log_prior` in the (n, F) layout; a tiered run calls it in its tiers'
    layouts (`bigbn.plan.tiers`).
    """
    checked = check(n, k, kind, edge_prob, forbid, require, max_parents, names)
    masks = family_masks(n - 1, k)
    size = popcounts(masks)
    out = np.empty((n, masks.size), dtype=np.float64)
    for i in range(n):
        def has(u: int, i=i) -> np.ndarray:
            b = u if u < i else u - 1  # squeezed bit of u in node i's masks
            return ((masks >> b) & 1).astype(bool)

        out[i] = family_log_prior(checked, i, size, has)
    return out


@dataclass(frozen=True)
class Checked:
    """The structure prior's options, checked (`check`): n, k, the base ``kind``, the
    edge-probability matrix (or None), forbidden and required (u, v) pairs (edge_prob's
    0 / 1 entries among them), per-node limits, and the names used in messages."""

    n: int
    k: int
    kind: str
    edge_prob: np.ndarray | None
    forbid: tuple[tuple[int, int], ...]
    require: tuple[tuple[int, int], ...]
    limits: np.ndarray
    names: tuple | None


def check(n: int, k: int, kind: str, edge_prob=None, forbid=(), require=(), max_parents=None,
          names=None) -> Checked:
    """Every option of the structure prior checked and normalised (OptionError, one line,
    naming the nodes, for what is malformed or unsatisfiable)."""
    edge_prob, forbid, require, limits = _validate(n, k, kind, edge_prob, forbid, require, max_parents, names)
    return Checked(n, k, kind, edge_prob, tuple(forbid), tuple(require), limits,
                   None if names is None else tuple(names))


def family_log_prior(prior: Checked, v: int, size: np.ndarray, has, ruled_out_by: str = "the constraints"
                     ) -> np.ndarray:
    """log ρ_v(G) for the families of node v in any layout, the one computation of the
    structure prior (an untiered run's (n, F) table, `log_prior`, and a tiered run's
    layouts, `bigbn.plan.tiers`, call it): float64 (F,).

    size: int (F,), |G| of every family; has(u): bool (F,), whether each family holds u,
    or None where no family of v can hold u (a node of a later tier). The base ρ counts
    n − 1 candidates whatever the layout; the factor of an edge u → v that no family can
    hold is its 1 − p, as for a family that lacks u. The terms are added in the same order
    (base, then u = 0, 1, ...), so every layout gives a family the same bits."""
    n, k = prior.n, prior.k
    if prior.kind == "koivisto-sood":
        out = np.array([0.0 - log(comb(n - 1, s)) for s in range(min(k, n - 1) + 1)])[size]
    else:
        out = np.zeros(size.shape, dtype=np.float64)
    p = prior.edge_prob
    if p is not None:
        with np.errstate(divide="ignore"):
            log_p, log_q = np.log(p[:, v]), np.log1p(-p[:, v])
        for u in range(n):
            if u != v and not np.isnan(p[u, v]):
                h = has(u)
                out += log_q[u] if h is None else np.where(h, log_p[u], log_q[u])
    for u, w in prior.forbid:
        if w == v and u != v:
            h = has(u)
            if h is not None:
                out[h] = -np.inf
    for u, w in prior.require:
        if w == v:
            h = has(u)
            if h is None:
                out[:] = -np.inf
            else:
                out[~h] = -np.inf
    out[size > prior.limits[v]] = -np.inf
    if not np.any(np.isfinite(out)):
        raise OptionError(f"every parent set of {_name(prior.names, v)} is ruled out by {ruled_out_by}")
    return out


# ---- readers for the CLI's files -------------------------------------------------------

def _index(path, line: int, column: str, name: str, index: dict) -> int:
    """index[name]; an unknown name is a DataError naming the file, line and column, with
    the variables (a series or time column is a column of the data, but not a variable) and
    the one that differs only by case, if any."""
    try:
        return index[name]
    except KeyError:
        like = [x for x in index if x.casefold() == name.strip().casefold()]
        same = same_letters(name, index)
        shown = ", ".join(list(index)[:8]) + (", ..." if len(index) > 8 else "")
        raise DataError(
            f"{path}, line {line}, column {column}: unknown node {name!r} "
            + (f"({same})" if same is not None else
               f"(did you mean {like[0]!r}? names are case-sensitive)" if like else
               f"(not a variable of the data; they are {shown})")) from None


def read_edge_list(path, names) -> list[tuple[int, int]]:
    """Read a CSV ``parent,child`` of node names; return (parent, child) index pairs. An
    unknown name or a self-loop is a DataError naming the file and line."""
    index = {str(x): j for j, x in enumerate(names)}
    out = []
    for line, (p, c) in csv_records(path, ("parent", "child")):
        u, v = _index(path, line, "parent", p, index), _index(path, line, "child", c, index)
        if u == v:
            raise DataError(f"{path}, line {line}: self-loop {p} -> {c}")
        out.append((u, v))
    return out


def _check_exact_prob(path, line, text: str, prob: float) -> None:
    """A prob cell that float64 turns into 0 or 1 (a forbidden or required edge) must be 0 or
    1 (1e-400 and 0.99999999999999999 are not: they would silently forbid or require the
    edge), and one above 0 must be a normal float64 (below, its log holds fewer digits)."""
    from fractions import Fraction

    tiny = float(np.finfo(np.float64).tiny)
    if prob not in (0.0, 1.0) and not 0.0 < prob < tiny:
        return
    try:
        exact = Fraction(text.strip())
    except ValueError:  # not a plain decimal ('1e0' is one): float64 read it, keep that
        return
    where = f"{path}, line {line}, column prob: {text!r}"
    if not 0 <= exact <= 1:
        raise DataError(f"{where} is not a probability in [0, 1]")
    if exact != prob or 0.0 < prob < tiny:
        raise DataError(f"{where} is too close to {'1' if prob == 1.0 else '0'} for float64 (read as {prob!r}, "
                        "which would " + ("require the edge" if prob == 1.0 else "forbid the edge" if prob == 0.0
                                          else "hold fewer digits") + "); give 0 to forbid it, 1 to require it, "
                        "or a probability float64 carries")




def read_edge_prob(path, names, default: float = np.nan) -> np.ndarray:
    """Read a CSV ``parent,child,prob``; return the (n, n) float64 edge_prob matrix.

    Pairs not in the file get ``default``; the default NaN means "no opinion" (no factor in
    ρ, see module docstring). A pair listed twice, a self-loop or a prob outside [0, 1] is
    a DataError naming the file and line.
    """
    index = {str(x): j for j, x in enumerate(names)}
    n = len(names)
    out = np.full((n, n), default, dtype=np.float64)
    seen = set()
    for line, (p, c, s) in csv_records(path, ("parent", "child", "prob")):
        u = _index(path, line, "parent", p, index)
        v = _index(path, line, "child", c, index)
        if u == v:
            raise DataError(f"{path}, line {line}: self-loop {p} -> {c}")
        if (u, v) in seen:
            raise DataError(f"{path}, line {line}: edge {p} -> {c} listed twice")
        seen.add((u, v))
        try:
            prob = float(s) if DECIMAL.fullmatch(s) else np.nan  # float() also reads '0.2_5' as 0.25
        except ValueError:
            prob = np.nan
        if not 0.0 <= prob <= 1.0:
            raise DataError(f"{path}, line {line}, column prob: {s!r} is not a probability in [0, 1]")
        _check_exact_prob(path, line, s, prob)
        out[u, v] = prob
    return out


def read_max_parents(path_or_str, names, k: int) -> np.ndarray:
    """Per-node max parents as int64 (n,): a CSV file ``node,max_parents`` or one integer.

    Nodes not listed in the file keep k. A plain integer string (e.g. ``"2"``) applies to
    every node. Values must be in 0..k.
    """
    n = len(names)
    text = str(path_or_str).strip()
    if not os.path.exists(text):
        if not INTEGER.fullmatch(text):
            raise DataError(f"{text}: not a file and not an integer max-parents value")
        value = int(text)
        if not 0 <= value <= k:
            raise OptionError(f"max parents {value} must be in 0..k={k}")
        return np.full(n, value, dtype=np.int64)
    index = {str(x): j for j, x in enumerate(names)}
    out = np.full(n, k, dtype=np.int64)
    seen: dict[int, int] = {}
    for line, (name, s) in csv_records(text, ("node", "max_parents")):
        i = _index(text, line, "node", name, index)
        if i in seen:
            raise DataError(f"{text}, line {line}: node '{name}' is listed again (first on line "
                            f"{seen[i]}); give each node once")
        seen[i] = line
        value = int(s) if INTEGER.fullmatch(s) else -1
        if not 0 <= value <= k:
            raise DataError(
                f"{text}, line {line}, column max_parents: {s!r} is not an integer in 0..k={k}")
        out[i] = value
    return out
