"""Reading a data file: a CSV table of complete records, coded as a discrete dataset.

Two steps, kept apart so that other kinds of data (continuous, for the BGe score) can
reuse the first:

1. `read_table`: parse and validate the CSV text into a `Table` of stripped strings;
2. `discrete_dataset`: code every column as 0..r_j-1, giving a `Dataset` (the m x n
   integer matrix every discrete score kernel consumes).

Every problem with the input raises `DataError` with one line naming the file, the row
(the 1-based line number in the file, header = line 1) and the column where they apply.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import stat
from dataclasses import dataclass

import numpy as np
from numba import njit

from bigbn import _numba  # noqa: F401  (first: numba's cache outside the package)
from bigbn.errors import DataError

__all__ = ["Table", "Dataset", "read_table", "discrete_dataset", "load_discrete"]


def _missing_set() -> frozenset[str]:
    """Cell values (after strip) read as missing: "", "?", and "NA"/"NaN" in any case."""
    out = {"", "?"}
    for word in ("na", "nan"):
        spellings = [""]
        for ch in word:
            spellings = [s + c for s in spellings for c in (ch, ch.upper())]
        out.update(spellings)
    return frozenset(out)


_MISSING = _missing_set()
#: an integer and a decimal number as the files bigbn reads write them (data cells, jkl
#: scores, tiers, --edge-prob and --max-parents-file cells): ASCII digits, an optional sign,
#: point and exponent. int() and float() also take '1_0', '0.2_5' and other scripts'
#: digits, which no such file means. One grammar for every reader.
INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True, eq=False)
class Table:
    """A validated CSV file: column names and the cells, coded column by column.

    ``columns[j]`` is (values, codes): ``values`` a numpy str array of the distinct
    stripped cells of column j, sorted (as `np.unique` sorts them), and ``codes`` int32
    (m,), each row's position in ``values``. No cell is empty or missing (but in a column
    `read_table` was told may be empty). ``path`` is the file name as given (used in
    messages). ``lines``: int64 (m,), the file line of each row (header = line 1, blank
    lines counted); None means row r is on line r + 2 (see `line`). `from_cells` makes
    one from an (m, n) array of cells; ``cells`` gives that array back.
    """

    path: str
    names: tuple[str, ...]
    columns: tuple[tuple[np.ndarray, np.ndarray], ...]
    lines: np.ndarray | None = None

    @classmethod
    def from_cells(cls, path: str, names, cells: np.ndarray, lines: np.ndarray | None = None) -> "Table":
        """The table of the cells (an (m, n) array of stripped strings)."""
        cells = np.asarray(cells, dtype=str)
        columns = []
        for j in range(cells.shape[1]):
            values, codes = np.unique(cells[:, j], return_inverse=True)
            columns.append((values, codes.reshape(-1).astype(np.int32)))
        return cls(path, tuple(names), tuple(columns), lines)

    @property
    def cells(self) -> np.ndarray:
        """The (m, n) str array of the cells (made on each call: the columns are the table)."""
        return np.stack([values[codes] for values, codes in self.columns], axis=1)

    def column(self, j: int) -> np.ndarray:
        """Column j's cells, a str array (m,)."""
        values, codes = self.columns[j]
        return values[codes]

    def select(self, keep: list[int]) -> "Table":
        """The table of the columns ``keep`` (their names and cells), rows unchanged."""
        return Table(self.path, tuple(self.names[j] for j in keep),
                     tuple(self.columns[j] for j in keep), self.lines)

    def line(self, r: int) -> int:
        """File line number (1-based) of data row r (0-based), for error messages."""
        return int(self.lines[r]) if self.lines is not None else r + 2

    @property
    def n(self) -> int:
        return len(self.columns)

    @property
    def m(self) -> int:
        return self.columns[0][1].size


@dataclass(frozen=True, eq=False)
class Dataset:
    """Complete data, coded.

    ``kind="discrete"`` (made by `discrete_dataset`):

    - ``data``: int32, shape (m, n), C-contiguous; column j holds codes 0..arities[j]-1;
    - ``arities``: int64, shape (n,), r_j >= 1 (a column with a single level is allowed);
    - ``levels``: ``levels[j][c]`` is the original value coded c in column j.

    ``kind="continuous"`` (the BGe score): ``data`` float64 (m, n), all finite;
    ``arities`` all 0; ``levels`` n empty tuples.

    ``kind="mixed"`` (the CG score, `bigbn.scores.cg`): ``data`` float64 (m, n), all
    finite; a discrete column j has ``arities[j]`` = r_j >= 1, its levels and codes
    0..r_j-1 (whole numbers held as floats); a continuous column has arity 0 and no levels.

    ``names``: the n variable names; ``path``: where the data came from ("" if made in
    memory). ``intervened``: None (observational data) or bool (m, n), True where row t
    was an experiment that set variable j (a perfect intervention on known targets: node j's
    local score uses only the rows where it is False). Arrays are coerced to these dtypes/layouts on construction and checked; a
    mismatch raises `DataError`.
    """

    names: tuple[str, ...]
    data: np.ndarray
    arities: np.ndarray
    levels: tuple[tuple[str, ...], ...]
    kind: str = "discrete"
    path: str = ""
    intervened: np.ndarray | None = None

    def __post_init__(self):
        where = self.path or "dataset"
        if self.kind not in ("discrete", "continuous", "mixed"):
            raise DataError(f"{where}: unknown data kind '{self.kind}' (discrete, continuous or mixed)")
        data = np.asarray(self.data)
        if self.kind == "discrete" and data.dtype.kind not in "iub":
            raise DataError(f"{where}: discrete data must be integer codes, got dtype {data.dtype}")
        arities = np.ascontiguousarray(self.arities, dtype=np.int64)
        if data.ndim != 2:
            raise DataError(f"{where}: data must be a 2-d (rows x variables) array, got {data.ndim}-d")
        n = data.shape[1]
        if len(self.names) != n or arities.shape != (n,) or len(self.levels) != n:
            raise DataError(
                f"{where}: {n} data columns but {len(self.names)} names, "
                f"{arities.size} arities and {len(self.levels)} level lists"
            )
        _check_labels(where, self.names, self.levels)
        if self.kind == "discrete":
            _check_codes(where, self.names, data, arities, self.levels)
            data = np.ascontiguousarray(data, dtype=np.int32)
        elif self.kind == "mixed":
            data = _check_mixed(where, self.names, data, arities, self.levels)
        else:
            try:
                data = np.ascontiguousarray(data, dtype=np.float64)
            except (TypeError, ValueError):
                raise DataError(f"{where}: continuous data must be numbers, got dtype {data.dtype}") from None
            if np.any(arities != 0) or any(len(lv) for lv in self.levels):
                raise DataError(f"{where}: continuous data has arities 0 and no levels")
            if not np.isfinite(data).all():
                j = int(np.flatnonzero(~np.isfinite(data).all(axis=0))[0])
                raise DataError(f"{where}, column '{self.names[j]}': values must be finite")
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "levels", tuple(tuple(lv) for lv in self.levels))
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "arities", arities)
        if self.intervened is not None:
            mask = np.asarray(self.intervened)
            if mask.dtype != bool or mask.shape != data.shape:
                raise DataError(f"{where}: intervened must be a bool array of the data's shape "
                                f"{data.shape}, got {mask.dtype} {mask.shape}")
            object.__setattr__(self, "intervened", np.ascontiguousarray(mask))

    def rows(self, keep: np.ndarray) -> "Dataset":
        """The observational dataset of the rows ``keep`` (bool (m,)): the same variables,
        arities and levels (so a level absent from these rows is still a level)."""
        return Dataset(self.names, self.data[keep], self.arities, self.levels, self.kind, self.path)

    @property
    def n(self) -> int:
        """Number of variables (columns)."""
        return self.data.shape[1]

    @property
    def m(self) -> int:
        """Number of records (rows)."""
        return self.data.shape[0]


