"""The paper's simulation study (Koivisto 2006, section 5), resumable.

For every configuration (n, k, r) and replicate: draw a random network
(`bigbn.tools.simulate.random_network`, section 5.2), draw max(m) records from it, and for
every m in the nested-subset list analyse the first m records under the generating
model class (K2 score = Dirichlet(1) parameter priors, order-modular structure prior,
maximum indegree k; section 5.3), then score the undirected-edge ROC (section 5.1).

Plan, then execute: `StudyPlan` is the grid; `plan.cells()` lists the (n, k, r,
replicate, m) cells; `run_study` computes the cells whose result file is missing and
skips the rest, so a killed study resumed gives the same table. Every random number
comes from ``default_rng([seed, n, k, r, replicate, stream])``, so a cell's data do not
depend on which other cells are in the grid, and the m-row subsets are prefixes of one
data set (`bigbn.tools.simulate.sample` is prefix-stable).

Output directory::

    OUT/
      study.json                       seed, score and prior (checked on resume)
      networks/n10_k4_r2_rep00.bif     each replicate's true network (with CPTs)
      networks/n10_k4_r2_rep00.truth.csv
      cells/n10_k4_r2_rep00_m00100.edges.csv   parent,child,posterior
      cells/n10_k4_r2_rep00_m00100.json        auc, log_marginal, seconds (written last)
      auc.csv                          one row per finished cell in OUT (every grid run there)
      figures/by_k_n10.png             paper fig. 1 style: panels (r, k), a curve per m
      figures/by_n_k4.png              paper fig. 2 style: panels (r, n), a curve per m
      figures/variance_n10_k4.png      paper figs. 3-4 style: panels (r, m), a curve per replicate
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bigbn.io.bif import write_bif
from bigbn.errors import DataError, OptionError
from bigbn.plan.lattice import MAX_NODES
from bigbn.tools.roc import PAIR_ROUNDING, RocCurve, draw_roc_panel, edge_roc, read_edges
from bigbn.store.workdir import Workdir
from bigbn.tools.simulate import random_network, read_truth, sample, write_truth

#: The paper's grid (section 5.2).
PAPER_NS = (5, 10, 15, 20, 25)
PAPER_KS = (2, 3, 4, 5)
PAPER_RS = (2, 4)
PAPER_MS = (20, 100, 500, 2000, 10000)
PAPER_REPLICATES = 10

#: The most cells one study plans (the paper's grid has 2,000): each is a run of the engine
#: with a result file of its own, and `StudyPlan.cells` lists them all at once.
MAX_CELLS = 10**6

_NETWORK_STREAM, _DATA_STREAM = 0, 1


@dataclass(frozen=True)
class Cell:
    """One analysis: replicate `replicate` of configuration (n, k, r), first m records."""

    n: int
    k: int
    r: int
    replicate: int
    m: int

    @property
    def replicate_key(self) -> str:
        return f"n{self.n}_k{self.k}_r{self.r}_rep{self.replicate:02d}"

    @property
    def key(self) -> str:
        return f"{self.replicate_key}_m{self.m:05d}"


@dataclass(frozen=True)
class StudyPlan:
    """The experiment grid. Lists are sorted and deduplicated on construction."""

    ns: tuple = PAPER_NS
    ks: tuple = PAPER_KS
    rs: tuple = PAPER_RS
    ms: tuple = PAPER_MS
    replicates: int = PAPER_REPLICATES
    seed: int = 0
    score: str = "k2"
    structure_prior: str = "koivisto-sood"

    def __post_init__(self):
        from bigbn.options import _integer

        for name, lo in (("ns", 2), ("ks", 0), ("rs", 2), ("ms", 1)):
            given = getattr(self, name)
            if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
                raise OptionError(f"study: {name} must be a list of integers, got {given!r}")
            # int() took 2.7 as 2 and "x" was a ValueError traceback
            vals = tuple(sorted({_integer(v, f"study: a value of {name}") for v in given}))
            if not vals:
                raise OptionError(f"study: the list of {name[:-1]} values is empty")
            if vals[0] < lo:
                raise OptionError(f"study: {name[:-1]} values must be >= {lo}, got {vals[0]}")
            object.__setattr__(self, name, vals)
        # before any folder is made (learn refused it after the networks); any case, and auto
        # (bdeu here), as learn takes a score's name: "K2" is the paper's
        if not isinstance(self.score, str) or self.score.lower() not in ("k2", "bdeu", "auto"):
            raise OptionError(f"study: score must be k2 or bdeu, got {self.score!r}")
        if self.structure_prior not in ("koivisto-sood", "uniform"):
            raise OptionError(f"study: structure prior must be koivisto-sood or uniform, got {self.structure_prior!r}")
        object.__setattr__(self, "replicates", _integer(self.replicates, "study: replicates"))
        object.__setattr__(self, "seed", _integer(self.seed, "study: seed"))
        if self.replicates < 1:
            raise OptionError(f"study: replicates must be >= 1, got {self.replicates}")
        if self.seed < 0:
            raise OptionError(f"study: seed must be >= 0, got {self.seed}")
        # before any folder or network is made: n = 41 drew and wrote its networks, then the
        # engine refused it; --replicates 10^11 listed its cells until memory ran out (a hang)
        if self.ns[-1] > MAX_NODES:
            raise OptionError(f"study: n values must be <= {MAX_NODES} (the engine's most variables), "
                              f"got {self.ns[-1]}")
        count = len(self.ns) * len(self.ks) * len(self.rs) * len(self.ms) * self.replicates
        if count > MAX_CELLS:
            raise OptionError(f"study: {count:,} cells (n × k × states × rows values × replicates), more than "
                              f"{MAX_CELLS:,}; give fewer values or --replicates")

    def replicates_list(self) -> list[Cell]:
        """One Cell per (n, k, r, replicate), m = max(ms): the data sets to draw."""
        return [Cell(n, k, r, rep, max(self.ms)) for n in self.ns for k in self.ks
                for r in self.rs for rep in range(self.replicates)]

    def cells(self) -> list[Cell]:
        """Every (n, k, r, replicate, m) cell, grouped by replicate, m ascending."""
        return [Cell(c.n, c.k, c.r, c.replicate, m) for c in self.replicates_list()
                for m in self.ms]


def replicate_network_and_data(plan: StudyPlan, cell: Cell):
    """The true network and the max(ms) x n data (int64 codes) of a cell's replicate."""
    key = [plan.seed, cell.n, cell.k, cell.r, cell.replicate]
    net = random_network(cell.n, cell.k, cell.r, np.random.default_rng(key + [_NETWORK_STREAM]))
    data = sample(net, max(plan.ms), np.random.default_rng(key + [_DATA_STREAM]))
    return net, data


