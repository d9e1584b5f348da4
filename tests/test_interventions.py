"""Interventional data (bigbn.scores.interventions): node i scored from the rows where it was not a
target, against slow references (tests/naive.py); targets read from a column or a list."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import naive
from bigbn.api import load_dataset, score_families
from bigbn.cli.main import main
from bigbn.errors import BigBNError, DataError, OptionError
from test_cli import assert_one_line_error

NAMES = list("abcde")


def discrete_experiments(seed, m=90, n=5):
    """Codes of a chain-like network, each row an experiment on 0–2 random targets (set
    uniformly at random in that row), a third of the rows observational."""
    rng = np.random.default_rng(seed)
    X = np.zeros((m, n), dtype=np.int64)
    T = np.zeros((m, n), dtype=bool)
    arities = [2, 3, 2, 2, 3, 2, 2][:n]
    for t in range(m):
        if rng.random() > 1 / 3:
            T[t, rng.choice(n, size=rng.integers(1, 3), replace=False)] = True
        for i in range(n):
            if T[t, i]:
                X[t, i] = rng.integers(0, arities[i])
            elif i == 0:
                X[t, i] = rng.random() < 0.3
            else:
                X[t, i] = (X[t, i - 1] + (rng.random() < 0.2)) % arities[i]
    for j in range(n):  # every level observed
        X[:arities[j], j] = np.arange(arities[j])
    return X, T


def continuous_experiments(seed, m=70, n=5):
    rng = np.random.default_rng(seed)
    X = np.zeros((m, n))
    T = rng.random((m, n)) < 0.25
    for i in range(n):
        noise = rng.normal(size=m)
        X[:, i] = np.where(T[:, i], 2 * noise, (0.9 * X[:, i - 1] if i else 0) + noise)
    return X, T


def sets(T):
    return [{NAMES[j] for j in np.flatnonzero(row)} for row in T]


@pytest.mark.parametrize("score", ["bdeu", "k2", "bge"])
def test_interventional_scores_against_plain_loops(score):
    if score == "bge":
        X, T = continuous_experiments(1)
        ref = naive.interventional_bge_scores(X.tolist(), T.tolist(), 3, alpha_mu=1.5)
        opts = {"alpha_mu": 1.5}
    else:
        X, T = discrete_experiments(2)
        ref = naive.interventional_dirichlet_scores(X.tolist(), [2, 3, 2, 2, 3], T.tolist(), 3, score,
                                                    ess=2.5)
        opts = {"ess": 2.5} if score == "bdeu" else {}
    ds, sc, _ = load_dataset(X, names=NAMES, score=score, interventions=sets(T))
    assert ds.intervened is not None and ds.intervened.sum() == T.sum()
    got = score_families(ds, sc, 3, structure_prior="uniform", **opts)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9)
    # the observational scores are not these: the filtering matters
    obs, _, _ = load_dataset(X, names=NAMES, score=score)
    assert np.abs(score_families(obs, sc, 3, structure_prior="uniform", **opts) - ref).max() > 0.5


@pytest.mark.parametrize("score, n, route", [("bdeu", 5, "dags"), ("k2", 5, "dags"), ("bge", 5, "dags"),
                                             ("bdeu", 7, "orders"), ("bge", 7, "orders")])
def test_interventional_posterior_against_enumeration(tmp_path, score, n, route):
    names = list("abcdefg")[:n]
    if score == "bge":
        X, T = continuous_experiments(3, m=60, n=n)
        local = naive.interventional_bge_scores(X.tolist(), T.tolist(), 2)
    else:
        X, T = discrete_experiments(4, n=n)
        arities = [len(set(X[:, j].tolist())) for j in range(n)]
        local = naive.interventional_dirichlet_scores(X.tolist(), arities, T.tolist(), 2, score)
    res = bigbn.learn(X, names=names, score=score, max_parents=2, structure_prior="uniform",
                      interventions=[{names[j] for j in np.flatnonzero(r)} for r in T],
                      workdir=tmp_path / "w")
    P, log_px = (naive.edges_by_dags if route == "dags" else naive.edges_by_orders)(local, 2)
    np.testing.assert_allclose(res.posterior, P, rtol=0, atol=1e-9)
    assert res.log_marginal == pytest.approx(log_px, rel=1e-9)
    assert np.ptp(res.posterior[~np.eye(n, dtype=bool)]) > 0.3


def test_interventions_turn_an_ambiguous_direction_into_a_known_one(tmp_path):
    """a → b, binary. Observational data leave the two directions Markov equivalent (BDeu
    is score equivalent: p(a → b) = p(b → a)); rows where a was set from outside (a drawn
    uniformly, b from its mechanism) score a only from the other rows, b from all of them,
    and p(a → b) rises toward 1 as they are added."""
    rng = np.random.default_rng(12)
    m0 = 300
    a = rng.random(m0) < 0.3
    b = np.where(a, rng.random(m0) < 0.85, rng.random(m0) < 0.2)
    ai = rng.random(600) < 0.5  # a set from outside, b from its own mechanism
    bi = np.where(ai, rng.random(600) < 0.85, rng.random(600) < 0.2)
    ps = []
    for extra in (0, 5, 20, 80):
        X = np.c_[np.r_[a, ai[:extra]], np.r_[b, bi[:extra]]].astype(int)
        res = bigbn.learn(X, names=["a", "b"], max_parents=1,
                          interventions=[set()] * m0 + [{"a"}] * extra)
        ps.append((res.posterior[0, 1], res.posterior[1, 0]))
    assert abs(ps[0][0] - ps[0][1]) < 1e-12 and 0.45 < ps[0][0] < 0.5  # adjacent: ≈ 1/2 each
    forward = [p for p, _ in ps]
    assert all(x < y for x, y in zip(forward, forward[1:])), forward
    assert 0.6 < forward[1] < 0.9 and forward[-1] > 0.99 and ps[-1][1] < 0.01


def _csv(tmp_path, X, T, column="targets", names=NAMES):
    path = tmp_path / "d.csv"
    lines = [",".join(names + [column])]
    for row, t in zip(X.tolist(), T):
        lines.append(",".join(str(v) for v in row) + "," + "|".join(names[j] for j in np.flatnonzero(t)))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_intervention_column_of_a_csv_file_a_dataframe_and_the_cli(tmp_path):
    X, T = discrete_experiments(5)
    path = _csv(tmp_path, X, T)
    ref = bigbn.learn(X, names=NAMES, max_parents=2, interventions=sets(T))
    got = bigbn.learn(path, max_parents=2, intervention_column="targets", workdir=tmp_path / "w")
    assert np.array_equal(got.posterior, ref.posterior)
    assert got.summary["options"]["intervention_column"] == "targets"
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(path, keep_default_na=False)
    assert np.array_equal(bigbn.learn(frame, max_parents=2, intervention_column="targets").posterior,
                          ref.posterior)
    r = CliRunner().invoke(main, ["run", str(path), "-k", "2", "-q", "-w", str(tmp_path / "c"),
                                  "--intervention-column", "targets"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c" / "edges.csv").read_text() == (tmp_path / "w" / "edges.csv").read_text()
    # an all-empty column is observational data: the same numbers as without it
    plain = bigbn.learn(X, names=NAMES, max_parents=2)
    none = bigbn.learn(_csv(tmp_path, X, np.zeros_like(T)), max_parents=2, intervention_column="targets")
    assert np.array_equal(none.posterior, plain.posterior)


@pytest.mark.slow
def test_interventional_effects_use_the_rows_where_no_variable_but_the_cause_was_set(tmp_path):
    X, T = discrete_experiments(6, n=4)
    names = NAMES[:4]
    path = _csv(tmp_path, X, T, names=names)
    r = CliRunner().invoke(main, ["run", str(path), "-k", "2", "-q", "-w", str(tmp_path / "w"),
                                  "--intervention-column", "targets", "--score", "k2"])
    assert r.exit_code == 0, r.output
    e = bigbn.effects(tmp_path / "w")  # the column is read again from the run's data
    res = bigbn.learn(path, score="k2", max_parents=2, intervention_column="targets")
    beta = score_families(load_dataset(path, intervention_column="targets")[0], "k2", 2)
    arities = [2, 3, 2, 2]
    moved = 0
    for i, (x, y) in enumerate(e.pairs):
        rows = ~np.delete(T, x, axis=1).any(axis=1)  # no target but x (effects.effect_rows)
        table, p_zero = naive.discrete_effects_by_dags(X[rows], arities, beta, 2, x, y, "k2", None)
        np.testing.assert_allclose(e.table[i], table, rtol=0, atol=1e-10)
        assert e.p_zero[i] == pytest.approx(p_zero, abs=1e-10)
        every, _ = naive.discrete_effects_by_dags(X, arities, beta, 2, x, y, "k2", None)
        moved += np.abs(every - table).max() > 1e-3
    assert moved >= 3  # the filtering changes the estimates
    np.testing.assert_array_equal(bigbn.effects(res, path).table[0], e.table[0])
    # continuous: the BGe effect from the effect's own rows
    Xc, Tc = continuous_experiments(7, n=4)
    rc = bigbn.learn(Xc, names=names, max_parents=2, interventions=sets(Tc))
    ec = bigbn.effects(rc, Xc, interventions=sets(Tc), pairs=[("a", "b"), ("c", "d")])
    betac = score_families(load_dataset(Xc, names=names, interventions=sets(Tc))[0], "bge", 2)
    for i, (x, y) in enumerate(ec.pairs):
        rows = ~np.delete(Tc, x, axis=1).any(axis=1)
        mean, p_zero, lo, hi = naive.bge_effects_by_dags(Xc[rows], betac, 2, x, y, 1.0, 6.0, 0.95)
        assert ec.mean[i] == pytest.approx(mean, abs=1e-9)
        assert ec.p_zero[i] == pytest.approx(p_zero, abs=1e-10)
    with pytest.raises(OptionError, match="not the data of this run"):
        bigbn.effects(rc, Xc)  # the targets are part of the data


def test_a_row_that_set_a_mediator_does_not_estimate_the_total_effect():
    """a → b → c with coefficients 1, half the rows setting b from outside. The effect of a
    on c was estimated from every row where c was not a target, so the rows that cut b off a
    (where c's regression on a is 0) were pooled with the observational ones: 0.49, 95%
    interval [0.46, 0.53], for a true 1. Now from the rows with no target but a: the
    observational half, the exact BGe effect of those rows (naive.exact_bge_effects_by_dags)."""
    rng = np.random.default_rng(0)
    m = 2000
    a = rng.normal(size=2 * m)
    b = a + 0.5 * rng.normal(size=2 * m)
    b[m:] = 1.1 * rng.normal(size=m)  # set from outside
    c = b + 0.5 * rng.normal(size=2 * m)
    X = np.c_[a, b, c] / 1.2
    T = [set()] * m + [{"b"}] * m
    res = bigbn.learn(X, names=list("abc"), max_parents=2, interventions=T)
    e = bigbn.effects(res, X, interventions=T, pairs=[("a", "c"), ("b", "c")])
    assert e.lower[0] < 1 < e.upper[0] and abs(e.mean[0] - 1) < 0.05
    assert e.lower[1] < 1 < e.upper[1]
    beta = score_families(load_dataset(X, names=list("abc"), interventions=T)[0], "bge", 2)  # the run's
    mean, p_zero, lo, hi = naive.exact_bge_effects_by_dags(X[:m], beta, 2, 0, 2, 1.0, 5.0, 0.95, dps=20)
    assert e.p_zero[0] == pytest.approx(float(p_zero), abs=1e-12)
    assert e.mean[0] == pytest.approx(float(mean), rel=1e-12)
    assert e.lower[0] == pytest.approx(float(lo), rel=1e-10)
    assert e.upper[0] == pytest.approx(float(hi), rel=1e-10)


def test_an_effect_with_no_row_left_to_estimate_it_is_one_line(tmp_path):
    """Every row set some variable other than the cause: no row follows the observational
    distribution the effect is a functional of."""
    X, T = discrete_experiments(5, n=3)
    T[:] = False
    T[0::2, 1] = True
    T[1::2, 2] = True
    path = _csv(tmp_path, X, T, names=NAMES[:3])
    r = CliRunner().invoke(main, ["run", str(path), "-k", "2", "-q", "-w", str(tmp_path / "w"),
                                  "--intervention-column", "targets"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["effects", "-w", str(tmp_path / "w")])
    assert_one_line_error(r, "no row estimates the effect of 'a' on 'b'",
                          "every row intervened on a variable other than 'a'")
    with pytest.raises(DataError, match="no row estimates the effect of 'a' on 'c'"):
        bigbn.effects(tmp_path / "w", pairs=[("b", "c"), ("a", "c")])
    e = bigbn.effects(tmp_path / "w", pairs=[("b", "c")])  # the rows that set b alone
    assert np.isfinite(e.table[0]).all() and np.allclose(e.table[0].sum(axis=1), 1.0)


BAD = {
    "unknown target": ("a,b,targets\n0,1,a\n1,0,zz\n", ["d.csv, row 3", "column 'targets'",
                                                         "unknown target 'zz'"]),
    "empty target": ("a,b,targets\n0,1,a||b\n1,0,\n", ["d.csv, row 2", "an empty target in 'a||b'"]),
    "the column itself": ("a,b,targets\n0,1,targets\n1,0,\n", ["row 2", "is the intervention column itself"]),
    "set in every row": ("a,b,targets\n0,1,a\n1,0,a|b\n1,1,a\n", ["variable 'a' is intervened on in every row"]),
    "no such column": ("a,b,c\n0,1,0\n1,0,1\n", ["no column named 'targets'"]),
    "one variable left": ("a,targets\n0,a\n1,\n", ["at least 2 variables besides"]),
    "missing value elsewhere": ("a,b,targets\n0,,a\n1,0,\n", ["row 2", "column 'b'", "empty cell"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_intervention_input_gets_one_line_errors(tmp_path, case):
    text, needles = BAD[case]
    path = tmp_path / "d.csv"
    path.write_text(text)
    with pytest.raises(BigBNError):
        bigbn.learn(path, intervention_column="targets")
    r = CliRunner().invoke(main, ["run", str(path), "-w", str(tmp_path / "w"), "-q",
                                  "--intervention-column", "targets"])
    assert_one_line_error(r, *needles)
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("quoted", [False, True])
def test_an_intervention_column_not_in_the_file_is_named_not_another_columns_empty_cell(tmp_path, quoted):
    """The column's empty cells (observational rows) were reported as missing data, as if
    the column asked for had been there: "row 3, column 'targets': empty cell"."""
    import pandas as pd

    path = tmp_path / "d.csv"
    path.write_text('a,b,targets\n0,1,a\n1,0,\n0,0,b\n'.replace("0,1,a", '"0",1,a' if quoted else "0,1,a"))
    for column, hint in (("nope", "the columns are a, b, targets"), ("target", "did you mean 'targets'?")):
        message = f"{path}: no column named {column!r} (the intervention column); {hint}"
        with pytest.raises(DataError) as e:
            bigbn.learn(path, intervention_column=column)
        assert str(e.value) == message
        r = CliRunner().invoke(main, ["run", str(path), "-w", str(tmp_path / "w"), "-q",
                                      "--intervention-column", column])
        assert assert_one_line_error(r) == f"Error: {message}"
        assert not (tmp_path / "w").exists()
    frame = pd.DataFrame({"a": [0, 1, 0], "b": [1, 0, 0], "targets": ["a", None, "b"]})
    with pytest.raises(DataError, match=r"^DataFrame: no column named 'nope' \(the intervention column\); "
                                        "the columns are a, b, targets$"):
        bigbn.learn(frame, intervention_column="nope")


def test_a_variable_named_with_the_target_separator_is_refused_with_interventions(tmp_path):
    """'|' joins a row's targets: with variables a, b and a|b the cell "a|b" would be
    ambiguous. A run with interventions refuses such a name; one without takes it."""
    import pandas as pd

    path = tmp_path / "d.csv"
    path.write_text("a|b,a,b,targets\n0,1,0,a|b\n1,0,1,\n0,0,1,b\n1,1,0,\n")
    message = f"{path}, column 'a|b': its name contains '|', which joins the intervention targets of a row; " \
              "rename the variable"
    with pytest.raises(DataError) as e:
        bigbn.learn(path, intervention_column="targets")
    assert str(e.value) == message
    r = CliRunner().invoke(main, ["run", str(path), "-w", str(tmp_path / "w"), "-q",
                                  "--intervention-column", "targets"])
    assert assert_one_line_error(r) == f"Error: {message}"
    assert not (tmp_path / "w").exists()
    other = "variable 'a|b': its name contains '|', which joins the intervention targets of a row; " \
            "rename the variable"
    frame = pd.read_csv(path, keep_default_na=False)
    with pytest.raises(DataError) as e:
        bigbn.learn(frame, intervention_column="targets")
    assert str(e.value) == other
    X = frame.iloc[:, :3].to_numpy()
    with pytest.raises(DataError) as e:
        bigbn.learn(X, names=["a|b", "a", "b"], interventions=[{"a"}, set(), {"b"}, set()])
    assert str(e.value) == other
    assert bigbn.learn(X, names=["a|b", "a", "b"]).names[0] == "a|b"  # no interventions: a name like any


def test_bad_intervention_lists():
    X, T = discrete_experiments(8)
    with pytest.raises(OptionError, match="90 rows"):
        bigbn.learn(X, names=NAMES, interventions=sets(T)[:-1])
    with pytest.raises(DataError, match=r"interventions\[3\].*unknown target 'q'"):
        bigbn.learn(X, names=NAMES, interventions=[set()] * 3 + [{"q"}] + [set()] * 86)
    with pytest.raises(OptionError, match="for an array give interventions="):
        bigbn.learn(X, names=NAMES, intervention_column="t")
    with pytest.raises(OptionError, match="not both"):
        bigbn.learn("x.csv", intervention_column="t", interventions=[])


def test_effects_of_a_run_with_an_intervention_column_refuse_a_second_list(tmp_path):
    """effects(workdir, interventions=...) of a run that read an intervention column said
    'give intervention_column or interventions, not both', though only one was given."""
    X, T = discrete_experiments(5)
    path = _csv(tmp_path, X, T)
    bigbn.learn(path, max_parents=1, intervention_column="targets", workdir=tmp_path / "w")
    with pytest.raises(OptionError, match=r"from the column 'targets' of its data.*drop interventions="):
        bigbn.effects(tmp_path / "w", interventions=sets(T), pairs=[(NAMES[0], NAMES[1])])


def test_a_boolean_mask_row_is_not_read_as_the_names_true_and_false():
    """interventions=M, M a bool (m, n) mask, was refused as "unknown target 'False'"."""
    X, T = discrete_experiments(8)
    with pytest.raises(OptionError, match=r"interventions\[0\]: np.False_ is not a variable name"):
        bigbn.learn(X, names=NAMES, interventions=np.zeros((X.shape[0], len(NAMES)), dtype=bool))
    with pytest.raises(OptionError, match=r"interventions\[0\]: True is not a variable name"):
        bigbn.learn(X, names=NAMES, interventions=[[True, False]] * X.shape[0])


@pytest.mark.parametrize("cell, shown", [("a\x85|b", r"a\\x85\|b"), ("b\x1b", r"b\\x1b")])
def test_a_dataframes_intervention_cells_are_checked_as_a_csv_files(tmp_path, cell, shown):
    """A CSV file's intervention cell holding a control character is refused (read_table
    checks every column); a DataFrame's was not: "a\\x85|b" was read as the targets a and b
    (each target stripped of the U+0085), "b\\x1b" was an unknown target. Both sources now
    refuse the cell as a level holding a control character."""
    import re

    import pandas as pd

    frame = pd.DataFrame({"a": [0, 1, 0, 1], "b": [1, 0, 0, 1], "c": [0, 1, 1, 0], "t": ["", cell, "b", ""]})
    path = tmp_path / "i.csv"
    frame.to_csv(path, index=False)
    for data, where in ((path, re.escape(f"{path}, row 3")), (frame, "DataFrame, row 1")):
        with pytest.raises(DataError, match=rf"^{where}, column 't': the level '{shown}' holds the control character"):
            bigbn.learn(data, intervention_column="t", max_parents=1)