def _check_labels(where: str, names, levels) -> None:
    """A Dataset's names as a CSV header's (`_check_header`: text, none empty or twice,
    none holding a control character) and each column's levels as a file's cells (text,
    none empty (a missing cell) or twice, none holding a control character: `check_level`),
    one line naming the column and the level's position. A Dataset built in Python took
    any: a name "a\nb" or a level "x\x1b[2J" went into every output and printed line, and
    a level given twice made two codes print as one."""
    for j, name in enumerate(names, start=1):
        if not isinstance(name, str):
            raise DataError(f"{where}, column {j}: the name {name!r} ({type(name).__name__}) is not text")
    _check_header(where, list(names), min_columns=0)
    for name, lv in zip(names, levels):
        lv = tuple(lv)
        for c, level in enumerate(lv, start=1):
            if not isinstance(level, str):
                raise DataError(f"{where}, column '{name}', level {c}: {level!r} ({type(level).__name__}) "
                                "is not text")
        if "" in lv:
            raise DataError(f"{where}, column '{name}', level {lv.index('') + 1}: empty level (an empty cell is "
                            "a missing value)")
        if NOT_IN_LEVEL.search("".join(lv)):  # one search over all (a control character is one character)
            for c, level in enumerate(lv, start=1):
                check_level(f"{where}, column '{name}', level {c}", level)
        if len(set(lv)) != len(lv):
            first: dict[str, int] = {}
            for c, level in enumerate(lv, start=1):
                if level in first:
                    raise DataError(f"{where}, column '{name}': level '{level}' given twice (levels "
                                    f"{first[level]} and {c}); each level is one code")
                first[level] = c


def _check_mixed(where, names, data, arities, levels) -> np.ndarray:
    """A mixed dataset's data as float64: every cell finite, each discrete column (arity
    > 0) whole-number codes within its levels, each continuous one (arity 0) without levels."""
    try:
        data = np.ascontiguousarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{where}: mixed data must be numbers (codes and values), got dtype {data.dtype}") from None
    if not np.isfinite(data).all():
        j = int(np.flatnonzero(~np.isfinite(data).all(axis=0))[0])
        raise DataError(f"{where}, column '{names[j]}': values must be finite")
    disc = np.flatnonzero(arities > 0)
    for j in np.flatnonzero(arities <= 0).tolist():
        if arities[j] < 0 or len(levels[j]):
            raise DataError(f"{where}, column '{names[j]}': a continuous column has arity 0 and no levels")
    if disc.size:
        codes = data[:, disc]
        if np.any(codes != np.round(codes)):
            j = int(disc[np.flatnonzero((codes != np.round(codes)).any(axis=0))[0]])
            raise DataError(f"{where}, column '{names[j]}': a discrete column holds whole-number codes")
        _check_codes(where, [names[j] for j in disc], codes.astype(np.int64), arities[disc],
                     [levels[j] for j in disc])
    return data


def _check_codes(where, names, data, arities, levels) -> None:
    for j in range(data.shape[1]):
        if arities[j] < 1 or len(levels[j]) != arities[j]:
            raise DataError(f"{where}, column '{names[j]}': arity {arities[j]} but {len(levels[j])} levels")
    if data.size:
        lo, hi = data.min(axis=0), data.max(axis=0)
        bad = np.flatnonzero((lo < 0) | (hi >= arities))
        if bad.size:
            j = int(bad[0])
            raise DataError(
                f"{where}, column '{names[j]}': codes must lie in 0..{arities[j] - 1}, "
                f"found {int(lo[j])}..{int(hi[j])}"
            )


MAX_HEADER_BYTES = 1 << 20  # a header line longer than this is not a CSV header
_BLOCK = 1 << 16