def _learn_input(net, data):
    """What `learn` gets: a Dataset with the true arities r (a state may be absent
    from a small prefix, which must not change r in the K2 score)."""
    from bigbn.io.data import Dataset

    return Dataset(names=net.names, data=data, arities=net.cardinalities,
                   levels=net.states, path="")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _edges_csv(names, P) -> str:
    lines = ["parent,child,posterior"]
    for u in range(len(names)):
        for v in range(len(names)):
            if u != v:
                lines.append(f"{names[u]},{names[v]},{float(P[u, v])!r}")
    return "\n".join(lines) + "\n"


STUDY_FORMAT = "bigbn-study"


def _check_study_json(out: Path, plan: StudyPlan) -> None:
    """OUT is a study's folder when it holds a study.json that bigbn wrote (it carries
    ``"format": "bigbn-study"``) with the same seed, score and prior; a new or empty
    folder becomes one. Anything else is refused before a file in it is touched."""
    meta = {"format": STUDY_FORMAT, "seed": plan.seed, "score": plan.score,
            "structure_prior": plan.structure_prior}
    path = out / "study.json"
    from bigbn.options import parent_folder

    parent_folder(out, "study folder")  # a mistyped a/b/OUT made a/ and a/b/ (mkdir -p)
    if out.exists() and not out.is_dir():
        raise OptionError(f"{out} is a file, not a folder; give the study a folder")
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            old = None
        if not (isinstance(old, dict) and old.get("format") == STUDY_FORMAT):
            raise OptionError(f"{path} was not written by `bigbn study` (or is damaged), so {out} is "
                              "not a study folder: bigbn leaves it untouched; give a new or empty folder")
        for key, val in meta.items():
            if old.get(key) != val:
                raise OptionError(
                    f"{out}: this study directory was made with {key}={old.get(key)!r}, "
                    f"not {val!r}; use the same options or another directory"
                )
    else:
        others = sorted(p.name for p in out.iterdir() if p.name != "lock") if out.is_dir() else []
        if others:  # (the lock is the study's own, taken before this check)
            shown = ", ".join(others[:3])
            raise OptionError(f"{out} is not empty and not a study folder (it holds {shown}, but no "
                              "study.json); bigbn leaves it untouched: give a new or empty folder")
        out.mkdir(exist_ok=True)
        _atomic_write(path, json.dumps(meta, indent=2) + "\n")


def cell_done(out, cell: Cell) -> bool:
    """True iff the cell's result file exists (resume skips it)."""
    return (Path(out) / "cells" / f"{cell.key}.json").exists()


