"""Undirected-edge ROC (paper, section 5.1) against hand-computed cases and Mann-Whitney."""

from __future__ import annotations

import os
import struct
import tempfile

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bigbn.cli.tools import roc
from bigbn.errors import DataError, OptionError
from bigbn.tools.roc import (edge_roc, read_edges, read_edges_and_children, roc_curve, undirected_labels,
                       undirected_scores)


def mann_whitney_auc(scores, labels):
    """Slow reference: P(s+ > s-) + P(s+ = s-)/2 over all (true, false) pairs."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    total = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg)
    return total / (len(pos) * len(neg))


def brute_points(scores, labels):
    """Slow reference: (fpr, tpr) for 'claimed iff score > tau' at every tau that matters."""
    s = np.asarray(scores, float)
    y = np.asarray(labels, bool)
    taus = [np.inf] + sorted(set(s.tolist()), reverse=True)
    pts = []
    for t in taus:
        # tau just below the distinct score t (tau = t - tiny): claim score >= t
        claim = s >= t
        pts.append(((claim & ~y).sum() / (~y).sum(), (claim & y).sum() / y.sum()))
    return pts


def test_perfect_reversed_and_ties():
    c = roc_curve([0.9, 0.8, 0.3, 0.1], [1, 1, 0, 0])
    assert c.auc == 1.0
    assert list(zip(c.fpr, c.tpr)) == [(0, 0), (0, 0.5), (0, 1), (0.5, 1), (1, 1)]
    assert roc_curve([0.9, 0.8, 0.3, 0.1], [0, 0, 1, 1]).auc == 0.0
    t = roc_curve([0.4] * 5, [1, 0, 1, 0, 0])
    assert list(zip(t.fpr, t.tpr)) == [(0, 0), (1, 1)]  # one diagonal segment
    assert t.auc == 0.5
    assert t.thresholds[0] == np.inf and t.thresholds[1] == 0.4


def test_worked_example_by_hand():
    # scores 0.9(+) 0.8(-) 0.8(+) 0.3(-) 0.1(+); 3 true, 2 false.
    # tau below 0.9: TP 1 FP 0 -> (0, 1/3); below 0.8: TP 2 FP 1 -> (1/2, 2/3);
    # below 0.3: (1, 2/3); below 0.1: (1, 1). Trapezoids: 0 + 1/4 + 1/3 + 0 = 7/12.
    c = roc_curve([0.9, 0.8, 0.8, 0.3, 0.1], [1, 0, 1, 0, 1])
    np.testing.assert_allclose(c.fpr, [0, 0, 0.5, 1, 1])
    np.testing.assert_allclose(c.tpr, [0, 1 / 3, 2 / 3, 2 / 3, 1])
    assert c.auc == pytest.approx(7 / 12, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=2, max_size=40))
def test_matches_slow_references(pairs):
    scores = [s / 6 for s, _ in pairs]
    labels = [y for _, y in pairs]
    if all(labels) or not any(labels):
        with pytest.raises(DataError, match="undefined"):
            roc_curve(scores, labels)
        return
    c = roc_curve(scores, labels)
    assert c.auc == pytest.approx(mann_whitney_auc(scores, labels), abs=1e-12)
    assert np.allclose(np.c_[c.fpr, c.tpr], brute_points(scores, labels))
    assert len(c.fpr) == len(set(scores)) + 1
    assert np.all(np.diff(c.fpr) >= 0) and np.all(np.diff(c.tpr) >= 0)


def test_undirected_scores_and_labels():
    P = np.array([[0.0, 0.6, 0.1],
                  [0.3, 0.0, 0.0],
                  [0.2, 0.5, 0.0]])
    # pairs in triu order: {0,1}, {0,2}, {1,2}
    np.testing.assert_allclose(undirected_scores(P), [0.9, 0.3, 0.5])
    A = np.zeros((3, 3), bool)
    A[2, 1] = True  # only 2 -> 1: the pair {1, 2}
    assert undirected_labels(A).tolist() == [False, False, True]
    c = edge_roc(P, A)
    assert c.auc == pytest.approx(mann_whitney_auc([0.9, 0.3, 0.5], [0, 0, 1]))  # = 0.5


def write_edges(path, names, P):
    with open(path, "w") as fh:
        fh.write("parent,child,posterior\n")
        for u, a in enumerate(names):
            for v, b in enumerate(names):
                if u != v:
                    fh.write(f"{a},{b},{float(P[u, v])!r}\n")


def test_read_edges(tmp_path):
    rng = np.random.default_rng(0)
    names = ["b", "a", "c", "d"]
    P = rng.random((4, 4)) / 2
    np.fill_diagonal(P, 0)
    path = tmp_path / "e.csv"
    write_edges(path, names, P)
    got_names, got = read_edges(path)
    assert got_names == names
    np.testing.assert_array_equal(got, P)


@pytest.mark.parametrize("text, message", [
    ("from,to,p\n", "line 1: expected header"),
    ("parent,child,posterior\na,b,0.5\nb,a,0.5\na,b,0.1\n",
     "line 4, column 2: pair 'a' -> 'b' listed twice \\(first on line 2\\)"),
    ("parent,child,posterior\na,b,0.5\nb,a,x\n", "line 3, column 3: not a number"),
    ("parent,child,posterior\na,b,0.5\nb,a,0.1_2\n", "line 3, column 3: not a number: '0.1_2'"),
    ("parent,child,posterior\na,b,1.5\nb,a,0\n", r"line 2, column 3: posterior 1.5 is not in \[0, 1\]"),
    ("parent,child,posterior\na,b,0.5\nb,c,0.5\n", r"2 rows for 3 nodes; .* \(no row for a -> c\)"),
    ("parent,child,posterior\na,a,0.5\n", "line 2, column 2: self-loop"),
    # the two directions of a pair exclude each other: p(u->v) + p(v->u) <= 1
    ("parent,child,posterior\na,b,0.7\nb,a,0.4\n",
     r"e.csv, line 3, column 3: p\(b -> a\) \+ p\(a -> b\) = 0.4 \+ 0.7 \(line 2\) is more than 1"),
    ("parent,child,probability,se\na,b,0.5,0.1\nb,a,0.500000001000001,0.1\n", "line 3, column 3: .* more than 1"),
    ("parent,child,posterior\na,b,nan\nb,a,0\n", r"line 2, column 3: posterior nan is not in \[0, 1\]"),
    ("parent,child,posterior\na,b,-1e-12\nb,a,0\n", r"line 2, column 3: posterior -1e-12 is not in \[0, 1\]"),
    ("parent,child,posterior\na,b,0.5\nb,a,1.0000000001\n", r"line 3, column 3: posterior 1.0000000001 is not"),
    ("parent,child,posterior\na,b,inf\nb,a,0\n", r"line 2, column 3: posterior inf is not in"),
    ("parent,child,posterior\n,b,0.5\nb,,0.5\n", "line 2, column 1: empty node name"),
    ("parent,child,posterior\na,b\n", "line 2: expected 3 fields"),
])
def test_read_edges_errors(tmp_path, text, message):
    path = tmp_path / "e.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_edges(path)


def test_read_edges_pair_rounding(tmp_path):
    """Sums above 1 by the engine's round-off (about 1e-14 measured, 1e-9 documented) are
    read; a file bigbn writes holds its floats exactly (17 digits), so no more is allowed."""
    path = tmp_path / "e.csv"
    for q in (1e-14, 1e-9):
        path.write_text(f"parent,child,posterior\na,b,0.5\nb,a,{0.5 + q!r}\n")
        names, P = read_edges(path)
        assert P[0, 1] + P[1, 0] == 1 + q
    path.write_text("parent,child,posterior\na,b,0.5\nb,a,0.5000000011\n")
    with pytest.raises(DataError, match="more than 1"):
        read_edges(path)


def test_read_edges_learned_files(tmp_path):
    """Files bigbn writes are read back exactly, whatever their pairs' round-off."""
    from bigbn.api import learn

    rng = np.random.default_rng(5)
    x = rng.integers(0, 2, (200, 4))
    x[:, 1] = x[:, 0]  # a pair of (almost) certain adjacency: p(0->1) + p(1->0) = 1 - tiny
    x[:, 2] = np.where(rng.random(200) < 0.05, 1 - x[:, 1], x[:, 1])
    res = learn(x, max_parents=2, workers=1, scheduler="sync")
    res.to_csv(tmp_path / "edges.csv")
    names, P = read_edges(tmp_path / "edges.csv")
    np.testing.assert_array_equal(P, res.posterior)


