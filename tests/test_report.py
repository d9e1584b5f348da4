"""`bigbn report`: one self-contained HTML page of a finished run, and `Result._repr_html_`.

The page is parsed (no browser needed): nothing it references lies outside it, every
section is there, and its numbers are the run's files' numbers. One test opens it in
headless Chromium when one is installed (CI has none: skipped)."""

from __future__ import annotations

import base64
import csv
import importlib.util
import json
import math
import re
import sys
from html.parser import HTMLParser
from itertools import permutations

import numpy as np
import pytest

import bigbn
from bigbn.errors import WorkdirError
from bigbn.outputs.report import _cycle, edge_rows, read_run, report_html, write_report
import helpers as h


class Page(HTMLParser):
    """Tags, attributes and text of an HTML page."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.refs, self.ids, self.images, self.text = [], [], set(), [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.refs += [(tag, k, v) for k, v in attrs if k in ("src", "href", "action", "srcset", "poster")]
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.images.append(a.get("src", ""))

    def handle_data(self, data):
        self.text.append(data)

    @property
    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished run with the MAP network, samples and effects (5 variables, 300 rows)."""
    tmp = tmp_path_factory.mktemp("report")
    data = tmp / "d.csv"
    assert h.cli("simulate", "--n", 5, "-k", 2, "--rows", 300, "--seed", 3, data).exit_code == 0
    wd = tmp / "w"
    assert h.cli("run", data, "-w", wd, "-q", "-k", 2, "--map").exit_code == 0
    assert h.cli("sample", "-w", wd, "--samples", 400, "--seed", 1).exit_code == 0
    assert h.cli("effects", "-w", wd).exit_code == 0
    return tmp, wd


def test_the_page_is_self_contained_and_holds_the_runs_numbers(run):
    tmp, wd = run
    out = tmp / "r.html"
    res = h.cli("report", wd, "--out", out, "--truth", tmp / "d.truth.csv", "--threshold", 0.3)
    assert res.exit_code == 0, res.output
    assert res.output == f"wrote {out}\n"
    page = Page(out.read_text(encoding="utf-8"))
    # nothing outside the page: no script, style sheet or frame; every src inline data, every href a fragment
    assert not {"script", "link", "iframe", "object", "embed"} & set(page.tags)
    for tag, attr, value in page.refs:
        assert value.startswith("data:" if attr == "src" else "#"), (tag, attr, value)
    assert "url(" not in out.read_text() and "@import" not in out.read_text()
    assert {"asked", "plan", "heatmap", "graph", "edges", "parent-sets", "map", "samples", "effects",
            "roc"} <= page.ids
    for src in page.images:  # two pictures, each a whole PNG
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    assert len(page.images) == 2
    words = page.words
    summary = json.loads((wd / "summary.json").read_text())
    assert f"log p(data) = {summary['log_marginal_likelihood']:.6f}" in words
    edges = list(csv.DictReader(open(wd / "edges.csv")))
    best = max(edges, key=lambda r: float(r["posterior"]))
    assert f"{best['parent']} {best['child']} {float(best['posterior']):.4f}" in words
    sets = list(csv.DictReader(open(wd / "parent_sets.csv")))
    first = sets[0]  # the first node's most probable parent set
    assert f"{float(first['posterior']):.3f} {{{', '.join(json.loads(first['parents']))}}}" in words
    arcs = list(csv.DictReader(open(wd / "map_dag.csv")))
    assert f"({len(arcs)} arcs" in words
    auc = re.search(r"AUC (\d\.\d+)", h.cli("roc", wd, tmp / "d.truth.csv").output).group(1)
    assert f"AUC {float(auc):.4f}" in words
    n_arcs = sum(float(r["posterior"]) >= 0.3 for r in edges)
    assert f"{n_arcs} arcs; width and darkness" in words
    assert "linear extensions" in words and "--prior dag-modular" in words
    assert "400 DAGs drawn from the exact posterior" in words
    assert f"data {tmp / 'd.csv'}" in words and "knowledge none" in words
    n_tasks = len((wd / "journal.jsonl").read_text().splitlines())
    assert f"journal: {n_tasks} tasks in 1 invocation" in words


def test_default_file_is_in_the_current_folder_not_the_run(run, tmp_path, monkeypatch):
    _, wd = run
    monkeypatch.chdir(tmp_path)
    res = h.cli("report", wd)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "w.report.html").is_file() and not (wd / "w.report.html").exists()


