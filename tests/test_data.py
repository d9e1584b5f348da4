"""Reading CSV files (bigbn.io.data): good files code correctly, every bad file is refused
with a one-line DataError naming the file and the row/column."""

from __future__ import annotations

import os

import numpy as np
import pytest

from bigbn.io.data import Dataset, discrete_dataset, load_discrete, read_table
from bigbn.errors import BigBNError, DataError
from pathlib import Path
import bigbn
import helpers as h
import json
import subprocess
import sys
import threading


def write(tmp_path, text, name="data.csv", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def error_of(path, **kw) -> str:
    with pytest.raises(DataError) as info:
        load_discrete(path, **kw)
    msg = str(info.value)
    assert "\n" not in msg
    assert "data.csv" in msg
    return msg


GOOD = """\
smoker, age ,city,level,dose
yes,10,Oslo,2,0.5
no,2,Bergen,10,1.25
yes,-1,Oslo,2,0.5
no,10,"Aal, Norway",-3,10
yes,2,Oslo,10,1.25
no,10,Bergen,2,0.5
yes,2,Oslo,2,10
no,-1,Bergen,-3,0.5
"""


def test_good_file_codes_levels_in_natural_order(tmp_path):
    path = write(tmp_path, GOOD)
    ds = load_discrete(path)
    assert ds.names == ("smoker", "age", "city", "level", "dose")
    assert ds.kind == "discrete" and ds.path == str(path)
    assert (ds.m, ds.n) == (8, 5)
    assert ds.data.dtype == np.int32 and ds.data.flags.c_contiguous
    assert ds.levels[0] == ("no", "yes")  # strings: lexicographic
    assert ds.levels[1] == ("-1", "2", "10")  # integers: numeric
    assert ds.levels[2] == ("Aal, Norway", "Bergen", "Oslo")
    assert ds.levels[3] == ("-3", "2", "10")
    assert ds.levels[4] == ("0.5", "1.25", "10")  # decimal numbers: numeric
    assert ds.arities.tolist() == [2, 3, 3, 3, 3]
    # Every code maps back to the cell it came from (independent re-parse of the text).
    lines = [ln for ln in GOOD.splitlines()[1:]]
    import csv

    rows = [[c.strip() for c in rec] for rec in csv.reader(lines)]
    for r, row in enumerate(rows):
        for j, cell in enumerate(row):
            assert ds.levels[j][ds.data[r, j]] == cell


def test_read_table_strips_and_keeps_strings(tmp_path):
    table = read_table(write(tmp_path, GOOD))
    assert table.names[1] == "age"
    assert table.cells.shape == (8, 5)
    assert table.cells[3, 2] == "Aal, Norway"
    assert table.cells[0, 3] == "2"


def test_blank_lines_bom_crlf_and_single_level_column(tmp_path):
    text = "\ufeffa,b,c\r\n\r\n0,x,k\r\n1,y,k\r\n   \r\n0,y,k\r\n1,x,k\r\n\r\n"
    ds = load_discrete(write(tmp_path, text))
    assert ds.names == ("a", "b", "c")
    assert ds.m == 4
    assert ds.data[:, 0].tolist() == [0, 1, 0, 1]
    assert ds.data[:, 1].tolist() == [0, 1, 1, 0]
    assert ds.arities[2] == 1 and ds.levels[2] == ("k",)
    assert ds.data[:, 2].tolist() == [0, 0, 0, 0]
    table = read_table(tmp_path / "data.csv")
    assert table.lines.tolist() == [3, 4, 6, 7]
    assert [table.line(r) for r in range(4)] == [3, 4, 6, 7]


def test_row_numbers_are_file_lines(tmp_path):
    # Header = line 1; a blank line 3 is skipped but still counted.
    text = "a,b\n0,1\n\n1,0\n0,\n"
    msg = error_of(write(tmp_path, text))
    assert "row 5" in msg and "column 'b'" in msg and "empty cell" in msg


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x,y\n1,2\n3\n", ["row 3", "1 field, expected 2", "ragged"]),
        ("x,y\n1,2\n3,4,5\n", ["row 3", "3 fields, expected 2", "ragged"]),
        ("x,smoker\n1,2\n1,2\n1,2\n1,2\n1,2\n1, \n", ["row 7", "column 'smoker'", "empty cell"]),
        ("x,y\n1,NA\n", ["row 2", "column 'y'", "missing value 'NA'"]),
        ("x,y\n1,2\nnan,2\n", ["row 3", "column 'x'", "missing value 'nan'"]),
        ("x,y\n1,2\n1,NaN\n", ["row 3", "column 'y'", "missing value 'NaN'"]),
        ("x,y\n1,2\n ? ,2\n", ["row 3", "column 'x'", "missing value '?'"]),
        ("x,y,z,x\n1,2,3,4\n", ["duplicate column name 'x'", "columns 1 and 4"]),
        ("a,b, ,d\n1,2,3,4\n", ["column 3", "empty column name"]),
        ("only\n1\n2\n", ["need at least 2 columns, found 1"]),
        ("a|b|c\n1|2|3\n", ["need at least 2 columns, found 1", "commas, tabs or semicolons"]),
        ("a,b\n", ["no data rows"]),
        ("a,b\n\n\n", ["no data rows"]),
        ("", ["empty file"]),
        ("  \n\n", ["empty file"]),
    ],
)
def test_bad_files(tmp_path, text, expected):
    msg = error_of(write(tmp_path, text))
    for part in expected:
        assert part in msg, (part, msg)


