"""Runs on mixed data (the cg score, bigbn/scores/cg.py): exact posteriors against a brute
force over DAGs and orders from the naive twin's local scores, the typing of columns and its
overrides, `auto`, the CLI's output, and every bad input of issue #41."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
import naive
from bigbn.cli.main import main
from bigbn.errors import DataError, OptionError
from bigbn.inputs import load_dataset
from bigbn.io.data import read_table
from bigbn.kernels.families import family_masks, squeeze
from bigbn.scores.cg import column_kinds


def write_mixed(path, m=60, seed=0, strength=1.0):
    """A CSV file: sex (F/M) → bp; arm (0/1 codes) → dose → bp; age → bp; a text column
    'site' that nothing depends on. Returns the column kinds in file order."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], m)
    arm = rng.integers(0, 2, m)
    age = rng.normal(size=m)
    dose = strength * 0.8 * arm + rng.normal(size=m)
    bp = strength * (0.5 * age + 0.8 * (sex == "M") - 0.6 * dose) + rng.normal(size=m)
    site = rng.choice(["north", "south", "west"], m)
    rows = ["sex,age,arm,dose,site,bp"] + [f"{a},{b:.6f},{c},{d:.6f},{e},{f:.6f}"
                                          for a, b, c, d, e, f in zip(sex, age, arm, dose, site, bp)]
    path.write_text("\n".join(rows) + "\n")
    return ["discrete", "continuous", "discrete", "continuous", "discrete", "continuous"]


def reference(ds, k, prior="koivisto-sood", **kw):
    """β from the naive twin plus the structure prior written out by hand."""
    kinds = ["discrete" if r else "continuous" for r in ds.arities]
    beta = naive.cg_scores(ds.data, kinds, ds.arities, k, **kw)
    n = ds.n
    if prior == "koivisto-sood":
        sizes = np.array([bin(g).count("1") for g in family_masks(n - 1, k).tolist()])
        beta = beta - np.log([math.comb(n - 1, s) for s in sizes])[None, :]
    return beta


# ----------------------------------------------------------- exact posteriors, brute force

@pytest.mark.parametrize("prior, k", [("koivisto-sood", 2), ("uniform", 5)])
def test_exact_posteriors_against_brute_force_over_orders(tmp_path, prior, k):
    f = tmp_path / "mixed.csv"
    kinds = write_mixed(f, m=50, seed=1, strength=0.5)
    res = bigbn.learn(f, score="cg", max_parents=k, structure_prior=prior, workdir=tmp_path / "w")
    ds, _, _ = load_dataset(f, score="cg")
    assert [("discrete" if r else "continuous") for r in ds.arities] == kinds
    beta = reference(ds, k, prior)
    P, log_px = naive.edges_by_orders(beta, k)
    assert np.abs(res.posterior - P).max() < 1e-9
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    # continuous → discrete: exactly 0; and the answer is not trivially 0 or 1
    disc = [j for j, kind in enumerate(kinds) if kind == "discrete"]
    cont = [j for j, kind in enumerate(kinds) if kind == "continuous"]
    assert (res.posterior[np.ix_(cont, disc)] == 0).all()
    inner = res.posterior[(res.posterior > 1e-3) & (res.posterior < 1 - 1e-3)]
    assert inner.size >= 4
    # the run says how it read the columns
    assert res.summary["column_kinds"] == {name: kind for name, kind in zip(ds.names, kinds)}


def test_exact_posteriors_against_brute_force_over_dags_with_map(tmp_path):
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=40, seed=2, strength=0.6)
    text = f.read_text().splitlines()
    keep = [0, 2, 3, 5]  # sex, arm, dose, bp: n = 4, every DAG
    f.write_text("\n".join(",".join(line.split(",")[j] for j in keep) for line in text) + "\n")
    res = bigbn.learn(f, score="cg", max_parents=3, map_dag=True, ess=2.0, alpha_mu=2.0)
    ds, _, _ = load_dataset(f, score="cg")
    beta = reference(ds, 3, ess=2.0, alpha_mu=2.0)
    P, log_px = naive.edges_by_dags(beta, 3)
    assert np.abs(res.posterior - P).max() < 1e-9
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    best, arg = naive.map_by_dags(beta, 3)
    assert res.map_log_score == pytest.approx(best, abs=1e-9)
    got = tuple(sum(1 << res.names.index(p) for p, c in res.map_arcs() if c == v) for v in res.names)
    assert got in arg
    # exact parent-set posteriors (the table bigbn writes) against the brute force
    ps = naive.parent_sets_by_dags(beta, 3)
    fam = family_masks(3, 3).tolist()
    for v, name in enumerate(res.names):
        got = np.zeros(len(fam))
        for parents, p in res.parent_sets(name):
            got[fam.index(squeeze(sum(1 << res.names.index(x) for x in parents), v))] = p
        assert np.abs(got - ps[v]).max() < 1e-9


