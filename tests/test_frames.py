"""pandas in, pandas and networkx out: a DataFrame gives the numbers its CSV file gives;
results convert to DataFrames and DiGraphs that hold exactly the result's numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import bigbn
from bigbn.api import load_dataset
from bigbn.errors import DataError, OptionError

pd = pytest.importorskip("pandas")
nx = pytest.importorskip("networkx")

ROOT = Path(__file__).resolve().parent.parent
ASIA = ROOT / "examples" / "asia.csv"


@pytest.fixture(scope="module")
def asia_pair(tmp_path_factory):
    df = pd.read_csv(ASIA, dtype=str)
    return bigbn.learn(df, max_parents=2), bigbn.learn(ASIA, max_parents=2)


def test_frame_of_strings_equals_its_csv_file(asia_pair):
    from_frame, from_file = asia_pair
    np.testing.assert_array_equal(from_frame.posterior, from_file.posterior)
    assert from_frame.log_marginal == from_file.log_marginal
    assert from_frame.names == from_file.names


def test_frame_column_kinds_and_the_csv_rule(tmp_path):
    rng = np.random.default_rng(0)
    m = 300
    a = rng.integers(0, 3, m)
    df = pd.DataFrame({"i": a, "b": rng.random(m) < np.where(a == 1, 0.9, 0.2),
                       "s": np.where(a == 2, "hi", "lo"), "c": pd.Categorical(rng.choice(["z", "y"], m),
                                                                              categories=["z", "y", "w"])})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    ds, score, _ = load_dataset(df)
    assert ds.kind == "discrete" and score.name == "bdeu"
    assert ds.levels[3] == ("z", "y"), "declared category order, observed levels only"
    assert ds.levels[1] == ("False", "True")
    ref = bigbn.learn(path, max_parents=2)
    got = bigbn.learn(df, max_parents=2)
    np.testing.assert_allclose(got.posterior, ref.posterior, atol=1e-12)
    assert got.log_marginal == pytest.approx(ref.log_marginal, rel=1e-13)
    # continuous floats: BGe, exactly as the CSV file
    X = rng.normal(size=(200, 3))
    X[:, 1] += 2 * X[:, 0]
    cont = pd.DataFrame(X, columns=["x", "y", "z"])
    cont.to_csv(tmp_path / "c.csv", index=False)
    a_, b_ = bigbn.learn(cont, max_parents=2), bigbn.learn(tmp_path / "c.csv", max_parents=2)
    assert a_.summary["options"]["score"] == "bge"
    np.testing.assert_array_equal(a_.posterior, b_.posterior)


def test_bad_frames_give_one_line_errors():
    with pytest.raises(DataError, match=r"row 2, column 'a': missing value"):
        load_dataset(pd.DataFrame({"a": [1.5, 2.5, None], "b": ["x", "y", "z"]}))
    mixed = pd.DataFrame({"a": np.linspace(0, 1, 40) ** 2, "b": ["x", "y"] * 20})
    with pytest.raises(DataError, match="not a finite number"):
        load_dataset(mixed, score="bge")
    with pytest.raises(DataError, match="duplicate column name"):
        load_dataset(pd.DataFrame([[1, 2], [2, 1]], columns=["a", "a"]))
    with pytest.raises(DataError, match="need at least 2 columns"):
        load_dataset(pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(DataError, match="at least one row"):
        load_dataset(pd.DataFrame({"a": [], "b": []}))


@pytest.mark.parametrize("column", [[1 + 1j, 2, 3, 1], np.array([1 + 1j, 2, 3, 1], dtype=object),
                                    ["x", 2j, "y", "x"]])
def test_a_complex_valued_column_is_named_as_such(column):
    """Issue #37: a complex column was refused as one that "looks like an identifier"; as for
    an array, it is complex numbers bigbn cannot score."""
    df = pd.DataFrame({"a": [0, 1, 0, 1], "z": column})
    with pytest.raises(DataError, match=r"^DataFrame, column 'z': complex numbers are not data bigbn can score$"):
        load_dataset(df)


@pytest.mark.parametrize("cell, shown", [([1, 2], "[1, 2]"), ({"k": 1}, "{'k': 1}"), ({3}, "{3}"),
                                         ((1, 2), "(1, 2)"), (np.eye(2), "array([[1., 0.], [0., 1.]])"),
                                         (frozenset([1]), "frozenset({1})"), (object(), "<object object at ")])
def test_a_cell_holding_no_one_value_is_refused(cell, shown):
    """A list, dict, set, tuple, array or other object in a cell was read as a level
    through its str() (an object's changing from run to run), silently. (Bytes are text:
    test_bytes_cells_are_utf8_text.)"""
    df = pd.DataFrame({"a": [0, 1, 0, 1], "z": ["x", "y", "x", "y"]}, index=[10, 11, 12, 13])
    df["z"] = df["z"].astype(object)
    df.at[12, "z"] = cell
    with pytest.raises(DataError, match=r"^DataFrame, row 12, column 'z': the cell holds ") as got:
        load_dataset(df)
    assert shown in str(got.value) and "\n" not in str(got.value)
    with pytest.raises(DataError, match=r"row 12, column 'z'"):
        bigbn.learn(df)


@pytest.mark.parametrize("cell", [{"k": 1}, (1, 2), {3}, object()])
def test_an_object_array_cell_holding_no_one_value_is_refused(cell):
    """As for a DataFrame: an object array's dict, tuple, set or object cell was read
    as a level through its str() (only a list, which numpy cannot cast, was refused)."""
    a = np.empty((4, 2), dtype=object)
    a[:] = [[0, "x"], [1, "y"], [0, "x"], [1, "y"]]
    a[2, 1] = cell
    with pytest.raises(DataError, match=r"^data array, row index 2, column 'X2': the cell holds .* not one value"):
        load_dataset(a)


def test_cells_of_one_value_of_any_kind_are_read():
    import datetime
    import decimal

    values = [np.int64(1), decimal.Decimal("2.5"), True, datetime.date(2020, 1, 2)]
    df = pd.DataFrame({"a": [0, 1] * 4, "z": values * 2})
    assert set(load_dataset(df)[0].levels[1]) == {"1", "2.5", "True", "2020-01-02"}
    # pd.cut's levels are intervals: a discretised column is data
    cut = pd.DataFrame({"a": [0, 1] * 4, "z": pd.cut(np.arange(8.0), [-1, 3, 8])})
    assert load_dataset(cut)[0].levels[1] == ("(-1, 3]", "(3, 8]")
    tuples = np.empty(4, dtype=object)
    tuples[:] = [(1, 2), (3, 4), (3, 4), (1, 2)]
    cat = pd.DataFrame({"a": [0, 1, 0, 1]})
    cat["z"] = pd.Categorical(tuples)
    with pytest.raises(DataError, match=r"row 0, column 'z': the cell holds \(1, 2\)"):
        load_dataset(cat)


def test_a_category_no_cell_holds_is_no_cell():
    """Only the categories of some cell are checked: an unused category of a tuple was an
    IndexError traceback (the row of a cell holding it), and is no level of the data."""
    cat = pd.DataFrame({"a": [0, 1, 0, 1]})
    cat["z"] = pd.Categorical(["x", "y", "y", "x"], categories=["x", "y", ("w", 1)])
    assert load_dataset(cat)[0].levels[1] == ("x", "y")
    tuples = np.empty(2, dtype=object)
    tuples[:] = [(1, 2), (3, 4)]
    cat["z"] = pd.Categorical.from_codes([1, 0, 1, 1], categories=pd.Index(tuples))
    with pytest.raises(DataError, match=r"row 1, column 'z': the cell holds \(1, 2\)"):
        load_dataset(cat)


def test_bool_and_integer_valued_arrays_are_discrete():
    rng = np.random.default_rng(1)
    B = rng.random((100, 3)) < 0.5
    ds, score, _ = load_dataset(B)
    assert ds.kind == "discrete" and score.name == "bdeu" and list(ds.arities) == [2, 2, 2]
    ds, score, _ = load_dataset(B.astype(float))
    assert ds.kind == "discrete" and score.name == "bdeu"
    ds, score, _ = load_dataset(rng.normal(size=(100, 3)))
    assert ds.kind == "continuous" and score.name == "bge"


def test_integer_arrays_follow_the_csv_rule(tmp_path):
    """Levels are the observed values, as in a CSV file or a DataFrame (codes {0, 2} are
    two levels, not three)."""
    rng = np.random.default_rng(4)
    X = rng.integers(0, 2, size=(60, 3)) * 2
    X[:, 1] = np.where(rng.random(60) < 0.8, X[:, 0], X[:, 1])
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df.to_csv(tmp_path / "x.csv", index=False)
    ds, _, _ = load_dataset(X, names=["a", "b", "c"])
    assert list(ds.arities) == [2, 2, 2] and ds.levels[0] == ("0", "2")
    a = bigbn.learn(X, names=["a", "b", "c"], max_parents=2)
    b = bigbn.learn(df, max_parents=2)
    c = bigbn.learn(tmp_path / "x.csv", max_parents=2)
    assert a.log_marginal == b.log_marginal == c.log_marginal
    np.testing.assert_array_equal(a.posterior, c.posterior)


def test_frame_cells_as_a_csv_file_would_hold_them():
    f32 = pd.DataFrame({"a": np.array([0.1, 0.2, 0.3] * 5, dtype=np.float32), "b": np.arange(15) % 2})
    assert load_dataset(f32)[0].levels[0] == ("0.1", "0.2", "0.3")
    padded = pd.DataFrame({"a": pd.Categorical([" x", "y", "y", " x"], categories=["y", " x"]),
                           "b": ["1", "2", "2", "1"]})
    assert load_dataset(padded)[0].levels[0] == ("y", "x")
    with pytest.raises(DataError, match="row index 2, column 'b': missing value 'NA'"):
        load_dataset(padded.assign(b=["1", "2", "NA", "1"]))
    with pytest.raises(DataError, match="missing value 'nan'"):
        load_dataset(np.array([[0.0, 1.0], [np.nan, 0.0]]), score="bdeu")


def test_results_to_pandas_and_networkx(asia_pair):
    res = asia_pair[1]
    n = len(res.names)
    df = res.to_pandas()
    assert list(df.columns) == ["parent", "child", "posterior"] and len(df) == n * (n - 1)
    for row in df.itertuples():
        assert row.posterior == res.posterior[res.names.index(row.parent), res.names.index(row.child)]
    g = res.to_networkx()
    assert set(g.nodes) == set(res.names) and g.number_of_edges() == n * (n - 1)
    assert g["either"]["dysp"]["posterior"] == res.posterior[5, 7]
    strong = res.to_networkx(threshold=0.5)
    assert set(strong.nodes) == set(res.names)
    assert {(u, v) for u, v in strong.edges} == {(p, c) for p, c, x in res.edges() if x >= 0.5}
    ps = res.parent_sets_to_pandas()
    sums = ps.groupby("child")["posterior"].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-12)
    assert ps[ps.child == "dysp"].iloc[0].parents == ("bronc", "either")


def test_samples_to_pandas_and_networkx(tmp_path):
    bigbn.learn(ASIA, max_parents=2, workdir=tmp_path / "w")
    s = bigbn.sample(tmp_path / "w", 500, seed=3)
    df = s.to_pandas()
    p = s.ancestor_probabilities()
    row = df[(df.u == "lung") & (df.v == "dysp")].iloc[0]
    assert row.ancestor == p[3, 7] and row.edge == s.edge_probabilities()[3, 7]
    assert len(df) == 56 and set(df.columns) >= {"edge_se", "ancestor_se", "markov_blanket_se"}
    g = s.to_networkx(7)
    assert set(g.nodes) == set(s.names) and nx.is_directed_acyclic_graph(g)
    assert sorted(g.edges) == sorted(s.arcs(s.parents[7]))


def test_missing_optional_packages_are_named(asia_pair, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(OptionError, match="pip install pandas"):
        asia_pair[1].to_pandas()
    monkeypatch.setitem(sys.modules, "networkx", None)
    with pytest.raises(OptionError, match="pip install networkx"):
        asia_pair[1].to_networkx()


def test_map_result_to_pandas_and_networkx(tmp_path):
    res = bigbn.learn(ASIA, max_parents=2, map_dag=True)
    df = res.map_to_pandas()
    assert list(df.itertuples(index=False, name=None)) == res.map_arcs()
    g = res.map_to_networkx()
    assert set(g.nodes) == set(res.names) and sorted(g.edges) == sorted(res.map_arcs())
    assert nx.is_directed_acyclic_graph(g)


def test_a_level_pandas_reads_as_missing_is_explained(tmp_path):
    """child.csv has a level "None": `bigbn run child.csv` reads it, pd.read_csv makes it NaN."""
    path = tmp_path / "levels.csv"
    rng = np.random.default_rng(0)
    levels = np.array(["None", "Mild", "Severe"])
    path.write_text("a,b,c\n" + "".join(f"{levels[i]},{j},{k}\n" for i, j, k in rng.integers(0, 3, (60, 3))))
    with pytest.raises(DataError, match=r"column 'a': missing value .*pandas read a level such as 'None'.*"
                                        r"keep_default_na=False"):
        bigbn.learn(pd.read_csv(path), max_parents=1)
    as_text = bigbn.learn(pd.read_csv(path, keep_default_na=False), max_parents=1)
    assert np.array_equal(as_text.posterior, bigbn.learn(path, max_parents=1).posterior)
    numeric = pd.DataFrame({"a": [1.0, np.nan, 2.0], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError) as e:  # a real hole in numbers: no word on pandas' levels
        bigbn.learn(numeric, max_parents=1)
    assert "keep_default_na" not in str(e.value)


def test_a_thresholded_graph_with_a_cycle_is_warned_of():
    """asia at 0.4: smoke -> lung 0.41 and lung -> smoke 0.49, a 2-cycle."""
    from bigbn.errors import BigBNWarning
    from bigbn.outputs.result import Result

    P = np.array([[0.0, 0.41, 0.1], [0.49, 0.0, 0.7], [0.0, 0.2, 0.0]])
    res = Result(P, ("smoke", "lung", "x"), -1.0)
    with pytest.warns(BigBNWarning, match=r"posterior ≥ 0.4 hold a directed cycle \((smoke -> lung -> smoke|"
                                          r"lung -> smoke -> lung)\)"):
        g = res.to_networkx(threshold=0.4)
    assert set(g.edges) == {("smoke", "lung"), ("lung", "smoke"), ("lung", "x")}  # the graph as asked
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res.to_networkx()  # every arc, no threshold: not a word
        assert set(res.to_networkx(threshold=0.45).edges) == {("lung", "smoke"), ("lung", "x")}


def test_an_array_and_a_data_frame_say_a_cell_of_no_one_value_alike():
    """One message (`frames.not_one_value`) for both: the array's was a second copy of
    the DataFrame's, in other words."""
    a = np.empty((2, 2), dtype=object)
    a[:] = [[0, "x"], [1, "y"]]
    a[1, 1] = {"k": 1}
    df = pd.DataFrame({"X1": [0, 1], "X2": ["x", "y"]}).astype(object)
    df.at[1, "X2"] = {"k": 1}
    said = []
    for data in (a, df):
        with pytest.raises(DataError) as got:
            load_dataset(data)
        said.append(str(got.value).split(": the cell holds ", 1))
    assert said[0][0] == "data array, row index 1, column 'X2'" and said[1][0] == "DataFrame, row 1, column 'X2'"
    assert said[0][1] == said[1][1]