def _open_input(path: str) -> tuple[int, bytes]:
    """A file descriptor to read ``path`` from and the bytes already read from it, without
    blocking: only a regular file or a pipe that something writes to is input (a device
    such as /dev/zero or /dev/urandom never ends; a named pipe with no writer would wait
    forever)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, not a data file") from None
    except PermissionError:
        raise DataError(f"{path}: not readable (permission denied)") from None
    except OSError as e:
        raise DataError(f"{path}: cannot be read ({e.strerror or e})") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise DataError(f"{path}: is a directory, not a data file")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        os.close(fd)
        raise DataError(f"{path}: not a regular file or a pipe (a device or socket); give a data file")
    if stat.S_ISFIFO(mode):
        try:  # without a writer a non-blocking read says end of file; with one, "try again"
            first = os.read(fd, 1)
        except BlockingIOError:
            first = None
        if first == b"":
            os.close(fd)
            raise DataError(f"{path}: a named pipe that nothing writes to (start the writer first)")
        os.set_blocking(fd, True)
        return fd, first or b""
    return fd, b""


def read_text(path: str) -> str:
    """The text of a data or constraint file, regular file or pipe (see `_open_input`):
    UTF-8, a BOM allowed. Decoded as it is read, so that binary input is refused at its
    first block, and the first line must end within MAX_HEADER_BYTES, so that endless
    input without lines is refused after a megabyte, not when memory runs out."""
    fd, head = _open_input(path)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    parts: list[str] = []
    size, lines = 0, 0

    def decode(block: bytes, final: bool = False) -> None:
        try:
            parts.append(decoder.decode(block, final=final))
        except UnicodeDecodeError as e:
            at = max(e.start, 0)
            line = lines + block.count(b"\n", 0, at) + 1
            byte = f"byte 0x{block[at]:02x}" if at < len(block) else "a cut multi-byte character"
            raise DataError(f"{path}, row {line}: not UTF-8 text ({byte} at offset {size + at}); "
                            "save the file as UTF-8") from None

    try:
        block = head or os.read(fd, _BLOCK)
        while block:
            decode(block)
            size += len(block)
            lines += block.count(b"\n")
            if not lines and size > MAX_HEADER_BYTES:
                raise DataError(f"{path}, row 1: no end of line in the first "
                                f"{MAX_HEADER_BYTES >> 20} MiB (not a CSV file?)")
            block = os.read(fd, _BLOCK)
        decode(b"", final=True)
    except OSError as e:
        raise DataError(f"{path}: cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)
    return "".join(parts)


def _is_blank(record: list[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())


SEPARATORS = {",": "comma", "\t": "tab", ";": "semicolon"}


def sniff_separator(text: str) -> str:
    """The separator of a delimited text: the one of comma, tab and semicolon that occurs
    most often in its first non-blank line (outside double quotes); comma on a tie."""
    first = _first_line(text)
    counts = dict.fromkeys(SEPARATORS, 0)
    quoted = False
    for ch in first:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(SEPARATORS, key=lambda c: (counts[c], c == ","))
    return best if counts[best] else ","


def _first_line(text: str) -> str:
    """The first non-blank line of ``text`` (as ``text.splitlines()`` would give it), or
    "", without splitting the rest of the text."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        for line in text[start:end].splitlines():
            if line.strip():
                return line
        start = end
    return ""


def _separator(sep: str | None, text: str) -> str:
    if sep is None:
        return sniff_separator(text)
    sep = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";"}.get(sep, sep)
    if len(sep) != 1 or sep in '"\r\n':
        raise DataError(f"separator {sep!r}: give one character (',', ';', tab) or 'tab'")
    return sep


def read_table(path, sep: str | None = None, may_be_empty: str | None = None, min_columns: int = 2) -> Table:
    """Read a delimited file with a header line into a `Table`.

    ``sep``: the separator (one character, or "tab"); None detects comma, tab or
    semicolon from the header line (`sniff_separator`).

    The first non-blank line holds the column names. Cells are stripped of surrounding
    whitespace; standard CSV quoting is understood (stdlib `csv`). Blank lines (empty or
    only whitespace) anywhere are skipped, including a trailing newline. Line numbers in
    messages are physical lines of the file (a quoted cell spanning lines counts where
    its record ends).

    Raises `DataError` (one line naming file, row and column) for: a file that is missing,
    unreadable, not UTF-8 or empty; fewer than ``min_columns`` columns (2; a time series of
    one variable takes 1; one column named with a '|' in it is a file separated by '|');
    an empty or duplicate column name; no data rows; a row with the wrong number of fields;
    an empty cell or a missing value ("NA", "NaN", "?" in any case) — bigbn needs complete
    data (in a table of one column, a blank line between data rows is its empty cell).
    ``may_be_empty``: a column exempt from that rule (the intervention column, whose empty
    cells mark observational rows).
    """
    p = os.fspath(path)
    p = p.decode() if isinstance(p, bytes) else p
    text = read_text(p)
    if not text.strip():
        raise DataError(f"{p}: empty file")
    sep = _separator(sep, text)
    table = _plain_table(p, text, sep, may_be_empty, min_columns)
    if table is None:
        table = _csv_table(p, text, sep, may_be_empty, min_columns)
    if table.n == 1 and "|" in table.names[0]:  # one column: a file separated by '|' (not read as one)
        raise DataError(f"{p}: one column, named {table.names[0]!r} (separate the columns by commas, tabs or "
                        "semicolons)")
    return table


