"""Time series as the transition rows of a dynamic Bayesian network (a 2-TBN).

A table of one or more series (``series_column`` tells them apart: the rows of one series
contiguous; ``time_column``, if given, orders the rows within a series) with lag L gives
one transition row (x_t, x_{t−1}, …, x_{t−L}) for every time t ≥ L of every series. Rows
are consecutive steps in their (time) order: a gap in the time column is not filled or
detected, it is one step like any other. The transition table has the n variables of
slice t under their own names, then their copies at lag 1, …, L named ``NAME[t-l]``
(`lagged_name`). A discrete variable's levels come from all rows of the file (so a level
seen only in a series' first rows is still a level), and its lagged copies share them.

Every refusal names the file, line and column (a DataFrame's row by its index label, as
every message about a DataFrame does): a series id that reappears after another series, a
series of fewer than L + 1 rows, a time that is neither a number nor an ISO 8601 date or
time (a series' times are of one kind: numbers, or dates with a zone each or none) or ties
another time of its series, a lag below 1.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from decimal import Decimal
from dataclasses import dataclass

import numpy as np

from bigbn.io.data import Dataset, Table, no_column
from bigbn.errors import DataError, OptionError

#: A lagged copy's name: NAME[t-l].
_LAGGED = re.compile(r"(.*)\[t-([0-9]+)\]")


def lagged_name(name: str, lag: int) -> str:
    """The name of variable ``name``'s copy ``lag`` steps back: NAME[t-l]."""
    return f"{name}[t-{lag}]"


def lag_of(name: str, names) -> int:
    """l for a lagged copy NAME[t-l] of a variable among ``names``, 0 for anything else."""
    hit = _LAGGED.fullmatch(name)
    return int(hit.group(2)) if hit and hit.group(1) in names else 0


def check_lag(lag, flag: str = "lag") -> int:
    """The lag: a whole number ≥ 1 (OptionError otherwise)."""
    if isinstance(lag, bool) or not isinstance(lag, (int, np.integer)) or lag < 1:
        raise OptionError(f"{flag} {lag!r}: the lag is a whole number of steps ≥ 1 "
                          "(1: slice t depends on slice t-1)")
    return int(lag)


@dataclass(frozen=True, eq=False)
class Transitions:
    """The transition rows of a table of series, as the `Dataset` a run scores.

    dataset: n·(L + 1) columns, the n variables of slice t first (in the file's order),
    then their copies at lag 1, …, lag L; lag: L; n: variables per slice; series: how many
    series; series_column, time_column: as given (None if not)."""

    dataset: Dataset
    lag: int
    n: int
    series: int
    series_column: str | None = None
    time_column: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The n variables of slice t."""
        return self.dataset.names[: self.n]

    def record(self) -> dict:
        """What names the model in a run's fingerprint and summary."""
        return {"lag": self.lag, "nodes": list(self.names), "series": self.series,
                "series_column": self.series_column, "time_column": self.time_column}


def split_columns(table: Table, series_column: str | None, time_column: str | None):
    """(the data columns as a Table, the series ids (str (m,) or None), the times (str (m,)
    or None)): the series and time columns taken out of ``table``."""
    names = list(table.names)
    special = {}
    for col, what in ((series_column, "the series column"), (time_column, "the time column")):
        if col is None:
            continue
        if col not in names:
            raise no_column(table.path, col, names, what)
        special[what] = names.index(col)
    if series_column is not None and series_column == time_column:
        raise OptionError(f"--series-column and --time-column are both {series_column!r}: give two columns")
    keep = [j for j in range(table.n) if j not in special.values()]
    if not keep:  # one is enough: its lagged copies are the other nodes of the network
        raise DataError(f"{table.path}: no variable column besides the series and time columns")
    ids = table.column(special["the series column"]) if "the series column" in special else None
    times = table.column(special["the time column"]) if "the time column" in special else None
    return table.select(keep), ids, times


