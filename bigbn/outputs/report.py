"""One page to look at a finished run: `bigbn report WORKDIR` and `Result._repr_html_`.

`write_report` reads what a finished run left in its work directory — run.json (what
was asked: data, score, knowledge, the plan), the journal (what each stage took),
summary.json, edges.csv, parent_sets.csv, map_dag.csv, samples-*/ and effects.csv when
`bigbn sample` / `bigbn effects` wrote them — and writes one self-contained HTML file:
every picture is inlined (base64 PNG or inline SVG), no script, no style sheet, font or
image from elsewhere, so the page opens offline, from a mail attachment or an archive.

Reading the files rather than the tables keeps the report cheap at any n (no 2^n table
is touched) and lets it open a run of another bigbn version. An ROC curve needs the true
network: the caller (`bigbn report --truth`) computes it (`bigbn.tools.roc`, a layer
above this one) and passes it in.

Pictures need matplotlib (optional): without it the page says so and keeps its tables.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bigbn.errors import BigBNError, OptionError, WorkdirError
from bigbn.io.data import visible
from bigbn.knowledge import Knowledge
from bigbn.store.rundir import RunDir, check_scores_sound, gib
from bigbn.store.workdir import open_file, read_file

#: The plain-language line on what an order-modular posterior means, shown beside the
#: edge tables (docs/posterior.md says the same at length).
ORDER_MODULAR_NOTE = (
    "These are posteriors under the order-modular prior: every node order is equally likely "
    "a priori, and a DAG's prior weight grows with the number of orders it agrees with (its "
    "linear extensions). Two Markov-equivalent DAGs fit the data equally well, but they can "
    "agree with different numbers of orders, so a direction the data cannot decide may read "
    "0.75 / 0.25 (or 0.98 / 0.02) rather than 0.5 / 0.5. For a prior uniform over DAGs, "
    "reweight exact samples: bigbn sample --workdir WORKDIR --prior dag-modular.")

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 64em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 1.8em;
     border-bottom: 1px solid #ccc; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { background: #f6f8fa; border-left: 4px solid #88a; padding: 0.5em 0.8em; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.figs img { width: 34em; max-width: 100%; height: auto; border: 1px solid #eee; }
.figs svg { max-width: 100%; height: auto; }
nav a { margin-right: 0.8em; } .muted { color: #777; }
"""


@dataclass
class RunFiles:
    """What a finished run's folder holds, read (no 2^n table): the run record, the
    journal, summary.json, the edge posteriors P (n, n) from edges.csv, the parent sets
    of parent_sets.csv ({child: [(parents, p), ...]}), the MAP arcs, the samples
    ({prior: {"summary", "dags", "ancestors"}}) and the rows of effects.csv."""

    root: Path
    run: RunDir
    summary: dict
    posterior: np.ndarray
    parent_sets: dict
    journal: dict
    map_arcs: list | None = None
    samples: dict = field(default_factory=dict)
    effects: list | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return self.run.names

    @property
    def tiers(self) -> list[list[str]] | None:
        return self.run.record.fingerprint.get("tiers") or None


def read_run(workdir) -> RunFiles:
    """The files of the finished run in ``workdir``; WorkdirError (one line) naming what is
    missing and the command that writes it."""
    then = "write its report"
    run = RunDir(workdir, then=then)
    check_scores_sound(run, then)
    root = run.root
    edges = root / "edges.csv"
    if not edges.exists():  # a FIFO or a folder of its name: one line naming it, below
        raise WorkdirError(f"{root}: no edges.csv, the run's posterior is not finished (or it was a "
                           f"--map-only run); run the same `bigbn run` command again, then {then}")
    names = run.names
    summary = _json(root / "summary.json", _RUN_SUMMARY)
    return RunFiles(root=root, run=run, summary=summary,
                    posterior=_read_posterior(edges, names, run.record.children),  # a time series: into slice t
                    parent_sets=_read_parent_sets(root, names),
                    journal=run.journal(), map_arcs=_read_arcs(root / "map_dag.csv", names),
                    samples=_read_samples(root, names, then),
                    effects=_read_effects(root / "effects.csv"))


#: the objects of a summary.json the page reads into (a damaged one of another type is an
#: error naming it, not a traceback from the page): the run's, and the samples'
_RUN_SUMMARY = ("plan", "map_dag")
_SAMPLES_SUMMARY = ("edge_check",)
_AGAIN = "run the command that wrote it again to rewrite it"
#: how far past [0, 1] a probability bigbn computed may lie by rounding (sums of terms
#: that round up: effects.csv holds 1 + 3.6e-15)
_ROUNDING = 1e-9