def test_tiers_and_knowledge_on_mixed_data(tmp_path):
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=50, seed=3, strength=0.5)
    ds, _, _ = load_dataset(f, score="cg")
    names = list(ds.names)
    tiers = [["sex", "age", "arm"], ["dose", "site", "bp"]]
    res = bigbn.learn(f, score="cg", max_parents=2, tiers=tiers)
    beta = reference(ds, 2)
    P, _ = naive.edges_by_orders(beta, 2, tiers=[[names.index(x) for x in t] for t in tiers])
    assert np.abs(res.posterior - P).max() < 1e-9
    # a forbidden edge is forbidden; a required edge continuous → discrete is refused in one line
    res = bigbn.learn(f, score="cg", max_parents=2, forbidden=[("dose", "bp")])
    assert res.posterior[names.index("dose"), names.index("bp")] == 0
    with pytest.raises(OptionError, match="every parent set of 'arm' is impossible under the cg score"):
        bigbn.learn(f, score="cg", max_parents=2, required=[("dose", "arm")])


def test_samples_of_a_mixed_run(tmp_path):
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=50, seed=4, strength=0.5)
    res = bigbn.learn(f, score="cg", max_parents=2, workdir=tmp_path / "w")
    s = bigbn.sample(tmp_path / "w", samples=4000, seed=3)
    freq = np.zeros((res.posterior.shape))
    for v in range(len(res.names)):
        for u in range(len(res.names)):
            freq[u, v] = ((s.parents[:, v] >> u) & 1).mean()
    assert np.abs(freq - res.posterior).max() < 0.04
    kinds = res.summary["column_kinds"]
    disc = [j for j, x in enumerate(res.names) if kinds[x] == "discrete"]
    cont = [j for j, x in enumerate(res.names) if kinds[x] == "continuous"]
    assert (freq[np.ix_(cont, disc)] == 0).all()


def test_scores_file_round_trip_and_cli_output(tmp_path):
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=50, seed=5, strength=0.5)
    r = CliRunner().invoke(main, ["run", str(f), "-w", str(tmp_path / "w"), "-q", "-k", "2"])
    assert r.exit_code == 0, r.output
    assert "score cg" in r.output
    assert "discrete columns (3): sex, arm, site" in r.output
    assert "continuous columns (3): age, dose, bp" in r.output
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["column_kinds"]["arm"] == "discrete" and summary["column_kinds"]["dose"] == "continuous"
    r = CliRunner().invoke(main, ["scores", str(f), "-k", "2", "--out", str(tmp_path / "m.jkl")])
    assert r.exit_code == 0, r.output
    assert "score cg" in r.output and "discrete columns (3)" in r.output
    r = CliRunner().invoke(main, ["run", "--scores", str(tmp_path / "m.jkl"), "-w", str(tmp_path / "j"), "-q"])
    assert r.exit_code == 0, r.output
    a = np.loadtxt(tmp_path / "w" / "edges.csv", delimiter=",", skiprows=1, usecols=2)
    b = np.loadtxt(tmp_path / "j" / "edges.csv", delimiter=",", skiprows=1, usecols=2)
    assert np.abs(a - b).max() < 1e-12
    # effects: refused in one line
    r = CliRunner().invoke(main, ["effects", "-w", str(tmp_path / "w")])
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "not defined for mixed data" in r.stderr


# ----------------------------------------------------------- typing, auto, overrides

