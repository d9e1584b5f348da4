"""Causal effects averaged over structures (Bayesian IDA, bigbn/outputs/effects.py).

References: tests/naive.py sums per-DAG effects over every DAG (n = 4), with the
regression read from the precision matrix and the quantiles by bisection, and counts
records in plain loops for discrete data; a Monte Carlo draw of Σ from its inverse-Wishart
posterior checks the Student-t formula itself; simulations with known coefficients check
identified and unidentified effects.

Tolerances: means and p_zero are sums of the same posteriors (1e−9); interval endpoints
solve F(t) = p by Brent's method against 200 bisections, with parent sets of total
posterior < 1e−14 left out of F (1e−8).
"""

from __future__ import annotations

import csv
import re
import numpy as np
import pytest

import bigbn
from bigbn.scores.bge import posterior_scatter
from bigbn.outputs.effects import bge_effect_components, effects
from bigbn.errors import DataError, OptionError, WorkdirError
from bigbn.store.workdir import Workdir

import naive


def linear_data(rng, m, coef: dict, n: int, noise=1.0):
    """Columns in topological order 0..n-1; coef[(u, v)] the weight of u → v; noise: the
    standard deviation of each node's own noise (one number or one per node)."""
    X = np.zeros((m, n))
    noise = np.broadcast_to(noise, (n,))
    for v in range(n):
        X[:, v] = noise[v] * rng.normal(size=m)
        for (u, w), c in coef.items():
            if w == v:
                X[:, v] += c * X[:, u]
    return X


@pytest.fixture(scope="module")
def small_continuous(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = linear_data(rng, 25, {(0, 2): 0.9, (1, 2): -0.7, (2, 3): 0.8}, 4)
    wd = tmp_path_factory.mktemp("cont") / "w"
    bigbn.learn(X, names=list("abcd"), max_parents=2, workdir=wd, alpha_mu=2.0)
    return X, wd


def _without_effects(small_continuous, tmp_path):
    """(X, a copy of the small continuous run's workdir without its effects folders)."""
    import shutil

    X, wd0 = small_continuous
    wd = tmp_path / "w"
    shutil.copytree(wd0, wd)
    for old in wd.glob("effects-*"):
        shutil.rmtree(old)
    return X, wd


def test_bge_effects_against_all_dags(small_continuous):
    X, wd = small_continuous
    beta = Workdir(wd).read("beta", slice(None))
    e = effects(wd, X, level=0.9)
    n = 4
    assert e.pairs == [(x, y) for x in range(n) for y in range(n) if x != y]
    spread = []
    for i, (x, y) in enumerate(e.pairs):
        mean, p_zero, lower, upper = naive.bge_effects_by_dags(X, beta, 2, x, y, 2.0, n + 2.0 + 1, 0.9)
        assert e.mean[i] == pytest.approx(mean, abs=1e-9)
        assert e.p_zero[i] == pytest.approx(p_zero, abs=1e-9)
        assert e.lower[i] == pytest.approx(lower, abs=1e-8)
        assert e.upper[i] == pytest.approx(upper, abs=1e-8)
        spread.append(p_zero)
    # the data leave the structure uncertain: p_zero is neither 0 nor 1 for several pairs
    assert sum(0.05 < p < 0.95 for p in spread) >= 4


@pytest.mark.parametrize("scale, offset, alpha_mu, alpha_w", [
    (1.0, 0.0, 1.0, None), (1.0, 0.0, 1.0, 1e8), (1.0, 0.0, 1e8, 1e8), (1e-4, 1e8, 1.0, None),
    (1e-4, 1e8, 1.0, 1e8), (1.0, 0.0, 1e-6, None), (1.0, 0.0, 1.0, 5.5)])
@pytest.mark.filterwarnings("ignore:.*far from unit scale")
def test_bge_effects_are_exact_at_extreme_priors_and_scales(tmp_path, scale, offset, alpha_mu, alpha_w):
    """Every pair's mean, p_zero and interval against naive.exact_bge_effects_by_dags (R,
    the per-set t's and the DAG weights exact, the quantiles at 40 digits), at the largest
    accepted α_w and α_μ (1e8), a tiny α_μ, the smallest α_w (heavy tails), and columns of spread 1e-4 at 1e8. R = t·I + S
    in float64 keeps these to ~1e-14 of the interval's width: unlike the scores' log
    determinants (`bigbn.scores.bge.log_dets`) no two large terms cancel. (The float64
    reference, naive.bge_effects_by_dags, centres once and was itself 4e-8 off at 1e8.)"""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 4))
    X[:, 2] += 0.8 * X[:, 0]
    X[:, 3] += 0.5 * X[:, 2]
    X = X * scale + offset
    bigbn.learn(X, max_parents=2, alpha_mu=alpha_mu, alpha_w=alpha_w, workdir=tmp_path / "w", score="bge")
    beta = Workdir(tmp_path / "w").read("beta", slice(None))
    e = effects(tmp_path / "w", X, level=0.9)
    aw = 4 + alpha_mu + 1 if alpha_w is None else alpha_w
    for i, (x, y) in enumerate(e.pairs):
        mean, p_zero, lo, hi = (float(v) for v in naive.exact_bge_effects_by_dags(X, beta, 2, x, y, alpha_mu, aw, 0.9))
        width = hi - lo
        assert abs(e.mean[i] - mean) <= 1e-13 * width
        assert abs(e.p_zero[i] - p_zero) <= 1e-13
        assert abs(e.lower[i] - lo) <= 1e-12 * width and abs(e.upper[i] - hi) <= 1e-12 * width
        assert e.lower[i] <= e.mean[i] + 1e-12 * width or p_zero > 0.05  # a sanity check of the mixture


