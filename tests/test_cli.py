"""The command line (`bigbn run` and friends): success output, files, one-line errors, help.

Most tests go through click's CliRunner; a few run the real console script / ``python -m
bigbn.cli.main`` in a subprocess, so that the installed entry point, exit codes and the stderr
a user actually sees are covered too. Every bad input must give a non-zero exit, exactly one
line starting ``Error:`` on stderr naming the file (and row and column where they apply),
and never a traceback.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
from bigbn.cli.main import main
import helpers as h

ROOT = Path(__file__).resolve().parent.parent
ASIA = ROOT / "examples" / "asia.csv"
ASIA_NAMES = ["asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def read_edges(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [(p, c, float(x)) for p, c, x in rows[1:]]


def read_truth():
    with open(ROOT / "examples" / "asia.truth.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [tuple(r) for r in rows[1:]]


def assert_one_line_error(result, *needles, usage_ok=False):
    """Non-zero exit, exactly one 'Error:' line on stderr containing every needle, no traceback."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"uncaught {result.exception!r}"
    err = result.stderr
    assert "Traceback" not in err and "Traceback" not in result.stdout
    error_lines = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    assert len(error_lines) == 1, err
    if not usage_ok:  # a library error: that one line is all of stderr but bigbn's
        # "[bigbn] ..." progress and first-run lines, which come before any work fails
        assert [ln for ln in err.strip().splitlines() if not ln.startswith("[bigbn] ")] == error_lines, err
    for needle in needles:
        assert needle in error_lines[0], (needle, error_lines[0])
    return error_lines[0]


# ------------------------------------------------------------------------------ success


@pytest.fixture(scope="module")
def asia_run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("asia") / "wd"
    result = invoke("run", ASIA, "--workdir", wd, "-k", 2)
    return wd, result


def test_run_asia_prints_log_px_and_edges(asia_run):
    wd, result = asia_run
    assert result.exit_code == 0, result.output
    out = result.stdout
    summary = json.loads((wd / "summary.json").read_text())
    assert "n = 8 variables, m = 2000 rows, k = 2" in out
    assert f"log p(data) = {summary['log_marginal_likelihood']:.6f}" in out
    header, edges = read_edges(wd / "edges.csv")
    assert header == ["parent", "child", "posterior"]
    assert len(edges) == 8 * 7
    assert {p for p, _, _ in edges} == set(ASIA_NAMES)
    # The printed top edges are the 10 most probable rows of edges.csv, highest first.
    printed = [ln.split() for ln in out.splitlines() if "->" in ln]
    assert len(printed) == 10
    top = sorted(edges, key=lambda e: -e[2])[:10]
    for (p_txt, parent, arrow, child), (p, c, x) in zip(printed, top):
        assert (parent, arrow, child) == (p, "->", c)
        assert float(p_txt) == pytest.approx(x, abs=5e-5)
    assert str(wd / "edges.csv") in out
    # The data were sampled from the asia network: its strongest edges (undirected) are
    # found, and true edges score higher on average than absent ones.
    post = {(p, c): x for p, c, x in edges}
    und = lambda a, b: post[a, b] + post[b, a]  # noqa: E731
    for a, b in [("either", "xray"), ("bronc", "dysp"), ("either", "dysp"),
                 ("lung", "either"), ("tub", "either")]:
        assert und(a, b) > 0.9, (a, b)
    _, truth = read_truth()
    pairs = {frozenset(e) for e in truth}
    others = {frozenset((a, b)) for a in ASIA_NAMES for b in ASIA_NAMES if a != b} - pairs
    mean = lambda ps: sum(und(*sorted(p)) for p in ps) / len(ps)  # noqa: E731
    assert mean(pairs) > 0.6 > 0.1 > mean(others)


def test_run_matches_the_python_api(asia_run):
    wd, result = asia_run
    assert result.exit_code == 0
    res = bigbn.learn(ASIA, max_parents=2)  # same defaults: BDeu ess 1, koivisto-sood
    _, edges = read_edges(wd / "edges.csv")
    idx = {nm: j for j, nm in enumerate(res.names)}
    for p, c, x in edges:
        assert x == res.posterior[idx[p], idx[c]]
    summary = json.loads((wd / "summary.json").read_text())
    assert summary["log_marginal_likelihood"] == res.log_marginal
    assert summary["options"]["score"] == "bdeu" and summary["options"]["max_parents"] == 2


