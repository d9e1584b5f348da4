"""End-to-end tests of `bigbn.learn` (the Python API behind `bigbn run`).

The central claim: on data sets that are not in the repository, ``learn`` on a CSV file
agrees with an independent exact computation to 1e-9 (absolute, posteriors; relative,
log p(x)) for both discrete scores and both structure priors. The reference is built
from pieces that share no code with bigbn's pipeline:

* local scores from pgmpy (``pgmpy.structure_score.BDeu`` / ``K2``), with the data coded
  here, not by bigbn's reader;
* the structure prior written out by hand: log ρ_i(G) = 0 or −log C(n−1, |G|);
* the edge posteriors from ``tests/naive.py`` (sum over all n! orders, or all DAGs).

pgmpy's K2 adds lgamma(r) once per *possible* parent configuration but subtracts
lgamma(N_ij + r) only for the *observed* ones, so it is off by (q − q_observed)·lgamma(r)
whenever a configuration never occurs (zero when r = 2). `pgmpy_beta` removes that term
(counted here independently); `test_pgmpy_k2_quirk_is_real` shows the correction is
needed and exact.
"""

from __future__ import annotations

import csv
import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import bigbn
from bigbn.errors import DataError, OptionError, WorkdirError
from bigbn.kernels.families import family_parent_matrix

from naive import edges_by_dags, edges_by_orders
import helpers as h

pd = pytest.importorskip("pandas")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pgmpy.structure_score import K2, BDeu


# ---------------------------------------------------------------------------- data


def random_codes(seed: int, n: int, m: int, arities, p_copy: float = 0.85) -> np.ndarray:
    """Integer codes (m, n): column j copies a function of earlier columns with prob p_copy
    (strong dependence) for about half of the columns, else is uniform noise; every state
    of every column occurs at least once."""
    rng = np.random.default_rng(seed)
    X = np.empty((m, n), dtype=np.int64)
    for j in range(n):
        r = arities[j]
        noise = rng.integers(0, r, size=m)
        if j > 0 and rng.random() < 0.6:
            ps = rng.choice(j, size=min(j, int(rng.integers(1, 3))), replace=False)
            weights = rng.integers(1, 4, size=ps.size)
            f = (X[:, ps] * weights).sum(axis=1) % r
            copy = rng.random(m) < p_copy
            col = np.where(copy, f, noise)
        else:
            col = noise
        col[:r] = np.arange(r)  # every level occurs (so the arity is what we asked for)
        X[:, j] = col
    return X


LEVELS = {  # how codes are written: strings for some columns, integers for others
    0: ("no", "yes", "maybe"),
    1: ("0", "1", "2"),
    2: ("lo", "mid", "hi"),
}