def test_plan_and_journal_rows_add_up(run):
    _, wd = run
    rf = read_run(wd)
    words = Page(report_html(rf)).words
    recs = [json.loads(x) for x in (wd / "journal.jsonl").read_text().splitlines()]
    for stage in ("forward", "backward", "gamma"):
        rs = [r for r in recs if r["stage"] == stage]
        secs = sum(r["seconds"] for r in rs)
        assert re.search(rf"{stage} {len(rs)} / {len(rs)} [^ ]+ s {secs:.2f} s", words), stage


def test_edge_rows_against_brute_force():
    rng = np.random.default_rng(1)
    n = 6
    names = [f"v{i}" for i in range(n)]
    raw = rng.random((n, n, 3))
    P = np.zeros((n, n))
    for u in range(n):
        for v in range(u + 1, n):
            w = raw[u, v] / raw[u, v].sum()
            P[u, v], P[v, u] = w[0], w[1]
    strongest, uncertain = edge_rows(names, P, top=5)
    ranked = sorted(((P[u, v], u, v) for u, v in permutations(range(n), 2)), reverse=True)[:5]
    assert [(a, b) for a, b, _, _ in strongest] == [(names[u], names[v]) for _, u, v in ranked]
    for u, v, p, adj in strongest:
        i, j = names.index(u), names.index(v)
        assert p == P[i, j] and adj == pytest.approx(P[i, j] + P[j, i])

    def entropy(u, v):
        ps = [P[u, v], P[v, u], 1 - P[u, v] - P[v, u]]
        return -sum(x * math.log(x) for x in ps if x > 0)

    want = sorted(((entropy(u, v), u, v) for u in range(n) for v in range(u + 1, n)), reverse=True)[:5]
    assert [{a, b} for a, b, *_ in uncertain] == [{names[u], names[v]} for _, u, v in want]
    for a, b, pa, pb, none in uncertain:  # the likelier direction first
        assert pa >= pb and pa + pb + none == pytest.approx(1)


def test_cycle_finder_against_networkx():
    nx = pytest.importorskip("networkx")
    rng = np.random.default_rng(2)
    for trial in range(200):
        n = int(rng.integers(2, 7))
        adj = rng.random((n, n)) < rng.random() * 0.5
        names = [str(i) for i in range(n)]
        g = nx.DiGraph([(u, v) for u in range(n) for v in range(n) if u != v and adj[u, v]])
        g.add_nodes_from(range(n))
        cyc = _cycle(names, adj)
        assert (cyc is not None) == (not nx.is_directed_acyclic_graph(g)), trial
        if cyc is not None:
            assert cyc[0] == cyc[-1]
            assert all(adj[int(a), int(b)] for a, b in zip(cyc, cyc[1:]))


def test_a_threshold_whose_arcs_hold_a_cycle_is_said(run):
    _, wd = run
    rf = read_run(wd)
    n = len(rf.names)
    rf.posterior = np.full((n, n), 0.45) - np.diag(np.full(n, 0.45))  # every pair both ways
    words = Page(report_html(rf, threshold=0.4)).words
    assert "hold a directed cycle" in words
    assert "hold a directed cycle" not in Page(report_html(rf, threshold=0.5)).words
    from bigbn.outputs.strength import averaged_arcs

    kept, skipped = averaged_arcs(rf.posterior, 0.4)  # the averaged DAG keeps n - 1 arcs of a chain
    assert len(kept) == n * (n - 1) // 2 and skipped
    assert "The averaged DAG at 0.4 ( Result.averaged(0.4) ; bnlearn's averaged.network reads the run's " \
           f"strength.csv): {len(kept)} arcs" in words and "to stay acyclic it skips" in words


def test_a_run_that_is_not_finished_is_one_line(tmp_path):
    res = h.cli("report", tmp_path / "nothing")
    assert res.exit_code == 1 and res.output.count("\n") == 1 and "no finished run here" in res.output
    with pytest.raises(WorkdirError, match="no finished run"):
        write_report(tmp_path, tmp_path / "r.html")


def _edit(path, old, new):
    path.write_text(path.read_text().replace(old, new, 1))


def _cut_last_line(path):
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _npz_field(path, key, change):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[key] = change(arrays[key])
    with path.open("wb") as fh:
        np.savez(fh, **arrays)


def _first_row_field(path, column, value):
    rows = list(csv.reader(path.open(newline="")))
    rows[1][rows[0].index(column)] = value
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)