@pytest.mark.parametrize("level", [1 - 1e-12, 0.999999, 0.95, 1e-9])
def test_interval_endpoints_are_exact_at_extreme_levels(tmp_path, level):
    """The upper endpoint solved F(t) = (1 + level)/2: F, a float64 sum near 1, holds the
    tail 1 − F to an absolute ε only, so the endpoint was 4.2e-4 off (relatively) at level
    1 − 1e-12 and 4.7e-10 at 0.999999. Now it is the lower endpoint of the mirrored
    mixture, at the tail (1 − level)/2 itself: within 3e-15 at these levels (1.3e-14 at
    1e-9, an interval around the median, where F near 1/2 is as good as float64 gets), heavy tails
    (α_w = n + 1.5, 6 rows: 9.5 to 11.5 degrees of freedom) included."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 4))
    X[:, 2] += 0.8 * X[:, 0]
    X[:, 3] += 0.5 * X[:, 2]
    bigbn.learn(X, max_parents=2, alpha_w=5.5, workdir=tmp_path / "w", score="bge")
    beta = Workdir(tmp_path / "w").read("beta", slice(None))
    e = effects(tmp_path / "w", X, level=level)
    for i, (x, y) in enumerate(e.pairs):
        _, _, lo, hi = (float(v) for v in naive.exact_bge_effects_by_dags(X, beta, 2, x, y, 1.0, 5.5, level))
        assert e.lower[i] == pytest.approx(lo, rel=5e-14, abs=1e-300)
        assert e.upper[i] == pytest.approx(hi, rel=5e-14, abs=1e-300)


def test_an_endpoint_at_the_atom_is_zero_not_minus_zero():
    """The upper endpoint is the mirrored mixture's lower one, negated: where the atom at 0
    held it (or every parent set holds the effect) it came out −0.0, "-0" in effects.csv."""
    from bigbn.io.data import Dataset
    from bigbn.outputs.effects import continuous_effects

    rng = np.random.default_rng(2)
    ds = Dataset(("a", "b", "c"), rng.normal(size=(8, 3)), np.zeros(3, dtype=np.int64), ((),) * 3,
                 "continuous", "")
    sets = {0: (np.array([0.6, 0.4]), np.array([0b010, 0b000])),  # the atom holds the upper endpoint
            1: (np.array([1.0]), np.array([0b100]))}  # p_zero = 1: no t at all
    out = continuous_effects(ds, sets.__getitem__, [(0, 1), (1, 2)], 0.5, alpha_mu=1.0, alpha_w=None)
    assert out["p_zero"].tolist() == [0.6, 1.0]
    for v in (out["upper"][1], out["lower"][1], out["mean"][1]):
        assert v == 0 and not np.signbit(v)
    assert (out["lower"][0] == 0 or out["upper"][0] == 0) and not np.signbit(out["upper"][0])


def test_result_and_workdir_give_the_same_effects(small_continuous, tmp_path):
    X, wd = small_continuous
    r = bigbn.learn(X, names=list("abcd"), max_parents=2, workdir=wd, alpha_mu=2.0)
    a, b = effects(wd, X, pairs=[("a", "d"), (3, 0)]), effects(r, X, pairs=[("a", "d"), (3, 0)])
    assert a.pairs == b.pairs == [(0, 3), (3, 0)]
    for f in ("mean", "p_zero", "lower", "upper"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_student_t_matches_inverse_wishart_draws():
    """The coefficient of x in the regression of y on (x, z), with Σ drawn from the BGe
    posterior IW(R, α_w + m), has the t distribution bge_effect_components gives."""
    from scipy import stats

    rng = np.random.default_rng(5)
    m, n = 6, 4  # few records: a heavy-tailed t with α_w + m − n + |Z| + 2 = 11 degrees of freedom
    data = linear_data(rng, m, {(0, 1): 1.0, (1, 2): 0.5, (0, 3): -0.5}, n)
    alpha_mu, alpha_w = 1.0, n + 2.0
    R = posterior_scatter(data, alpha_mu, alpha_mu * (alpha_w - n - 1) / (alpha_mu + 1), data.mean(axis=0))
    x, z, y = 1, 3, 2
    loc, scale, df = bge_effect_components(R, alpha_w + m - n + 2, x, np.array([1 << z], dtype=np.int64))
    d = df[0]
    assert d == 11
    draws = stats.invwishart(df=alpha_w + m, scale=R).rvs(size=200_000, random_state=rng)
    X = [x, z]
    coef = np.linalg.solve(draws[:, X][:, :, X], draws[:, X, y][:, :, None])[:, 0, 0]
    for q in (0.025, 0.25, 0.5, 0.75, 0.975):
        t = loc[0, y] + scale[0, y] * stats.t.ppf(q, d)
        frac = np.mean(coef <= t)
        assert abs(frac - q) < 5 * np.sqrt(q * (1 - q) / coef.size), (q, frac)
    assert np.isnan(loc[0, z]) and np.isnan(loc[0, x])  # y ∈ Z and y = x have no component


@pytest.mark.parametrize("score, ess", [("bdeu", 3.0), ("k2", None)])
def test_discrete_effects_against_all_dags(score, ess, tmp_path):
    rng = np.random.default_rng(11)
    m = 40
    a = rng.integers(0, 2, m)
    b = (a + rng.integers(0, 3, m)) % 3
    c = (b > 0).astype(int) ^ (rng.random(m) < 0.2)
    d = rng.integers(0, 2, m) | (a & c)
    data = np.c_[a, b, c, d]
    r = bigbn.learn(data, names=list("abcd"), score=score, ess=ess, max_parents=2,
                    workdir=tmp_path / "w")
    beta = Workdir(tmp_path / "w").read("beta", slice(None))
    e = effects(r, data)
    ds_arities = [2, 3, 2, 2]
    spread = []
    for i, (x, y) in enumerate(e.pairs):
        table, p_zero = naive.discrete_effects_by_dags(data, ds_arities, beta, 2, x, y, score, ess)
        np.testing.assert_allclose(e.table[i], table, rtol=0, atol=1e-10)
        assert e.p_zero[i] == pytest.approx(p_zero, abs=1e-10)
        np.testing.assert_allclose(e.table[i].sum(axis=1), 1.0, rtol=0, atol=1e-12)
        spread.append(p_zero)
    assert sum(0.05 < p < 0.95 for p in spread) >= 2
    rows = e.rows()
    assert len(rows) == sum(ds_arities[x] * ds_arities[y] for x, y in e.pairs)
    assert rows[0][:4] == ["a", "0", "b", "0"]


@pytest.mark.parametrize("score", ["bdeu", "k2"])
def test_adjusted_table_with_many_configurations(score):
    """Σ_z p̂(y | a, z) p̂(z) over all q_Z = 1225 configurations of two 35-level parents, most
    of them unobserved: indexed by the mixed-radix code (as _configurations does up to
    q_Z ≤ max(4m, 1024)) and by rank among the observed ones (above), against the loops."""
    from bigbn.outputs.effects import _adjusted, _configurations

    rng = np.random.default_rng(12)
    m = 60
    arities = np.array([2, 3, 35, 35])
    data = np.stack([rng.integers(0, r, m) for r in arities], axis=1)
    data[:, 1] = (data[:, 0] + (data[:, 2] > 17) + rng.integers(0, 2, m)) % 3
    Z = [2, 3]
    ref = naive.adjusted_table(data, arities, 0, 1, Z, score, 2.0)
    z, qz = _configurations(data, arities, Z)
    assert qz == 1225 and z.max() < m  # above the threshold: ranks of the observed
    code = data[:, 2] * 35 + data[:, 3]
    data_t = np.ascontiguousarray(data.T.astype(np.int64))
    for index in (z, code):
        got = _adjusted(data_t, arities, 0, [1], index, qz, score == "k2", 2.0)
        np.testing.assert_allclose(got[0], ref, rtol=0, atol=1e-13)
    # several effects at once, each its own table (y = 3 lies in Z: the sum is still defined,
    # and the loops compute it the same way)
    both = _adjusted(data_t, arities, 1, [0, 3], z, qz, score == "k2", 2.0)
    for y, tab in zip((0, 3), both):
        np.testing.assert_allclose(tab, naive.adjusted_table(data, arities, 1, y, Z, score, 2.0),
                                   rtol=0, atol=1e-13)
    small, q = _configurations(data, arities, [0, 1])
    np.testing.assert_array_equal(small, data[:, 0] * 3 + data[:, 1])
    assert q == 6


def test_identified_effects_are_recovered(tmp_path):
    """a → c ← b, c → d: the v-structure orients every arc, so the effect of a on d is the
    product of the coefficients, and d has no effect on a."""
    rng = np.random.default_rng(7)
    X = linear_data(rng, 5000, {(0, 2): 0.8, (1, 2): -0.6, (2, 3): 0.7}, 4, noise=[1, 1, 0.5, 0.5])
    e = effects(bigbn.learn(X, names=list("abcd"), workdir=tmp_path / "w"), X)
    at = {(e.names[x], e.names[y]): i for i, (x, y) in enumerate(e.pairs)}
    i = at["a", "d"]
    assert e.lower[i] < 0.56 < e.upper[i] and e.mean[i] == pytest.approx(0.56, abs=0.03)
    assert e.upper[i] - e.lower[i] < 0.1
    i = at["d", "a"]
    assert e.lower[i] < 0 < e.upper[i] and abs(e.mean[i]) < 0.03 and e.p_zero[i] < 0.05
    assert e.p_zero[at["c", "a"]] > 0.95  # a is a parent of c: no effect of c on a


def test_unidentified_chain_says_so(tmp_path):
    """a → b → c: its Markov equivalence class also holds c → b → a and a ← b → c, so
    whether b affects c is uncertain, and the posterior mixes 0 with the coefficient."""
    rng = np.random.default_rng(8)
    X = linear_data(rng, 3000, {(0, 1): 0.8, (1, 2): 0.8}, 3)
    e = effects(bigbn.learn(X, names=list("abc"), workdir=tmp_path / "w"), X,
                pairs=[("b", "c"), ("c", "b")])
    # The three DAGs score alike and, with the Koivisto-Sood ρ, weigh by their linear
    # extensions 1 : 1 : 2: c is a parent of b in one of four, b a parent of c in three.
    assert e.p_zero[0] == pytest.approx(0.25, abs=0.02)
    assert e.p_zero[1] == pytest.approx(0.75, abs=0.02)
    for i in range(2):
        assert e.lower[i] == 0 < e.upper[i]  # the atom at 0 holds the lower 2.5 %
    assert e.mean[0] == pytest.approx(0.75 * 0.8, abs=0.05)  # shrunk towards 0 by the mixture


def test_pairs_and_data_are_checked(small_continuous, tmp_path):
    X, wd = small_continuous
    bad = tmp_path / "pairs.csv"
    bad.write_text("cause,effect\na,b\na,zz\n")
    with pytest.raises(DataError, match=r"pairs.csv, line 3, column effect: unknown variable 'zz'"):
        effects(wd, X, pairs=bad)
    bad.write_text("cause;effect\nc;c\n")
    with pytest.raises(DataError, match="line 2: cause and effect are both 'c'"):
        effects(wd, X, pairs=bad)
    with pytest.raises(OptionError, match="not the data of this run"):
        effects(wd, X[:-1])
    with pytest.raises(OptionError, match="no variable named 'q'"):
        effects(wd, X, pairs=[("q", "a")])
    with pytest.raises(OptionError, match="credible level"):
        effects(wd, X, level=1.5)
    with pytest.raises(OptionError, match="came from memory"):
        effects(wd)  # learned from an array: no data file to read again


def test_cli_effects(tmp_path):
    from click.testing import CliRunner

    from bigbn.cli.main import main
    from test_cli import assert_one_line_error

    rng = np.random.default_rng(9)
    X = linear_data(rng, 300, {(0, 1): 0.9, (1, 2): -0.5, (0, 2): 0.4}, 3)
    data = tmp_path / "d.csv"
    np.savetxt(data, X, delimiter=",", header="x,y,z", comments="", fmt="%.10g")
    wd = tmp_path / "w"

    def cli(*args):
        return CliRunner().invoke(main, [str(a) for a in args])

    assert cli("run", data, "-w", wd, "-q").exit_code == 0
    r = cli("effects", "-w", wd)
    assert r.exit_code == 0, r.output
    assert str(wd / "effects.csv") in r.stdout and "x -> z" in r.stdout
    with open(wd / "effects.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["cause", "effect", "mean", "p_zero", "lower", "upper"]
    assert len(rows) == 1 + 6
    ref = effects(wd)
    got = {(r[0], r[1]): float(r[2]) for r in rows[1:]}
    assert got[("x", "z")] == ref.mean[ref.pairs.index((0, 2))]
    pairs = tmp_path / "p.csv"
    pairs.write_text("cause,effect\nx,nope\n")
    assert_one_line_error(cli("effects", "-w", wd, "--pairs", pairs), "p.csv, line 2, column effect")
    other = tmp_path / "other.csv"
    np.savetxt(other, X[::-1], delimiter=",", header="x,y,z", comments="", fmt="%.10g")
    assert_one_line_error(cli("effects", "-w", wd, "--data", other), "not the data of this run")
    assert_one_line_error(cli("effects", "-w", tmp_path / "none"), "not a bigbn work directory")


def test_the_run_data_file_is_found_from_another_folder(tmp_path, monkeypatch):
    """run.json records the data file's absolute path, so `bigbn effects` without --data
    works from any folder; a file moved away gets a one-line error asking for it."""
    rng = np.random.default_rng(4)
    X = linear_data(rng, 200, {(0, 1): 0.7, (1, 2): 0.7}, 3)
    (tmp_path / "a").mkdir()
    np.savetxt(tmp_path / "a" / "d.csv", X, delimiter=",", header="x,y,z", comments="", fmt="%.10g")
    monkeypatch.chdir(tmp_path / "a")
    bigbn.learn("d.csv", workdir="w")
    monkeypatch.chdir(tmp_path)
    e = effects("a/w", pairs=[("x", "z")])
    assert 0.05 < e.mean[0] < 0.49  # 0.49 in one of the chain's three DAGs, ≈ 0 in the others
    (tmp_path / "a" / "d.csv").rename(tmp_path / "d.csv")
    with pytest.raises(OptionError, match=r"data file .*a/d.csv is not there; give the data"):
        effects("a/w")
    assert effects("a/w", "d.csv", pairs=[("x", "z")]).mean[0] == e.mean[0]


@pytest.mark.parametrize("source, got", [(None, "NoneType"), (123, "int"),
                                         (np.zeros((4, 2)), "ndarray (data go to learn)")])
def test_effects_of_what_is_not_a_run_is_one_line(source, got):
    """Issue #37: effects(None) and effects(123) raised TypeError; they take a run (the same
    check as sample's, bigbn.outputs.result.run_workdir)."""
    with pytest.raises(OptionError) as e:
        effects(source)
    assert str(e.value) == ("effects() takes a finished run: its work directory (a path) or the Result of "
                            f"learn, got {got}")


