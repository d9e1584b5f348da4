"""bigbn.Knowledge: what a user knows of the structure, by name, one object for the API, the
CLI's files, pgmpy's ExpertKnowledge and the run record."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import bigbn
from bigbn import Knowledge
from bigbn.cli.main import main
from bigbn.errors import OptionError
from test_cli import assert_one_line_error

ASIA = "examples/asia.csv"
NAMES = ("asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp")


def _write(path, header, rows):
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return str(path)


def test_the_python_forms_and_the_cli_files_give_the_same_posterior(tmp_path):
    """forbidden=/required= by name, a Knowledge, prior_kwargs by index and the CLI's files:
    one model, so the same numbers, bit for bit; and they are not the unconstrained ones."""
    forbidden, required = [("bronc", "dysp")], [("smoke", "lung")]
    short = bigbn.learn(ASIA, max_parents=2, forbidden=forbidden, required=required)
    k = bigbn.learn(ASIA, max_parents=2, knowledge=Knowledge(forbidden=forbidden, required=required))
    ix = bigbn.learn(ASIA, max_parents=2, prior_kwargs={"forbid": [(4, 7)], "require": [(2, 3)]})
    plain = bigbn.learn(ASIA, max_parents=2)
    assert np.array_equal(short.posterior, k.posterior) and np.array_equal(k.posterior, ix.posterior)
    assert short.log_marginal == ix.log_marginal
    assert short.posterior[4, 7] == 0.0 and short.posterior[2, 3] == 1.0
    assert plain.posterior[4, 7] > 0.5 and 0 < plain.posterior[2, 3] < 1
    r = CliRunner().invoke(main, ["run", ASIA, "-k", "2", "-w", str(tmp_path / "w"), "-q",
                                  "--forbid", _write(tmp_path / "f.csv", "parent,child", forbidden),
                                  "--require", _write(tmp_path / "r.csv", "parent,child", required)])
    assert r.exit_code == 0, r.output
    cli = np.loadtxt(tmp_path / "w" / "edges.csv", delimiter=",", skiprows=1, usecols=2)
    assert np.array_equal(cli, [k.posterior[u, v] for u in range(8) for v in range(8) if u != v])


def test_tiers_and_edge_probabilities_by_name_and_from_files(tmp_path):
    tiers = [["asia", "smoke"], ["tub", "lung", "bronc"], ["either", "xray", "dysp"]]
    know = Knowledge(tiers=tiers, edge_prob={("smoke", "bronc"): 0.9, ("lung", "either"): 0.2},
                     max_parents={"dysp": 1})
    res = bigbn.learn(ASIA, max_parents=2, knowledge=know)
    assert res.posterior[3, 0] == 0.0  # lung is in a later tier than asia
    files = know.write(tmp_path / "k")
    assert set(files) == {"tiers", "edge_prob", "max_parents"}
    back = Knowledge.from_files(NAMES, 2, tiers=files["tiers"], edge_prob=files["edge_prob"],
                                max_parents=files["max_parents"])
    assert back == know
    again = bigbn.learn(ASIA, max_parents=2, knowledge=back)
    assert np.array_equal(again.posterior, res.posterior)
    assert max(len(ps) for ps, _ in res.parent_sets("dysp")) == 1


CONTRADICTIONS = {
    "both": (dict(forbidden=[("a", "b")], required=[("a", "b")]), "edge a -> b is both required and forbidden"),
    "prob 0": (dict(edge_prob={("a", "b"): 0.0}, required=[("a", "b")]),
               "edge a -> b is both required and given prior probability 0"),
    "against tiers": (dict(tiers=[["a"], ["b"]], required=[("b", "a")]),
                      "required edge b -> a points from tier 2 back to tier 1"),
    "within": (dict(tiers=[["a", "b"], ["c"]], no_edges_within=[0], required=[("a", "b")]),
               "edge a -> b is both required and within tier 1, which has no edges within"),
    "cycle": (dict(required=[("a", "b"), ("b", "c"), ("c", "a")]), "required edges form a cycle: a -> b -> c -> a"),
    "too many parents": (dict(required=[("a", "c"), ("b", "c")], max_parents={"c": 1}),
                         "c has 2 required parents (a, b) but at most 1 allowed"),
    # an edge of prior probability 1 is named as such, not as required (docs/design.md)
    "prob 1 against tiers": (dict(tiers=[["a"], ["b"]], edge_prob={("b", "a"): 1.0}),
                             "edge b -> a of prior probability 1 points from tier 2 back to tier 1"),
    "prob 1 cycle": (dict(edge_prob={("a", "b"): 1.0, ("b", "a"): 1.0}),
                     "edges of prior probability 1 form a cycle: a -> b -> a"),
    "mixed cycle": (dict(required=[("a", "b")], edge_prob={("b", "a"): 1}),
                    "required edges and edges of prior probability 1 form a cycle: a -> b -> a"),
    "prob 1 parents": (dict(required=[("a", "c")], edge_prob={("b", "c"): 1.0}, max_parents={"c": 1}),
                       "c has 2 required parents and parents of prior probability 1 (a, b) but at most 1"),
    "two tiers": (dict(tiers=[["a", "b"], ["b"]]), "tiers: variable 'b' is in tier 1 and tier 2"),
    "self-loop": (dict(forbidden=[("a", "a")]), "forbidden edge a -> a is a self-loop"),
    "not a name": (dict(required=[(0, 1)]), "a variable is named by a non-empty string, got 0"),
    "bad prob": (dict(edge_prob={("a", "b"): 1.5}), "edge_prob of a -> b must be a probability in [0, 1]"),
    # a generator was read twice: its second reading empty, a ValueError traceback
    "generator pair": (dict(forbidden=[(x for x in ("a", "b", "c"))]),
                       "forbidden edge ('a', 'b', 'c') is not a (parent, child) pair of names"),
    "dict pair": (dict(required=[{"a": 1, "b": 2}]), "is not a (parent, child) pair of names"),
}


@pytest.mark.parametrize("case", list(CONTRADICTIONS))
def test_each_contradiction_is_one_line_naming_the_culprit(case):
    kw, message = CONTRADICTIONS[case]
    with pytest.raises(OptionError) as e:
        Knowledge(**kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_pair_given_as_a_generator_is_read_once():
    assert Knowledge(forbidden=[(x for x in ("a", "b"))]).forbidden == (("a", "b"),)


def test_contradictions_between_the_cli_files_are_refused_the_same_way(tmp_path):
    tiers = _write(tmp_path / "t.csv", "node,tier", [(x, 0 if x in ("asia", "smoke") else 1) for x in NAMES])
    req = _write(tmp_path / "r.csv", "parent,child", [("dysp", "asia")])
    r = CliRunner().invoke(main, ["run", ASIA, "-k", "2", "-w", str(tmp_path / "w"), "-q",
                                  "--tiers", tiers, "--require", req])
    assert_one_line_error(r, "required edge dysp -> asia points from tier 2 back to tier 1",
                          f"(in --tiers {tiers}, --require {req})")  # which files contradict each other
    assert not (tmp_path / "w").exists()


def test_names_the_data_do_not_have_and_mixed_forms_are_refused():
    with pytest.raises(OptionError, match="knowledge: unknown variable 'Raf' in forbidden edge Raf -> Mek"):
        bigbn.learn(ASIA, max_parents=1, forbidden=[("Raf", "Mek")])
    with pytest.raises(OptionError, match="max parents of dysp is 3, above the run's max parents k = 1"):
        bigbn.learn(ASIA, max_parents=1, knowledge=Knowledge(max_parents={"dysp": 3}))
    with pytest.raises(OptionError, match="give knowledge= or its short form forbidden=, not both"):
        bigbn.learn(ASIA, knowledge=Knowledge(), forbidden=[("asia", "tub")])
    with pytest.raises(OptionError, match="by name .* or by node index .*, not both"):
        bigbn.learn(ASIA, forbidden=[("asia", "tub")], prior_kwargs={"forbid": [(0, 1)]})
    # tiers have no index form: tiers= with prior_kwargs is one Knowledge, checked as one
    with pytest.raises(OptionError, match="required edge dysp -> asia points from tier 2 back to tier 1"):
        bigbn.learn(ASIA, tiers=[["asia"], [x for x in NAMES if x != "asia"]], prior_kwargs={"require": [(7, 0)]})
    with pytest.raises(OptionError, match="knowledge must be a bigbn.Knowledge, got dict"):
        bigbn.learn(ASIA, knowledge={"forbidden": []})


def test_equal_knowledge_is_equal_whatever_the_order_and_survives_its_dict():
    a = Knowledge(forbidden=[("b", "a"), ("c", "a")], tiers={"a": 0, "b": 1, "c": 1})
    b = Knowledge(forbidden=[("c", "a"), ("b", "a"), ("c", "a")], tiers=[["a"], ["b", "c"]])
    assert a == b and hash(a) == hash(b)
    assert Knowledge.from_dict(a.to_dict()) == a
    assert not Knowledge() and Knowledge().bind(NAMES, 2) == (None, {})


def test_from_pgmpy_expert_knowledge():
    pytest.importorskip("pgmpy")
    from pgmpy.estimators import ExpertKnowledge

    e = ExpertKnowledge(forbidden_edges=[("bronc", "dysp")], required_edges=[("smoke", "lung")],
                        temporal_order=[["asia", "smoke"], ["tub", "lung", "bronc", "either", "xray", "dysp"]])
    k = Knowledge.from_pgmpy(e)
    assert k == Knowledge(forbidden=[("bronc", "dysp")], required=[("smoke", "lung")],
                          tiers=[["asia", "smoke"], ["tub", "lung", "bronc", "either", "xray", "dysp"]])
    with pytest.raises(OptionError, match="from_pgmpy takes a pgmpy ExpertKnowledge, got dict"):
        Knowledge.from_pgmpy({})
    # without a temporal order pgmpy holds [[]]: no tiers, not an empty tier
    bare = ExpertKnowledge(forbidden_edges=[("bronc", "dysp")], required_edges=[("smoke", "lung")])
    assert Knowledge.from_pgmpy(bare) == Knowledge(forbidden=[("bronc", "dysp")], required=[("smoke", "lung")])


def test_status_shows_the_knowledge_by_name(tmp_path):
    know = Knowledge(forbidden=[("bronc", "dysp")], edge_prob={("smoke", "bronc"): 0.9})
    bigbn.learn(ASIA, max_parents=1, knowledge=know, workdir=tmp_path / "w")
    r = CliRunner().invoke(main, ["status", "-w", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    assert "knowledge: forbidden (1): bronc -> dysp" in r.output
    assert "edge probabilities (1): smoke -> bronc 0.9" in r.output
    assert "constraints" not in r.output


def test_an_edge_of_probability_one_is_not_called_required_when_it_is_forbidden():
    with pytest.raises(OptionError, match=r"^edge A -> B is both given prior probability 1 and forbidden$"):
        Knowledge(forbidden=[("A", "B")], edge_prob={("A", "B"): 1.0})
    with pytest.raises(OptionError, match=r"^edge A -> B is both required and forbidden$"):
        Knowledge(forbidden=[("A", "B")], required=[("A", "B")])


def test_writing_knowledge_where_no_folder_can_be_is_one_error(tmp_path):
    """Knowledge.write into a path that is a file raised FileExistsError from mkdir."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    k = Knowledge(forbidden=[("A", "B")])
    with pytest.raises(OptionError, match=r"cannot write the knowledge files into .*afile: File exists"):
        k.write(afile)
    with pytest.raises(OptionError, match="cannot write the knowledge files into .*: Not a directory"):
        k.write(afile / "sub")
    assert afile.read_text() == "x"
    with pytest.raises(OptionError, match="a path cannot hold a NUL character"):  # was a ValueError
        k.write(str(tmp_path / "k\0"))
    with pytest.raises(OptionError, match="write\\(\\) takes a folder \\(a path\\), got int"):  # was a TypeError
        k.write(5)