def _csv_table(p: str, text: str, sep: str, may_be_empty: str | None, min_columns: int) -> Table:
    """`read_table` by the stdlib's CSV reader (quoted cells, blank lines, ...)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    names: tuple[str, ...] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    blank = 0  # in a table of one column, the first blank line since the last data row
    try:
        start = 1
        for record in reader:
            line = reader.line_num
            first, start = start, line + 1  # the record's first physical line
            if _is_blank(record):
                if names is not None and len(names) == 1 and not blank:
                    blank = line
                continue
            if blank:  # a blank line between rows of one column: its one cell is empty, a missing
                # value (skipped, the rows after it would be read one step early in a time series)
                raise DataError(f"{p}, row {blank}, column '{names[0]}': empty cell (bigbn needs complete "
                                "data: remove or impute the row)")
            if any("\n" in c or "\r" in c for c in record):
                raise DataError(f"{p}, row {first}: a quote opened on this line is not closed on it "
                                f"(the cell runs on to line {line}); close the quote or remove it")
            if any("\x00" in c for c in record):
                j = next(j for j, c in enumerate(record) if "\x00" in c)
                raise DataError(f"{p}, row {line}, column {j + 1}: a NUL byte (not a text file?)")
            cells = [c.strip() for c in record]
            if names is None:
                names = _check_header(p, cells, min_columns, line)
                _check_may_be_empty(p, names, may_be_empty)
                n = len(names)
                free = names.index(may_be_empty) if may_be_empty in names else -1
                continue
            if len(cells) != n:
                k = len(cells)
                raise DataError(f"{p}, row {line}: {k} field{'s' * (k != 1)}, expected {n} (ragged row)")
            missing = [] if _MISSING.isdisjoint(cells) else \
                [j for j, c in enumerate(cells) if c in _MISSING and j != free]
            if missing:
                j = missing[0]
                what = "empty cell" if cells[j] == "" else f"missing value '{cells[j]}'"
                raise DataError(
                    f"{p}, row {line}, column '{names[j]}': {what} "
                    "(bigbn needs complete data: remove or impute the row)"
                )
            rows.append(cells)
            lines.append(line)
    except csv.Error as e:
        raise DataError(f"{p}, row {reader.line_num}: not valid CSV ({e})") from None
    if not rows:
        raise DataError(f"{p}: no data rows (only a header line)")
    table = Table.from_cells(p, names, np.array(rows, dtype=str), np.array(lines, dtype=np.int64))
    check_levels(table, lambda r, j: f"{p}, row {table.line(r)}, column '{names[j]}'")
    return table


def _plain_table(path: str, text: str, sep: str, may_be_empty: str | None, min_columns: int = 2) -> Table | None:
    """The `Table` of a plain file, read in one pass over its bytes, or None if the file
    needs the CSV reader of `read_table` (which then reads it, and words any error).

    Plain: no quote or NUL anywhere, every line ending in "\n" or "\r\n", a header line
    first, no blank line, every line with the header's number of fields, no cell with
    space around it, and no missing cell (but in ``may_be_empty``). Such a file reads the
    same either way (tests/test_data.py holds the two to each other); this way 10^6 rows
    of 28 binary columns take ≈ 1 s instead of ≈ 17. Each cell's first 8 bytes are a
    big-endian 64-bit word (`_cell_words`), whose order is the strings' (UTF-8 keeps
    code-point order), so `np.unique` sorts words; a column with longer cells is coded
    from its cells' bytes (`_cell_bytes`).
    """
    if len(sep.encode()) != 1 or '"' in text or "\x00" in text:
        return None
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")
    head, _, body = text.partition("\n")
    header = [c.strip() for c in head.split(sep)]
    if len(header) < min_columns or not body or body[0] == "\n" or "\n\n" in body:
        return None
    names = _check_header(path, header, min_columns, 1)
    _check_may_be_empty(path, names, may_be_empty)
    n = len(names)
    raw = np.frombuffer((body if body.endswith("\n") else body + "\n").encode(), dtype=np.uint8)
    m = body.count("\n") + (not body.endswith("\n"))
    words, width, plain = _cell_words(raw, ord(sep), n, m)
    if not plain:  # a line with another number of fields
        return None
    free = names.index(may_be_empty) if may_be_empty in names else -1
    columns, suspect = [], []
    for j in range(n):
        if width[j] <= 8:
            keys, size = words[j], 8
        else:
            size = int(width[j])
            keys = _cell_bytes(raw, ord(sep), n, j, m, size).view(f"S{size}").reshape(-1)
        distinct, codes, few = _few_codes(words[j], _FEW) if size == 8 else (None, None, False)
        if not few:
            distinct, codes = np.unique(keys, return_inverse=True)
        if size == 8:
            distinct = distinct.astype(">u8").view("S8")
        values = np.char.decode(distinct, "utf-8").astype(str)
        cells = values.tolist()
        if (j != free and not _MISSING.isdisjoint(cells)) or any(v != v.strip() for v in cells):
            return None
        if _may_hold_control(distinct.tobytes()):
            suspect.append(j)
        columns.append((values, codes.reshape(-1).astype(np.int32)))
    table = Table(path, names, tuple(columns))
    check_levels(table, lambda r, j: f"{path}, row {table.line(r)}, column '{names[j]}'", suspect)
    return table


@njit(cache=True, nogil=True)
def _cell_words(raw, sep, n, m):
    """(words (n, m) uint64, width (n,), plain) of the m lines of n fields in ``raw``
    (bytes, each line ending in a newline): words[j, r] holds the first 8 bytes of row
    r's cell j, left-aligned and zero-padded, width[j] the longest cell of column j;
    plain is False if some line has another number of fields than n (or there are not m
    lines)."""
    words = np.zeros((n, m), dtype=np.uint64)
    width = np.zeros(n, dtype=np.int64)
    r, j, w = 0, 0, 0
    key = np.uint64(0)
    for i in range(raw.size):
        c = raw[i]
        if c == sep or c == 10:
            if (c == 10) != (j == n - 1) or r == m:
                return words, width, False
            if w:
                words[j, r] = key << np.uint64(8 * (8 - min(w, 8)))
            width[j] = max(width[j], w)
            key = np.uint64(0)
            w = 0
            if c == 10:
                r += 1
                j = 0
            else:
                j += 1
        else:
            if w < 8:
                key = (key << np.uint64(8)) | np.uint64(c)
            w += 1
    return words, width, r == m


_FEW = 64  # up to this many distinct cells a column is coded by `_few_codes`


@njit(cache=True, nogil=True)
def _few_codes(keys, most):
    """(sorted distinct keys, int32 code of each key, True) if ``keys`` (uint64) hold at
    most ``most`` distinct values, else (_, _, False): what `np.unique(keys,
    return_inverse=True)` gives, in two passes with a binary search over the few."""
    distinct = np.empty(most, dtype=np.uint64)
    d = 0
    for key in keys:
        at = np.searchsorted(distinct[:d], key)
        if at < d and distinct[at] == key:
            continue
        if d == most:
            return distinct[:0], np.empty(0, dtype=np.int32), False
        distinct[at + 1:d + 1] = distinct[at:d].copy()
        distinct[at] = key
        d += 1
    codes = np.searchsorted(distinct[:d], keys).astype(np.int32)
    return distinct[:d].copy(), codes, True


@njit(cache=True, nogil=True)
def _cell_bytes(raw, sep, n, col, m, size):
    """The bytes of column ``col``'s cells (a plain table as in `_cell_words`), an
    (m, size) uint8 array, each cell zero-padded."""
    out = np.zeros((m, size), dtype=np.uint8)
    r, j, w = 0, 0, 0
    for i in range(raw.size):
        c = raw[i]
        if c == sep or c == 10:
            w = 0
            if c == 10:
                r += 1
                j = 0
            else:
                j += 1
        else:
            if j == col:
                out[r, w] = c
            w += 1
    return out


#: a character no variable name holds: the C0 and C1 controls and DEL (a newline, tab or CR
#: of a DataFrame's column name broke the lines of edges.csv and of every printed list;
#: an ESC went into the files as it was), and the line and paragraph separators (lines to
#: str.splitlines)
NOT_IN_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: what a level (a discrete column's cell, a BIF state) may not hold: `NOT_IN_NAME` but the
#: tab, which a quoted CSV cell ("a\tb") holds as text and no output is broken by (the BIF
#: export refuses whitespace in a state, XMLBIF, the CSV outputs and a terminal's lines hold
#: it, the report shows it escaped); loose54 refused such data, which bigbn had read
NOT_IN_LEVEL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")

#: what a page or a terminal shows as its escape (\x07, \u202e), never as it is: the C0
#: and C1 controls and DEL (a bell or an ESC of a column name went into the page as it was:
#: invisible, or a box, or a character HTML forbids), the bidirectional marks, embeddings,
#: overrides and isolates (U+202E turned the rest of a cell around), the line and paragraph
#: separators, lone surrogates and the noncharacters U+FFFE and U+FFFF
INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                       "\ud800-\udfff\ufffe\uffff]")


def visible(text: str, lines: bool = False) -> str:
    """``text`` with each `INVISIBLE` character written as its Python escape (\\x07); with
    ``lines``, tabs and newlines kept as they are (a terminal's lines: `bigbn.cli.tools.echo`).
    The report's page (`bigbn.outputs.report`), the commands' output and the messages that
    show a refused name or level write text through it."""
    def escape(m):
        return m.group() if lines and m.group() in "\t\n" else m.group().encode("unicode_escape").decode("ascii")
    return INVISIBLE.sub(escape, text)


def check_name(where: str, name: str, what: str = "column name") -> None:
    """DataError (one line, the name escaped) for a name holding a `NOT_IN_NAME`
    character; ``where`` names the file, line and column (or the source and column)."""
    _check_one_line(where, name, what, "a name is one line of printable text (rename it)", NOT_IN_NAME)


def check_level(where: str, level: str, what: str = "level") -> None:
    """DataError (one line, the level escaped) for a level (a discrete column's cell, a
    BIF state) holding a `NOT_IN_LEVEL` character (a control but the tab), as `check_name`
    refuses a name: a level "a\\nb" or "a\\x1b[2J" went into the BIF and XMLBIF exports, the
    CSV outputs, the report and the terminal's lines. ``where``: the file, row and column."""
    _check_one_line(where, level, what, "a level is one line of printable text (recode it)", NOT_IN_LEVEL)


def _check_one_line(where: str, text: str, what: str, fix: str, refused: re.Pattern) -> None:
    bad = refused.search(text)
    if bad:
        raise DataError(f"{where}: the {what} '{visible(text)}' holds the control character {bad.group()!r}; {fix}")


def _holds_control(values: np.ndarray) -> np.ndarray:
    """bool (k,): which strings of the str array ``values`` hold a `NOT_IN_LEVEL` character,
    over their UTF-32 code points at numpy's speed (a zero is numpy's padding after a
    string's end, a NUL before another character)."""
    if values.size == 0 or values.dtype.itemsize == 0:
        return np.zeros(values.size, dtype=bool)
    u = np.ascontiguousarray(values).view(np.uint32).reshape(values.size, -1)
    bad = (((u - np.uint32(1)) < 0x1f) & (u != 9)) | ((u - np.uint32(0x7f)) <= 0x20) | ((u | np.uint32(1)) == 0x2029)
    bad[:, :-1] |= (u[:, :-1] == 0) & (u[:, 1:] != 0)
    return bad.any(axis=1)


def check_levels(table: "Table", where, columns=None) -> None:
    """`check_level` of every distinct cell of the table's ``columns`` (default all): a
    cell holding a control character is refused, naming ``where(r, j)`` (the source, row
    r's name and column j's) of its first row."""
    for j in range(table.n) if columns is None else columns:
        values, codes = table.columns[j]
        bad = np.flatnonzero(_holds_control(values))
        if bad.size:
            i = int(bad[0])
            check_level(where(int(np.flatnonzero(codes == i)[0]), j), values[i].item())


#: the bytes of UTF-8 text (a plain file's cells, zero-padded) that hold no `NOT_IN_LEVEL`
#: character alone: printable ASCII, the tab, the padding and every byte of a multi-byte character
_NOT_CONTROL_BYTES = bytes(range(0x20, 0x7f)) + bytes(range(0x80, 0x100)) + b"\x00\t"
#: C1 controls, U+2028 and U+2029 in UTF-8
_CONTROL_UTF8 = re.compile(b"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")


def _may_hold_control(buf: bytes) -> bool:
    """Whether the UTF-8 bytes ``buf`` may hold a `NOT_IN_LEVEL` character (False: they
    hold none), at the speed of bytes.translate: what `_plain_table` asks of each column
    before `check_levels` looks at its strings. A NUL is not seen (it is the padding):
    none reaches it, `read_text` refuses a file holding one ('a NUL byte')."""
    return bool(buf.translate(None, _NOT_CONTROL_BYTES)) or (
        (b"\xc2" in buf or b"\xe2" in buf) and _CONTROL_UTF8.search(buf) is not None)


def _check_header(path: str, names: list[str], min_columns: int = 2,
                  line: int | None = None) -> tuple[str, ...]:
    """The column names, checked: at least ``min_columns`` (a time series may have one), none
    empty, none twice, none holding a control character (`check_name`). ``line``: the
    header's line in the file (None: not a file)."""
    if len(names) < min_columns:
        hint = ""
        if names and "|" in names[0]:
            hint = " (separate the columns by commas, tabs or semicolons)"
        raise DataError(f"{path}: need at least {min_columns} column{'s' * (min_columns != 1)}, found "
                        f"{len(names)}{hint}")
    seen: dict[str, int] = {}
    for j, name in enumerate(names, start=1):
        if not name:
            raise DataError(f"{path}, column {j}: empty column name (line 1 must name every column)")
        check_name(f"{path}, row {line}, column {j}" if line is not None else f"{path}, column {j}", name)
        if name in seen:
            raise DataError(f"{path}: duplicate column name '{name}' (columns {seen[name]} and {j})")
        seen[name] = j
    return tuple(names)


def check_exact_numbers(where: str, name: str, texts: np.ndarray, numbers: np.ndarray) -> None:
    """DataError when two of a column's distinct cells ``texts`` are different numbers that
    float64 (``numbers``, their float64 values) makes one (1e20 and 1e20 + 1): the column's
    values would be silently merged (a column that varies read as constant). Compared
    exactly only where float64 has fewer distinct values than the cells."""
    for a, b, same in one_float_cells(texts, numbers):
        if same is False:
            raise DataError(f"{where}, column '{name}': '{texts[a]}' and '{texts[b]}' are different numbers but "
                            f"the same float64 ({float(numbers[a])!r}): float64 cannot carry this column's values "
                            "exactly; subtract an offset from it or rescale it")


def one_float_cells(texts: np.ndarray, numbers: np.ndarray):
    """(a, b, same) for each two distinct cells ``texts[a]``, ``texts[b]`` whose float64
    (``numbers``) are one number, next to each other in float64's order: ``same`` whether
    the cells are one number too, compared as decimals (exact; a Fraction of
    '1e-99999999999', 0.0 in float64 as '0' is, computed 10^99999999999, a hang), None
    where one is not a plain decimal (float64 read it: nothing to compare). Nothing where
    the float64 are as many as the cells (the usual case, at numpy's speed)."""
    from decimal import Decimal

    if np.unique(numbers).size == numbers.size:
        return
    order = np.argsort(numbers, kind="stable")
    for a, b in zip(order[:-1].tolist(), order[1:].tolist()):
        if numbers[a] != numbers[b]:
            continue
        try:
            same = Decimal(str(texts[a]).strip()) == Decimal(str(texts[b]).strip())
        except (ArithmeticError, ValueError):
            same = None
        yield a, b, same


def check_carried(table: "Table", j: int, numbers: np.ndarray, tol: float) -> np.ndarray | None:
    """DataError when float64 drops digits of column j's cells that matter at its spread.

    A cell is read as the float64 nearest it, whose shortest decimal (repr) is the cell's
    number but where the cell has more significant digits than float64 holds
    (9007199254740993, 1000000000000.123456). That rounding, up to half an ulp, changes the
    data where the column's spread is not far above the ulp: 2^53 + 1, 7, 13, 19 were read
    as 2^53 + 0, 8, 12, 20, and log p(data) came out 18 nats off that of the cells (the
    same numbers less 2^53, which float64 holds). Refused where the rounding moves the
    column's sum of squares about its mean by a share δ whose effect on a score, about
    a1·δ ≈ δ·m/2 nats, exceeds ``tol`` (the caller's: bigbn.scores.bge.LOG_ERROR_TOL, the
    most the scores' own cancellation may err by). The cells are compared as decimals only where that could
    happen: not where half an ulp of the largest cell, m times over, is within that share
    of the column's sd (ordinary data), nor in a constant column. numbers: the float64 of
    each distinct cell (``table.columns[j][0]``). Returns the cells' `rounding_errors` where
    it compared them (for `check_carried_together`), else None."""
    texts, codes = table.columns[j]
    m = codes.size
    w = np.bincount(codes, minlength=texts.size).astype(np.float64)  # rows of each distinct cell
    with np.errstate(over="ignore", invalid="ignore"):
        c = numbers - np.dot(w, numbers) / m
        ss = float(np.dot(w, c * c))
    big = float(np.abs(numbers).max(initial=0.0))
    if not np.isfinite(ss) or ss == 0.0:
        return None  # too large: `too_large` names it; constant (cells float64 made one: `check_exact_numbers`)
    eps = float(np.finfo(np.float64).eps)
    if (eps / 2 * big) * m / np.sqrt(ss / max(m - 1, 1)) <= tol:
        return None
    err = rounding_errors(texts, numbers)
    if not err.any():
        return err
    e = err - np.dot(w, err) / m
    delta = abs(2 * float(np.dot(w, c * e)) + float(np.dot(w, e * e))) / ss
    if delta * m / 2 > tol:
        i = int(np.argmax(np.abs(err)))
        r = int(np.flatnonzero(codes == i)[0])
        raise DataError(f"{table.path}, row {table.line(r)}, column '{table.names[j]}': '{texts[i]}' is "
                        f"{float(numbers[i])!r} in float64: float64 cannot carry this column's values at their "
                        f"spread (its rounding moves the sum of squares by {delta:.2g} of itself, a score by about "
                        f"{delta * m / 2:.2g} nats); subtract an offset from it or rescale it")
    return err


def rounding_errors(texts: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """The decimal cell less its float64, float64 (one per distinct cell ``texts``, read as
    ``numbers``): 0 where the cell is its float64's repr or spells the same number, or is
    not a finite decimal (`check_carried`, `check_carried_together`)."""
    from decimal import Decimal, localcontext

    err = np.zeros(texts.size)
    with localcontext() as ctx:
        ctx.prec = 60
        for i, (text, v) in enumerate(zip(texts.tolist(), numbers.tolist())):
            if text == repr(v):
                continue
            try:
                exact = Decimal(text.strip())
            except ArithmeticError:
                continue
            if not exact.is_finite() or exact == Decimal(repr(v)):
                continue
            err[i] = float(exact - Decimal(v))
    return err


#: the floor of the columns' correlation matrix's eigenvalues in `check_carried_together`
#: (a direction the columns' float64 spread does not hold, the scores' prior T = t·I does,
#: and there the collinearity check of bigbn.scores.bge judges them)
CARRIED_FLOOR = 1e-12


def check_carried_together(table: "Table", columns, data: np.ndarray, tol: float, known=None) -> None:
    """DataError when float64's rounding of the cells of ``columns`` (indices into
    ``table``; ``data`` float64 (m, len(columns)), their numbers) moves a score by more
    than ``tol`` nats through the columns' spread *relative to each other*, which
    `check_carried`, looking at each column's own spread, does not see: b = a + 0.01·noise
    far from 0 (1e8 + a few units, cells written with 12 decimals): float64 rounds each
    cell by up to 7e-9, nothing at a's or b's own sd of 1, but 7e-7 of b's spread about a,
    and the scores erred by 2.4e-6 nats against the decimal cells (m = 1000), unrefused.

    The bound, to first order: log det(S_Y + ΔS_Y) − log det S_Y for any set Y of the
    columns is at most Σ_i |λ_i| of the pencil (ΔS, S) of all of them (Cauchy interlacing),
    S their scatter matrix about the mean, ΔS = CᵀE + EᵀC + EᵀE its change by the cells'
    rounding errors E (centred; C the centred data), and a score is a1 ≈ m/2 times it. S
    without the prior's t·I (which only lowers the effect), its correlation matrix floored
    at `CARRIED_FLOOR`. Decimals are compared only where a worst case (each cell off by half
    an ulp of the column's largest) could reach ``tol``; never for ordinary data. known:
    {index into ``table``: its distinct cells' `rounding_errors`} that `check_carried`
    already compared (not compared again)."""
    m = data.shape[0]
    cols = list(columns)
    if len(cols) < 2 or m < 2:
        return
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        c = data - data.mean(axis=0)
        c -= c.mean(axis=0)
        S = c.T @ c
        d = np.sqrt(np.diag(S))
        if not np.isfinite(S).all():
            return  # too large: `too_large` names it
        if not (d > 0).all():  # a constant column (BGe scores it; cg refuses it) is left out
            keep = np.flatnonzero(d > 0)
            return check_carried_together(table, [cols[a] for a in keep.tolist()], data[:, keep], tol, known)
        B = S / np.outer(d, d) + CARRIED_FLOOR * np.eye(len(cols))
        low = float(np.linalg.eigvalsh(B)[0])
        eps = float(np.finfo(np.float64).eps)
        h = eps / 2 * np.abs(data).max(axis=0)  # half an ulp of each column's largest cell
        g = np.sqrt(m * len(cols)) * float(np.max(h / d)) / np.sqrt(max(low, CARRIED_FLOOR))
    if not m / 2 * len(cols) * (2 * g + g * g) > tol:
        return
    E = np.zeros_like(data)
    for a, j in enumerate(cols):
        texts, codes = table.columns[j]
        err = (known or {}).get(j)
        if err is None:
            numbers = np.zeros(texts.size)
            numbers[codes] = data[:, a]
            err = rounding_errors(texts, numbers)
        E[:, a] = err[codes]
    if not E.any():
        return
    E -= E.mean(axis=0)
    dS = c.T @ E
    dS = dS + dS.T + E.T @ E
    L = np.linalg.cholesky(B)
    A = np.linalg.solve(L, np.linalg.solve(L, dS / np.outer(d, d)).T)
    lam, vec = np.linalg.eigh((A + A.T) / 2)
    effect = m / 2 * float(np.abs(lam).sum())
    if effect > tol:
        top = np.linalg.solve(L.T, vec[:, int(np.argmax(np.abs(lam)))])  # the direction, in scaled units
        order = np.argsort(-np.abs(top), kind="stable")[:2]
        names = ", ".join(f"'{table.names[cols[a]]}'" for a in sorted(order.tolist()))
        raise DataError(f"{table.path}: columns {names}: float64 cannot carry their cells at their spread about "
                        f"each other (its rounding of the cells moves a score by about {effect:.2g} nats); "
                        "subtract an offset from them (the same from each) or rescale them")


def same_letters(name: str, names) -> str | None:
    """What a message refusing the unknown ``name`` says when one of ``names`` is ``name``
    written in other Unicode code points (an accented letter as one code point, or as its
    letter and a combining accent: NFC and NFD, which look the same), or None. A name is
    matched as written; the message said 'did you mean' a name that looked like its own."""
    import unicodedata

    key = unicodedata.normalize("NFC", name)
    hits = [x for x in map(str, names) if x != name and unicodedata.normalize("NFC", x) == key]
    if len(hits) != 1:
        return None
    return (f"did you mean {hits[0]!r}? the same letters in other Unicode code points (an accented letter "
            "as one code point, or as a letter and a combining accent): write it as the data's header does")


def no_column(where: str, column: str, names, what: str) -> DataError:
    """The error for a column ``column`` (``what``: its role, e.g. "the intervention
    column") that is not among ``names``: it names the nearest column, or lists them."""
    import difflib

    names = [str(x) for x in names]
    near = difflib.get_close_matches(column, names, n=1)
    hint = same_letters(column, names)
    if hint is None:
        hint = (f"did you mean {near[0]!r}?" if near else
                "the columns are " + ", ".join(names[:10]) + (", ..." if len(names) > 10 else ""))
    return DataError(f"{where}: no column named {column!r} ({what}); {hint}")


def _check_may_be_empty(path: str, names, may_be_empty: str | None) -> None:
    """The column exempt from the complete-data rule must be a column: checked before any
    row, so that an absent one is named instead of another column's empty cells."""
    if may_be_empty is not None and may_be_empty not in names:
        raise no_column(path, may_be_empty, names, "the intervention column")


def _natural_order(values: np.ndarray) -> np.ndarray:
    """Permutation sorting distinct strings: numerically if all are integers (then all
    decimal numbers), otherwise lexicographically. Returns int64 indices into values."""
    vals = values.tolist()
    if all(INTEGER.fullmatch(v) for v in vals):
        keys = [(int(v), v) for v in vals]
    elif all(DECIMAL.fullmatch(v) for v in vals):
        keys = [(float(v), v) for v in vals]
    else:
        return np.arange(len(vals), dtype=np.int64)  # np.unique already sorted them
    return np.array(sorted(range(len(vals)), key=keys.__getitem__), dtype=np.int64)


def discrete_dataset(table: Table, max_nodes: int | None = None) -> Dataset:
    """Code every column of ``table`` as a discrete variable.

    Levels of a column are its distinct values in natural order (numeric if they are all
    integers, or all decimal numbers; lexicographic otherwise); ``data[:, j]`` holds each
    cell's position in ``levels[j]``. A column with one level is kept (arity 1).

    Raises `DataError` if there are more than ``max_nodes`` columns, or if a column has
    more than 2 distinct values and more than m/2 of them (it looks like an identifier or
    a continuous measurement, not a discrete variable).
    """
    m, n = table.m, table.n
    p = table.path
    if max_nodes is not None and n > max_nodes:
        raise DataError(f"{p}: {n} columns, but this engine supports at most {max_nodes} variables")
    data = np.empty((m, n), dtype=np.int32)
    arities = np.empty(n, dtype=np.int64)
    levels = []
    for j in range(n):
        uniq, codes = table.columns[j]
        r = uniq.size
        if r > 2 and r > m / 2:
            raise DataError(
                f"{p}, column '{table.names[j]}': {r} distinct values in {m} rows; this looks like "
                "an identifier or a continuous column, not a discrete variable (drop or discretise "
                "it, or use --score bge for continuous data)"
            )
        order = _natural_order(uniq)
        recode = np.empty(r, dtype=np.int32)
        recode[order] = np.arange(r, dtype=np.int32)
        data[:, j] = recode[codes]
        arities[j] = r
        levels.append(tuple(uniq[order].tolist()))
    return Dataset(names=table.names, data=data, arities=arities, levels=tuple(levels), path=p)


def load_discrete(path, max_nodes: int | None = None) -> Dataset:
    """`read_table` then `discrete_dataset`: the usual way to load a discrete CSV file."""
    return discrete_dataset(read_table(path), max_nodes=max_nodes)


def csv_records(path, header: tuple[str, ...], *, extra_columns: bool = False):
    """Yield (line number, stripped cells) of a small CSV file with a fixed header
    (comma, tab or semicolon separated: detected from the header line).

    For the edge, constraint and prior files the CLI reads. The first line must name
    ``header`` (more columns allowed if ``extra_columns``); blank lines are skipped; a row
    with too few (or, unless ``extra_columns``, too many) fields is a DataError naming
    file and line.
    """
    yield from text_records(path, read_text(os.fspath(path)), header, extra_columns=extra_columns)


def text_records(path, text: str, header: tuple[str, ...], *, extra_columns: bool = False,
                 headed: bool = True):
    """`csv_records` of ``text``, the text of the file ``path`` (already read: a pipe can
    be read only once). headed=False: the file has no header line, its first line is a
    row (line numbers are the file's own either way). Cells are `stripped_records`'s: a
    quoted cell keeps its spaces (" A" is the name " A", as `csv_field` writes it)."""
    head = io.StringIO(text, newline="").readline()
    records = stripped_records(text, sniff_separator(head))
    if headed:
        first = next(records, (1, []))[1]
        got = tuple(first)
        if (got[:len(header)] if extra_columns else got) != header:
            raise DataError(f"{path}, line 1: expected header {','.join(header)}")
    for line, row in records:
        if not row or all(not c for c in row):
            continue
        if len(row) < len(header) or (len(row) > len(header) and not extra_columns):
            raise DataError(f"{path}, line {line}: expected {len(header)} fields, found {len(row)}")
        yield line, row


def stripped_records(text: str, sep: str):
    """Yield (line number, cells) of the CSV ``text`` as csv.reader (default dialect,
    delimiter ``sep``) splits it, each cell stripped of surrounding whitespace except the
    part between quotes: '  a ' is 'a', '" a"' is ' a', '"a" ' is 'a' (csv.reader cannot
    tell a quoted cell from an unquoted one, so a reader that strips its cells read the
    name " A" that `csv_field` quotes as "A"). A cell is quoted when its first character is
    a quote (' "a"' is the text '"a"', as csv.reader has it). The line number is that of
    the record's last line, as csv.reader's line_num."""
    cells: list[str] = []
    field: list[str] = []
    kept = -1  # quoted: the field's length at its closing quote (its kept part); -1: unquoted
    state = "record"  # record, field, unquoted, quoted, quote (a quote in a quoted field), eol

    def save():
        nonlocal kept
        t = "".join(field)
        cells.append(t.strip() if kept < 0 else t[:kept] + t[kept:].rstrip())
        field.clear()
        kept = -1

    line_num = 0
    for line in io.StringIO(text, newline=""):
        line_num += 1
        if state == "record" and '"' not in line:  # nearly always: a line of unquoted cells
            content = line.rstrip("\r\n")  # its line break (StringIO's line ends after it)
            yield line_num, [c.strip() for c in content.split(sep)] if content else []
            continue
        for c in line:
            if state == "eol":  # the rest of a line break (StringIO's line ends after it)
                continue
            if state == "record":
                if c in "\r\n":
                    state = "eol"
                    continue
                state = "field"
            if state == "quote":  # the quote closed the field, or is the first of a doubled quote
                if c == '"':
                    field.append(c)
                    state = "quoted"
                    continue
                kept = len(field)  # closed; csv.reader keeps text after it: '"a"b' is ab
                state = "unquoted"
            if state == "field":
                if c in "\r\n":
                    save()
                    state = "eol"
                elif c == '"':
                    kept, state = 0, "quoted"
                elif c == sep:
                    save()
                else:
                    field.append(c)
                    state = "unquoted"
            elif state == "unquoted":
                if c in "\r\n":
                    save()
                    state = "eol"
                elif c == sep:
                    save()
                    state = "field"
                else:
                    field.append(c)
            else:  # "quoted"
                if c == '"':
                    state = "quote"
                else:
                    field.append(c)
        # the line's end (csv.reader's EOL)
        if state in ("record", "eol"):
            pass
        elif state == "field":
            save()
        elif state in ("unquoted", "quote"):
            if state == "quote":
                kept = len(field)
            save()
        else:  # quoted: the cell goes on over the next line
            continue
        yield line_num, cells
        cells = []
        state = "record"
    if state == "quoted":  # the text ended inside a quoted cell: csv.reader keeps it
        kept = len(field)
        save()
        yield line_num, cells


def csv_field(s: str) -> str:
    """A field as csv.writer writes it (QUOTE_MINIMAL, '"' doubled): quoted when it holds a
    comma, a quote or a line break, and, unlike csv.writer with lineterminator "\n", a
    carriage return (which csv.reader would take for the row's end) or when it begins or
    ends with whitespace (which bigbn's readers strip from an unquoted cell: the name " A"
    read back as "A", `stripped_records`)."""
    if "," in s or '"' in s or "\n" in s or "\r" in s or s != s.strip():
        return '"' + s.replace('"', '""') + '"'
    return s


def csv_line(fields) -> str:
    """One row of a results CSV file, each field `csv_field` (str of it), and its "\n": the
    one way bigbn writes CSV rows (csv.writer with lineterminator "\n" left a name's
    carriage return bare in strength.csv, parent_sets.csv and the samples' CSV files,
    which csv.reader ends the row at: `bigbn report` called parent_sets.csv damaged)."""
    fields = [str(f) for f in fields]
    line = ",".join(fields)
    # nearly always: no field to quote (no comma in a field, no quote, and no whitespace:
    # every character str.isspace takes is either " " or not printable, line breaks too)
    if line.count(",") == len(fields) - 1 and '"' not in line and " " not in line and line.isprintable():
        return line + "\n"
    return ",".join(map(csv_field, fields)) + "\n"