def write_csv(path, X, names=None) -> list[str]:
    """Write codes as a CSV with a header; column j uses level spelling LEVELS[j % 3]."""
    n = X.shape[1]
    names = names or [f"V{j}" for j in range(n)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for row in X.tolist():
            w.writerow([LEVELS[j % 3][c] for j, c in enumerate(row)])
    return names


def pgmpy_beta(X, names, k, score, ess, prior) -> np.ndarray:
    """Reference beta (n, F): pgmpy local score (K2 corrected, see module doc) + log ρ."""
    n = X.shape[1]
    frame = pd.DataFrame({nm: X[:, j] for j, nm in enumerate(names)})
    states = {nm: sorted(set(X[:, j].tolist())) for j, nm in enumerate(names)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = (BDeu(frame, equivalent_sample_size=ess, state_names=states) if score == "bdeu"
                  else K2(frame, state_names=states))
    P = family_parent_matrix(n, k)
    beta = np.empty(P.shape[:2])
    for i in range(n):
        for f in range(P.shape[1]):
            ps = [int(p) for p in P[i, f] if p >= 0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = scorer.local_score(names[i], tuple(names[p] for p in ps))
            if score == "k2":
                r = len(states[names[i]])
                q = math.prod(len(states[names[p]]) for p in ps)
                q_obs = len({tuple(row) for row in X[:, ps].tolist()}) if ps else 1
                s -= (q - q_obs) * math.lgamma(r)
            rho = 0.0 if prior == "uniform" else -math.log(math.comb(n - 1, len(ps)))
            beta[i, f] = s + rho
    return beta


SCORES = [("bdeu", 1.0), ("bdeu", 5.0), ("k2", None)]
PRIORS = ["uniform", "koivisto-sood"]
# (seed, n, m, arities, k): n = 4..7, arities 2..3, m = 30..300
CASES = [
    (101, 4, 30, [2, 3, 2, 3], 3),
    (102, 5, 80, [3, 2, 3, 2, 2], 2),
    (103, 6, 150, [2, 2, 3, 3, 2, 3], 3),
    (104, 7, 300, [3, 2, 2, 3, 2, 3, 2], 2),
    (105, 5, 45, [3, 3, 3, 3, 3], 4),
]


@pytest.mark.parametrize("seed, n, m, arities, k", CASES)
def test_learn_agrees_with_independent_exact_computation(tmp_path, seed, n, m, arities, k):
    X = random_codes(seed, n, m, arities)
    path = tmp_path / "data.csv"
    names = write_csv(path, X)
    for score, ess in SCORES:
        for prior in PRIORS:
            wd = tmp_path / f"wd-{score}-{ess}-{prior}"
            res = bigbn.learn(path, score=score, ess=ess, structure_prior=prior,
                              max_parents=k, workdir=wd)
            beta = pgmpy_beta(X, names, k, score, ess, prior)
            P_ref, lpx_ref = edges_by_orders(beta, k)
            where = f"{score} ess={ess} {prior}"
            assert res.names == tuple(names)
            assert res.posterior.shape == (n, n)
            np.testing.assert_allclose(res.posterior, P_ref, rtol=0, atol=1e-9, err_msg=where)
            assert res.log_marginal == pytest.approx(lpx_ref, rel=1e-9, abs=0), where
            if n <= 5:  # a third route: all DAGs
                P_dag, lpx_dag = edges_by_dags(beta, k)
                np.testing.assert_allclose(res.posterior, P_dag, rtol=0, atol=1e-9, err_msg=where)
                assert res.log_marginal == pytest.approx(lpx_dag, rel=1e-9, abs=0), where
            # The data really is informative: not every posterior is the prior's.
            assert np.ptp(res.posterior[~np.eye(n, dtype=bool)]) > 0.1


def test_pgmpy_k2_quirk_is_real(tmp_path):
    # Ternary child, parents with unobserved configurations: raw pgmpy K2 differs from
    # bigbn by exactly (q - q_obs) lgamma(3); the corrected reference matches.
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(12, 4))
    X[:3, :] = np.arange(3)[:, None]
    names = write_csv(tmp_path / "d.csv", X)
    res_beta = bigbn.api.score_families(bigbn.api.load_dataset(tmp_path / "d.csv", score="k2")[0],
                                        "k2", 2, structure_prior="uniform")
    frame = pd.DataFrame({nm: X[:, j] for j, nm in enumerate(names)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = K2(frame, state_names={nm: [0, 1, 2] for nm in names})
        P = family_parent_matrix(4, 2)
        f = next(f for f in range(P.shape[1]) if list(P[0, f]) == [1, 2])
        q_obs = len({tuple(r) for r in X[:, [1, 2]].tolist()})
        assert q_obs < 9
        gap = raw.local_score(names[0], (names[1], names[2])) - res_beta[0, f]
    assert gap == pytest.approx((9 - q_obs) * math.lgamma(3), rel=1e-10)
    corrected = pgmpy_beta(X, names, 2, "k2", 1.0, "uniform")
    np.testing.assert_allclose(res_beta, corrected, rtol=1e-12, atol=1e-9)


# ---------------------------------------------------------------------------- outputs


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("small")
    X = random_codes(7, 5, 120, [2, 3, 2, 2, 3])
    names = ["alpha", "beta,comma", "gamma", 'delta"q', "eps"]
    write_csv(tmp / "d.csv", X, names)
    res = bigbn.learn(tmp / "d.csv", score="bdeu", ess=2.0, structure_prior="uniform",
                      max_parents=2, workdir=tmp / "wd")
    return tmp, names, res


def test_result_edges_ordering(small_run):
    _, names, res = small_run
    edges = res.edges()
    n = len(names)
    assert len(edges) == n * (n - 1)
    probs = [p for _, _, p in edges]
    assert probs == sorted(probs, reverse=True)
    assert {(a, b) for a, b, _ in edges} == {(a, b) for a in names for b in names if a != b}
    idx = {nm: j for j, nm in enumerate(names)}
    for a, b, p in edges:
        assert p == res.posterior[idx[a], idx[b]]


def test_edges_csv(small_run):
    tmp, names, res = small_run
    with open(tmp / "wd" / "edges.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["parent", "child", "posterior"]
    body = rows[1:]
    n = len(names)
    assert len(body) == n * (n - 1)
    idx = {nm: j for j, nm in enumerate(names)}
    seen = set()
    for parent, child, p in body:
        assert parent in idx and child in idx and parent != child  # quoted names survive
        seen.add((parent, child))
        assert float(p) == res.posterior[idx[parent], idx[child]]  # %.17g round-trips
    assert len(seen) == n * (n - 1)


def test_summary_json(small_run):
    tmp, names, res = small_run
    s = json.loads((tmp / "wd" / "summary.json").read_text())
    assert s["log_marginal_likelihood"] == res.log_marginal
    assert s["n"] == 5 and s["m"] == 120
    opts = s["options"]
    assert opts["max_parents"] == 2
    assert opts["score"] == "bdeu"
    assert opts["structure_prior"] == "uniform"
    assert opts["ess"] == 2.0
    stages = s["stages"]
    for stage in ("scores", "forward", "backward", "gamma", "edges"):
        assert stage in stages, stage
        assert stages[stage]["tasks"] >= 1
        assert stages[stage]["wall_seconds"] >= 0 and stages[stage]["task_seconds"] >= 0
    assert isinstance(s["peak_rss_bytes"], int) and s["peak_rss_bytes"] > 10 * 2**20
    assert s["names"] == names
    assert res.summary == s


def test_max_parents_is_capped_at_n_minus_1(tmp_path):
    X = random_codes(8, 4, 60, [2, 2, 2, 2])
    write_csv(tmp_path / "d.csv", X)
    a = bigbn.learn(tmp_path / "d.csv", max_parents=3, workdir=tmp_path / "a")
    b = bigbn.learn(tmp_path / "d.csv", max_parents=10)  # temporary workdir
    assert b.summary["options"]["max_parents"] == 3
    np.testing.assert_array_equal(a.posterior, b.posterior)
    assert a.log_marginal == b.log_marginal


# ---------------------------------------------------------------------------- numerics


def chain_codes(seed, n, m, r, p_copy):
    """X0 uniform; X_j = X_{j-1} with prob p_copy, else uniform on 0..r-1."""
    rng = np.random.default_rng(seed)
    X = np.empty((m, n), dtype=np.int64)
    X[:, 0] = rng.integers(0, r, size=m)
    for j in range(1, n):
        copy = rng.random(m) < p_copy
        X[:, j] = np.where(copy, X[:, j - 1], rng.integers(0, r, size=m))
    return X


@pytest.mark.parametrize("score", ["bdeu", "k2"])
def test_strong_signal_large_m(tmp_path, score):
    # m = 10 000, r = 4, n = 10, a chain with 95% copy probability: log p(x) is about
    # -1e5 and most families are astronomically unlikely; nothing may overflow.
    n, m, r = 10, 10_000, 4
    X = chain_codes(3, n, m, r, 0.95)
    np.savetxt(tmp_path / "chain.csv", X, fmt="%d", delimiter=",",
               header=",".join(f"C{j}" for j in range(n)), comments="")
    res = bigbn.learn(tmp_path / "chain.csv", score=score, max_parents=3, workdir=tmp_path / "wd")
    P = res.posterior
    assert np.isfinite(P).all()
    assert (P >= 0).all() and (P <= 1 + 1e-12).all()
    assert np.all(np.diag(P) == 0)
    assert math.isfinite(res.log_marginal) and res.log_marginal < -1e4
    und = P + P.T
    for j in range(n - 1):
        assert und[j, j + 1] > 0.9, (j, und[j, j + 1])
    # Non-adjacent pairs of the chain are conditionally independent given the ones between.
    far = [und[a, b] for a in range(n) for b in range(a + 2, n)]
    assert max(far) < 0.5


def test_continuous_data_auto_is_bge(tmp_path):
    rng = np.random.default_rng(11)
    m = 200
    a = rng.normal(size=m)
    b = 0.9 * a + 0.3 * rng.normal(size=m)
    c = rng.normal(size=m)
    d = 0.7 * b - 0.5 * c + 0.3 * rng.normal(size=m)
    X = np.column_stack([a, b, c, d])
    np.savetxt(tmp_path / "cont.csv", X, fmt="%.6f", delimiter=",", header="a,b,c,d",
               comments="")
    res = bigbn.learn(tmp_path / "cont.csv", max_parents=2, workdir=tmp_path / "wd")
    assert res.summary["options"]["score"] == "bge"
    P = res.posterior
    assert np.isfinite(P).all() and (P >= 0).all() and (P <= 1 + 1e-12).all()
    assert math.isfinite(res.log_marginal)
    assert P[0, 1] + P[1, 0] > 0.9  # a - b: strong
    # The same data as an in-memory float array gives the same numbers.
    res2 = bigbn.learn(np.loadtxt(tmp_path / "cont.csv", delimiter=",", skiprows=1),
                       names=["a", "b", "c", "d"], max_parents=2)
    np.testing.assert_allclose(res2.posterior, P, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------- workdir


def test_rerun_same_workdir_resumes_and_other_options_are_refused(tmp_path):
    X = random_codes(21, 6, 100, [2, 3, 2, 3, 2, 2])
    write_csv(tmp_path / "d.csv", X)
    wd = tmp_path / "wd"
    first = bigbn.learn(tmp_path / "d.csv", max_parents=2, score="bdeu", workdir=wd)
    journal = (wd / "journal.jsonl").read_text()
    again = bigbn.learn(tmp_path / "d.csv", max_parents=2, score="bdeu", workdir=wd)
    np.testing.assert_array_equal(again.posterior, first.posterior)
    assert again.log_marginal == first.log_marginal
    assert (wd / "journal.jsonl").read_text() == journal  # nothing was recomputed

    with pytest.raises(WorkdirError, match="max_parents"):
        bigbn.learn(tmp_path / "d.csv", max_parents=3, score="bdeu", workdir=wd)
    with pytest.raises(WorkdirError, match="score"):
        bigbn.learn(tmp_path / "d.csv", max_parents=2, score="k2", workdir=wd)
    with pytest.raises(WorkdirError, match="structure_prior"):
        bigbn.learn(tmp_path / "d.csv", max_parents=2, structure_prior="uniform", workdir=wd)
    with pytest.raises(WorkdirError, match="ess"):
        bigbn.learn(tmp_path / "d.csv", max_parents=2, ess=3.0, workdir=wd)
    # A refused run leaves the workdir intact: the original still resumes.
    still = bigbn.learn(tmp_path / "d.csv", max_parents=2, score="bdeu", workdir=wd)
    np.testing.assert_array_equal(still.posterior, first.posterior)
    # fresh=True starts over with the new options.
    other = bigbn.learn(tmp_path / "d.csv", max_parents=2, score="k2", workdir=wd, fresh=True)
    assert other.summary["options"]["score"] == "k2"
    assert not np.array_equal(other.posterior, first.posterior)


def test_bad_options_raise_option_error(tmp_path):
    X = random_codes(22, 4, 50, [2, 2, 2, 2])
    write_csv(tmp_path / "d.csv", X)
    with pytest.raises(OptionError, match="max parents"):
        bigbn.learn(tmp_path / "d.csv", max_parents=-1)
    with pytest.raises(OptionError, match="unknown score"):
        bigbn.learn(tmp_path / "d.csv", score="bic")
    with pytest.raises(OptionError, match="structure prior"):
        bigbn.learn(tmp_path / "d.csv", structure_prior="flat")
    with pytest.raises(DataError, match=r"row 2, column 'V0'.*not a finite number"):
        bigbn.learn(tmp_path / "d.csv", score="bge")  # V0 is no/yes/maybe


def test_fresh_in_the_same_process_with_other_shapes(tmp_path):
    X = random_codes(31, 5, 80, [2, 2, 3, 2, 2])
    write_csv(tmp_path / "d.csv", X)
    wd = tmp_path / "wd"
    bigbn.learn(tmp_path / "d.csv", max_parents=1, workdir=wd)
    res = bigbn.learn(tmp_path / "d.csv", max_parents=3, workdir=wd, fresh=True)
    ref = bigbn.learn(tmp_path / "d.csv", max_parents=3)
    np.testing.assert_array_equal(res.posterior, ref.posterior)


def test_forbidden_edges_are_exactly_zero_and_required_exactly_one(tmp_path):
    import naive
    from bigbn.api import load_dataset, score_families

    rng = np.random.default_rng(4)
    x = rng.integers(0, 2, size=(80, 5))
    x[:, 2] = x[:, 1] ^ (rng.random(80) < 0.1)
    path = tmp_path / "c.csv"
    np.savetxt(path, x, fmt="%d", delimiter=",", header="A,B,C,D,E", comments="")
    kw = {"forbid": [(1, 2), (0, 3)], "require": [(3, 4), (0, 1)]}
    res = bigbn.learn(path, max_parents=2, prior_kwargs=kw, workdir=tmp_path / "w")
    assert res.posterior[1, 2] == 0.0 and res.posterior[0, 3] == 0.0
    assert res.posterior[3, 4] == 1.0 and res.posterior[0, 1] == 1.0
    assert res.posterior[4, 3] == 0.0  # the reverse of a required edge would make a cycle
    ds, score, _ = load_dataset(path)
    beta = score_families(ds, score, 2, prior_kwargs=kw)
    P0, l0 = naive.edges_by_orders(beta, 2)
    np.testing.assert_allclose(res.posterior, P0, atol=1e-9)
    assert res.log_marginal == pytest.approx(l0, rel=1e-12)


@pytest.mark.parametrize("prior", ["uniform", "koivisto-sood"])
def test_edge_probabilities_and_per_node_limits_against_brute_force(tmp_path, prior):
    """Per-edge prior probabilities (ρ factorises over parents) and per-node max parents
    through the whole pipeline, against the all-orders and all-DAGs references."""
    import naive
    from bigbn.kernels.families import family_masks, unsqueeze
    from bigbn.scores.discrete import local_scores

    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, size=(60, 5))
    x[:, 3] = (x[:, 0] + x[:, 2]) % 3
    path = tmp_path / "e.csv"
    np.savetxt(path, x, fmt="%d", delimiter=",", header="A,B,C,D,E", comments="")
    edge_prob = np.full((5, 5), np.nan)
    edge_prob[0, 3], edge_prob[4, 1], edge_prob[2, 4] = 0.9, 0.2, 0.05
    limits = np.array([3, 1, 3, 2, 0])
    kw = {"edge_prob": edge_prob, "max_parents": limits}
    res = bigbn.learn(path, max_parents=3, structure_prior=prior, prior_kwargs=kw,
                      workdir=tmp_path / "w", score="k2")
    # Independent beta: K2 scores plus the prior written out from its definition.
    ds, _, _ = bigbn.api.load_dataset(path)
    masks = family_masks(4, 3)
    beta = local_scores(ds, 3, "k2")
    for i in range(5):
        for f, m in enumerate(masks.tolist()):
            parents = [j for j in range(5) if unsqueeze(m, i) >> j & 1]
            if len(parents) > limits[i]:
                beta[i, f] = -np.inf
                continue
            if prior == "koivisto-sood":
                beta[i, f] -= np.log(math.comb(4, len(parents)))
            for u in range(5):
                p = edge_prob[u, i]
                if u != i and not np.isnan(p):
                    beta[i, f] += np.log(p if u in parents else 1 - p)
    P0, l0 = naive.edges_by_orders(beta, 3)
    P1, _ = naive.edges_by_dags(beta, 3)
    np.testing.assert_allclose(res.posterior, P0, atol=1e-9)
    np.testing.assert_allclose(res.posterior, P1, atol=1e-9)
    assert res.log_marginal == pytest.approx(l0, rel=1e-12)
    assert np.all(res.posterior[:, 4] == 0.0)  # node E may have no parents
    assert res.posterior[:, 1].sum() <= 1 + 1e-12  # node B has at most one parent


def test_dataset_fingerprint_includes_arities(tmp_path):
    """Review finding: the same codes declared with other arities score differently and
    must not resume each other's workdir."""
    from bigbn.io.data import Dataset
    from bigbn.errors import WorkdirError

    rng = np.random.default_rng(1)
    codes = rng.integers(0, 2, size=(40, 4))
    levels2 = (("0", "1"),) * 4
    levels3 = (("0", "1", "2"),) * 4
    ds2 = Dataset(("a", "b", "c", "d"), codes, [2] * 4, levels2)
    ds3 = Dataset(("a", "b", "c", "d"), codes, [3] * 4, levels3)
    bigbn.learn(ds2, workdir=tmp_path / "w", max_parents=2)
    with pytest.raises(WorkdirError, match="the data differ"):
        bigbn.learn(ds3, workdir=tmp_path / "w", max_parents=2)
    a = bigbn.learn(ds3, workdir=tmp_path / "w", max_parents=2, fresh=True)
    b = bigbn.learn(ds3, max_parents=2)
    assert a.log_marginal == b.log_marginal


def test_non_finite_scores_are_a_data_error_before_any_work(tmp_path):
    from bigbn.errors import DataError

    x = np.random.default_rng(0).normal(size=(50, 3))
    x[3, 1] = 1e300  # finite, but its square is not
    path = tmp_path / "big.csv"
    np.savetxt(path, x, delimiter=",", header="a,b,c", comments="", fmt="%.6g")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(DataError, match="column 'b': values too large for float64"):
            bigbn.learn(path, score="bge", workdir=tmp_path / "w")
    assert not (tmp_path / "w" / "run.json").exists()


def test_relative_workdir_is_stored_absolute(tmp_path, monkeypatch):
    """Review finding: cluster workers resolve relative paths in their own directory, so
    the work directory the tasks get (and pickle to workers) must be absolute."""
    import bigbn.engine.runner

    seen = []
    real = bigbn.engine.runner.execute
    monkeypatch.setattr(bigbn.engine.runner, "execute",
                        lambda jobs, **kw: (seen.extend(j.workdir for j in jobs), real(jobs, **kw)))
    monkeypatch.chdir(tmp_path)
    res = bigbn.learn(Path(__file__).resolve().parents[1] / "examples" / "asia.csv", workdir="rel", max_parents=1)
    assert (tmp_path / "rel" / "edges.csv").exists()
    assert np.all(np.isfinite(res.posterior))
    [wd] = seen
    assert wd.root.is_absolute() and wd.root == tmp_path.resolve() / "rel"


def test_no_module_level_state_grows_with_runs(tmp_path):
    """A study calls learn() thousands of times: no module-level container of the package
    (cache, registry) may grow with them; state lives in objects whose lifetime is a run."""
    import sys

    asia = Path(__file__).resolve().parents[1] / "examples" / "asia.csv"
    bigbn.learn(asia, workdir=tmp_path / "w0", max_parents=1, scheduler="sync")

    def sizes():
        out = {}
        for name, mod in list(sys.modules.items()):
            if name == "bigbn" or name.startswith("bigbn."):
                for attr, val in vars(mod).items():
                    if isinstance(val, (dict, list, set)) and not attr.startswith("__"):
                        out[name, attr] = len(val)
        return out

    before = sizes()
    for i, scheduler in enumerate(["sync", "threads", "threads"]):
        bigbn.learn(asia, workdir=tmp_path / f"w{i + 1}", max_parents=1, scheduler=scheduler, workers=2)
    after = sizes()
    assert before and {k: v for k, v in after.items() if before.get(k) != v} == {}


def test_progress_reports_the_scores_stage_first(tmp_path):
    events = []
    bigbn.learn(Path(__file__).resolve().parents[1] / "examples" / "asia.csv", max_parents=1,
                progress=lambda *e: events.append(e))
    assert events[:2] == [("scores", 0, 1), ("scores", 1, 1)]
    assert ("edges", 1, 1) in events


def test_one_progress_protocol_a_listener_or_a_callable(tmp_path):
    """One event protocol (`bigbn.engine.progress`): a Listener gets every stage's ProgressEvent
    and the executors' task events; a callable(stage, done, total) is its documented
    adapter and gets the same events' fields; anything else is refused at once."""
    from bigbn.engine.progress import Listener, ProgressEvent

    class Seen(Listener):
        def __init__(self):
            self.events, self.started, self.ended = [], [], []

        def on_progress(self, event):
            self.events.append(event)

        def on_task_start(self, event):
            self.started.append(event.key)

        def on_task_end(self, event):
            self.ended.append(event.key)

    asia = Path(__file__).resolve().parents[1] / "examples" / "asia.csv"
    seen, calls = Seen(), []
    kw = dict(max_parents=1, chunk_bits=3, scheduler="sync")
    bigbn.learn(asia, workdir=tmp_path / "a", progress=seen, **kw)
    bigbn.learn(asia, workdir=tmp_path / "b", progress=lambda *e: calls.append(e), **kw)
    assert [(e.stage, e.done, e.total) for e in seen.events] == calls
    assert seen.events[:2] == [ProgressEvent("scores", 0, 1), ProgressEvent("scores", 1, 1)]
    assert seen.started == seen.ended and ("edges",) in seen.ended and len(seen.ended) > 8
    with pytest.raises(OptionError, match="progress must be a callable"):
        bigbn.learn(asia, workdir=tmp_path / "c", progress=3, **kw)
    assert not (tmp_path / "c").exists()


def test_progress_reports_a_stage_when_its_first_task_starts(tmp_path):
    """Review finding: every stage was reported as 0/N before the first task of the run
    finished. The edges task reads every γ part, so it starts after the gamma stage ended;
    a stage is reported first (at 0) when its first task starts, and once at 0 only."""
    events = []
    bigbn.learn(Path(__file__).resolve().parents[1] / "examples" / "asia.csv", max_parents=1,
                chunk_bits=5, workdir=tmp_path / "w", progress=lambda *e: events.append(e))
    first = {}
    for i, (stage, done, total) in enumerate(events):
        first.setdefault(stage, i)
    gamma_end = max(i for i, (s, d, t) in enumerate(events) if s == "gamma" and d == t)
    assert first["edges"] > gamma_end
    assert [e for e in events if e[1] == 0] == [(s, 0, t) for s, t in {e[0]: e[2] for e in events}.items()]


@pytest.mark.parametrize("kwargs,needle", [
    ({"max_parents": None}, "max parents must be an integer"),
    ({"max_parents": "2"}, "max parents must be an integer"),
    ({"ess": "big"}, "ess (equivalent sample size) must be a positive number, got 'big'"),
    ({"ess": [1]}, "ess (equivalent sample size) must be a positive number, got [1]"),
    ({"alpha_mu": [1]}, "alpha_mu is a parameter of the bge score"),
    ({"score_options": {"ess": True}}, "ess (equivalent sample size) must be a positive number"),
    ({"workers": "2"}, "workers must be an integer"),
    ({"workers": 0}, "workers must be ≥ 1"),
    ({"workers": 10**20}, "workers must be at most 1,048,576"),  # was numpy's "too large to convert to C long"
    ({"memory": -1}, "memory budget must be positive"),
    ({"memory": "lots"}, "cannot read size"),
    ({"chunk_bits": 2.5}, "chunk bits must be an integer"),
    ({"scheduler": None}, "scheduler"),
    # any non-text was taken as a dask Client until the engine met it, past the workdir's tables
    ({"scheduler": 5}, "or a dask.distributed Client, got 5 (int)"),
    ({"scheduler": ["sync"]}, "Client, got ['sync'] (list)"),
    ({"scheduler": True}, "Client, got True (bool)"),
    ({"parent_set_mass": "all"}, "parent-set mass must be a number"),
    ({"workdir": 3}, "workdir must be a path"),
    ({"map_dag": "yes"}, "map_dag must be True or False"),
    ({"check_disk": "no"}, "check_disk must be True or False"),  # was taken as True
    ({"prior_kwargs": [("forbid", 1)]}, "prior_kwargs must be a dict"),
    ({"prior_kwargs": {"forbid": 3}}, "list of (parent, child) index pairs"),
    ({"prior_kwargs": {"forbd": []}}, "unknown key 'forbd'"),
    # an int beyond float64 (float() raises OverflowError, which was a traceback)
    ({"ess": 10**400}, "ess (equivalent sample size) must be finite, got a number of 401 digits"),
    ({"score_options": {"ess": -10**400}}, "must be finite, got a number of 401 digits"),
    ({"parent_set_mass": 10**400}, "parent-set mass must be finite, got a number of 401 digits"),
    # past 4300 digits str() of an int is itself a ValueError (a review finding)
    ({"ess": 10**5000}, "ess (equivalent sample size) must be finite, got a number of 5001 digits"),
    ({"memory": "9" * 5000}, "cannot read size"),
])
def test_wrong_argument_types_are_option_errors(kwargs, needle, tmp_path):
    """Review finding: learn(max_parents=None), ess="big" and the like raised TypeError or
    ValueError from deep inside; every argument goes through bigbn/options.py."""
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    with pytest.raises(OptionError, match=re.escape(needle)):
        bigbn.learn(X, **{"workdir": tmp_path / "w", **kwargs})
    assert not (tmp_path / "w").exists()  # refused before any work


@pytest.mark.parametrize("frame", ["empty", "no rows", "one column"])
def test_degenerate_data_frames_are_data_errors(frame):
    pd = pytest.importorskip("pandas")
    df = {"empty": pd.DataFrame(), "no rows": pd.DataFrame({"a": [], "b": []}),
          "one column": pd.DataFrame({"a": [0, 1]})}[frame]
    with pytest.raises(DataError, match="at least"):
        bigbn.learn(df)


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

# 8. the Python API raises bigbn's own errors, never a raw exception
@pytest.mark.parametrize("data,kw", [
    (None, {}), (123, {}), ({"a": [1]}, {}), ([[1, 2], [3]], {}), (np.zeros(5), {}),
    (np.zeros((0, 3)), {}), (np.array([["a", "b"], ["c", None]], dtype=object), {}),
    (np.ones((4, 2)) * 1j, {}),
    (np.array([[1, 2], [2, 1]]), {"names": ["a"]}), (np.array([[1, 2], [2, 1]]), {"names": ["a", "a"]}),
    (h.ROOT / "examples", {}), (h.ROOT / "nope.csv", {}),
])
def test_no_raw_exception_from_learn(data, kw):
    with pytest.raises(bigbn.errors.BigBNError):
        bigbn.learn(data, **kw)


def test_string_arrays_are_discrete_data():
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"], ["b", "x"]] * 5)
    res = bigbn.learn(X, names=["u", "v"], max_parents=1)
    assert res.summary["options"]["score"] == "bdeu" and res.names == ("u", "v")


# ------------------------------------------------------------ hostile inputs, round 4 (issue #37)

def test_a_separator_that_is_not_text_is_an_option_error():
    """learn(path, sep=1) raised TypeError (the length of an int)."""
    with pytest.raises(OptionError, match=re.escape("separator 1: give one character (',', ';', tab)")):
        bigbn.learn(h.ROOT / "examples" / "asia.csv", sep=1, max_parents=1)


def test_a_separator_for_data_that_are_no_file_is_refused_not_ignored():
    """learn(array or DataFrame, sep=";") ignored sep=, silently."""
    pd = pytest.importorskip("pandas")
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]] * 3)
    for data, what in ((X, "ndarray"), (pd.DataFrame(X, columns=["a", "b"]), "DataFrame")):
        with pytest.raises(OptionError, match=f"sep= is the separator of a CSV data file; the data here are a {what}"):
            bigbn.learn(data, sep=";", max_parents=1)


@pytest.mark.parametrize("scores", [123, ["a.jkl"], b"a.jkl"])
def test_scores_must_be_a_path_or_a_score_file(scores):
    """learn(scores=123) raised TypeError from the .jkl reader."""
    with pytest.raises(OptionError, match=r"^scores must be a \.jkl file \(a path\) or a bigbn\.scores\.jkl\.ScoreFile, got "):
        bigbn.learn(scores=scores)


def test_masked_cells_of_a_masked_array_are_missing_values():
    """The mask of np.ma.array was ignored (masked cells were used as data); a masked cell
    is refused as a missing one is, and a mask with nothing masked changes nothing."""
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]] * 3)
    mask = np.zeros(X.shape, dtype=bool)
    mask[2, 1] = True
    with pytest.raises(DataError, match=re.escape("data array, row index 2, column 'b': masked value "
                                                  "(bigbn needs complete data)")):
        bigbn.learn(np.ma.array(X, mask=mask), names=["a", "b"], max_parents=1)
    same = bigbn.learn(np.ma.array(X, mask=np.zeros(X.shape, dtype=bool)), max_parents=1)
    np.testing.assert_array_equal(same.posterior, bigbn.learn(X, max_parents=1).posterior)


