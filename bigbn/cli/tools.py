"""Click commands for the simulation-study tools: simulate, roc, plot, study.

Thin layer over `bigbn.tools.simulate`, `bigbn.tools.roc`, `bigbn.outputs.plot` and `bigbn.tools.study`; the
main group (`bigbn.cli.main`) registers them with ``main.add_command(...)`` and turns a
`BigBNError` into a one-line ``Error: ...`` and exit status 1.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
import numpy as np

from bigbn import options as opt
from bigbn.errors import OptionError, WorkdirError


# The same help options as the `bigbn` group, also when a command is invoked on its own
# (click caches a command's help option at its first invocation).
CONTEXT = {"help_option_names": ["-h", "--help"]}


def terminal_text(text) -> str:
    """``text`` as a command prints it: control characters, DEL, C1, bidi overrides and the
    like (`bigbn.io.data.INVISIBLE`, the report page's set) written as their escapes
    (\\x1b), tabs and newlines kept. A variable's name is the data's header text: an ESC in
    it (\\x1b[2J, \\x1b]0;...) was a terminal's escape sequence when `bigbn run` printed
    its edges, and U+202E turned the rest of the line around."""
    text = str(text)
    if text.replace("\n", "").replace("\t", "").isprintable():  # nearly always: no import
        return text
    from bigbn.io.data import visible

    return visible(text, lines=True)


def echo(message="", **kwargs) -> None:
    """``click.echo`` of a command's output line(s), `terminal_text`."""
    click.echo(terminal_text(message), **kwargs)


def _alias(new, old, new_name: str, old_name: str):
    """The value of an option given under its current name or its old (hidden) spelling."""
    if new is not None and old is not None:
        raise OptionError(f"{old_name} is the old spelling of {new_name}: give one of them")
    return old if new is None else new


def _int_list(text: str, option: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise OptionError(f"{option}: expected comma-separated integers, got {text!r}") from None
    if not vals:
        raise OptionError(f"{option}: expected at least one integer")
    return vals


@click.command("simulate", context_settings=CONTEXT)
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
@click.option("--n", "n", type=int, default=None,
              help="Number of nodes of a random network (1 to 10000).")
@click.option("--max-parents", "-k", "k", type=int, default=None,
              help="Maximum number of parents of a node of the random network (default 3).")
@click.option("--k", "k_old", type=int, default=None, hidden=True)
@click.option("--states", "r", type=int, default=None,
              help="States per variable of a random network (default 2).")
@click.option("--rows", "m", type=int, required=True, help="Number of records to draw (at least 1).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--network", default=None, metavar="NAME|FILE.bif[.gz]",
              help="Sample from this network instead of a random one: a bundled name "
                   "(asia, sachs, child, alarm, survey, cancer, earthquake) or a BIF file.")
@click.option("--save-network", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.bif[.gz]", help="Also write the network (with its CPTs) as BIF.")
@click.option("--tier-sizes", default=None, metavar="S1,S2,...",
              help="A layered random network: its order lists the first S1 nodes (tier 1) "
                   "first, then the next S2, ...; writes the tiers to OUT.tiers.csv (node,tier) "
                   "for `bigbn run --tiers`. --n defaults to the sum.")
@click.option("--force", is_flag=True,
              help="Replace OUT and the other files it writes if they exist (without it, an "
                   "existing file is an error and nothing is written).")
@click.option("--continuous", "n_continuous", type=int, default=None, metavar="C",
              help="Mixed data from a random conditional Gaussian network: C of the --n nodes "
                   "continuous (per configuration of their discrete parents a linear Gaussian "
                   "regression), the others discrete with discrete parents only (bigbn.tools.cg).")
@click.option("--lag", type=int, default=None,
              help="Time series from a dynamic network (2-TBN) with this lag: a random one, or "
                   "--network FILE.bif naming the lagged copies NAME.t-1, ...; --rows per series.")
@click.option("--series", type=int, default=None,
              help="With --lag: the number of series (default 1); OUT gets columns series,t,...")
@click.option("--no-contemporaneous", is_flag=True,
              help="With --lag: a random dynamic network without edges within slice t.")
def simulate(out, n, k, k_old, r, m, seed, network, save_network, tier_sizes, force, n_continuous, lag,
             series, no_contemporaneous):
    """Draw data from a random network (paper, section 5.2) or a known one.

    A random network: uniform random node order; each node gets a number of parents
    uniform in 0..K (capped by its number of predecessors), chosen uniformly among its
    predecessors; each parent configuration's distribution over the R states is
    Dirichlet(1). Writes OUT (header X1..Xn, states 0..R-1) and the true arcs to
    OUT.truth.csv (header parent,child). Existing files are replaced only with --force.

    \b
    Examples:
      bigbn simulate --n 10 -k 3 --states 2 --rows 500 --seed 1 data.csv
      bigbn simulate --network asia --rows 1000 asia.csv
      bigbn simulate --tier-sizes 16,16,16,16 --rows 1000 layered.csv
      bigbn simulate --n 8 --continuous 4 -k 2 --rows 1000 mixed.csv
      bigbn simulate --lag 1 --n 5 -k 2 --series 20 --rows 30 series.csv
    """
    from bigbn.io.bif import write_bif
    from bigbn.tools.simulate import (MAX_RANDOM_NODES, load_network, random_network, refuse_overwrite, sample,
                                tiers_path, truth_path, write_data, write_tiers, write_truth)

    k = _alias(k, k_old, "--max-parents", "--k")
    if m < 1:
        raise OptionError(f"--rows must be at least 1, got {m}")
    if n is not None and not 1 <= n <= MAX_RANDOM_NODES:
        raise OptionError(f"--n must be between 1 and {MAX_RANDOM_NODES}, got {n}")
    truth = truth_path(out)
    if Path(truth).resolve() == Path(out).resolve():
        raise OptionError(f"{out}: the data file name must not end in .truth.csv")
    outputs = [out, truth, tiers_path(out) if tier_sizes is not None and network is None else None]
    if save_network is not None:
        if any(p is not None and Path(save_network).resolve() == Path(p).resolve() for p in outputs):
            raise OptionError(f"--save-network {save_network} is also a file of the data it writes")
        outputs.append(save_network)
    if n_continuous is not None and (network is not None or tier_sizes is not None or save_network is not None):
        raise OptionError("--continuous draws from a random CG network: not with --network, --tier-sizes "
                          "or --save-network")
    if network is not None and os.path.exists(network):  # --force replaced the network it read with the data
        for path, flag in zip(outputs, ("OUT", "OUT's truth", "OUT's tiers", "--save-network")):
            opt.output_file(path, flag, inputs=(network,))
    refuse_overwrite(outputs, force)  # before anything is drawn or written
    opt.parent_folder(out, "OUT")  # --save-network in a missing folder failed after OUT was written
    if save_network is not None:
        opt.parent_folder(save_network, "--save-network")
    rng = np.random.default_rng(opt.seed(seed, "--seed"))
    if n_continuous is not None and (lag is not None or series is not None or no_contemporaneous):
        raise OptionError("--continuous (a CG network) and --lag (a dynamic one) cannot be combined")
    if n_continuous is not None:
        _simulate_cg(out, truth, n, k, r, m, rng, n_continuous, force)
        return
    if lag is not None or series is not None or no_contemporaneous:
        _simulate_series(out, truth, n, k, r, m, rng, network, save_network, tier_sizes, force, lag, series,
                         not no_contemporaneous)
        return
    if network is not None:  # --tier-sizes was ignored, silently, and no tiers file written
        given = [name for name, v in (("--n", n), ("--max-parents", k), ("--states", r), ("--tier-sizes", tier_sizes))
                 if v is not None]
        if given:
            raise OptionError(f"{', '.join(given)} cannot be combined with --network")
        net = load_network(network)
    else:
        sizes = None
        if tier_sizes is not None:
            from bigbn.plan.tiers import tier_sizes_option

            sizes = tier_sizes_option(tier_sizes)
            if n is None and sum(sizes) > MAX_RANDOM_NODES:
                raise OptionError(f"--tier-sizes {tier_sizes}: {sum(sizes)} nodes in all, more than "
                                  f"{MAX_RANDOM_NODES}")
            n = sum(sizes) if n is None else n
        if n is None:
            raise OptionError("give --n (number of nodes) or --network")
        net = random_network(n, 3 if k is None else k, 2 if r is None else r, rng, sizes)
    data = sample(net, m, rng)
    write_data(net, data, out, overwrite=force)
    write_truth(net, truth, overwrite=force)
    if save_network:
        write_bif(net, save_network)
    echo(f"wrote {out} ({m} rows x {net.n} variables) and {truth} ({len(net.arcs())} arcs)")
    if network is None and sizes is not None:
        write_tiers(sizes, net.names, tiers_path(out), overwrite=force)
        echo(f"wrote {tiers_path(out)} ({len(sizes)} tiers)")


def _simulate_cg(out, truth, n, k, r, m, rng, n_continuous, force) -> None:
    """`bigbn simulate --continuous C`: mixed data from a random CG network."""
    from bigbn.tools.cg import random_cg_network, sample_cg, write_cg_data, write_cg_truth
    from bigbn.tools.simulate import _create

    if n is None:
        raise OptionError("give --n (number of nodes) with --continuous")
    net = random_cg_network(n, n_continuous, 3 if k is None else k, 2 if r is None else r, rng)
    data = sample_cg(net, m, rng)
    with _create(out, force) as fh:
        write_cg_data(net, data, fh)
    with _create(truth, force) as fh:
        write_cg_truth(net, fh)
    echo(f"wrote {out} ({m} rows x {net.n} variables, {n_continuous} continuous) and {truth} "
               f"({len(net.arcs())} arcs)")


def _simulate_series(out, truth, n, k, r, m, rng, network, save_network, tier_sizes, force, lag, series,
                     contemporaneous):
    """`bigbn simulate --lag`: series from a dynamic network (`bigbn.tools.series`)."""
    from bigbn.io.series import check_lag
    from bigbn.tools.series import check_shape, dbn_shape, random_dbn, read_dbn, sample_series, write_dbn, write_series
    from bigbn.tools.simulate import write_truth

    if tier_sizes is not None:
        raise OptionError("--tier-sizes is for a static network, not with --lag")
    series = 1 if series is None else series
    if series < 1:
        raise OptionError(f"--series must be at least 1, got {series}")
    if network is not None:
        given = [name for name, v in (("--n", n), ("--max-parents", k), ("--states", r)) if v is not None]
        if given or not contemporaneous:
            raise OptionError(f"{', '.join(given) or '--no-contemporaneous'} cannot be combined with --network")
        net = read_dbn(network)
        if lag is not None and check_lag(lag, "--lag") != dbn_shape(net)[1]:
            raise OptionError(f"--lag {lag}: the network {network} has another lag")
    else:
        if n is None:
            raise OptionError("give --n (number of variables per slice) or --network")
        lag = check_lag(1 if lag is None else lag, "--lag")
        check_shape(series, m, n, lag)  # before the network is drawn: a lag of 10^6 makes 3·10^6 nodes
        net = random_dbn(n, lag, 2 if k is None else k, 2 if r is None else r, rng, contemporaneous)
    codes = sample_series(net, series, m, rng)
    write_series(net, codes, out, overwrite=force)
    write_truth(net, truth, overwrite=force)
    if save_network:
        write_dbn(net, save_network)
    echo(f"wrote {out} ({series} series x {m} rows x {codes.shape[2]} variables) and {truth} "
               f"({len(net.arcs())} arcs)")


def _run_tiers(edges: str, names) -> list[list[str]] | None:
    """The tiers of the run whose edges.csv this is (its summary.json beside it), if any
    and if they name these variables; else None (plots then show no tiers)."""
    import json

    from bigbn.store.workdir import read_file

    try:  # a run's summary lists {"nodes": [...]} per tier, a sampler's the names themselves
        tiers = [t["nodes"] if isinstance(t, dict) else list(t)
                 for t in json.loads(read_file(Path(edges).parent / "summary.json"))["tiers"]]
    except WorkdirError:
        raise  # a FIFO of its name (`read_file`): one line, not a wait
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return tiers if sorted(x for t in tiers for x in t) == sorted(names) else None


def default_heatmap(edges: str) -> str:
    """Where `bigbn plot EDGES` writes its heatmap without --out: in the current folder (not
    into a run's folder), named after the file, or after its folder for an edges.csv
    (run/edges.csv -> run.heatmap.png; run/samples-order-modular/edges.csv ->
    run-samples-order-modular.heatmap.png)."""
    p = Path(edges).resolve()
    if p.name != "edges.csv":
        return (p.stem if p.suffix == ".csv" else p.name) + ".heatmap.png"
    parts = [p.parent.name] if not p.parent.name.startswith("samples-") else [p.parent.parent.name,
                                                                               p.parent.name]
    return "-".join(x for x in parts if x) + ".heatmap.png"


def _distinct_outputs(*outputs) -> None:
    """OptionError if two of a command's (path, flag) outputs are one file: the second was
    written over the first without a word (`bigbn plot --out g.png --graph g.png`)."""
    given = [(os.path.abspath(p), flag) for p, flag in outputs if p is not None]
    for j, (path, flag) in enumerate(given):
        for other, first in given[:j]:
            if path == other:
                raise OptionError(f"{first} and {flag} name one file ({path}): the second would replace the "
                                  "first; give two names")


def _run_of(edges):
    """The work directory EDGES names: itself if a folder, or the folder of an edges.csv
    that holds a run.json beside it (`opt.output_file` then keeps the command's outputs
    off the run's own files either way), else None."""
    path = Path(edges)
    if path.is_dir():
        return edges
    return path.parent if (path.parent / "run.json").exists() else None


def _children_of_run(edges: str, names) -> np.ndarray | None:
    """The nodes of slice t (bool, in ``names``' order) of the dynamic run an edges file
    belongs to (a run's edges.csv, or WORKDIR/samples-PRIOR/edges.csv, which lists all
    n(n-1) pairs), None for a static run or a file of no run."""
    from bigbn.store.rundir import RunDir

    p = Path(edges).resolve().parent
    for folder in (p, p.parent) if p.name.startswith("samples-") else (p,):
        if (folder / "run.json").is_file():
            try:
                record = RunDir(folder).record
            except WorkdirError:
                return None
            kids = set(record.names[: record.children])
            if record.children < len(record.names) and sorted(record.names) == sorted(names):
                return np.array([x in kids for x in names])
            return None
    return None


def _edges_file(edges: str) -> str:
    """EDGES as given, or WORKDIR/edges.csv when a run's work directory is given. That file
    is the run's own: opened as `open_file` opens it, so that a FIFO or a folder in its place
    is one line naming it (it was "a folder without edges.csv (not a finished bigbn run)")."""
    from bigbn.store.workdir import open_file

    p = Path(edges)
    if p.is_dir():
        try:
            open_file(p / "edges.csv").close()
        except FileNotFoundError:
            raise OptionError(f"{edges}: a folder without edges.csv (not a finished bigbn run)") from None
        except OSError as e:
            raise OptionError(f"cannot read {p / 'edges.csv'}: {e.strerror}") from None
        return str(p / "edges.csv")
    return edges


@click.command("roc", context_settings=CONTEXT)
@click.argument("edges", type=click.Path(exists=True))
@click.argument("truth", type=click.Path(exists=True, dir_okay=False))
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Write the ROC curve as a picture (.png, .svg or .pdf).")
@click.option("--curve", "curve_path", type=click.Path(dir_okay=False), default=None,
              help="Write the curve's points as CSV (fpr,tpr,threshold).")
def roc(edges, truth, plot_path, curve_path):
    """ROC curve and AUC of undirected edge discovery (paper, section 5.1).

    EDGES is a parent,child,posterior CSV with all n(n-1) directed pairs (or the work
    directory of a finished run, or the edges.csv of `bigbn sample`); TRUTH is a parent,child CSV of the true arcs. The pair {u,v} is claimed iff
    p(u->v) + p(v->u) exceeds the threshold; sensitivity is plotted against
    1 - specificity over all thresholds. Prints the AUC. Each value must be a
    probability and p(u->v) + p(v->u) at most 1 (as bigbn writes them); a time
    series' pairs of two lagged variables, never joined, are left out.

    \b
    Example:
      bigbn roc run/edges.csv data.truth.csv --plot roc.png
    """
    from bigbn.tools.roc import edge_roc, plot_roc, read_edges_and_children
    from bigbn.tools.simulate import read_truth

    run = _run_of(edges)
    edges = _edges_file(edges)
    for path, flag in ((plot_path, "--plot"), (curve_path, "--curve")):
        opt.output_file(path, flag, inputs=(edges, truth), workdir=run)  # not over what it reads
    _distinct_outputs((plot_path, "--plot"), (curve_path, "--curve"))
    if plot_path:
        from bigbn.outputs.plot import picture_format

        picture_format(plot_path)  # before the AUC: --plot roc.txt printed it, then failed
    names, P, children = read_edges_and_children(edges)  # a dynamic run's: pairs of two lagged variables left out
    if children is None:  # the sampler's edges.csv lists all n(n-1) pairs: its run tells slice t
        children = _children_of_run(edges, names)
    curve = edge_roc(P, read_truth(truth, names, children), children)
    echo(f"AUC {curve.auc:.6f}")
    if plot_path:
        plot_roc([curve], plot_path, labels=[f"AUC {curve.auc:.3f}"],
                 title=f"Undirected-edge ROC: {edges} against {truth}")
        echo(f"wrote {plot_path}")
    if curve_path:
        with opt.open_output(curve_path, "w", encoding="utf-8") as fh:  # a FIFO nothing reads: not a wait
            fh.write("fpr,tpr,threshold\n")
            for x, y, t in zip(curve.fpr, curve.tpr, curve.thresholds):
                fh.write(f"{float(x)!r},{float(y)!r},{float(t)!r}\n")
        echo(f"wrote {curve_path}")


@click.command("plot", context_settings=CONTEXT)
@click.argument("edges", type=click.Path(exists=True))
@click.option("--out", "heatmap_path", type=click.Path(dir_okay=False), default=None,
              help="Heatmap of the posterior matrix (.png, .svg or .pdf). Default when "
                   "--graph is not given: NAME.heatmap.png in the current folder, NAME the "
                   "run's folder (for its edges.csv) or EDGES's name.")
@click.option("--graph", "graph_path", type=click.Path(dir_okay=False), default=None,
              help="The graph of edges above --threshold: a picture, or DOT / GraphML text.")
@click.option("--threshold", type=float, default=0.5, show_default=True,
              help="Draw/export the directed edges whose posterior is ≥ this (as "
                   "Result.to_networkx(threshold=...)).")
@click.option("--format", "fmt", type=click.Choice(["png", "svg", "pdf", "dot", "graphml"]),
              default=None, help="Format of --graph (default: from its suffix).")
@click.option("--truth", type=click.Path(exists=True, dir_okay=False), default=None,
              help="parent,child CSV of the true network: colours drawn arcs right/reversed/wrong "
                   "and shows missed ones dashed.")
def plot(edges, heatmap_path, graph_path, threshold, fmt, truth):
    """A heatmap of an edge-posterior file, and with --graph the graph of its edges.

    EDGES is a run's edges.csv, the edges.csv of `bigbn sample` (samples-PRIOR/), or
    their folder. Without --out or --graph it writes the heatmap of p(parent -> child)
    into the current folder (never into the run's); --graph FILE draws the arcs with
    posterior ≥ --threshold (.png/.svg/.pdf) or exports them (.dot, .graphml).

    \b
    Examples:
      bigbn plot run/samples-order-modular --out sampled.png
      bigbn plot run/edges.csv --out heatmap.png --graph graph.png --threshold 0.5
      bigbn plot run/edges.csv --graph graph.dot
      bigbn plot run/edges.csv --graph graph.xml --format graphml
    """
    from bigbn.outputs.plot import heatmap, thresholded_edges, write_graph
    from bigbn.tools.roc import read_edges_and_children
    from bigbn.tools.simulate import read_truth

    run = _run_of(edges)
    edges = _edges_file(edges)
    for path, flag in ((heatmap_path, "--out"), (graph_path, "--graph")):
        opt.output_file(path, flag, inputs=(edges, truth), workdir=run)  # not over what it reads
    _distinct_outputs((heatmap_path, "--out"), (graph_path, "--graph"))
    from bigbn.outputs.plot import graph_format, picture_format

    if fmt is not None and graph_path is None:  # it was ignored, silently (the heatmap's format is its suffix)
        raise OptionError("--format is the format of --graph; give --graph FILE (the heatmap's format is its suffix)")
    if heatmap_path:  # both names before either file: --graph g.txt failed after the heatmap was written
        picture_format(heatmap_path)
    if graph_path:
        graph_format(graph_path, fmt)
    names, P, children = read_edges_and_children(edges)
    adj = read_truth(truth, names, children) if truth else None  # no true arc into a lagged variable
    from bigbn.io.series import lag_of

    tiers = _run_tiers(edges, names)
    slices = {x: lag_of(x, names) for x in names}
    if not any(slices.values()):
        slices = None  # not a dynamic network: a circle
    elif tiers is not None and all(len(t) == 1 or all(slices[x] == 0 for x in t) for t in tiers):
        tiers = None  # a dynamic run's own tiers (its lagged variables one by one): the slices say it
    if heatmap_path is None and graph_path is None:
        heatmap_path = default_heatmap(edges)
    if graph_path:
        thresholded_edges(names, P, threshold)  # validates the threshold first
    if heatmap_path:
        heatmap(names, P, heatmap_path, title=f"p(parent → child | data), {edges}", tiers=tiers, slices=slices)
        echo(f"wrote {heatmap_path}")
    if graph_path:
        used = write_graph(names, P, graph_path, threshold=threshold, fmt=fmt, truth=adj,
                           title=f"{edges}: arcs with posterior ≥ {threshold:g}"
                                 + (f" against {Path(truth).name}" if truth else ""), tiers=tiers,
                           slices=slices)
        count = len(thresholded_edges(names, P, threshold))
        echo(f"wrote {graph_path} ({used}, {count} edges with posterior ≥ {threshold:g})")


@click.command("study", context_settings=CONTEXT)
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--n", "ns", default="5,10,15,20,25", show_default=True,
              help="Numbers of nodes (comma-separated).")
@click.option("--max-parents", "-k", "ks", default=None,
              help="Maximum numbers of parents, of the generating networks and of the "
                   "analysis (comma-separated)  [default: 2,3,4,5]")
@click.option("--k", "ks_old", default=None, hidden=True)
@click.option("--states", "rs", default="2,4", show_default=True,
              help="States per variable (comma-separated).")
@click.option("--rows", "ms", default="20,100,500,2000,10000", show_default=True,
              help="Nested data-set sizes m (comma-separated); the first m records are used.")
@click.option("--replicates", type=int, default=10, show_default=True,
              help="Random networks (and data sets) per configuration (n, k, r).")
@click.option("--seed", type=int, default=0, show_default=True, help="Base random seed.")
@click.option("--score", type=click.Choice(["k2", "bdeu"]), default="k2", show_default=True,
              help="Local score used in the analysis (the generating model's is k2).")
@click.option("--structure-prior", "structure_prior", type=click.Choice(["koivisto-sood", "uniform"]),
              default=None, help="Structure prior used in the analysis  [default: koivisto-sood]")
@click.option("--prior", "prior_old", type=click.Choice(["koivisto-sood", "uniform"]), default=None,
              hidden=True)
@click.option("--figures/--no-figures", default=True, show_default=True,
              help="Draw ROC figures in the style of the paper's figures 1-4.")
@click.option("--figure-replicate", type=int, default=0, show_default=True,
              help="Replicate shown in the per-m figures (by_k_*, by_n_*).")
def study(out, ns, ks, ks_old, rs, ms, replicates, seed, score, structure_prior, prior_old,
          figures, figure_replicate):
    """The paper's simulation study (section 5), resumable.

    For every (n, k, r) and replicate: a random network, max(--rows) records from it,
    and for every m the exact edge posteriors from the first m records, scored by the
    undirected-edge ROC. Writes OUT/auc.csv and OUT/figures/*.png; cells already in
    OUT/cells/ are skipped, so an interrupted study continues where it stopped. The
    defaults are the paper's full grid (400 networks x 5 data sizes).

    \b
    Example (small):
      bigbn study --n 5,8 -k 2,3 --states 2,4 --rows 20,100,500 --replicates 3 study_out
    """
    from bigbn.tools.study import StudyPlan, cell_done, run_study, write_figures

    ks = _alias(ks, ks_old, "--max-parents", "--k") or "2,3,4,5"
    structure_prior = _alias(structure_prior, prior_old, "--structure-prior", "--prior") or "koivisto-sood"
    plan = StudyPlan(ns=_int_list(ns, "--n"), ks=_int_list(ks, "--max-parents"), rs=_int_list(rs, "--states"),
                     ms=_int_list(ms, "--rows"), replicates=replicates, seed=seed, score=score,
                     structure_prior=structure_prior)
    if not 0 <= figure_replicate < plan.replicates:
        raise OptionError(f"--figure-replicate must be in 0..{plan.replicates - 1}")
    total = len(plan.cells())
    counter = {"i": 0}

    def progress(event, cell, info):
        if event == "start":
            return
        counter["i"] += 1  # one "skip" or "done" per cell
        if event == "done":
            echo(f"[{counter['i']}/{total}] {cell.key}  AUC {info['auc']:.4f}  "
                       f"({info['seconds']:.1f} s)")

    rows = run_study(plan, out, progress=progress, figures=False)
    if figures:
        for path in write_figures(plan, out, replicate=figure_replicate):
            echo(f"wrote {path}")
    # auc.csv holds every finished cell in OUT, of earlier grids too: "3 of 1 cells done"
    # counted those; this grid's count is of its own cells, the others said apart
    mine = sum(cell_done(out, c) for c in plan.cells())
    others = f" (and {len(rows) - mine} of other grids run into {out})" if len(rows) > mine else ""
    echo(f"{mine} of {total} cells done{others}; table in {Path(out) / 'auc.csv'}")
