"""Heatmap, graph drawing and DOT/GraphML export of edge posteriors."""

from __future__ import annotations

import re
import struct

import matplotlib.image
import numpy as np
import pytest
from click.testing import CliRunner

from bigbn.cli.tools import plot
from bigbn.errors import BigBNWarning, OptionError
from bigbn.outputs.plot import (draw_graph, heatmap, thresholded_edges, to_dot, to_graphml,
                        write_graph)
import helpers as h


def check_png(path):
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    img = matplotlib.image.imread(path)
    assert width > 100 and height > 100 and img.shape[:2] == (height, width)
    assert img.std() > 0  # not a blank picture


def matrix(n, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.random((n, n)) ** 3
    np.fill_diagonal(P, 0)
    return P


def write_edges(path, names, P):
    with open(path, "w") as fh:
        fh.write("parent,child,posterior\n")
        for u, a in enumerate(names):
            for v, b in enumerate(names):
                if u != v:
                    fh.write(f"{a},{b},{float(P[u, v])!r}\n")


def test_thresholded_edges_against_brute_force():
    names = list("abcde")
    P = matrix(5)
    for t in (0.0, 0.3, 0.5, 0.9, 1.0):
        got = thresholded_edges(names, P, t)
        ref = {(names[u], names[v]) for u in range(5) for v in range(5) if u != v and P[u, v] >= t}
        assert {(u, v) for u, v, _ in got} == ref
        assert [p for *_, p in got] == sorted((p for *_, p in got), reverse=True)
    with pytest.raises(OptionError):
        thresholded_edges(names, P, 1.5)


def test_plot_and_to_networkx_draw_the_same_edges_at_a_tie():
    """Review finding: `plot` used > and `to_networkx` ≥ for the same threshold."""
    pytest.importorskip("networkx")
    from bigbn.io.frames import to_digraph

    names = list("abc")
    P = np.array([[0.0, 0.5, 0.25], [0.5, 0.0, 0.75], [0.0, 0.5 - 1e-12, 0.0]])
    drawn = {(u, v) for u, v, _ in thresholded_edges(names, P, 0.5)}
    assert drawn == {("a", "b"), ("b", "a"), ("b", "c")}
    with pytest.warns(BigBNWarning, match="hold a directed cycle"):  # a <-> b at the tie
        assert set(to_digraph(names, P, "posterior", 0.5).edges) == drawn


def test_dot_export():
    names = ['a "quoted" name', "b", "c\\d"]
    edges = [('a "quoted" name', "b", 0.75), ("c\\d", "b", 0.5)]
    text = to_dot(names, edges)
    assert text.startswith("digraph")
    found = re.findall(r'^\s*"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)" \[posterior=([0-9.e-]+)', text, re.M)
    unesc = [(re.sub(r"\\(.)", r"\1", u), re.sub(r"\\(.)", r"\1", v), float(p)) for u, v, p in found]
    assert unesc == edges
    assert len(re.findall(r"^\s*\"(?:[^\"\\]|\\.)*\";$", text, re.M)) == 3


def test_graphml_export_reads_back_with_networkx():
    nx = pytest.importorskip("networkx")
    import io

    names = ["a<b", "c&d", "e"]
    P = np.array([[0, 0.9, 0.2], [0.05, 0, 0.7], [0.6, 0.1, 0]])
    edges = thresholded_edges(names, P, 0.5)
    G = nx.read_graphml(io.BytesIO(to_graphml(names, edges).encode()))
    assert G.is_directed()
    assert set(G.nodes) == set(names)
    got = {(u, v): d["posterior"] for u, v, d in G.edges(data=True)}
    assert got == {("a<b", "c&d"): 0.9, ("c&d", "e"): 0.7, ("e", "a<b"): 0.6}


def test_pictures(tmp_path):
    names = [f"node{i}" for i in range(9)]
    P = matrix(9, 1)
    truth = np.zeros((9, 9), bool)
    truth[0, 1] = truth[2, 3] = True
    heatmap(names, P, tmp_path / "h.png")
    draw_graph(names, P, tmp_path / "g.png", threshold=0.3, truth=truth)
    draw_graph(names, P, tmp_path / "g2.png", threshold=0.3)
    for f in ("h.png", "g.png", "g2.png"):
        check_png(tmp_path / f)
    heatmap(names, P, tmp_path / "h.svg")
    assert (tmp_path / "h.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(OptionError):
        heatmap(names, P, tmp_path / "h.bmp")


def test_write_graph_formats(tmp_path):
    names = list("abcd")
    P = matrix(4, 2)
    assert write_graph(names, P, tmp_path / "g.gv") == "dot"
    assert (tmp_path / "g.gv").read_text().startswith("digraph")
    assert write_graph(names, P, tmp_path / "g.txt", fmt="graphml") == "graphml"
    assert "<graphml" in (tmp_path / "g.txt").read_text()
    assert write_graph(names, P, tmp_path / "g.pic", fmt="png") == "png"
    check_png(tmp_path / "g.pic")
    with pytest.raises(OptionError, match="unknown graph format"):
        write_graph(names, P, tmp_path / "g.jpg")


def test_cli_plot(tmp_path, monkeypatch):
    names = [f"X{i}" for i in range(1, 7)]
    P = matrix(6, 3)
    edges = tmp_path / "edges.csv"
    write_edges(edges, names, P)
    truth = tmp_path / "t.csv"
    truth.write_text("parent,child\nX1,X2\nX3,X4\n")
    r = CliRunner()
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)  # the default heatmap goes into the current folder, not beside the edges
    res = r.invoke(plot, [str(edges)])
    assert res.exit_code == 0, res.output
    check_png(here / f"{tmp_path.name}.heatmap.png")
    assert not list(tmp_path.glob("*.heatmap.png"))
    res = r.invoke(plot, [str(edges), "--out", str(tmp_path / "h.png"), "--graph",
                          str(tmp_path / "g.png"), "--threshold", "0.2", "--truth", str(truth)])
    assert res.exit_code == 0, res.output
    check_png(tmp_path / "h.png")
    check_png(tmp_path / "g.png")
    expected = int(((P >= 0.2) & ~np.eye(6, dtype=bool)).sum())
    assert f"{expected} edges with posterior ≥ 0.2" in res.output
    res = r.invoke(plot, [str(edges), "--graph", str(tmp_path / "g.out"), "--format", "dot",
                          "--threshold", "0.2"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "g.out").read_text().count("->") == expected
    res = r.invoke(plot, [str(edges), "--graph", str(tmp_path / "g.png"), "--threshold", "2"])
    assert isinstance(res.exception, OptionError)


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

def test_plot_takes_a_workdir(tmp_path):
    data = tmp_path / "d.csv"
    assert h.cli("simulate", "--n", 4, "--rows", 200, "--seed", 1, data).exit_code == 0
    assert h.cli("run", data, "-w", tmp_path / "w", "-q", "-k", 2).exit_code == 0
    out = tmp_path / "g.png"
    res = h.cli("plot", tmp_path / "w", "--graph", out, "--truth", tmp_path / "d.truth.csv")
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.output and out.stat().st_size > 5000


def _svg_text(tmp_path, **kw) -> str:
    """draw_graph's SVG with its text kept as text (matplotlib draws glyphs as paths by default)."""
    import matplotlib

    names = ["a", "b", "c", "d"]
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        draw_graph(names, matrix(4, 5), tmp_path / "g.svg", threshold=0.1, **kw)
    return (tmp_path / "g.svg").read_text()


def test_a_tiered_graph_keeps_the_arc_legend(tmp_path):
    truth = np.zeros((4, 4), dtype=bool)
    truth[0, 1] = truth[2, 3] = True
    svg = _svg_text(tmp_path, truth=truth, tiers=[["a", "b"], ["c", "d"]])
    assert "true arc, reversed" in svg and "not in the true network" in svg  # the arcs' colours
    assert "tier 1" in svg and "tier 2" in svg                               # and the tiers'
    svg = _svg_text(tmp_path, tiers=[["a", "b"], ["c", "d"]])
    assert "posterior 0.10" in svg and "posterior 1.00" in svg and "tier 2" in svg
    assert "true arc" not in _svg_text(tmp_path)


def test_plot_and_roc_take_the_samplers_edges(tmp_path, monkeypatch):
    data = tmp_path / "d.csv"
    assert h.cli("simulate", "--n", 4, "--rows", 200, "--seed", 1, data).exit_code == 0
    assert h.cli("run", data, "-w", tmp_path / "w", "-q", "-k", 2).exit_code == 0
    assert h.cli("sample", "-w", tmp_path / "w", "--samples", 300).exit_code == 0
    folder = tmp_path / "w" / "samples-order-modular"
    from bigbn.tools.roc import read_edges

    names, P = read_edges(folder / "edges.csv")
    rows = {(r.split(",")[0], r.split(",")[1]): float(r.split(",")[2])
            for r in (folder / "edges.csv").read_text().splitlines()[1:]}
    assert all(P[names.index(u), names.index(v)] == p for (u, v), p in rows.items())
    monkeypatch.chdir(tmp_path)
    for source in (folder, folder / "edges.csv"):
        res = h.cli("roc", source, tmp_path / "d.truth.csv")
        assert res.exit_code == 0 and res.output.startswith("AUC "), res.output
        res = h.cli("plot", source)
        assert res.exit_code == 0, res.output
        check_png(tmp_path / "w-samples-order-modular.heatmap.png")
    assert not list(folder.glob("*.png"))


@pytest.mark.parametrize("fmt", ["graphml", "svg", "heatmap.svg"])
def test_a_name_xml_cannot_hold_is_escaped_in_xml_outputs(tmp_path, fmt):
    """A control character in a name (a DataFrame column "a\\x01b") was written as it was:
    the GraphML and SVG files it made were not XML (no parser read them)."""
    import xml.etree.ElementTree as ET

    from bigbn.outputs.plot import heatmap, write_graph

    names = ["a\x01b", "c"]
    P = np.array([[0.0, 0.75], [0.25, 0.0]])
    path = tmp_path / f"g.{fmt}"
    if fmt == "heatmap.svg":
        heatmap(names, P, path, title="t\x02")
    else:
        write_graph(names, P, path, threshold=0.5)
    ET.parse(path)  # well-formed
    assert "a\\x01b" in path.read_text(encoding="utf-8") or fmt != "graphml"


def test_two_outputs_of_one_name_are_refused(tmp_path):
    """plot --out g.png --graph g.png (and roc --plot c --curve c) wrote the second over
    the first without a word."""
    from bigbn.cli.tools import roc

    edges = tmp_path / "e.csv"
    edges.write_text("parent,child,posterior\na,b,0.75\nb,a,0.25\nb,c,0.5\nc,b,0.1\na,c,0.2\nc,a,0.3\n")
    truth = tmp_path / "t.csv"
    truth.write_text("parent,child\na,b\n")
    out = tmp_path / "g.png"
    r = CliRunner().invoke(plot, [str(edges), "--out", str(out), "--graph", str(out)])
    assert isinstance(r.exception, OptionError) and "--out and --graph name one file" in str(r.exception)
    r = CliRunner().invoke(roc, [str(edges), str(truth), "--plot", str(out), "--curve", str(out)])
    assert isinstance(r.exception, OptionError) and "--plot and --curve name one file" in str(r.exception)
    assert not out.exists()


@pytest.mark.parametrize("command", ["plot", "roc"])
@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_workdir_whose_edges_csv_is_not_a_file_is_one_line_naming_it(tmp_path, command, kind):
    """`bigbn plot WORKDIR` (and `roc`) with a FIFO or a folder in place of edges.csv said
    "a folder without edges.csv (not a finished bigbn run)": a run that is finished, whose
    file is something else. Now the line names the file and what is in its place."""
    import os

    wd = tmp_path / "w"
    (wd / "samples-order-modular").mkdir(parents=True)
    (wd / "run.json").write_text("{}")
    truth = tmp_path / "t.csv"
    truth.write_text("parent,child\na,b\n")
    for folder in (wd, wd / "samples-order-modular"):
        os.mkfifo(folder / "edges.csv") if kind == "fifo" else (folder / "edges.csv").mkdir()
        res = h.cli(command, folder, *([truth] if command == "roc" else ["--out", tmp_path / "h.png"]))
        what = "a FIFO" if kind == "fifo" else "a folder"
        assert res.exit_code == 1 and res.output.count("\n") == 1, res.output
        assert f"{folder / 'edges.csv'} is {what}, not a file as bigbn writes it" in res.output, res.output
    res = h.cli(command, tmp_path, *([truth] if command == "roc" else []))
    assert res.exit_code == 1 and "a folder without edges.csv" in res.output