def test_rerun_resumes_and_top_option(asia_run):
    wd, first = asia_run
    before = (wd / "journal.jsonl").read_text()
    again = invoke("run", ASIA, "--workdir", wd, "-k", 2, "--top", 3, "-q")
    assert again.exit_code == 0, again.output
    assert (wd / "journal.jsonl").read_text() == before
    assert sum("->" in ln for ln in again.stdout.splitlines()) == 3
    log_line = [ln for ln in first.stdout.splitlines() if ln.startswith("log p(data)")]
    assert log_line and log_line[0] in again.stdout
    assert again.stderr == ""  # -q: no progress lines
    assert "already finished" in again.stdout and "already finished" not in first.stdout


def test_progress_lines_without_a_terminal(asia_run):
    _, result = asia_run
    assert "[bigbn] edges:" in result.stderr  # plain log lines, not tqdm bars
    assert "Error" not in result.stderr


def test_bom_crlf_quotes_and_spaces_are_read(tmp_path):
    # Same records written plainly and with BOM, CRLF, quoted names, padded cells, blank lines.
    rng = np.random.default_rng(4)
    X = rng.integers(0, 3, size=(60, 3))
    plain = "p,q r,s\n" + "".join(",".join(map(str, r)) + "\n" for r in X.tolist())
    fancy = ("\ufeffp ,\"q r\", s\r\n\r\n"
             + "".join(" , ".join(map(str, r)) + "\r\n" for r in X.tolist()) + "\r\n\r\n")
    write(tmp_path / "plain.csv", plain)
    (tmp_path / "fancy.csv").write_bytes(fancy.encode("utf-8"))
    for name in ("plain", "fancy"):
        result = invoke("run", tmp_path / f"{name}.csv", "-w", tmp_path / name, "-q")
        assert result.exit_code == 0, result.output
    assert (tmp_path / "plain" / "edges.csv").read_text() == \
        (tmp_path / "fancy" / "edges.csv").read_text()
    assert "q r" in (tmp_path / "fancy" / "edges.csv").read_text()


# ------------------------------------------------------------------------------ bad input


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _wide(tmp):
    rng = np.random.default_rng(0)
    rows = [",".join(f"c{j}" for j in range(41))]
    rows += [",".join(str(v) for v in r) for r in rng.integers(0, 2, size=(30, 41)).tolist()]
    return write(tmp / "wide.csv", "\n".join(rows) + "\n")


def _ident(tmp):
    return write(tmp / "ident.csv",
                 "id,b\n" + "".join(f"id{i},{i % 2}\n" for i in range(20)))


BAD_DATA = {
    # name: (make(tmp) -> path, substrings the error line must contain)
    "missing file": (lambda t: t / "nope.csv", ["nope.csv"]),
    "empty file": (lambda t: write(t / "e.csv", ""), ["e.csv", "empty"]),
    "blank file": (lambda t: write(t / "b.csv", "\n  \n"), ["b.csv", "empty"]),
    "header only": (lambda t: write(t / "h.csv", "a,b,c\n"), ["h.csv", "no data rows"]),
    "ragged row": (lambda t: write(t / "r.csv", "a,b\n1,2\n0,1\n1\n"), ["r.csv", "row 4"]),
    "too many fields": (lambda t: write(t / "r2.csv", "a,b\n1,2,3\n"), ["r2.csv", "row 2"]),
    "empty cell": (lambda t: write(t / "c.csv", "a,b\n1,2\n1,\n"),
                   ["c.csv", "row 3", "column 'b'", "empty cell"]),
    "NA cell": (lambda t: write(t / "na.csv", "a,b\n1,2\n\nNA,1\n"),
                ["na.csv", "row 4", "column 'a'", "NA"]),
    "question mark cell": (lambda t: write(t / "q.csv", "a,b\n1,?\n"),
                           ["q.csv", "row 2", "column 'b'"]),
    "duplicate column names": (lambda t: write(t / "d.csv", "a,b,a\n1,2,3\n"),
                               ["d.csv", "duplicate", "'a'"]),
    "empty column name": (lambda t: write(t / "en.csv", "a,,c\n1,2,3\n"),
                          ["en.csv", "column 2", "empty column name"]),
    "one column": (lambda t: write(t / "one.csv", "a\n1\n2\n"), ["one.csv", "2 columns"]),
    "pipes": (lambda t: write(t / "pipe.csv", "a|b\n1|2\n"), ["pipe.csv", "commas, tabs or semicolons"]),
    "identifier column": (_ident, ["ident.csv", "column 'id'", "identifier"]),
    "more than 40 columns": (_wide, ["wide.csv", "41 columns", "40"]),
    "not utf-8": (lambda t: (t / "lat.csv").write_bytes(b"a,b\n\xe9,1\n") and t / "lat.csv",
                  ["lat.csv", "row 2", "UTF-8"]),
    "a directory": (lambda t: (t / "dir.csv").mkdir() or t / "dir.csv", ["dir.csv"]),
}


