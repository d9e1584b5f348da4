"""Command line: a thin click layer over the library (errors become one-line messages here)."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import sys
import time
import warnings
from pathlib import Path

import click

from bigbn.scores import base as scoring
from bigbn._version import __version__
from bigbn.cli.tools import CONTEXT, echo, terminal_text
from bigbn import options as opt
from bigbn.errors import BigBNError, OptionError
from bigbn.engine.progress import Listener, ProgressEvent
from bigbn.store.rundir import gib as _fmt_bytes


class _Terminated(KeyboardInterrupt):
    """SIGTERM (what batch schedulers send at the wall-time limit), unwound like Ctrl-C."""


def _on_sigterm(signum, frame):
    raise _Terminated()


class BigBNGroup(click.Group):
    """Turns library errors into `Error: ...` + exit 1 (never a traceback), Ctrl-C into 130
    and SIGTERM into 143, both with the line that says how to resume."""

    def invoke(self, ctx):
        import signal
        import threading

        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            return super().invoke(ctx)
        except BigBNError as e:  # names and paths in the message as the output shows them
            raise click.ClickException(terminal_text(e)) from None
        except _Terminated:
            echo("terminated (SIGTERM): finished tasks are kept; run the same command again "
                       "to resume", err=True)
            sys.exit(143)
        except KeyboardInterrupt:
            echo("interrupted: finished tasks are kept; run the same command again to resume",
                       err=True)
            sys.exit(130)
        except OSError as e:
            if e.errno == errno.EPIPE:  # output piped into `head` and the like: not an error
                sys.exit(141)
            if e.errno == errno.ENOSPC:
                raise click.ClickException(terminal_text(
                    f"disk full ({e.filename or 'workdir'}): finished tasks are kept in the journal; "
                    "free space and run the same command again to resume")) from None
            where = f": {e.filename}" if e.filename else ""
            raise click.ClickException(terminal_text(f"{e.strerror or e}{where}")) from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


@click.group(cls=BigBNGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="bigbn")
def main():
    """Exact Bayesian edge posteriors for Bayesian networks (Koivisto 2006).

    \b
    Example:
      bigbn run examples/asia.csv --workdir /tmp/asia
    """


#: `cli`'s click context object (``ctx.obj`` of the command's root context): the command
#: runs in a process of its own, which ends when it returns
OWN_PROCESS = "own process"


def own_process() -> bool:
    """Whether the command being run runs in a process of its own (`cli` started it, not
    `main` called by a test or another program): what it sets up for itself alone then
    ends with it. Said by the command's click context (its lifetime is the command's), not
    by a process-wide flag, which stayed set for a `main` called after `cli` returned."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.find_root().obj is OWN_PROCESS


def cli() -> None:
    """The `bigbn` command in a process of its own (the console script, ``python -m
    bigbn.cli``): `main`, with the cyclic garbage collector told that what exists now
    lives until the process ends (`gc.freeze`), once the modules are imported and again
    before the interpreter shuts down. Python's shutdown collects garbage while it tears
    the modules down, and with numba, zarr and dask loaded (≈ 140 000 objects) that took
    0.25–0.35 s of every command, a fifth of `bigbn run` at n = 20; frozen objects are
    left out, and what the process wrote is closed and flushed before it returns. Tests
    call `main` in their own process and collect as usual. A command that knows what its
    process will run may start it leaner (`own_process`)."""
    gc.freeze()
    try:
        main(obj=OWN_PROCESS)
    finally:
        gc.freeze()


class Progress(Listener):
    """The one place progress is shown: every `bigbn.engine.progress.ProgressEvent` of `run`,
    `sample` and `effects` (passed as their ``progress=``) -> one status line on a
    terminal, rewritten in place (every stage's tasks done and each stage's own elapsed
    time, from its first event with work done); plain log lines otherwise. One line
    cannot be garbled by Ctrl-C, resizing or other output, as stacked per-stage bars were."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.state: dict[str, tuple[int, int]] = {}
        self.begun: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.last_line = 0.0
        self.shown = False

    def on_progress(self, event: ProgressEvent) -> None:
        stage, done, total = event.stage, event.done, event.total
        if self.quiet:
            return
        now = time.monotonic()
        first = self.state.get(stage, (done, total))[0]
        self.state[stage] = (done, total)
        if stage not in self.begun and (done > first or stage == "scores"):
            self.begun[stage] = now  # the stage's own clock (gamma waits for forward, backward)
        if done == total and stage in self.begun:
            self.ended.setdefault(stage, now)
        if self.tty:
            if done == total or now - self.last_line > 0.1:
                self.last_line = now
                sys.stderr.write("\r[bigbn] " + "  ".join(self._stage_text(s, now) for s in self.state)
                                 + "\x1b[K")
                sys.stderr.flush()
                self.shown = True
            return
        if done == total or done == 0 or now - self.last_line > 5:
            self.last_line = now
            echo(f"[bigbn] {stage}: {done}/{total} tasks", err=True)

    def _stage_text(self, stage: str, now: float) -> str:
        done, total = self.state[stage]
        text = f"{stage} {done}/{total}"
        if stage in self.begun:
            text += f" {self.ended.get(stage, now) - self.begun[stage]:.1f}s"
        return text

    def close(self):
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.shown = False


def _score_option_flags(f):
    """One flag per option of the built-in scores (--ess, --alpha-mu, ...); their values reach
    the command as keyword arguments and `scoring.check_options` validates them, as for the API."""
    for option in reversed(scoring.all_options()):
        f = click.option(option.flag, option.name, default=None, type=float, help=option.help)(f)
    return f


_STRUCTURE_PRIOR = click.Choice(["uniform", "koivisto-sood"])

#: --memory of run, plan and scores (read by `options.memory`)
_memory_option = click.option("--memory", default=None, help="Memory budget, e.g. 4G (default: RAM/4, ≤ 8G).")


def _column_kind_flags(f):
    """--discrete / --continuous: the cg score's column typing, overridden column by column."""
    f = click.option("--continuous", default=None, metavar="A,B",
                     help="Columns the cg score reads as continuous (mixed data; see --discrete).")(f)
    return click.option("--discrete", default=None, metavar="A,B",
                        help="Columns the cg score reads as discrete. Without it a text column is "
                             "discrete, a number column continuous, but whole numbers with at most 10 "
                             "levels discrete; a table with text and continuous columns is scored by cg.")(f)