def _json(path: Path, objects: tuple[str, ...] = ()) -> dict:
    """A summary.json as a dict ({} for none or another JSON type); ``objects``: its keys
    that must hold objects when present."""
    try:
        obj = json.loads(read_file(path))
    except FileNotFoundError:
        return {}
    except WorkdirError:
        raise  # a FIFO or a folder of its name (`read_file`)
    except (OSError, ValueError) as e:
        raise WorkdirError(f"{path}: not readable JSON ({e}); run the same `bigbn run` command "
                           "again to rewrite it") from None
    obj = obj if isinstance(obj, dict) else {}
    for key in objects:
        if not isinstance(obj.get(key, {}), dict):
            raise WorkdirError(f"{path}: \"{key}\" is not an object (damaged); {_AGAIN}")
    workers = obj.get("plan", {}).get("workers")
    if workers is not None and not (type(workers) is int and workers >= 1):
        raise WorkdirError(f"{path}: \"plan\": \"workers\" is {workers!r}, not a number of workers (damaged); "
                           f"{_AGAIN}")
    return obj


def _read_rows(path: Path, need: tuple[str, ...] = (), numbers: tuple[str, ...] = (),
               probabilities: tuple[str, ...] = ()) -> list[dict] | None:
    """The rows of a CSV file bigbn wrote, as dicts; None when there is no such file.
    WorkdirError naming the line and column where a column in ``need`` is missing, one in
    ``numbers`` is no number, or one in ``probabilities`` is no number in [0, 1] (give or
    take `_ROUNDING`)."""
    try:
        with open_file(path, "r", newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        return None
    except (OSError, csv.Error, UnicodeDecodeError) as e:
        raise WorkdirError(f"{path}: not readable ({e})") from None
    return _checked(path, rows, need, numbers, probabilities)


def _checked(path: Path, rows: list[dict], need: tuple[str, ...] = (), numbers: tuple[str, ...] = (),
             probabilities: tuple[str, ...] = ()) -> list[dict]:
    """``rows`` of ``path``, checked as `_read_rows` says."""
    for line, row in enumerate(rows, 2):
        for col in need + numbers + probabilities:
            x = row.get(col)
            try:
                ok = x is not None and (col not in numbers + probabilities or not math.isnan(float(x))) \
                    and (col not in probabilities or -_ROUNDING <= float(x) <= 1.0 + _ROUNDING)
            except ValueError:
                ok = False
            if not ok:
                what = "no such column" if x is None else repr(x)
                raise WorkdirError(f"{path}, line {line}, column {col}: {what} (damaged, or not bigbn's); {_AGAIN}")
    return rows


def _read_posterior(path: Path, names, children: int | None = None) -> np.ndarray:
    """The edge posteriors of edges.csv as an (n, n) matrix: every edge into each of the
    first ``children`` variables (all of them but a time series' lagged ones), no other."""
    children = len(names) if children is None else children
    index = {x: i for i, x in enumerate(names)}
    P = np.zeros((len(names), len(names)))
    seen = set()
    for row in _read_rows(path, probabilities=("posterior",)) or []:
        try:
            u, v = index[row["parent"]], index[row["child"]]
            if u == v or (u, v) in seen:
                raise ValueError("a loop or a repeated edge")
            P[u, v] = float(row["posterior"])
            seen.add((u, v))
        except (KeyError, TypeError, ValueError):
            raise WorkdirError(f"{path}: a row that is not a parent,child,posterior of this run's "
                               f"variables ({row}); run the same `bigbn run` command again") from None
    seen = len(seen)
    if seen != children * (len(names) - 1):
        raise WorkdirError(f"{path}: {seen} rows, the run has {children * (len(names) - 1)} edges; "
                           "run the same `bigbn run` command again to rewrite it")
    return P


def _read_parent_sets(root: Path, names) -> dict:
    out: dict[str, list] = {x: [] for x in names}
    for row in _read_rows(root / "parent_sets.csv") or []:
        try:
            parents = json.loads(row["parents"])
            if not isinstance(parents, list) or not all(isinstance(x, str) and x in out for x in parents):
                raise ValueError("not a list of the run's names")  # [1, 2] was a traceback on the page
            out[row["child"]].append((tuple(parents), float(row["posterior"])))
        except (KeyError, TypeError, ValueError):
            raise WorkdirError(f"{root / 'parent_sets.csv'}: a damaged row ({row}); run the same "
                               "`bigbn run` command again to rewrite it") from None
    return out


def _read_effects(path: Path) -> list[dict] | None:
    """The rows of effects.csv, of either form `bigbn effects` writes (continuous: mean and
    interval; discrete: a probability per pair of levels), checked as the page reads them."""
    rows = _read_rows(path)
    if not rows:
        return rows
    if "mean" in rows[0]:
        return _checked(path, rows, need=("cause", "effect"), numbers=("mean", "lower", "upper"),
                        probabilities=("p_zero",))
    rows = _checked(path, rows, need=("cause", "effect", "cause_level", "effect_level"),
                    probabilities=("probability", "p_zero"))
    # each pair's table whole, as `bigbn.open` reads it: every cell once, p(effect | do(cause
    # = a)) adding up to 1 (a file cut at a line's end gave a pair's change from a cell of 0)
    cells: dict[tuple[str, str], dict] = {}
    levels: dict[str, set] = {}  # each variable's levels, as a cause or an effect anywhere in the file
    for r in rows:
        cells.setdefault((r["cause"], r["effect"]), {}).setdefault(r["cause_level"], []).append(
            (r["effect_level"], float(r["probability"])))
        levels.setdefault(r["cause"], set()).add(r["cause_level"])
        levels.setdefault(r["effect"], set()).add(r["effect_level"])
    for (x, y), table in cells.items():
        if set(table) != levels[x] or any(sorted(b for b, _ in t) != sorted(levels[y]) for t in table.values()) \
                or any(abs(sum(p for _, p in t) - 1.0) > 1e-6 for t in table.values()):
            raise WorkdirError(f"{path}: the rows of {x} → {y} are not a table p({y} | do({x})) (damaged, "
                               f"or cut short); {_AGAIN}")
    return rows


def _read_arcs(path: Path, names) -> list | None:
    rows = _read_rows(path, need=("parent", "child"))
    for r in rows or []:
        if r["parent"] not in names or r["child"] not in names or r["parent"] == r["child"]:
            raise WorkdirError(f"{path}: an arc that is not between two of this run's variables "
                               f"({r['parent']} → {r['child']}); {_AGAIN}")
    return None if rows is None else [(r["parent"], r["child"]) for r in rows]


def _read_samples(root: Path, names, then: str) -> dict:
    """The samples of each prior whose folder holds a summary.json: their summary, dags.csv
    and ancestors.csv, each checked; samples.npz is checked as `bigbn.open` checks it
    (`samplefile.load_samples`: a truncated or damaged one, or none, is the damaged samples
    they are, one line, as any other damaged file of the run: the page showed the CSV
    files' samples beside it). All but their log p(data) against the run's: the page reads
    no table, and summary.json's log p(data) is not the samples' for a time series (the
    transition's, not the sum over its tiers')."""
    from bigbn.outputs.samplefile import load_samples

    out = {}
    for prior in ("order-modular", "dag-modular"):
        folder = root / f"samples-{prior}"
        if (folder / "summary.json").exists():
            flag = "" if prior == "order-modular" else " --prior dag-modular"
            load_samples(folder, names, prior, None,
                         f"run `bigbn sample --workdir {root}{flag}` again to rewrite it, then {then}")
            # the DAG-modular posterior is Π β over an estimated normaliser: it may pass 1; the
            # exact one is exp of a difference of numbers near log p(x), whose rounding (an ulp
            # of |log p(x)|, 1.9e-9 past 8e6) earlier bigbns wrote past 1: both checked as numbers
            post = "exact_posterior" if prior == "order-modular" else "estimated_posterior"
            dags = _read_rows(folder / "dags.csv", need=("rank", "arcs"), numbers=("se", post),
                              probabilities=("probability",)) or []
            for line, r in enumerate(dags, 2):
                try:
                    arcs = json.loads(r["arcs"])
                    ok = isinstance(arcs, list) and all(isinstance(a, list) and len(a) == 2 for a in arcs)
                except ValueError:
                    ok = False
                if not ok:
                    raise WorkdirError(f"{folder / 'dags.csv'}, line {line}, column arcs: {r['arcs']!r} (damaged, "
                                       f"or not bigbn's); {_AGAIN}")
            out[prior] = {"summary": _json(folder / "summary.json", _SAMPLES_SUMMARY), "dags": dags,
                          "ancestors": _read_rows(folder / "ancestors.csv", need=("ancestor", "descendant"),
                                                  numbers=("se",), probabilities=("probability",)) or []}
    return out


# ------------------------------------------------------------------------------ the page

def write_report(workdir, out, threshold: float = 0.5, truth=None, roc=None, factors=None,
                 clock: str = "the reference machine") -> Path:
    """Write the report of the finished run in ``workdir`` (a path, or its `RunFiles`
    already read) to ``out`` (an .html file).

    threshold: the graph shows the arcs with posterior ≥ it. truth: an optional bool (n, n)
    adjacency of the true network (arcs coloured right / reversed / wrong). roc: an optional
    (fpr, tpr, auc) of the run's undirected-edge ROC against that network. factors, clock:
    the plan's time on this machine's clock (`bigbn.tools.calibrate.stage_factors`, and how
    to name it), else the reference machine's."""
    if not 0.0 <= threshold <= 1.0:
        raise OptionError(f"threshold must be in [0, 1], got {threshold}")
    out = Path(out)
    if out.is_dir():
        raise OptionError(f"{out}: is a folder; give a file name (e.g. {out / 'report.html'})")
    from bigbn.options import open_output, output_file

    # not over a file of the run (-o WORKDIR/edges.csv broke it: the next command called it damaged)
    output_file(out, "--out", workdir=workdir.root if isinstance(workdir, RunFiles) else workdir)
    page = report_html(workdir if isinstance(workdir, RunFiles) else read_run(workdir), threshold, truth, roc,
                       factors, clock)
    try:
        with open_output(out, "w", encoding="utf-8") as fh:  # a FIFO nothing reads: one line, not a wait
            fh.write(page)
    except OSError as e:
        raise OptionError(f"cannot write {out}: {e.strerror}") from None
    return out


def report_html(rf: RunFiles, threshold: float = 0.5, truth=None, roc=None, factors=None,
                clock: str = "the reference machine") -> str:
    """The report's HTML text (see `write_report`)."""
    sections = [("asked", "What was asked", _asked(rf)),
                ("plan", "The plan and what it took", _plan(rf, factors, clock)),
                ("heatmap", "Edge posteriors", _heatmap(rf)),
                ("graph", f"The graph at posterior ≥ {threshold:g}", _graph(rf, threshold, truth)),
                ("edges", "Strongest and most uncertain edges", _edges(rf)),
                ("parent-sets", "Top parent sets", _parent_sets(rf))]
    if rf.map_arcs is not None:
        sections.append(("map", "The MAP network", _map(rf)))
    if rf.samples:
        sections.append(("samples", "Exact DAG samples", _samples(rf)))
    if rf.effects:
        sections.append(("effects", "Causal effects", _effects(rf)))
    if roc is not None:
        sections.append(("roc", "ROC against the true network", _roc(roc)))
    source = rf.run.record.source
    data = Path(source).name if source and source not in ("DataFrame", "array") else "data in memory"
    logp = rf.summary.get("log_marginal_likelihood")
    head = (f"<h1>bigbn report: {_e(rf.root.name)}</h1>"
            f"<p class=muted>{_e(data)} · n = {len(rf.names)} variables"
            + (f" · log p(data) = {float(logp):.6f}" if _finite(logp) else "")
            + f" · {_e(str(rf.root))}</p>"
            + "<nav>" + "".join(f'<a href="#{i}">{_e(t)}</a>' for i, t, _ in sections) + "</nav>")
    body = "".join(f'<section id="{i}"><h2>{_e(t)}</h2>{s}</section>' for i, t, s in sections)
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>bigbn report: {_e(rf.root.name)}</title><style>{_STYLE}</style></head>"
            f"<body>{head}{body}</body></html>\n")


