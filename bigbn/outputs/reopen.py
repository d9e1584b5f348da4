"""A finished run's work directory opened again as the `Result` `learn` returned.

`open_run(workdir)` (``bigbn.open``) reads the run's checked tables through
`bigbn.store.rundir.FinishedRun` (so every CRC and consistency check of `bigbn sample`
applies) and gives the same `Result` as ``learn(..., workdir=workdir)`` did, number for
number, without the data or the options: the edge posteriors, log p(data), every
parent-set posterior, the MAP network when the run found one, summary.json. What a
`bigbn sample` and `bigbn effects` left in the folder comes with it (``Result.samples``:
samples-order-modular/, else samples-dag-modular/; ``Result.effects``: effects.csv).
A folder that is not a finished run is one line naming what is missing and the command
that finishes it.

`export` writes the learned network (`bigbn.outputs.model`) of a workdir as BIF or XMLBIF.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np

from bigbn import options as opt
from bigbn.errors import OptionError, WorkdirError
from bigbn.io import frames
from bigbn.io.bif import write_bif, write_xmlbif
from bigbn.outputs import model
from bigbn.outputs.effects import Effects
from bigbn.outputs.parentsets import parent_set_posteriors
from bigbn.outputs.result import Result
from bigbn.outputs.samplefile import load_samples
from bigbn.outputs.samples import PRIORS, Samples
from bigbn.store.rundir import FinishedRun, RunDir, check_scores_sound, finished_run
from bigbn.store.workdir import check_outputs, open_file, read_file

__all__ = ["open_run", "read_samples", "read_effects", "export", "FORMATS"]

THEN = "open it (bigbn.open)"
#: what `bigbn export` writes, and the file name it writes by default
FORMATS = {"bif": "network.bif", "xmlbif": "network.xml"}


def open_run(workdir, then: str = THEN) -> Result:
    """The `Result` of the finished run in ``workdir`` (module docstring); WorkdirError (one
    line) when the folder holds no finished run or a file of it is damaged. then: what the
    caller does next, for the messages ("open it (bigbn.open)")."""
    if not isinstance(workdir, (str, Path)) and not hasattr(workdir, "__fspath__"):
        raise OptionError(f"open() takes a work directory (a path), got {type(workdir).__name__}")
    opt.workdir(workdir)  # "" (an unset variable?) opened the current folder, as learn(workdir="") refuses
    rd = RunDir(workdir, then=then)
    map_only = not rd.plan.posterior
    if map_only and rd.plan.tiered:  # its MAP network is map_dag.csv alone (a tier's MAP lattice
        run = rd  # holds the parents within the tier only), written when the run finished
        check_scores_sound(rd, then)  # (FinishedRun checks it in the other cases)
        if not (rd.root / "map_dag.csv").exists():  # not a file: `_read_map` names it
            raise WorkdirError(f"{rd.root}: the run's MAP network is not finished (no map_dag.csv); run the "
                               f"same `bigbn run` command again, then {then}")
    else:
        run = FinishedRun(workdir, then, need="map") if map_only else finished_run(workdir, then=then)
    root = run.root
    summary_path = root / "summary.json"
    try:
        summary = json.loads(read_file(summary_path))
        if not isinstance(summary, dict):
            raise ValueError
    except FileNotFoundError:
        raise WorkdirError(f"{summary_path} is missing: run the same `bigbn run` command again (it computes "
                           f"nothing on a finished run, it writes the run's files), then {then}") from None
    except WorkdirError:
        raise  # a FIFO or a folder of its name (`read_file`)
    except (OSError, ValueError, UnicodeDecodeError):
        raise WorkdirError(f"{summary_path} is damaged: run the same `bigbn run` command again to rewrite "
                           f"it, then {then}") from None
    res = Result(None, run.names, None, summary=summary, workdir=root)
    if rd.record.children < len(run.names):  # a time series: the children are slice t's, as learn's
        res.children = tuple(range(rd.record.children))
    if not map_only:
        res.posterior = run.posterior()
        res.log_marginal = run.log_px + run.log_offset
        if run.tiered:
            res.tiered = run.families()
        else:
            lat = run.tiers[0].lattice
            res.families = lat.plan.families
            res.parent_set_posterior = parent_set_posteriors(lat.beta, lat.gamma(), lat.log_px)
    _read_map(res, run)
    if not map_only:
        res.samples = read_samples(root, res, run.log_px, run.log_offset)
        res.effects = read_effects(root / "effects.csv", res.names)
    return res


def _read_map(res: Result, run: FinishedRun | RunDir) -> None:
    """The MAP network, when the run found one: a run without tiers from its checked
    tables, a run with tiers from map_dag.csv and summary.json (it is not one lattice)."""
    if not run.plan.map_dag:
        return
    if not run.plan.tiered:
        lat = run.tiers[0].lattice
        if lat.plan_read.map_dag:
            res.map_parents, res.map_log_score = lat.map_parents(), lat.log_map_score
        return
    path = run.root / "map_dag.csv"
    info = res.summary.get("map_dag")
    listed, score = (info.get("arcs"), info.get("log_score")) if isinstance(info, dict) else (None, None)
    if not (isinstance(score, (int, float)) and not isinstance(score, bool)) or not (
            listed is None or isinstance(listed, list)
            and all(isinstance(a, list) and len(a) == 2 and all(isinstance(x, str) for x in a) for a in listed)):
        if not path.exists():
            return  # the MAP stage did not finish: the posterior alone
        raise WorkdirError(f"{run.root / 'summary.json'}: its \"map_dag\" is damaged: run the same `bigbn run --map` "
                           f"command again to rewrite it, then {THEN}")
    try:
        with open_file(path, "r", newline="", encoding="utf-8") as fh:  # as written, whatever the locale
            rows = list(csv.reader(fh))
        # checked as the run wrote it: its header, arcs between two of its variables, each
        # once, the arcs summary.json lists (a file without its header lost its first arc; a
        # loop, a cycle or an arc of another run made a "MAP network" that is no DAG)
        if not rows or rows[0] != ["parent", "child"]:
            raise ValueError("header")
        index = {s: j for j, s in enumerate(res.names)}
        arcs = [(index[u], index[v]) for u, v in rows[1:]]
        if len(set(arcs)) != len(arcs) or any(u == v for u, v in arcs) \
                or (listed is not None and sorted(map(tuple, listed)) != sorted(tuple(r) for r in rows[1:])):
            raise ValueError("arcs")
        masks = np.zeros(len(res.names), dtype=object)
        for u, v in arcs:
            masks[v] |= 1 << u
        if not _acyclic(masks):
            raise ValueError("cycle")
    except FileNotFoundError:
        return  # the MAP stage did not finish: the posterior alone
    except WorkdirError:
        raise
    except (OSError, ValueError, KeyError, TypeError):
        raise WorkdirError(f"{path} is damaged: run the same `bigbn run --map` command again to rewrite it, "
                           f"then {THEN}") from None
    res.map_parents, res.map_log_score = masks, float(score)


def _acyclic(masks) -> bool:
    """Whether the parent sets ``masks`` (Python int bit masks, one per node) form a DAG."""
    left, placed = set(range(len(masks))), 0
    while left:
        ready = [v for v in left if int(masks[v]) & ~placed == 0]
        if not ready:
            return False
        for v in ready:
            placed |= 1 << v
        left -= set(ready)
    return True


def read_samples(root: Path, res: Result, log_px: float, offset: float) -> Samples | None:
    """The samples a `bigbn sample` wrote into WORKDIR/samples-PRIOR/ (order-modular
    first), as `bigbn.sample` returned them; None when there are none. log_px, offset:
    the run's log p(x) less its score offset, and that offset (`FinishedRun`)."""
    for prior in PRIORS:
        folder = Path(root) / f"samples-{prior}"
        if (folder / "samples.npz").exists():  # a FIFO or a folder of its name: one line below
            break
    else:
        return None
    again = f"run `bigbn sample --workdir {root}` again to rewrite it, then {THEN}"
    info, arrays = load_samples(folder, res.names, prior, log_px + offset, again)
    info = {k: v for k, v in info.items() if k not in ("names", "log_marginal_likelihood")}
    if "log_z_dag_modular" in info:
        info["log_z_dag_modular"] -= offset
    return Samples(tuple(res.names), arrays["parents"], arrays["weights"], prior, int(info.get("seed", 0)),
                   arrays["log_linear_extensions"], arrays["log_score"] - offset, log_px,
                   arrays["orders"], res.posterior, info, offset)