@pytest.mark.parametrize("case", list(BAD_DATA))
def test_bad_data_file(tmp_path, case):
    make, needles = BAD_DATA[case]
    path = make(tmp_path)
    result = invoke("run", path, "--workdir", tmp_path / "wd", "-q")
    assert_one_line_error(result, *needles, usage_ok=(case == "a directory"))


BAD_OPTIONS = {
    # name: (extra args, substrings of the error line)
    "bad --memory": (["--memory", "4X"], ["--memory", "4X"]),
    "zero --workers": (["--workers", "0"], ["--workers", "0"]),
    "negative -k": (["-k", "-1"], ["--max-parents", "-1"]),
    "--score bge on discrete strings": (["--score", "bge"],
                                        ["asia.csv", "row 2", "column 'asia'", "'no'"]),
    "non-positive --ess": (["--ess", "0"], ["ess", "0"]),
    "negative --workers": (["--workers", "-2"], ["--workers", "-2"]),
    "bad --chunk-bits": (["--chunk-bits", "0"], ["--chunk-bits", "0"]),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_bad_options(tmp_path, case):
    args, needles = BAD_OPTIONS[case]
    result = invoke("run", ASIA, "--workdir", tmp_path / "wd", "-q", *args)
    assert_one_line_error(result, *needles)


def test_unknown_score_is_a_usage_error(tmp_path):
    result = invoke("run", ASIA, "--workdir", tmp_path / "wd", "--score", "bic")
    assert result.exit_code == 2
    assert_one_line_error(result, "--score", usage_ok=True)


def edge_file(tmp, name, rows, header="parent,child"):
    return write(tmp / name, header + "\n" + "".join(",".join(r) + "\n" for r in rows))


def test_forbid_file_with_unknown_node(tmp_path):
    f = edge_file(tmp_path, "forbid.csv", [("asia", "tub"), ("smoke", "nosuch")])
    result = invoke("run", ASIA, "-w", tmp_path / "wd", "--forbid", f)
    assert_one_line_error(result, "forbid.csv", "line 3", "column child", "'nosuch'")


def test_forbid_file_with_wrong_header(tmp_path):
    f = edge_file(tmp_path, "forbid.csv", [("asia", "tub")], header="from,to")
    result = invoke("run", ASIA, "-w", tmp_path / "wd", "--forbid", f)
    assert_one_line_error(result, "forbid.csv", "line 1", "parent,child")


def test_missing_forbid_file(tmp_path):
    result = invoke("run", ASIA, "-w", tmp_path / "wd", "--forbid", tmp_path / "gone.csv")
    assert_one_line_error(result, "gone.csv")


def test_required_cycle(tmp_path):
    f = edge_file(tmp_path, "req.csv", [("asia", "tub"), ("tub", "either"), ("either", "asia")])
    result = invoke("run", ASIA, "-w", tmp_path / "wd", "--require", f)
    assert_one_line_error(result, "cycle", "asia", "tub", "either")


def test_forbid_and_require_the_same_edge(tmp_path):
    f = edge_file(tmp_path, "e.csv", [("smoke", "lung")])
    result = invoke("run", ASIA, "-w", tmp_path / "wd", "--require", f, "--forbid", f)
    assert_one_line_error(result, "smoke", "lung", "required", "forbidden")


def test_corrected_command_runs_in_the_workdir_of_a_refused_run(tmp_path):
    f = edge_file(tmp_path, "req.csv", [("asia", "tub"), ("tub", "either"), ("either", "asia")])
    wd = tmp_path / "wd"
    assert invoke("run", ASIA, "-w", wd, "-k", 2, "--require", f).exit_code == 1
    ok = edge_file(tmp_path, "ok.csv", [("asia", "tub")])
    result = invoke("run", ASIA, "-w", wd, "-k", 2, "-q", "--require", ok)
    assert result.exit_code == 0, result.output


def test_forbid_and_require_change_the_posteriors(tmp_path):
    # Constraints read from files really reach the engine (named by column names).
    forbid = edge_file(tmp_path, "f.csv", [("smoke", "lung"), ("lung", "smoke")])
    require = edge_file(tmp_path, "r.csv", [("asia", "tub")])
    wd = tmp_path / "wd"
    result = invoke("run", ASIA, "-w", wd, "-k", 2, "-q", "--forbid", forbid, "--require", require)
    assert result.exit_code == 0, result.output
    post = {(p, c): x for p, c, x in read_edges(wd / "edges.csv")[1]}
    assert post["smoke", "lung"] == 0.0 and post["lung", "smoke"] == 0.0
    assert post["asia", "tub"] == pytest.approx(1.0, abs=1e-12)
    assert post["tub", "asia"] == 0.0


def test_workdir_that_is_a_file(tmp_path):
    f = write(tmp_path / "afile", "x")
    result = invoke("run", ASIA, "--workdir", f)
    assert_one_line_error(result, "afile", usage_ok=True)
    assert f.read_text() == "x"


def test_workdir_inside_a_file(tmp_path):
    f = write(tmp_path / "afile", "x")
    result = invoke("run", ASIA, "--workdir", f / "sub")
    assert_one_line_error(result, "afile")


@pytest.mark.slow
def test_workdir_of_another_run_needs_fresh(tmp_path):
    # In a real process per command (as a user runs it); see also test_api's in-process
    # variant of --fresh.
    wd = tmp_path / "wd"
    shutil.copy(ASIA, tmp_path / "asia.csv")
    cmd = console_script() + ["run", "-w", "wd", "-k", "1", "-q"]
    assert run_proc(cmd + ["asia.csv"], tmp_path).returncode == 0
    write(tmp_path / "other.csv",
          "x,y,z\n" + "".join(f"{i % 2},{i % 3 % 2},{(i // 2) % 2}\n" for i in range(40)))
    p = run_proc(cmd + ["other.csv"], tmp_path)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), p.stderr
    assert "wd" in lines[0] and "the data differ" in lines[0] and "--fresh" in lines[0]
    # The refused run did not damage the old one.
    assert {e[0] for e in read_edges(wd / "edges.csv")[1]} == set(ASIA_NAMES)
    p = run_proc(cmd + ["other.csv", "--fresh"], tmp_path)
    assert p.returncode == 0, p.stderr
    _, edges = read_edges(wd / "edges.csv")
    assert len(edges) == 6 and {e[0] for e in edges} == {"x", "y", "z"}
    assert json.loads((wd / "summary.json").read_text())["n"] == 3