@pytest.mark.parametrize("damage, where", [
    (lambda w: _edit(w / "map_dag.csv", "parent,child", "a,b"), "map_dag.csv, line 2, column parent"),
    (lambda w: _first_row_field(w / "edges.csv", "posterior", "1.5"), "edges.csv, line 2, column posterior"),
    (lambda w: _first_row_field(w / "edges.csv", "posterior", "nan"), "edges.csv, line 2, column posterior"),
    (lambda w: _first_row_field(w / "edges.csv", "child", "X1"), "edges.csv: a row that is not"),
    (lambda w: _edit(w / "summary.json", '"plan": {', '"plan": "x", "was": {'), 'summary.json: "plan" is not'),
    (lambda w: _edit(w / "samples-order-modular" / "dags.csv", "rank,", "position,"), "dags.csv, line 2, column rank"),
    (lambda w: _first_row_field(w / "samples-order-modular" / "ancestors.csv", "probability", "x"),
     "ancestors.csv, line 2, column probability"),
    # samples.npz, checked as bigbn.open checks it (the page showed the CSV files' samples beside it)
    (lambda w: _truncate(w / "samples-order-modular" / "samples.npz"), "samples-order-modular is damaged ("),
    (lambda w: (w / "samples-order-modular" / "samples.npz").write_bytes(b"PK\x03\x04 not a zip"),
     "samples-order-modular is damaged (BadZipFile)"),
    (lambda w: (w / "samples-order-modular" / "samples.npz").unlink(), "samples-order-modular is damaged (FileNot"),
    (lambda w: _npz_field(w / "samples-order-modular" / "samples.npz", "weights", lambda x: x * 2),
     "samples-order-modular is damaged (weights that are not the order-modular prior's)"),
    (lambda w: _first_row_field(w / "effects.csv", "p_zero", "2"), "effects.csv, line 2, column p_zero"),
    (lambda w: _cut_last_line(w / "effects.csv"), "effects.csv: the rows of"),  # was a change from a cell of 0
    (lambda w: _first_row_field(w / "effects.csv", "probability", "0.5"), "effects.csv: the rows of"),
    # were tracebacks: parents that are not names, and run.json's knowledge of another type
    (lambda w: _first_row_field(w / "parent_sets.csv", "parents", "[1, 2]"), "parent_sets.csv: a damaged row"),
    (lambda w: _first_row_field(w / "parent_sets.csv", "parents", '["nope"]'), "parent_sets.csv: a damaged row"),
    (lambda w: _edit(w / "run.json", '"constraints": {}', '"constraints": 5'), "run.json: its knowledge"),
    (lambda w: _edit(w / "run.json", '"constraints": {}', '"constraints": {"require": [[0, 99]]}'),
     "run.json: its knowledge"),
    (lambda w: _edit(w / "run.json", '"constraints": {}', '"constraints": {}, "tiers": 5'), "run.json: its knowledge"),
])
def test_a_damaged_file_of_the_run_is_one_line_naming_it(run, tmp_path, damage, where):
    """The page reads the run's CSV and JSON files: a damaged one (an edit, another
    program's) was a traceback (a missing column, a posterior of 1.5 in the heatmap) or
    an impossible number on the page (a posterior of nan or a loop); now one line naming
    the file, line and column."""
    import shutil

    _, done = run
    wd = tmp_path / "w"
    shutil.copytree(done, wd)
    damage(wd)
    res = h.cli("report", wd, "--out", tmp_path / "r.html")
    assert res.exit_code == 1 and res.output.count("\n") == 1 and where in res.output, res.output
    assert not (tmp_path / "r.html").exists()