def _e(x) -> str:
    """``x`` as page text or an attribute's value: `visible` (`bigbn.io.data.INVISIBLE`
    written as escapes), then HTML-escaped (quotes too)."""
    return html.escape(visible(str(x)), quote=True)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def table(header, rows, numeric=()) -> str:
    """An HTML table (header None: no header row); cells are escaped, columns whose index is
    in ``numeric`` right-aligned."""
    th = "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td class=num>{_e(c)}</td>" if j in numeric else f"<td>{_e(c)}</td>"
                                    for j, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table>{th}{body}</table>"


def _asked(rf: RunFiles) -> str:
    rec = rf.run.record
    fp = rec.fingerprint
    skip = ("data_sha256", "n", "m", "numerics", "constraints", "tiers", "score_numerics")
    options = [(k, v) for k, v in fp.items() if k not in skip and v not in (None, {}, [])]
    rows = [("data", rec.source or "data in memory (a DataFrame or an array)"),
            ("variables", f"n = {fp['n']}: " + ", ".join(rec.names)),
            ("rows", "scores from a .jkl file" if fp.get("m") is None else f"m = {fp['m']}"),
            ("data sha256", fp["data_sha256"][:16] + "…"),
            *((k.replace("_", " "), v) for k, v in options)]
    try:
        know = Knowledge.from_record(rec.names, fp).lines()
    except (BigBNError, TypeError, ValueError, KeyError, IndexError, AttributeError):
        # constraints or tiers of another type (an edit): a traceback, or the knowledge's
        # own message naming no file
        raise WorkdirError(f"{rf.run.root / 'run.json'}: its knowledge (\"constraints\", \"tiers\") is damaged; "
                           "use --fresh to start over (this removes the run's files)") from None
    rows.append(("knowledge", "; ".join(know) if know else "none (every order and edge allowed)"))
    rows.append(("bigbn", f"{rec.version}, run created {rec.created}"))
    return table(None, rows)