def run_study(plan: StudyPlan, out, learn=None, progress=None, figures: bool = True) -> list[dict]:
    """Compute every missing cell of the plan, then write auc.csv (and figures).

    learn : the engine, ``learn(data, names=, max_parents=, score=, structure_prior=,
        workdir=)`` returning an object with ``.posterior`` (n, n) and ``.log_marginal``;
        default `bigbn.api.learn`.
    progress : optional callable ``progress(event, cell, info)`` with event one of
        "skip", "start", "done".
    Returns the rows of auc.csv (dicts).
    """
    if learn is None:
        from bigbn.api import learn
    out = Path(out)
    _check_study_json(out, plan)
    (out / "cells").mkdir(exist_ok=True)
    (out / "networks").mkdir(exist_ok=True)
    with Workdir(out).lock():  # two studies must not write the same folder at once
        return _run_cells(plan, out, learn, progress or (lambda event, cell, info: None), figures)


def _run_cells(plan: StudyPlan, out: Path, learn, emit, figures: bool) -> list[dict]:
    for rep in plan.replicates_list():
        todo = [Cell(rep.n, rep.k, rep.r, rep.replicate, m) for m in plan.ms]
        pending = [c for c in todo if not cell_done(out, c)]
        for c in todo:
            if c not in pending:
                emit("skip", c, {})
        if not pending:
            continue
        net, data = replicate_network_and_data(plan, rep)
        bif = out / "networks" / f"{rep.replicate_key}.bif"
        truth = out / "networks" / f"{rep.replicate_key}.truth.csv"
        if not truth.exists():
            write_bif(net, bif, name=rep.replicate_key)
            write_truth(net, truth)
        for c in pending:
            emit("start", c, {})
            t0 = time.perf_counter()
            res = learn(_learn_input(net, data[: c.m]), names=list(net.names),
                        max_parents=min(c.k, c.n - 1), score=plan.score,
                        structure_prior=plan.structure_prior, workdir=None)
            seconds = time.perf_counter() - t0
            P = np.asarray(res.posterior, dtype=np.float64)
            if P.shape != (c.n, c.n) or not np.all(np.isfinite(P)) or not np.all((P >= 0) & (P <= 1)) \
                    or np.any(P + P.T > 1 + PAIR_ROUNDING):  # no cell file that `read_edges` refuses
                raise DataError(f"study: learn returned a bad posterior for cell {c.key}")
            auc = _auc_or_nan(P, net.adjacency())
            _atomic_write(out / "cells" / f"{c.key}.edges.csv", _edges_csv(net.names, P))
            info = {**asdict(c), "auc": auc, "log_marginal": float(res.log_marginal),
                    "seconds": seconds, "score": plan.score,
                    "structure_prior": plan.structure_prior}
            _atomic_write(out / "cells" / f"{c.key}.json", json.dumps(info) + "\n")
            emit("done", c, info)
    rows = collect(plan, out)
    write_table(rows, out / "auc.csv")
    if figures:
        write_figures(plan, out)
    return rows


def _auc_or_nan(P, adjacency) -> float:
    """AUC, or NaN where the ROC is undefined (truth with no edge or no non-edge)."""
    try:
        return edge_roc(P, adjacency).auc
    except DataError:
        return math.nan


TABLE_COLUMNS = ("n", "k", "r", "replicate", "m", "auc", "log_marginal", "seconds")


def collect(plan: StudyPlan, out) -> list[dict]:
    """The result record of every finished cell in ``out`` (of this plan and of any
    earlier grid run into the same folder), sorted by (n, k, r, replicate, m), so that a
    smaller later run never shrinks auc.csv."""
    del plan  # every finished cell counts, whichever grid produced it
    rows = []
    for path in sorted((Path(out) / "cells").glob("*.json")):
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise DataError(f"{path}: corrupt result file ({exc}); delete it to redo the cell") from None
        rows.append(_check_row(row, path))
    rows.sort(key=lambda r: tuple(r[c] for c in ("n", "k", "r", "replicate", "m")))
    return rows


def _check_row(row, path: Path) -> dict:
    """A cell's result record as `_run_cells` writes it, else DataError naming the file ({}
    or a list was a KeyError or TypeError traceback, m as text one from sorting, and a
    record of another cell under this one's name went into auc.csv as that cell)."""
    def bad(why: str):
        raise DataError(f"{path}: corrupt result file ({why}); delete it to redo the cell")

    if not isinstance(row, dict):
        bad(f"a JSON {type(row).__name__}, not an object")
    for c in TABLE_COLUMNS:
        if c not in row:
            bad(f"no {c!r}")
        v = row[c]
        if c in ("n", "k", "r", "replicate", "m"):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                bad(f"{c} is {v!r}, not a whole number")
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            bad(f"{c} is {v!r}, not a number")
    key = Cell(*(row[c] for c in ("n", "k", "r", "replicate", "m"))).key
    if path.stem != key:
        bad(f"it holds cell {key}")
    return row


