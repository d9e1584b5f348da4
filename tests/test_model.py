"""A finished run reopened (bigbn.open) and its learned network (to_pgmpy, bigbn export).

References: `learn`'s own Result (open must give it number for number); tests/naive.py
counts records in plain loops for each posterior-mean CPT and reads the Gaussian CPDs
from the precision matrix of E[Σ]; a Monte Carlo draw of Σ from its inverse-Wishart
posterior checks that those are posterior means; pgmpy's own BIF / XMLBIF readers and
writers read back what bigbn writes.
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd
import pytest

import bigbn
from bigbn.errors import DataError, OptionError, WorkdirError
from bigbn.io.bif import Network, format_bif, read_bif
from bigbn.outputs.model import run_data
from bigbn.outputs.samples import write_outputs

import naive
from helpers import ASIA, cli


@pytest.fixture(scope="module")
def asia(tmp_path_factory):
    wd = tmp_path_factory.mktemp("asia") / "run"
    return bigbn.learn(ASIA, workdir=wd, map_dag=True), wd


def same_result(a, b):
    assert a.names == b.names
    assert np.array_equal(a.posterior, b.posterior)
    assert a.log_marginal == b.log_marginal
    for v in a.names:
        assert a.parent_sets(v) == b.parent_sets(v)


def test_open_gives_learns_result(asia):
    res, wd = asia
    opened = bigbn.open(wd)
    same_result(opened, res)
    assert opened.map_arcs() == res.map_arcs() and opened.map_log_score == res.map_log_score
    assert opened.summary["data_sha256"] == res.summary["data_sha256"]
    assert opened.workdir == wd.resolve() and opened.samples is None and opened.effects is None
    # what the Result does, it does after opening too
    assert bigbn.sample(opened, samples=200, seed=1).parents.shape == (200, 8)


def test_open_a_run_with_tiers_and_a_map_only_run(tmp_path):
    tiers = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]]
    res = bigbn.learn(ASIA, workdir=tmp_path / "t", tiers=tiers, map_dag=True)
    opened = bigbn.open(tmp_path / "t")
    same_result(opened, res)
    assert opened.map_arcs() == res.map_arcs() and opened.map_log_score == res.map_log_score
    assert set(opened.to_pgmpy().edges()) == set(res.map_arcs())
    assert set(opened.to_pgmpy(dag=0.5).edges()) == set(res.averaged(0.5).edges())
    only = bigbn.learn(ASIA, workdir=tmp_path / "m", map_dag=True, posterior=False)
    opened = bigbn.open(tmp_path / "m")
    assert opened.posterior is None and opened.map_arcs() == only.map_arcs()
    assert opened.map_log_score == only.map_log_score
    assert set(opened.to_pgmpy().edges()) == set(only.map_arcs())
    with pytest.raises(OptionError, match="only the MAP network"):
        opened.strength()


def test_open_says_what_is_missing_and_the_command_that_finishes_it(asia, tmp_path):
    res, wd = asia
    with pytest.raises(WorkdirError, match=r"no such folder.*call learn\(\.\.\., workdir=\.\.\.\) first"):
        bigbn.open(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkdirError, match="no run.json"):
        bigbn.open(tmp_path / "empty")
    (tmp_path / "data.csv").write_text("a,b\n0,1\n")  # was "no such folder"
    with pytest.raises(WorkdirError, match=r"data.csv: no finished run here .*: a file, not a folder\)"):
        bigbn.open(tmp_path / "data.csv")
    with pytest.raises(OptionError, match="work directory"):
        bigbn.open(res)
    # an unfinished run: the journal without its last tasks
    import shutil

    part = tmp_path / "part"
    shutil.copytree(wd, part)
    lines = (part / "journal.jsonl").read_text().splitlines()
    (part / "journal.jsonl").write_text("\n".join(x for x in lines if '"edges"' not in x and '"map_dag"' not in x)
                                        + "\n")
    with pytest.raises(WorkdirError, match="not finished; call learn again with the same arguments"):
        bigbn.open(part)
    done = tmp_path / "done"
    shutil.copytree(wd, done)
    (done / "summary.json").unlink()
    with pytest.raises(WorkdirError, match="summary.json is missing: call learn again with the same arguments"):
        bigbn.open(done)
    r = cli("export", part)
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and "not finished" in r.output


def test_open_brings_the_samples_and_effects_left_in_the_workdir(tmp_path):
    wd = tmp_path / "run"
    bigbn.learn(ASIA, workdir=wd, max_parents=2)
    s = bigbn.sample(wd, samples=500, seed=4)
    write_outputs(s, wd)
    e = bigbn.effects(wd, pairs=[("smoke", "dysp"), ("either", "xray"), ("xray", "either")])
    e.to_csv(wd / "effects.csv")
    opened = bigbn.open(wd)
    got = opened.samples
    assert np.array_equal(got.parents, s.parents) and np.array_equal(got.weights, s.weights)
    assert np.array_equal(got.orders, s.orders) and got.seed == 4 and got.prior == "order-modular"
    assert np.array_equal(got.log_score, s.log_score) and got.log_marginal == s.log_marginal
    assert [d["count"] for d in got.dags(5)] == [d["count"] for d in s.dags(5)]
    assert [d["exact_order_modular"] for d in got.dags(5)] == [d["exact_order_modular"] for d in s.dags(5)]
    assert np.array_equal(got.ancestor_probabilities(), s.ancestor_probabilities())
    ef = opened.effects
    assert ef.kind == "discrete" and ef.pairs == e.pairs
    assert all(np.array_equal(a, b) for a, b in zip(ef.table, e.table))
    assert np.array_equal(ef.p_zero, e.p_zero)
    assert ef.to_pandas().equals(e.to_pandas())
    summary = json.loads((wd / "samples-order-modular" / "summary.json").read_text())
    summary["log_marginal_likelihood"] += 1.0  # as if drawn from an earlier run in this folder
    (wd / "samples-order-modular" / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(WorkdirError, match="samples are of another run.*bigbn sample --workdir"):
        bigbn.open(wd)
    write_outputs(s, wd)
    (wd / "effects.csv").write_text("cause,effect\nfoo,bar\n")
    with pytest.raises(WorkdirError, match="effects.csv is damaged.*bigbn effects --workdir"):
        bigbn.open(wd)
    # cut at a line's end, or a cell edited: a table with a cell of 0 (a row not adding up
    # to 1) was taken as it was
    e.to_csv(wd / "effects.csv")
    lines = (wd / "effects.csv").read_text().splitlines(keepends=True)
    for text in ("".join(lines[:-1]), "".join(lines[:2] + lines[3:]), "".join(lines + lines[-1:]),
                 "".join(lines[:-1]) + lines[-1].replace(",0.", ",0.5", 1)):
        (wd / "effects.csv").write_text(text)
        with pytest.raises(WorkdirError, match="effects.csv is damaged.*bigbn effects --workdir"):
            bigbn.open(wd)


def _truncate_npz(folder):
    f = folder / "samples.npz"
    f.write_bytes(f.read_bytes()[:200])  # as a `bigbn sample` killed while writing it left it


def _edit_npz(folder, **change):
    with np.load(folder / "samples.npz") as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(folder / "samples.npz", **{k: change[k](v) if k in change else v for k, v in arrays.items()})


def _edit_summary(folder, change):
    (folder / "summary.json").write_text(json.dumps(change(json.loads((folder / "summary.json").read_text()))))


@pytest.mark.parametrize("damage", [
    _truncate_npz,
    lambda f: _edit_npz(f, weights=lambda w: w[:-3]),
    lambda f: _edit_npz(f, orders=lambda o: o[:-3]),
    lambda f: _edit_npz(f, parents=lambda p: p.astype(float)),
    lambda f: _edit_npz(f, weights=lambda w: np.where(np.arange(w.size) == 0, np.nan, w)),
    lambda f: _edit_npz(f, parents=lambda p: p | (1 << 40)),
    lambda f: _edit_summary(f, lambda s: [s]),
    lambda f: _edit_summary(f, lambda s: {**s, "seed": "x"}),
    lambda f: _edit_summary(f, lambda s: {**s, "samples": s["samples"] + 1}),
    lambda f: _edit_summary(f, lambda s: {**s, "log_z_dag_modular": "x"}),
    # orders that are no orders, DAGs against their orders (a cycle, a loop), weights or
    # counts that are not the samples': ancestors of a negative order were a segfault, of an
    # order out of range or not a permutation other ancestors without a word
    lambda f: _edit_npz(f, orders=lambda o: o - 100),
    lambda f: _edit_npz(f, orders=lambda o: o + 100),
    lambda f: _edit_npz(f, orders=lambda o: np.zeros_like(o)),
    lambda f: _edit_npz(f, orders=lambda o: o[:, ::-1]),
    lambda f: _edit_npz(f, parents=lambda p: p | (1 << np.arange(p.shape[1]))),
    lambda f: _edit_npz(f, weights=lambda w: 7 * w),
    lambda f: _edit_npz(f, weights=lambda w: np.where(np.arange(w.size) == 0, 2 * w, w * (1 - 2 / w.size) / (1 - 1 / w.size))),
    lambda f: _edit_npz(f, log_linear_extensions=lambda a: a * np.nan),
    lambda f: _edit_npz(f, log_score=lambda a: np.where(np.arange(a.size) == 0, np.inf, a)),
    lambda f: _edit_summary(f, lambda s: {**s, "seed": 10 ** 30}),
    lambda f: _edit_summary(f, lambda s: {**s, "log_z_dag_modular": float("nan")}),
])
def test_open_refuses_damaged_samples_in_one_line(asia, tmp_path, damage):
    """The samples bigbn.open brings (samples.npz, summary.json) are checked for what
    `write_outputs` writes: a damaged file was a traceback (a truncated zip, a list, a seed
    that is no number) or samples of the wrong length taken as they were."""
    import shutil

    _, done = asia
    wd = tmp_path / "run"
    shutil.copytree(done, wd)
    write_outputs(bigbn.sample(wd, samples=40, seed=1), wd)
    damage(wd / "samples-order-modular")
    with pytest.raises(WorkdirError, match=r"samples-order-modular.* is damaged .*bigbn sample --workdir"):
        bigbn.open(wd)


def test_a_samples_write_killed_half_way_leaves_no_summary_of_other_samples(asia, tmp_path, monkeypatch):
    """write_outputs removes samples.npz and summary.json first and writes samples.npz
    last: killed before then, bigbn.open finds the run without samples (and the page the
    new summary with the new CSV files), never pairs samples with the summary (seed,
    counts) of others; the killed process's temporary file is removed by the next write."""
    import os
    import shutil
    import subprocess
    import sys

    _, done = asia
    wd = tmp_path / "run"
    shutil.copytree(done, wd)
    write_outputs(bigbn.sample(wd, samples=40, seed=1), wd)
    second = bigbn.sample(wd, samples=40, seed=2)

    savez = np.savez

    def killed(*args, **kwargs):
        savez(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", killed)  # killed once samples.npz's temporary is written
    with pytest.raises(KeyboardInterrupt):
        write_outputs(second, wd)
    monkeypatch.undo()
    folder = wd / "samples-order-modular"
    assert bigbn.open(wd).samples is None
    assert json.loads((folder / "summary.json").read_text())["seed"] == 2
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    left = folder / f".samples.npz.{gone}.tmp"  # as a killed process left it
    (folder / f".samples.npz.{os.getpid()}.tmp").rename(left)
    write_outputs(second, wd)
    assert bigbn.open(wd).samples.seed == 2 and not left.exists()
    assert sorted(f.name for f in folder.iterdir() if f.name.startswith(".")) == []


# ------------------------------------------------------------------ discrete networks

def pgmpy_tables(model) -> dict:
    """{node: (evidence names, state names of node and evidence, values (r, q))}."""
    out = {}
    for cpd in model.get_cpds():
        v = cpd.variable
        out[v] = (tuple(cpd.variables[1:]), {k: list(map(str, s)) for k, s in cpd.state_names.items()},
                  np.asarray(cpd.get_values(), dtype=np.float64))
    return out


@pytest.mark.parametrize("score,ess", [("bdeu", 1.0), ("bdeu", 10.0), ("k2", None)])
def test_to_pgmpy_cpts_are_posterior_means_counted_by_hand(tmp_path, score, ess):
    wd = tmp_path / "run"
    res = bigbn.learn(ASIA, workdir=wd, score=score, ess=ess, map_dag=True)
    model = res.to_pgmpy()
    ds, _ = run_data(res)
    tables = pgmpy_tables(model)
    assert set(model.edges()) == set(res.map_arcs())
    nontrivial = 0
    for v, name in enumerate(res.names):
        parents = sorted(res.names.index(p) for p, c in res.map_arcs() if c == name)
        want = naive.posterior_mean_cpt(ds.data, ds.arities, v, parents, score, ess or 1.0)
        evidence, states, values = tables[name]
        assert evidence == tuple(res.names[p] for p in parents)
        assert states[name] == list(ds.levels[v])
        assert np.allclose(values, want.reshape(-1, want.shape[-1]).T, rtol=0, atol=1e-15)
        nontrivial += int(np.any((want > 0.01) & (want < 0.99)))
    assert nontrivial >= 6


def test_bif_written_by_export_reads_back_in_pgmpy_with_the_same_cpds(asia, tmp_path):
    from pgmpy.readwrite import BIFReader, XMLBIFReader

    res, wd = asia
    mine = pgmpy_tables(res.to_pgmpy())
    r = cli("export", wd, "--format", "bif")
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and (wd / "network.bif").is_file()
    back = pgmpy_tables(BIFReader(str(wd / "network.bif")).get_model())
    r = cli("export", wd, "--format", "xmlbif", "--out", tmp_path / "asia.xml")
    assert r.exit_code == 0, r.output
    xml = pgmpy_tables(XMLBIFReader(str(tmp_path / "asia.xml")).get_model())
    for got in (back, xml):
        assert got.keys() == mine.keys()
        for v in mine:
            assert got[v][0] == mine[v][0] and got[v][1] == mine[v][1]
            assert np.array_equal(got[v][2], mine[v][2])  # floats written exactly
    # and bigbn's own reader
    net = read_bif(wd / "network.bif")
    assert net.names == res.names and len(net.arcs()) == len(res.map_arcs())


def test_to_pgmpy_round_trips_through_pgmpys_bif_writer_and_reader(asia, tmp_path):
    from pgmpy.readwrite import BIFReader, BIFWriter

    res = bigbn.open(asia[1])
    for dag in ("map", 0.5, [("smoke", "lung"), ("lung", "either"), ("tub", "either")]):
        model = res.to_pgmpy(dag=dag)
        path = tmp_path / "net.bif"
        BIFWriter(model).write(str(path))
        back = pgmpy_tables(BIFReader(str(path)).get_model())
        mine = pgmpy_tables(model)
        assert back.keys() == mine.keys() == set(res.names)
        for v in mine:
            assert back[v][:2] == mine[v][:2]
            assert np.allclose(back[v][2], mine[v][2], rtol=0, atol=1e-12)


def test_the_dag_of_to_pgmpy(asia):
    res, _ = asia
    assert set(res.to_pgmpy(dag=0.4).edges()) == set(res.averaged(0.4).edges())
    with pytest.raises(OptionError, match="directed cycle"):
        res.to_pgmpy(dag=[("smoke", "lung"), ("lung", "smoke")])
    with pytest.raises(OptionError, match="no variable named 'nope'"):
        res.to_pgmpy(dag=[("smoke", "nope")])
    with pytest.raises(OptionError, match="map"):
        res.to_pgmpy(dag="best")
    no_map = bigbn.learn(ASIA)
    with pytest.raises(OptionError, match="no MAP network.*--map.*dag=0.5"):
        no_map.to_pgmpy()
    with pytest.raises(OptionError, match="give the data"):  # a run in a temporary folder
        no_map.to_pgmpy(dag=0.5)
    assert set(no_map.to_pgmpy(dag=0.5, data=ASIA).edges()) == set(no_map.averaged(0.5).edges())
    df = pd.read_csv(ASIA)
    with pytest.raises(OptionError, match="not the data of this run"):
        no_map.to_pgmpy(dag=0.5, data=df.iloc[:1000])


def test_to_pgmpy_without_pgmpy_says_so(asia, monkeypatch):
    res, _ = asia
    monkeypatch.setitem(sys.modules, "pgmpy", None)
    with pytest.raises(OptionError, match="to_pgmpy\\(\\) needs pgmpy: pip install pgmpy"):
        res.to_pgmpy()


def test_interventional_cpds_come_from_the_rows_where_the_node_was_not_set(tmp_path):
    rng = np.random.default_rng(3)
    m = 600
    a = rng.integers(0, 2, m)
    b = np.where(rng.random(m) < 0.8, a, 1 - a)
    c = np.where(rng.random(m) < 0.7, b, 1 - b)
    target = np.where(np.arange(m) < 200, "b", "")
    b[:200] = rng.integers(0, 2, 200)
    df = pd.DataFrame({"a": a.astype(str), "b": b.astype(str), "c": c.astype(str), "do": target})
    path = tmp_path / "iv.csv"
    df.to_csv(path, index=False)
    res = bigbn.learn(path, intervention_column="do", workdir=tmp_path / "wd", map_dag=True)
    model = res.to_pgmpy(dag=[("a", "b"), ("b", "c")])
    ds, _ = run_data(res)
    keep = ~ds.intervened[:, 1]
    want_b = naive.posterior_mean_cpt(ds.data[keep], ds.arities, 1, [0], "bdeu", 1.0)
    want_c = naive.posterior_mean_cpt(ds.data, ds.arities, 2, [1], "bdeu", 1.0)
    tables = pgmpy_tables(model)
    assert np.allclose(tables["b"][2], want_b.T, atol=1e-15) and np.allclose(tables["c"][2], want_c.T, atol=1e-15)
    every_row = naive.posterior_mean_cpt(ds.data, ds.arities, 1, [0], "bdeu", 1.0)
    assert not np.allclose(want_b, every_row, atol=1e-3)


def test_bif_refuses_names_it_cannot_hold_and_xmlbif_takes_them(tmp_path):
    from pgmpy.readwrite import XMLBIFReader

    from bigbn.io.bif import write_xmlbif

    net = Network(("a b", "c"), (("x y", "z"), ("0", "1")), ((), (0,)),
                  (np.array([0.25, 0.75]), np.array([[0.5, 0.5], [0.125, 0.875]])))
    with pytest.raises(DataError, match="variable 'a b': BIF names.*xmlbif"):
        format_bif(net)
    ok = Network(("a", "c"), (("x y", "z"), ("0", "1")), ((), (0,)), net.cpts)
    with pytest.raises(DataError, match="variable 'a', level 'x y'"):
        format_bif(ok)
    write_xmlbif(net, tmp_path / "n.xml")
    back = XMLBIFReader(str(tmp_path / "n.xml")).get_model()
    assert np.array_equal(back.get_cpds("c").get_values(), net.cpts[1].T)
    assert back.get_cpds("a b").state_names["a b"] == ["x y", "z"]


# ------------------------------------------------------------------ Gaussian networks

def gaussian_data(rng, m):
    x0 = rng.normal(size=m)
    x1 = 0.8 * x0 + 0.6 * rng.normal(size=m)
    x2 = -0.5 * x0 + 0.7 * x1 + 0.5 * rng.normal(size=m)
    x3 = rng.normal(size=m) + 0.3
    return pd.DataFrame({"x0": x0, "x1": x1, "x2": x2, "x3": x3})


def test_gaussian_cpds_against_the_precision_matrix(tmp_path):
    rng = np.random.default_rng(8)
    df = gaussian_data(rng, 60)
    path = tmp_path / "g.csv"
    df.to_csv(path, index=False)
    res = bigbn.learn(path, workdir=tmp_path / "wd", alpha_mu=2.0, alpha_w=9.0, map_dag=True)
    model = res.to_pgmpy(dag=[("x0", "x1"), ("x0", "x2"), ("x1", "x2")])
    assert type(model).__name__ == "LinearGaussianBayesianNetwork"
    ds, _ = run_data(res)
    for v, parents in ((0, []), (1, [0]), (2, [0, 1]), (3, [])):
        cpd = model.get_cpds(res.names[v])
        assert list(cpd.evidence) == [res.names[p] for p in parents]
        b0, coef, var = naive.gaussian_cpd_by_precision(ds.data, 2.0, 9.0, v, parents)
        assert np.allclose(cpd.beta, [b0, *coef], rtol=1e-12, atol=1e-12)
        assert cpd.std == pytest.approx(np.sqrt(var), rel=1e-12)
    r = cli("export", tmp_path / "wd")
    assert r.exit_code == 1 and "continuous (BGe)" in r.output and len(r.output.strip().splitlines()) == 1


def test_gaussian_cpds_are_posterior_means_by_monte_carlo():
    """Draw Σ ~ IW(R, α_w + m) (the BGe posterior), regress y on X within each draw, and
    average: the coefficients and residual variance `gaussian_conditional` gives."""
    from scipy.stats import invwishart

    from bigbn.outputs.parameters import bge_posterior, gaussian_conditional

    rng = np.random.default_rng(1)
    data = gaussian_data(rng, 12).to_numpy()  # few rows: the prior matters
    m, n = data.shape
    mean, R, alpha_w = bge_posterior(data, 1.0, None)
    _, coef, var = gaussian_conditional(mean, R, alpha_w + m, 2, [0, 1])
    draws = invwishart(df=alpha_w + m, scale=R).rvs(size=40000, random_state=rng)
    A = draws[:, :2, :2]
    b = np.linalg.solve(A, draws[:, :2, 2][..., None])[..., 0]
    resid = draws[:, 2, 2] - np.einsum("ti,ti->t", draws[:, :2, 2], b)
    se_b = b.std(axis=0) / np.sqrt(len(b))
    assert np.all(np.abs(b.mean(axis=0) - coef) < 4 * se_b)
    assert abs(resid.mean() - var) < 4 * resid.std() / np.sqrt(len(resid))
    assert abs(coef[1]) > 10 * se_b[1]  # not a trivially zero effect
    # the conditional variance of E[Σ] = R / (α_w + m − n − 1) (the plug-in) is not the mean
    plug_in = (R[2, 2] - R[2, :2] @ np.linalg.solve(R[:2, :2], R[:2, 2])) / (alpha_w + m - n - 1)
    assert abs(resid.mean() - plug_in) > 10 * resid.std() / np.sqrt(len(resid))


def test_fit_refuses_what_has_no_parameter_model(tmp_path):
    path = tmp_path / "s.jkl"
    path.write_text("2\na 2\n0 0\n-1 1 b\nb 1\n0 0\n")
    res = bigbn.learn(scores=path, workdir=tmp_path / "wd")
    with pytest.raises(OptionError, match=".jkl file: there is no parameter model"):
        res.to_pgmpy(dag=0.5)


def test_export_on_the_command_line(tmp_path):
    wd = tmp_path / "run"
    assert cli("run", ASIA, "--workdir", wd, "-q").exit_code == 0
    r = cli("export", wd)
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1
    assert "no MAP network" in r.output and "--dag 0.5" in r.output
    r = cli("export", wd, "--dag", "0.5", "--out", tmp_path / "a.bif")
    assert r.exit_code == 0 and r.output.strip() == (f"wrote {tmp_path / 'a.bif'}: the averaged (threshold 0.5) "
                                                     "network with posterior-mean CPDs")
    net, res = read_bif(tmp_path / "a.bif"), bigbn.open(wd)
    assert {(net.names[u], net.names[v]) for u, v in net.arcs()} == set(res.averaged(0.5).edges())
    for args, needle in ((("--dag", "x"), "--dag is map or a threshold"), (("--dag", "2"), "threshold"),
                         (("--dag", "0.5", "--data", tmp_path / "nope.csv"), "nope.csv")):
        r = cli("export", wd, *args)
        assert r.exit_code != 0 and needle in r.output and len(r.output.strip().splitlines()) == 1, r.output
    r = cli("export", wd, "--dag", "0.5", "--out", tmp_path)  # click's own check, as for every command
    assert r.exit_code == 2 and "is a directory" in r.output


def test_export_of_a_mixed_run_and_of_a_time_series_run(tmp_path):
    """A cg run has no parameter model bigbn fits: one line (it was a TypeError traceback
    from fit). A time series run is fitted on its transition rows, read as the run read
    them (its data file was refused as 'not the data of this run')."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, 40)
    x = a + rng.normal(size=40)
    mixed = tmp_path / "mx.csv"
    mixed.write_text("a,x\n" + "".join(f"l{u},{v:.5f}\n" for u, v in zip(a, x)))
    assert cli("run", mixed, "-w", tmp_path / "m", "-q").exit_code == 0
    r = cli("export", tmp_path / "m", "--dag", "0.5")
    assert r.exit_code == 1 and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert "mixed (the cg score)" in r.output
    with pytest.raises(OptionError, match="mixed"):
        bigbn.open(tmp_path / "m").to_pgmpy(dag=0.5)
    series = tmp_path / "ts.csv"
    series.write_text("s,A,B\n" + "".join(f"{i // 10},{'xy'[i * 7 // 3 % 2]},{'uv'[i * 5 // 2 % 2]}\n"
                                          for i in range(30)))
    assert cli("run", series, "--series-column", "s", "-w", tmp_path / "t", "-q", "--map").exit_code == 0
    out = tmp_path / "t.xml"
    r = cli("export", tmp_path / "t", "--format", "xmlbif", "--out", out)
    assert r.exit_code == 0, r.output
    res = bigbn.open(tmp_path / "t")
    assert "A[t-1]" in out.read_text() and len(res.to_pgmpy().nodes()) == 4


def test_open_and_export_a_map_only_run_with_tiers(tmp_path):
    """A --map-only run with tiers (or a time series, which is one) was refused by open and
    export ('a run with tiers is read for its posterior; its MAP network is map_dag.csv'):
    its MAP network is read from map_dag.csv, as for a tiered run with the posterior."""
    tiers = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]]
    only = bigbn.learn(ASIA, workdir=tmp_path / "m", tiers=tiers, map_dag=True, posterior=False, max_parents=2)
    opened = bigbn.open(tmp_path / "m")
    assert opened.posterior is None and opened.map_arcs() == only.map_arcs()
    assert opened.map_log_score == only.map_log_score
    assert set(opened.to_pgmpy().edges()) == set(only.map_arcs())
    r = cli("export", tmp_path / "m", "--out", tmp_path / "m.bif")
    assert r.exit_code == 0, r.output
    net = read_bif(tmp_path / "m.bif")
    assert {(net.names[u], net.names[v]) for u, v in net.arcs()} == set(only.map_arcs())
    (tmp_path / "m" / "map_dag.csv").unlink()
    with pytest.raises(WorkdirError, match="MAP network is not finished"):
        bigbn.open(tmp_path / "m")


@pytest.mark.parametrize("options", ['"x"', '{"score": 5}', '{"score": "bdeu", "dbn": 3}',
                                     '{"score": "bdeu", "dbn": {"lag": 1}}', '{"intervention_column": ["do"]}'])
def test_export_of_a_run_whose_summary_options_are_damaged_is_one_line(asia, tmp_path, options):
    """An edited summary.json whose "options" were a string, or whose "dbn" was a number,
    was a traceback out of export, to_pgmpy and effects of the opened result (ValueError,
    TypeError); now one line naming the file."""
    import shutil

    wd = tmp_path / "w"
    shutil.copytree(asia[1], wd)
    summary = json.loads((wd / "summary.json").read_text())
    summary["options"] = json.loads(options)
    (wd / "summary.json").write_text(json.dumps(summary))
    r = cli("export", wd, "--out", tmp_path / "n.bif")
    assert r.exit_code == 1 and r.output.count("\n") == 1, r.output
    assert f"{wd.resolve() / 'summary.json'}: its \"options\" are damaged" in r.output
    with pytest.raises(WorkdirError, match="summary.json: its \"options\" are damaged"):
        bigbn.open(wd).to_pgmpy()
    with pytest.raises(WorkdirError, match="summary.json: its \"options\" are damaged"):
        bigbn.effects(bigbn.open(wd), ASIA, pairs=[("smoke", "lung")])  # read them as unchecked
    assert not (tmp_path / "n.bif").exists()


@pytest.mark.parametrize("text", ["asia,tub\n", "parent,child\nasia,asia\n", "parent,child\nasia,tub\ntub,asia\n",
                                  "parent,child\nsmoke,lung\nsmoke,lung\n", "parent,child\nsmoke,lung\n",
                                  "parent,child\nsmoke,lung,x\n", "parent,child\nsmoke,nope\n"])
def test_open_refuses_a_damaged_map_dag_csv_of_a_map_only_run_with_tiers(tmp_path, text):
    """A --map-only run with tiers reads its MAP network from map_dag.csv: a file without
    its header lost its first arc, and a loop or a cycle was opened as the MAP "DAG" (to
    fail later, in to_pgmpy, as a network's error); now the file is checked as the run wrote
    it (header, arcs of the run's variables, once each, those summary.json lists, a DAG)."""
    import shutil

    tiers = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]]
    base = tmp_path / "m"
    only = bigbn.learn(ASIA, workdir=base, tiers=tiers, map_dag=True, posterior=False, max_parents=1)
    assert bigbn.open(base).map_arcs() == only.map_arcs()
    wd = tmp_path / "w"
    shutil.copytree(base, wd)
    (wd / "map_dag.csv").write_text(text)
    with pytest.raises(WorkdirError, match="map_dag.csv is damaged"):
        bigbn.open(wd)
    r = cli("export", wd, "--out", tmp_path / "n.bif")
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "map_dag.csv is damaged" in r.output, r.output
    # summary.json's "map_dag" (its arcs and log score) damaged: that file is named (it was map_dag.csv)
    shutil.copy(base / "map_dag.csv", wd / "map_dag.csv")
    summary = json.loads((base / "summary.json").read_text())
    for info in ([], {"arcs": [["asia"]], "log_score": 1.0}, {"arcs": only.map_arcs(), "log_score": "x"}):
        (wd / "summary.json").write_text(json.dumps({**summary, "map_dag": info}))
        with pytest.raises(WorkdirError, match="summary.json: its \"map_dag\" is damaged"):
            bigbn.open(wd)


def test_data_of_another_run_are_refused_when_summary_json_lacks_the_hash(asia, tmp_path):
    """The data given to export / to_pgmpy are checked against the run's content hash; a
    summary.json without "data_sha256" (an edit) took any data with the run's columns,
    and fitted the CPDs on them. run.json's fingerprint holds the hash too."""
    import shutil

    wd = tmp_path / "w"
    shutil.copytree(asia[1], wd)
    summary = json.loads((wd / "summary.json").read_text())
    del summary["data_sha256"]
    (wd / "summary.json").write_text(json.dumps(summary))
    other = tmp_path / "other.csv"
    other.write_text("".join(ASIA.read_text().splitlines(keepends=True)[:1001]))
    r = cli("export", wd, "--data", other, "--out", tmp_path / "n.bif")
    assert r.exit_code == 1 and "not the data of this run" in r.output, r.output
    assert cli("export", wd, "--out", tmp_path / "n.bif").exit_code == 0


def _sampled_copy(asia, tmp_path):
    """(workdir, samples, samples folder): a copy of the asia run with 40 samples (seed 1)
    drawn and written."""
    import shutil

    wd = tmp_path / "run"
    shutil.copytree(asia[1], wd)
    s = bigbn.sample(wd, samples=40, seed=1)
    write_outputs(s, wd)
    return wd, s, wd / "samples-order-modular"


def test_writing_samples_never_writes_through_a_link_to_a_file_outside_the_workdir(asia, tmp_path):
    """The CSV files of samples-PRIOR/ were opened for writing in place: a symlink (or a
    hard link, a workdir cloned by ``cp -s`` or ``cp -l``) in their place had the file it
    points to, outside the workdir, overwritten. Now each is a new file renamed into place."""
    import os

    wd, s, folder = _sampled_copy(asia, tmp_path)
    outside = {}
    for j, name in enumerate(("edges.csv", "ancestors.csv", "markov_blanket.csv", "dags.csv")):
        outside[name] = tmp_path / f"precious-{name}"
        outside[name].write_text("precious\n")
        (folder / name).unlink()
        if j % 2:
            os.link(outside[name], folder / name)
        else:
            (folder / name).symlink_to(outside[name])
    left = folder / ".dags.csv.999999999.tmp"  # a killed writer's (no such process)
    left.write_text("half")
    write_outputs(s, wd)
    assert not left.exists()
    for name, path in outside.items():
        assert path.read_text() == "precious\n", name
        assert not (folder / name).is_symlink() and (folder / name).stat().st_nlink == 1
        assert (folder / name).read_text().startswith(("parent,", "ancestor,", "node,", "rank,"))
    assert sorted(f.name for f in folder.iterdir() if f.name.startswith(".")) == []
    assert np.array_equal(bigbn.open(wd).samples.parents, s.parents)


def test_a_symlinked_samples_folder_is_refused_and_nothing_is_written_through_it(asia, tmp_path):
    """A symbolic link in samples-PRIOR/'s place (to a folder outside the workdir) was
    written through: the samples' files were written into the folder it points to, and its
    stale temporaries removed. Refused now, in one line naming it, by `bigbn sample` before
    the draws and by write_outputs (bigbn.sample's writer); the folder outside is untouched."""
    import os

    from click.testing import CliRunner

    from bigbn.cli.main import main

    wd, s, folder = _sampled_copy(asia, tmp_path)
    outside = tmp_path / "elsewhere"
    folder.rename(outside)
    left = outside / ".dags.csv.999999999.tmp"  # what write_outputs removes as stale
    left.write_text("half")
    before = {f.name: f.read_bytes() for f in outside.iterdir()}
    folder.symlink_to(outside, target_is_directory=True)
    for link in (folder, tmp_path / "run" / "samples-dag-modular"):
        if link != folder:
            link.symlink_to(tmp_path / "nowhere")  # a dangling link: mkdir's FileExistsError traceback
        with pytest.raises(WorkdirError, match=rf"^{re.escape(str(link))} is a symbolic link \(to .*\), not the folder "
                                               "bigbn writes the samples in; bigbn writes nothing through it"):
            write_outputs(bigbn.sample(wd, samples=30, seed=2, prior=link.name[len("samples-"):]), wd)
        r = CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "30", "--prior", link.name[len("samples-"):]])
        assert r.exit_code == 1 and "Traceback" not in r.output, r.output
        assert r.output.count("Error:") == 1 and "is a symbolic link" in r.output and "DAGs drawn" not in r.output
    assert {f.name: f.read_bytes() for f in outside.iterdir()} == before
    assert os.path.islink(folder) and not (tmp_path / "nowhere").exists()


