"""Mixed data from CG networks (bigbn/tools/cg.py, `bigbn simulate --continuous`): the draws
follow the network's tables and regressions, and the cg score recovers the network as the
rows grow."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
from bigbn.cli.main import main
from bigbn.tools.cg import CGNetwork, random_cg_network, sample_cg, write_cg_data


def network() -> CGNetwork:
    """D1 → D2, D1 → X1, X1 → X2, D2 → X2, X2 → X3 (D binary, X continuous)."""
    names = ("D1", "D2", "X1", "X2", "X3")
    kinds = ("discrete", "discrete", "continuous", "continuous", "continuous")
    parents = [[], [0], [0], [1, 2], [3]]
    tables = {0: np.array([[0.5, 0.5]]), 1: np.array([[0.8, 0.2], [0.25, 0.75]])}
    params = {2: (np.array([-0.8, 0.8]), np.zeros((2, 0)), np.array([0.7, 0.7])),
              3: (np.array([0.0, 0.6]), np.array([[0.6], [0.6]]), np.array([0.8, 0.8])),
              4: (np.array([0.0]), np.array([[0.5]]), np.array([0.9]))}
    return CGNetwork(names, kinds, np.array([2, 2, 0, 0, 0]), parents, [0, 1, 2, 3, 4], tables, params)


def test_draws_follow_the_tables_and_regressions():
    net = network()
    data = sample_cg(net, 40_000, np.random.default_rng(0))
    d1, d2, x1, x2 = data[:, 0], data[:, 1], data[:, 2], data[:, 3]
    for a in (0, 1):
        assert np.mean(d2[d1 == a] == 1) == pytest.approx(net.tables[1][a, 1], abs=0.015)
        assert np.mean(x1[d1 == a]) == pytest.approx(net.params[2][0][a], abs=0.02)
        rows = d2 == a
        X = np.column_stack([np.ones(rows.sum()), x1[rows]])
        coef, res, *_ = np.linalg.lstsq(X, x2[rows], rcond=None)
        assert coef == pytest.approx([net.params[3][0][a], 0.6], abs=0.03)
        assert np.sqrt(res[0] / rows.sum()) == pytest.approx(0.8, abs=0.02)


def _adjacency(res):
    return res.posterior + res.posterior.T


def test_the_true_edges_rise_to_one_as_rows_grow(tmp_path):
    net = network()
    rng = np.random.default_rng(1)
    data = sample_cg(net, 4000, rng)  # nested: the first m rows of one draw
    true = np.zeros((5, 5), dtype=bool)
    for p, c in net.arcs():
        true[p, c] = true[c, p] = True
    off = ~np.eye(5, dtype=bool)
    seen = {}
    for m in (25, 4000):
        f = tmp_path / f"m{m}.csv"
        with open(f, "w", newline="") as fh:
            write_cg_data(net, data[:m], fh)
        res = bigbn.learn(f, max_parents=2)
        assert res.summary["options"]["score"] == "cg"
        adj = _adjacency(res)
        seen[m] = (adj[true].min(), adj[~true & off].max())
        # an arc continuous → discrete never has mass
        assert res.posterior[2:, :2].max() == 0
    small, large = seen[25], seen[4000]
    assert small[0] < 0.9  # undecided at few rows: some true edge is far from 1
    assert large[0] > 0.99 and large[1] < 0.05


def test_random_cg_network_respects_the_model():
    net = random_cg_network(30, 12, 3, 3, np.random.default_rng(2))
    assert sum(k == "continuous" for k in net.kinds) == 12
    pos = {v: j for j, v in enumerate(net.order)}
    for c in range(net.n):
        assert len(net.parents[c]) <= 3
        for p in net.parents[c]:
            assert pos[p] < pos[c]
            assert not (net.kinds[c] == "discrete" and net.kinds[p] == "continuous")
    data = sample_cg(net, 5000, np.random.default_rng(3))
    cont = [j for j, k in enumerate(net.kinds) if k == "continuous"]
    assert np.all(np.abs(np.std(data[:, cont], axis=0) - 1) < 0.6)  # scaled to about unit variance


def test_cli_simulate_continuous(tmp_path):
    out = tmp_path / "mixed.csv"
    r = CliRunner().invoke(main, ["simulate", "--n", "6", "--continuous", "3", "-k", "2", "--rows", "200",
                                  "--seed", "4", str(out)])
    assert r.exit_code == 0, r.output
    assert "200 rows x 6 variables, 3 continuous" in r.output
    res = bigbn.learn(out, max_parents=2)
    kinds = res.summary["column_kinds"]
    assert sorted(kinds.values()) == ["continuous"] * 3 + ["discrete"] * 3
    truth = (tmp_path / "mixed.truth.csv").read_text().splitlines()
    assert truth[0] == "parent,child"
    for line in truth[1:]:
        p, c = line.split(",")
        assert not (kinds[c] == "discrete" and kinds[p] == "continuous")
    r = CliRunner().invoke(main, ["simulate", "--network", "asia", "--continuous", "2", "--rows", "10",
                                  str(tmp_path / "x.csv")])
    assert r.exit_code == 1 and "--continuous draws from a random CG network" in r.stderr


def test_tables_or_rows_beyond_memory_are_refused_before_drawing():
    """-k 25 --states 10 overflowed the configurations' count in int64 (a wait without end),
    30 states and 11 parents were a MemoryError traceback, as 10^11 rows."""
    from bigbn.errors import OptionError

    for n, c, k, r in ((30, 10, 25, 10), (12, 2, 11, 30)):
        with pytest.raises(OptionError, match="tables of a random CG network .* need .* of memory"):
            random_cg_network(n, c, k, r, np.random.default_rng(1))
    net = random_cg_network(3, 1, 2, 2, np.random.default_rng(1))
    with pytest.raises(OptionError, match="99999999999 rows of 3 variables need about"):
        sample_cg(net, 99_999_999_999, np.random.default_rng(1))