def _plan(rf: RunFiles, factors=None, clock: str = "the reference machine") -> str:
    from bigbn.plan.lattice import STAGES, time_estimate

    pl = rf.run.plan
    plan_info = rf.summary.get("plan", {})
    workers = int(plan_info.get("workers") or os.cpu_count() or 1)
    lattices = pl.distinct()
    predicted: dict[str, float] = {}
    for p in lattices:
        for s, t in time_estimate(p, workers, factors).items():
            predicted[s] = predicted.get(s, 0.0) + t
    disk = sum(sum(p.disk_bytes(workers).values()) for p in lattices)
    memory = max((p.task_memory_bytes() for p in lattices), default=0) * workers + 300 * 2**20
    planned = {s: sum(len(p.stage_tasks(s)) for p in lattices) for s in STAGES}
    recs = list(rf.journal.values())
    rows = []
    for s in STAGES:
        rs = [r for r in recs if r.get("stage") == s]
        if not rs and not planned[s]:
            continue
        wall = (max(r.get("end", 0) for r in rs) - min(r.get("start", 0) for r in rs)) if rs else 0.0
        rows.append((s, f"{len(rs)} / {planned[s]}" if planned[s] else str(len(rs)),
                     _secs(predicted[s]) if s in predicted else "–",
                     _secs(sum(r.get("seconds", 0.0) for r in rs)), _secs(wall)))
    # (a pid is no part of what the journal's reader checks: an edited one, a list, was a traceback)
    invocations = len({r["pid"] for r in recs if isinstance(r.get("pid"), (int, str))})
    lines = [f"{len(lattices)} lattice{'s' * (len(lattices) != 1)}"
             + (f" ({len(pl.tiers)} tiers)" if pl.tiered else "")
             + ", chunk bits " + ", ".join(str(p.chunk_bits) for p in lattices[:8])
             + f", alpha {pl.alpha_mode}, {workers} workers"
             + (f", scheduler {plan_info['scheduler']}" if plan_info.get("scheduler") else ""),
             f"predicted: ≈ {_secs(sum(predicted.values()))} on {workers} cores of {clock}, "
             f"peak disk {gib(disk)}, memory ≈ {gib(memory)}"]
    took = [f"journal: {len(recs)} tasks in {invocations} invocation{'s' * (invocations != 1)}"
            + (" (the run was resumed)" if invocations > 1 else "")]
    if _finite(rf.summary.get("wall_seconds_this_invocation")):
        took.append(f"the last invocation: {_secs(rf.summary['wall_seconds_this_invocation'])} wall"
                    + (f", peak RSS {gib(rf.summary['peak_rss_bytes'])}"
                       if _finite(rf.summary.get("peak_rss_bytes")) else ""))
    tables = rf.root / "tables.zarr"
    used = sum(f.stat().st_blocks * 512 for f in tables.rglob("*") if f.is_file()) if tables.is_dir() else 0
    took.append(f"tables on disk now: {gib(used)} (the plan's peak: {gib(disk)})")
    return ("<ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines + took) + "</ul>"
            + table(("stage", "tasks done / planned", "predicted wall", "task-seconds", "wall (journal)"),
                    rows, numeric=(1, 2, 3, 4))
            + "<p class=muted>Wall per stage is the journal's first start to last end; a resumed run "
              "counts the time it was down.</p>")