def _kind_lines(summary) -> list[str]:
    """The typing of a mixed run's columns, as `bigbn run` prints it (empty for other runs)."""
    kinds = summary.get("column_kinds")
    if not kinds:
        return []
    out = []
    for kind in ("discrete", "continuous"):
        names = [name for name, k in kinds.items() if k == kind]
        out.append(f"{kind} columns ({len(names)}): " + (", ".join(names) or "none"))
    return out


@main.command()
@click.argument("data", type=click.Path(dir_okay=False), required=False)
@click.option("--workdir", "-w", type=click.Path(file_okay=False),
              help="Where tables, journal and results go (default: ./bigbn-<data name>). "
                   "Run the same command again to resume an interrupted run.")
@click.option("--scores", "scores_file", type=click.Path(dir_okay=False),
              help="Local scores from a .jkl file (GOBNILP / aps format, natural logs) instead "
                   "of DATA: each is the whole local score, no structure prior is added; parent "
                   "sets absent from the file or with more than -k parents are impossible.")
@click.option("--max-parents", "-k", default=3, show_default=True, type=int,
              help="Maximum number of parents of every node.")
@click.option("--max-parents-file", type=click.Path(dir_okay=False),
              help="CSV node,max_parents: per-node limits (≤ -k).")
@click.option("--score", type=click.Choice(scoring.names()), default="auto",
              show_default=True, help="Local score; auto = BGe for continuous data, CG for mixed, else BDeu.")
@_score_option_flags
@click.option("--structure-prior", type=_STRUCTURE_PRIOR, default=None,
              help="ρ_i(G) = 1, or 1/C(n-1, |G|) (q_i ≡ 1)  [default: koivisto-sood; with "
                   "--scores none is added]")
@click.option("--forbid", type=click.Path(dir_okay=False), help="CSV parent,child: edges that may not appear.")
@click.option("--require", type=click.Path(dir_okay=False), help="CSV parent,child: edges that must appear.")
@click.option("--edge-prob", type=click.Path(dir_okay=False),
              help="CSV parent,child,prob: prior probability of individual edges.")
@_memory_option
@click.option("--disk-budget", default=None,
              help="Peak disk the run may take, e.g. 24G: levels of the forward table that do not "
                   "fit are computed again in the backward pass (same numbers, more time; the "
                   "run cannot be sampled). On a dask cluster the run keeps --workers tasks in "
                   "flight, in the plan's order. See `bigbn plan --disk-budget`.")
@click.option("--chunk-bits", type=int, default=None, help="Override the chunk size 2^c.")
@click.option("--workers", type=int, default=None, help="Parallel tasks (default: all cores).")
@click.option("--scheduler", default="dask", show_default=True,
              help="dask (dask's threaded scheduler), threads (bigbn's own thread pool), sync, "
                   "or tcp://HOST:PORT of a dask.distributed scheduler.")
@click.option("--processes", is_flag=True, help="Run --workers local worker processes (dask.distributed).")
@click.option("--alpha", "alpha_mode", type=click.Choice(["recompute", "store"]), default=None,
              help="Recompute alpha chunks in forward/backward (peak disk 10–12·2^n bytes, "
                   "default) or store all n·2^(n-1) of them once.")
@click.option("--fresh", is_flag=True, help="Discard what the workdir holds and start over.")
@click.option("--sep", default=None, metavar="CHAR",
              help="Column separator of DATA: ',', ';' or 'tab' (default: detected from the "
                   "header line; constraint files are always detected).")
@click.option("--parent-sets", "parent_set_mass", default=0.999, show_default=True,
              type=click.FloatRange(0, 1, min_open=True),
              help="parent_sets.csv lists each node's most probable parent sets until they "
                   "carry this much of its posterior (1: every one of nonzero posterior).")
@click.option("--map", "map_dag", is_flag=True,
              help="Also find the MAP network (the DAG of highest score Σ β_i(G_i)): "
                   "WORKDIR/map_dag.csv. Adds 9·2^n bytes of disk and about one forward pass.")
@click.option("--map-only", is_flag=True,
              help="Only the MAP network, no posterior: 9·2^n bytes of disk and nearly the time "
                   "of a posterior run (the same command without it adds the posterior).")
@click.option("--intervention-column", default=None, metavar="NAME",
              help="A column of DATA that is not a variable: each cell lists the variables "
                   "intervened on in its row, joined by '|' (empty: an observational row). Each "
                   "variable is scored from the rows where it was not intervened on.")
@click.option("--tiers", "tiers_file", type=click.Path(dir_okay=False),
              help="CSV node,tier (header optional; an integer per node, lower = earlier): only "
                   "orders that list every earlier tier first have prior mass, so parents come "
                   "from earlier tiers or the node's own. Every variable needs a tier. Up to "
                   "512 variables, each tier at most 40 (docs/posterior.md, \"Tiers\").")
@_column_kind_flags
@click.option("--lag", type=int, default=None,
              help="DATA are time series: a dynamic Bayesian network whose nodes (slice t) may take "
                   "parents among the variables up to LAG steps back, NAME[t-1] ... (default 1 with "
                   "--series-column or --time-column).")
@click.option("--series-column", default=None, metavar="NAME",
              help="The column telling series apart (the rows of a series contiguous); a time series run.")
@click.option("--time-column", default=None, metavar="NAME",
              help="The column ordering the rows within a series (numbers, or ISO 8601 dates and "
                   "times such as 2020-01-31T10:30; no ties); a time series run.")
@click.option("--no-contemporaneous", is_flag=True,
              help="A time series run without edges within slice t (only from lagged variables).")
