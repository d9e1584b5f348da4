"""Dynamic Bayesian networks (2-TBN): a time series as a run of tiers, exactly.

The model (docs/posterior.md, "Time series"): the n variables of slice t are the nodes;
their lagged copies X[t−l] (l = 1..L) are exogenous, always available, never children.
A node's parents are lagged variables and nodes before it in an order of slice t, at
most k in all. The order-modular prior runs over the n nodes of slice t.

That is a tiered run (`bigbn/plan/tiers.py`) of the n·(L + 1) columns of the transition
rows (`bigbn/io/series.py`): each lagged variable is a one-node tier of its own, earlier
than slice t, with max parents 0 (so it has one family, ∅, and no lattice), and slice t
is one tier (or the user's tiers of it). A tier's lattice scores are then exactly the fold
of the lagged parents into each node's table, A_i(T) = log Σ_{H lagged, |T|+|H| ≤ k}
exp β_i(T ∪ H), the 2^n lattice runs over slice t only, and every output of a tiered run
is the DBN's: edges and parent sets (β_i(T ∪ H) γ_i(T) / Z), exact samples (H drawn given
T ∝ exp β_i(T ∪ H)), the MAP network (the best H completing each T), out of core and
resumable. ``--no-contemporaneous`` makes every node of slice t a one-node tier too, with
the edges within slice t forbidden: no lattice at all.

log p(x) of such a run holds the lagged variables' own ∅ families, which `learn` takes off
(and adds log n! without contemporaneous edges: the n! orders of slice t, each the same sum),
so a DBN's log marginal is Σ over the orders of slice t of Π_i α_i, as for a static run.
"""

from __future__ import annotations

import numbers
import os

from bigbn.errors import OptionError
from bigbn.io import frames
from bigbn.io.data import read_table
from bigbn.io.series import Transitions, check_lag, split_columns, transition_rows, transitions
from bigbn.knowledge import Knowledge


def check_columns(n: int, lag: int) -> None:
    """OptionError if n variables with lag L make more columns, n·(L + 1), than a tiered
    run takes (naming the variables and the lag, not only the columns)."""
    from bigbn.plan.tiers import MAX_TIERED_NODES

    if n * (lag + 1) > MAX_TIERED_NODES:
        raise OptionError(f"{n} variables with lag {lag}: {n * (lag + 1)} columns, but a tiered run takes at "
                          f"most {MAX_TIERED_NODES}")


def is_dynamic(data, lag, series, time, contemporaneous) -> bool:
    """Whether learn's arguments ask for a DBN. contemporaneous=1, which `options.flag` takes
    as True (the default), asks for none (it ran a DBN of lag 1 on a static table)."""
    default = isinstance(contemporaneous, (bool, numbers.Integral)) and contemporaneous == 1
    return (isinstance(data, Transitions) or lag is not None or series is not None or time is not None
            or not default)


def load(data, *, lag=None, series=None, time=None, score="auto", sep=None) -> Transitions:
    """The transition rows of ``data`` (a CSV path or a DataFrame of series; a
    `Transitions` is returned as it is). lag: L (default 1); series, time: column names.
    OptionError for a table of text and numbers (mixed data: not for time series yet), naming
    its discrete and continuous columns."""
    from bigbn import options as opt
    from bigbn.inputs import _dataset_from_table
    from bigbn.scores.base import lookup

    if isinstance(data, Transitions):
        if lag is not None and check_lag(lag) != data.lag:
            raise OptionError(f"lag={lag} but these transition rows have lag {data.lag}")
        if series is not None or time is not None:
            raise OptionError("these are transition rows already: drop series= and time_column=")
        return data
    lag = check_lag(1 if lag is None else lag)
    categories, labels = {}, None
    if frames.is_dataframe(data):
        table, by_index = frames.table_from_frame(data, min_columns=1)  # one variable is a network
        categories = {table.names[j]: lv for j, lv in by_index.items()}
        labels = data.index.tolist()  # messages name a DataFrame's rows by label, not by a file's lines
    elif isinstance(data, (str, os.PathLike)):
        table = read_table(os.fspath(data), opt.sep(sep), min_columns=1)  # with its lagged copies
    else:
        raise OptionError(f"a time series is a CSV file or a pandas DataFrame, got {type(data).__name__}")
    for value, flag in ((series, "--series-column"), (time, "--time-column")):  # a name, or a DataFrame's
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, numbers.Integral))):
            raise OptionError(f"{flag} is one column's name, got {type(value).__name__} {value!r}")  # int label
    series = None if series is None else str(series)
    time = None if time is None else str(time)
    table, ids, times = split_columns(table, series, time)
    if labels is not None and time is not None:  # a DataFrame's timedelta64 times: nanoseconds
        elapsed = frames.elapsed_times(data, time)
        times = times if elapsed is None else elapsed
    wanted = lookup(score)
    full = _dataset_from_table(table, wanted)
    if full.kind == "mixed" and wanted is None:  # refused here, naming the columns: the usual
        # cause is a series id (text) or a time (numbers) read as a variable
        kinds = [[x for x, r in zip(full.names, full.arities.tolist()) if bool(r) == d] for d in (True, False)]
        shown = [", ".join(c[:4]) + (", ..." if len(c) > 4 else "") for c in kinds]
        hint = ("; is one of them a series id or a time? name it with --series-column or --time-column"
                if series is None or time is None else "")
        raise OptionError(f"a time series of mixed data (the cg score) is not supported yet: {table.path} has "
                          f"discrete columns ({shown[0]}) and continuous ones ({shown[1]}); give a table of one "
                          f"kind{hint}")
    if categories:
        full = frames.declared_order(full, {j: categories[x] for j, x in enumerate(table.names)
                                            if x in categories})
    check_columns(full.n, lag)
    rows, n_series = transition_rows(table, lag, ids, times, series, time, labels)
    return transitions(full, rows, lag, n_series, series, time)