def is_png(path):
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    width, height = struct.unpack(">II", data[16:24])
    import matplotlib.image

    img = matplotlib.image.imread(path)
    return width > 0 and height > 0 and img.shape[:2] == (height, width)


def test_cli_roc(tmp_path):
    rng = np.random.default_rng(3)
    names = [f"V{i}" for i in range(6)]
    A = np.zeros((6, 6), bool)
    for u, v in [(0, 1), (1, 2), (3, 2), (4, 5)]:
        A[u, v] = True
    P = np.clip(0.6 * A + 0.4 * rng.random((6, 6)), 0, 1) / 2
    np.fill_diagonal(P, 0)
    edges, truth = tmp_path / "edges.csv", tmp_path / "truth.csv"
    write_edges(edges, names, P)
    truth.write_text("parent,child\n" + "".join(f"{names[u]},{names[v]}\n" for u, v in zip(*np.nonzero(A))))
    png, curve = tmp_path / "roc.png", tmp_path / "curve.csv"
    res = CliRunner().invoke(roc, [str(edges), str(truth), "--plot", str(png), "--curve", str(curve)])
    assert res.exit_code == 0, res.output
    iu, ju = np.triu_indices(6, 1)
    ref = mann_whitney_auc(P[iu, ju] + P[ju, iu], A[iu, ju] | A[ju, iu])
    assert res.output.splitlines() == [f"AUC {ref:.6f}", f"wrote {png}", f"wrote {curve}"]
    assert is_png(png)
    # a run's work directory works as well as its edges file
    res = CliRunner().invoke(roc, [str(tmp_path), str(truth)])
    assert res.exit_code == 0 and res.output.strip() == f"AUC {ref:.6f}"
    res = CliRunner().invoke(roc, [str(tmp_path / "curve.csv"), str(truth)])
    assert res.exit_code != 0
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(roc, [str(tmp_path / "empty"), str(truth)])
    assert isinstance(res.exception, OptionError) and "without edges.csv" in str(res.exception)
    pts = np.loadtxt(curve, delimiter=",", skiprows=1)
    assert pts[0, :2].tolist() == [0, 0] and pts[-1, :2].tolist() == [1, 1]