@click.option("--top", default=10, show_default=True, type=click.IntRange(0),
              help="How many edges to print.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
def run(data, workdir, scores_file, max_parents, max_parents_file, score, structure_prior, forbid, require,
        edge_prob, memory, disk_budget, chunk_bits, workers, scheduler, processes, alpha_mode, fresh, sep,
        parent_set_mass, map_dag, map_only, intervention_column, tiers_file, lag, series_column, time_column,
        no_contemporaneous, top, quiet, discrete, continuous, **score_options):
    """Exact posterior of every directed edge of DATA (CSV with a header row).

    Writes WORKDIR/edges.csv (parent,child,posterior; all n(n-1) edges),
    WORKDIR/parent_sets.csv (child,parents,posterior; parents a JSON list of names) and
    WORKDIR/summary.json (log p(data), options, timings, peak memory). Then
    `bigbn sample --workdir WORKDIR` draws whole DAGs from the exact posterior.

    \b
    Examples:
      bigbn run examples/asia.csv --workdir /tmp/asia -k 2 --score k2
      bigbn run examples/asia.csv --tiers examples/asia.tiers.csv -w /tmp/asia-tiers
      bigbn run --scores asia.jkl -w /tmp/asia-jkl -k 2
      bigbn run series.csv --lag 1 --series-column patient -w /tmp/dbn
    """
    from bigbn.api import learn, load_dataset
    from bigbn.plan.lattice import MAX_NODES
    from bigbn.knowledge import Knowledge
    from bigbn.plan.tiers import MAX_TIERED_NODES

    # the options first (the data may be large, or a pipe that can be read only once)
    max_parents = opt.max_parents(max_parents, "--max-parents")
    chunk_bits = opt.chunk_bits(chunk_bits, "--chunk-bits")
    memory = opt.memory(memory, "--memory")
    disk_budget = opt.disk_budget(disk_budget, "--disk-budget")
    workers = opt.workers(workers, "--workers")
    per_slice = None  # a time series' variables per slice
    if scores_file is not None:
        from bigbn.scores.jkl import FileScore, read_jkl

        if data is not None:
            raise OptionError("give DATA or --scores FILE.jkl, not both")
        if lag is not None or series_column is not None or time_column is not None or no_contemporaneous:
            raise OptionError("--lag, --series-column, --time-column and --no-contemporaneous read series "
                              "from DATA; scores from a file have no rows")
        if score != "auto":
            raise OptionError("--score does not apply to --scores (the file's scores are used)")
        if intervention_column is not None:
            raise OptionError("--intervention-column needs DATA; scores from a file have no rows")
        if discrete is not None or continuous is not None:
            raise OptionError("--discrete and --continuous type the columns of DATA; scores from a file have none")
        ds, resolved = read_jkl(scores_file), FileScore()
        source = {"scores": ds}
    else:
        if data is None:
            raise click.UsageError("give DATA (a CSV file) or --scores FILE.jkl")
        if not os.path.exists(data):
            raise OptionError(f"{data}: no such file")
        dynamic = {"lag": lag, "series": series_column, "time": time_column}
        if any(v is not None for v in dynamic.values()) or no_contemporaneous:
            from bigbn import dbn

            if intervention_column is not None:
                raise OptionError("--intervention-column is not for time series (a DBN's rows are transitions)")
            if discrete or continuous:
                raise OptionError("--discrete / --continuous are not for time series yet (a DBN of mixed data "
                                  "is not supported)")
            tr = dbn.load(data, **dynamic, score=score, sep=sep)  # read once: DATA may be a pipe
            ds, resolved, _ = load_dataset(tr.dataset, score=score, max_nodes=MAX_TIERED_NODES)
            source = {"data": tr, "contemporaneous": not no_contemporaneous}
            per_slice = tr.n
        else:
            ds, resolved, _ = load_dataset(data, score=score, sep=sep,  # read once: DATA may be a pipe
                                           max_nodes=MAX_NODES if tiers_file is None else MAX_TIERED_NODES,
                                           intervention_column=intervention_column, discrete=discrete,
                                           continuous=continuous)
            source = {"data": ds, "intervention_column": intervention_column}
    if workdir is None:
        workdir = f"bigbn-{Path(data or scores_file).stem}"
    score_options = scoring.check_options(resolved, score_options)  # before any warning
    knowledge = Knowledge.from_files(ds.names, min(max_parents, ds.n - 1), tiers=tiers_file, forbid=forbid,
                                     require=require, edge_prob=edge_prob, max_parents=max_parents_file)
    for line in data_warnings(ds, per_slice):
        echo(f"Warning: {line}", err=True)
    if not quiet and not kernels_compiled():
        echo("[bigbn] first run: compiling the numerical kernels (once, about 10-30 s)",
                   err=True)
    # a resumed run keeps the plan it started with (its levels of L: under the --disk-budget it
    # was started with, or fitted to the free disk then), whatever this command says
    resumed = not fresh and (Path(workdir) / "run.json").is_file()
    progress = Progress(quiet)
    try:
        with warnings_as_lines():
            res = learn(**source, max_parents=max_parents, score=resolved if data else "auto",
                        score_options=score_options,
                        structure_prior=structure_prior, knowledge=knowledge or None, workdir=workdir, fresh=fresh,
                        chunk_bits=chunk_bits, memory=memory, workers=workers, disk_budget=disk_budget,
                        scheduler=("processes" if processes else scheduler), alpha_mode=alpha_mode,
                        progress=progress, parent_set_mass=parent_set_mass, map_dag=map_dag or map_only,
                        posterior=not map_only)
    finally:
        progress.close()
    s = res.summary
    if s.get("already_finished"):
        echo(f"{workdir}: this run was already finished; its results are read back, "
                   "nothing was recomputed")
    if "kept_levels" in s["plan"]:
        echo(f"disk: {_kept_text(s['plan']['kept_levels'], s['n'] - s['plan']['chunk_bits'])}; peak "
                   f"{_fmt_bytes(sum(s['disk_bytes'].values()))}"
                   + (", as the run was planned when it started" if resumed else
                      "" if disk_budget is not None else ", to fit the free disk"))
    rows = f"m = {s['m']} rows" if s["m"] is not None else f"scores from {scores_file}"
    echo(f"n = {s['n']} variables, {rows}, k = {s['options']['max_parents']}, "
               f"score {s['options']['score']}, prior {s['options']['structure_prior']}")
    for line in _kind_lines(s):
        echo(line)
    if "dbn" in s:
        d = s["dbn"]
        echo(f"dynamic network: lag {d['lag']}, {len(d['nodes'])} variable{'s' * (len(d['nodes']) != 1)} per "
             f"slice, {d['series']} series, {s['m']} transition rows"
             + ("" if d["contemporaneous"] else ", no edges within slice t"))
    elif "tiers" in s:
        echo(f"tiers: {len(s['tiers'])} (sizes " + ", ".join(str(len(t["nodes"])) for t in s["tiers"])
                   + "); only tier-consistent orders")
    if map_only:
        _echo_map(res, workdir)
        echo(f"summary: {Path(workdir) / 'summary.json'}")
        return
    echo(f"log p(data) = {_nats(res.log_marginal)}")
    edges = res.edges()
    echo(f"top edges (of {len(edges)}):")
    for parent, child, p in edges[:top]:
        echo(f"  {p:8.4f}  {parent} -> {child}")
    echo("most probable parent set of each node:")
    for name in res.names if res.children is None else [res.names[v] for v in res.children]:
        [(parents, p)] = res.parent_sets(name, top=1)
        echo(f"  {p:8.4f}  {name} <- {_set_text(parents)}")
    if map_dag:
        _echo_map(res, workdir)
    echo(f"all edges: {Path(workdir) / 'edges.csv'}   parent sets: "
               f"{Path(workdir) / 'parent_sets.csv'}   summary: {Path(workdir) / 'summary.json'}")


@main.command("scores")
@click.argument("data", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="The .jkl file to write.")
@click.option("--max-parents", "-k", default=3, show_default=True, type=int,
              help="Maximum number of parents of every node.")
@click.option("--score", type=click.Choice(scoring.names()), default="auto",
              show_default=True, help="Local score; auto = BGe for continuous data, CG for mixed, else BDeu.")
@_score_option_flags
@click.option("--structure-prior", type=_STRUCTURE_PRIOR, default="koivisto-sood",
              show_default=True, help="log ρ_i(G) added to each score, so that `bigbn run --scores "
                                      "OUT` gives the posterior of `bigbn run DATA` with this prior.")
@click.option("--sep", default=None, metavar="CHAR",
              help="Column separator of DATA: ',', ';' or 'tab' (default: detected).")
@click.option("--intervention-column", default=None, metavar="NAME",
              help="A column of DATA listing each row's intervention targets (as for run).")
@_column_kind_flags
@_memory_option
def scores(data, out, max_parents, score, structure_prior, sep, intervention_column, discrete, continuous,
           memory, **score_options):
    """Write the local scores of DATA as a .jkl file (GOBNILP / aps format).

    One block per variable, one line per parent set of at most -k parents:
    β_i(G) = log ρ_i(G) + log p(x_i | x_G), natural logs, 17 significant digits.
    `bigbn run --scores OUT` then gives the same posterior as `bigbn run DATA`, bit for
    bit; other programs (GOBNILP, aps) read the file too.

    \b
    Example:
      bigbn scores examples/asia.csv -k 2 --out asia.jkl
    """
    from bigbn.api import load_dataset, score_families
    from bigbn.scores.jkl import write_jkl

    if not os.path.exists(data):
        raise OptionError(f"{data}: no such file")
    opt.output_file(out, "--out", inputs=(data,))  # -o DATA replaced the data with the scores
    max_parents = opt.max_parents(max_parents, "--max-parents")
    memory = opt.memory(memory, "--memory")
    ds, resolved, _ = load_dataset(data, score=score, sep=sep, intervention_column=intervention_column,
                                   discrete=discrete, continuous=continuous)
    options = scoring.check_options(resolved, score_options)
    k = min(max_parents, ds.n - 1)
    _check_score_table(ds.n, k, memory)
    beta = score_families(ds, resolved, k, structure_prior=structure_prior, **options)
    if ds.kind == "mixed":
        from bigbn.api import column_kinds

        for line in _kind_lines({"column_kinds": column_kinds(ds)}):
            echo(line)
    write_jkl(out, ds.names, beta, k)
    echo(f"wrote {out}: {ds.n} variables, {beta.shape[1]} parent sets each (k = {k}), "
               f"score {resolved.name}, structure prior {structure_prior}")


#: bytes per family while `bigbn scores` builds its table: β, the local scores and the prior
#: (float64 each) and the family masks (int64)
_SCORE_TABLE_BYTES = 32


def _check_score_table(n: int, k: int, budget: int) -> None:
    """OptionError when n variables' families of at most k parents do not fit the memory
    budget (--memory; by default a quarter of the RAM, at most 8 GiB): -k 12 on 30 columns
    (3.7e9 families, 110 GiB) ran toward out of memory for many minutes, deaf to Ctrl-C and
    SIGTERM."""
    from bigbn.kernels.families import n_families

    families = n * n_families(n - 1, k)
    need = _SCORE_TABLE_BYTES * families
    if need > budget:
        raise OptionError(f"--max-parents {k}: {n} variables have {families:,} parent sets of at most {k} "
                          f"parents, a table of {_fmt_bytes(need)}, above the memory budget "
                          f"({_fmt_bytes(budget)}); lower --max-parents or raise --memory")


def _echo_map(res, workdir) -> None:
    arcs = ", ".join(f"{a}->{b}" for a, b in res.map_arcs()) or "(no arcs)"
    echo(f"MAP network (log score {_nats(res.map_log_score)}, {len(res.map_arcs())} arcs; "
               f"{Path(workdir) / 'map_dag.csv'}):")
    echo(f"  {arcs}")


@contextlib.contextmanager
def warnings_as_lines():
    """bigbn's own warnings (`BigBNWarning`) inside the block as `Warning: ...` lines on
    stderr, each once, not Python's file:line form."""
    from bigbn.errors import BigBNWarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, BigBNWarning):
            echo(f"Warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        shown = warnings.showwarning
        warnings.simplefilter("default", BigBNWarning)
        warnings.showwarning = show
        yield


def kernels_compiled() -> bool:
    """Whether numba's cache (a per-user folder, bigbn/_numba.py) holds compiled engine
    kernels of this installation, i.e. a run starts without compiling them."""
    import hashlib

    from bigbn._numba import cache_dir
    from bigbn.kernels import recursion as kernels

    cache = cache_dir()
    if not cache:
        return False
    # numba's cache sub-folder for a module: its folder's name, "_", sha1 of the folder path
    folder = os.path.dirname(os.path.abspath(kernels.__file__))
    sub = Path(cache) / f"{os.path.basename(folder)}_{hashlib.sha1(folder.encode()).hexdigest()}"
    return sub.is_dir() and any(sub.glob(f"{Path(kernels.__file__).stem}.*.nbi"))


def data_warnings(ds, variables: int | None = None) -> list[str]:
    """Columns that are legal but suspicious under a discrete score, one line each.
    variables: a time series' n variables of slice t (the first n columns), whose lagged
    copies share their levels and rows: one line each says it for its copies too (a line
    per copy was L + 1 lines of one warning, 120 at lag 29 with 4 variables)."""
    out = []
    if ds.kind != "discrete":
        return out
    copies = "" if variables is None else " (its lagged copies too)"
    for name, r in list(zip(ds.names, ds.arities.tolist()))[:variables]:
        if r == 1:
            out.append(f"{ds.path}, column '{name}': a single value in every row{copies}; it carries no "
                       "information, so its edges' posteriors only restate the prior")
        elif r > ds.m / 2:
            out.append(f"{ds.path}, column '{name}': {r} levels in {ds.m} rows{copies}; with so few rows "
                       "per level a discrete score finds confident spurious parents")
    return out


def _set_text(names) -> str:
    return "{" + ", ".join(names) + "}"


def _nats(x: float) -> str:
    """A log score for the terminal: six decimals, or 17 significant digits where the
    number is too large for decimals to mean anything (scores read from a file)."""
    return f"{x:.6f}" if abs(x) < 1e12 else f"{x:.17g}"


def _factor_text(factors: dict) -> str:
    """Per-stage speed factors as 'forward 1.2×, backward 1.1×, ...'."""
    return ", ".join(f"{s} {f:.2f}×" for s, f in factors.items())


def _kept_text(kept, h: int) -> str:
    """What a plan with the forward table kept at chunk levels ``kept`` of 0..h does."""
    if len(kept) == h + 1:
        return "each level of L deleted after its last reader (none computed again)"
    return (f"L kept at levels {_levels(kept)} of 0–{h} only, the others computed again "
            "(same numbers, more time)")


def _levels(levels) -> str:
    """Levels as runs: '0, 1, 4, 6–12'."""
    out, levels = [], list(levels)
    i = 0
    while i < len(levels):
        j = i
        while j + 1 < len(levels) and levels[j + 1] == levels[j] + 1:
            j += 1
        out.append(str(levels[i]) if i == j else f"{levels[i]}–{levels[j]}")
        i = j + 1
    return ", ".join(out)


def _fmt_seconds(s: float) -> str:
    if s < 90:
        return f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _plan_rows(rows: int) -> int:
    if rows < 1:
        raise OptionError(f"--rows must be at least 1, got {rows}")
    return rows


@main.command("plan")
@click.option("--n", "n", type=int, default=None, help="Number of variables (without tiers).")
@click.option("--max-parents", "-k", default=3, show_default=True, type=int,
              help="Maximum number of parents of every node.")
@click.option("--tiers", "tiers_file", type=click.Path(dir_okay=False), default=None,
              help="CSV node,tier as for `bigbn run --tiers`: plan each tier.")
@click.option("--tier-sizes", default=None, metavar="S1,S2,...",
              help="Tier sizes, earliest first (e.g. 25,25,25,25): plan a tiered run without a file.")
@_memory_option
@click.option("--chunk-bits", type=int, default=None, help="Override the chunk size 2^c.")
@click.option("--workers", type=int, default=None, help="Parallel tasks (default: all cores).")
@click.option("--alpha", "alpha_mode", type=click.Choice(["recompute", "store"]), default="recompute",
              show_default=True)
@click.option("--map", "map_dag", is_flag=True, help="With the MAP network (`bigbn run --map`).")
@click.option("--map-only", is_flag=True, help="Only the MAP network (`bigbn run --map-only`).")
@click.option("--workdir", type=click.Path(file_okay=False), default=None,
              help="Also compare the disk need with this folder's free space.")
@click.option("--disk-budget", default=None,
              help="Plan within this much disk (e.g. 24G), and show the trade of disk for time.")
@click.option("--calibrate", is_flag=True,
              help="Time a short run on this machine first (about 20 s) and keep its speed in the user's "
                   "cache: later plans give times for this machine, not the reference one.")
@click.option("--lag", type=int, default=None,
              help="A dynamic network (`bigbn run --lag`) of --n variables per slice with this lag.")
@click.option("--no-contemporaneous", is_flag=True, help="With --lag: no edges within slice t.")
@click.option("--rows", type=int, default=1000, show_default=True,
              help="Rows of the data: with tiers or --lag, the scores stage's time grows with them.")
def plan_cmd(n, max_parents, tiers_file, tier_sizes, memory, chunk_bits, workers, alpha_mode, map_dag,
             map_only, workdir, disk_budget, calibrate, lag, no_contemporaneous, rows):
    """Disk, memory and estimated time a run of N variables would need.

    Times are for this machine once `bigbn plan --calibrate` has timed it (kept in
    ~/.cache/bigbn/calibration.json), else for the reference machine (2-core VM).

    \b
    Examples:
      bigbn plan --n 28 -k 3 --memory 4G
      bigbn plan --tier-sizes 25,25,25,25 -k 3
      bigbn plan --calibrate --n 32
      bigbn plan --n 28 --lag 1 -k 3
    """
    import shutil

    from bigbn.plan.lattice import Plan, choose_chunk_bits
    from bigbn.tools import calibrate as cal

    if workdir is not None and not os.path.isdir(workdir):
        raise OptionError(f"--workdir {workdir}: no such folder (create it, or leave --workdir out)")
    if calibrate:
        cal.check_writable()  # before the minute of timing, not after it
        echo(f"timing this machine: a run of n = {cal.CALIBRATION.n} ...", err=True)
        rec = cal.measure(opt.workers(workers, "--workers") if workers is not None else None)
        path = cal.save(rec)
        echo(f"calibrated: this machine takes {_factor_text(rec['factors'])} of the reference machine's "
                   f"time (load {rec['load_before']:.1f} before the run); kept in {path}")
        if n is None and tiers_file is None and tier_sizes is None:
            return
    record = cal.load()

    def time_estimate(p, w):
        return cal.estimate(p, w, record)

    clock = cal.clock(record, " (`bigbn plan --calibrate` times this one)")
    rows = _plan_rows(rows)  # for every plan: only tiers and --lag use it, but --rows 0 is wrong anyway
    workers = opt.workers(workers, "--workers")
    budget = opt.memory(memory, "--memory")
    c = opt.chunk_bits(chunk_bits, "--chunk-bits")
    if lag is not None or no_contemporaneous:
        from bigbn import dbn

        if tiers_file is not None or tier_sizes is not None or disk_budget is not None:
            raise OptionError("--lag plans a dynamic network: without --tiers, --tier-sizes or --disk-budget")
        if n is None:
            raise OptionError("give --n, the number of variables per slice")
        for line in dbn.plan_lines(opt.n_nodes(n, "--n", least=1), 1 if lag is None else lag, not no_contemporaneous,
                                   opt.max_parents(max_parents, "--max-parents"), budget, workers, alpha_mode,
                                   map_dag or map_only, not map_only, c, workdir, cal.stage_factors(record),
                                   clock, rows):
            echo(line)
        return
    if tiers_file is not None or tier_sizes is not None:
        from bigbn.plan.tiers import plan_lines, tier_sizes_from_file, tier_sizes_option

        if tiers_file is not None and tier_sizes is not None:
            raise OptionError("give --tiers or --tier-sizes, not both")
        sizes = tier_sizes_from_file(tiers_file) if tiers_file else tier_sizes_option(tier_sizes)
        if n is not None and n != sum(sizes):
            raise OptionError(f"--n {n} but the tiers hold {sum(sizes)} variables")
        if disk_budget is not None:  # as `bigbn run` takes it (it was ignored here, unread)
            opt.disk_budget(disk_budget, "--disk-budget")
            if sum(sizes) < 2:
                raise OptionError("1 variable: a run needs at least 2")
            if len(sizes) > 1:
                raise OptionError("a disk budget is for runs without tiers (a tiered run's tiers are far "
                                  "smaller)")
            n, tiers_file, tier_sizes = sizes[0], None, None  # one tier of every variable: the plain run
    if tiers_file is not None or tier_sizes is not None:
        for line in plan_lines(sizes, opt.max_parents(max_parents, "--max-parents"), budget, workers,
                               alpha_mode, map_dag or map_only, not map_only, c, workdir,
                               cal.stage_factors(record), clock, rows):
            echo(line)
        return
    if n is None:
        raise OptionError("give --n (number of variables), or --tiers / --tier-sizes")
    n = opt.n_nodes(n, "--n")
    k = min(opt.max_parents(max_parents, "--max-parents"), n - 1)
    if c is None:
        c = choose_chunk_bits(n, k, budget, workers, alpha_mode)
    p = Plan(n, k, c, alpha_mode, map_dag or map_only, not map_only)
    from bigbn.plan.lattice import BLOCK, fs_block

    block = BLOCK if workdir is None else fs_block(workdir)  # files are counted in its blocks
    disk_budget = opt.disk_budget(disk_budget, "--disk-budget")
    if disk_budget is not None:
        from bigbn.plan.lattice import disk_trade, fit_disk

        p = fit_disk(p, disk_budget, workers, block)
    if disk_budget is not None and not p.posterior:  # no L to trade (it showed "L kept whole (can be sampled)")
        echo(f"disk budget {_fmt_bytes(disk_budget)}: the MAP network's tables fit it")
    elif disk_budget is not None:
        echo("the trade (peak disk; chunk tasks of L computed again, in forward passes; time):")
        rows = disk_trade(p, workers, block=block)
        rows = sorted(rows + [p] * (p not in rows), key=lambda q: -sum(q.disk_bytes(workers, block).values()))
        for q in rows:
            again = q.refwd_chunks()
            what = ("L kept whole (can be sampled)" if q.kept is None else
                    "L deleted after its last reader" if not again else
                    f"levels {_levels(q.dropped)} computed again: {again} chunks ({again / q.n_chunks:.2f})")
            echo(f"  {_fmt_bytes(sum(q.disk_bytes(workers, block).values())):>9}  {what}; "
                       f"≈ {_fmt_seconds(sum(time_estimate(q, workers).values()))}"
                       + ("   ← chosen" if q == p else ""))
        echo(f"disk budget {_fmt_bytes(disk_budget)}: "
                   + ("L kept whole" if p.kept is None else f"L kept at levels {_levels(p.kept)} of 0–{p.h}"))
    disk = p.disk_bytes(workers, block)
    total_disk = sum(disk.values())
    anyhow = sum(p.disk_bytes(None, block).values())
    t = time_estimate(p, workers)
    echo(f"n = {n}, k = {k}: {p.n_families} families per node, chunk bits c = {c} "
               f"({p.n_chunks} chunks of {_fmt_bytes(8 * p.chunk_size)}), alpha {alpha_mode}")
    echo(f"disk:   {_fmt_bytes(total_disk)}  (" + ", ".join(
        f"{name} {_fmt_bytes(b)}" for name, b in disk.items()) + ")"
        + (f"; up to {_fmt_bytes(anyhow)} on a dask cluster" if anyhow > total_disk else ""))
    echo(f"memory: {_fmt_bytes(p.task_memory_bytes())} per task × {workers} workers "
               f"≈ {_fmt_bytes(p.task_memory_bytes() * workers + 300 * 2**20)} peak "
               f"(budget {_fmt_bytes(budget)})")
    echo(f"time:   ≈ {_fmt_seconds(sum(t.values()))} on {workers} cores of {clock} ("
               + ", ".join(f"{s} {_fmt_seconds(v)}" for s, v in t.items()) + ")")
    if workdir is not None:
        free = shutil.disk_usage(workdir).free
        from bigbn.plan.lattice import fit_disk, fits_free_disk, free_disk_budget

        fits = fits_free_disk(total_disk, free)
        echo(f"workdir {workdir}: {_fmt_bytes(free)} free — {'enough' if fits else 'NOT enough'}")
        if not fits and disk_budget is None:

            try:  # what `bigbn run` does there without --disk-budget: the free disk is the budget
                q = fit_disk(p, free_disk_budget(free), workers, block)
            except OptionError as e:
                echo(f"  and no plan fits it: {e}")
            else:
                echo(f"  a run there fits it: {_kept_text(q.kept, q.h)}; peak "
                           f"{_fmt_bytes(sum(q.disk_bytes(workers, block).values()))}, "
                           f"≈ {_fmt_seconds(sum(time_estimate(q, workers).values()))}")


@main.command()
@click.option("--workdir", "-w", type=click.Path(file_okay=False), required=True)
def status(workdir):
    """What a work directory holds: what was asked, progress per stage, disk, activity.

    \b
    Example:
      bigbn status --workdir /scratch/run28
    """
    from bigbn.api import workdir_status

    for line in workdir_status(workdir):
        echo(line)


@main.command("sample", short_help="Exact i.i.d. DAG samples from the posterior of a finished run.")
@click.option("--workdir", "-w", type=click.Path(file_okay=False), required=True,
              help="The work directory of a finished `bigbn run`.")
@click.option("--samples", "-T", "n_samples", default=10_000, show_default=True,
              type=click.IntRange(1, 10**8), help="Number of DAGs to draw.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**63 - 1),
              help="Random seed: the same seed gives the same samples.")
@click.option("--prior", type=click.Choice(["order-modular", "dag-modular"]),
              default="order-modular", show_default=True,
              help="order-modular: the run's model; dag-modular: every DAG equally likely a "
                   "priori (given the same ρ), by reweighting each sample with 1/#LE(G).")
@click.option("--workers", type=click.IntRange(1), default=None,
              help="Parallel tasks or threads (default: all cores).")
@click.option("--scheduler", default="threads", show_default=True,
              help="threads, dask, sync, processes, or tcp://HOST:PORT of a dask.distributed scheduler.")
@click.option("--batch", default=50_000, show_default=True, type=click.IntRange(1, 10**8),
              help="Samples per task (a killed draw resumes from its finished batches; the "
                   "samples do not depend on it).")
@click.option("--memory", default=None,
              help="Memory budget the samples must fit in, e.g. 4G (default: RAM/4, ≤ 8G).")
@click.option("--top", default=5, show_default=True, type=click.IntRange(0),
              help="How many DAGs and ancestor relations to print.")
def sample_cmd(workdir, n_samples, seed, prior, workers, scheduler, batch, memory, top):
    """Exact i.i.d. DAG samples from the posterior of a finished run.

    Draws whole networks from the exact posterior (no MCMC: every sample is independent),
    then estimates from them, each with its Monte Carlo standard error: edge, ancestor
    (directed path) and Markov-blanket probabilities, and the distinct DAGs with their
    exact posterior probability. Writes WORKDIR/samples-PRIOR/: edges.csv, ancestors.csv,
    markov_blanket.csv, dags.csv, samples.npz and summary.json. A run with tiers is
    sampled under its tiers (each tier's order and parents from its own lattice; no arc
    into an earlier tier), at any number of variables. The samples are drawn in batches,
    each a journaled task (WORKDIR/samples-seedS-KEY/): a killed draw resumes when the
    same command is run again, and the same seed gives the same samples on any scheduler
    (such folders an earlier bigbn left, of no use now, are removed).

    \b
    Example:
      bigbn run examples/asia.csv --workdir /tmp/asia
      bigbn sample --workdir /tmp/asia --samples 10000 --seed 1
    """
    from bigbn.outputs.samples import check_samples_folder, sample, write_outputs

    check_samples_folder(Path(workdir) / f"samples-{prior}")  # before the work (write_outputs: after)
    if own_process():  # the sampler's kernels call no BLAS: numba starts without importing scipy.linalg
        from bigbn._numba import start_without_blas_probe

        start_without_blas_probe()
    progress = Progress()
    try:
        with warnings_as_lines():
            s = sample(workdir, n_samples, seed=seed, prior=prior, workers=workers,
                       memory=opt.memory(memory, "--memory"), progress=progress,
                       scheduler=opt.scheduler(scheduler), batch=batch)
    finally:
        progress.close()
    write_outputs(s, workdir)
    out = Path(workdir) / f"samples-{prior}"  # as the user wrote it
    check = s.info["edge_check"]
    echo(f"{len(s)} DAGs drawn from the exact posterior ({s.info['distinct_dags']} distinct), "
               f"prior {prior}, seed {seed}, effective sample size {s.ess:.0f}")
    from bigbn.io.series import lag_of

    every = [x for t in s.info.get("tiers", ()) for x in t]
    if any(lag_of(x, every) for x in every):  # a dynamic run (its lagged variables are its first tiers)
        echo("whole two-slice networks: the lagged variables NAME[t-l] are parents only")
    elif "tiers" in s.info:
        echo(f"under the run's {len(s.info['tiers'])} tiers: only tier-consistent orders, no edge "
                   "into an earlier tier")
    if check["edges_compared"]:
        echo(f"self-check: sampled edge frequencies vs exact edge posteriors, worst |z| = "
             f"{check['max_abs_z']:.2f} ({check['edge'][0]} -> {check['edge'][1]})")
    else:  # it read "worst |z| = 0.00 (asia -> asia)", a check of a loop that was none
        echo(f"self-check: no edge to compare with its exact posterior (T p (1 - p) < 10 for every edge "
             f"at {len(s)} samples)")
    if prior == "order-modular":
        echo(f"most probable DAGs (of {s.info['distinct_dags']} sampled): exact posterior, "
                   "sampled frequency ± se, arcs")
    else:
        rel = s.info["log_z_dag_modular_rel_se"]
        spread = f"± {100 * rel:.1f} %" if rel is not None else "unknown spread"
        echo(f"most probable DAGs (of {s.info['distinct_dags']} sampled): posterior "
                   f"({spread} from the estimated normaliser), weighted frequency ± se, arcs")
    exact = "exact_order_modular" if prior == "order-modular" else "estimated_dag_modular"
    for d in s.dags(top):
        arcs = ", ".join(f"{a}->{b}" for a, b in s.arcs(d["parents"])) or "(no arcs)"
        echo(f"  {d[exact]:.4f}  {d['probability']:.4f} ± {d['se']:.4f}  {arcs}")
    anc, se = s.ancestor_probabilities(with_se=True)
    pairs = sorted(((anc[u, v], u, v) for u in range(s.n) for v in range(s.n) if u != v),
                   key=lambda x: -x[0])[:top]
    echo("most probable ancestor relations (u ⇝ v: a directed path from u to v):")
    for p, u, v in pairs:
        echo(f"  {p:8.4f} ± {se[u, v]:.4f}  {s.names[u]} ⇝ {s.names[v]}")
    echo(f"all results: {out}")


@main.command("effects")
@click.option("--workdir", "-w", type=click.Path(file_okay=False), required=True,
              help="The work directory of a finished `bigbn run`.")
@click.option("--data", type=click.Path(dir_okay=False), default=None,
              help="The run's data (default: the file the run read; checked by content hash).")
@click.option("--pairs", type=click.Path(dir_okay=False), default=None,
              help="CSV cause,effect: the pairs to compute, each once (default: every ordered pair).")
@click.option("--level", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True,
                                                                                 max_open=True),
              help="Credible level of the intervals (continuous data).")