def test_not_utf8(tmp_path):
    path = write(tmp_path, b"a,b\n1,2\n\xff\xfe,3\n", mode="wb")
    msg = error_of(path)
    assert "not UTF-8" in msg and "row 3" in msg


def test_missing_file_and_directory(tmp_path):
    msg = error_of(tmp_path / "data.csv")
    assert "file not found" in msg
    (tmp_path / "dir").mkdir()
    with pytest.raises(DataError, match="is a directory"):
        read_table(tmp_path / "dir")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = write(tmp_path, "a,b\n1,2\n")
    path.chmod(0)
    try:
        assert "not readable" in error_of(path)
    finally:
        path.chmod(0o644)


def test_identifier_column_is_refused(tmp_path):
    rows = "".join(f"{i},{i % 2}\n" for i in range(10))
    msg = error_of(write(tmp_path, "id,flag\n" + rows))
    assert "column 'id'" in msg and "10 distinct values in 10 rows" in msg and "--score bge" in msg


def test_continuous_column_is_refused(tmp_path):
    rows = "".join(f"{i % 2},{0.1 * i * i:.3f}\n" for i in range(20))
    msg = error_of(write(tmp_path, "flag,weight\n" + rows))
    assert "column 'weight'" in msg


def test_discrete_limits_are_at_the_boundary(tmp_path):
    # 3 distinct values in 6 rows (= m/2) is still discrete; 4 in 6 is not.
    ok = load_discrete(write(tmp_path, "a,b\n" + "".join(f"{i % 3},{i % 2}\n" for i in range(6))))
    assert ok.arities.tolist() == [3, 2]
    error_of(write(tmp_path, "a,b\n" + "".join(f"{i % 4},{i % 2}\n" for i in range(6))))
    # two levels in two rows: binary, allowed
    assert load_discrete(write(tmp_path, "a,b\n0,1\n1,0\n")).arities.tolist() == [2, 2]


def test_max_nodes(tmp_path):
    header = ",".join(f"v{j}" for j in range(45))
    row = ",".join("0" for _ in range(45))
    msg = error_of(write(tmp_path, f"{header}\n{row}\n{row}\n"), max_nodes=40)
    assert "45 columns, but this engine supports at most 40 variables" in msg
    assert load_discrete(write(tmp_path, f"{header}\n{row}\n"), max_nodes=45).n == 45


def test_load_discrete_is_read_then_code(tmp_path):
    path = write(tmp_path, GOOD)
    a, b = load_discrete(path), discrete_dataset(read_table(path))
    assert a.names == b.names and a.levels == b.levels
    np.testing.assert_array_equal(a.data, b.data)


