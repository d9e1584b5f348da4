"""Interventional data: perfect interventions on known targets (Cooper & Yoo 1999).

Each row is observational or an experiment that set some variables (its targets) from
outside. Under a perfect intervention the mechanism of a target is cut in that row, so
node i's local score uses only the rows in which i was not a target; the other rows still
inform every other node (including i's children, through i's value). The structure
posterior then follows from β as for observational data: the engine is unchanged.

Discrete levels (arities) come from all rows; node i's counts (BDeu, K2) or sufficient
statistics (BGe: its posterior scatter matrix, with the means of those rows) from the rows
where i is not a target. Causal effects take the parameters of an effect of x from the
rows where no variable but x was intervened on (`bigbn.outputs.effects.effect_rows`,
docs/posterior.md).

The targets come as a column of the data (``--intervention-column NAME``,
``learn(intervention_column=NAME)``): each cell lists the row's targets joined by ``|``
(an empty cell is an observational row); or, for any data, as ``learn(interventions=...)``:
one set of target names per row.
"""

from __future__ import annotations

import numpy as np

from bigbn.io.data import Dataset, Table, no_column
from bigbn.errors import DataError, OptionError

__all__ = ["split_column", "parse_cells", "from_sets", "check_identifiable", "local_scores",
           "by_rows"]

SEP = "|"
#: Why a variable's name must not hold SEP when a run has interventions: a cell "a|b" could
#: be that variable or the two variables a and b.
_SEP_IN_NAME = f"its name contains '{SEP}', which joins the intervention targets of a row; rename the variable"


def split_column(table: Table, column: str) -> tuple[Table, list[str]]:
    """(the table without ``column``, that column's cells)."""
    if column not in table.names:
        raise no_column(table.path, column, table.names, "the intervention column")
    j = table.names.index(column)
    bad = [x for x in table.names if SEP in x and x != column]
    if bad:
        raise DataError(f"{table.path}, column {bad[0]!r}: {_SEP_IN_NAME}")
    if table.n - 1 < 2:
        raise DataError(f"{table.path}: need at least 2 variables besides the intervention column "
                        f"{column!r}")
    keep = [c for c in range(table.n) if c != j]
    return table.select(keep), table.column(j).tolist()


def parse_cells(cells: list[str], names, column: str, where) -> np.ndarray:
    """The targets of each row, bool (m, n), from cells "a|b" ("" = observational).
    ``where(r)`` names row r in messages ("FILE, row 7"). A variable whose name contains
    "|" is refused: such a cell would be ambiguous."""
    bad = [x for x in names if SEP in str(x)]
    if bad:
        raise DataError(f"variable {str(bad[0])!r}: {_SEP_IN_NAME}")
    index = {s: j for j, s in enumerate(names)}
    out = np.zeros((len(cells), len(names)), dtype=bool)
    for r, cell in enumerate(cells):
        text = "" if cell is None else str(cell).strip()
        if not text:
            continue
        for t in (x.strip() for x in text.split(SEP)):
            if t == column:
                raise DataError(f"{where(r)}, column '{column}': target '{t}' is the intervention "
                                "column itself, not a variable")
            if not t:  # "a||b", "a|", "|": said as such, not as the unknown target ''
                raise DataError(f"{where(r)}, column '{column}': an empty target in {text!r} (targets are "
                                f"variable names joined by '{SEP}', with a name between every two)")
            if t not in index:
                raise DataError(f"{where(r)}, column '{column}': unknown target {t!r} (not a variable; "
                                f"targets are variable names joined by '{SEP}')")
            out[r, index[t]] = True
    return out


def from_sets(interventions, names, m: int) -> np.ndarray:
    """The targets of each row, bool (m, n), from ``interventions``: one entry per row, a
    set (or list) of variable names, a string "a|b", or None / empty (observational)."""
    if isinstance(interventions, (str, bytes)) or not hasattr(interventions, "__len__"):
        raise OptionError("interventions must be a list with one set of target names per row")
    if len(interventions) != m:
        raise OptionError(f"interventions has {len(interventions)} entries for {m} rows (one set of "
                          "target names per row)")
    cells = []
    for r, entry in enumerate(interventions):
        if entry is None or isinstance(entry, str):
            cells.append(entry or "")
            continue
        try:
            items = list(entry)
        except TypeError:
            raise OptionError(f"interventions[{r}]: {entry!r} is not a set of names") from None
        flags = [x for x in items if isinstance(x, (bool, np.bool_))]
        if flags:  # a row of a boolean mask: its True/False read as names 'True'/'False'
            raise OptionError(f"interventions[{r}]: {flags[0]!r} is not a variable name; each row's targets are a "
                              "set of names (a boolean mask M gives them as [set(np.array(names)[row]) for row in M])")
        items = [str(x) for x in items]
        bad = [x for x in items if SEP in x]
        if bad:
            raise OptionError(f"interventions[{r}]: target name {bad[0]!r} contains '{SEP}'")
        cells.append(SEP.join(items))
    return parse_cells(cells, names, "interventions", lambda r: f"interventions[{r}]")


def check_identifiable(mask: np.ndarray, names, where: str) -> None:
    """Refuse a variable intervened on in every row: no row would be left to score it."""
    every = np.flatnonzero(mask.all(axis=0))
    if every.size:
        raise DataError(f"{where}: variable '{names[int(every[0])]}' is intervened on in every row; "
                        "no row is left to score it from")


def by_rows(ds: Dataset, nodes) -> list[tuple[np.ndarray, list[int]]]:
    """Group ``nodes`` by the rows where they are not targets: [(keep (m,) bool, nodes)]."""
    groups: dict[bytes, tuple[np.ndarray, list[int]]] = {}
    for i in nodes:
        keep = ~ds.intervened[:, i]
        groups.setdefault(np.packbits(keep).tobytes(), (keep, []))[1].append(i)
    return list(groups.values())


def local_scores(score, ds: Dataset, k: int, options: dict, sets=None) -> np.ndarray:
    """``score.local_scores`` with node i's rows those where i is not a target: float64
    (n, F). One call of the score per distinct set of rows (at most one per target
    pattern), on the dataset of those rows. sets: (parent_sets, family_index, width):
    ``score.family_scores`` of those families instead (the tiers' layouts), each call
    scoring only its own nodes' families: float64 (n, width)."""
    def scores(d: Dataset, nodes) -> np.ndarray:
        if sets is None:
            return score.local_scores(d, k, options)
        parent_sets, index, width = sets
        if nodes is not None:
            index = np.where(np.isin(np.arange(d.n), nodes)[None, :], index, -1)
        return score.family_scores(d, k, options, (parent_sets, index, width))

    if getattr(ds, "intervened", None) is None:  # observational data, or scores from a file
        return scores(ds, None)
    out = None
    for keep, nodes in by_rows(ds, range(ds.n)):
        local = scores(ds.rows(keep), nodes)
        if out is None:
            out = np.empty_like(local)
        out[nodes] = local[nodes]
    return out