def test_no_edges_within_every_tier_without_tiers_is_refused_not_ignored():
    with pytest.raises(OptionError, match="no_edges_within=True .* no tiers are given"):
        Knowledge(no_edges_within=True)
    assert Knowledge(tiers=[["A"], ["B", "C"]], no_edges_within=True).no_edges_within == (0, 1)
    assert Knowledge(no_edges_within=()).no_edges_within == ()


@pytest.mark.parametrize("d, message", [
    (5, "from_dict takes a dict (as to_dict gives), got int"),
    ({"edge_prob": [["a", "b"]]}, "edge_prob must be a list of [parent, child, probability]"),
    ({"edge_prob": 5}, "edge_prob must be a list of [parent, child, probability]"),
    ({"forbidden": 5}, "forbidden must be a list of (parent, child) name pairs, got 5"),
    ({"required": [5]}, "required edge 5 is not a (parent, child) pair of names"),
])
def test_from_dict_of_another_shape_is_one_line(d, message):
    """Were AttributeError, TypeError and ValueError tracebacks."""
    with pytest.raises(OptionError) as e:
        Knowledge.from_dict(d)
    assert message in str(e.value)


def test_from_pgmpy_of_another_shape_is_one_line():
    expert = type("E", (), {"forbidden_edges": 5, "required_edges": None, "temporal_order": [["a"], 5]})()
    with pytest.raises(OptionError, match="from_pgmpy: forbidden_edges, required_edges and temporal_order"):
        Knowledge.from_pgmpy(expert)