@click.option("--sep", default=None, metavar="CHAR",
              help="Column separator of --data: ',', ';' or 'tab' (default: detected).")
@click.option("--workers", type=click.IntRange(1), default=None,
              help="Parallel tasks (default: all cores).")
@click.option("--scheduler", default="threads", show_default=True,
              help="threads, dask, sync, processes, or tcp://HOST:PORT of a dask.distributed scheduler.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(0),
              help="How many effects to print.")
def effects_cmd(workdir, data, pairs, level, sep, workers, scheduler, top):
    """Causal effects averaged over the exact parent-set posterior (Bayesian IDA).

    For each pair (cause x, effect y), the effect of an intervention on x on y by
    adjusting for the parents of x, averaged over p(Pa(x) | data); zero when y is a parent
    of x. Continuous data (BGe): the linear effect's posterior mean, P(effect = 0) and an
    equal-tailed credible interval. Discrete data: p(y | do(x = a)) for every level.
    Assumes no hidden common causes. Writes WORKDIR/effects.csv. Each cause's pairs are
    a journaled task (WORKDIR/effects-KEY/): a killed command resumes when run again.

    \b
    Example:
      bigbn run examples/sachs.csv --workdir /tmp/sachs
      bigbn effects --workdir /tmp/sachs
    """
    from bigbn.outputs.effects import effects
    from bigbn.store.workdir import check_outputs

    check_outputs(Path(workdir), ("effects.csv",))  # before the work: a FIFO there waits for a reader
    progress = Progress()
    try:
        with warnings_as_lines():
            e = effects(workdir, data, pairs=pairs, level=level, sep=sep, progress=progress,
                        scheduler=opt.scheduler(scheduler), workers=workers)
    finally:
        progress.close()
    out = Path(workdir) / "effects.csv"
    from bigbn.store.workdir import write_whole

    # a new file renamed into place: a symlink there is replaced, never written through (to a
    # file outside the workdir), and a killed write leaves the old file or the new one, whole
    write_whole(out, e.to_csv)
    if e.kind == "continuous":
        echo(f"linear causal effects for {len(e.pairs)} ordered pairs, averaged over the exact "
                   "parent-set posterior of each cause;")
        echo("largest |mean| first (P(zero): the effect is a parent of the cause):")
        echo(f"  {'mean':>9}  {'P(zero)':>7}  {f'{100 * level:g}% interval':>21}")
        for i in sorted(range(len(e.pairs)), key=lambda i: -abs(e.mean[i]))[:top]:
            x, y = e.pairs[i]
            echo(f"  {e.mean[i]:9.4f}  {e.p_zero[i]:7.4f}  [{e.lower[i]:9.4f}, {e.upper[i]:9.4f}]  "
                       f"{e.names[x]} -> {e.names[y]}")
    else:
        import numpy as np

        echo(f"p(effect | do(cause)) for {len(e.pairs)} ordered pairs, averaged over the exact "
                   "parent-set posterior of each cause;")
        echo("largest change first (total variation distance between two levels of the cause):")
        tv = [0.5 * float(np.max(np.abs(t[:, None, :] - t[None, :, :]).sum(axis=2))) for t in e.table]
        for i in sorted(range(len(e.pairs)), key=lambda i: -tv[i])[:top]:
            x, y = e.pairs[i]
            echo(f"  {tv[i]:7.4f}  P(zero) {e.p_zero[i]:.4f}  {e.names[x]} -> {e.names[y]}")
    echo(f"all pairs: {out}")