def test_column_kinds_rule_and_overrides(tmp_path):
    f = tmp_path / "t.csv"
    rng = np.random.default_rng(6)
    rows = ["txt,code,count,real,dose"]
    for t in range(40):
        rows.append(f"{'ab'[t % 2]},{t % 4},{t},{rng.normal():.4f},{[0.5, 1.0, 2.0][t % 3]}")
    f.write_text("\n".join(rows) + "\n")
    table = read_table(f)
    # text → discrete; whole numbers with ≤ 10 levels → discrete; 40 whole numbers, reals,
    # and few non-whole numbers → continuous
    assert column_kinds(table) == ("discrete", "discrete", "continuous", "continuous", "continuous")
    assert column_kinds(table, discrete=["dose"], continuous=["code"]) == \
        ("discrete", "continuous", "continuous", "continuous", "discrete")
    with pytest.raises(DataError, match=r"no column named 'dos' \(named by --discrete\); did you mean 'dose'"):
        column_kinds(table, discrete=["dos"])
    with pytest.raises(OptionError, match="column 'code' is named both discrete and continuous"):
        column_kinds(table, discrete=["code"], continuous=["code"])
    r = CliRunner().invoke(main, ["run", str(f), "-w", str(tmp_path / "twice"), "--discrete", "dose,txt,dose"])
    assert r.exit_code == 1 and r.stderr.count("\n") == 1
    assert "discrete: column 'dose' is named twice" in r.stderr
    assert not (tmp_path / "twice").exists()
    with pytest.raises(DataError, match="column 'txt': declared continuous, but 'a' is not a number"):
        column_kinds(table, continuous=["txt"])


def test_auto_picks_cg_only_for_tables_with_text_and_continuous_columns(tmp_path):
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=30, seed=7)
    _, score, _ = load_dataset(f)
    assert score.name == "cg"
    # all numbers with a 0/1 column: BGe, as before cg existed; --discrete makes it cg
    g = tmp_path / "numbers.csv"
    rng = np.random.default_rng(8)
    g.write_text("a,b,c\n" + "".join(f"{rng.normal():.5f},{rng.normal():.5f},{t % 2}\n" for t in range(30)))
    ds, score, _ = load_dataset(g)
    assert score.name == "bge" and ds.kind == "continuous"
    ds, score, _ = load_dataset(g, discrete=["c"])
    assert score.name == "cg" and ds.arities.tolist() == [0, 0, 2]
    ds, score, _ = load_dataset(g, score="cg")  # the rule reads c as discrete
    assert ds.arities.tolist() == [0, 0, 2]
    # text with only discrete columns: BDeu, as before
    h = tmp_path / "text.csv"
    h.write_text("a,b\n" + "".join(f"{'xy'[t % 2]},{t % 3}\n" for t in range(30)))
    assert load_dataset(h)[1].name == "bdeu"
    # a column kind for another score is refused
    with pytest.raises(OptionError, match="this run uses the bge score"):
        load_dataset(g, score="bge", discrete=["c"])
    r = CliRunner().invoke(main, ["run", str(g), "--discrete", "c", "-w", str(tmp_path / "w"), "-q"])
    assert r.exit_code == 0 and "discrete columns (1): c" in r.output
    r = CliRunner().invoke(main, ["run", str(g), "--score", "cg", "--continuous", "c", "-w", str(tmp_path / "v"),
                                  "-q"])
    assert r.exit_code == 0 and "discrete columns (0): none" in r.output and "continuous columns (3)" in r.output
    r = CliRunner().invoke(main, ["run", str(g), "--score", "bdeu", "--discrete", "c", "-w", str(tmp_path / "u")])
    assert r.exit_code == 1 and "this run uses the bdeu score (choose score cg)" in r.stderr


def test_dataframe_and_array_inputs_are_typed_as_files(tmp_path):
    pd = pytest.importorskip("pandas")
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=40, seed=9)
    a = bigbn.learn(f, max_parents=1)
    b = bigbn.learn(pd.read_csv(f), max_parents=1)
    assert b.summary["options"]["score"] == "cg"
    assert np.abs(a.posterior - b.posterior).max() < 1e-12


# ----------------------------------------------------------- bad input (issue #41, item 5)

def _bad(tmp_path, header, rows):
    f = tmp_path / "bad.csv"
    f.write_text(header + "\n" + "\n".join(rows) + "\n")
    return f