def test_a_name_in_other_unicode_code_points_is_named_as_such(tmp_path):
    """A knowledge name that is a variable's in other code points ('café' with a combining
    accent against the header's one-code-point 'é': they look the same) is refused saying
    so; the message was 'unknown node 'café' (... they are ..., café)', or 'did you mean
    'café'?', a name that looked like the one refused."""
    import re
    import unicodedata

    from bigbn.errors import DataError
    from bigbn.io.data import no_column

    composed, decomposed = (unicodedata.normalize(f, "café") for f in ("NFC", "NFD"))
    names = ["a", composed, "b"]
    (tmp_path / "t.csv").write_text(f"node,tier\na,1\n{decomposed},1\nb,2\n", encoding="utf-8")
    hint = re.escape(f"(did you mean '{composed}'? the same letters in other Unicode code points")
    with pytest.raises(DataError, match=re.escape(f"t.csv, line 3, column node: unknown node '{decomposed}' ") + hint):
        Knowledge.from_files(names, 2, tiers=tmp_path / "t.csv")
    for given in (dict(forbidden=[(decomposed, "a")]), dict(tiers=[["a", decomposed], ["b"]])):
        with pytest.raises(OptionError, match=re.escape(f"unknown variable '{decomposed}'") + ".* " + hint):
            Knowledge(**given).bind(names, 2)
    with pytest.raises(OptionError, match="tier 1 " + hint):
        Knowledge(tiers=[["a", decomposed], ["b"]]).tier_ids(names)
    assert "the same letters in other Unicode" in str(no_column("f.csv", decomposed, names, "the series column"))
    with pytest.raises(DataError, match=r"unknown node 'cafe' \(not a variable of the data"):  # no accent: another name
        (tmp_path / "f.csv").write_text("parent,child\ncafe,a\n", encoding="utf-8")
        Knowledge.from_files(names, 2, forbid=tmp_path / "f.csv")