def test_names_are_refused_for_data_that_carry_their_own():
    """learn(df, names=[...]) silently ignored names=. A DataFrame, a CSV file and a Dataset
    carry their names: other names are refused (a Dataset's own names are accepted)."""
    pd = pytest.importorskip("pandas")
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]] * 3)
    with pytest.raises(OptionError, match=r"^a DataFrame carries its column names; drop names= or "
                                          r"rename the columns$"):
        bigbn.learn(pd.DataFrame(X, columns=["a", "b"]), names=["p", "q"], max_parents=1)
    asia = h.ROOT / "examples" / "asia.csv"
    with pytest.raises(OptionError, match=re.escape(f"{asia}: a CSV file carries its column names in its "
                                                    "header; drop names= or edit the header")):
        bigbn.learn(asia, names=list("abcdefgh"), max_parents=1)
    from bigbn.api import load_dataset

    ds, _, _ = load_dataset(X, names=["a", "b"])
    with pytest.raises(OptionError, match="a Dataset carries its names"):
        bigbn.learn(ds, names=["p", "q"], max_parents=1)
    assert bigbn.learn(ds, names=["a", "b"], max_parents=1).names == ("a", "b")


# ------------------------------------------------------------ errors in a Python caller's words (#42)

def test_python_callers_are_not_told_cli_flags(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, (60, 3))
    b = rng.integers(0, 2, (60, 3))
    bigbn.learn(a, max_parents=1, workdir=tmp_path / "w")
    with pytest.raises(WorkdirError) as e:  # other data on the workdir
        bigbn.learn(b, max_parents=1, workdir=tmp_path / "w")
    assert "use fresh=True to start over or another workdir=" in str(e.value) and "--" not in str(e.value)
    res = h.cli("run", h.ASIA, "-w", tmp_path / "w", "-q")  # the command line keeps its flags
    assert "use --fresh" in res.output
    ids = tmp_path / "ids.csv"
    ids.write_text("id,x\n" + "".join(f"r{i},{i % 2}\n" for i in range(20)))
    with pytest.raises(DataError, match='or use score="bge" for continuous data'):
        bigbn.learn(ids)
    assert "use --score bge" in h.cli("run", ids, "-w", tmp_path / "v", "-q").output
    with pytest.raises(WorkdirError, match=r"no finished run here .*call learn\(\.\.\., workdir=\.\.\.\) first"):
        bigbn.sample(tmp_path / "nothing")


