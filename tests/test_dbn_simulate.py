"""Series drawn from a dynamic network (bigbn/tools/series.py, `bigbn simulate --lag`), and
recovery: with more series the true edges of a 2-TBN go to posterior 1."""

from __future__ import annotations

import numpy as np
import pytest

import bigbn
from bigbn.errors import DataError, OptionError
from bigbn.io.bif import Network
from bigbn.tools.series import random_dbn, read_dbn, sample_series, write_dbn, write_series

pd = pytest.importorskip("pandas")

ST = ("0", "1")


def _net():
    """A[t-1] → A, A[t-1] → B, B → C (within slice t), C[t-1] → C; strong tables."""
    names = ("A", "B", "C", "A[t-1]", "B[t-1]", "C[t-1]")
    parents = ((3,), (3,), (1, 5), (), (), ())
    cpts = (np.array([[0.85, 0.15], [0.2, 0.8]]), np.array([[0.8, 0.2], [0.15, 0.85]]),
            np.array([[[0.9, 0.1], [0.6, 0.4]], [[0.3, 0.7], [0.05, 0.95]]]),
            np.array([0.5, 0.5]), np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    return Network(names, (ST,) * 6, parents, cpts)


def test_series_follow_the_tables():
    """Transition frequencies of drawn series match the tables (within 5 standard errors)."""
    net = _net()
    codes = sample_series(net, 400, 30, np.random.default_rng(1))
    a_prev, a, b, c, c_prev = codes[:, :-1, 0], codes[:, 1:, 0], codes[:, 1:, 1], codes[:, 1:, 2], codes[:, :-1, 2]
    for mask, x, p in ((a_prev == 1, a, 0.8), (a_prev == 0, a, 0.15), (a_prev == 1, b, 0.85),
                       ((b == 1) & (c_prev == 0), c, 0.7), ((b == 0) & (c_prev == 1), c, 0.4)):
        got = x[mask].mean()
        assert abs(got - p) < 5 * np.sqrt(p * (1 - p) / mask.sum()), (p, got)


def test_more_series_recover_the_true_edges(tmp_path):
    net = _net()
    truth = {("A[t-1]", "A"), ("A[t-1]", "B"), ("B", "C"), ("C[t-1]", "C")}
    rng = np.random.default_rng(5)

    def posteriors(series, length):
        path = tmp_path / f"s{series}.csv"
        write_series(net, sample_series(net, series, length, rng), path)
        res = bigbn.learn(str(path), lag=1, series="series", time_column="t", max_parents=2)
        return {(u, v): p for u, v, p in res.edges()}

    few = posteriors(3, 6)
    assert any(0.05 < few[e] < 0.95 for e in truth)  # small m: not yet 0 or 1
    many = posteriors(200, 25)
    assert all(many[e] > 0.99 for e in truth), {e: many[e] for e in truth}
    assert all(p < 0.02 for e, p in many.items() if e not in truth)


def test_dbn_bif_round_trip_and_refusals(tmp_path):
    net = random_dbn(4, 2, 2, 3, np.random.default_rng(0))
    write_dbn(net, tmp_path / "n.bif")
    back = read_dbn(tmp_path / "n.bif")
    assert back.names == net.names and back.parents == net.parents
    for x, y in zip(back.cpts, net.cpts):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    bad = Network(("A", "B", "A[t-1]", "B[t-1]"), (ST,) * 4, ((2,), (), (1,), ()),
                  (np.full((2, 2), 0.5), np.full(2, 0.5), np.full((2, 2), 0.5), np.full(2, 0.5)))
    with pytest.raises(DataError, match="lagged copy 'A\\[t-1\\]' has parents"):
        sample_series(bad, 2, 5, np.random.default_rng(0))


def test_cli_simulate_then_run(tmp_path):
    from click.testing import CliRunner
    from bigbn.cli.main import main

    out = tmp_path / "s.csv"
    r = CliRunner().invoke(main, ["simulate", "--lag", "2", "--n", "3", "-k", "2", "--series", "4",
                                  "--rows", "12", "--seed", "2", str(out)])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out)
    assert list(df.columns) == ["series", "t", "X1", "X2", "X3"] and len(df) == 48
    truth = pd.read_csv(tmp_path / "s.truth.csv")
    assert set(truth.child) <= {"X1", "X2", "X3"}
    r = CliRunner().invoke(main, ["run", str(out), "--lag", "2", "--series-column", "series", "--time-column",
                                  "t", "-k", "2", "-w", str(tmp_path / "w"), "-q"])
    assert r.exit_code == 0, r.output
    assert len(pd.read_csv(tmp_path / "w" / "edges.csv")) == 3 * 2 * 3 + 3 * 2