def test_a_dag_modular_posterior_past_one_is_no_damage(run, tmp_path):
    """Under the DAG-modular prior a DAG's posterior is Π β over an estimated normaliser,
    which may pass 1: the page takes it (the checks of the files must not refuse it)."""
    import shutil

    _, done = run
    wd = tmp_path / "w"
    shutil.copytree(done, wd)
    assert h.cli("sample", "-w", wd, "--samples", 50, "--prior", "dag-modular").exit_code == 0
    _first_row_field(wd / "samples-dag-modular" / "dags.csv", "estimated_posterior", "1.5")
    res = h.cli("report", wd, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output


def test_without_matplotlib_the_tables_remain(run, monkeypatch):
    _, wd = run
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    page = Page(report_html(read_run(wd)))
    assert not page.images and "matplotlib is not installed" in page.words
    assert "parent-sets" in page.ids


def test_repr_html_is_a_compact_table(run):
    _, wd = run
    res = bigbn.learn(wd.parent / "d.csv", max_parents=2, workdir=wd, map_dag=True)
    page = Page(res._repr_html_())
    assert page.tags.count("table") == 1 and page.tags.count("tr") == 1 + 8
    u, v, p = res.edges()[0]
    assert f"{u} {v} {p:.4f}" in page.words and f"log p(data) = {res.log_marginal:.6f}" in page.words
    assert "MAP network" in page.words  # the workdir holds it


@pytest.mark.skipif(importlib.util.find_spec("PIL") is None, reason="Pillow")
def test_the_page_renders_in_headless_chromium(run, tmp_path):
    spec = importlib.util.spec_from_file_location("screenshot_report", h.ROOT / "scripts" / "screenshot_report.py")
    shot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shot)
    if shot.browser() is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    _, wd = run
    page = write_report(wd, tmp_path / "r.html")
    assert shot.outside_references(page.read_text()) == []
    messages = shot.render(page, tmp_path / "r.png", 1000, 1400)
    assert messages == []
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "r.png").convert("L"), dtype=float)
    assert img.shape == (1400, 1000) and img.std() > 10  # something is drawn


def test_a_tiered_runs_page_names_its_tiers(run, tmp_path):
    tmp, _ = run
    tiers = tmp_path / "tiers.csv"
    tiers.write_text("node,tier\nX1,1\nX2,1\nX3,2\nX4,2\nX5,2\n")
    wd = tmp_path / "t"
    assert h.cli("run", tmp / "d.csv", "-w", wd, "-q", "-k", 2, "--tiers", tiers).exit_code == 0
    out = tmp_path / "t.html"
    assert h.cli("report", wd, "--out", out).exit_code == 0
    page = Page(out.read_text())
    assert "knowledge tiers (2): {X1, X2} < {X3, X4, X5}" in page.words
    assert "Lines mark the tiers" in page.words and len(page.images) == 2
    assert re.search(r"2 lattices \(2 tiers\)", page.words)


def test_a_time_series_runs_page(tmp_path):
    """edges.csv of a time series run holds the edges into slice t only; the report read it
    as damaged ('6 rows, the run has 12 edges; run again', which rewrote the same file)."""
    series = tmp_path / "ts.csv"
    series.write_text("s,A,B\n" + "".join(f"{i // 10},{'xy'[i * 7 // 3 % 2]},{'uv'[i * 5 // 2 % 2]}\n"
                                          for i in range(30)))
    wd = tmp_path / "t"
    assert h.cli("run", series, "--series-column", "s", "-w", wd, "-q").exit_code == 0
    out = tmp_path / "t.html"
    r = h.cli("report", wd, "--out", out)
    assert r.exit_code == 0, r.output
    assert "A[t-1]" in Page(out.read_text()).words
    rf = read_run(wd)
    assert np.array_equal(rf.posterior, bigbn.open(wd).posterior)


@pytest.mark.filterwarnings("ignore:Glyph")  # the pictures draw \x85 as a box
def test_control_characters_in_names_are_shown_escaped_and_markup_is_text(tmp_path):
    """A bell, an ESC, a DEL, a C1 control or U+202E (right-to-left override) in a column
    name, or in the run's folder name, went into the page as it was: invisible, a box, a
    character HTML forbids, or the rest of a cell turned around. Now each is its escape
    (\\x07, \\u202e), as the pictures show control characters; markup in a name is text."""
    import pandas as pd

    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, 200)
    b = np.where(rng.random(200) < 0.9, a, 1 - a)
    # (a C0 or C1 control or DEL is no part of a column name: refused when the data are read)
    names = ["a\u2066b\u202a[31m", "<i>\"q\"&'x'</i>", "r\u202el\u200f"]
    df = pd.DataFrame({names[0]: a.astype(str), names[1]: b.astype(str),
                       names[2]: rng.integers(0, 2, 200).astype(str)})
    wd = tmp_path / "run\x07"
    res = bigbn.learn(df, workdir=wd, max_parents=1, map_dag=True)
    for text in (report_html(read_run(wd), threshold=0.2), res._repr_html_()):
        bad = re.findall("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2028\u2029]", text)
        assert bad == []
        page = Page(text)
        assert "<i>" not in text and not {"i", "script"} & set(page.tags)
        words = page.words
        assert "a\\u2066b\\u202a[31m" in words and "r\\u202el\\u200f" in words and "<i>\"q\"&'x'</i>" in words
    assert "bigbn report: run\\x07" in Page(report_html(read_run(wd))).words