def test_dataset_checks_its_arrays():
    ds = Dataset(("a", "b"), np.array([[0, 1], [1, 0]], dtype=np.int64), [2, 2], (("0", "1"), ("x", "y")))
    assert ds.data.dtype == np.int32 and ds.arities.dtype == np.int64
    with pytest.raises(DataError, match="codes must lie in 0..1"):
        Dataset(("a", "b"), np.array([[0, 2], [1, 0]]), [2, 2], (("0", "1"), ("x", "y")))
    with pytest.raises(DataError, match="arity 3 but 2 levels"):
        Dataset(("a", "b"), np.array([[0, 1], [1, 0]]), [3, 2], (("0", "1"), ("x", "y")))
    with pytest.raises(DataError):
        Dataset(("a",), np.array([[0, 1], [1, 0]]), [2, 2], (("0", "1"), ("x", "y")))
    with pytest.raises(DataError, match="integer codes"):
        Dataset(("a", "b"), np.array([[0.0, 1.0], [1.0, 0.5]]), [2, 2], (("0", "1"), ("x", "y")))
    with pytest.raises(DataError, match="codes must lie"):  # no silent int32 wrap-around
        Dataset(("a", "b"), np.array([[0, 2**32], [1, 0]]), [2, 2], (("0", "1"), ("x", "y")))
    assert issubclass(DataError, BigBNError) and issubclass(DataError, ValueError)


def test_continuous_dataset_kind():
    ds = Dataset(("a", "b"), [[1.5, 2], [0, -3]], [0, 0], ((), ()), kind="continuous", path="x.csv")
    assert ds.data.dtype == np.float64 and ds.data.flags.c_contiguous and (ds.m, ds.n) == (2, 2)
    with pytest.raises(DataError, match="column 'b': values must be finite"):
        Dataset(("a", "b"), [[1.5, np.inf], [0, -3]], [0, 0], ((), ()), kind="continuous")
    with pytest.raises(DataError, match="arities 0"):
        Dataset(("a", "b"), [[1.5, 2], [0, -3]], [2, 0], ((), ()), kind="continuous")
    with pytest.raises(DataError, match="unknown data kind"):
        Dataset(("a", "b"), [[1, 2], [0, 3]], [2, 4], (("0", "1"), tuple("0123")), kind="ordinal")


# ------------------------------------------------------------------ inputs that never end