def _secs(s: float) -> str:
    s = float(s)
    return f"{s:.2f} s" if s < 60 else f"{s / 60:.1f} min" if s < 3600 else f"{s / 3600:.2f} h"


# ------------------------------------------------------------------------------ pictures

def _have_matplotlib() -> bool:
    try:
        import matplotlib
    except ImportError:
        return False
    return bool(matplotlib.__version__)


def _picture(draw) -> str:
    """``draw(path)`` writes a PNG; its bytes inlined as an <img>, or a note without matplotlib."""
    if not _have_matplotlib():
        return "<p class=muted>(no picture: matplotlib is not installed; pip install matplotlib)</p>"
    with tempfile.TemporaryDirectory(prefix="bigbn-report-") as tmp:
        path = Path(tmp) / "figure.png"
        alt = draw(path)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _heatmap(rf: RunFiles) -> str:
    from bigbn.outputs.plot import heatmap

    def draw(path):
        heatmap(list(rf.names), rf.posterior, path, title="p(parent → child | data)", tiers=rf.tiers)
        return "heatmap of the edge posteriors"

    return (f"<div class=figs>{_picture(draw)}</div><p>Row u, column v: p(u → v | data), the total "
            "posterior of the DAGs with that arc; p(u → v) + p(v → u) is the probability that u and v "
            "are adjacent." + (" Lines mark the tiers; arcs into an earlier tier are impossible."
                               if rf.tiers else "") + "</p>")


