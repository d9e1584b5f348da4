"""Random networks of the paper's section 5.2 and forward sampling, against exact references."""

from __future__ import annotations

import csv
import itertools

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from bigbn.io.bif import Network, read_bif
from bigbn.cli.tools import simulate
from bigbn.errors import DataError, OptionError
from bigbn.tools.simulate import (random_network, random_structure, read_truth, sample, truth_path,
                            write_truth)
import helpers as h


def exact_joint(net: Network) -> dict[tuple, float]:
    """Slow reference: p(x) = prod_i p(x_i | x_parents) for every joint state x."""
    out = {}
    for x in itertools.product(*(range(len(s)) for s in net.states)):
        p = 1.0
        for i in range(net.n):
            p *= net.cpts[i][tuple(x[q] for q in net.parents[i]) + (x[i],)]
        out[x] = p
    return out


def test_structure_respects_order_and_indegree():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, k = int(rng.integers(1, 12)), int(rng.integers(0, 5))
        order, parents = random_structure(n, k, rng)
        assert sorted(order.tolist()) == list(range(n))
        pos = {int(v): j for j, v in enumerate(order)}
        for i in range(n):
            assert len(parents[i]) <= min(k, pos[i])
            assert list(parents[i]) == sorted(set(parents[i]))
            assert all(pos[p] < pos[i] for p in parents[i])  # consistent with the order


def test_parent_counts_and_choices_are_uniform():
    rng = np.random.default_rng(1)
    n, k, draws = 6, 3, 4000
    last_counts = np.zeros(k + 1)
    second_counts = np.zeros(2)
    chosen_position = np.zeros(n - 1)  # of the single parent of the last node
    first_nodes = np.zeros(n)
    for _ in range(draws):
        order, parents = random_structure(n, k, rng)
        pos = {int(v): j for j, v in enumerate(order)}
        last, second = int(order[-1]), int(order[1])
        last_counts[len(parents[last])] += 1
        second_counts[len(parents[second])] += 1
        if len(parents[last]) == 1:
            chosen_position[pos[parents[last][0]]] += 1
        first_nodes[order[0]] += 1
    # last node: U{0..k}; second node: min(U{0..k}, 1); single parent: uniform position
    assert stats.chisquare(last_counts).pvalue > 1e-4
    assert stats.chisquare(second_counts, draws * np.array([1, k]) / (k + 1)).pvalue > 1e-4
    assert stats.chisquare(chosen_position).pvalue > 1e-4
    assert stats.chisquare(first_nodes).pvalue > 1e-4  # the order is uniform


def test_dirichlet_rows():
    rng = np.random.default_rng(2)
    firsts = []
    for _ in range(300):
        net = random_network(4, 2, 2, rng)
        for cpt in net.cpts:
            np.testing.assert_allclose(cpt.sum(axis=-1), 1.0, atol=1e-12)
            firsts.extend(cpt[..., 0].ravel())
    # Dirichlet(1, 1): the first coordinate is Uniform(0, 1)
    assert stats.kstest(firsts, "uniform").pvalue > 1e-4
    net = random_network(5, 3, 4, rng)
    assert net.names == ("X1", "X2", "X3", "X4", "X5")
    assert all(s == ("0", "1", "2", "3") for s in net.states)
    assert max(len(p) for p in net.parents) <= 3


def test_sampled_joint_matches_exact_joint():
    net = random_network(3, 2, 2, np.random.default_rng(3))
    m = 200_000
    data = sample(net, m, np.random.default_rng(4))
    assert data.shape == (m, 3) and data.dtype == np.int64
    joint = exact_joint(net)
    assert abs(sum(joint.values()) - 1) < 1e-12
    codes = data @ np.array([4, 2, 1])
    freq = np.bincount(codes, minlength=8) / m
    for x, p in joint.items():
        f = freq[x[0] * 4 + x[1] * 2 + x[2]]
        assert abs(f - p) <= 5 * np.sqrt(p * (1 - p) / m) + 1e-9, (x, f, p)


