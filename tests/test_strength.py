"""bnlearn's language (bigbn/outputs/strength.py): strength.csv, the averaged DAG, CPDAG marks.

References (tests/naive.py): strength and direction recomputed line by line from a run's
edges.csv; the CPDAG of a DAG by listing its whole equivalence class (every orientation
of the skeleton that is acyclic with the same v-structures); the greedy averaged DAG
checked by its definition (acyclic, every skipped arc closes a cycle, the thresholded
graph itself when that is acyclic).
"""

from __future__ import annotations

import csv

import networkx as nx
import numpy as np
import pytest

import bigbn
from bigbn.errors import BigBNWarning, OptionError
from bigbn.outputs.strength import averaged_arcs, cpdag, cpdag_probabilities

import naive
from helpers import ASIA


@pytest.fixture(scope="module")
def asia(tmp_path_factory):
    wd = tmp_path_factory.mktemp("asia")
    return bigbn.learn(ASIA, workdir=wd), wd


def test_strength_csv_is_bnlearns_table_from_edges_csv(asia):
    res, wd = asia
    with open(wd / "strength.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["from", "to", "strength", "direction"]
    want = naive.strength_from_edges_csv(wd / "edges.csv")
    got = [(a, b, float(s), float(d)) for a, b, s, d in rows[1:]]
    assert len(got) == 8 * 7 and [g[:2] for g in got] == [w[:2] for w in want]
    for g, w in zip(got, want):
        assert g[2:] == pytest.approx(w[2:], abs=1e-15)
    # not trivial: pairs of every kind, and both orientations carry the same strength
    s = {(a, b): (x, y) for a, b, x, y in got}
    assert any(0.3 < d < 0.7 and x > 0.5 for x, d in s.values())  # smoke - lung: adjacent, direction open
    assert all(s[a, b][0] == s[b, a][0] for a, b in s)
    assert all(abs(s[a, b][1] + s[b, a][1] - 1) < 1e-12 for a, b in s if s[a, b][0] > 0)
    df = res.strength()
    assert list(df.columns) == ["from", "to", "strength", "direction"]
    assert [tuple(r) for r in df.itertuples(index=False)] == got


def test_averaged_is_acyclic_where_the_threshold_graph_has_a_cycle_on_asia(asia):
    res, _ = asia
    with pytest.warns(BigBNWarning, match=r"posterior ≥ 0.4 hold a directed cycle"):  # and says so
        thresholded = res.to_networkx(threshold=0.4)
    assert not nx.is_directed_acyclic_graph(thresholded)  # smoke ⇄ lung
    g = res.averaged(0.4)
    assert nx.is_directed_acyclic_graph(g)
    assert g.graph["skipped"] == [("smoke", "lung")]
    assert g.has_edge("lung", "smoke") and not g.has_edge("smoke", "lung")
    kept = {(u, v) for u, v in thresholded.edges} - {("smoke", "lung")}
    assert set(g.edges) == kept
    for u, v, a in g.edges(data=True):
        assert a["posterior"] == res.posterior[res.names.index(u), res.names.index(v)] >= 0.4
        assert a["mark"] in ("directed", "undirected")


def test_averaged_breaks_a_three_cycle_of_a_real_run_at_one_half(tmp_path):
    """Scores a → b → c → a only (a .jkl file): the three chains carry almost all the
    posterior, each arc p ≈ 2/3, so the 0.5-thresholded graph is the 3-cycle."""
    path = tmp_path / "cycle.jkl"
    path.write_text("3\na 2\n0 0\n20 1 c\nb 2\n0 0\n20 1 a\nc 2\n0 0\n20 1 b\n")
    res = bigbn.learn(scores=path, workdir=tmp_path / "wd")
    P = res.posterior
    assert P[0, 1] == pytest.approx(2 / 3, abs=1e-6) and P[2, 0] == pytest.approx(2 / 3, abs=1e-6)
    with pytest.warns(BigBNWarning, match=r"hold a directed cycle \((a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c)\)"):
        assert not nx.is_directed_acyclic_graph(res.to_networkx(threshold=0.5))
    g = res.averaged(0.5)
    assert nx.is_directed_acyclic_graph(g) and g.number_of_edges() == 2
    assert len(g.graph["skipped"]) == 1
    with open(tmp_path / "wd" / "strength.csv", newline="") as fh:
        rows = {(r["from"], r["to"]): (float(r["strength"]), float(r["direction"])) for r in csv.DictReader(fh)}
    # a and b adjacent in two chains of three; when adjacent, always a → b (b → a has no score)
    assert rows["a", "b"] == pytest.approx((2 / 3, 1.0), abs=1e-6)
    assert rows["b", "a"] == pytest.approx((2 / 3, 0.0), abs=1e-6)


def test_averaged_arcs_by_definition_on_random_posteriors():
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(2, 8))
        P = rng.random((n, n)) ** 2
        np.fill_diagonal(P, 0)
        t = float(rng.choice([0.2, 0.4, 0.5, 0.7]))
        kept, skipped = averaged_arcs(P, t)
        want = [(u, v) for u in range(n) for v in range(n) if u != v and P[u, v] >= t]
        assert sorted(kept + skipped) == sorted(want)
        assert naive.is_acyclic(kept, n)
        for arc in skipped:  # each closes a cycle with the arcs kept before it
            before = [a for a in kept if P[a] > P[arc] or (P[a] == P[arc] and a < arc)]
            assert not naive.is_acyclic(before + [arc], n)
        if naive.is_acyclic(want, n):
            assert not skipped