def test_effects_on_a_run_in_progress_says_it_is_running(tmp_path):
    """Issue #37: while `bigbn run` held the workdir's lock, effects said to run that command
    again (which the lock then refused); an unfinished run without a lock says so."""
    import subprocess
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from bigbn.cli.main import main
    from test_cli import assert_one_line_error
    from test_samples import HOLD_LOCK

    wd = tmp_path / "w"
    asia = Path(__file__).resolve().parent.parent / "examples" / "asia.csv"
    assert CliRunner().invoke(main, ["run", str(asia), "-w", str(wd), "-k", "1", "-q"]).exit_code == 0
    journal = wd / "journal.jsonl"
    journal.write_text("".join(x + "\n" for x in journal.read_text().splitlines() if '"edges"' not in x))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(wd)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = CliRunner().invoke(main, ["effects", "-w", str(wd)])
        assert_one_line_error(r, f"{wd}: the run is still running (pid {holder.pid} on ",
                              "holds the workdir's lock); wait for it to finish, then compute the effects")
    finally:
        holder.kill()
        holder.wait()
    assert_one_line_error(CliRunner().invoke(main, ["effects", "-w", str(wd)]),
                          f"{wd}: the run is not finished; run the same `bigbn run` command again to "
                          "finish it, then compute the effects")
    assert not (wd / "effects.csv").exists()


