"""pandas and networkx at the edges of the API (both optional imports).

In: a DataFrame becomes the `Table` a CSV file would give (each cell the text the CSV
would hold), so the same rules pick discrete or continuous columns and the numbers are
those of writing the frame to CSV and running on the file. Category columns keep their
declared level order (observed levels only, as in a CSV file, so the arities agree).

Out: `to_frame` / `to_digraph` helpers behind `Result.to_pandas()`, `Result.to_networkx()`
and the same methods of `Samples`.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from bigbn.io.data import _MISSING, NOT_IN_LEVEL, Dataset, Table, _check_header, check_level, check_levels
from bigbn.errors import BigBNWarning, DataError, OptionError

SOURCE = "DataFrame"


def require(module: str, what: str):
    """Import an optional dependency or say which package to install (OptionError)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise OptionError(f"{what} needs {module}: pip install {module}") from None


def is_dataframe(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "pandas" and hasattr(obj, "columns") \
        and hasattr(obj, "dtypes")


def check_complete(cells: np.ndarray, names, where: str) -> None:
    """Refuse a cell a CSV file would read as missing ("", "?", "NA", "NaN", any case),
    naming the 0-based row index and the column."""
    bad = np.isin(cells, list(_MISSING))
    if bad.any():
        r, j = map(int, np.argwhere(bad)[0])
        raise DataError(f"{where}, row index {r}, column '{names[j]}': missing value '{cells[r, j]}' "
                        "(bigbn needs complete data)")


def _row(df, r: int) -> str:
    """The index label of row r as a message names it: 12, 'b' (np.int64(12) was numpy's repr)."""
    label = df.index[r]
    label = label.item() if isinstance(label, np.generic) else label
    return " ".join(repr(label).split())


def is_value(v) -> bool:
    """A cell a CSV file could hold: text (str, or bytes, np.bytes_, bytearray: UTF-8 text,
    see `decode_cells`), a (non-complex) number, a bool, a date or time (datetime, pandas
    Timestamp, Timedelta, Period), an interval (`pd.cut`'s levels), an enum member or a
    UUID, or a numpy scalar of one of those."""
    if type(v) in _PLAIN:  # at once: the isinstance of numbers.Real, an ABC, made an object
        return True  # column of ints read 2-3 times slower
    if isinstance(v, np.generic):
        return v.ndim == 0 and not isinstance(v, (np.complexfloating, np.void)) and v.dtype != object
    return isinstance(v, _value_types())


_PLAIN = frozenset((str, int, float, bool))


@functools.lru_cache(maxsize=1)
def _value_types() -> tuple:
    import datetime
    import decimal
    import enum
    import numbers
    import uuid

    types = (str, bytes, bytearray, bool, numbers.Real, decimal.Decimal, datetime.date, datetime.time, datetime.timedelta,
             enum.Enum, uuid.UUID)
    try:  # pandas is optional (an object array needs none)
        import pandas as pd
    except ImportError:
        return types
    return types + (pd.Period, pd.Interval)


def _check_scalars(df, j: int, name: str) -> None:
    """Refuse a cell of column j (an object or category column) that is no one value: a
    list, dict, set, tuple, array, bytes or any other object was read as a level through
    its str() ("[1, 2]", "<object object at 0x...>", which differs run to run), silently;
    the message names the row (the frame's index label) and the column."""
    import pandas as pd

    col = df.iloc[:, j]
    if isinstance(col.dtype, pd.CategoricalDtype):
        # the categories of some cell: one no cell holds is no level (its row was an
        # IndexError traceback, and the data were read as before)
        values, codes = col.cat.categories.tolist(), col.cat.codes.to_numpy()
        used = np.unique(codes[codes >= 0]).tolist()
        c = next((c for c in used if not is_value(values[c])), None)
        if c is None:
            return
        bad, r = values[c], int(np.flatnonzero(codes == c)[0])
    elif col.dtype == object:
        values = col.tolist()
        r = next((i for i, v in enumerate(values) if type(v) is not str and not is_value(v)), None)
        if r is None:
            return
        bad = values[r]
    else:
        return
    raise not_one_value(f"{SOURCE}, row {_row(df, r)}, column '{name}'", bad)


def decode_cells(values: list, where) -> list:
    """``values`` with every bytes cell (bytes, np.bytes_, bytearray) decoded as UTF-8, the
    text a CSV file of them holds (str() made np.bytes_(b'x') the level "b'x'"); other
    cells as they are. A cell that is not UTF-8 is a DataError at ``where(i)`` (the
    source, the row and the column of cell i)."""
    if not any(issubclass(t, (bytes, bytearray)) for t in set(map(type, values))):  # the types at C speed
        return values
    out = list(values)
    for i, v in enumerate(out):
        if isinstance(v, (bytes, bytearray)):
            out[i] = _utf8(v, lambda: f"{where(i)}: the cell holds")
    return out


def _utf8(v, what) -> str:
    """The bytes ``v`` decoded as UTF-8; DataError if they are not UTF-8, opening with
    ``what()`` (the source, the row and the column, and what held them) and showing them."""
    try:
        return bytes(v).decode("utf-8")
    except UnicodeDecodeError as e:
        shown = " ".join(repr(bytes(v)).split())
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise DataError(f"{what()} {shown}, not UTF-8 text (byte 0x{v[e.start]:02x} at offset {e.start}); "
                        "decode it to text first") from None


def label_text(label, where: str) -> str:
    """A column label (a DataFrame's column, an array's name given in names=) as the text a
    CSV header of it holds: bytes (np.bytes_, bytearray) decoded as UTF-8, as bytes cells
    are (str() made b'x' the name "b'x'" in every output), anything else its str().
    DataError naming ``where`` (the source and the column's position) for bytes that are
    not UTF-8. The names are then checked as a header's are (`io.data._check_header`)."""
    if isinstance(label, (bytes, bytearray)):
        return _utf8(label, lambda: f"{where}: the column name is")
    return str(label)


def column_names(df) -> list[str]:
    """The column names of a DataFrame, `label_text` of each (not yet checked)."""
    return [label_text(c, f"{SOURCE}, column {j}") for j, c in enumerate(df.columns, start=1)]


def not_one_value(where: str, cell) -> DataError:
    """The DataError of a cell that `is_value` refuses, at ``where`` (the source, the row
    and the column): the cell shown on one line, cut at 40 characters, and its type."""
    shown = " ".join(repr(cell).split())  # one line, also for an array's repr
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return DataError(f"{where}: the cell holds {shown} (type {type(cell).__name__}), not one value; each cell "
                     "must hold one level or number (text, a number or a bool)")


def _cell_text(df, j: int, name: str) -> np.ndarray:
    """Column j's cells as the text a CSV file of the frame holds (bytes decoded)."""
    import pandas as pd

    col = df.iloc[:, j]
    if pd.api.types.is_float_dtype(col.dtype):  # shortest round-trip text, as a CSV writer
        native = getattr(col.dtype, "numpy_dtype", col.dtype)  # float32 stays float32
        # + 0: -0.0 is 0.0 (IEEE's -0 + +0 = +0, any other x + 0 = x), one number, not the
        # levels '-0.0' and '0.0' of a discrete reading
        return (col.to_numpy(dtype=native) + np.zeros(1, dtype=native)).astype(str)
    values = decode_cells(col.tolist(), lambda r: f"{SOURCE}, row {_row(df, r)}, column '{name}'")
    return np.array([str(v) for v in values], dtype=str)


def elapsed_times(df, name: str):
    """The cells of the column ``name`` of ``df`` as whole nanoseconds (text of exact
    integers: str (m,)) if it is a timedelta64 column (elapsed time: `pd.to_timedelta`),
    else None. A series' time column of durations orders its rows as these integers do;
    their text ('0 days 00:00:00.000000001') is no number nor date. NaT is refused before,
    as every missing cell (`table_from_frame`)."""
    import pandas as pd

    col = df.iloc[:, column_names(df).index(name)]
    if not pd.api.types.is_timedelta64_dtype(col.dtype):
        return None
    ticks = col.to_numpy()
    per_tick = int(np.timedelta64(1, np.datetime_data(ticks.dtype)[0]).astype("timedelta64[ns]").astype(np.int64))
    # Python ints: s, ms or us ticks times their nanoseconds cannot overflow
    return np.array([str(t * per_tick) for t in ticks.view(np.int64).tolist()], dtype=str)


def _na_hint(col) -> str:
    """For a text column with a missing cell: pandas' read_csv reads the levels "None",
    "NA", "NaN", "null", "n/a" (and empty cells) as missing, so a file that bigbn reads as
    complete can come back with holes; say so, and how to read it as text."""
    import pandas as pd

    if not (pd.api.types.is_string_dtype(col.dtype) or col.dtype == object):
        return ""
    return ("; if the file has no empty cells, pandas read a level such as 'None' or 'NA' as "
            "missing: read it with pd.read_csv(..., keep_default_na=False), or give learn the "
            "file's path")


def table_from_frame(df, min_columns: int = 2) -> tuple[Table, dict[int, list[str]]]:
    """The Table a CSV file of ``df`` would give, and the declared level order (as text) of
    every category column. Missing values are refused like empty CSV cells. min_columns:
    as `bigbn.io.data.read_table` takes it (a time series of one variable takes 1)."""
    import pandas as pd

    names = _check_header(SOURCE, column_names(df), min_columns)
    if len(df) < 1 or len(names) < min_columns:
        raise DataError(f"{SOURCE}: need at least one row and {'two columns' if min_columns == 2 else 'one column'}, "
                        f"got shape {df.shape}")
    na = df.isna().to_numpy()
    if na.any():
        r, j = map(int, np.argwhere(na)[0])
        raise DataError(f"{SOURCE}, row {_row(df, r)}, column '{names[j]}': missing value "
                        "(bigbn needs complete data)" + _na_hint(df.iloc[:, j]))
    cells = np.empty((len(df), len(names)), dtype=object)
    categories = {}
    for j, c in enumerate(df.columns):
        col = df.iloc[:, j]
        if pd.api.types.is_complex_dtype(col.dtype) or (
                col.dtype == object and any(isinstance(v, (complex, np.complexfloating)) for v in col.tolist())):
            raise DataError(f"{SOURCE}, column '{names[j]}': complex numbers are not data bigbn can score")
        _check_scalars(df, j, names[j])
        cells[:, j] = _cell_text(df, j, names[j])
        if isinstance(col.dtype, pd.CategoricalDtype):  # as the cells: stripped text (the
            # levels of some cell were decoded with it; one no cell holds is no level)
            categories[j] = list(dict.fromkeys(
                (v.decode("utf-8", "backslashreplace") if isinstance(v, (bytes, bytearray)) else str(v)).strip()
                for v in col.cat.categories))
    cells = np.char.strip(cells.astype(str))
    check_complete(cells, names, SOURCE)
    table = Table.from_cells(SOURCE, names, cells)
    # a level holding a control character is refused (numbers, bools and dates hold none)
    text = [j for j in range(len(names)) if not (pd.api.types.is_numeric_dtype(df.dtypes.iloc[j])
                                                 or pd.api.types.is_datetime64_any_dtype(df.dtypes.iloc[j]))]
    check_levels(table, lambda r, j: f"{SOURCE}, row {_row(df, r)}, column '{names[j]}'", text)
    return table, categories


def check_cells(df, name: str, cells: list) -> None:
    """`check_level` of each cell of the column ``name`` of ``df`` held apart from the table
    (the intervention column, decoded: `decode_cells`; None is an empty cell), stripped as a
    CSV file's cell is: the control characters a CSV file's cell is refused for (`read_table`
    checks every column, this one too). A DataFrame's cell "a\x85|b" was read as the
    targets a and b, each stripped of it, where the same CSV file was refused."""
    texts = ["" if c is None else str(c).strip() for c in cells]
    if NOT_IN_LEVEL.search("".join(texts)):  # one search over all (a control character is one character)
        for r, text in enumerate(texts):
            check_level(f"{SOURCE}, row {_row(df, r)}, column '{name}'", text)


def declared_order(ds: Dataset, categories: dict[int, list[str]]) -> Dataset:
    """Recode the category columns of a discrete (or mixed) dataset so that their levels
    follow the declared category order (observed levels only); other columns, and a
    category column a mixed dataset reads as continuous, are unchanged."""
    if not categories or ds.kind not in ("discrete", "mixed"):
        return ds
    data = ds.data.copy()
    levels = list(ds.levels)
    for j, order in categories.items():
        if ds.arities[j] == 0:
            continue
        observed = set(ds.levels[j])
        new = [lv for lv in order if lv in observed]
        code = {lv: i for i, lv in enumerate(new)}
        remap = np.array([code[lv] for lv in ds.levels[j]], dtype=data.dtype)
        data[:, j] = remap[ds.data[:, j].astype(np.int64)]
        levels[j] = tuple(new)
    return Dataset(names=ds.names, data=np.ascontiguousarray(data), arities=ds.arities,
                   levels=tuple(levels), kind=ds.kind, path=ds.path)


def to_frame(columns: dict):
    pd = require("pandas", "to_pandas()")
    return pd.DataFrame(columns)


def to_digraph(names, P: np.ndarray, attr: str, threshold: float | None, pairs=None):
    """A networkx DiGraph with every node and an arc u → v carrying ``attr`` = P[u, v] for
    every pair (or only those with P[u, v] ≥ threshold: a `BigBNWarning` names a directed
    cycle if they hold one, as two directions of one pair may both pass); pairs: the (u, v)
    to consider (default every u ≠ v)."""
    nx = require("networkx", "to_networkx()")
    if threshold is not None:  # as `bigbn plot --threshold`: NaN drew no arc, '0.5' was a numpy traceback
        from bigbn.options import threshold as check_threshold

        threshold = check_threshold(threshold)
    g = nx.DiGraph()
    g.add_nodes_from(names)
    n = len(names)
    for u, v in pairs if pairs is not None else ((u, v) for u in range(n) for v in range(n) if u != v):
        if threshold is None or P[u, v] >= threshold:
            g.add_edge(names[u], names[v], **{attr: float(P[u, v])})
    if threshold is not None and not nx.is_directed_acyclic_graph(g):
        cycle = [u for u, _ in nx.find_cycle(g)]
        warnings.warn(f"the arcs with {attr} ≥ {threshold:g} hold a directed cycle "
                      f"({' -> '.join(cycle + cycle[:1])}): thresholded edge probabilities are not "
                      "a DAG (for one: Result.averaged(threshold), which skips the arcs that close a "
                      "cycle; the MAP network, learn(..., map_dag=True); or sampled DAGs, bigbn.sample)",
                      BigBNWarning, stacklevel=3)
    return g


def arcs(names, parents) -> list[tuple[str, str]]:
    """The arcs (parent name, child name) of a DAG given as parent masks (bit u of
    parents[v] ⟺ u → v), by child then parent in data order."""
    out = []
    for v in range(len(names)):
        p = int(parents[v])
        while p:  # the set bits only, lowest first
            low = p & -p
            out.append((names[low.bit_length() - 1], names[v]))
            p ^= low
    return out


def arcs_digraph(names, arc_list, what: str):
    """A networkx DiGraph with every variable as a node and the given arcs."""
    nx = require("networkx", what)
    g = nx.DiGraph()
    g.add_nodes_from(names)
    g.add_edges_from(arc_list)
    return g