def test_two_samplers_never_write_one_samples_folder_at_once_and_a_file_in_its_place_is_refused_first(
        asia, tmp_path):
    """write_outputs holds the run's lock: a sampler that finished while another wrote its
    files (the lock was held only while drawing) wrote into the same files at once. And a
    file where samples-PRIOR/ belongs is one line before the draws, not "File exists" after."""
    import shutil

    from bigbn.store.workdir import Workdir

    wd, first, folder = _sampled_copy(asia, tmp_path)
    before = {f.name: f.read_bytes() for f in folder.iterdir()}
    second = bigbn.sample(wd, samples=50, seed=2)
    with Workdir(wd).lock():  # another bigbn writing its samples
        with pytest.raises(WorkdirError, match="in use by another bigbn run"):
            write_outputs(second, wd)
    assert {f.name: f.read_bytes() for f in folder.iterdir()} == before
    write_outputs(second, wd)
    assert bigbn.open(wd).samples.seed == 2
    shutil.rmtree(folder)
    folder.write_text("mine")
    from click.testing import CliRunner

    from bigbn.cli.main import main

    r = CliRunner().invoke(main, ["sample", "-w", str(wd), "-T", "30"])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert r.output.count("Error:") == 1 and "samples-order-modular is a file, not the folder" in r.output
    assert "DAGs drawn" not in r.output and "sample:" not in r.output  # refused before the draws
    assert folder.read_text() == "mine"