def test_averaged_by_adjacency_is_bnlearns_rule(asia):
    res, _ = asia
    from bigbn.outputs.strength import strength_rows

    for t in (0.3, 0.5, 0.8):
        g = res.averaged(t, by="adjacency")
        want = naive.bnlearn_significant(strength_rows(res.names, res.posterior), t)
        assert nx.is_directed_acyclic_graph(g) and g.graph["by"] == "adjacency"
        assert sorted(g.edges) == sorted(set(want) - set(g.graph["skipped"]))
    # smoke - lung: adjacent with p 0.90, lung → smoke the likelier direction (0.54): bnlearn
    # keeps it at 0.5, the arc rule does not (0.49 < 0.5)
    assert res.averaged(0.5, by="adjacency").has_edge("lung", "smoke")
    assert not res.averaged(0.5).has_edge("lung", "smoke")
    rng = np.random.default_rng(9)
    for trial in range(200):  # random posteriors with p(u→v) + p(v→u) ≤ 1
        n = int(rng.integers(3, 7))
        P = rng.random((n, n))
        P = P / (P + P.T + rng.random((n, n)) * 0.3 + 1e-9) * 0.999
        P = np.minimum(P, 0.999 - P.T).clip(0)
        np.fill_diagonal(P, 0)
        kept, skipped = averaged_arcs(P, 0.5, by="adjacency")
        assert naive.is_acyclic(kept, n)
        rows = [(u, v, *x) for (u, v), x in zip(
            [(u, v) for u in range(n) for v in range(n) if u != v],
            [(min(P[u, v] + P[v, u], 1.0), P[u, v] / (P[u, v] + P[v, u]) if P[u, v] + P[v, u] > 0 else 0.0)
             for u in range(n) for v in range(n) if u != v])]
        assert sorted(kept + skipped) == sorted(naive.bnlearn_significant(rows, 0.5))


def test_averaged_refuses_a_bad_threshold(asia):
    res, _ = asia
    for bad in (0, 1.5, -0.1, "0.5", True):
        with pytest.raises(OptionError, match="threshold"):
            res.averaged(bad)
    with pytest.raises(OptionError, match="by is one of arc, adjacency"):
        res.averaged(0.5, by="strength")


def random_dag(rng, n, p):
    order = rng.permutation(n)
    return [(int(order[i]), int(order[j])) for i in range(n) for j in range(i + 1, n) if rng.random() < p]


def test_cpdag_against_the_enumerated_equivalence_class():
    rng = np.random.default_rng(11)
    kinds = set()
    for trial in range(400):
        n = int(rng.integers(2, 7))
        arcs = random_dag(rng, n, float(rng.choice([0.3, 0.5, 0.8])))
        if len(arcs) > 11:
            continue
        A = np.zeros((n, n), dtype=bool)
        for u, v in arcs:
            A[u, v] = True
        got = cpdag(A)
        want = naive.cpdag_by_enumeration(arcs, n)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), arcs
        kinds.add((bool(got[0].any()), bool(got[1].any())))
    assert kinds == {(False, False), (True, False), (False, True), (True, True)}


def test_cpdag_probabilities_are_weighted_means_of_each_samples_marks():
    rng = np.random.default_rng(2)
    n = 5
    dags = [random_dag(rng, n, 0.5) for _ in range(6)]
    rows = rng.integers(0, 6, size=40)
    parents = np.array([[sum(1 << u for u, w in dags[i] if w == v) for v in range(n)] for i in rows],
                       dtype=np.int64)
    w = rng.random(40)
    w /= w.sum()
    comp, rev = cpdag_probabilities(parents, w)
    want_c, want_r = np.zeros((n, n)), np.zeros((n, n))
    for i, wt in zip(rows, w):
        c, r = naive.cpdag_by_enumeration(dags[i], n)
        want_c += wt * c
        want_r += wt * r
    assert np.allclose(comp, want_c, atol=1e-14) and np.allclose(rev, want_r, atol=1e-14)
    assert 0 < comp.max() < 1 and 0 < rev.max() < 1


def test_averaged_carries_cpdag_marks_from_samples(asia, tmp_path):
    res, wd = asia
    from bigbn.outputs.samples import write_outputs

    s = bigbn.sample(wd, samples=3000, seed=3)
    write_outputs(s, wd)
    opened = bigbn.open(wd)
    g = opened.averaged(0.5)
    comp, rev = cpdag_probabilities(s.parents, s.weights)
    i = res.names.index
    for u, v, a in g.edges(data=True):
        assert a["p_compelled"] == comp[i(u), i(v)] and a["p_reversible"] == rev[i(u), i(v)]
        # the marks split the adjacency: p(u→v compelled) + p(v→u compelled) + p(u—v) = strength (sampled)
        sampled = s.edge_probabilities()
        adj = sampled[i(u), i(v)] + sampled[i(v), i(u)]
        assert comp[i(u), i(v)] + comp[i(v), i(u)] + rev[i(u), i(v)] == pytest.approx(adj, abs=1e-12)
    # asia's either → xray follows the v-structure tub → either ← lung (Meek's R1): compelled
    # in most samples (0.87 with this seed)
    assert g.edges["either", "xray"]["p_compelled"] > 0.8
    # smoke - bronc is reversible in most: its direction is not identified
    assert g.edges["smoke", "bronc"]["p_reversible"] > 0.5