def write_table(rows, path) -> None:
    """CSV of the result rows (columns TABLE_COLUMNS), written atomically."""
    lines = [",".join(TABLE_COLUMNS)]
    for row in rows:
        lines.append(",".join(repr(row[c]) if isinstance(row[c], float) else str(row[c])
                              for c in TABLE_COLUMNS))
    _atomic_write(Path(path), "\n".join(lines) + "\n")


def cell_roc(out, cell: Cell) -> RocCurve | None:
    """The ROC of a finished cell, from its edge file and truth; None if not available."""
    out = Path(out)
    edges = out / "cells" / f"{cell.key}.edges.csv"
    truth = out / "networks" / f"{cell.replicate_key}.truth.csv"
    if not (edges.exists() and truth.exists()):
        return None
    names, P = read_edges(edges)
    adjacency = read_truth(truth, names)  # a damaged file is an error, not a curve left out
    try:
        return edge_roc(P, adjacency)
    except DataError:  # the truth has no edge or no non-edge: no curve
        return None


def _panel_figure(rows, cols, title):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2.6 * len(cols) + 0.6, 2.6 * len(rows) + 0.8), layout="constrained")
    axes = fig.subplots(len(rows), len(cols), squeeze=False, sharex=True, sharey=True)
    fig.suptitle(title)
    return fig, axes


def _draw(ax, curves, labels, panel_title):
    draw_roc_panel(ax, curves, labels if curves else None)
    ax.set_title(panel_title, fontsize="medium")
    ax.label_outer()


def write_figures(plan: StudyPlan, out, replicate: int = 0) -> list[Path]:
    """Figures in the style of the paper's figures 1-4 from the finished cells.

    by_k_n{n}: rows r, columns k, one curve per m (replicate `replicate`) - figure 1;
    by_n_k{k}: rows r, columns n, one curve per m - figure 2;
    variance_n{n}_k{k}: rows r, columns m, one curve per replicate - figures 3 and 4.
    Figures with no finished cell are not written. Returns the paths written.
    """
    from bigbn.outputs.plot import save_figure

    out = Path(out)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    written = []
    mlab = [f"m = {m}" for m in plan.ms]

    def per_m(n, k, r):
        pairs = [(cell_roc(out, Cell(n, k, r, replicate, m)), lab) for m, lab in zip(plan.ms, mlab)]
        return [c for c, _ in pairs if c is not None], [lab for c, lab in pairs if c is not None]

    def emit(fig, any_curve, name):
        if any_curve:
            path = figdir / name
            save_figure(fig, path)
            written.append(path)

    for n in plan.ns:
        fig, axes = _panel_figure(plan.rs, plan.ks, f"n = {n}, replicate {replicate}")
        anyc = False
        for a, r in enumerate(plan.rs):
            for b, k in enumerate(plan.ks):
                curves, labels = per_m(n, k, r)
                anyc |= bool(curves)
                _draw(axes[a, b], curves, labels, f"k = {k}, r = {r}")
        emit(fig, anyc, f"by_k_n{n}.png")
    for k in plan.ks:
        fig, axes = _panel_figure(plan.rs, plan.ns, f"k = {k}, replicate {replicate}")
        anyc = False
        for a, r in enumerate(plan.rs):
            for b, n in enumerate(plan.ns):
                curves, labels = per_m(n, k, r)
                anyc |= bool(curves)
                _draw(axes[a, b], curves, labels, f"n = {n}, r = {r}")
        emit(fig, anyc, f"by_n_k{k}.png")
    for n in plan.ns:
        for k in plan.ks:
            fig, axes = _panel_figure(plan.rs, plan.ms, f"n = {n}, k = {k}, all replicates")
            anyc = False
            for a, r in enumerate(plan.rs):
                for b, m in enumerate(plan.ms):
                    found = [(rep, cell_roc(out, Cell(n, k, r, rep, m))) for rep in range(plan.replicates)]
                    curves = [c for _, c in found if c is not None]
                    labels = [f"replicate {rep}: AUC {c.auc:.3f}" for rep, c in found if c is not None]
                    anyc |= bool(curves)
                    _draw(axes[a, b], curves, labels, f"m = {m}, r = {r}")
            emit(fig, anyc, f"variance_n{n}_k{k}.png")
    return written