@pytest.mark.parametrize("score", ["bge", "bdeu"])
def test_the_model_of_a_tiered_run_of_more_than_40_variables_is_fitted(score):
    """run_data read the data again with the engine's limit without tiers (40 variables):
    export and to_pgmpy of a tiered run of 64 were '64 variables, but the engine supports
    at most 40'. The fitted network has the run's MAP arcs, and for BGe v63 = 2·v0 + noise
    gives v0's coefficient near 2 (BDeu: each table's rows sum to 1)."""
    from bigbn.outputs.model import fit_result
    from helpers import wide_tiered_data

    X, names, tiers = wide_tiered_data(score)
    n = len(names)
    r = bigbn.learn(X, names=names, max_parents=1, tiers=tiers, score=score, map_dag=True)
    net = fit_result(r, data=X)
    if score == "bge":
        assert ("v0", "v63") in r.map_arcs()
        assert {(names[u], names[v]) for v in range(n) for u in net.parents[v]} == set(r.map_arcs())
        j = list(net.parents[63]).index(0)
        assert 1.5 < net.coefficients[63][j] < 2.5
    else:
        assert {(net.names[u], net.names[v]) for u, v in net.arcs()} == set(r.map_arcs())
        assert all(np.allclose(np.asarray(t).reshape(-1, len(net.states[v])).sum(axis=1), 1) for v, t in enumerate(net.cpts))