def read_effects(path: Path, names) -> Effects | None:
    """The effects a `bigbn effects` wrote to WORKDIR/effects.csv as an `Effects` (its
    credible level is not in the file: ``level`` is NaN); None when there is none."""
    path = Path(path)
    if not path.exists():  # a FIFO or a folder of its name: one line below, not "no effects"
        return None
    index = {s: j for j, s in enumerate(names)}
    try:
        with open_file(path, "r", newline="", encoding="utf-8") as fh:  # as written, whatever the locale
            rows = list(csv.reader(fh))
        header = rows[0]
        if header == ["cause", "effect", "mean", "p_zero", "lower", "upper"]:
            pairs, cols = [], [[], [], [], []]
            for r in rows[1:]:
                pairs.append((index[r[0]], index[r[1]]))
                for c, x in zip(cols, r[2:6]):
                    c.append(float(x))
            mean, p_zero, lower, upper = (np.array(c) for c in cols)
            return Effects(tuple(names), "continuous", pairs, float("nan"), p_zero, mean, lower, upper)
        if header != ["cause", "cause_level", "effect", "effect_level", "probability", "p_zero"]:
            raise ValueError("header")
        levels: dict[int, list[str]] = {}
        cells: dict[tuple[int, int], list] = {}
        for r in rows[1:]:
            x, y = index[r[0]], index[r[2]]
            for v, lv in ((x, r[1]), (y, r[3])):
                if lv not in levels.setdefault(v, []):
                    levels[v].append(lv)
            cells.setdefault((x, y), []).append((r[1], r[3], float(r[4]), float(r[5])))
        pairs, tables, p_zero = list(cells), [], []
        for (x, y), rs in cells.items():
            tab = np.full((len(levels[x]), len(levels[y])), np.nan)
            for a, b, prob, _ in rs:
                tab[levels[x].index(a), levels[y].index(b)] = prob
            # every cell once, each row a distribution, one P(zero) per pair: a file cut at a
            # line's end read as tables with cells of 0 (rows that did not add up to 1)
            if len(rs) != tab.size or np.isnan(tab).any() or len({r[3] for r in rs}) != 1 \
                    or not np.allclose(tab.sum(axis=1), 1.0, rtol=0, atol=1e-6):
                raise ValueError("a pair's table")
            tables.append(tab)
            p_zero.append(rs[0][3])
        return Effects(tuple(names), "discrete", pairs, float("nan"), np.array(p_zero), table=tables,
                       levels=tuple(tuple(levels.get(v, ())) for v in range(len(names))))
    except WorkdirError:
        raise
    except (OSError, ValueError, KeyError, IndexError, UnicodeDecodeError):
        raise WorkdirError(f"{path} is damaged or not bigbn's: run `bigbn effects --workdir "
                           f"{path.parent}` again to rewrite it, then {THEN}") from None