def test_effects_refuse_a_run_on_a_jkl_file(tmp_path):
    """Issue #37: the README said effects work with every score, a .jkl file too; a jkl run
    has scores but no parameter model, so `bigbn effects` refuses it in one line, also
    when given the data the scores came from."""
    from pathlib import Path

    from click.testing import CliRunner

    from bigbn.cli.main import main
    from test_cli import assert_one_line_error

    asia = Path(__file__).resolve().parent.parent / "examples" / "asia.csv"
    jkl, wd = tmp_path / "asia.jkl", tmp_path / "w"
    assert CliRunner().invoke(main, ["scores", str(asia), "-o", str(jkl), "-k", "1"]).exit_code == 0
    assert CliRunner().invoke(main, ["run", "--scores", str(jkl), "-w", str(wd), "-k", "1", "-q"]).exit_code == 0
    for extra in ([], ["--data", str(asia)]):
        assert_one_line_error(CliRunner().invoke(main, ["effects", "-w", str(wd), *extra]),
                              "this run's local scores came from a .jkl file: causal effects need the data")
    assert not (wd / "effects.csv").exists()


def test_a_probability_that_is_exactly_one_is_not_printed_above_it(tmp_path):
    """a → b required, so every parent set of b holds a and P(effect of b on a is 0) is
    exactly 1: the sum of the parent sets' posteriors came out 1.0000000000000036 (and up to
    1 + 19 ulps over these seeds). Probabilities are clipped to [0, 1], as their exact
    values are."""
    rng = np.random.default_rng(10)
    m = 30
    X = rng.integers(0, 2, size=(m, 6))
    X[:, 1] = X[:, 0] ^ (rng.random(m) < 0.3)
    r = bigbn.learn(X, names=list("abcdef"), score="bdeu", max_parents=3, workdir=tmp_path / "w",
                    required=[("a", "b")])
    e = effects(r, X)
    i = e.pairs.index((1, 0))
    assert e.p_zero[i] == 1.0
    assert all(0.0 <= p <= 1.0 for p in e.p_zero)
    assert all(((t >= 0) & (t <= 1)).all() for t in e.table)