def transition_rows(table: Table, lag: int, ids, times, series_column: str | None,
                    time_column: str | None, labels=None) -> tuple[np.ndarray, int]:
    """(rows, number of series): rows int64 (M, L + 1), row t's column l the table row of
    x_{t−l}, series after series in the file's order, each in time order. labels: the
    index of the DataFrame the table came from (messages name its rows by label), or None
    for a file (messages name its lines)."""
    lag = check_lag(lag)
    m = table.m
    at = (lambda r: f"line {table.line(r)}") if labels is None else (lambda r: f"row {labels[r]!r}")
    blocks = _blocks(table, ids, series_column, at)
    orders = []
    for first, stop in blocks:
        order = np.arange(first, stop, dtype=np.int64)
        if times is not None:
            order = _time_order(table, order, times, time_column, at)
        size = stop - first
        if size < lag + 1:
            if ids is None:
                raise DataError(f"{table.path}: {m} rows, but lag {lag} needs at least {lag + 1} "
                                "(one transition row for every time t ≥ lag): no transition row is left")
            raise DataError(f"{table.path}, {at(first)}, column '{series_column}': series "
                            f"{str(ids[first])!r} has {size} row(s), but lag {lag} needs at least {lag + 1} "
                            "(drop the series or lower the lag)")
        orders.append(order)
    count = sum(order.size - lag for order in orders)
    _check_memory(table, count, lag)
    out, at_row = np.empty((count, lag + 1), dtype=np.int64), 0
    for order in orders:
        size = order.size - lag
        for l in range(lag + 1):
            out[at_row: at_row + size, l] = order[lag - l: order.size - l]
        at_row += size
    return out, len(blocks)


def _check_memory(table: Table, count: int, lag: int) -> None:
    """OptionError, naming the lag, if ``count`` transition rows of the table's n(L + 1)
    columns (8 bytes a cell, as continuous data take; and their row numbers) need more
    than the machine's memory: a file of a few MB with a lag in the hundreds asked for
    GBs, and numpy's MemoryError was a traceback. The machine's memory, not the default
    task budget (a quarter of it, at most 8 GiB), which refused tables that fit."""
    from bigbn.options import machine_memory
    from bigbn.store.rundir import gib

    need, budget = 8 * count * (lag + 1) * (table.n + 1), machine_memory()
    if need > budget:
        raise OptionError(f"{table.path}: lag {lag} makes {count} transition rows of {table.n * (lag + 1)} "
                          f"columns, about {gib(need)} in memory, more than this machine's {gib(budget)}; "
                          "lower the lag or give fewer rows")


def _blocks(table: Table, ids, series_column, at) -> list[tuple[int, int]]:
    """[(first row, stop row)] of each series; one block without a series column. A series
    id that appears again after another series is refused (its rows must be contiguous)."""
    if ids is None:
        return [(0, table.m)]
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    seen: dict[str, int] = {}
    for s in starts.tolist():
        key = str(ids[s])
        if key in seen:
            raise DataError(f"{table.path}, {at(s)}, column '{series_column}': series {key!r} "
                            f"appears again after another series (it began on {at(seen[key])}); the rows "
                            "of a series must be contiguous")
        seen[key] = s
    stops = np.concatenate([starts[1:], [table.m]])
    return list(zip(starts.tolist(), stops.tolist()))


def _time_order(table: Table, rows: np.ndarray, times, time_column, at) -> np.ndarray:
    """The rows of one series sorted by their time: numbers, or else dates and times in ISO
    8601 (`_date_key`), one kind for the whole series, no two equal (exactly: times float64
    cannot tell apart, as 1e20 and 1e20 + 1, or 1e400 and 2e400, which it reads as inf, are
    ordered by their decimal values)."""
    values = np.empty(rows.size)
    for a, r in enumerate(rows.tolist()):
        cell = str(times[r])
        if not _finite(cell):
            return _date_order(table, rows, times, time_column, at, r)
        values[a] = float(cell)  # a finite decimal past float64 (1e400) is ±inf here, ordered exactly below
    order = np.argsort(values, kind="stable")
    tied = np.flatnonzero(values[order][1:] == values[order][:-1])
    if tied.size:  # float64 ties; the times may still differ (1e20 and 1e20 + 1): compare exactly,
        # as decimals (a Fraction of 1e-99999999999, which float64 reads as 0, took 10^(10^11): a hang)
        exact = [Decimal(str(times[r]).strip()) for r in rows.tolist()]  # finite decimals, as checked
        order = np.array(sorted(range(rows.size), key=exact.__getitem__), dtype=np.int64)
        tied = np.flatnonzero([exact[a] == exact[b] for a, b in zip(order[:-1].tolist(), order[1:].tolist())])
    return _untied(table, rows, order, tied, times, time_column, at)


def _untied(table: Table, rows: np.ndarray, order: np.ndarray, tied: np.ndarray, times, time_column,
            at) -> np.ndarray:
    """rows[order], or the DataError naming the first two rows of one time (``tied``: the
    positions a of ``order`` whose time equals that of a + 1)."""
    if tied.size:
        a, b = sorted((int(rows[order[tied[0]]]), int(rows[order[tied[0] + 1]])))
        raise DataError(f"{table.path}, {at(b)}, column '{time_column}': time {str(times[b])!r} "
                        f"ties {at(a)} of the same series; each time of a series "
                        "must be distinct")
    return rows[order]


