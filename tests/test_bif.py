"""BIF reader: bundled networks against their README table and against pgmpy's reader."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from bigbn.io.bif import (NETWORKS_DIR, Network, bundled_networks, format_bif, parse_bif,
                       read_bif, write_bif)
from bigbn.errors import DataError
from bigbn.tools.simulate import random_network


def readme_table():
    """{name: (nodes, arcs)} from bigbn/networks/README.md."""
    text = (NETWORKS_DIR / "README.md").read_text()
    rows = re.findall(r"^\|\s*(\w+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|", text, re.M)
    return {name: (int(a), int(b)) for name, a, b in rows}


EXPECTED = {"cancer": (5, 4), "earthquake": (5, 4), "survey": (6, 6), "asia": (8, 8),
            "sachs": (11, 17), "child": (20, 25), "alarm": (37, 46)}


def test_readme_lists_every_bundled_network_with_the_issue_counts():
    assert readme_table() == EXPECTED
    assert sorted(bundled_networks()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_network_counts_and_cpts(name):
    net = read_bif(name)
    nodes, arcs = readme_table()[name]
    assert net.n == nodes
    assert len(net.arcs()) == arcs
    assert net.adjacency().sum() == arcs
    raw = gzip.open(NETWORKS_DIR / f"{name}.bif.gz", "rt").read()
    assert len(re.findall(r"^variable ", raw, re.M)) == nodes
    for i in range(net.n):
        cpt = net.cpts[i]
        assert cpt.shape == tuple(len(net.states[p]) for p in net.parents[i]) + (len(net.states[i]),)
        np.testing.assert_allclose(cpt.sum(axis=-1), 1.0, atol=1e-12)
        assert (cpt >= 0).all()
    order = net.topological_order()
    pos = {v: j for j, v in enumerate(order)}
    assert all(pos[p] < pos[c] for p, c in net.arcs())


@pytest.mark.parametrize("name", ["asia", "child", "alarm"])
def test_cpts_agree_with_pgmpy_reader(name):
    pgmpy_bif = pytest.importorskip("pgmpy.readwrite")
    raw = gzip.open(NETWORKS_DIR / f"{name}.bif.gz", "rt").read()
    model = pgmpy_bif.BIFReader(string=raw).get_model()
    net = read_bif(name)
    index = {v: i for i, v in enumerate(net.names)}
    assert set(model.nodes()) == set(net.names)
    assert {(index[u], index[v]) for u, v in model.edges()} == set(net.arcs())
    for cpd in model.get_cpds():
        i = index[cpd.variable]
        pnames = cpd.variables[1:]
        assert tuple(index[p] for p in pnames) == net.parents[i]
        # pgmpy: values[child, p1, p2, ...]; ours: cpt[p1, p2, ..., child]; same state order?
        for v in cpd.variables:
            assert tuple(cpd.state_names[v]) == net.states[index[v]]
        ref = np.moveaxis(cpd.values, 0, -1)
        np.testing.assert_allclose(net.cpts[i], ref / ref.sum(axis=-1, keepdims=True), atol=1e-12)


def test_plain_and_gz_paths_and_names(tmp_path):
    raw = gzip.open(NETWORKS_DIR / "asia.bif.gz", "rt").read()
    (tmp_path / "x.bif").write_text(raw)
    a, b = read_bif(tmp_path / "x.bif"), read_bif("asia")
    assert a.names == b.names and a.parents == b.parents
    assert all(np.array_equal(x, y) for x, y in zip(a.cpts, b.cpts))
    with pytest.raises(DataError, match="not a bundled network"):
        read_bif("no-such-network")


def test_round_trip_random_networks(tmp_path):
    """Written and read back, a network is the same bit for bit: the floats are written
    exactly, and a row summing to 1 up to its rounding is not divided by its sum (which
    moved a third of the rows of a random network by an ulp)."""
    rng = np.random.default_rng(7)
    for r in (2, 3, 5):
        net = random_network(7, 3, r, rng)
        rows = rng.random((200, r))
        rows /= rows.sum(axis=1, keepdims=True)
        net = Network(net.names + ("many",), net.states + (net.states[0],), net.parents + ((),),
                      net.cpts + (rows[0],))
        path = tmp_path / f"net{r}.bif.gz"
        write_bif(net, path)
        back = read_bif(path)
        assert back.names == net.names and back.states == net.states
        assert back.parents == net.parents
        for x, y in zip(back.cpts, net.cpts):
            assert np.array_equal(x, y)
        for row in rows:
            one = Network(("a",), (net.states[0],), ((),), (row,))
            assert np.array_equal(parse_bif(format_bif(one)).cpts[0], row)
    assert parse_bif(format_bif(net)).arcs() == net.arcs()
    # a row written with few digits is still made a distribution
    back = parse_bif("variable a { type discrete [ 3 ] { x, y, z }; }\nprobability ( a ) { table 0.3333, 0.3333, 0.3333; }")
    assert np.allclose(back.cpts[0], 1 / 3, rtol=1e-15, atol=0)



def test_a_name_bif_cannot_hold_leaves_no_file(tmp_path):
    """A variable BIF cannot name (a time series' X[t-1]) is refused before the file is
    opened: no empty network.bif is left, and an earlier one is not emptied."""
    net = parse_bif(format_bif(random_network(3, 1, 2, np.random.default_rng(3))))
    bad = Network(("X[t-1]",) + net.names[1:], net.states, net.parents, net.cpts)
    path = tmp_path / "network.bif"
    with pytest.raises(DataError, match=r"'X\[t-1\]': BIF names are letters"):
        write_bif(bad, path)
    assert not path.exists()
    write_bif(net, path)
    before = path.read_text()
    with pytest.raises(DataError):
        write_bif(bad, path)
    assert path.read_text() == before

GOOD = """
// a comment
network test { property "x"; }
variable A { type discrete [ 2 ] { a0, a1 }; property weight 3; }
variable B {
  type discrete [ 3 ] { b0, b1, b2 };
}
/* block
   comment */
probability ( A ) { table 0.25, 0.75; }
probability ( B | A ) {
  (a1) 0.1, 0.2, 0.7;
  default 0.5, 0.25, 0.25;
}
"""


def test_comments_properties_and_default_rows():
    net = parse_bif(GOOD)
    assert net.names == ("A", "B")
    assert net.states == (("a0", "a1"), ("b0", "b1", "b2"))
    assert net.parents == ((), (0,))
    np.testing.assert_allclose(net.cpts[0], [0.25, 0.75])
    np.testing.assert_allclose(net.cpts[1], [[0.5, 0.25, 0.25], [0.1, 0.2, 0.7]])


@pytest.mark.parametrize("bad, message", [
    (GOOD.replace("[ 3 ]", "[ 4 ]"), r"line 6: .*\[ 4 \] but 3 states"),
    (GOOD.replace("(a1) 0.1, 0.2, 0.7", "(a1) 0.1, 0.2, 0.9"), r"line 12: .*sums to 1.2"),
    (GOOD.replace("(a1) 0.1, 0.2, 0.7", "(a1) 0.3, 0.7"), r"line 12: .*2 probabilities, expected 3"),
    (GOOD.replace("(a1)", "(a7)"), r"line 12: .*'a7' is not a state of 'A'"),
    (GOOD.replace("B | A", "B | C"), r"undeclared variable 'C'"),
    (GOOD.replace("  default 0.5, 0.25, 0.25;\n", ""), r"lacks rows"),
    (GOOD.replace("probability ( A ) { table 0.25, 0.75; }", ""), r"'A' has no probability block"),
    (GOOD.replace("table 0.25, 0.75", "table 0.25, x"), r"expected a probability, found 'x'"),
    (GOOD.replace("(a1) 0.1", "table 0.1"), r"'table' with parents is not supported"),
    (GOOD + "probability ( A | B ) { (b0) 1, 0; (b1) 1, 0; (b2) 1, 0; }", r"second probability block"),
    (GOOD.replace("network test", "netwerk test"), r"line 3: expected 'network'"),
    (GOOD.replace("/* block", "/* block never closed").replace("comment */", ""), r"unterminated comment"),
    ("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.5, 0.5; ",
     r"unexpected end of file"),
])
def test_malformed_bif_names_the_problem(bad, message):
    with pytest.raises(DataError, match=message):
        parse_bif(bad)


def test_network_rejects_cycles_and_bad_tables():
    half = np.full((2, 2), 0.5)
    with pytest.raises(DataError, match="cycle"):
        Network(("a", "b"), (("0", "1"),) * 2, ((1,), (0,)), (half, half))
    with pytest.raises(DataError, match="not distributions"):
        Network(("a",), (("0", "1"),), ((),), (np.array([0.5, 0.6]),))
    with pytest.raises(DataError, match="shape"):
        Network(("a", "b"), (("0", "1"),) * 2, ((), (0,)), (np.array([0.5, 0.5]), np.full(2, 0.5)))


@pytest.mark.parametrize("names, message", [
    (("a", "b\nc"), r"^network, variable 2: the variable name 'b\\nc' holds the control character '\\n'; "
                    r"a name is one line of printable text \(rename it\)$"),
    (("a\x1b[2J", "b"), r"^network, variable 1: the variable name 'a\\x1b\[2J' holds the control character '\\x1b'"),
    (("a", "b\x85"), r"^network, variable 2: the variable name 'b\\x85' holds the control character"),
    (("a", "b\u2028"), r"^network, variable 2: the variable name 'b\\u2028' holds the control character"),
    (("", "b"), r"^network, variable 1: empty variable name$"),
    (("a", "a"), r"^network: duplicate variable name 'a' \(variables 1 and 2\)$"),
    (("a", 2), r"^network, variable 2: the name 2 \(int\) is not text$"),
])
def test_a_network_built_in_python_checks_its_names_as_a_header_is(names, message):
    """A `Network` built in Python took any name: "b\\nc" or an ESC went into the BIF and
    XMLBIF exports, simulated data and printed lists (a CSV header, a DataFrame's columns
    and a BIF file refuse them, `io.data.check_name`); it refuses them in one line as they
    do, and an empty or repeated name."""
    half = np.full((2, 2), 0.5)
    with pytest.raises(DataError, match=message):
        Network(names, (("0", "1"),) * 2, ((), (0,)), (half[0], half))


def test_a_truncated_or_damaged_gz_file_is_one_line(tmp_path):
    """EOFError (truncated) and zlib.error (damaged) are no OSError: the first reached
    click as a bare "Aborted!", the second as a traceback."""
    packed = gzip.compress(GOOD.encode())
    (tmp_path / "cut.bif.gz").write_bytes(packed[: len(packed) // 2])
    (tmp_path / "bad.bif.gz").write_bytes(packed[:10] + b"\0" * 20 + packed[30:])
    for name in ("cut.bif.gz", "bad.bif.gz"):
        with pytest.raises(DataError, match="truncated or damaged gzip file"):
            read_bif(tmp_path / name)


def test_a_byte_order_mark_is_read_past(tmp_path):
    (tmp_path / "bom.bif").write_text(GOOD, encoding="utf-8-sig")
    assert read_bif(tmp_path / "bom.bif").names == ("A", "B")


@pytest.mark.parametrize("bad, message", [
    ("", r"no variables"),
    ("// only a comment\n", r"no variables"),
    (GOOD.replace("B | A", "B | B"), r"line 11: 'B' is given as its own parent"),
    (GOOD.replace("B | A", "B | A, A"), r"line 11: 'B': parent 'A' is named twice"),
    # a second table, default or type line replaced the first, silently
    (GOOD.replace("table 0.25, 0.75;", "table 0.25, 0.75; table 0.5, 0.5;"), r"line 10: 'A': 'table' given twice"),
    (GOOD.replace("default 0.5, 0.25, 0.25;", "default 0.5, 0.25, 0.25; default 0.2, 0.2, 0.6;"),
     r"line 13: 'B': 'default' given twice"),
    (GOOD.replace("property weight 3;", "type discrete [ 2 ] { x, y };"), r"line 4: variable 'A': a second 'type' line"),
    (GOOD.replace("probability ( A ) { table 0.25, 0.75; }",
                  "probability ( A | B ) { default 0.25, 0.75; }"), r"<bif>: .*cycle \(among 'A', 'B'\)"),
])
def test_bif_structure_errors_name_the_file_and_line(bad, message):
    with pytest.raises(DataError, match=message):
        parse_bif(bad)


def test_a_default_row_cannot_ask_for_a_huge_table():
    """A `default` row fills a table of any size from one line: 1000^6 cells were handed
    to numpy (a MemoryError traceback); the table's line and size are named first."""
    states = ", ".join(f"s{i}" for i in range(1000))
    row = ", ".join(["0.001"] * 1000)
    text = "".join(f"variable {v} {{ type discrete [ 1000 ] {{ {states} }}; }}\n" for v in "ABCDEF")
    text += "".join(f"probability ( {v} ) {{ table {row}; }}\n" for v in "ABCDE")
    text += f"probability ( F | A, B, C, D, E ) {{ default {row}; }}\n"
    with pytest.raises(DataError, match=r"line 12: the table of 'F' would have 1000 × .* cells"):
        parse_bif(text)


@pytest.mark.parametrize("level", ["//note", "/*x", "/**/", "http://x", "a/*b"])
def test_a_level_a_reader_takes_for_a_comment_is_refused(level):
    """A level starting with // or /* was written into the states list and the rows,
    where every reader (this one, pgmpy's) takes it for a comment: the file could not be
    read back. pgmpy strips comments anywhere in a line: "http://x" made a file it could not
    read (AttributeError), and levels "a/*b" ... "c*/d" lost what lay between; so a level
    holds neither // nor /* ("a/b", "x*/" are fine). (Nor a control character, which pgmpy
    failed on, "a\\x00b": "cannot convert float NaN to integer"; `Network` refuses those
    itself: test_a_state_holding_a_control_character_is_refused.)"""
    net = random_network(2, 1, 2, np.random.default_rng(3))
    for states in [((level, "1"), net.states[1]), ((net.states[0]), ("x*/", "a/b"))]:
        named = Network(net.names, states, net.parents, net.cpts)
        if states[0][0] == level:
            with pytest.raises(DataError, match="nor // or /"):
                format_bif(named)
        else:
            assert parse_bif(format_bif(named)).states == states


@pytest.mark.parametrize("level", ["a\x00b", "\x07", "x\x7f", "a\nb", "a\x1b[2J", "x\x85y", "x\u2028"])
def test_a_state_holding_a_control_character_is_refused(level, tmp_path):
    """A state (a level) "a\\nb" or "a\\x1b[2J" went into the XMLBIF export, the data
    `bigbn simulate` writes and the terminal's lines: a `Network` built in Python refuses
    it as a data file's level is refused (`io.data.check_level`), one line naming the
    variable and the state's position, the state escaped; a BIF file's state, naming the
    file and line."""
    from bigbn.io.data import visible

    net = random_network(2, 1, 2, np.random.default_rng(3))
    shown = re.escape(f"the state '{visible(level)}' holds the control character")
    with pytest.raises(DataError, match=rf"^network, variable '{net.names[0]}', state 1: {shown} "):
        Network(net.names, ((level, "1"), net.states[1]), net.parents, net.cpts)
    with pytest.raises(DataError, match=r"^network, variable 'X1', state 2: 1 \(int\) is not text$"):
        Network(("X1",), (("0", 1),), ((),), (np.array([0.5, 0.5]),))
    if re.search(r"[\s\[\]]", level):
        return  # a BIF file's state holds no white space (a newline, NEL, U+2028 end it) nor [ ]
    (tmp_path / "n.bif").write_text(GOOD.replace("a0, a1", f"a0, {level}"), encoding="utf-8")
    with pytest.raises(DataError, match=rf"n.bif, line 4, variable 'A': {shown} .*\(recode it\)$"):
        read_bif(tmp_path / "n.bif")


def test_a_name_xml_cannot_hold_is_refused_and_leaves_no_file(tmp_path):
    """A control character (a DataFrame column "a\\x01b", a level "x\\x02") was written into
    the XMLBIF file, which then no XML parser read ("not well-formed"); a variable name
    holding one is now refused by `Network` itself, but a lone surrogate or U+FFFF is no
    control character and no XML either. A space or a non-ASCII letter is fine."""
    import xml.etree.ElementTree as ET

    from bigbn.io.bif import write_xmlbif

    net = random_network(2, 1, 2, np.random.default_rng(3))
    path = tmp_path / "n.xml"
    for names, states, needle in [(("a\ud800b", "X2"), net.states, "U+D800"), (("a\uffff", "X2"), net.states, "U+FFFF"),
                                  (net.names, (("x\ufffe", "y"), net.states[1]), "U+FFFE")]:
        with pytest.raises(DataError, match=re.escape(f"XML cannot hold the character {needle}")):
            write_xmlbif(Network(names, states, net.parents, net.cpts), path)
        assert not path.exists()
    write_xmlbif(Network(("a b", "ünï"), (("x y", "<&>"), net.states[1]), net.parents, net.cpts), path)
    assert [e.text for e in ET.parse(path).iter("NAME")] == ["unknown", "a b", "ünï"]


def test_xmlbif_names_read_back_as_they_were(tmp_path):
    """A carriage return in a name or a level was written as it is, and every XML parser
    reads it as a line feed ("a\rb" came back "a\nb", in ElementTree and pgmpy alike): it
    is written &#13; (a variable's name or a state holds none now, `Network` refuses control
    characters; the network's name may). Spaces at the ends, markup and any letter are kept."""
    import xml.etree.ElementTree as ET

    from bigbn.io.bif import write_xmlbif

    net = random_network(2, 1, 2, np.random.default_rng(3))
    names, states = (" a b ", "c d <&>\"'"), ((" x", "y "), ("]]>", "é😀"))
    path = tmp_path / "n.xml"
    write_xmlbif(Network(names, states, net.parents, net.cpts), path, name="n\r1")
    tree = ET.parse(path)
    assert [e.text for e in tree.iter("NAME")] == ["n\r1", *names]
    assert [e.text for e in tree.iter("OUTCOME")] == [*states[0], *states[1]]
    assert [e.text for e in tree.iter("FOR")] == list(names)
    pgmpy = pytest.importorskip("pgmpy.readwrite")
    model = pgmpy.XMLBIFReader(str(path)).get_model()
    assert sorted(model.nodes()) == sorted(names)
    assert model.get_cpds(names[0]).state_names[names[0]] == list(states[0])


def test_a_parent_of_many_states_is_read_in_linear_time(monkeypatch):
    """Each row's parent states were searched for in the list of states: 30,000 states
    took 9 s, 60,000 about 40 s (quadratic); looked up in a dict, linear. Counted, not
    timed: the tokens are wrapped in a str that counts its == (a list search makes one
    per state it passes, r^2 / 2 in all; a dict lookup one per row), and the parse of r
    states and rows may make a few per token."""
    import bigbn.io.bif as bif

    calls = [0]

    class Counted(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            calls[0] += 1
            return str.__eq__(self, other)

    tokenize = bif._tokenize
    monkeypatch.setattr(bif, "_tokenize", lambda text, source: [(Counted(t), line) for t, line in
                                                                tokenize(text, source)])
    r = 3_000
    text = (f"variable P {{ type discrete [ {r} ] {{ {', '.join(f's{i}' for i in range(r))} }}; }}\n"
            "variable C { type discrete [ 2 ] { a, b }; }\n"
            f"probability ( P ) {{ table {', '.join([repr(1 / r)] * r)}; }}\n"
            "probability ( C | P ) {\n" + "".join(f"  (s{i}) 0.25, 0.75;\n" for i in range(r)) + "}\n")
    net = parse_bif(text)
    assert net.cpts[1].shape == (r, 2) and net.cpts[1][r - 1, 1] == 0.75
    assert np.array_equal(net.cpts[1], np.tile([0.25, 0.75], (r, 1)))
    tokens = len(tokenize(text, "<bif>"))
    assert 0 < calls[0] <= 4 * tokens, (calls[0], tokens)


@pytest.mark.parametrize("states, message", [
    (("0", "0"), r"^network, variable 'b': duplicate state name '0' \(states 1 and 2\)$"),
    (("0", ""), r"^network, variable 'b', state 2: empty state name$"),
    ((), r"^network, variable 'b': no states \(a variable takes at least one\)$"),
])
def test_a_network_built_in_python_checks_its_state_names_as_a_bif_file_is(states, message):
    """A `Network` built in Python took a state named twice (two codes printed and exported
    as one level: a BIF file's "duplicate state names"), an empty state name and a variable
    with no states; each is one line naming the variable and the state."""
    cpt = np.full((2, len(states)), 1.0 / max(len(states), 1))
    with pytest.raises(DataError, match=message):
        Network(("a", "b"), (("0", "1"), states), ((), (0,)), (np.full(2, 0.5), cpt))


def test_a_state_holding_a_tab_is_kept_where_it_can_be(tmp_path):
    """A level "x\\ty" (a quoted CSV cell) is text, not a control character (review55: loose54
    refused it in `Network` and every reader): `Network` takes it, XMLBIF writes it and reads
    back as it was, and the BIF export refuses it in one line, as any white space in a state."""
    import xml.etree.ElementTree as ET

    from bigbn.io.bif import write_xmlbif

    net = random_network(2, 1, 2, np.random.default_rng(3))
    named = Network(net.names, (("x\ty", "z"), net.states[1]), net.parents, net.cpts)
    write_xmlbif(named, tmp_path / "n.xml")
    assert [e.text for e in ET.parse(tmp_path / "n.xml").iter("OUTCOME")][:2] == ["x\ty", "z"]
    with pytest.raises(DataError, match=r"level 'x\\ty': a BIF state has no spaces"):
        format_bif(named)