def test_asia_sample_reproduces_cpts():
    net = read_bif("asia")
    m = 200_000
    data = sample(net, m, np.random.default_rng(5))
    checked = 0
    for i in range(net.n):
        ps = net.parents[i]
        for cfg in itertools.product(*(range(len(net.states[p])) for p in ps)):
            rows = np.all(data[:, list(ps)] == np.array(cfg, dtype=np.int64), axis=1) if ps \
                else np.ones(m, dtype=bool)
            count = int(rows.sum())
            if count < 1000:
                continue
            freq = np.bincount(data[rows, i], minlength=2) / count
            p = net.cpts[i][cfg]
            tol = 5 * np.sqrt(p * (1 - p) / count)
            assert np.all(np.abs(freq - p) <= tol + 1e-12), (net.names[i], cfg, freq, p)
            checked += 1
    assert checked >= 15
    # 'either' is a deterministic OR: zero-probability states are never drawn
    e, lung, tub = (net.names.index(v) for v in ("either", "lung", "tub"))
    yes = 0
    assert np.array_equal(data[:, e] == yes, (data[:, lung] == yes) | (data[:, tub] == yes))


def test_sample_is_prefix_stable_and_seeded():
    net = read_bif("child")
    big = sample(net, 1000, np.random.default_rng(6))
    small = sample(net, 100, np.random.default_rng(6))
    assert np.array_equal(big[:100], small)
    assert not np.array_equal(sample(net, 100, np.random.default_rng(7)), small)
    card = net.cardinalities
    assert np.all((big >= 0) & (big < card))
    assert sample(net, 0, np.random.default_rng(0)).shape == (0, net.n)


def test_invalid_generator_options():
    rng = np.random.default_rng(0)
    with pytest.raises(OptionError):
        random_network(0, 2, 2, rng)
    with pytest.raises(OptionError):
        random_network(4, -1, 2, rng)
    with pytest.raises(OptionError):
        random_network(4, 2, 1, rng)
    with pytest.raises(OptionError):
        sample(read_bif("asia"), -1, rng)


def test_truth_round_trip_and_errors(tmp_path):
    net = read_bif("sachs")
    path = tmp_path / "t.csv"
    write_truth(net, path)
    assert np.array_equal(read_truth(path, net.names), net.adjacency())
    assert truth_path("dir/data.csv").name == "data.truth.csv"
    bad = tmp_path / "bad.csv"
    bad.write_text("parent,child\nAkt,Erk\nAkt,Nope\n")
    with pytest.raises(DataError, match=r"line 3, column 2: unknown node 'Nope'"):
        read_truth(bad, net.names)
    bad.write_text("parent,child\nAkt,Erk\nAkt,Erk\n")
    with pytest.raises(DataError, match=r"line 3: .*listed twice"):
        read_truth(bad, net.names)
    bad.write_text("from,to\n")
    with pytest.raises(DataError, match="line 1"):
        read_truth(bad, net.names)