def knowledge(user: Knowledge | None, tr: Transitions, contemporaneous: bool = True) -> Knowledge:
    """The run's `Knowledge`: the user's (tiers of slice t; edges by name, lagged parents
    as NAME[t-l]) with the DBN's tiers (every lagged variable a one-node tier before slice
    t, max parents 0) and, without contemporaneous edges, the edges within slice t
    forbidden."""
    user = user if user is not None else Knowledge()
    current = list(tr.names)
    lagged = list(tr.dataset.names[tr.n:])
    is_lagged = set(lagged).__contains__
    for j, t in enumerate(user.tiers):
        for x in t:
            if is_lagged(x):
                raise OptionError(f"knowledge: tier {j + 1} lists the lagged variable {x!r}; tiers order "
                                  "the variables of slice t (the lagged ones come before all of them)")
    for what, edges in (("forbidden", user.forbidden), ("required", user.required),
                        ("edge_prob", tuple(e for e, _ in user.edge_prob))):
        for u, v in edges:
            if is_lagged(v):
                raise OptionError(f"knowledge: {what} edge {u} -> {v}: a lagged variable is never a child "
                                  "in a dynamic network (its parents are not modelled)")
    forbidden = list(user.forbidden)
    if contemporaneous:
        within = list(user.tiers) or [current]
        no_edges = [len(lagged) + t for t in user.no_edges_within]
    else:
        if user.tiers:
            raise OptionError("tiers order the variables of slice t, but without contemporaneous edges "
                              "there is no edge within slice t: drop the tiers or the option")
        within = [[x] for x in current]
        no_edges = []
        hard = user.hard_edges()[1]
        for u, v in sorted(hard):
            if not is_lagged(u):
                what = (f"required edge {u} -> {v}" if (u, v) in user.required else
                        f"edge {u} -> {v} of prior probability 1")  # named as given (docs/design.md)
                raise OptionError(f"knowledge: {what} is within slice t, but this time series "
                                  "has no contemporaneous edges (--no-contemporaneous): drop the one or the other")
        forbidden += [(u, v) for u in current for v in current if u != v]
    return Knowledge(tiers=[[x] for x in lagged] + [list(t) for t in within], forbidden=forbidden,
                     required=list(user.required), edge_prob=dict(user.edge_prob),
                     # a lagged variable has no parents whatever limit it was given (e.g. one
                     # integer for every variable, `--max-parents-file 2`)
                     max_parents={**dict(user.max_parents), **{x: 0 for x in lagged}},
                     no_edges_within=no_edges)


def plan_lines(n: int, lag: int, contemporaneous: bool, k: int, memory: int, workers: int, alpha_mode: str,
               map_dag: bool, posterior: bool, chunk_bits, workdir, factors: dict | None = None,
               clock: str = "the reference machine", rows: int = 1000) -> list[str]:
    """`bigbn plan --n N --lag L`: the plan of the tiered run a DBN is (`knowledge`), its
    lagged variables' one-node tiers (no lattice) summed up in one line; factors, clock:
    as `bigbn.plan.tiers.plan_lines` takes them."""
    from bigbn.plan.tiers import plan_lines as tier_lines

    lag = check_lag(lag, "--lag")
    check_columns(n, lag)  # before the n·L one-node tiers are listed (--lag 10^7: 2 GB)
    sizes = (1,) * (n * lag) + ((n,) if contemporaneous else (1,) * n)
    lines = tier_lines(sizes, k, memory, workers, alpha_mode, map_dag, posterior, chunk_bits, workdir,
                       factors, clock, rows, parentless=n * lag)
    head = (f"dynamic network: {n} variable{'s' * (n != 1)} per slice, lag {lag}, {n * (lag + 1)} columns; the "
            f"{n * lag} lagged ones are parents only (one-node tiers, no lattice)"
            + ("" if contemporaneous else "; no edges within slice t (no lattice at all)"))
    lagged = {f"  tier {j + 1}: 1 node, no lattice" for j in range(n * lag)}
    return [head] + [x for x in lines if x not in lagged]