def test_an_object_array_of_text_is_checked_at_text_speed(monkeypatch):
    """Text cells skip `is_value` (as a DataFrame's do): np.ndenumerate and is_value of
    every cell made reading an object array of text 3.6 times slower (0.9 s to 3.5 s for
    300 000 × 20 cells); the cell of no one value is still named by row and column."""
    from bigbn.io import frames

    checked = []
    real = frames.is_value
    monkeypatch.setattr(frames, "is_value", lambda v: checked.append(v) or real(v))
    a = np.array([["0", "x"], ["1", "y"]] * 6, dtype=object)
    load_dataset(a)
    assert checked == []
    a[2, 1] = 5
    load_dataset(a)
    assert checked == [5]
    a[1, 0] = {1}
    with pytest.raises(DataError, match=r"^data array, row index 1, column 'X1': the cell holds \{1\}"):
        load_dataset(a)


def test_plain_python_cells_are_values_at_once(monkeypatch):
    """An int, float, bool or str cell is a value without the isinstance of numbers.Real
    (an ABC) and the other types: that made an object column of ints read 2-3 times
    slower than before the check (5.2 s for 2.7 s at 300 000 × 20 cells)."""
    from bigbn.io import frames

    def slow():
        raise AssertionError("a plain cell went through the type tuple")

    monkeypatch.setattr(frames, "_value_types", slow)
    df = pd.DataFrame({"a": [0, 1] * 4, "z": [1, 2.5, True, "x"] * 2}).astype(object)
    assert set(load_dataset(df)[0].levels[1]) == {"1", "2.5", "True", "x"}
    a = np.array([[0, 1.5], [1, False]] * 4, dtype=object)
    load_dataset(a)