def test_effects_csv_quotes_a_name_with_a_carriage_return(tmp_path):
    """Effects.to_csv wrote through csv.writer with lineterminator "\\n", which leaves a bare
    carriage return unquoted: csv.reader ends the row there, so `bigbn.open` of a run whose
    variable name held one called its effects.csv damaged. (A control character is no part of
    a name now, refused when the data are read; a comma and a quote are quoted.)"""
    X = linear_data(np.random.default_rng(9), 50, {(0, 1): 0.9}, 3)
    names = ["a b", "c,d", 'e"f']
    bigbn.learn(X, names=names, max_parents=2, workdir=tmp_path / "w")
    e = effects(tmp_path / "w", X)
    e.to_csv(tmp_path / "w" / "effects.csv")
    back = bigbn.open(tmp_path / "w").effects
    assert back.pairs == e.pairs
    np.testing.assert_array_equal(back.mean, e.mean)
    np.testing.assert_array_equal(back.upper, e.upper)


def test_cli_effects_never_writes_through_a_symlink(tmp_path):
    """`bigbn effects` opened WORKDIR/effects.csv for writing in place: a symlink there (a
    workdir copied by `cp -s`) had it overwrite the file it points to, outside the workdir."""
    from click.testing import CliRunner

    from bigbn.cli.main import main

    X = linear_data(np.random.default_rng(9), 100, {(0, 1): 0.9}, 3)
    data = tmp_path / "d.csv"
    np.savetxt(data, X, delimiter=",", header="x,y,z", comments="", fmt="%.10g")
    wd = tmp_path / "w"
    assert CliRunner().invoke(main, ["run", str(data), "-w", str(wd), "-q"]).exit_code == 0
    outside = tmp_path / "outside.csv"
    outside.write_text("someone else's\n")
    (wd / "effects.csv").symlink_to(outside)
    r = CliRunner().invoke(main, ["effects", "-w", str(wd)])
    assert r.exit_code == 0, r.output
    assert outside.read_text() == "someone else's\n"
    assert not (wd / "effects.csv").is_symlink()
    assert bigbn.open(wd).effects.pairs == effects(wd).pairs