def test_workdir_of_another_run_refused_in_process(tmp_path):
    wd = tmp_path / "wd"
    assert invoke("run", ASIA, "-w", wd, "-k", 1, "-q").exit_code == 0
    other = write(tmp_path / "other.csv",
                  "x,y,z\n" + "".join(f"{i % 2},{i % 3 % 2},{(i // 2) % 2}\n" for i in range(40)))
    result = invoke("run", other, "-w", wd, "-k", 1, "-q")
    line = assert_one_line_error(result, str(wd), "--fresh")
    assert "the data differ" in line


def test_same_data_other_options_names_the_option(tmp_path):
    wd = tmp_path / "wd"
    assert invoke("run", ASIA, "-w", wd, "-k", 1, "-q").exit_code == 0
    result = invoke("run", ASIA, "-w", wd, "-k", 1, "-q", "--score", "k2")
    assert_one_line_error(result, "score", "k2", "--fresh")


# ------------------------------------------------------------------------------ help


def all_commands():
    return sorted(main.commands)


def test_every_command_has_an_example():
    # Like sqlite-utils' test_docs: the help text is part of the interface.
    runner = CliRunner()
    top = runner.invoke(main, ["--help"])
    assert top.exit_code == 0 and "Example" in top.stdout
    assert "run" in all_commands()
    for name in all_commands():
        assert name in top.stdout, f"{name} missing from bigbn --help"
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Example" in result.stdout, f"bigbn {name} --help has no Example"
        assert "-h, --help" in result.stdout