def test_cli_roc_errors(tmp_path):
    edges, truth = tmp_path / "edges.csv", tmp_path / "truth.csv"
    write_edges(edges, ["a", "b", "c"], np.full((3, 3), 0.2))
    truth.write_text("parent,child\na,z\n")
    res = CliRunner().invoke(roc, [str(edges), str(truth)])
    assert isinstance(res.exception, DataError) and "unknown node 'z'" in str(res.exception)
    truth.write_text("parent,child\n")
    res = CliRunner().invoke(roc, [str(edges), str(truth)])
    assert isinstance(res.exception, DataError) and "undefined" in str(res.exception)


def test_cli_roc_output_in_a_missing_folder(tmp_path):
    """--plot/--curve in a folder that does not exist: refused before the AUC is computed
    (it printed the AUC, then failed on the write)."""
    edges, truth = tmp_path / "edges.csv", tmp_path / "truth.csv"
    write_edges(edges, ["a", "b", "c"], np.full((3, 3), 0.2))
    truth.write_text("parent,child\na,b\n")
    for flag in ("--plot", "--curve"):
        res = CliRunner().invoke(roc, [str(edges), str(truth), flag, str(tmp_path / "nodir" / "x.png")])
        assert isinstance(res.exception, OptionError) and "does not exist" in str(res.exception)
        assert "AUC" not in res.output
    assert not (tmp_path / "nodir").exists()


def test_cli_roc_of_a_dynamic_network_leaves_out_the_pairs_of_two_lagged_variables(tmp_path):
    """A dynamic run's edges have no pair into a lagged variable: two lagged variables are
    never joined, and counting their pair as a sure non-edge at score 0 raised the AUC."""
    names = ["A", "B", "A[t-1]", "B[t-1]"]
    score = {("A", "B"): 0.5, ("A[t-1]", "A"): 0.3, ("B[t-1]", "A"): 0.1, ("A[t-1]", "B"): 0.1,
             ("B[t-1]", "B"): 0.1}
    edges, truth = tmp_path / "edges.csv", tmp_path / "truth.csv"
    with open(edges, "w") as fh:
        fh.write("parent,child,posterior\n")
        for v in ("A", "B"):
            for u in names:
                if u != v:
                    fh.write(f"{u},{v},{score.get((u, v), 0.0)!r}\n")
    truth.write_text("parent,child\nA[t-1],A\n")
    res = CliRunner().invoke(roc, [str(edges), str(truth)])
    # five pairs the model can join, one true: ranked below 0.5, above the three 0.1s
    ref = mann_whitney_auc([0.5, 0.3, 0.1, 0.1, 0.1], [0, 1, 0, 0, 0])
    assert ref == 0.75 and res.exit_code == 0 and res.output == f"AUC {ref:.6f}\n", res.output
    truth.write_text("parent,child\nA,B[t-1]\n")
    res = CliRunner().invoke(roc, [str(edges), str(truth)])
    assert isinstance(res.exception, DataError)
    assert "line 2, column 2: arc 'A' -> 'B[t-1]' into a lagged variable" in str(res.exception)