def test_write_keeps_names_with_surrounding_spaces_commas_and_quotes(tmp_path):
    """Knowledge.write wrote " A" unquoted and the reader stripped it: the knowledge read back
    named "A" (another variable, or none). A quoted cell is now kept as written, an unquoted
    one still stripped ("a, b" is a, b)."""
    names = [" A", "A", "B ", "c,d", 'say "hi"', "x=1", "#y", "\tt"]
    know = Knowledge(tiers=[[" A", "A"], ["B ", "c,d", 'say "hi"', "x=1", "#y", "\tt"]],
                     forbidden=[("B ", " A")], required=[("c,d", 'say "hi"')],
                     edge_prob={("x=1", "#y"): 0.25, ("\tt", "B "): 0.5}, max_parents={" A": 1, "\tt": 0})
    files = know.write(tmp_path / "k")
    back = Knowledge.from_files(names, 2, tiers=files["tiers"], forbid=files["forbid"],
                                require=files["require"], edge_prob=files["edge_prob"],
                                max_parents=files["max_parents"])
    assert back == know
    hand = _write(tmp_path / "h.csv", "parent , child", [(" A ", '"B " ')])
    assert Knowledge.from_files(names, 2, forbid=hand).forbidden == (("A", "B "),)


def test_one_required_parent_is_said_in_the_singular():
    """"b has 1 required parents (a)": one parent is "1 required parent"."""
    with pytest.raises(OptionError, match=r"^b has 1 required parent \(a\) but at most 0 allowed$"):
        Knowledge(required=[("a", "b")], max_parents={"b": 0})
    with pytest.raises(OptionError, match=r"^b has 1 parent of prior probability 1 \(a\) but at most 0 allowed$"):
        Knowledge(edge_prob={("a", "b"): 1.0}, max_parents={"b": 0})