@pytest.mark.parametrize("damage", ["fifo journal", "folder journal", "file folder"])
def test_a_damaged_effects_folder_is_one_line_naming_it(small_continuous, tmp_path, damage):
    """A FIFO or a folder in place of effects-KEY/journal.jsonl was refused with the run's
    advice, "run the same command with --fresh to start over" (`bigbn effects` has no
    --fresh; `bigbn run --fresh` would throw the whole run away); a file in place of
    effects-KEY/ itself was called "effects-KEY/parts is a file", which is not there."""
    import os
    import shutil

    X, wd = _without_effects(small_continuous, tmp_path)
    effects(wd, X, pairs=[("a", "c")])
    (folder,) = wd.glob("effects-*")
    if damage == "file folder":
        shutil.rmtree(folder)
        folder.write_text("mine\n")
        where, what = folder, "is a file where a folder of the tasks' parts belongs; remove it"
    else:
        where = folder / "journal.jsonl"
        where.unlink()
        if damage == "fifo journal":
            os.mkfifo(where)
        else:
            where.mkdir()
        kind = "a FIFO" if damage == "fifo journal" else "a folder"
        what = f"is {kind}, not a file as bigbn writes it; remove it, then run the same command again"
    with pytest.raises(WorkdirError) as got:
        effects(wd, X, pairs=[("a", "c")])
    assert str(got.value).startswith(f"{where} {what}"), str(got.value)
    assert "--fresh" not in str(got.value)