ASIA = os.path.join(os.path.dirname(__file__), "..", "examples", "asia.csv")
ENV = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bigbn(args, cwd, stdin=None, timeout=120):
    """`bigbn ARGS` in a process; the harness's timeout turns a hang into a failure."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "bigbn.cli", *map(str, args)], cwd=cwd, stdin=stdin,
                          capture_output=True, text=True, timeout=timeout, env=ENV)


def _one_line_error(r, *needles):
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("[bigbn] ")]
    assert len(lines) == 1 and lines[0].startswith("Error:") and "Traceback" not in r.stderr, r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_data_is_refused_at_once(tmp_path, device):
    _one_line_error(_bigbn(["run", device, "-w", tmp_path / "w"], tmp_path),
                    device, "not a regular file or a pipe")
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
@pytest.mark.parametrize("as_what", ["data", "forbid", "pairs"])
def test_a_named_pipe_without_writer_is_refused_not_waited_for(tmp_path, as_what):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    if as_what == "data":
        args = ["run", fifo, "-w", tmp_path / "w"]
    elif as_what == "forbid":
        args = ["run", ASIA, "-k", "1", "-w", tmp_path / "w", "--forbid", fifo]
    else:
        assert _bigbn(["run", ASIA, "-k", "1", "-w", tmp_path / "w", "-q"], tmp_path).returncode == 0
        args = ["effects", "-w", tmp_path / "w", "--pairs", fifo]
    _one_line_error(_bigbn(args, tmp_path), str(fifo), "nothing writes to")


@pytest.mark.slow
def test_a_pipe_with_a_writer_is_read(tmp_path):
    """A named pipe whose writer is already waiting, and a pipe on stdin that starts late."""
    import subprocess
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = open(ASIA).read()
    writer = threading.Thread(target=lambda: open(fifo, "w").write(text))
    writer.start()
    r = _bigbn(["run", fifo, "-k", "1", "-w", tmp_path / "w", "-q"], tmp_path)
    writer.join(timeout=60)
    assert r.returncode == 0, r.stderr
    late = subprocess.Popen(["sh", "-c", f"sleep 1; cat '{ASIA}'"], stdout=subprocess.PIPE)
    r2 = _bigbn(["run", "/dev/stdin", "-k", "1", "-w", tmp_path / "v", "-q"], tmp_path, stdin=late.stdout)
    late.wait(timeout=60)
    assert r2.returncode == 0, r2.stderr
    assert r.stdout.splitlines()[1] == r2.stdout.splitlines()[1]  # the same log p(data)


@pytest.mark.parametrize("source", ["zero", "urandom"])
def test_endless_input_on_a_pipe_ends_promptly(tmp_path, source):
    """`cat /dev/zero | bigbn run /dev/stdin`: no end of line (zeros) or no UTF-8 (random
    bytes) within the first megabyte; refused without reading to the end."""
    import subprocess

    feed = subprocess.Popen(["cat", f"/dev/{source}"], stdout=subprocess.PIPE)
    try:
        r = _bigbn(["run", "/dev/stdin", "-w", tmp_path / "w"], tmp_path, stdin=feed.stdout)
    finally:
        feed.kill()
        feed.wait()
    _one_line_error(r, "/dev/stdin", "row 1" if source == "zero" else "UTF-8")


def test_header_line_bound(tmp_path):
    from bigbn.io.data import MAX_HEADER_BYTES

    p = tmp_path / "long.csv"
    p.write_text("a," * (MAX_HEADER_BYTES // 2 + 100))  # a header that never ends
    with pytest.raises(DataError, match="row 1: no end of line in the first 1 MiB"):
        read_table(p)
    p.write_text("a" * 1000 + ",b\n1,2\n2,1\n")
    assert read_table(p).n == 2


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

# 3. a named pipe as input is read once, and hashed as read
def test_named_pipe_input(tmp_path):
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    text = h.ASIA.read_bytes()

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    p = subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(fifo), "-w", str(tmp_path / "p"),
                        "-k", "1", "-q"], env=h.env(), capture_output=True, text=True, timeout=300)
    writer.join(timeout=5)
    assert p.returncode == 0, p.stderr
    ref = bigbn.learn(h.ASIA, max_parents=1, workdir=tmp_path / "f")
    pipe_run = json.loads((tmp_path / "p" / "run.json").read_text())
    file_run = json.loads((tmp_path / "f" / "run.json").read_text())
    assert pipe_run["fingerprint"]["data_sha256"] == file_run["fingerprint"]["data_sha256"]
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["log_marginal_likelihood"] \
        == ref.log_marginal


def test_named_pipe_with_constraint_files(tmp_path):
    """With --forbid the names are needed before the run: still one read of the pipe."""
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    forbid = tmp_path / "forbid.csv"
    forbid.write_text("parent,child\nasia,tub\n")
    writer = threading.Thread(target=lambda: open(fifo, "wb").write(h.ASIA.read_bytes()), daemon=True)
    writer.start()
    p = subprocess.run([sys.executable, "-m", "bigbn.cli", "run", str(fifo), "-w", str(tmp_path / "p"),
                        "-k", "1", "-q", "--forbid", str(forbid)],
                       env=h.env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    edges = (tmp_path / "p" / "edges.csv").read_text().splitlines()
    assert "asia,tub,0" in edges


# 6. messages that say what is wrong, where
def test_unterminated_quote_is_reported_where_it_opens(tmp_path):
    f = tmp_path / "q.csv"
    f.write_text('a,b\n1,2\n"1,2\n3,4\n5,6\n')
    r = h.cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 1 and "row 3: a quote opened on this line is not closed" in r.output


def test_nul_byte_is_refused(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(b"a,b\n1,2\n1\x00,2\n2,1\n")
    r = h.cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 1 and "row 3, column 1: a NUL byte" in r.output


def test_tab_and_semicolon_files_are_detected_and_sep_overrides(tmp_path):
    import csv as _csv

    rows = list(_csv.reader(open(Path(__file__).resolve().parent.parent / "examples" / "asia.csv")))
    ref = h.cli("run", Path(__file__).resolve().parent.parent / "examples" / "asia.csv",
                 "-w", tmp_path / "ref", "-q", "-k", 1)
    assert ref.exit_code == 0
    for name, sep in (("a.tsv", "\t"), ("a.ssv", ";")):
        f = tmp_path / name
        f.write_text("\n".join(sep.join(r) for r in rows) + "\n")
        forbid = tmp_path / f"forbid-{name}.csv"
        forbid.write_text(f"parent{sep}child\nasia{sep}tub\n")
        r = h.cli("run", f, "-w", tmp_path / f"{name}-w", "-q", "-k", 1)
        assert r.exit_code == 0, r.output
        assert (tmp_path / f"{name}-w" / "edges.csv").read_text() == (tmp_path / "ref" / "edges.csv").read_text()
        r = h.cli("run", f, "-w", tmp_path / f"{name}-f", "-q", "-k", 1, "--forbid", forbid)
        assert r.exit_code == 0 and "asia,tub,0\n" in (tmp_path / f"{name}-f" / "edges.csv").read_text()
    r = h.cli("run", tmp_path / "a.ssv", "-w", tmp_path / "x", "-q", "--sep", ",")
    assert r.exit_code == 1 and "need at least 2 columns" in r.output


# -- the plain-file reader (data._plain_table) against the CSV reader -------------------

def _plain_rows(rng, m):
    """Columns that exercise the plain reader's coding: binary, numeric levels whose text
    order is not their number order, multi-byte UTF-8, cells of exactly 8 and of more
    than 8 bytes, a column of > 64 distinct short cells and one of > 64 distinct long
    ones (the np.unique paths), and an intervention-like column with empty cells."""
    cols = {
        "bin": rng.choice(["0", "1"], m),
        "num": rng.choice(["10", "9", "-1", "100"], m),
        "utf": rng.choice(["ä", "z", "日本", "a"], m),
        "eight": rng.choice(["abcdefgh", "abcdefg", "abcdefgi"], m),
        "long": rng.choice(["moderately_high", "moderately_hi", "low"], m),
        "many": np.array([str(v) for v in rng.integers(0, 90, m)]),
        "manylong": np.array([f"level_number_{v}" for v in rng.integers(0, 90, m)]),
        "targets": rng.choice(["", "bin", "num|utf"], m),
    }
    names = list(cols)
    return names, [[cols[c][r] for c in names] for r in range(m)]


@pytest.mark.parametrize("sep", [",", "\t", ";"])
@pytest.mark.parametrize("crlf", [False, True])
def test_plain_reader_matches_csv_reader(tmp_path, sep, crlf):
    """A plain file is read by data._plain_table (checked: it returns a table), and the
    same cells written so that only the CSV reader can take them (a quoted header, a blank
    line, a cell with space around it) give the same names, distinct cells, codes and
    cells; `discrete_dataset` of both is the same."""
    from bigbn.io import data as d

    rng = np.random.default_rng(7)
    names, rows = _plain_rows(rng, 400)
    end = "\r\n" if crlf else "\n"
    plain = sep.join(names) + end + end.join(sep.join(r) for r in rows) + end
    quoted = sep.join(f'"{c}"' for c in names) + end + end.join(sep.join(r) for r in rows) + end
    blank = plain + end
    spaced = plain.replace(end + "0" + sep, end + " 0 " + sep, 3)
    path = write(tmp_path, plain, "data.csv")
    text = d.read_text(str(path))
    assert d._plain_table(str(path), text, sep, "targets") is not None
    fast = read_table(path, may_be_empty="targets")
    assert fast.lines is None
    for name, variant in (("quoted", quoted), ("blank", blank), ("spaced", spaced)):
        other = write(tmp_path, variant, f"{name}.csv")
        assert d._plain_table(str(other), d.read_text(str(other)), sep, "targets") is None
        slow = read_table(other, may_be_empty="targets")
        assert slow.names == fast.names == tuple(names)
        for (fv, fc), (sv, sc) in zip(fast.columns, slow.columns):
            assert fv.tolist() == sv.tolist()
            assert fc.dtype == sc.dtype == np.int32
            assert np.array_equal(fc, sc)
        assert np.array_equal(slow.cells, fast.cells)
        assert np.array_equal(slow.cells, np.array(rows, dtype=str))
        keep = [j for j, c in enumerate(names) if c != "targets"]
        a, b = discrete_dataset(fast.select(keep)), discrete_dataset(slow.select(keep))
        assert np.array_equal(a.data, b.data) and a.levels == b.levels
    assert discrete_dataset(fast.select([1])).levels == (("-1", "9", "10", "100"),)


@pytest.mark.parametrize("text, message", [
    ("a,b\n1,2\n3\n", "row 3: 1 field, expected 2"),
    ("a,b\n1,2\n3,4,5\n", "row 3: 3 fields, expected 2"),
    ("a,b\n1,2\n3,NA\n", "row 3, column 'b': missing value 'NA'"),
    ("a,b\n1,\n3,4\n", "row 2, column 'b': empty cell"),
    ("a,b\n1,2\n3, 4\n", None),
    ("a,b\n1,2\r3,4\n", None),
])
def test_plain_reader_leaves_every_other_file_to_the_csv_reader(tmp_path, text, message):
    """What the plain reader does not take, the CSV reader reads or refuses with its
    message naming the line (it is never refused or misread by the plain one)."""
    from bigbn.io import data as d

    path = write(tmp_path, text)
    assert d._plain_table(str(path), d.read_text(str(path)), ",", None) is None
    if message is None:
        assert read_table(path).cells.tolist() == [["1", "2"], ["3", "4"]]
    else:
        assert message in error_of(path)


def test_cell_kernels_against_python_split():
    """_cell_words, _cell_bytes and _few_codes against str.split and np.unique."""
    from bigbn.io import data as d

    rng = np.random.default_rng(3)
    alphabet = ["x", "yy", "abcdefgh", "abcdefghi", "é", "0123456789abcdef", "1"]
    rows = [[alphabet[i] for i in rng.integers(0, len(alphabet), 5)] for _ in range(300)]
    raw = np.frombuffer(("\n".join(";".join(r) for r in rows) + "\n").encode(), dtype=np.uint8)
    words, width, plain = d._cell_words(raw, ord(";"), 5, len(rows))
    assert plain
    for j in range(5):
        cells = [r[j].encode() for r in rows]
        assert width[j] == max(len(c) for c in cells)
        want = [int.from_bytes(c[:8].ljust(8, b"\0"), "big") for c in cells]
        assert words[j].tolist() == want
        got = d._cell_bytes(raw, ord(";"), 5, j, len(rows), int(width[j]))
        assert [bytes(g).rstrip(b"\0") for g in got] == cells
    assert not d._cell_words(raw, ord(";"), 4, len(rows))[2]
    assert not d._cell_words(raw, ord(";"), 5, len(rows) - 1)[2]
    keys = rng.integers(0, 2**63, 50, dtype=np.uint64)[rng.integers(0, 50, 2000)]
    few, codes, ok = d._few_codes(keys, 64)
    want, inverse = np.unique(keys, return_inverse=True)
    assert ok and few.tolist() == want.tolist() and codes.tolist() == inverse.tolist()
    assert not d._few_codes(keys, want.size - 1)[2]


# -- levels holding a control character (loose54) --------------------------------------

_CONTROL_POOL = ["a", "é", "日", "😀", " ", "~", "\x00", "\x01", "\x09", "\x1f", "\x7f", "\x80", "\x85", "\x9f",
                 "\xa0", "\u2027", "\u2028", "\u2029", "\u202a", "°", "–"]


def test_control_character_tests_against_naive(tmp_path):
    """_holds_control (numpy over UTF-32 code points) against naive.holds_level_control, and
    _may_hold_control (bytes.translate over a column's UTF-8, zero-padded) never False
    where a string holds one, on random strings of the characters at the ranges' edges."""
    import naive
    from bigbn.io import data as d

    rng = np.random.default_rng(54)
    for _ in range(300):
        k = int(rng.integers(1, 6))
        values = ["".join(rng.choice(_CONTROL_POOL, int(rng.integers(0, 5)))).rstrip("\x00") for _ in range(k)]
        arr = np.array(values, dtype=str)
        want = naive.holds_level_control(arr.tolist())
        assert d._holds_control(arr).tolist() == want, values
        padded = np.array([v.encode() for v in arr.tolist()], dtype="S")
        if any(naive.holds_level_control([v.replace("\x00", "") for v in arr.tolist()])):
            assert d._may_hold_control(padded.tobytes()), values
    assert not d._may_hold_control("a°é–\u2027日😀 ~".encode())
    # a NUL inside a cell is the padding to it (the random strings above never held one
    # alone, so the check said nothing of it): read_text refuses it before, on both readers
    assert not d._may_hold_control(b"a\x00b")
    for text in (b"a,b\n0,x\x00y\n1,y\n", b'a,b\n0,"x\x00y"\n1,y\n'):
        with pytest.raises(DataError, match=r"row 2, column 2: a NUL byte"):
            read_table(write(tmp_path, text, mode="wb"))
    assert d._holds_control(np.array([], dtype=str)).tolist() == []


@pytest.mark.parametrize("text, where, level, char", [
    ("a,b\n0,x\x1b[2J\n1,y\n", "row 2, column 'b'", "x\\x1b[2J", "\\x1b"),      # the plain reader
    ('a,b\n0,"x\x07y"\n1,y\n', "row 2, column 'b'", "x\\x07y", "\\x07"),        # the CSV reader (quotes)
    ("a;b\n0;y\n1;x\x85y\n", "row 3, column 'b'", "x\\x85y", "\\x85"),  # (at a cell's end NEL is space)
    ("a,b\n0,y\n\n1,x\u2028y\n", "row 4, column 'b'", "x\\u2028y", "\\u2028"),  # a blank line: the CSV reader
    ("a,b\n0,y\n1,y\n2,x\x7f\n", "row 4, column 'b'", "x\\x7f", "\\x7f"),
])
def test_a_level_holding_a_control_character_is_refused(tmp_path, text, where, level, char):
    """A level "a\\nb" or "a\\x1b[2J" went into the BIF and XMLBIF exports, the CSV
    outputs, the report and the terminal's lines: a cell holding a control character is
    refused in one line, as a column name holding one is, naming the file, row and column
    and showing the cell escaped."""
    from bigbn.io import data as d

    path = write(tmp_path, text)
    if "\x1b" in text:  # the plain reader refuses it itself (not by leaving it to the CSV reader)
        with pytest.raises(DataError, match=r"the level 'x\\x1b\[2J'"):
            d._plain_table(str(path), d.read_text(str(path)), ",", None)
    with pytest.raises(DataError) as e:
        read_table(path)
    assert str(e.value) == (f"{path}, {where}: the level '{level}' holds the control character '{char}'; "
                            "a level is one line of printable text (recode it)")
    r = h.cli("run", path, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 1 and "Traceback" not in r.output
    err = [ln for ln in r.stderr.splitlines() if not ln.startswith("[bigbn] ")]
    assert err == [f"Error: {e.value}"], r.stderr
    assert not (tmp_path / "w" / "edges.csv").exists()


@pytest.mark.parametrize("text", ['a,b\n0,"x\ty"\n1,y\n',   # a quoted CSV cell: the CSV reader
                                  "a,b\n0,x\ty\n1,y\n",     # unquoted in a comma file: the plain reader
                                  "a;b\n0;y\n\n1;x\ty\n"])  # a blank line: the CSV reader
def test_a_tab_inside_a_level_is_read_as_before(tmp_path, text):
    """A tab inside a cell of a comma (or semicolon) file is text, as bigbn read it before
    loose54 refused it as a control character: nothing it reaches breaks on it (the BIF
    export refuses whitespace in a state; XMLBIF, the CSV outputs and a terminal's lines
    hold it; the report shows it escaped). The API, the CLI, a DataFrame and an array
    read it."""
    import pandas as pd
    from bigbn.inputs import load_dataset

    path = write(tmp_path, text)
    table = read_table(path)
    assert "x\ty" in table.columns[1][0].tolist()
    r = h.cli("run", path, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 0 and (tmp_path / "w" / "edges.csv").exists(), r.output
    frame = pd.DataFrame({"a": ["0", "1"], "b": ["x\ty", "y"]})
    assert load_dataset(frame, score="bdeu")[0].levels[1] == ("x\ty", "y")
    assert load_dataset(np.array([["0", "x\ty"], ["1", "y"]]), names=["a", "b"],
                        score="bdeu")[0].levels[1] == ("x\ty", "y")
    with pytest.raises(DataError, match=r"the level 'x\\x0by' holds the control character '\\x0b'"):
        read_table(write(tmp_path, text.replace("\t", "\x0b")))  # the next control is refused


def test_levels_without_control_characters_read_as_before(tmp_path):
    """Letters, a degree sign, a dash, U+2027, a no-break space inside a cell, a tab file's
    tabs: no control character in a level (the plain reader's quick test may look closer)."""
    text = "a\tb\n0\t°C\n1\tx\xa0y\n0\t–\n1\t\u2027\n0\tz\n"
    from bigbn.io import data as d

    path = write(tmp_path, text)
    assert d._plain_table(str(path), d.read_text(str(path)), "\t", None) is not None
    table = read_table(path)
    assert table.columns[1][0].tolist() == sorted(["°C", "x\xa0y", "–", "\u2027", "z"])


def test_stripped_records_split_as_csv_reader_and_keep_quoted_spaces():
    """stripped_records (the knowledge files' reader) against csv.reader, the reference: the
    same records on the same line numbers, each cell csv.reader's stripped unless it began
    with a quote; and csv_line's rows read back as the fields written, spaces included."""
    import csv
    import io
    from bigbn.io.data import csv_field, csv_line, stripped_records

    rng = np.random.default_rng(55)
    alphabet = list('ab ,;"\n\r\t\xa0\u3000')
    for _ in range(3000):
        text = "".join(rng.choice(alphabet, size=rng.integers(0, 14)))
        for sep in ",;":
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
            ref = [(reader.line_num, row) for row in reader]
            got = list(stripped_records(text, sep))
            assert [line for line, _ in got] == [line for line, _ in ref], repr(text)
            for (_, cells), (_, row) in zip(got, ref):
                assert [c.strip() for c in cells] == [c.strip() for c in row], repr(text)
                # a cell is csv.reader's stripped, or (quoted) its quoted part kept
                assert all(c == r.strip() or r.startswith(c) and not r[len(c):].strip()
                           for c, r in zip(cells, row)), repr(text)
        fields = ["".join(rng.choice(alphabet, size=rng.integers(1, 6))) for _ in range(3)]
        assert csv_line(fields) == ",".join(map(csv_field, fields)) + "\n"  # the fast path's reference
        back = list(stripped_records(csv_line(fields), ","))
        assert back == [(back[0][0], fields)], repr(fields)
    assert list(stripped_records(' a ," b" ,"c " d, "e"\n', ",")) == [(1, ["a", " b", "c  d", '"e"'])]


@pytest.mark.parametrize("names, levels, message", [
    (("a", "b\nc"), (("0", "1"),) * 2,
     r"^dataset, column 2: the column name 'b\\nc' holds the control character '\\n'"),
    (("a", ""), (("0", "1"),) * 2, r"^dataset, column 2: empty column name"),
    (("a", "a"), (("0", "1"),) * 2, r"^dataset: duplicate column name 'a' \(columns 1 and 2\)$"),
    (("a", 2), (("0", "1"),) * 2, r"^dataset, column 2: the name 2 \(int\) is not text$"),
    (("a", "b"), (("0", "1"), ("x", "x\x1b[2J")),
     r"^dataset, column 'b', level 2: the level 'x\\x1b\[2J' holds the control character '\\x1b'"),
    (("a", "b"), (("0", "1"), ("x", "x")),
     r"^dataset, column 'b': level 'x' given twice \(levels 1 and 2\); each level is one code$"),
    (("a", "b"), (("0", "1"), ("x", "")), r"^dataset, column 'b', level 2: empty level"),
    (("a", "b"), (("0", "1"), ("x", 1)), r"^dataset, column 'b', level 2: 1 \(int\) is not text$"),
])
def test_a_dataset_built_in_python_checks_its_names_and_levels_as_a_file_is(names, levels, message):
    """A Dataset built in Python took any name and level: "b\\nc" or an ESC went into every
    output and printed line, a level given twice printed two codes as one. They are checked
    as a CSV file's header and cells are, in one line naming the column and level."""
    with pytest.raises(DataError, match=message):
        Dataset(names, np.zeros((3, 2), dtype=np.int32), np.array([2, 2]), levels)