def test_negative_zero_in_a_float_frame_or_array_is_zero():
    """A float column holding -0.0 and 0.0 (as arithmetic leaves them) was the text levels
    '-0.0' and '0.0': two levels of one number in a discrete reading (BDeu's, and cg's
    rule for whole numbers, which then refused it as one number written two ways). Now one
    level, for DataFrames (float64 and float32) and float arrays."""
    m = 40
    z = np.array([[-0.0, 0.0, 1.0][i % 3] for i in range(m)])
    x = np.random.default_rng(1).normal(size=m)
    df = pd.DataFrame({"a": ["pq"[i % 2] for i in range(m)], "x": x, "z": z})
    assert load_dataset(df, score="cg")[0].levels[2] == ("0.0", "1.0")
    assert load_dataset(df.astype({"z": np.float32}), score="cg")[0].levels[2] == ("0.0", "1.0")
    ds = load_dataset(np.c_[np.arange(m) % 2, z])[0]
    assert ds.kind == "discrete" and ds.levels[1] == ("0.0", "1.0")


def test_bytes_cells_are_utf8_text():
    """np.bytes_ cells (a column read from HDF5 or a numpy bytes array) were the levels
    "b'x'" in every output; bytes, np.bytes_ and bytearray cells, in a DataFrame column, a
    category column, an object array or a bytes array, are the UTF-8 text they hold."""
    text = ["x", "é", "x", "é"]
    want = load_dataset(pd.DataFrame({"a": [0, 1, 0, 1], "z": text}))[0]
    for cells in ([np.bytes_(t.encode()) for t in text], [t.encode() for t in text],
                  [bytearray(t.encode()) for t in text]):
        got = load_dataset(pd.DataFrame({"a": [0, 1, 0, 1], "z": cells}))[0]
        assert got.levels == want.levels and np.array_equal(got.data, want.data)
    cat = pd.DataFrame({"a": [0, 1, 0, 1], "z": pd.Categorical([t.encode() for t in text],
                                                                   categories=["é".encode(), b"x", b"\xff"])})
    assert load_dataset(cat)[0].levels[1] == ("é", "x")  # the declared order, observed levels only
    arrays = [np.array([[0, t.encode()] for t in text]).astype("S"),
              np.array([[0, np.bytes_(t.encode())] for t in text], dtype=object)]
    for a in arrays:
        got = load_dataset(a)[0]
        assert got.levels == (("0",), ("x", "é")), got.levels