@pytest.mark.parametrize("case, message", [
    ("many_levels", r"bad.csv, column 'id': read as discrete but has 40 distinct values in 40 rows"),
    ("zero_variance", r"bad.csv, column 'x': one value \(2.5\) in every row: a continuous column with zero variance"),
    ("inf_cell", r"bad.csv, row 7, column 'x': 'inf' is not a finite number"),
    ("nan_cell", r"bad.csv, row 4, column 'x': missing value 'NaN'"),
    ("unknown_discrete", r"no column named 'sexx' \(named by --discrete\); did you mean 'sex'"),
])
def test_bad_input_is_one_line(tmp_path, case, message):
    rng = np.random.default_rng(10)
    rows = [f"{'FM'[t % 2]},{rng.normal():.4f},{t},{rng.normal():.4f}" for t in range(40)]
    args = []
    if case == "many_levels":
        args = ["--discrete", "id"]
    elif case == "zero_variance":
        rows = [r.rsplit(",", 1)[0] + ",2.5" for r in rows]
    elif case == "inf_cell":
        rows[5] = rows[5].rsplit(",", 1)[0] + ",inf"
    elif case == "nan_cell":
        rows[2] = rows[2].rsplit(",", 1)[0] + ",NaN"
    elif case == "unknown_discrete":
        args = ["--discrete", "sexx"]
    f = _bad(tmp_path, "sex,y,id,x", rows)
    r = CliRunner().invoke(main, ["run", str(f), "--score", "cg", "-w", str(tmp_path / "w"), "-q", *args])
    assert r.exit_code == 1, r.output
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    import re

    assert re.search(message, r.stderr), r.stderr
    assert not (tmp_path / "w").exists()


def test_a_million_levels_is_refused_before_any_scoring():
    """A column declared discrete with more levels than MAX_LEVELS is refused even when the
    rows would allow it (m/2 rule): each level would split every continuous child."""
    from bigbn.io.data import Table
    from bigbn.scores.cg import MAX_LEVELS, mixed_dataset

    m = 2 * MAX_LEVELS + 10
    cells = np.stack([np.char.mod("%d", np.arange(m) % (MAX_LEVELS + 1)),
                      np.char.mod("%.3f", np.linspace(0, 1, m))], axis=1)
    table = Table.from_cells("big.csv", ("id", "x"), cells)
    with pytest.raises(DataError, match=f"column 'id': read as discrete but has {MAX_LEVELS + 1} distinct"):
        mixed_dataset(table, discrete=["id"])


def test_discrete_parent_configuration_with_one_row_is_scored(tmp_path):
    """Documented behaviour: a configuration of a continuous node's discrete parents seen in
    a single row contributes that row's marginal likelihood under its proper prior (the
    run finishes, and agrees with the brute force)."""
    f = tmp_path / "one.csv"
    rng = np.random.default_rng(11)
    rows = [f"{'a' if t else 'b'},{rng.normal():.5f},{rng.normal():.5f}" for t in range(30)]
    f.write_text("g,x,y\n" + "\n".join(rows) + "\n")
    res = bigbn.learn(f, max_parents=2)
    ds, _, _ = load_dataset(f)
    P, _ = naive.edges_by_dags(reference(ds, 2), 2)
    assert np.abs(res.posterior - P).max() < 1e-9


def test_interventional_mixed_data_against_brute_force(tmp_path):
    """Interventions on mixed data: each node scored from the rows where it was not a
    target (its configurations, scatter matrices and ν from those rows), the posterior
    against a brute force over orders."""
    f = tmp_path / "mixed.csv"
    write_mixed(f, m=60, seed=12, strength=0.5)
    lines = f.read_text().splitlines()
    targets = ["" if t % 3 else ("dose" if t % 2 else "sex|bp") for t in range(60)]
    f.write_text("\n".join([lines[0] + ",targets"] + [f"{a},{b}" for a, b in zip(lines[1:], targets)]) + "\n")
    res = bigbn.learn(f, score="cg", max_parents=2, intervention_column="targets")
    ds, _, _ = load_dataset(f, score="cg", intervention_column="targets")
    kinds = ["discrete" if r else "continuous" for r in ds.arities]
    beta = np.empty((ds.n, len(family_masks(ds.n - 1, 2))))
    for i in range(ds.n):
        keep = ~ds.intervened[:, i]
        beta[i] = naive.cg_scores(ds.data[keep], kinds, ds.arities, 2)[i]
    sizes = np.array([bin(g).count("1") for g in family_masks(ds.n - 1, 2).tolist()])
    beta = beta - np.log([math.comb(ds.n - 1, s) for s in sizes])[None, :]
    P, log_px = naive.edges_by_orders(beta, 2)
    assert np.abs(res.posterior - P).max() < 1e-9
    assert res.log_marginal == pytest.approx(log_px, rel=1e-12)
    # the interventions change the answer: the same rows, all observational
    obs = bigbn.learn(ds.rows(np.ones(ds.m, dtype=bool)), score="cg", max_parents=2)
    assert np.abs(obs.posterior - res.posterior).max() > 1e-3


