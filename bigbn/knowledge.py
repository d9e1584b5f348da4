"""What a user knows about the structure, by variable name: one frozen, checked object.

`Knowledge` holds

- ``tiers``: a bucket order, earliest first (a list of lists of names, or {name: tier}
  with integer tiers, lower = earlier): only the orders that list every earlier tier
  first have prior mass (docs/posterior.md, "Tiers"); ``no_edges_within``: tiers (by
  position, 0 = earliest; True = all) whose variables take no parents from their own
  tier (Tetrad's forbidden-within-tier);
- ``forbidden`` and ``required``: (parent, child) edges;
- ``edge_prob``: {(parent, child): p}, the prior probability of an edge (p = 0 forbids
  it, p = 1 requires it);
- ``max_parents``: {name: limit}, below the run's k.

All of it is order-modular, so it stays in the exact DP (bigbn/scores/priors.py, bigbn/plan/tiers.py);
nothing is a filter after the fact. Contradictions are refused here, in one place, each
with one line naming the culprit: a variable in two tiers, an edge both required and
forbidden, a required edge into an earlier tier or within a no-edges tier, required edges
that form a cycle, more required parents than a variable's limit. What needs the data's
variables (an unknown name, a limit above k) is checked by `Knowledge.bind`, which turns
the object into the engine's index form.

Built in Python (``Knowledge(tiers=[["age", "sex"], ["smoke"]], forbidden=[("cancer",
"smoke")])``), from the CLI's files (`Knowledge.from_files`: ``--tiers``, ``--forbid``,
``--require``, ``--edge-prob``, ``--max-parents-file``), written back to them
(`Knowledge.write`), or from pgmpy's ``ExpertKnowledge`` (`Knowledge.from_pgmpy`).
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bigbn.errors import OptionError

__all__ = ["Knowledge"]

Edge = tuple[str, str]


def _name(x, what: str) -> str:
    if not isinstance(x, str) or not x:
        raise OptionError(f"{what}: a variable is named by a non-empty string, got {x!r}")
    return x


def _edges(value, what: str) -> tuple[Edge, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise OptionError(f"{what} must be a list of (parent, child) name pairs, got {value!r}")
    out = set()
    for pair in value:
        if isinstance(pair, (str, bytes, dict)) or not hasattr(pair, "__iter__"):
            raise OptionError(f"{what} edge {pair!r} is not a (parent, child) pair of names")
        pair = tuple(pair)  # once: a generator's second reading was empty (a ValueError traceback)
        if len(pair) != 2:
            raise OptionError(f"{what} edge {pair!r} is not a (parent, child) pair of names")
        u, v = (_name(x, f"{what} edge {pair!r}") for x in pair)
        if u == v:
            raise OptionError(f"{what} edge {u} -> {v} is a self-loop")
        out.add((u, v))
    return tuple(sorted(out))


def _tiers(value) -> tuple[tuple[str, ...], ...]:
    if value is None:
        return ()
    if isinstance(value, dict):
        groups: dict[int, list[str]] = {}
        for name, t in value.items():
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise OptionError(f"tiers: the tier of {name!r} must be an integer, got {t!r}")
            groups.setdefault(int(t), []).append(_name(name, "tiers"))
        lists = [groups[t] for t in sorted(groups)]
    elif isinstance(value, (list, tuple)):
        lists = []
        for j, tier in enumerate(value):
            if isinstance(tier, (str, bytes)) or not hasattr(tier, "__iter__"):
                raise OptionError(f"tiers: tier {j + 1} must be a list of variable names, got {tier!r}")
            tier = [_name(x, f"tiers: tier {j + 1}") for x in tier]
            if not tier:
                raise OptionError(f"tiers: tier {j + 1} is empty")
            lists.append(tier)
    else:
        raise OptionError(f"tiers must be a dict {{name: tier}} or a list of lists of names, "
                          f"got {type(value).__name__}")
    seen: dict[str, int] = {}
    for j, tier in enumerate(lists):
        for x in tier:
            if x in seen:
                where = f"tier {seen[x] + 1} and tier {j + 1}" if seen[x] != j else f"tier {j + 1} twice"
                raise OptionError(f"tiers: variable {x!r} is in {where}")
            seen[x] = j
    return tuple(tuple(t) for t in lists)


def _edge_prob(value) -> tuple[tuple[Edge, float], ...]:
    if value is None:
        return ()
    items = value.items() if isinstance(value, dict) else None
    if items is None:
        raise OptionError(f"edge_prob must be a dict {{(parent, child): probability}}, got "
                          f"{type(value).__name__}")
    out = {}
    for pair, p in items:
        (edge,) = _edges([pair], "edge_prob")
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
            raise OptionError(f"edge_prob of {edge[0]} -> {edge[1]} must be a probability in [0, 1], got {p!r}")
        out[edge] = float(p)
    return tuple(sorted(out.items()))


def _max_parents(value) -> tuple[tuple[str, int], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise OptionError(f"max_parents must be a dict {{name: limit}}, got {type(value).__name__}")
    out = {}
    for name, m in value.items():
        name = _name(name, "max_parents")
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
            raise OptionError(f"max_parents of {name!r} must be a non-negative integer, got {m!r}")
        out[name] = int(m)
    return tuple(sorted(out.items()))


def _listed(name: str, names) -> str:
    """What a message refusing the unknown ``name`` says of the variables ``names``: the one
    it is in other code points (`same_letters`), or the first of them."""
    from bigbn.io.data import same_letters

    same = same_letters(name, names)
    if same is not None:
        return same
    return "the variables are " + ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")


def _cycle(edges) -> list[str] | None:
    """A directed cycle [a, b, ..., a] among (u, v) edges (u -> v), or None."""
    children: dict[str, list[str]] = {}
    for u, v in edges:
        children.setdefault(u, []).append(v)
    state: dict[str, int] = {}
    for root in sorted(children):
        if state.get(root):
            continue
        path, stack = [root], [iter(children.get(root, ()))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(children.get(nxt, ())))
    return None


@dataclass(frozen=True, init=False)
class Knowledge:
    """Everything known about the structure, by name (module docstring). Immutable; equal
    knowledge compares equal whatever the order it was given in."""

    tiers: tuple[tuple[str, ...], ...] = ()
    forbidden: tuple[Edge, ...] = ()
    required: tuple[Edge, ...] = ()
    edge_prob: tuple[tuple[Edge, float], ...] = ()
    max_parents: tuple[tuple[str, int], ...] = ()
    no_edges_within: tuple[int, ...] = ()

    def __init__(self, tiers=None, forbidden=None, required=None, edge_prob=None, max_parents=None,
                 no_edges_within=()):
        set_ = object.__setattr__
        set_(self, "tiers", _tiers(tiers))
        set_(self, "forbidden", _edges(forbidden, "forbidden"))
        set_(self, "required", _edges(required, "required"))
        set_(self, "edge_prob", _edge_prob(edge_prob))
        set_(self, "max_parents", _max_parents(max_parents))
        if no_edges_within is True:
            if not self.tiers:  # it was silently nothing
                raise OptionError("no_edges_within=True forbids the edges within each tier, but no tiers are given "
                                  "(a time series without edges within slice t: contemporaneous=False)")
            within = tuple(range(len(self.tiers)))
        elif isinstance(no_edges_within, bool) or not hasattr(no_edges_within, "__iter__"):
            raise OptionError(f"no_edges_within must be True or a list of tier positions, got {no_edges_within!r}")
        else:
            within = []
            for t in no_edges_within:
                if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < len(self.tiers):
                    raise OptionError(f"no_edges_within: {t!r} is not a tier position 0..{len(self.tiers) - 1}")
                within.append(int(t))
            within = tuple(sorted(set(within)))
        set_(self, "no_edges_within", within)
        self._check()

    # ------------------------------------------------------------------ contradictions

    def hard_edges(self) -> tuple[set[Edge], set[Edge]]:
        """(forbidden, required) with edge probabilities 0 and 1 counted as such and the
        no-edges tiers' pairs forbidden."""
        forbid = set(self.forbidden) | {e for e, p in self.edge_prob if p == 0.0} | self._within()
        require = set(self.required) | {e for e, p in self.edge_prob if p == 1.0}
        return forbid, require

    def _within(self) -> set[Edge]:
        """Every ordered pair of variables within a no-edges-within tier."""
        return {(u, v) for t in self.no_edges_within for u in self.tiers[t] for v in self.tiers[t] if u != v}

    def _check(self) -> None:
        forbid, require = self.hard_edges()
        tier_of = {x: j for j, t in enumerate(self.tiers) for x in t}
        for u, v in sorted(require):
            if (u, v) in forbid:
                why = ("forbidden" if (u, v) in self.forbidden else
                       "given prior probability 0" if (u, v) in dict(self.edge_prob) else
                       f"within tier {tier_of[v] + 1}, which has no edges within")
                how = "required" if (u, v) in self.required else "given prior probability 1"
                raise OptionError(f"edge {u} -> {v} is both {how} and {why}")
            if u in tier_of and v in tier_of and tier_of[u] > tier_of[v]:
                what = f"required edge {u} -> {v}" if (u, v) in self.required else \
                    f"edge {u} -> {v} of prior probability 1"
                raise OptionError(f"{what} points from tier {tier_of[u] + 1} back to tier {tier_of[v] + 1}")
        cycle = _cycle(sorted(require))
        if cycle is not None:
            edges = set(zip(cycle, cycle[1:]))
            raise OptionError(f"{self._required_words(edges, 'edges')} form a cycle: " + " -> ".join(cycle))
        limits = dict(self.max_parents)
        for v, m in sorted(limits.items()):
            parents = sorted(u for u, w in require if w == v)
            if len(parents) > m:
                words = self._required_words({(u, v) for u in parents}, "parent" + "s" * (len(parents) != 1))
                raise OptionError(f"{v} has {len(parents)} {words} ({', '.join(parents)}) "
                                  f"but at most {m} allowed")

    def _required_words(self, edges, noun: str) -> str:
        """'required edges', 'edges of prior probability 1' or both, as ``edges`` are (an edge
        of prior probability 1 is named as such, not as required: docs/design.md)."""
        given = sum(e in self.required for e in edges)
        if given == len(edges):
            return f"required {noun}"
        return f"{noun} of prior probability 1" if not given else \
            f"required {noun} and {noun} of prior probability 1"

    # ------------------------------------------------------------------ to the engine

    def _mentions(self):
        """(where, names) for every part that names variables, in reading order."""
        for j, t in enumerate(self.tiers):
            yield f"tier {j + 1}", t
        for what, edges in (("forbidden", self.forbidden), ("required", self.required),
                            ("edge_prob", tuple(e for e, _ in self.edge_prob))):
            for u, v in edges:
                yield f"{what} edge {u} -> {v}", (u, v)
        for x, _ in self.max_parents:
            yield "max_parents", (x,)

    def bind(self, names, k: int) -> tuple[tuple[tuple[int, ...], ...] | None, dict]:
        """The engine's form for data with variables ``names`` and max parents ``k``:
        (the tiers as node indices, `tier_ids`, or None; prior_kwargs of
        `bigbn.scores.priors.log_prior` with node indices: forbid, require, edge_prob, max_parents,
        each only when given). OptionError for a name that is not a variable, a limit above
        k, a variable in no tier."""
        names = [str(x) for x in names]
        index = {x: j for j, x in enumerate(names)}
        for where, xs in self._mentions():
            for x in xs:
                if x not in index:
                    raise OptionError(f"knowledge: unknown variable {x!r} in {where} ({_listed(x, names)})")
        out: dict = {}
        forbid = set(self.forbidden) | self._within()
        if forbid:
            out["forbid"] = sorted((index[u], index[v]) for u, v in forbid)
        if self.required:
            out["require"] = sorted((index[u], index[v]) for u, v in self.required)
        if self.edge_prob:
            p = np.full((len(names), len(names)), np.nan)
            for (u, v), x in self.edge_prob:
                p[index[u], index[v]] = x
            out["edge_prob"] = p
        if self.max_parents:
            limits = np.full(len(names), k, dtype=np.int64)
            for x, m in self.max_parents:
                if m > k:
                    raise OptionError(f"max parents of {x} is {m}, above the run's max parents k = {k}")
                limits[index[x]] = m
            out["max_parents"] = limits
        return (self.tier_ids(names) if self.tiers else None), out

    def tier_ids(self, names) -> tuple[tuple[int, ...], ...]:
        """The tiers as indices into ``names``, earliest first, each ascending. OptionError
        for a name that is not among them, or a variable in no tier."""
        names = [str(x) for x in names]
        index = {x: j for j, x in enumerate(names)}
        for j, tier in enumerate(self.tiers):
            for x in tier:
                if x not in index:
                    listed = _listed(x, names)
                    raise OptionError(f"tiers: unknown variable {x!r} in tier {j + 1} ("
                                      + (listed if listed.startswith("did you") else "not a column of the data") + ")")
        listed = {x for t in self.tiers for x in t}
        missing = [x for x in names if x not in listed]
        if missing:
            shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise OptionError(f"tiers: {len(missing)} variable(s) in no tier ({shown}); give every "
                              "variable a tier (a tier of its own is fine)")
        return tuple(tuple(sorted(index[x] for x in t)) for t in self.tiers)

    def __bool__(self) -> bool:
        return bool(self.tiers or self.forbidden or self.required or self.edge_prob or self.max_parents)

    def lines(self) -> list[str]:
        """A few human-readable lines (`bigbn status`)."""
        out = []
        if self.tiers:
            shown = " < ".join("{" + ", ".join(t) + "}" for t in self.tiers[:6])
            out.append(f"tiers ({len(self.tiers)}): {shown}" + (" < ..." if len(self.tiers) > 6 else ""))
            if self.no_edges_within:
                out.append("no edges within tier " + ", ".join(str(t + 1) for t in self.no_edges_within))
        for what, edges in (("forbidden", self.forbidden), ("required", self.required)):
            if edges:
                shown = ", ".join(f"{u} -> {v}" for u, v in edges[:6])
                out.append(f"{what} ({len(edges)}): {shown}" + (", ..." if len(edges) > 6 else ""))
        if self.edge_prob:
            shown = ", ".join(f"{u} -> {v} {p:g}" for (u, v), p in self.edge_prob[:6])
            out.append(f"edge probabilities ({len(self.edge_prob)}): {shown}"
                       + (", ..." if len(self.edge_prob) > 6 else ""))
        if self.max_parents:
            out.append("max parents: " + ", ".join(f"{x} {m}" for x, m in self.max_parents))
        return out

    # ------------------------------------------------------------------ files and peers

    @classmethod
    def from_files(cls, names, k: int, *, tiers=None, forbid=None, require=None, edge_prob=None,
                   max_parents=None) -> "Knowledge":
        """The knowledge in the CLI's files (each a path, or None), read against the data's
        variables ``names`` (an unknown name is a DataError naming file, line, column):
        tiers ``node,tier``; forbid and require ``parent,child``; edge_prob
        ``parent,child,prob``; max_parents ``node,max_parents`` or one integer for all."""
        from bigbn.scores.priors import read_edge_list, read_edge_prob, read_max_parents
        from bigbn.plan.tiers import read_tiers

        names = [str(x) for x in names]
        kw: dict = {}
        if tiers is not None:
            kw["tiers"] = read_tiers(tiers, names)
        if forbid is not None:
            kw["forbidden"] = [(names[u], names[v]) for u, v in read_edge_list(forbid, names)]
        if require is not None:
            kw["required"] = [(names[u], names[v]) for u, v in read_edge_list(require, names)]
        if edge_prob is not None:
            p = read_edge_prob(edge_prob, names)
            kw["edge_prob"] = {(names[u], names[v]): float(p[u, v])
                               for u, v in zip(*np.nonzero(~np.isnan(p))) if u != v}
        if max_parents is not None:
            limits = read_max_parents(max_parents, names, k)
            kw["max_parents"] = {names[i]: int(m) for i, m in enumerate(limits) if m != k}
        try:
            return cls(**kw)
        except OptionError as e:  # a contradiction between the files: say which files were read
            given = [f"--{flag} {path}" for flag, path in (("tiers", tiers), ("forbid", forbid), ("require", require),
                                                          ("edge-prob", edge_prob),
                                                          ("max-parents-file", max_parents)) if path is not None]
            raise OptionError(f"{e} (in {', '.join(given)})") from None

    def write(self, folder) -> dict[str, Path]:
        """Write the knowledge as the CLI's files into ``folder`` (created): tiers.csv,
        forbid.csv, require.csv, edge_prob.csv, max_parents.csv, those that have content.
        Returns {option: path}, e.g. {"tiers": .../tiers.csv}. No-edges-within tiers are
        written into forbid.csv as their pairs."""
        from bigbn.options import open_output, path_text
        from bigbn.io.data import csv_line

        if not isinstance(folder, (str, os.PathLike)):  # write(5): Path's TypeError
            raise OptionError(f"write() takes a folder (a path), got {type(folder).__name__}")
        folder = Path(path_text(folder, "knowledge folder"))
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a file of that name, no permission, ...
            raise OptionError(f"cannot write the knowledge files into {folder}: {e.strerror}") from None
        forbid = set(self.forbidden) | self._within()
        files = {
            "tiers": (("node", "tier"), [(x, j) for j, t in enumerate(self.tiers) for x in t]),
            "forbid": (("parent", "child"), sorted(forbid)),
            "require": (("parent", "child"), list(self.required)),
            "edge_prob": (("parent", "child", "prob"), [(u, v, repr(p)) for (u, v), p in self.edge_prob]),
            "max_parents": (("node", "max_parents"), list(self.max_parents)),
        }
        out = {}
        for key, (header, rows) in files.items():
            if rows:
                path = folder / f"{key}.csv"
                try:
                    # a named pipe that nothing reads: one line (open() waited, forever)
                    with open_output(path, "w", newline="", encoding="utf-8") as fh:
                        fh.write(csv_line(header) + "".join(csv_line(r) for r in rows))
                except OSError as e:
                    raise OptionError(f"cannot write {path}: {e.strerror}") from None
                out[key] = path
        return out

    @classmethod
    def from_pgmpy(cls, expert) -> "Knowledge":
        """From pgmpy's ``ExpertKnowledge`` (forbidden_edges, required_edges,
        temporal_order: its tiers, earliest first). pgmpy need not be installed to call
        this; only its object's attributes are read."""
        try:
            forbidden = getattr(expert, "forbidden_edges")
            required = getattr(expert, "required_edges")
            order = getattr(expert, "temporal_order")
        except AttributeError:
            raise OptionError(f"from_pgmpy takes a pgmpy ExpertKnowledge, got {type(expert).__name__}") from None
        # pgmpy's "no temporal order" is [[]]: its empty tiers say nothing, so they are dropped
        try:
            tiers = [[str(x) for x in t] for t in order or () if len(t)] or None
            forbidden = [tuple(map(str, e)) for e in forbidden or ()]
            required = [tuple(map(str, e)) for e in required or ()]
        except TypeError:  # an attribute of another shape: a TypeError traceback
            raise OptionError("from_pgmpy: forbidden_edges, required_edges and temporal_order must be lists of "
                              "edges and of tiers of node names") from None
        return cls(tiers=tiers, forbidden=forbidden, required=required)

    @classmethod
    def from_indices(cls, names, k: int, prior_kwargs: dict, tiers=None, no_edges_within=()) -> "Knowledge":
        """The knowledge in `bigbn.scores.priors.log_prior`'s keyword arguments (node indices: forbid
        and require pairs, an (n, n) edge_prob matrix with NaN for no opinion, a max_parents
        array), for data with variables ``names`` and max parents ``k``; tiers by name."""
        from bigbn.scores.priors import _as_pairs, _edge_prob_matrix

        names = [str(x) for x in names]
        n = len(names)
        kw: dict = {"tiers": tiers, "no_edges_within": no_edges_within,
                    "forbidden": [(names[u], names[v]) for u, v in _as_pairs(prior_kwargs.get("forbid", ()), n, "forbidden")],
                    "required": [(names[u], names[v]) for u, v in _as_pairs(prior_kwargs.get("require", ()), n, "required")]}
        if prior_kwargs.get("edge_prob") is not None:
            p = _edge_prob_matrix(prior_kwargs["edge_prob"], n, names)
            kw["edge_prob"] = {(names[u], names[v]): float(p[u, v])
                               for u, v in zip(*np.nonzero(~np.isnan(p))) if u != v}
        if prior_kwargs.get("max_parents") is not None:
            limits = np.asarray(prior_kwargs["max_parents"])
            if limits.shape != (n,) or not np.issubdtype(limits.dtype, np.integer):
                raise OptionError(f"max_parents must be an integer array of shape ({n},)")
            kw["max_parents"] = {names[i]: int(m) for i, m in enumerate(limits) if m != k}
        return cls(**kw)

    @classmethod
    def from_record(cls, names, fingerprint: dict) -> "Knowledge":
        """The knowledge of a run's record (run.json's fingerprint: "tiers" as lists of
        names, "constraints" as `bigbn.scores.priors.log_prior`'s keyword arguments with node
        indices, as JSON), by name. A tier's no-edges-within reads back as its pairs."""
        c = dict(fingerprint.get("constraints") or {})
        if c.get("edge_prob") is not None:
            c["edge_prob"] = np.array(c["edge_prob"], dtype=np.float64)  # "nan" strings read back as NaN
        return cls.from_indices(names, fingerprint.get("max_parents"), c, tiers=fingerprint.get("tiers") or None)

    def to_dict(self) -> dict:
        """JSON values (run records, notebooks); `Knowledge.from_dict` reads them back."""
        return {"tiers": [list(t) for t in self.tiers], "no_edges_within": list(self.no_edges_within),
                "forbidden": [list(e) for e in self.forbidden], "required": [list(e) for e in self.required],
                "edge_prob": [[u, v, p] for (u, v), p in self.edge_prob],
                "max_parents": {x: m for x, m in self.max_parents}}

    @classmethod
    def from_dict(cls, d: dict) -> "Knowledge":
        """The Knowledge of `to_dict`'s values; OptionError (one line) for anything else (a
        non-dict, an edge or edge_prob entry of another shape were TypeError or ValueError
        tracebacks)."""
        if not isinstance(d, dict):
            raise OptionError(f"Knowledge.from_dict takes a dict (as to_dict gives), got {type(d).__name__}")
        probs = d.get("edge_prob", ())
        if isinstance(probs, (str, bytes)) or not hasattr(probs, "__iter__") or \
                any(isinstance(t, (str, bytes)) or not hasattr(t, "__len__") or len(t) != 3 for t in probs):
            raise OptionError(f"edge_prob must be a list of [parent, child, probability], got {probs!r}")
        return cls(tiers=d.get("tiers") or None, forbidden=d.get("forbidden"), required=d.get("required"),
                   edge_prob={(u, v): p for u, v, p in probs},
                   max_parents=d.get("max_parents") or None, no_edges_within=d.get("no_edges_within", ()))