def _graph(rf: RunFiles, threshold: float, truth) -> str:
    from bigbn.outputs.plot import draw_graph, thresholded_edges

    def draw(path):
        draw_graph(list(rf.names), rf.posterior, path, threshold, truth=truth, tiers=rf.tiers,
                   title=f"arcs with posterior ≥ {threshold:g}")
        return f"graph of the arcs with posterior at least {threshold:g}"

    count = len(thresholded_edges(list(rf.names), rf.posterior, threshold))
    cycle = _cycle(rf.names, rf.posterior >= threshold)
    warn = (f"<p class=note>At this threshold the arcs hold a directed cycle ({_e(' → '.join(cycle))}): "
            "a thresholded edge posterior is not a DAG.</p>" if cycle else "")
    warn += _averaged(rf, threshold)
    return (f"<div class=figs>{_picture(draw)}</div><p>{count} arcs; width and darkness grow with "
            "the posterior." + (" Colours: against the true network." if truth is not None else "")
            + f"</p>{warn}")


def _averaged(rf: RunFiles, threshold: float) -> str:
    """A line on the averaged DAG at the threshold (`Result.averaged`, `outputs/strength.py`):
    its arcs, the arcs it skips to stay acyclic, and how many are reversible in its CPDAG."""
    from bigbn.outputs.strength import averaged_arcs, cpdag

    if threshold <= 0:
        return ""
    kept, skipped = averaged_arcs(rf.posterior, threshold)
    adj = np.zeros(rf.posterior.shape, dtype=bool)
    for u, v in kept:
        adj[u, v] = True
    compelled, _ = cpdag(adj)
    names = rf.names
    reversible = sum(not compelled[u, v] for u, v in kept)
    skip = ("; to stay acyclic it skips " + ", ".join(f"{names[u]} → {names[v]}" for u, v in skipped)
            if skipped else "")
    return (f"<p>The averaged DAG at {threshold:g} (<code>Result.averaged({threshold:g})</code>; bnlearn's "
            f"<code>averaged.network</code> reads the run's strength.csv): {len(kept)} arcs, {reversible} of "
            f"them reversible within its Markov equivalence class{_e(skip)}.</p>")


def _cycle(names, adj) -> list[str] | None:
    """A directed cycle of the graph ``adj`` (bool (n, n), diagonal ignored) as names
    (first = last), or None."""
    n = len(names)
    state = [0] * n  # 0 new, 1 on the path, 2 done
    for s in range(n):
        if state[s]:
            continue
        path, stack = [s], [iter(range(n))]
        state[s] = 1
        while stack:
            u = path[-1]
            v = next((w for w in stack[-1] if w != u and adj[u, w] and state[w] != 2), None)
            if v is None:
                state[u] = 2
                path.pop()
                stack.pop()
            elif state[v] == 1:
                return [names[x] for x in path[path.index(v):]] + [names[v]]
            else:
                state[v] = 1
                path.append(v)
                stack.append(iter(range(n)))
    return None


# ------------------------------------------------------------------------------ tables

