"""The score interface (bigbn.scores.base): one validation for the API and the CLI, and a score
defined outside bigbn running through the whole engine."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
from bigbn.options import python_spelling
import naive
from bigbn.scores import base as scoring
from bigbn.cli.main import main
from bigbn.errors import BigBNError, OptionError
from bigbn.kernels.families import family_masks, unsqueeze


def _discrete(tmp_path):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, 60)
    b = a ^ (rng.random(60) < 0.2)
    c = rng.integers(0, 3, 60)
    d = (b + c) % 2
    X = np.c_[a, b, c, d]
    path = tmp_path / "d.csv"
    np.savetxt(path, X, fmt="%d", delimiter=",", header="a,b,c,d", comments="")
    return path


def _continuous(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(80, 4))
    X[:, 1] += X[:, 0]
    X[:, 3] += X[:, 1] - X[:, 2]
    path = tmp_path / "c.csv"
    np.savetxt(path, X, fmt="%.10f", delimiter=",", header="a,b,c,d", comments="")
    return path


def _mixed(tmp_path):
    rng = np.random.default_rng(7)
    g = rng.choice(["lo", "hi"], 80)
    x = rng.normal(size=80) + 0.4 * (g == "hi")
    y = 0.3 * x + rng.normal(size=80)
    h = np.where(rng.random(80) < 0.3, g, rng.choice(["lo", "hi"], 80))
    path = tmp_path / "m.csv"
    path.write_text("g,x,y,h\n" + "".join(f"{a},{b:.10f},{c:.10f},{d}\n" for a, b, c, d in zip(g, x, y, h)))
    return path


def _data(tmp_path, score):
    kind = scoring.BUILTIN[score].data_kind
    return {"continuous": _continuous, "mixed": _mixed}.get(kind, _discrete)(tmp_path)


# every option of every built-in score, each value legal for some score and some not
VALUES = {"valid": 7.5, "zero": 0.0, "negative": -2.0, "nan": math.nan, "huge": 1e16}
CASES = [(s, o.name, v) for s in scoring.BUILTIN for o in scoring.all_options() for v in VALUES]


@pytest.mark.parametrize("score, option, value", CASES)
def test_cli_and_api_validate_score_options_identically(tmp_path, score, option, value):
    data = _data(tmp_path, score)
    x = VALUES[value]
    api_error = None
    try:
        res = bigbn.learn(data, score=score, max_parents=2, workdir=tmp_path / "api", **{option: x})
    except BigBNError as e:
        api_error = str(e)
    flag = "--" + option.replace("_", "-")
    r = CliRunner().invoke(main, ["run", str(data), "-w", str(tmp_path / "cli"), "-q", "-k", "2",
                                  "--score", score, flag, repr(x)])
    takes = any(o.name == option for o in scoring.BUILTIN[score].options)
    if not takes or value != "valid":
        assert api_error is not None, (score, option, value)
        # the same check, said in each caller's words (the CLI's flags, Python's keywords)
        assert r.exit_code == 1 and r.stderr.startswith("Error: ")
        assert python_spelling(r.stderr.strip()[len("Error: "):]) == api_error
        assert not (tmp_path / "api").exists() and not (tmp_path / "cli").exists()
        assert (option in api_error) and (takes or "is a parameter of the" in api_error)
        return
    assert api_error is None and r.exit_code == 0, (api_error, r.output)
    summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert summary["options"][option] == res.summary["options"][option] == x
    edges = np.loadtxt(tmp_path / "cli" / "edges.csv", delimiter=",", skiprows=1, usecols=2)
    assert np.array_equal(edges, [p for _, _, p in sorted(
        res.edges(), key=lambda e: (res.names.index(e[0]), res.names.index(e[1])))])
    # and the option reached the score: another value gives other posteriors
    other = bigbn.learn(data, score=score, max_parents=2, **{option: 2 * x})
    assert np.abs(other.posterior - res.posterior).max() > 1e-6


def test_unknown_option_through_score_options(tmp_path):
    with pytest.raises(OptionError, match=r"unknown option 'lam' of the k2 score \(it takes: no options\)"):
        bigbn.learn(_discrete(tmp_path), score="k2", score_options={"lam": 1})
    with pytest.raises(OptionError, match="ess given twice"):
        bigbn.learn(_discrete(tmp_path), ess=2, score_options={"ess": 3})


@pytest.mark.parametrize("score, option", [("bdeu", "ess"), ("bge", "alpha_mu"), ("bge", "alpha_w")])
def test_score_options_are_numbers_not_text(tmp_path, score, option):
    """Issue #37: learn(ess='1') was read as the number 1. A score option is a number (text
    is refused, as True already was); numpy numbers are numbers."""
    data = _continuous(tmp_path) if score == "bge" else _discrete(tmp_path)
    with pytest.raises(OptionError, match=r"must be a positive number, got '7'$"):
        bigbn.learn(data, score=score, max_parents=1, **{option: "7"})
    assert scoring.check_options(scoring.BUILTIN[score], {option: np.float64(7)})[option] == 7.0


# ------------------------------------------------------------------ a score from outside

class BIC(scoring.Score):
    """Discrete BIC: the maximised log-likelihood of the child given its parents minus
    penalty/2 · log(m) per free parameter, q (r − 1). Plain loops: it is also its own
    reference."""

    name = "bic"
    data_kind = "discrete"
    options = (scoring.Option("penalty", "BIC penalty", 1.0, "BIC penalty weight", hyper=False),)
    modules = ("test_scoring",)

    def local_scores(self, ds, k, options):
        n, m = ds.n, ds.m
        masks = family_masks(n - 1, k)
        rows = [tuple(r) for r in ds.data.tolist()]
        out = np.empty((n, masks.size))
        for i in range(n):
            for f, sq in enumerate(masks.tolist()):
                ps = [p for p in range(n) if unsqueeze(sq, i) >> p & 1]
                n_j = Counter(tuple(row[p] for p in ps) for row in rows)
                n_jk = Counter((tuple(row[p] for p in ps), row[i]) for row in rows)
                ll = sum(c * math.log(c / n_j[j]) for (j, _), c in n_jk.items())
                q = math.prod(int(ds.arities[p]) for p in ps)
                out[i, f] = ll - options["penalty"] / 2 * math.log(m) * q * (int(ds.arities[i]) - 1)
        return out


def test_a_score_defined_outside_bigbn_runs_end_to_end(tmp_path):
    data = _discrete(tmp_path)
    res = bigbn.learn(data, score=BIC(), score_options={"penalty": 0.5}, max_parents=2,
                      structure_prior="uniform", workdir=tmp_path / "w", map_dag=True)
    ds, score, _ = bigbn.api.load_dataset(data, score=BIC())
    beta = BIC().local_scores(ds, 2, {"penalty": 0.5})
    P, log_px = naive.edges_by_dags(beta, 2)
    np.testing.assert_allclose(res.posterior, P, rtol=0, atol=1e-9)
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    assert 0.05 < res.posterior.max() and np.ptp(res.posterior[~np.eye(4, dtype=bool)]) > 0.1
    assert res.summary["options"]["score"] == "bic" and res.summary["options"]["penalty"] == 0.5
    # resumes under the same score, refuses another penalty, and its own options are checked
    again = bigbn.learn(data, score=BIC(), score_options={"penalty": 0.5}, max_parents=2,
                        structure_prior="uniform", workdir=tmp_path / "w")
    assert np.array_equal(again.posterior, res.posterior)
    with pytest.raises(BigBNError, match="penalty"):
        bigbn.learn(data, score=BIC(), score_options={"penalty": 2.0}, max_parents=2,
                    structure_prior="uniform", workdir=tmp_path / "w")
    with pytest.raises(OptionError, match="BIC penalty must be a positive number"):
        bigbn.learn(data, score=BIC(), score_options={"penalty": -1})
    with pytest.raises(OptionError, match=r"^ess is a parameter of the bdeu score; this run uses bic \(choose score bdeu, or drop ess\)$"):
        bigbn.learn(data, score=BIC(), ess=2.0)
    with pytest.raises(OptionError, match="the bic score, which bigbn does not ship: pass its object"):
        bigbn.effects(res, data)
    with pytest.raises(OptionError, match="the bic score has no parameter model"):
        bigbn.effects(res, data, score=BIC())
    with pytest.raises(BigBNError, match="not a discrete variable"):  # read as its data kind
        bigbn.learn(_continuous(tmp_path), score=BIC())


def test_the_score_s_numerics_version_enters_the_run_fingerprint(tmp_path):
    """A built-in score is fingerprinted by the version it declares (bumped by hand when its
    numbers change; tests/test_numerics.py checks them), not by its source."""
    fp = {name: scoring.numerics_version(s) for name, s in scoring.BUILTIN.items()}
    assert fp == {"bdeu": "bdeu-2", "k2": "k2-2", "bge": "bge-5", "cg": "cg-7"}
    res = bigbn.learn(_discrete(tmp_path), score="k2", max_parents=1, workdir=tmp_path / "w")
    run = json.loads((tmp_path / "w" / "run.json").read_text())
    assert run["fingerprint"]["score_numerics"] == "k2-2"
    assert res.summary["options"] == {k: v for k, v in run["fingerprint"].items() if k != "data_sha256"}


def _score_class(body):
    """A subclass of BDeu typed where Python keeps no source (as at a prompt)."""
    space = {"scoring": scoring}
    exec(compile(f"class Mine(scoring.BDeu):\n    name = 'mine'\n{body}", "<prompt>", "exec"), space)
    return space["Mine"]()


def test_a_score_without_a_declared_version_is_fingerprinted_by_its_code():
    """A score from outside declares no version: its modules' and class's code decide its
    fingerprint, so any edit of them refuses a resume. A subclass of a built-in does not
    inherit the built-in's version (it may compute differently)."""
    bic = scoring.numerics_version(BIC())
    assert bic == scoring.source_fingerprint(BIC()) and len(bic) == 16
    plain = _score_class("    pass\n")
    same = "    def local_scores(self, ds, k, options):\n        return super().local_scores(ds, k, options)\n"
    more = same.replace("options)\n", "options) + 1\n")
    versions = [scoring.numerics_version(_score_class(body)) for body in ("    pass\n", same, more, more)]
    assert "bdeu-2" not in versions and len(set(versions)) == 3 and versions[2] == versions[3]
    assert scoring.numerics_version(plain) == scoring.source_fingerprint(plain)
    assert scoring.numerics_version(_score_class("    numerics = 'mine-1'\n")) == "mine-1"


@pytest.mark.parametrize("score, option", [("bge", "alpha_mu"), ("bge", "alpha_w"), ("cg", "alpha_mu")])
def test_a_hyperparameter_beyond_float64_is_one_line(score, option):
    """An int such as 10**400 for a score's option was float()'s OverflowError traceback."""
    with pytest.raises(OptionError, match="must be finite, got a number of 401 digits"):
        scoring.check_options(scoring.lookup(score), {option: 10**400})
