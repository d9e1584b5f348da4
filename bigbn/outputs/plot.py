"""Pictures and graph exports of an edge-posterior matrix (matplotlib only, Agg).

- `heatmap`: the n x n matrix p(u -> v | x) with node names (rows = parent u,
  columns = child v).
- `draw_graph`: the directed edges whose posterior is at least a threshold, nodes on a
  circle, arrow width and darkness by posterior; with a true network, correct arcs are
  green, reversed ones orange, wrong ones red, missed true arcs dashed grey. A legend says
  which (and, for a tiered run, a second one names the tiers).
- `to_dot` / `to_graphml`: text exports of the thresholded graph, the posterior kept
  as an edge attribute.

Thresholds: an edge is drawn (and exported) when its posterior is ≥ the threshold, as
`Result.to_networkx(threshold=...)` keeps it. The posteriors are exact up to round-off
(about 1e-9 absolute), so an edge within that of the threshold may fall on either side:
at the default 0.5, a pair whose two directions share the mass almost equally (say
0.50000014 and 0.49999986) shows one direction only; look at the numbers (edges.csv, the
heatmap) rather than at the drawing for such pairs.

Figures are made with `matplotlib.figure.Figure` directly (no pyplot state), so this
works headless and from several threads.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from bigbn.errors import OptionError

GRAPH_FORMATS = ("png", "svg", "pdf", "dot", "graphml")


def figure(figsize=(6.0, 5.0)):
    """A new (Figure, Axes) pair not registered with pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def printable(text: str) -> str:
    """``text`` as a picture or an XML export shows it: each character XML cannot hold
    (a control character such as U+0001 in a DataFrame's column name) as its escape
    \\x01. Drawn as it was, it made an SVG no XML parser reads (and a glyph-less box
    in a PNG, with matplotlib's warning)."""
    from bigbn.io.bif import NOT_XML

    return NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def picture_format(path, fmt=None) -> str:
    """png, svg or pdf: ``fmt``, else the suffix of ``path``; OptionError for another (a
    command checks its pictures' names with this before its work)."""
    fmt = fmt or Path(path).suffix.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise OptionError(f"{path}: picture format must be png, svg or pdf (by suffix or --format)")
    return fmt


def save_figure(fig, path, fmt=None) -> None:
    """Save a Figure as png, svg or pdf (``fmt``, else from the file suffix); every text
    of the figure (names, titles) is `printable` first."""
    from matplotlib.text import Text

    path = Path(path)
    fmt = picture_format(path, fmt)
    for t in fig.findobj(Text):
        text = t.get_text()
        if printable(text) != text:
            t.set_text(printable(text))
    from bigbn.options import open_output

    with open_output(path, "wb") as fh:  # a FIFO nothing reads: one line, not a wait
        fig.savefig(fh, format=fmt, dpi=150)


def _tier_order(names, tiers):
    """(node order, tier boundaries): the nodes tier by tier (earliest first, each tier in
    data order), and after which position each tier but the last ends."""
    index = {x: i for i, x in enumerate(names)}
    order = [i for t in tiers for i in sorted(index[x] for x in t)]
    bounds = list(np.cumsum([len(t) for t in tiers])[:-1])
    return order, bounds


