"""Package structure: no import cycle among bigbn's modules (counting imports inside
functions too: a lazy import only hides a cycle), and the executors know nothing of the
engine (they run task specs with whatever task function they are given)."""

import ast
from pathlib import Path

import bigbn

ROOT = Path(bigbn.__file__).resolve().parent


def import_graph() -> dict[str, set[str]]:
    mods = {}
    for f in ROOT.rglob("*.py"):
        parts = ("bigbn",) + f.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    graph = {}
    for name, f in mods.items():
        pkg = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    graph = import_graph()
    assert {"bigbn.engine.tasks", "bigbn.engine.executors", "bigbn.engine.cluster", "bigbn.store.workdir"} <= graph.keys()
    assert cycles(graph) == []


def test_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_executors_do_not_import_the_engine():
    graph = import_graph()
    for name, deps in graph.items():
        if name.startswith("bigbn.engine.executors"):
            assert all(d.startswith("bigbn.engine.executors") or d in {"bigbn.plan.lattice", "bigbn.errors"}
                       for d in deps), (name, deps)