def test_a_pair_twice_in_the_pairs_file_is_one_line(tmp_path):
    """A pairs file with a pair twice was computed twice and effects.csv held its table
    twice, which `bigbn.open` (and so `bigbn report`) then called damaged, advising to run
    `bigbn effects` again, which wrote the same file."""
    from click.testing import CliRunner

    from bigbn.cli.main import main
    from test_cli import assert_one_line_error

    rng = np.random.default_rng(11)
    m = 60
    a = rng.integers(0, 2, m)
    b = (a + rng.integers(0, 3, m)) % 3
    c = (b > 0).astype(int) ^ (rng.random(m) < 0.2)
    data = tmp_path / "d.csv"
    np.savetxt(data, np.c_[a, b, c], delimiter=",", header="a,b,c", comments="", fmt="%d")
    wd = tmp_path / "w"
    assert CliRunner().invoke(main, ["run", str(data), "-w", str(wd), "-q", "-k", "2"]).exit_code == 0
    pairs = tmp_path / "p.csv"
    pairs.write_text("cause,effect\r\na,c\r\nb,c\r\na,c\r\n")
    assert_one_line_error(CliRunner().invoke(main, ["effects", "-w", str(wd), "--pairs", str(pairs)]),
                          "p.csv, line 4: the pair 'a' -> 'c' again (first on line 2); give each pair once")
    assert not (wd / "effects.csv").exists()
    pairs.write_text("cause,effect\na,c\nb,c\nc,a\n")  # the same two the other way round: two pairs
    r = CliRunner().invoke(main, ["effects", "-w", str(wd), "--pairs", str(pairs)])
    assert r.exit_code == 0, r.output
    assert bigbn.open(wd).effects.pairs == [(0, 2), (1, 2), (2, 0)]


@pytest.mark.parametrize("pairs, what", [(["ab"], "a pair is (cause, effect), got 'ab'"),
                                         (("ab", "cd"), "a pair is (cause, effect), got 'ab'"),
                                         ({"a": "b"}, "pairs are a list of (cause, effect) or a CSV path, got dict")])
def test_a_two_letter_string_is_not_a_pair(small_continuous, pairs, what):
    """pairs=["ab"] unpacked the string into the pair ('a', 'b') and answered for it; a dict
    gave the effects of its keys' letters."""
    X, wd = small_continuous
    with pytest.raises(OptionError, match=re.escape(what)):
        effects(wd, X, pairs=pairs)


def test_a_part_copied_from_another_effects_folder_is_computed_again(small_continuous, tmp_path):
    """A part and its journal line from another effects-KEY/ folder (the same cause, other
    pairs) pass the CRC check: its one pair's numbers were broadcast to both pairs of the
    cause, a silent wrong answer. A part that is not what its task writes runs again."""
    import shutil

    X, wd = _without_effects(small_continuous, tmp_path)
    one = effects(wd, X, pairs=[("a", "c")])
    (a,) = wd.glob("effects-*")
    both = effects(wd, X, pairs=[("a", "c"), ("a", "d")])
    (b,) = set(wd.glob("effects-*")) - {a}
    shutil.copy(a / "parts" / "cause-0.npz", b / "parts" / "cause-0.npz")
    shutil.copy(a / "journal.jsonl", b / "journal.jsonl")
    again = effects(wd, X, pairs=[("a", "c"), ("a", "d")])
    assert again.mean[1] != one.mean[0]
    for k in ("mean", "p_zero", "lower", "upper"):
        np.testing.assert_array_equal(getattr(again, k), getattr(both, k))


def test_a_level_of_any_real_type_is_taken(small_continuous):
    """level=np.float32(0.9) was refused: "credible level must be in (0, 1), got
    np.float32(0.9)"; a bool or a number that rounds to 1.0 is still one line."""
    from fractions import Fraction

    X, wd = small_continuous
    ref = effects(wd, X, pairs=[("a", "c")], level=float(np.float32(0.9)))
    got = effects(wd, X, pairs=[("a", "c")], level=np.float32(0.9))
    assert got.level == ref.level and got.lower[0] == ref.lower[0] and got.upper[0] == ref.upper[0]
    for bad in (True, float("nan"), "0.9", Fraction(10**20 - 1, 10**20)):
        with pytest.raises(OptionError, match="credible level must be"):
            effects(wd, X, pairs=[("a", "c")], level=bad)