def test_simulate_refuses_a_shape_before_drawing_a_network(tmp_path, monkeypatch):
    """Series shorter than the lag are refused before the random network is drawn (a lag of
    10^6 made 3·10^6 nodes and ran for minutes); series, rows and tables beyond memory are
    one line, not numpy's traceback; nothing is written."""
    from click.testing import CliRunner
    from bigbn.cli.main import main
    import bigbn.tools.series as series_

    drawn = []
    real = series_.random_dbn
    monkeypatch.setattr(series_, "random_dbn", lambda *a, **kw: drawn.append(a) or real(*a, **kw))
    out = tmp_path / "s.csv"
    for args, message, draws in (
            (["--lag", "3", "--rows", "2"], "1 series of 2 rows: give at least one series of at least lag + 1 = 4", 0),
            (["--lag", "1", "--series", "100000000", "--rows", "100000"],
             "100000000 series of 100000 rows of 3 variables need", 0),
            (["--lag", "1", "--rows", "5", "--states", "1000000", "-k", "3"],
             "the tables of a random DBN with 1000000 states", 1)):
        r = CliRunner().invoke(main, ["simulate", "--n", "3", *args, str(out)])
        assert r.exit_code == 1 and message in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1 and not out.exists()
        assert len(drawn) == draws  # the tables' size is known only once a structure is drawn
        drawn.clear()


def test_a_random_dbn_has_at_most_as_many_nodes_as_a_random_network():
    """Its lagged copies are nodes too: n·(L + 1) ≤ 10000, as --n of a static network."""
    with pytest.raises(OptionError, match=r"^a random DBN of 2 variables with lag 5000 has 10002 nodes, more "
                                          r"than 10000; give a smaller --n or --lag$"):
        random_dbn(2, 5000, 1, 2, np.random.default_rng(0))
    assert len(random_dbn(2, 4999, 1, 2, np.random.default_rng(0)).names) == 10000


def test_a_static_network_given_as_a_dynamic_one_names_the_file():
    """`bigbn simulate --network asia --lag 1` said "network: no lagged copies ..." and not
    which network."""
    with pytest.raises(DataError, match=r"asia: no lagged copies NAME\[t-1\]"):
        read_dbn("asia")


@pytest.mark.parametrize("name", ["t", "series"])
def test_a_variable_named_like_the_series_files_own_columns_is_refused(tmp_path, name):
    """A variable named t or series gave a file with two columns of that name, which
    `bigbn run` refuses (duplicate column name); now nothing is written."""
    net = _net()
    net = Network((name,) + net.names[1:3] + (f"{name}[t-1]",) + net.names[4:], net.states, net.parents, net.cpts)
    codes = sample_series(net, 2, 5, np.random.default_rng(0))
    path = tmp_path / "s.csv"
    with pytest.raises(DataError, match=f"a variable is named '{name}', a column the series file .* has already"):
        write_series(net, codes, path)
    assert not path.exists()


def test_the_first_rows_of_a_series_follow_their_lagged_copies_tables():
    """Row L − l of a series is drawn from NAME[t-l]'s table (the first transition row's
    lag-l value); every one of the first L rows came from the lag-1 copy's table, and the
    tables of the copies at lags 2..L, written to --save-network, were never used."""
    names = ("A", "B", "A[t-1]", "B[t-1]", "A[t-2]", "B[t-2]", "A[t-3]", "B[t-3]")
    one, zero, half = np.array([0.0, 1.0]), np.array([1.0, 0.0]), np.full((2, 2), 0.5)
    net = Network(names, (ST,) * 8, ((2,), (5,), (), (), (), (), (), ()),
                  (half, half, one, zero, zero, one, one, one))
    codes = sample_series(net, 50, 6, np.random.default_rng(0))
    assert np.all(codes[:, 2] == [1, 0]) and np.all(codes[:, 1] == [0, 1]) and np.all(codes[:, 0] == [1, 1])