def edge_rows(names, P, top: int = 10) -> tuple[list, list]:
    """(strongest, most uncertain): the ``top`` directed edges of highest posterior as
    (parent, child, p(u→v), p(u–v adjacent)); and the ``top`` unordered pairs whose three
    outcomes (u → v, v → u, not adjacent) are most evenly split (largest entropy) as
    (u, v, p(u→v), p(v→u), p(not adjacent))."""
    n = len(names)
    strong = sorted(((P[u, v], u, v) for u in range(n) for v in range(n) if u != v), key=lambda x: -x[0])[:top]
    strongest = [(names[u], names[v], p, P[u, v] + P[v, u]) for p, u, v in strong]
    rows = []
    for u in range(n):
        for v in range(u + 1, n):
            a, b = P[u, v], P[v, u]
            c = max(0.0, 1.0 - a - b)
            h = -sum(x * math.log(x) for x in (a, b, c) if x > 0)
            if a < b:
                u2, v2, a, b = v, u, b, a
            else:
                u2, v2 = u, v
            rows.append((h, names[u2], names[v2], a, b, c))
    rows.sort(key=lambda r: -r[0])
    return strongest, [r[1:] for r in rows[:top]]


def _edges(rf: RunFiles) -> str:
    strongest, uncertain = edge_rows(rf.names, rf.posterior)
    return ("<h3>Strongest</h3>"
            + table(("parent", "child", "p(parent → child)", "p(adjacent)"),
                    [(u, v, f"{p:.4f}", f"{a:.4f}") for u, v, p, a in strongest], numeric=(2, 3))
            + "<h3>Most uncertain</h3><p>The pairs whose three outcomes (u → v, v → u, not adjacent) "
              "are most evenly split.</p>"
            + table(("u", "v", "p(u → v)", "p(v → u)", "p(not adjacent)"),
                    [(u, v, f"{a:.4f}", f"{b:.4f}", f"{c:.4f}") for u, v, a, b, c in uncertain],
                    numeric=(2, 3, 4))
            + f"<p class=note>{_e(ORDER_MODULAR_NOTE)}</p>")


def _set(parents) -> str:
    return "{" + ", ".join(parents) + "}"


def _parent_sets(rf: RunFiles, top: int = 3) -> str:
    rows = []
    for child in rf.names:
        sets = rf.parent_sets.get(child, [])[:top]
        rows.append((child, *(f"{p:.3f} {_set(ps)}" for ps, p in sets), *([""] * (top - len(sets)))))
    return ("<p>Each node's most probable parent sets, with their exact posterior "
            "(parent_sets.csv has more).</p>"
            + table(("node", *(f"#{i + 1}" for i in range(top))), rows))


def _map(rf: RunFiles) -> str:
    arcs = ", ".join(f"{a} → {b}" for a, b in rf.map_arcs) or "(no arcs)"
    score = (rf.summary.get("map_dag") or {}).get("log_score")
    return (f"<p>The single DAG of highest score Σ_i β_i(G_i) ({len(rf.map_arcs)} arcs"
            + (f", log score {float(score):.6f}" if _finite(score) else "") + f"): {_e(arcs)}</p>")


def _samples(rf: RunFiles) -> str:
    parts = []
    for prior, s in rf.samples.items():
        info = s["summary"]
        check = info.get("edge_check") or {}
        parts.append(f"<h3>prior {_e(prior)}</h3><p>{_e(info.get('samples'))} DAGs drawn from the exact "
                     f"posterior ({_e(info.get('distinct_dags'))} distinct), seed {_e(info.get('seed'))}"
                     + (f", effective sample size {float(info['ess']):.0f}" if _finite(info.get("ess")) else "")
                     + (f"; self-check against the exact edge posteriors: worst |z| = "
                        f"{float(check['max_abs_z']):.2f}" if _finite(check.get("max_abs_z"))
                        and check.get("edges_compared") != 0 else "")
                     + "</p>")
        post = "exact_posterior" if prior == "order-modular" else "estimated_posterior"
        rows = [(r.get("rank"), f"{float(r.get(post, 'nan')):.4f}",
                 f"{float(r['probability']):.4f} ± {float(r['se']):.4f}",
                 ", ".join(f"{a}→{b}" for a, b in json.loads(r["arcs"])) or "(no arcs)")
                for r in s["dags"][:5]]
        parts.append(table(("rank", post.replace("_", " "), "sampled", "arcs"), rows, numeric=(0, 1, 2)))
        anc = sorted(s["ancestors"], key=lambda r: -float(r["probability"]))[:8]
        parts.append("<p>Most probable ancestor relations (a directed path from u to v):</p>"
                     + table(("u", "v", "p(u ⇝ v)"), [(r["ancestor"], r["descendant"],
                                                      f"{float(r['probability']):.4f} ± {float(r['se']):.4f}")
                                                     for r in anc], numeric=(2,)))
    return "".join(parts)