def test_a_bytes_cell_that_is_not_utf8_is_refused_naming_row_and_column():
    df = pd.DataFrame({"a": [0, 1, 0, 1], "z": [b"x", b"y", b"\xffz", b"x"]}, index=[5, 6, 7, 8])
    with pytest.raises(DataError, match=r"^DataFrame, row 7, column 'z': the cell holds b'\\xffz', not UTF-8 "
                                        r"text \(byte 0xff at offset 0\); decode it to text first$"):
        load_dataset(df)
    with pytest.raises(DataError, match=r"^data array, row index 1, column 'X2': the cell holds b'\\xc3', not UTF-8"):
        load_dataset(np.array([[b"0", b"x"], [b"1", b"\xc3"]]))
    with pytest.raises(DataError, match=r"^data array, row index 1, column 'X2': the cell holds b'\\xc3', not UTF-8"):
        load_dataset(np.array([[0, b"x"], [1, b"\xc3"]], dtype=object))


def test_bytes_column_names_are_utf8_text():
    """A DataFrame's bytes column labels (b'x', np.bytes_: a frame read from HDF5) and bytes
    in names= were the names "b'x'" in every output; they are the UTF-8 text they hold, as
    bytes cells are, checked as a header's names (control characters, duplicates), and
    bytes that are not UTF-8 are one line naming the column's position."""
    want = load_dataset(pd.DataFrame({"x": [0, 1, 0, 1], "é": [1, 1, 0, 0]}))[0]
    for labels in ([b"x", "é".encode()], [np.bytes_(b"x"), np.bytes_("é".encode())], ["x", "é".encode()]):
        got = load_dataset(pd.DataFrame(dict(zip(labels, ([0, 1, 0, 1], [1, 1, 0, 0])))))[0]
        assert got.names == ("x", "é") and np.array_equal(got.data, want.data)
    array = np.array([[0, 1], [1, 1], [0, 0], [1, 0]])
    for names in ([b"x", "é".encode()], [bytearray(b"x"), np.bytes_("é".encode())], np.array([b"x", "é".encode()])):
        got = load_dataset(array, names=names)[0]
        assert got.names == ("x", "é") and np.array_equal(got.data, want.data)
    # the intervention column is found by its text, and dropped by position (drop(b't') read
    # the bytes as the labels 116, a KeyError)
    df = pd.DataFrame({b"x": [0, 1] * 4, b"t": ["", "x"] * 4, b"y": [1, 1, 0, 0] * 2})
    got = load_dataset(df, intervention_column="t")[0]
    assert got.names == ("x", "y") and got.intervened[:, 0].sum() == 4
    with pytest.raises(DataError, match=r"^DataFrame, column 2: the column name is b'\\xffz', not UTF-8 text "
                                        r"\(byte 0xff at offset 0\); decode it to text first$"):
        load_dataset(pd.DataFrame({"a": [0, 1], b"\xffz": [1, 0]}))
    with pytest.raises(DataError, match=r"^array, column 2: the column name is b'\\xc3', not UTF-8 text"):
        load_dataset(array, names=["a", b"\xc3"])
    with pytest.raises(DataError, match=r"^DataFrame, column 2: the column name 'a\\x1b\[2J' holds the control "):
        load_dataset(pd.DataFrame({"a": [0, 1], b"a\x1b[2J": [1, 0]}))
    with pytest.raises(DataError, match=r"^DataFrame: duplicate column name 'x' \(columns 1 and 2\)"):
        load_dataset(pd.DataFrame({b"x": [0, 1], "x": [1, 0]}))
    with pytest.raises(DataError, match=r"^array: duplicate column name 'x' \(columns 1 and 2\)"):
        load_dataset(array, names=["x", b"x"])