def test_every_run_flag_has_a_python_spelling():
    from bigbn.cli.main import run
    from bigbn.options import python_spelling

    flags = [o for p in run.params for o in p.opts if o.startswith("--")]
    assert len(flags) > 20
    for flag in flags:
        said = python_spelling(f"use {flag} or {flag} 8 (see `bigbn plan {flag}`)")
        assert said.count("--") == 1 and f"`bigbn plan {flag}`" in said, said  # a quoted command stays
    assert python_spelling("was started with --chunk-bits 8; resume with the same value or use --fresh") == \
        "was started with chunk_bits=8; resume with the same value or use fresh=True"
    assert python_spelling("started with --alpha store") == 'started with alpha_mode="store"'
    assert python_spelling("run the same `bigbn run` command again to finish it, then sample") == \
        "call learn again with the same arguments to finish it, then sample"


@pytest.mark.parametrize("names, needle", [
    (5, "names must be a list of column names, got int"),  # was TypeError: not iterable
    ("abc", "names must be a list of column names, got the text 'abc'"),  # was a, b, c
    (["a", None, "c"], "names: column 2's name is None"),  # was "None"
    ([["a"], "b", "c"], "names: column 1's name is ['a']"),  # was "['a']"
])
def test_names_must_be_a_list_of_names(names, needle):
    X = np.array([[0, 1, 0], [1, 0, 1], [1, 1, 0], [0, 0, 1]] * 3)
    with pytest.raises(OptionError, match=re.escape(needle)):
        bigbn.learn(X, names=names, max_parents=1)