def test_dataframe_categories_keep_their_declared_order_in_mixed_data():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(14)
    stage = pd.Categorical(rng.choice(["low", "mid", "high"], 50), categories=["low", "mid", "high"], ordered=True)
    df = pd.DataFrame({"stage": stage, "x": rng.normal(size=50), "y": rng.normal(size=50)})
    ds, score, _ = load_dataset(df)
    assert score.name == "cg" and ds.kind == "mixed"
    assert ds.levels[0] == ("low", "mid", "high")
    assert np.array_equal(ds.data[:, 0], pd.Series(stage).cat.codes.to_numpy())


def test_one_number_written_two_ways_in_a_discrete_number_column_is_refused(tmp_path):
    """A column of whole numbers read as discrete by the rule, with '1' and '1.0' (or '0'
    and '-0', '7' and '07'): each spelling was a level of its own, so 1, 1.0, 2, 2.0 was
    four levels, and a text column alternating with the spelling came out a parent of it
    (p = 0.5 for a pair independent in the numbers). Refused in one line naming the file,
    the row of the second spelling and the column; --discrete (text categories) and
    --continuous run; different numbers float64 makes one stay two levels."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=40)

    def table(cells):
        f = tmp_path / "z.csv"
        f.write_text("a,x,z\n" + "".join(f"{'pq'[i % 2]},{v:.6f},{cells[i % len(cells)]}\n"
                                         for i, v in enumerate(x)))
        return f

    f = table(["1", "1.0", "2", "2.0"])
    r = CliRunner().invoke(main, ["run", str(f), "--score", "cg", "-w", str(tmp_path / "w"), "-q", "-k", "1"])
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "z.csv, row 3, column 'z': '1.0' is '1' written another way" in r.stderr, r.stderr
    assert not (tmp_path / "w").exists()
    for cells, pair in ((["0", "-0", "1"], "'0' is '-0'"), (["7", "07", "8"], "'7' is '07'")):
        with pytest.raises(DataError, match=rf"row \d+, column 'z': {pair} written another way"):
            bigbn.learn(table(cells), score="cg", max_parents=1)
    f = table(["1", "1.0", "2", "2.0"])
    ds = load_dataset(f, score="cg", discrete=["z"])[0]
    assert ds.levels[2] == ("1", "1.0", "2", "2.0")
    assert load_dataset(f, score="cg", continuous=["z"])[0].arities[2] == 0
    ds = load_dataset(table(["100000000000000000000", "100000000000000000001"]), score="cg")[0]
    assert ds.arities[2] == 2


def test_the_intervention_column_named_by_discrete_or_continuous_is_refused_as_such(tmp_path):
    """--discrete / --continuous naming the intervention column said "no column named 'I'
    ...; the columns are ..." of a column the file has: now one line saying it is the
    intervention column, from the CLI and from learn."""
    f = tmp_path / "i.csv"
    rng = np.random.default_rng(2)
    f.write_text("g,x,y,I\n" + "".join(f"{'pq'[t % 2]},{rng.normal():.4f},{rng.normal():.4f},{'x' * (t % 3 == 0)}\n"
                                       for t in range(30)))
    r = CliRunner().invoke(main, ["run", str(f), "--intervention-column", "I", "--continuous", "x,I",
                                  "-w", str(tmp_path / "w"), "-q"])
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "column 'I' is the intervention column" in r.stderr and "drop it from --continuous" in r.stderr
    assert not (tmp_path / "w").exists()
    with pytest.raises(OptionError, match=r"^column 'I' is the intervention column .* drop it from discrete="):
        bigbn.learn(f, intervention_column="I", discrete=["g", "I"], max_parents=1)


def test_cells_float64_rounds_to_whole_numbers_are_not_whole(tmp_path):
    """The rule's 'whole numbers' were float64's: 2.0000000000000001 and 2^53 + 1.5, 6.5,
    13.5, 18.5 (read as 2^53 + 2, 6, 14, 18) made their columns discrete, the cells
    categories, though no value is whole. Now continuous: the first reads as numbers, the
    second is refused, float64 moving its spread (check_carried); '1.0', '2.0', '1e1' stay
    discrete."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=40).tolist()

    def table(cells):
        f = tmp_path / "w.csv"
        f.write_text("a,x,z\n" + "".join(f"{'pq'[i % 2]},{x[i]!r},{cells[i % len(cells)]}\n" for i in range(40)))
        return f

    assert column_kinds(read_table(table(["2.0000000000000001", "3", "4"])))[2] == "continuous"
    assert column_kinds(read_table(table(["1.0", "2.0", "1e1"])))[2] == "discrete"
    f = table([f"{2 ** 53 + d}.5" for d in (1, 6, 13, 18)])
    assert column_kinds(read_table(f))[2] == "continuous"
    with pytest.raises(DataError, match=r"w.csv, row 2, column 'z': '9007199254740993.5' is 9007199254740994.0 in "
                                        r"float64: float64 cannot carry"):
        bigbn.learn(f, score="cg", max_parents=1)