def test_open_reads_the_results_as_utf8_whatever_the_locale(tmp_path):
    """3eb6421 wrote the results as UTF-8 whatever the locale, but bigbn.open read
    effects.csv and map_dag.csv in the locale's encoding: in an ASCII locale a run with a
    column 'Ωa' opened as "effects.csv is damaged", advising a rerun that wrote the same file."""
    import os
    import subprocess
    import sys

    X = np.random.default_rng(1).normal(size=(60, 3))
    X[:, 1] += X[:, 0]
    wd = tmp_path / "w"
    bigbn.learn(X, names=["Ωa", "b", "c"], max_parents=2, workdir=wd, map_dag=True, tiers=[["Ωa"], ["b", "c"]])
    bigbn.effects(wd, X, pairs=[("Ωa", "b")]).to_csv(wd / "effects.csv")
    assert (wd / "map_dag.csv").exists()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "import sys, bigbn; r = bigbn.open(sys.argv[1]); print(ascii(r.map_arcs()), r.effects.pairs)"
    r = subprocess.run([sys.executable, "-c", code, str(wd)], capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    res = bigbn.open(wd)
    assert r.stdout.decode().strip() == f"{ascii(res.map_arcs())} [(0, 1)]"


@pytest.mark.parametrize("tiered", [True, False])
def test_a_map_only_run_completed_without_map_keeps_its_map_network(tmp_path, tiered):
    """A --map-only run, then the same command without it (the posterior added, as the docs
    say): the run's MAP network stays in its outputs. With tiers its summary.json lost
    "map_dag", and bigbn.open and bigbn export refused the run as damaged."""
    tiers = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]] if tiered else None
    only = bigbn.learn(ASIA, workdir=tmp_path / "m", tiers=tiers, map_dag=True, posterior=False, max_parents=2)
    both = bigbn.learn(ASIA, workdir=tmp_path / "m", tiers=tiers, max_parents=2)
    full = bigbn.learn(ASIA, workdir=tmp_path / "full", tiers=tiers, map_dag=True, max_parents=2)
    assert both.summary["computed"] == ["posterior", "map_dag"] and both.map_arcs() == only.map_arcs()
    assert both.summary["map_dag"] == full.summary["map_dag"]
    opened = bigbn.open(tmp_path / "m")
    assert opened.map_arcs() == full.map_arcs() and opened.map_log_score == full.map_log_score
    np.testing.assert_array_equal(opened.posterior, full.posterior)
    for name in ("m", "full"):
        r = cli("export", tmp_path / name, "--out", tmp_path / f"{name}.bif")
        assert r.exit_code == 0, r.output
    assert (tmp_path / "m.bif").read_text() == (tmp_path / "full.bif").read_text()