def export(workdir, fmt: str = "bif", out=None, dag="map", data=None, sep: str | None = None) -> Path:
    """Write the learned network of the finished run in ``workdir`` (`bigbn.outputs.model`:
    the DAG ``dag`` with posterior-mean CPDs) as BIF or XMLBIF to ``out`` (default
    WORKDIR/network.bif or network.xml); returns the path written."""
    if fmt not in FORMATS:
        raise OptionError(f"unknown format {fmt!r} (choose one of: {', '.join(FORMATS)})")
    res = open_run(workdir, then="export it")
    # before the fit: --out must not be the data it reads, nor a file of the run (-o
    # WORKDIR/summary.json left a run that the next command called damaged)
    record = model.read_record(res.workdir) if res.workdir is not None else None
    reads = [data if isinstance(data, (str, os.PathLike)) else None, getattr(record, "source", None)]
    opt.output_file(out, "--out", inputs=[x for x in reads if x not in ("", "array", frames.SOURCE)],
                    workdir=res.workdir, own=tuple(FORMATS.values()))
    net = model.fit_result(res, dag, data, sep)
    if isinstance(net, model.GaussianNetwork):
        raise OptionError(f"{fmt.upper()} holds discrete networks; this run's data are continuous (BGe): "
                          "Result.to_pgmpy() gives its LinearGaussianBayesianNetwork")
    if out is None:  # the workdir's own file (a file the user names may be a pipe)
        check_outputs(res.workdir, (FORMATS[fmt],))
    path = Path(out) if out is not None else res.workdir / FORMATS[fmt]
    if path.is_dir():
        raise OptionError(f"{path}: is a folder, not a file; give a file name (e.g. {path / FORMATS[fmt]})")
    write = write_bif if fmt == "bif" else write_xmlbif
    if fmt == "bif" and res.children is not None:  # a time series: its lagged copies NAME[t-l] as
        from bigbn.tools.series import write_dbn  # NAME.t-l (BIF names hold no brackets), which
        write = write_dbn  # `bigbn simulate --network FILE --lag` reads; they were refused
    try:
        write(net, path)
    except OSError as e:
        raise OptionError(f"cannot write {path}: {e.strerror}") from None
    return path