def test_names_may_be_any_iterable_of_names():
    X = np.array([[0, 1, 0], [1, 0, 1], [1, 1, 0], [0, 0, 1]] * 3)
    assert bigbn.learn(X, names=(x for x in "abc"), max_parents=1).names == ("a", "b", "c")
    assert bigbn.learn(X, names=np.array([1, 2, 3]), max_parents=1).names == ("1", "2", "3")


@pytest.mark.parametrize("cells", ["list", "void"])
def test_an_array_whose_cells_are_not_values_is_a_data_error(cells):
    """A list inside an object array, or a void dtype: numpy's "setting an array element
    with a sequence" ValueError reached the caller."""
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]] * 3)
    if cells == "list":
        X = X.astype(object)
        X[0, 0] = [1]
    else:
        X = np.zeros((6, 2), dtype="V4")
    message = r"row index 0, column 'X1': the cell holds \[1\] \(type list\), not one value" if cells == "list" \
        else "cells that are not values"
    with pytest.raises(DataError, match=message):
        bigbn.learn(X, max_parents=1)


def test_open_of_an_empty_name_is_refused_not_the_current_folder():
    """bigbn.open("") opened the current folder (an unset variable's value), as learn's
    workdir="" is refused."""
    with pytest.raises(OptionError, match="empty work directory name"):
        bigbn.open("")


@pytest.mark.parametrize("kwargs", [{"workdir": "w\0x"}, {"data": "d\0.csv"}, {"data": None, "scores": "s\0.jkl"}])
def test_a_path_with_a_nul_character_is_an_option_error(kwargs):
    """A NUL in a path was os's "embedded null byte" ValueError traceback."""
    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]] * 3)
    kwargs = {"data": X, **kwargs}
    with pytest.raises(OptionError, match="a path cannot hold a NUL character"):
        bigbn.learn(kwargs.pop("data"), max_parents=1, **kwargs)
    with pytest.raises(OptionError, match="a path cannot hold a NUL character"):
        bigbn.open("w\0x")