@main.command("export", short_help="Write the learned network with its parameters (BIF, XMLBIF).")
@click.argument("workdir", type=click.Path(file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["bif", "xmlbif"]), default="bif", show_default=True,
              help="bif: the BIF text of the bnlearn repository (pgmpy, bnlearn's read.bif); "
                   "xmlbif: XMLBIF 0.3 (pgmpy, Weka).")
@click.option("--dag", default="map", show_default=True, metavar="map|THRESHOLD",
              help="map: the MAP network (a run with --map); a number in (0, 1]: the averaged "
                   "network, the arcs of posterior ≥ it by decreasing posterior, none closing a cycle.")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="The file to write (default: WORKDIR/network.bif or WORKDIR/network.xml).")
@click.option("--data", type=click.Path(dir_okay=False), default=None,
              help="The run's data (default: the file the run read; checked by content hash).")
@click.option("--sep", default=None, metavar="CHAR",
              help="Column separator of --data: ',', ';' or 'tab' (default: detected).")
def export_cmd(workdir, fmt, dag, out, data, sep):
    """Write the learned network of a finished run, with its parameters.

    The DAG (--dag) with each node's CPD at its posterior mean under the run's own
    Dirichlet prior (BDeu's ess, or K2), fitted on the run's data: what pgmpy's
    BIFReader / XMLBIFReader and bnlearn's read.bif load as a fitted network. Continuous
    (BGe) runs have no BIF form: use bigbn.open(WORKDIR).to_pgmpy() in Python.

    \b
    Example:
      bigbn run examples/asia.csv --workdir /tmp/asia --map
      bigbn export /tmp/asia --format bif
    """
    from bigbn.outputs.reopen import FORMATS, export

    if dag != "map":
        try:
            dag = float(dag)
        except ValueError:
            raise OptionError(f"--dag is map or a threshold in (0, 1], got {dag!r}") from None
    export(workdir, fmt, out, dag, data, sep)
    path = out if out is not None else Path(workdir) / FORMATS[fmt]  # as the user wrote it
    echo(f"wrote {path}: the {'MAP' if dag == 'map' else f'averaged (threshold {dag:g})'} network "
               "with posterior-mean CPDs")