def _effects(rf: RunFiles, top: int = 10) -> str:
    rows = rf.effects
    if "mean" in rows[0]:
        best = sorted(rows, key=lambda r: -abs(float(r["mean"])))[:top]
        return ("<p>Linear causal effects averaged over the exact parent-set posterior of each cause "
                "(Bayesian IDA), largest |mean| first; P(zero): the effect is a parent of the cause.</p>"
                + table(("cause", "effect", "mean", "P(zero)", "interval"),
                        [(r["cause"], r["effect"], f"{float(r['mean']):.4f}", f"{float(r['p_zero']):.4f}",
                          f"[{float(r['lower']):.4f}, {float(r['upper']):.4f}]") for r in best],
                        numeric=(2, 3, 4)))
    pairs: dict[tuple[str, str], dict] = {}
    for r in rows:
        d = pairs.setdefault((r["cause"], r["effect"]), {"p_zero": float(r["p_zero"]), "t": {}})
        d["t"].setdefault(r["cause_level"], {})[r["effect_level"]] = float(r["probability"])
    scored = []
    for (x, y), d in pairs.items():
        dists = list(d["t"].values())
        levels = sorted({k for t in dists for k in t})
        tv = max((0.5 * sum(abs(a.get(k, 0) - b.get(k, 0)) for k in levels) for a in dists for b in dists),
                 default=0.0)
        scored.append((tv, x, y, d["p_zero"]))
    scored.sort(key=lambda s: -s[0])
    return ("<p>p(effect | do(cause)) averaged over the exact parent-set posterior of each cause "
            "(Bayesian IDA); largest change first (total variation between two levels of the cause). "
            "effects.csv has every level.</p>"
            + table(("cause", "effect", "largest change", "P(zero)"),
                    [(x, y, f"{tv:.4f}", f"{pz:.4f}") for tv, x, y, pz in scored[:top]], numeric=(2, 3)))


def _roc(roc) -> str:
    fpr, tpr, auc = roc
    pts = " ".join(f"{20 + 260 * float(x):.1f},{280 - 260 * float(y):.1f}" for x, y in zip(fpr, tpr))
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="310" viewBox="0 0 300 310" '
           'role="img" aria-label="ROC curve">'
           '<rect x="20" y="20" width="260" height="260" fill="none" stroke="#999"/>'
           '<line x1="20" y1="280" x2="280" y2="20" stroke="#bbb"/>'
           f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="2"/>'
           '<text x="150" y="302" text-anchor="middle" font-size="12">1 − specificity</text>'
           '<text x="12" y="150" font-size="12" transform="rotate(-90 12 150)" text-anchor="middle">'
           'sensitivity</text>'
           f'<text x="270" y="270" text-anchor="end" font-size="13">AUC {float(auc):.3f}</text></svg>')
    return (f"<div class=figs>{svg}</div><p>Undirected-edge ROC (paper §5.1): the pair {{u, v}} is "
            f"claimed when p(u → v) + p(v → u) exceeds a threshold. AUC {float(auc):.4f}.</p>")


# ------------------------------------------------------------------------------ notebooks

def result_html(res, top: int = 8) -> str:
    """A compact HTML table of a `Result` for Jupyter (`Result._repr_html_`): the model,
    log p(data), the strongest edges and, for a MAP network, its arcs."""
    s = res.summary or {}
    o = s.get("options") or {}
    n = len(res.names)
    head = [f"n = {n} variables"]
    if s.get("m") is not None:
        head.append(f"m = {s['m']} rows")
    head += [f"{k.replace('_', ' ')} {o[k]}" for k in ("max_parents", "score", "structure_prior") if k in o]
    parts = [f"<p><b>bigbn Result</b>: {_e(', '.join(head))}"]
    if res.log_marginal is not None:
        parts.append(f"; log p(data) = {res.log_marginal:.6f}")
    parts.append("</p>")
    if res.posterior is not None:
        rows = [(u, v, f"{p:.4f}", f"{res.posterior[res.names.index(v), res.names.index(u)]:.4f}")
                for u, v, p in res.edges()[:top]]
        parts.append(table(("parent", "child", "p(parent → child)", "p(child → parent)"), rows,
                           numeric=(2, 3)))
        parts.append(f"<p class=muted>{min(top, n * (n - 1))} of {n * (n - 1)} edges; "
                     "res.to_pandas() has all</p>")
    if res.map_parents is not None:
        arcs = ", ".join(f"{a} → {b}" for a, b in res.map_arcs()) or "(no arcs)"
        parts.append(f"<p>MAP network: {_e(arcs)}</p>")
    return "<div>" + "".join(parts) + "</div>"