def test_bge_components_of_wide_masks_are_those_of_int64_masks():
    """A tiered run of n > 62 gives parent sets as Python ints (an object array), which
    bge_effect_components passed to popcounts: OverflowError past bit 62. With the variables
    renamed so that the same sets fit an int64, the numbers are the same."""
    rng = np.random.default_rng(4)
    n = 66
    X = rng.normal(size=(90, n))
    R = posterior_scatter(X, 1.0, 2.0, None)
    perm = np.arange(n)  # 1 <-> 64, 2 <-> 65: the order within each set is kept
    perm[[1, 2, 64, 65]] = [64, 65, 1, 2]
    wide = np.array([0, 1 << 64, (1 << 64) | (1 << 65), (1 << 65) | (1 << 3)], dtype=object)
    narrow = np.array([0, 1 << 1, (1 << 1) | (1 << 2), (1 << 2) | (1 << 3)], dtype=np.int64)
    got = bge_effect_components(R, 3.0, 0, wide)
    want = bge_effect_components(R[np.ix_(perm, perm)], 3.0, 0, narrow)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_allclose(g[:, perm], w, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(got[2], want[2])
    assert np.isnan(got[0][1, 64]) and np.isnan(got[0][2, 65]) and np.isfinite(got[0][1, 65])


@pytest.mark.parametrize("score", ["bge", "bdeu"])
def test_effects_of_a_tiered_run_of_more_than_40_variables(score):
    """effects() read the data again with the engine's limit without tiers (40 variables):
    a tiered run of 64 was "64 variables, but the engine supports at most 40", and past 62
    the parent sets (Python ints) overflowed popcounts."""
    from helpers import wide_tiered_data

    X, names, tiers = wide_tiered_data(score)
    r = bigbn.learn(X, names=names, max_parents=1, tiers=tiers, score=score)
    e = effects(r, X, pairs=[("v0", "v63"), ("v63", "v0")])
    assert e.p_zero[0] == 0.0  # v63 is in a later tier than v0
    if score == "bge":
        assert 0 < e.lower[0] < e.mean[0] < e.upper[0]
    else:
        assert e.table[0][1, 1] > e.table[0][0, 1] and np.allclose(e.table[0].sum(axis=1), 1)


@pytest.mark.parametrize("block", [4096, 7, 1])
def test_bge_components_of_some_effects_are_those_of_all(block, monkeypatch):
    """bge_effect_components solves only for the effects asked for, a block of parent sets at
    a time (all n effects of every set at once took about 1.3 GB a cause at n = 100): each
    asked-for column, one alone included (LAPACK's vector solve differs in the last bits),
    is the all-n solve's to the bit, and x's own column and a parent's are NaN."""
    from bigbn.outputs import effects as eff

    rng = np.random.default_rng(3)
    n, x = 30, 5
    X = rng.normal(size=(200, n)) @ rng.normal(size=(n, n))
    R = posterior_scatter(X, 1.0, 2.0, None)
    others = [j for j in range(n) if j != x]
    masks = np.array([sum(1 << int(j) for j in rng.choice(others, size=rng.integers(0, 4), replace=False))
                      for _ in range(600)], dtype=np.int64)
    loc, scale, df = eff.bge_effect_components(R, 7.0, x, masks)
    monkeypatch.setattr(eff, "_SETS_AT_ONCE", block)
    for ys in ([0], [x], [29, 3, 7], [x, 0]):
        got = eff.bge_effect_components(R, 7.0, x, masks, ys)
        np.testing.assert_array_equal(got[0], loc[:, ys])
        np.testing.assert_array_equal(got[1], scale[:, ys])
        np.testing.assert_array_equal(got[2], df)
        assert np.isfinite(got[0]).any() or ys == [x]
    has3 = (masks >> 3) & 1 == 1
    assert has3.any() and np.isnan(loc[has3, 3]).all() and np.isnan(loc[:, x]).all()


@pytest.mark.parametrize("pairs, what", [([("a", "c"), ("b", "c"), ("a", "c")], "(pair 3, first pair 1)"),
                                         ([(0, "c"), ("a", 2)], "(pair 2, first pair 1)"),
                                         (np.array([[1, 3], [1, 3]]), "(pair 2, first pair 1)")])
def test_a_pair_given_twice_in_python_is_one_line(small_continuous, pairs, what):
    """The pairs file's check of a pair twice (f4bbe32) missed pairs= given as a list: its
    row went twice into effects.csv, which `bigbn.open` then called damaged. A pair named
    twice, by name or by index, is one line naming both places."""
    X, wd = small_continuous
    who = "'b' -> 'd'" if isinstance(pairs, np.ndarray) else "'a' -> 'c'"
    with pytest.raises(OptionError, match=re.escape(f"the pair {who} again {what}; give each pair once")):
        effects(wd, X, pairs=pairs)
    assert effects(wd, X, pairs=[("a", "c"), ("c", "a")]).pairs == [(0, 2), (2, 0)]


def test_a_part_copied_from_another_effects_folder_with_as_many_pairs_is_computed_again(small_continuous,
                                                                                       tmp_path):
    """1419652 checked a part's arrays by their shapes: a part and its journal line copied
    from another effects folder whose cause has as many pairs (a -> c for a -> d) passed,
    and a -> c's effect was given as a -> d's without a word. A part says whose it is (the
    folder's key, the cause and its effects) and runs again when it is another's."""
    import shutil

    X, wd = _without_effects(small_continuous, tmp_path)
    one = effects(wd, X, pairs=[("a", "c")])
    (a,) = wd.glob("effects-*")
    other = effects(wd, X, pairs=[("a", "d")])
    (b,) = set(wd.glob("effects-*")) - {a}
    assert other.mean[0] != one.mean[0]
    shutil.copy(a / "parts" / "cause-0.npz", b / "parts" / "cause-0.npz")
    shutil.copy(a / "journal.jsonl", b / "journal.jsonl")
    again = effects(wd, X, pairs=[("a", "d")])
    for k in ("mean", "p_zero", "lower", "upper"):
        np.testing.assert_array_equal(getattr(again, k), getattr(other, k))