#: Fractional seconds, read apart from the rest of an ISO 8601 time: `datetime.fromisoformat`
#: keeps microseconds only (a DataFrame's nanosecond timestamps would tie).
_FRACTION = re.compile(r"(?<=[0-9][0-9]:[0-9][0-9]:[0-9][0-9])[.,]([0-9]+)")


def _date_key(cell: str):
    """(datetime, fraction of a second) of an ISO 8601 date or time ('2020-01-31',
    '2020-01-31 10:30', '2020-01-31T10:30:00.000000001+01:00', as a DataFrame's datetime64
    cells read), exact to the digit; None if the cell is none."""
    text = cell.strip()
    hit = _FRACTION.search(text)
    fraction = Decimal(0)
    if hit:
        fraction = Decimal("0." + hit.group(1))
        text = text[:hit.start()] + text[hit.end():]
    try:
        return datetime.fromisoformat(text), fraction
    except ValueError:
        return None


def _date_order(table: Table, rows: np.ndarray, times, time_column, at, first: int) -> np.ndarray:
    """`_time_order` of a series whose time ``first`` (a row) is not a finite number: every
    time of the series must then be an ISO 8601 date or time (with a time zone all, or
    none), no two the same instant."""
    keys = []
    for r in rows.tolist():
        cell = str(times[r])
        key = _date_key(cell)
        if key is None:
            bad = r if _date_key(str(times[first])) is not None else first
            cell = str(times[bad])
            what = ("a number, but the series has dates (ISO 8601) too: write its times one way"
                    if bad != first and _finite(cell) else
                    "not a finite number or an ISO 8601 date (2020-01-31, or with its time of day: 2020-01-31T10:30)")
            raise DataError(f"{table.path}, {at(bad)}, column '{time_column}': {cell!r} is {what} "
                            "(the time column orders the rows of a series)")
        keys.append(key)
    try:
        order = np.array(sorted(range(rows.size), key=keys.__getitem__), dtype=np.int64)
    except TypeError:  # a time with a zone and one without cannot be ordered
        zoned = next(r for r, (d, _) in zip(rows.tolist(), keys) if d.tzinfo is not None)
        plain = next(r for r, (d, _) in zip(rows.tolist(), keys) if d.tzinfo is None)
        raise DataError(f"{table.path}, {at(zoned)}, column '{time_column}': time {str(times[zoned])!r} has a "
                        f"time zone, {str(times[plain])!r} on {at(plain)} of the same series has none; give "
                        "every time of a series a zone, or none") from None
    tied = np.flatnonzero([keys[a] == keys[b] for a, b in zip(order[:-1].tolist(), order[1:].tolist())])
    return _untied(table, rows, order, tied, times, time_column, at)


def _finite(cell: str) -> bool:
    """Whether ``cell`` is a finite number (a decimal past float64, 1e400, is one)."""
    try:
        return math.isfinite(float(cell)) or Decimal(cell.strip()).is_finite()
    except (ValueError, ArithmeticError):
        return False


def transitions(full: Dataset, rows: np.ndarray, lag: int, n_series: int, series_column=None,
                time_column=None) -> Transitions:
    """The transition dataset of ``full`` (every row of the file, coded: levels from all
    rows) at the rows ``rows`` (`transition_rows`)."""
    names = list(full.names)
    for name in names:
        hit = _LAGGED.fullmatch(name)
        if hit and hit.group(1) in names:  # a lagged copy's name (of this lag or another): ambiguous
            raise DataError(f"{full.path or 'data'}, column '{name}': the name of a lagged copy of "
                            f"'{hit.group(1)}'; rename the column")
    all_names = names + [lagged_name(x, l) for l in range(1, lag + 1) for x in names]
    n = full.n
    data = np.empty((rows.shape[0], n * (lag + 1)), dtype=full.data.dtype)  # filled in place: no
    for l in range(lag + 1):  # list of L + 1 copies besides (twice the memory at its peak)
        data[:, l * n: (l + 1) * n] = full.data[rows[:, l]]
    ds = Dataset(tuple(all_names), data, np.tile(full.arities, lag + 1), tuple(full.levels) * (lag + 1),
                 full.kind, full.path)
    return Transitions(ds, lag, full.n, n_series, series_column, time_column)