def test_exponents_of_eleven_digits_are_compared_without_a_hang(tmp_path):
    """'0' and '1e-99999999999' (both 0.0 in float64) in a continuous column, and '0' and
    '0e99999999999' in a column the rule reads as discrete: their exact comparison took
    Fraction's 10^99999999999, a hang (BGe and cg alike). As decimals: the first pair is
    refused as different numbers float64 makes one, the second as one number written two
    ways. Run in a child process with a time limit, so that a hang fails the test."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    x = np.random.default_rng(1).normal(size=30).tolist()

    def table(name, cells, text=True):
        f = tmp_path / f"{name}.csv"
        f.write_text(("a,x,z\n" if text else "x,z\n") + "".join(
            ("pq"[i % 2] + "," if text else "") + f"{x[i]!r},{cells[i % 3]}\n" for i in range(30)))
        return str(f)

    runs = [(table("bge", ["0", "1e-99999999999", "1"], text=False), "bge"),
            (table("tiny", ["0", "1e-99999999999", "1"]), "cg"), (table("zero", ["0", "0e99999999999", "1"]), "cg")]
    code = ("import sys, bigbn\n"
            "for f, score in zip(sys.argv[1::2], sys.argv[2::2]):\n"
            "    try:\n"
            "        bigbn.learn(f, score=score, max_parents=1)\n"
            "    except bigbn.errors.DataError as e:\n"
            "        print(score, e)\n")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code, *[a for r in runs for a in r]], capture_output=True,
                         text=True, timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    lines = out.stdout.splitlines()
    assert len(lines) == 3, out.stdout + out.stderr
    assert lines[0].startswith("bge ") and "'0' and '1e-99999999999' are different numbers but the same float64" in lines[0]
    assert lines[1].startswith("cg ") and "'0' and '1e-99999999999' are different numbers" in lines[1]
    assert lines[2].startswith("cg ") and "'0e99999999999' is '0' written another way" in lines[2]


def test_the_cg_refusals_that_suggest_a_declaration_name_the_flag_and_the_keyword(tmp_path):
    """"write each value one way ... (--discrete z ...)" and "read it as continuous
    (--continuous id)" reach a caller of learn() too, who has no flags (and python_spelling
    made them "discrete= z"): each names the CLI flag and the keyword, in backticks, which
    both the command line and python_spelling leave as they are."""
    from bigbn.io.data import Table
    from bigbn.scores.cg import MAX_LEVELS, mixed_dataset

    rng = np.random.default_rng(3)
    f = tmp_path / "z.csv"
    f.write_text("a,x,z\n" + "".join(f"{'pq'[i % 2]},{rng.normal():.6f},{['1', '1.0', '2'][i % 3]}\n"
                                     for i in range(30)))
    message = (r"declare the column \(`--discrete z` / `discrete=\['z'\]`: its cells as text categories; "
               r"`--continuous z` / `continuous=\['z'\]`: as numbers\)$")
    with pytest.raises(DataError, match=message):
        bigbn.learn(f, score="cg", max_parents=1)
    r = CliRunner().invoke(main, ["run", str(f), "--score", "cg", "-w", str(tmp_path / "w"), "-q", "-k", "1"])
    assert r.exit_code == 1 and re.search(message, r.stderr.strip()), r.stderr
    m = 2 * MAX_LEVELS + 10
    cells = np.stack([np.char.mod("%d", np.arange(m) % (MAX_LEVELS + 1)),
                      np.char.mod("%.3f", np.linspace(0, 1, m))], axis=1)
    with pytest.raises(DataError, match=r"read it as continuous \(`--continuous 'my id'` / `continuous=\['my id'\]`\) "
                                        "if it is a number$"):
        mixed_dataset(Table.from_cells("big.csv", ("my id", "x"), cells), discrete=["my id"])