def test_cli_random_network(tmp_path):
    out = tmp_path / "d.csv"
    res = CliRunner().invoke(simulate, ["--n", "7", "-k", "2", "--states", "3", "--rows", "300",
                                        "--seed", "11", "--save-network", str(tmp_path / "n.bif"),
                                        str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(open(out)))
    assert rows[0] == [f"X{i}" for i in range(1, 8)]
    vals = np.array(rows[1:], dtype=int)
    assert vals.shape == (300, 7) and vals.min() >= 0 and vals.max() <= 2
    net = read_bif(tmp_path / "n.bif")
    assert np.array_equal(read_truth(tmp_path / "d.truth.csv", net.names), net.adjacency())
    # the CLI is random_network then sample from one generator seeded with --seed
    rng = np.random.default_rng(11)
    ref = random_network(7, 2, 3, rng)
    assert ref.parents == net.parents
    assert np.array_equal(vals, sample(ref, 300, rng))
    # same seed, same files
    res2 = CliRunner().invoke(simulate, ["--n", "7", "-k", "2", "--states", "3", "--rows", "300",
                                         "--seed", "11", str(tmp_path / "e.csv")])
    assert res2.exit_code == 0
    assert (tmp_path / "e.csv").read_text() == out.read_text()


def test_cli_bundled_network(tmp_path):
    out = tmp_path / "asia.csv"
    res = CliRunner().invoke(simulate, ["--network", "asia", "--rows", "50", "--seed", "1", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(open(out)))
    net = read_bif("asia")
    assert tuple(rows[0]) == net.names and len(rows) == 51
    assert all(set(r) <= {"yes", "no"} for r in rows[1:])
    truth = list(csv.reader(open(tmp_path / "asia.truth.csv")))
    assert truth[0] == ["parent", "child"]
    assert {tuple(r) for r in truth[1:]} == {(net.names[p], net.names[c]) for p, c in net.arcs()}


@pytest.mark.parametrize("args, message", [
    (["--rows", "5"], "give --n"),
    (["--network", "asia", "--n", "5", "--rows", "5"], "cannot be combined"),
    # was ignored, silently: no tiers file, a network of another shape
    (["--network", "asia", "--tier-sizes", "4,4", "--rows", "5"], "--tier-sizes cannot be combined with --network"),
    (["--network", "nonesuch", "--rows", "5"], "not a bundled network"),
    (["--n", "4", "--states", "1", "--rows", "5"], "states must be >= 2"),
])
def test_cli_errors_are_bigbn_errors(tmp_path, args, message):
    res = CliRunner().invoke(simulate, args + [str(tmp_path / "x.csv")])
    assert res.exit_code != 0
    assert isinstance(res.exception, (OptionError, DataError))
    assert message in str(res.exception)


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

def test_simulate_max_parents_and_its_old_spelling(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert h.cli("simulate", "--n", 6, "--max-parents", 1, "--rows", 50, "--seed", 4, a).exit_code == 0
    assert h.cli("simulate", "--n", 6, "--k", 1, "--rows", 50, "--seed", 4, b).exit_code == 0
    assert a.read_text() == b.read_text()
    children = [line.split(",")[1] for line in (tmp_path / "a.truth.csv").read_text().splitlines()[1:]]
    assert children and all(children.count(c) == 1 for c in children), "at most 1 parent each"
    res = h.cli("simulate", "--n", 6, "-k", 1, "--k", 2, "--rows", 5, tmp_path / "c.csv")
    assert res.exit_code == 1 and "old spelling" in res.output
    helptext = h.cli("simulate", "--help").output
    assert "--max-parents" in helptext and "--k " not in helptext


# ------------------------------------------------------------ issue #37: hostile inputs, round 4

def test_cli_refuses_to_replace_existing_files_without_force(tmp_path):
    """`bigbn simulate ... data/precious.csv` replaced an existing file without a word."""
    precious = tmp_path / "precious.csv"
    precious.write_text("keep me\n")
    res = h.cli("simulate", "--n", 5, "--rows", 10, precious)
    assert res.exit_code == 1
    assert res.output == f"Error: {precious} already exists; give --force to replace it\n"
    assert precious.read_text() == "keep me\n" and not truth_path(precious).exists()
    # a file beside it that simulate would write (truth, tiers, --save-network): also refused,
    # before anything is written
    for extra, args in ((tmp_path / "a.truth.csv", []), (tmp_path / "a.tiers.csv", ["--tier-sizes", "2,3"]),
                        (tmp_path / "a.bif", ["--save-network", tmp_path / "a.bif"])):
        extra.write_text("keep me too\n")
        res = h.cli("simulate", "--n", 5, "--rows", 10, *args, tmp_path / "a.csv")
        assert res.exit_code == 1 and f"{extra} already exists; give --force" in res.output, res.output
        assert extra.read_text() == "keep me too\n" and not (tmp_path / "a.csv").exists()
        extra.unlink()
    assert "--force" in h.cli("simulate", "--help").output
    # --force replaces them
    res = h.cli("simulate", "--n", 5, "--rows", 10, "--force", precious)
    assert res.exit_code == 0, res.output
    assert precious.read_text().startswith("X1,X2,X3,X4,X5\n") and truth_path(precious).exists()
    # the library functions make the same choice
    net = random_network(3, 1, 2, np.random.default_rng(0))
    with pytest.raises(OptionError, match="already exists"):
        write_truth(net, truth_path(precious))
    write_truth(net, truth_path(precious), overwrite=True)
    assert read_truth(truth_path(precious), net.names).sum() == len(net.arcs())


@pytest.mark.parametrize("args, message", [
    (["--n", "3", "--rows", "0"], "--rows must be at least 1, got 0"),
    (["--n", "3", "--rows", "-5"], "--rows must be at least 1, got -5"),
    (["--network", "asia", "--rows", "0"], "--rows must be at least 1, got 0"),
    (["--n", "0", "--rows", "5"], "--n must be between 1 and 10000, got 0"),
    (["--n", "2000000000", "--rows", "1"], "--n must be between 1 and 10000, got 2000000000"),
    (["--tier-sizes", "9000,9000", "--rows", "1"], "--tier-sizes 9000,9000: 18000 nodes in all, more than 10000"),
])
def test_cli_rows_and_nodes_out_of_range_are_one_line_errors(tmp_path, args, message):
    """--rows 0 wrote a header-only file; --n 2000000000 ran for hours (the structure's time
    is quadratic in n)."""
    out = tmp_path / "x.csv"
    res = h.cli("simulate", *args, out)
    assert res.exit_code == 1 and res.output == f"Error: {message}\n"
    assert not out.exists()


def test_a_max_parents_beyond_int64_draws_every_predecessor():
    """numpy draws integers below 2^63 only: -k 10^20 (bigbn simulate, bigbn study) was
    its "high is out of bounds for int64" traceback. Such a k gives every node all its
    predecessors, as in the random DBN and CG networks; a k within int64 draws as before."""
    from bigbn.tools.cg import random_cg_network
    from bigbn.tools.series import random_dbn

    order, parents = random_structure(6, 10**20, np.random.default_rng(1))
    assert [len(parents[i]) for i in order] == list(range(6))
    net = random_dbn(3, 1, 10**20, 2, np.random.default_rng(1), True)
    assert sorted(len(net.parents[i]) for i in range(3)) == [3, 4, 5]
    cg = random_cg_network(4, 2, 10**20, 2, np.random.default_rng(1))
    assert sum(map(len, cg.parents)) > 0
    a = random_structure(8, 3, np.random.default_rng(7))[1]
    rng = np.random.default_rng(7)  # the draws spelled out: rng.integers(0, k + 1) per node
    order = rng.permutation(8)
    for pos, i in enumerate(order.tolist()):
        n_i = min(int(rng.integers(0, 4)), pos)
        chosen = rng.choice(order[:pos], size=n_i, replace=False) if n_i else []
        assert a[i] == tuple(sorted(int(p) for p in chosen))


@pytest.mark.parametrize("extra", [["--lag", "1"], []])
def test_cli_save_network_in_a_missing_folder_writes_nothing(tmp_path, extra):
    """--save-network in a folder that does not exist failed after OUT and its truth were
    written; every output's folder is checked before anything is drawn."""
    out = tmp_path / "d.csv"
    res = CliRunner().invoke(simulate, ["--n", "3", "--rows", "5", *extra, "--save-network",
                                        str(tmp_path / "no" / "n.bif"), str(out)])
    assert isinstance(res.exception, OptionError) and "does not exist" in str(res.exception)
    res = CliRunner().invoke(simulate, ["--n", "3", "--rows", "5", *extra, str(tmp_path / "no" / "d.csv")])
    assert isinstance(res.exception, OptionError) and "does not exist" in str(res.exception)
    assert list(tmp_path.iterdir()) == []


def test_cli_force_over_a_pipe_nothing_reads_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / "d.csv")
    res = CliRunner().invoke(simulate, ["--n", "3", "--rows", "5", "--force", str(tmp_path / "d.csv")])
    assert isinstance(res.exception, OptionError) and "a named pipe that nothing reads" in str(res.exception)


def test_cli_force_never_writes_over_the_network_it_reads(tmp_path):
    """`simulate --network net.bif --force net.bif` replaced the network with the data."""
    from bigbn.io.bif import write_bif

    bif = tmp_path / "net.bif"
    write_bif(read_bif("asia"), bif)
    before = bif.read_text()
    for args in ([str(bif)], [str(tmp_path / "d.csv"), "--save-network", str(bif)]):
        res = CliRunner().invoke(simulate, ["--network", str(bif), "--rows", "5", "--force", *args])
        assert isinstance(res.exception, OptionError) and "is a file this command reads" in str(res.exception)
    assert bif.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["net.bif"]


def test_a_true_network_with_a_cycle_is_read():
    """The bundled Sachs consensus network holds PIP2 -> PIP3 -> Plcg -> PIP2: a published
    truth need not be a DAG, and the undirected-edge ROC needs none."""
    names = ["Raf", "Mek", "Plcg", "PIP2", "PIP3", "Erk", "Akt", "PKA", "PKC", "P38", "Jnk"]
    adj = read_truth(h.ROOT / "examples" / "sachs.truth.csv", names)
    assert adj[names.index("PIP2"), names.index("PIP3")] and adj[names.index("PIP3"), names.index("Plcg")]
