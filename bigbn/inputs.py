"""What a run reads: a CSV file, a DataFrame, an array or a Dataset turned into the
discrete or continuous `Dataset` its score needs, with the hash that names the data in the
run's fingerprint. Used by `learn`, `bigbn scores` and `bigbn effects`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import numpy as np

from bigbn.io import frames
from bigbn.scores import interventions as interventions_
from bigbn import options as opt
from bigbn.io.data import Dataset, Table, _check_header, check_levels, discrete_dataset, no_column, read_table
from bigbn.errors import DataError, OptionError
from bigbn.plan.lattice import MAX_NODES
from bigbn.scores.base import Score, lookup, resolve
from bigbn.plan.tiers import MAX_TIERED_NODES


def load_dataset(data, names=None, score: str | Score = "auto", sep: str | None = None,
                 max_nodes: int = MAX_NODES, intervention_column: str | None = None,
                 interventions=None, discrete=None, continuous=None) -> tuple[Dataset, Score, str]:
    """Turn a CSV path, a Dataset or an array into (Dataset, the Score to use, data hash).
    score: "auto", a score's name or a `bigbn.scores.base.Score`. max_nodes: most variables
    allowed (MAX_NODES; more with tiers, bigbn/plan/tiers.py). intervention_column (a CSV file or
    a DataFrame) or interventions (any data): the rows' intervention targets
    (`bigbn.scores.interventions`); the Dataset then has ``intervened``. A Dataset carries its own
    targets (``intervened``): intervention_column then only names the column they came from.
    discrete, continuous: column names read as that kind by the cg score (mixed data,
    `bigbn.scores.cg.column_kinds`); with score "auto" they make the run a cg run."""
    wanted = lookup(score)  # an unknown name is refused before the data are read
    kinds = {"discrete": opt.columns(discrete, "discrete"), "continuous": opt.columns(continuous, "continuous")}
    if any(v is not None for v in kinds.values()):
        if wanted is not None and wanted.data_kind != "mixed":
            raise OptionError(f"discrete= and continuous= (--discrete, --continuous) say how the cg score "
                              f"reads columns; this run uses the {wanted.name} score (choose score cg)")
        if isinstance(data, Dataset):
            raise OptionError("a Dataset carries its column kinds (arities); drop discrete= / continuous=")
    sep = opt.sep(sep)
    targets = None  # the intervention column's cells and how to name a row in messages
    if intervention_column is not None:
        if interventions is not None:
            raise OptionError("give intervention_column or interventions, not both")
        if not (isinstance(data, (str, os.PathLike, Dataset)) or frames.is_dataframe(data)):
            raise OptionError("intervention_column names a column of a CSV file or a DataFrame; "
                              "for an array give interventions= (a set of target names per row)")
        intervention_column = str(intervention_column)
        for kind, cols in kinds.items():
            if cols is not None and intervention_column in cols:  # said "no column named" this column
                raise OptionError(f"column '{intervention_column}' is the intervention column (its cells name "
                                  f"each row's targets), not a variable: drop it from --{kind}")
    if isinstance(data, Dataset):
        ds = data
        digest = _hash_dataset(ds)
    elif frames.is_dataframe(data):
        if intervention_column is not None:
            columns = frames.column_names(data)
            if intervention_column not in columns:
                raise no_column(frames.SOURCE, intervention_column, columns, "the intervention column")
            j = columns.index(intervention_column)
            index = data.index
            cells = [None if (isinstance(v, float) and v != v) else v for v in data.iloc[:, j].tolist()]
            cells = frames.decode_cells(cells, lambda r: f"{frames.SOURCE}, row {index[r]!r}, "
                                                         f"column '{intervention_column}'")
            frames.check_cells(data, intervention_column, cells)  # as a CSV file's cells
            targets = (cells, lambda r: f"{frames.SOURCE}, row {index[r]!r}")
            data = data.iloc[:, [i for i in range(len(columns)) if i != j]]  # by position: drop(b't')
            # took the bytes for the labels 116 (a KeyError traceback)
        table, categories = frames.table_from_frame(data)
        if table.n > max_nodes:
            raise OptionError(f"{table.n} columns, but the engine supports at most {max_nodes} variables"
                              + _MORE_WITH_TIERS * (max_nodes == MAX_NODES))
        ds = frames.declared_order(_dataset_from_table(table, wanted, max_nodes, kinds), categories)
        digest = _hash_dataset(ds)
    elif isinstance(data, (str, os.PathLike)):
        path = opt.path_text(data, "data file")
        table = read_table(path, sep, may_be_empty=intervention_column)
        if intervention_column is not None:
            table, cells = interventions_.split_column(table, intervention_column)
            targets = (cells, lambda r: f"{path}, row {table.line(r)}")
        if table.n > max_nodes:
            raise OptionError(f"{path}: {table.n} columns, but the engine supports at most "
                              f"{max_nodes} variables" + _MORE_WITH_TIERS * (max_nodes == MAX_NODES))
        ds = _dataset_from_table(table, wanted, max_nodes, kinds)
        digest = _hash_dataset(ds)  # what was read, once (a named pipe can be read only once)
    else:
        if data is None or isinstance(data, (bytes, dict, int, float, bool)):
            raise OptionError(f"data must be a CSV path, a pandas DataFrame, a Dataset or a 2-d "
                              f"array, got {type(data).__name__}")
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as e:  # ragged nested lists and the like
            raise OptionError(f"data cannot be read as a 2-d array ({e})") from None
        if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] < 1:
            raise OptionError(f"data array must have shape (rows, ≥2 variables), got {arr.shape}")
        nm = given_names(names) if names is not None else tuple(f"X{j + 1}" for j in range(arr.shape[1]))
        if len(nm) != arr.shape[1]:
            raise OptionError(f"{len(nm)} names for {arr.shape[1]} columns")
        _check_header("array", list(nm))
        if np.ma.is_masked(data):  # a masked cell is a missing value, as an empty CSV cell
            r, j = map(int, np.argwhere(np.ma.getmaskarray(data))[0])
            raise DataError(f"data array, row index {r}, column '{nm[j]}': masked value (bigbn needs "
                            "complete data)")
        if arr.dtype.kind == "c":
            raise DataError("complex numbers are not data bigbn can score")
        if arr.dtype.kind in "fc":
            cells = (np.asarray(arr, dtype=float) + 0.0).astype(str)  # shortest round-trip text; -0.0 is 0.0
        else:  # integers, booleans, strings, objects: the cells' text, as a CSV file holds it
            values = arr.ravel().tolist()
            if any(v is None for v in values):
                raise DataError("data array: missing value (None); bigbn needs complete data")
            if arr.dtype == object:  # a dict, set, tuple or any object was read as a level by its str()
                # over the list, text passed at once, as frames does (np.ndenumerate and
                # is_value of every cell made reading an object array of text 3.6 times slower)
                bad = next((i for i, v in enumerate(values) if type(v) is not str and not frames.is_value(v)), None)
                if bad is not None:
                    r, j = divmod(bad, arr.shape[1])
                    raise frames.not_one_value(f"data array, row index {r}, column '{nm[j]}'", values[bad])
            if arr.dtype == object or arr.dtype.kind == "S":  # bytes cells are UTF-8 text (numpy
                # decoded them as ASCII, or str() made b'x' the level "b'x'")
                text = frames.decode_cells(values, lambda i: "data array, row index {}, column '{}'".format(
                    i // arr.shape[1], nm[i % arr.shape[1]]))
                if text is not values:
                    arr = np.array(text, dtype=object).reshape(arr.shape)
            try:
                cells = np.char.strip(arr.astype(str))
            except (ValueError, TypeError):  # an object cell holding a list, a void dtype, ...
                raise DataError(f"data array of {arr.dtype} cells that are not values (a list or a record "
                                "in a cell?): give numbers or text, one value per cell") from None
        frames.check_complete(cells, nm, "data array")
        # the same rules as for a CSV file: levels are the observed values, none holding a
        # control character (numbers and bools hold none)
        table = Table.from_cells("array", nm, cells)
        if arr.dtype.kind not in "biuf":
            check_levels(table, lambda r, j: f"data array, row index {r}, column '{nm[j]}'")
        ds = _dataset_from_table(table, wanted, max_nodes, kinds)
        digest = _hash_dataset(ds)
    if ds.n > max_nodes:
        raise OptionError(f"{ds.n} variables, but the engine supports at most {max_nodes}"
                          + _MORE_WITH_TIERS * (max_nodes == MAX_NODES))
    score = resolve(wanted or "auto", ds.kind)
    if targets is not None or interventions is not None:
        mask = interventions_.parse_cells(targets[0], ds.names, intervention_column, targets[1]) \
            if targets is not None else interventions_.from_sets(interventions, ds.names, ds.m)
        interventions_.check_identifiable(mask, ds.names, ds.path or "data")
        # all rows observational: the observational dataset (the same hash and numbers)
        ds = dataclasses.replace(ds, intervened=mask if mask.any() else None)
        digest = _hash_dataset(ds)
    return ds, score, digest


_MORE_WITH_TIERS = f" (up to {MAX_TIERED_NODES} in tiers of at most {MAX_NODES}: --tiers)"


def given_names(names) -> tuple[str, ...]:
    """names= as the column names of an array: a list (tuple, array, iterable) of names,
    each a string, UTF-8 bytes or a number (written as text, as a CSV header holds it:
    `frames.label_text`). Refused in one line: a string ("abc" was read as the names a, b, c), a non-iterable (names=5 was
    a TypeError traceback), and None or a list as a name (they became "None" and
    "['a']")."""
    if isinstance(names, (str, bytes)):
        raise OptionError(f"names must be a list of column names, got the text {names!r} "
                          "(for the columns a, b, c: names=['a', 'b', 'c'])")
    try:
        items = list(names)
    except TypeError:
        raise OptionError(f"names must be a list of column names, got {type(names).__name__}") from None
    for j, x in enumerate(items):
        if isinstance(x, bool) or not isinstance(x, (str, bytes, bytearray, int, float, np.integer, np.floating)):
            raise OptionError(f"names: column {j + 1}'s name is {x!r}; give each column a string")
    return tuple(frames.label_text(x, f"array, column {j}") for j, x in enumerate(items, start=1))


def _check_names_given(data, names) -> tuple[str, ...] | None:
    """names= is for an array; data that carry their own names refuse other ones (they were
    silently ignored). Not applied instead: intervention_column names a column of the data as
    it is, and effects(result, data) compares the data's own names with the run's. Returns
    the names as `given_names` reads them (None if none): a generator is read once, here,
    so the caller passes on what this returns."""
    if names is None:
        return None
    names = given_names(names)
    if frames.is_dataframe(data):
        raise OptionError("a DataFrame carries its column names; drop names= or rename the columns")
    if isinstance(data, (str, os.PathLike)):
        raise OptionError(f"{os.fspath(data)}: a CSV file carries its column names in its header; "
                          "drop names= or edit the header")
    if isinstance(data, Dataset) and names != tuple(data.names):
        raise OptionError("a Dataset carries its names; drop names= or give the Dataset these names")
    return names


def _dataset_from_table(table: Table, score: Score | None, max_nodes: int = MAX_NODES,
                        kinds: dict | None = None) -> Dataset:
    """The table's cells as the kind of data ``score`` needs (None: "auto": mixed if some
    column is text and some continuous, or if ``kinds`` names columns (the cg score's
    discrete / continuous overrides); else continuous if the table looks it)."""
    from bigbn.scores.bge import continuous_dataset, looks_continuous
    from bigbn.scores.cg import has_text_and_numbers, mixed_dataset

    kinds = kinds or {}
    typed = any(v is not None for v in kinds.values())
    if score is not None:
        kind = score.data_kind
    elif typed or has_text_and_numbers(table):
        kind = "mixed"
    else:
        kind = "continuous" if looks_continuous(table) else "discrete"
    if kind == "mixed":
        return mixed_dataset(table, kinds.get("discrete"), kinds.get("continuous"))
    if kind == "continuous":
        return continuous_dataset(table)
    return discrete_dataset(table, max_nodes=max_nodes)


def _hash_dataset(ds: Dataset) -> str:
    """Content hash of a dataset: everything a score depends on (the codes or values,
    names, arities, levels, kind). The same data give the same hash whether they came
    from a file, a pipe, a DataFrame or an array."""
    h = hashlib.sha256(np.ascontiguousarray(ds.data).tobytes())
    h.update(f"{ds.data.dtype}{ds.data.shape}{ds.kind}".encode())
    h.update(np.ascontiguousarray(ds.arities, dtype=np.int64).tobytes())
    h.update(json.dumps([list(ds.names), [list(lv) for lv in ds.levels]]).encode())
    if ds.intervened is not None:
        h.update(b"intervened" + np.packbits(ds.intervened).tobytes())
    return h.hexdigest()