def heatmap(names, posterior, path, title=None, tiers=None, slices=None) -> None:
    """Write a heatmap of the (n, n) posterior matrix, [u, v] = p(u -> v). tiers (lists of
    names, earliest first; a tiered run's): rows and columns tier by tier, with lines at
    the tier boundaries (arcs below the diagonal blocks are impossible). slices ({name:
    lag} of a dynamic network): the columns are slice t (the only children), the rows
    every variable, the largest lag first, with lines between the slices."""
    P = np.asarray(posterior, dtype=np.float64)
    n = len(names)
    bounds, hbounds = [], []
    rows = cols = list(names)
    if tiers:
        order, bounds = _tier_order(names, tiers)
        names = [names[i] for i in order]
        P = P[np.ix_(order, order)]
        rows = cols = names
    elif slices:
        index = {x: i for i, x in enumerate(names)}
        rows = sorted(names, key=lambda x: (-slices[x], index[x]))
        cols = [x for x in names if slices[x] == 0]
        hbounds = [j for j in range(1, len(rows)) if slices[rows[j]] != slices[rows[j - 1]]]
        P = P[np.ix_([index[x] for x in rows], [index[x] for x in cols])]
    side = min(max(4.0, 0.28 * n + 2.5), 30.0)
    width = side + 1.0 if cols is rows else min(max(5.0, 0.45 * len(cols) + 4.0), 30.0)
    fig, ax = figure(figsize=(width, side))
    shown = P.copy()
    for u, x in enumerate(rows):  # no self-loops: leave the diagonal blank
        if x in cols:
            shown[u, cols.index(x)] = np.nan
    im = ax.imshow(shown, vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
    # (tick labels are made when the figure is drawn, after save_figure's pass: made printable here)
    ax.set_xticks(range(len(cols)), labels=[printable(str(x)) for x in cols], rotation=90, fontsize="small")
    ax.set_yticks(range(len(rows)), labels=[printable(str(x)) for x in rows], fontsize="small")
    ax.set_xlabel("child v")
    ax.set_ylabel("parent u")
    if n <= 12:
        for u in range(len(rows)):
            for v in range(len(cols)):
                if rows[u] != cols[v]:
                    ax.text(v, u, f"{P[u, v]:.2f}", ha="center", va="center",
                            fontsize="x-small", color="white" if P[u, v] < 0.6 else "black")
    for b in bounds:
        ax.axhline(b - 0.5, color="white", lw=1.5)
        ax.axvline(b - 0.5, color="white", lw=1.5)
    for b in hbounds:
        ax.axhline(b - 0.5, color="white", lw=1.5)
    fig.colorbar(im, ax=ax, label="p(u \u2192 v | data)")
    import textwrap

    ax.set_title("\n".join(textwrap.wrap(title or "edge posteriors", 70 if cols is rows else 40)))
    save_figure(fig, path)


def thresholded_edges(names, posterior, threshold: float) -> list[tuple[str, str, float]]:
    """Directed edges (u, v, p) with p(u -> v) ≥ threshold, highest posterior first."""
    if not 0.0 <= threshold <= 1.0:
        raise OptionError(f"threshold must be in [0, 1], got {threshold}")
    P = np.asarray(posterior, dtype=np.float64)
    us, vs = np.nonzero(P >= threshold)
    edges = [(names[u], names[v], float(P[u, v])) for u, v in zip(us, vs) if u != v]
    return sorted(edges, key=lambda e: -e[2])


def to_dot(names, edges) -> str:
    """Graphviz DOT text of a directed graph; every node, edges carry ``posterior``."""

    def q(s):
        return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["digraph bigbn {"]
    lines += [f"  {q(v)};" for v in names]
    for u, v, p in edges:
        lines.append(f'  {q(u)} -> {q(v)} [posterior={p!r}, label="{p:.2f}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_graphml(names, edges) -> str:
    """GraphML text of a directed graph; edges carry a double ``posterior`` attribute."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
        '  <key id="posterior" for="edge" attr.name="posterior" attr.type="double"/>',
        '  <graph id="bigbn" edgedefault="directed">',
    ]
    # a name XML cannot hold is written as its escape (`printable`), as in the pictures: the
    # character itself left a file that no GraphML reader parsed
    lines += [f"    <node id={quoteattr(printable(str(v)))}/>" for v in names]
    for u, v, p in edges:
        lines.append(f"    <edge source={quoteattr(printable(str(u)))} target={quoteattr(printable(str(v)))}>"
                     f'<data key="posterior">{escape(repr(p))}</data></edge>')
    lines += ["  </graph>", "</graphml>"]
    return "\n".join(lines) + "\n"


def draw_graph(names, posterior, path, threshold: float = 0.5, truth=None, title=None,
               fmt=None, tiers=None, slices=None) -> None:
    """Draw the edges with posterior ≥ threshold on a circular layout (PNG/SVG/PDF).

    truth : optional bool (n, n) adjacency of the true network, to colour the arcs.
    tiers : optional lists of names (a tiered run's): the nodes go round the circle tier
    by tier, each tier's nodes filled with its own colour (a legend names the tiers).
    slices : optional {name: lag} of a dynamic network: the slices side by side instead,
    lagged ones left (t−L … t−1), slice t right, each variable on its own row.
    """
    from matplotlib.patches import FancyArrowPatch

    P = np.asarray(posterior, dtype=np.float64)
    n = len(names)
    index = {v: i for i, v in enumerate(names)}
    edges = thresholded_edges(names, P, threshold)
    place = np.arange(n)
    fill = [None] * n
    if tiers:
        order, _ = _tier_order(names, tiers)
        place[order] = np.arange(n)
        import matplotlib

        cmap = matplotlib.colormaps["tab10"]
        for j, t in enumerate(tiers):
            for x in t:
                fill[index[x]] = cmap(j % 10)
    angle = np.pi / 2 - 2 * np.pi * place / n
    xy = np.c_[np.cos(angle), np.sin(angle)]
    side = min(max(5.0, 0.25 * n + 4.0), 24.0)
    node_size = 0.06 if n > 20 else 0.09
    if slices:
        xy, side, node_size = _slice_layout(names, slices)
    fig, ax = figure(figsize=(side, side))
    if slices:
        for i, name in enumerate(names):
            if slices[name] and all(slices[x] != slices[name] for x in names[:i]) or name == names[0]:
                ax.text(xy[i][0], 1.22, f"slice t−{slices[name]}" if slices[name] else "slice t",
                        ha="center", va="bottom", fontsize="medium", weight="bold")
    for i, name in enumerate(names):
        ax.add_patch(_circle(xy[i], node_size, fill[i]))
        x, y = xy[i] * (1.0 + node_size + 0.04)
        ha = "left" if x > 0.2 else "right" if x < -0.2 else "center"
        va = "bottom" if y > 0.2 else "top" if y < -0.2 else "center"
        if slices:
            x, y, ha, va = xy[i][0], xy[i][1] + node_size + 0.02, "center", "bottom"
        ax.text(x, y, name, ha=ha, va=va, fontsize="small")
    drawn = set()
    for u, v, p in edges:
        iu, iv = index[u], index[v]
        if truth is None:
            color = (0.1, 0.1, 0.5, 0.35 + 0.65 * p)
        else:
            color = ("tab:green" if truth[iu, iv] else "tab:orange" if truth[iv, iu]
                     else "tab:red")
        # bend the arc when both directions are drawn, so they do not overlap; within a
        # slice column, so that it passes beside the nodes between
        bend = 0.15 if P[iv, iu] >= threshold else 0.0
        if slices and slices[u] == slices[v]:
            bend = 0.5
        ax.add_patch(FancyArrowPatch(
            xy[iu], xy[iv], arrowstyle="-|>", mutation_scale=12, lw=0.6 + 2.4 * p,
            color=color, shrinkA=14, shrinkB=14, connectionstyle=f"arc3,rad={bend}"))
        drawn.add((iu, iv))
    if truth is not None:
        for iu, iv in zip(*np.nonzero(truth)):
            if (iu, iv) not in drawn and (iv, iu) not in drawn:
                ax.add_patch(FancyArrowPatch(
                    xy[iu], xy[iv], arrowstyle="-|>", mutation_scale=10, lw=0.8,
                    color="0.6", ls="--", shrinkA=14, shrinkB=14))
    for legend in graph_legends(truth is not None, threshold, tiers and [fill[index[t[0]]] for t in tiers]):
        ax.add_artist(legend(ax))  # each its own artist: a second legend must not replace the first
    lim = 1.0 + node_size + 0.45
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.axis("off")
    import textwrap

    text = title or f"edges with posterior ≥ {threshold:g}"
    ax.set_title("\n".join(textwrap.wrap(f"{text} ({len(edges)} arcs)", 60)))
    save_figure(fig, path, fmt)


def graph_legends(truth: bool, threshold: float, tier_colours=None) -> list:
    """The legends of `draw_graph`, as functions of the Axes: what the arcs' colours mean
    (against a true network) or their width and darkness (the posterior, the arcs'
    colour when there is no true network), and, for a tiered run, the tiers' fills."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if truth:
        keys = [Line2D([], [], color=c, ls=ls, lw=2, label=lab) for c, ls, lab in (
            ("tab:green", "-", "true arc"), ("tab:orange", "-", "true arc, reversed"),
            ("tab:red", "-", "not in the true network"), ("0.6", "--", "true arc, missed"))]
    else:
        ps = sorted({max(threshold, 0.01), (1 + threshold) / 2, 1.0})
        keys = [Line2D([], [], color=(0.1, 0.1, 0.5, 0.35 + 0.65 * p), lw=0.6 + 2.4 * p,
                       label=f"posterior {p:.2f}") for p in ps]
    out = [lambda ax: ax.legend(handles=keys, loc="lower left", fontsize="small", frameon=False)]
    if tier_colours:
        tiers = [Patch(color=c, label=f"tier {j + 1}") for j, c in enumerate(tier_colours)]
        out.append(lambda ax: ax.legend(handles=tiers, loc="upper left", fontsize="small", frameon=False))
    return out


def _slice_layout(names, slices):
    """Positions (n, 2) in [−1, 1]² of a dynamic network's nodes: one column per lag (the
    largest left, slice t right), one row per variable of slice t; the figure's side and the
    node radius."""
    lags = sorted({int(x) for x in slices.values()}, reverse=True)
    base = [x for x in names if slices[x] == 0]
    row = {x: j for j, x in enumerate(base)}
    xs = np.linspace(-1.0, 1.0, len(lags)) if len(lags) > 1 else np.zeros(1)
    ys = np.linspace(1.0, -1.0, len(base)) if len(base) > 1 else np.zeros(1)
    xy = np.zeros((len(names), 2))
    for i, x in enumerate(names):
        lag = int(slices[x])
        stem = x if lag == 0 else x[: x.rfind("[t-")]
        xy[i] = (xs[lags.index(lag)], ys[row[stem]])
    side = min(max(5.0, 0.35 * len(base) + 3.0), 24.0)
    return xy, side, min(0.09, 0.6 / max(len(base), 1))


def _circle(center, radius, fill=None):
    from matplotlib.patches import Circle

    return Circle(tuple(center), radius, facecolor=fill or "white", edgecolor="black", lw=1.0, zorder=3)


def graph_format(path, fmt=None) -> str:
    """The export format: ``fmt`` if given, else from the suffix (.gv counts as dot)."""
    if fmt is None:
        suffix = Path(path).suffix.lower().lstrip(".")
        fmt = {"gv": "dot", "xml": "graphml"}.get(suffix, suffix)
    if fmt not in GRAPH_FORMATS:
        raise OptionError(
            f"{path}: unknown graph format {fmt!r}; use one of {', '.join(GRAPH_FORMATS)}"
        )
    return fmt


def write_graph(names, posterior, path, threshold=0.5, fmt=None, truth=None, title=None, tiers=None,
                slices=None) -> str:
    """Write the thresholded graph as a picture or as DOT/GraphML text; returns the format."""
    fmt = graph_format(path, fmt)
    if fmt in ("dot", "graphml"):
        edges = thresholded_edges(names, posterior, threshold)
        text = to_dot(names, edges) if fmt == "dot" else to_graphml(names, edges)
        from bigbn.options import open_output

        with open_output(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        draw_graph(names, posterior, path, threshold, truth=truth, fmt=fmt, title=title, tiers=tiers,
                   slices=slices)
    return fmt