@main.command("report")
@click.argument("workdir", type=click.Path(file_okay=False))
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="The HTML file to write (default: WORKDIR's name + .report.html, in the "
                   "current folder).")
@click.option("--threshold", type=float, default=0.5, show_default=True,
              help="The graph shows the arcs with posterior ≥ this.")
@click.option("--truth", type=click.Path(exists=True, dir_okay=False), default=None,
              help="parent,child CSV of the true network: colours the graph's arcs and adds the ROC curve.")
def report_cmd(workdir, out, threshold, truth):
    """One self-contained HTML page of a finished run (opens offline).

    What was asked (data, score, knowledge), the plan against what the run took, the
    edge heatmap, the graph at --threshold, the strongest and the most uncertain edges,
    the top parent sets, and the samples, effects and MAP network when `bigbn sample`,
    `bigbn effects` or `--map` made them.

    \b
    Example:
      bigbn run examples/asia.csv --workdir /tmp/asia
      bigbn report /tmp/asia --out asia.html
    """
    from bigbn.outputs.report import read_run, write_report

    if out is None:
        out = f"{Path(workdir).resolve().name}.report.html"
    opt.output_file(out, "--out", inputs=(truth,), workdir=workdir)  # before anything is read
    rf = read_run(workdir)
    adj = roc = None
    if truth is not None:
        import numpy as np

        from bigbn.tools.roc import edge_roc
        from bigbn.tools.simulate import read_truth

        n, kids = len(rf.names), rf.run.record.children
        children = None if kids >= n else np.arange(n) < kids  # a time series': pairs of lagged ones left out
        adj = read_truth(truth, list(rf.names), children)
        curve = edge_roc(rf.posterior, adj, children)
        roc = (curve.fpr, curve.tpr, curve.auc)
    from bigbn.tools import calibrate as cal

    record = cal.load()  # the plan's time on this machine's clock once `bigbn plan --calibrate` set it
    write_report(rf, out, threshold=threshold, truth=adj, roc=roc, factors=cal.stage_factors(record),
                 clock=cal.clock(record))
    echo(f"wrote {out}")


def _register_tools() -> None:
    from bigbn.cli import tools as cli_tools

    for name in ("simulate", "roc", "plot", "study"):
        cmd = getattr(cli_tools, name, None)
        if cmd is not None:
            main.add_command(cmd)


_register_tools()


if __name__ == "__main__":  # pragma: no cover
    cli()