@pytest.mark.parametrize("tiered", [True, False])
def test_a_posterior_run_then_map_only_keeps_its_posterior_in_the_summary(tmp_path, tiered):
    """The converse: a run's posterior, then --map-only on it: summary.json keeps log p(data)
    (it was null, and the report's header lost it) and says both are computed."""
    tiers = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]] if tiered else None
    first = bigbn.learn(ASIA, workdir=tmp_path / "m", tiers=tiers, max_parents=2)
    bigbn.learn(ASIA, workdir=tmp_path / "m", tiers=tiers, map_dag=True, posterior=False, max_parents=2)
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["computed"] == ["posterior", "map_dag"]
    assert summary["log_marginal_likelihood"] == first.log_marginal
    r = cli("report", tmp_path / "m", "--out", tmp_path / "r.html")
    assert r.exit_code == 0 and f"log p(data) = {first.log_marginal:.6f}" in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("names, message", [
    (("a", "b\nc"), r"^network, variable 2: the variable name 'b\\nc' holds the control character '\\n'"),
    (("", "b"), r"^network, variable 1: empty variable name$"),
    (("a", "a"), r"^network: duplicate variable name 'a' \(variables 1 and 2\)$"),
])
def test_gaussian_and_cg_networks_built_in_python_check_their_names_as_a_network_does(names, message):
    """GaussianNetwork and CGNetwork (tools/cg.py) built in Python took any name: "b\\nc"
    went into to_pgmpy's model and write_cg_data's CSV header, and a repeated name made two
    variables one. They check names as a `Network` does, in one line naming the position."""
    from bigbn.outputs.model import GaussianNetwork
    from bigbn.tools.cg import CGNetwork

    with pytest.raises(DataError, match=message):
        GaussianNetwork(names, ((), (0,)), np.zeros(2), (np.zeros(0), np.ones(1)), np.ones(2))
    with pytest.raises(DataError, match=message):
        CGNetwork(names, ("continuous",) * 2, np.zeros(2, dtype=np.int64), [[], [0]], [0, 1], {},
                  {0: (np.zeros(1), np.zeros((1, 0)), np.ones(1)), 1: (np.zeros(1), np.ones((1, 1)), np.ones(1))})