@pytest.mark.parametrize("name", sorted(main.commands))
def test_examples_in_help_name_real_options(name):
    """Every command's help has an example, and every option an example uses is one the
    command has (a renamed option would leave a stale example behind)."""
    cmd = main.commands[name]
    help_text = CliRunner().invoke(main, [name, "--help"]).stdout
    examples = [line.split() for line in help_text.splitlines() if line.strip().startswith(f"bigbn {name}")]
    assert examples, f"`bigbn {name} --help` shows no example"
    known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    for words in examples:
        used = [w.split("=", 1)[0] for w in words if w.startswith("-")]
        assert used and set(used) <= known, (words, set(used) - known)


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and bigbn.__version__ in result.stdout


# ------------------------------------------------------------------------------ subprocess


def console_script():
    exe = Path(sys.executable).parent / "bigbn"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "bigbn.cli"]


def run_proc(args, cwd):
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_subprocess_run_asia(tmp_path):
    shutil.copy(ASIA, tmp_path / "asia.csv")
    p = run_proc(console_script() + ["run", "asia.csv", "--workdir", "wd", "-k", "2"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "log p(data) = " in p.stdout
    log_px = float(p.stdout.split("log p(data) = ")[1].split()[0])
    summary = json.loads((tmp_path / "wd" / "summary.json").read_text())
    assert math.isclose(log_px, summary["log_marginal_likelihood"], abs_tol=1e-6)
    assert sum("->" in ln for ln in p.stdout.splitlines()) == 10
    header, edges = read_edges(tmp_path / "wd" / "edges.csv")
    assert header == ["parent", "child", "posterior"] and len(edges) == 56
    assert "Traceback" not in p.stderr


def test_subprocess_default_workdir(tmp_path):
    shutil.copy(ASIA, tmp_path / "asia.csv")
    p = run_proc([sys.executable, "-m", "bigbn.cli", "run", "asia.csv", "-k", "1", "-q"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "bigbn-asia" / "edges.csv").exists()
    assert p.stderr == ""


@pytest.mark.parametrize("content, needles", [
    ("a,b\n1,2\n1,NA\n", ["bad.csv", "row 3", "column 'b'"]),
    ("a,b\n1,2\n1\n", ["bad.csv", "row 3"]),
])
def test_subprocess_bad_input(tmp_path, content, needles):
    write(tmp_path / "bad.csv", content)
    p = run_proc(console_script() + ["run", "bad.csv", "--workdir", "wd"], tmp_path)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), p.stderr
    for needle in needles:
        assert needle in lines[0]
    assert p.stdout == ""


def test_subprocess_help():
    p = run_proc(console_script() + ["--help"], ROOT)
    assert p.returncode == 0 and "Example" in p.stdout and "run" in p.stdout
    p = run_proc([sys.executable, "-m", "bigbn.cli", "run", "-h"], ROOT)
    assert p.returncode == 0 and "Example" in p.stdout


def test_terminal_progress_is_one_line_rewritten_in_place(capsys):
    """On a terminal every event rewrites one status line (no stacked bars to garble on
    Ctrl-C); close ends it with a single newline; each stage shows its own clock."""
    from bigbn.cli.main import Progress
    from bigbn.engine.progress import report

    p = Progress()
    p.tty = True
    report(p, "scores", 0, 1)
    report(p, "scores", 1, 1)
    report(p, "forward", 0, 4)
    report(p, "gamma", 0, 4)
    for d in range(1, 5):
        report(p, "forward", d, 4)
    p.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n")
    last = err.rstrip("\n").split("\r")[-1]
    assert last.startswith("[bigbn] scores 1/1 ") and "forward 4/4 " in last
    assert "gamma 0/4\x1b[K" in last, "a stage with no work done yet shows no clock"


@pytest.mark.parametrize("args,needles", [
    (["plan", "--n", "0"], ["--n", "between 2 and 40", "got 0"]),
    (["plan", "--n", "-1"], ["--n", "got -1"]),
    (["plan", "--n", "41"], ["--n", "got 41"]),
    (["plan", "--n", "10", "-k", "-1"], ["--max-parents", "got -1"]),
    (["plan", "--n", "10", "--chunk-bits", "0"], ["--chunk-bits", "got 0"]),
    (["simulate", "--n", "3", "--rows", "10", "--seed", "-1", "o.csv"], ["--seed", "got -1"]),
    (["simulate", "--n", "3", "--states", "1000000000", "--rows", "10", "o.csv"],
     ["1000000000 states", "memory", "--states"]),
    (["simulate", "--n", "3", "--rows", "100000000000", "o.csv"], ["rows", "memory", "--rows"]),
])
def test_other_commands_name_the_option_at_fault(tmp_path, monkeypatch, args, needles):
    """Review findings: `plan --n 0` blamed max parents; simulate allocated without bound
    and raised a traceback on --seed -1."""
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(invoke(*args), *needles)
    assert not (tmp_path / "o.csv").exists()


def test_plan_help_explains_every_option():
    out = invoke("plan", "--help").output
    assert "Maximum number of parents" in out


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

def test_suspicious_columns_get_a_warning_line(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("a,b,c\nx,1,p\nx,2,q\nx,1,p\nx,2,p\nx,1,q\n")
    r = h.cli("run", f, "-w", tmp_path / "w", "-q")
    assert r.exit_code == 0
    warn = [x for x in r.stderr.splitlines() if x.startswith("Warning:")]
    assert len(warn) == 1 and "column 'a': a single value in every row" in warn[0]


def test_negative_top_and_options_of_another_score(tmp_path):
    assert h.cli("run", h.ASIA, "-w", tmp_path / "w", "--top", "-3").exit_code == 2
    for args, needle in ((["--score", "k2", "--ess", "5"], "ess (--ess) is a parameter of the bdeu score"),
                         (["--alpha-mu", "2"], "alpha_mu (--alpha-mu) is a parameter of the bge score"),
                         (["--alpha-w", "20"], "alpha_w (--alpha-w) is a parameter of the bge score")):
        r = h.cli("run", h.ASIA, "-w", tmp_path / "w", "-q", *args)
        assert r.exit_code == 1 and needle in r.output
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
def test_first_run_says_it_compiles(tmp_path):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(root))
    cmd = [sys.executable, "-m", "bigbn.cli", "run", str(root / "examples" / "asia.csv"), "-k", "1",
           "--top", "0", "-w", str(tmp_path / "w"), "--fresh"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0 and second.returncode == 0
    assert "first run: compiling" in first.stderr and "first run" not in second.stderr


def test_an_output_over_an_input_or_a_file_of_the_run_is_refused(tmp_path):
    """`bigbn scores DATA -o DATA` replaced the data with the scores; `export`/`report -o
    WORKDIR/summary.json` (or edges.csv) broke the finished run; `roc --curve TRUTH` and
    `plot --graph EDGES` wrote over what they read. Each is one line now, and the file is
    as it was; a new file in the workdir, or the command's own default there, is fine."""
    rows = np.random.default_rng(0).integers(0, 2, (40, 3))
    data = write(tmp_path / "d.csv", "A,B,C\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    truth = write(tmp_path / "t.csv", "parent,child\nA,B\n")
    wd = tmp_path / "wd"
    assert invoke("run", data, "-w", wd, "-q").exit_code == 0
    before = {p: p.read_bytes() for p in (data, truth, *wd.glob("*.*")) if p.is_file()}
    for args, needle in [
        (("scores", data, "-o", data), "--out"),
        (("export", wd, "--dag", "0.5", "-o", wd / "summary.json"), "is a file of the run"),
        (("export", wd, "--dag", "0.5", "-o", data), "is a file this command reads"),
        (("report", wd, "-o", wd / "edges.csv"), "is a file of the run"),
        (("report", wd, "-o", wd / "tables.zarr" / "r.html"), "is a file of the run"),
        (("roc", wd, truth, "--curve", truth), "--curve"),
        (("roc", wd, truth, "--plot", wd / "run.json"), "--plot"),
        (("plot", wd, "--graph", wd / "edges.csv", "--format", "dot"), "--graph"),
        (("plot", wd / "edges.csv", "--out", wd / "edges.csv"), "is a file this command reads"),
        (("plot", wd / "edges.csv", "--out", wd / "summary.json"), "is a file of the run"),
        (("roc", wd / "edges.csv", truth, "--curve", wd / "parent_sets.csv"), "is a file of the run"),
    ]:
        assert_one_line_error(invoke(*args), needle)
    assert {p: p.read_bytes() for p in before} == before
    (wd / "figs").mkdir()
    for args in [("export", wd, "--dag", "0.5"), ("export", wd, "--dag", "0.5", "-o", wd / "network.bif"),
                 ("report", wd, "-o", wd / "r.html"), ("report", wd, "-o", wd / "r.html"),
                 # a file of the user's own there may be written again, and one in a folder of
                 # theirs (both were refused as "a file of the run" by the first form of the check)
                 ("roc", wd, truth, "--curve", wd / "roc.csv"), ("roc", wd, truth, "--curve", wd / "roc.csv"),
                 ("report", wd, "-o", wd / "figs" / "r.html"),
                 ("plot", wd, "--graph", wd / "figs" / "g.dot", "--format", "dot")]:
        assert invoke(*args).exit_code == 0, args
    # a name the run writes is refused whether or not this run has written it yet
    assert_one_line_error(invoke("report", wd, "-o", wd / "map_dag.csv"), "is a file of the run")
    assert not (wd / "map_dag.csv").exists()


def test_an_output_that_is_no_path_is_one_line(tmp_path):
    """export(workdir, "bif", out=5) reached os.fspath's TypeError."""
    from bigbn.errors import OptionError
    from bigbn.options import output_file

    with pytest.raises(OptionError, match="--out must be a file path, got int"):
        output_file(5, "--out", inputs=(tmp_path / "d.csv",))


def test_control_characters_of_names_and_paths_are_printed_as_escapes(tmp_path):
    """A column name is the data's header text: `bigbn run` printed U+202E in it as it was
    (it turned the line around), in its edges and parent sets, and an ESC in an error
    naming the file (\x1b[2J cleared the user's terminal). They are printed as escapes
    now; the files keep the names as they are. A control character (ESC, BEL, a newline)
    is no part of a name: refused (test_a_control_character_in_a_column_name_is_refused)."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, 200)
    b = (a ^ (rng.random(200) < 0.1)).astype(int)
    data = tmp_path / "d.csv"
    data.write_text("a\u202e[2J,b\u202ex\u2066\n" + "".join(f"{x},{y}\n" for x, y in zip(a, b)), encoding="utf-8")
    r = invoke("run", data, "-w", tmp_path / "w", "-q", "--top", 2)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "\u202e" not in out and "\u2066" not in out, repr(out)
    assert "a\\u202e[2J -> b\\u202ex\\u2066" in out or "b\\u202ex\\u2066 -> a\\u202e[2J" in out, out
    assert "a\u202e[2J" in (tmp_path / "w" / "edges.csv").read_text(encoding="utf-8")
    bad = tmp_path / "e\x1b[2J.csv"
    bad.write_text("a,b\n0,1\n1\n")  # row 3: one field of two
    r = invoke("run", bad, "-w", tmp_path / "w2", "-q")
    assert_one_line_error(r, "e\\x1b[2J.csv", "row 3")
    assert "\x1b" not in r.stderr.replace("\x1b[K", ""), repr(r.stderr)


def test_a_control_character_in_a_column_name_is_refused(tmp_path):
    """A newline, tab or CR of a column name (a DataFrame's, names=, a quoted CSV header
    cell) broke the lines of edges.csv and of every printed list, and an ESC or BEL went
    into the files as it was: every input refuses a name holding a C0 or C1 control, DEL,
    U+2028 or U+2029 in one line naming the file, line and column, the name escaped."""
    import pandas as pd

    from bigbn.errors import DataError

    data = tmp_path / "d.csv"
    data.write_text('\na,"b\x1b[2Jc"\n0,1\n1,0\n', encoding="utf-8")  # the header on line 2
    r = invoke("run", data, "-w", tmp_path / "w", "-q")
    assert_one_line_error(r, "d.csv, row 2, column 2: the column name 'b\\x1b[2Jc' holds the control character "
                             "'\\x1b'")
    assert not (tmp_path / "w").exists() or not (tmp_path / "w" / "edges.csv").exists()
    for name in ("x\ny", "x\ty", "x\ry", "x\x07", "x\x85y", "x\x7f", "x\u2028y"):
        with pytest.raises(DataError, match=r"^DataFrame, column 2: the column name .* holds the control character"):
            bigbn.api.load_dataset(pd.DataFrame({"a": [0, 1, 0, 1], name: [1, 0, 1, 0]}))
        with pytest.raises(DataError, match=r"^array, column 1: the column name .* holds the control character"):
            bigbn.api.load_dataset(np.array([[0, 1], [1, 0]]), names=[name, "b"])
        plain = tmp_path / "p.csv"  # the plain reader (the header on line 1) and the CSV one (quotes)
        for text in (f"{name},b\n0,1\n1,0\n", f'"{name}",b\n0,1\n1,0\n'):
            plain.write_text(text, encoding="utf-8", newline="")
            if "\n" in name or "\r" in name:
                continue  # a line break of the file: not a name (a quoted one is refused as an open quote)
            with pytest.raises(DataError, match=r"p.csv, row 1, column 1: the column name .* holds the control"):
                bigbn.api.load_dataset(plain)
    bif = tmp_path / "n.bif"
    bif.write_text("network n { }\nvariable a\x01 {\n  type discrete [ 2 ] { x, y };\n}\n")
    r = invoke("simulate", "--network", bif, "--rows", 10, tmp_path / "s.csv")
    assert_one_line_error(r, "n.bif, line 2: the variable name 'a\\x01' holds the control character '\\x01'")
    # a knowledge file's name is not a variable: an unknown node, escaped
    forbid = tmp_path / "f.csv"
    forbid.write_text('parent,child\n"a\tb",b\n', encoding="utf-8")
    data.write_text("a,b\n0,1\n1,0\n0,1\n1,0\n", encoding="utf-8")
    r = invoke("run", data, "-w", tmp_path / "w3", "-q", "--forbid", forbid)
    assert_one_line_error(r, "f.csv, line 2, column parent: unknown node 'a\\tb'")


def test_a_run_writes_its_files_as_utf8_whatever_the_locale(tmp_path):
    """In an ASCII locale open() encoded the results in ASCII: a column 'Ωa' was a
    UnicodeEncodeError traceback out of `bigbn run` once the tables were done, with
    edges.csv.tmp left in the workdir. Every results file is UTF-8, as the readers read
    them, and `bigbn.open` reads the run back."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    data = tmp_path / "d.csv"
    data.write_text("Ωa,b\n" + "0,0\n1,1\n" * 20 + "0,1\n", encoding="utf-8")  # the MAP has an arc
    wd = tmp_path / "w"
    for cmd in (["run", str(data), "-w", str(wd), "-q", "--map"], ["sample", "-w", str(wd), "-T", "50"]):
        r = subprocess.run([sys.executable, "-m", "bigbn.cli", *cmd], capture_output=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    assert not list(wd.glob("*.tmp"))
    for name in ("edges.csv", "parent_sets.csv", "strength.csv", "map_dag.csv", "samples-order-modular/edges.csv"):
        assert "Ωa" in (wd / name).read_text(encoding="utf-8"), name
    assert bigbn.open(wd).names == ("Ωa", "b")


def test_own_process_is_the_commands_not_the_process(tmp_path, monkeypatch):
    """`own_process` says whether the command being run was started by `cli` (the console
    script: its process ends with it), from the command's click context: `cli` starts
    `bigbn sample` without numba's BLAS probe; `main` called afterwards in the same process
    (a test, another program) does not. A process-wide flag set by `cli` stayed set."""
    import gc

    from bigbn import _numba
    from bigbn.cli.main import cli, own_process

    wd = tmp_path / "w"
    bigbn.learn(ASIA, workdir=wd, max_parents=1)
    calls = []
    monkeypatch.setattr(_numba, "start_without_blas_probe", lambda: calls.append("cli"))
    monkeypatch.setattr(sys, "argv", ["bigbn", "sample", "--workdir", str(wd), "--samples", "20"])
    try:
        with pytest.raises(SystemExit) as out:
            cli()
    finally:
        gc.unfreeze()  # what cli froze for its process's end
    assert out.value.code == 0 and calls == ["cli"]
    assert not own_process()
    res = invoke("sample", "--workdir", wd, "--samples", "20")
    assert res.exit_code == 0, res.output
    assert calls == ["cli"]