def test_a_level_holding_a_control_character_is_refused():
    """A DataFrame's or an array's cell holding a control character (text, bytes, a
    category) is refused in one line naming the row and column, the cell escaped, as a
    CSV file's is (it went into the exports, the CSV outputs, the report and the terminal)."""
    tail = "a level is one line of printable text (recode it)"
    for cells in (["x", "y", "a\nb", "x"], ["x", "y", b"a\nb", "x"], pd.Categorical(["x", "y", "a\nb", "x"]),
                  pd.array(["x", "y", "a\nb", "x"], dtype="string")):
        df = pd.DataFrame({"a": [0, 1, 0, 1], "z": cells}, index=[5, 6, 7, 8])
        with pytest.raises(DataError) as e:
            load_dataset(df)
        assert str(e.value) == f"DataFrame, row 7, column 'z': the level 'a\\nb' holds the control character '\\n'; {tail}"
    df = pd.DataFrame({"a": ["x", "y\x1b[2J"], "b": [0, 1]}, index=["p", "q"])
    with pytest.raises(DataError, match=r"^DataFrame, row 'q', column 'a': the level 'y\\x1b\[2J' holds the "):
        load_dataset(df)
    for a in (np.array([["0", "x"], ["1", "a\x07"]]), np.array([[0, "x"], [1, "a\x07"]], dtype=object),
              np.array([[b"0", b"x"], [b"1", b"a\x07"]])):
        with pytest.raises(DataError) as e:
            load_dataset(a)
        assert str(e.value) == (f"data array, row index 1, column 'X2': the level 'a\\x07' holds the control "
                                f"character '\\x07'; {tail}")
    ok = load_dataset(pd.DataFrame({"a": [0, 1] * 3, "z": ["°", "x\u202ey", "é"] * 2}))[0]
    assert ok.levels[1] == ("x\u202ey", "°", "é")  # a bidi mark is shown escaped, not refused