def test_a_journal_record_with_a_pid_of_another_type_is_not_counted(run, tmp_path):
    """The journal's reader checks a record's task, stage, CRC and times, not its pid: an
    edited pid (a list) was a TypeError traceback out of the plan's section; such a record
    counts for no invocation."""
    import shutil

    _, done = run
    wd = tmp_path / "w"
    shutil.copytree(done, wd)
    lines = (wd / "journal.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    recs[0]["pid"] = [1, 2]
    (wd / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = h.cli("report", wd, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    assert f"journal: {len(recs)} tasks in 1 invocation" in Page((tmp_path / "r.html").read_text()).words


@pytest.mark.parametrize("cmd, name", [("report", "r.html"), ("export", "m.bif"), ("export", "m.bif.gz"),
                                       ("export", "m.xml")])
def test_an_output_that_is_a_pipe_nothing_reads_is_refused_not_waited_on(run, tmp_path, cmd, name):
    """`report -o FIFO` and `export -o FIFO` (BIF, gzipped BIF, XMLBIF) waited forever for a
    reader of the pipe once the page or the network was formed. The command runs on a
    thread: one still waiting after 20 s fails the test, and a reader opened then lets it end."""
    import os
    import threading

    _, wd = run
    fifo = tmp_path / name
    os.mkfifo(fifo)
    args = [cmd, wd, "-o", fifo] + (["--format", "xmlbif"] if name.endswith(".xml") else [])
    got = []
    th = threading.Thread(target=lambda: got.append(h.cli(*args)), daemon=True)
    th.start()
    th.join(20)
    if th.is_alive():
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        th.join(20)
        os.close(fd)
        pytest.fail(f"bigbn {cmd} -o FIFO waited for a reader")
    assert got[0].exit_code == 1 and "a named pipe that nothing reads" in got[0].output, got[0].output


def test_results_csv_files_quote_a_name_with_a_carriage_return(tmp_path):
    """strength.csv, parent_sets.csv, the samples' CSV files and the knowledge files were
    written by csv.writer with lineterminator "\\n", which leaves a carriage return in a name
    bare (2ef51c2 fixed effects.csv alone): csv.reader ends the row there, and `bigbn report`
    called parent_sets.csv damaged, advising a rerun that wrote the same file. A name can no
    longer hold one (refused where names are read, `io.data.check_name`), but one writer
    (`result.csv_line`) quotes what must be quoted: each row reads back whole, with names
    holding a comma, a quote and a bidi mark as given."""
    import numpy as np

    import bigbn
    from bigbn.outputs.report import write_report
    from bigbn.outputs.samples import write_outputs

    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (200, 3))
    X[:, 1] = X[:, 0] ^ (rng.random(200) < 0.1)
    names = ["a\u200fb", "c,d", 'e"f']
    wd = tmp_path / "w"
    bigbn.learn(X, names=names, max_parents=2, workdir=wd)
    write_outputs(bigbn.sample(wd, samples=300, seed=1), wd)
    files = bigbn.Knowledge(tiers=[["a\u200fb"], ["c,d", 'e"f']], edge_prob={("c,d", 'e"f'): 0.3}).write(tmp_path / "k")
    width = {"strength.csv": 4, "parent_sets.csv": 3, "edges.csv": 5, "ancestors.csv": 4,
             "markov_blanket.csv": 4, "tiers.csv": 2, "forbid.csv": 2, "edge_prob.csv": 3}
    paths = [wd / "strength.csv", wd / "parent_sets.csv", *files.values(),
             *(wd / "samples-order-modular" / f for f in ("edges.csv", "ancestors.csv", "markov_blanket.csv"))]
    for path in paths:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        assert {len(r) for r in rows} == {width[path.name]}, path
        assert {c for r in rows[1:] for c in r[:2]} & set(names), path
        if path.name != "parent_sets.csv":
            assert {c for r in rows[1:] for c in r[:2]} <= set(names) | {str(j) for j in range(3)}, path
    assert write_report(wd, tmp_path / "r.html").exists()
    assert bigbn.Knowledge.from_files(names, 2, **{k: str(p) for k, p in files.items()}).edge_prob