def test_a_picture_name_of_another_format_is_refused_before_the_work(tmp_path):
    """`roc --plot roc.txt` printed the AUC, then failed; `plot --out h.png --graph g.txt`
    wrote the heatmap, then failed on the graph's name."""
    from bigbn.cli.tools import plot

    edges, truth = tmp_path / "edges.csv", tmp_path / "truth.csv"
    write_edges(edges, ["a", "b", "c"], np.full((3, 3), 0.2))
    truth.write_text("parent,child\na,b\n")
    res = CliRunner().invoke(roc, [str(edges), str(truth), "--plot", str(tmp_path / "roc.txt")])
    assert isinstance(res.exception, OptionError) and "picture format must be png, svg or pdf" in str(res.exception)
    assert "AUC" not in res.output
    res = CliRunner().invoke(plot, [str(edges), "--out", str(tmp_path / "h.png"), "--graph", str(tmp_path / "g.txt")])
    assert isinstance(res.exception, OptionError) and "unknown graph format 'txt'" in str(res.exception)
    res = CliRunner().invoke(plot, [str(edges), "--out", str(tmp_path / "h.txt"), "--graph", str(tmp_path / "g.dot")])
    assert isinstance(res.exception, OptionError) and "picture format" in str(res.exception)
    res = CliRunner().invoke(plot, [str(edges), "--out", str(tmp_path / "h.svg"), "--format", "png"])
    assert isinstance(res.exception, OptionError) and "--format is the format of --graph" in str(res.exception)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.csv", "truth.csv"]


def test_an_output_that_is_a_pipe_nothing_reads_is_refused_not_waited_on(tmp_path):
    """`roc --curve FIFO` and `--plot FIFO.png` waited forever for a reader."""
    import os

    edges, truth = tmp_path / "edges.csv", tmp_path / "truth.csv"
    write_edges(edges, ["a", "b", "c"], np.full((3, 3), 0.2))
    truth.write_text("parent,child\na,b\n")
    for flag, name in (("--curve", "c.csv"), ("--plot", "p.png")):
        os.mkfifo(tmp_path / name)
        res = CliRunner().invoke(roc, [str(edges), str(truth), flag, str(tmp_path / name)])
        assert isinstance(res.exception, OptionError), res.output
        assert "a named pipe that nothing reads" in str(res.exception)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1), st.integers(0, 3), st.booleans())
def test_edge_roc_of_a_matrix_matches_the_slow_pair_count(n, seed, lagged, quantize):
    """edge_roc (matrix -> pairs -> ranking), and `bigbn roc` of the files, against
    `naive.undirected_auc_by_pairs`; scores on a coarse grid give many ties. With lagged
    variables (a dynamic network: none of them a child), their pairs are left out."""
    import naive

    rng = np.random.default_rng(seed)
    lagged = min(lagged, n - 1)
    kids = n - lagged
    P = rng.random((n, n)) / 2
    if quantize:
        P = np.round(P * 4) / 8
    np.fill_diagonal(P, 0)
    P[:, kids:] = 0  # nothing into a lagged variable
    A = np.zeros((n, n), bool)
    order = rng.permutation(kids)
    for j, v in enumerate(order):  # a DAG: parents earlier in the order, or lagged ones
        for u in list(order[:j]) + list(range(kids, n)):
            A[u, v] = rng.random() < 0.3
    children = np.arange(n) < kids if lagged else None
    lab = A[np.triu_indices(n, 1)] | A.T[np.triu_indices(n, 1)]
    if children is not None:
        iu, ju = np.triu_indices(n, 1)
        lab = lab[children[iu] | children[ju]]
    if lab.all() or not lab.any():
        return  # ROC undefined (test_matches_slow_references covers the refusal)
    ref = naive.undirected_auc_by_pairs(P, A, lagged=range(kids, n))
    assert edge_roc(P, A, children).auc == pytest.approx(float(ref), abs=1e-12)
    # the same through the files `bigbn roc` reads (a dynamic run's: rows into slice t only)
    names = [f"V{i}" for i in range(kids)] + [f"V{i % kids}[t-{i // kids + 1}]" for i in range(lagged)]
    with tempfile.TemporaryDirectory() as tmp:
        edges, truth = os.path.join(tmp, "e.csv"), os.path.join(tmp, "t.csv")
        with open(edges, "w") as fh:
            fh.write("parent,child,posterior\n" + "".join(f"{names[u]},{names[v]},{float(P[u, v])!r}\n"
                                                         for u in range(n) for v in range(kids) if u != v))
        with open(truth, "w") as fh:
            fh.write("parent,child\n" + "".join(f"{names[u]},{names[v]}\n" for u, v in zip(*np.nonzero(A))))
        got, Q, ch = read_edges_and_children(edges)
        idx = [got.index(x) for x in names]
        assert (ch is None) == (lagged == 0) and (ch is None or ch[idx].tolist() == children.tolist())
        np.testing.assert_array_equal(Q[np.ix_(idx, idx)], P)
        res = CliRunner().invoke(roc, [edges, truth])
        assert res.exit_code == 0 and res.output == f"AUC {float(ref):.6f}\n", res.output
