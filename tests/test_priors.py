"""Structure priors and hard constraints (bigbn/scores/priors.py) against direct enumeration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bigbn.errors import DataError, OptionError
from bigbn.kernels.families import family_masks, mask_to_nodes, unsqueeze
from bigbn.scores.priors import log_prior, read_edge_list, read_edge_prob, read_max_parents

import naive
import helpers as h


def families(n, k):
    """[(i, f, parents as a set)] for every node and family, straight from bigbn.kernels.families."""
    masks = family_masks(n - 1, k).tolist()
    return [(i, f, set(mask_to_nodes(unsqueeze(m, i)))) for i in range(n) for f, m in enumerate(masks)]


def reference(n, k, kind, edge_prob=None, forbid=(), require=(), max_parents=None):
    """log ρ by the definition, one family at a time."""
    F = len(family_masks(n - 1, k))
    out = np.empty((n, F))
    for i, f, G in families(n, k):
        rho = 1.0 if kind == "uniform" else 1.0 / math.comb(n - 1, len(G))
        if edge_prob is not None:
            for u in range(n):
                if u != i and not np.isnan(edge_prob[u, i]):
                    rho *= edge_prob[u, i] if u in G else 1.0 - edge_prob[u, i]
        if any(v == i and u in G for u, v in forbid):
            rho = 0.0
        if any(v == i and u not in G for u, v in require):
            rho = 0.0
        if max_parents is not None and len(G) > max_parents[i]:
            rho = 0.0
        out[i, f] = math.log(rho) if rho > 0 else -math.inf
    return out


@pytest.mark.parametrize("n,k", [(1, 0), (2, 1), (4, 2), (5, 4), (6, 3)])
@pytest.mark.parametrize("kind", ["uniform", "koivisto-sood"])
def test_kinds_match_definition(n, k, kind):
    got = log_prior(n, k, kind)
    assert got.shape == (n, len(family_masks(n - 1, k))) and got.dtype == np.float64
    np.testing.assert_allclose(got, reference(n, k, kind), rtol=0, atol=1e-12)


def test_koivisto_sood_sizes_equally_likely():
    # With k = n-1, ρ sums to 1 over the families of each size, so to k+1 in total.
    n = 6
    got = log_prior(n, n - 1, "koivisto-sood")
    np.testing.assert_allclose(np.exp(got).sum(axis=1), n)


def test_default_kind_is_koivisto_sood():
    np.testing.assert_array_equal(log_prior(5, 2), log_prior(5, 2, "koivisto-sood"))


@pytest.mark.parametrize("kind", ["uniform", "koivisto-sood"])
def test_edge_prob_factor(kind):
    rng = np.random.default_rng(1)
    n, k = 5, 3
    p = rng.uniform(0.05, 0.95, size=(n, n))
    p[rng.random((n, n)) < 0.3] = np.nan  # no opinion
    p[0, 1], p[2, 3] = 0.0, 1.0
    got = log_prior(n, k, kind, edge_prob=p)
    np.testing.assert_allclose(got, reference(n, k, kind, edge_prob=p), rtol=0, atol=1e-12)
    # p = 1/2 everywhere is a constant factor per node: same as no edge_prob, shifted.
    half = log_prior(n, k, kind, edge_prob=np.full((n, n), 0.5))
    np.testing.assert_allclose(half - log_prior(n, k, kind), (n - 1) * math.log(0.5))


def test_constraints_hit_exactly_the_right_families():
    n, k = 6, 3
    forbid = [(0, 1), (5, 1), (3, 4)]
    require = [(2, 1), (4, 0), (0, 3)]
    limits = np.array([2, 3, 1, 3, 0, 2])
    got = log_prior(n, k, "koivisto-sood", forbid=forbid, require=require, max_parents=limits)
    want = reference(n, k, "koivisto-sood", forbid=forbid, require=require, max_parents=limits)
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], atol=1e-12)
    # spot checks stated independently of the reference
    for i, f, G in families(n, k):
        if i == 1:
            assert np.isneginf(got[i, f]) == (0 in G or 5 in G or 2 not in G)
        if i == 4:
            assert np.isneginf(got[i, f]) == (len(G) > 0)


def test_index_pairs_accept_numpy_and_duplicates():
    a = log_prior(4, 2, forbid=np.array([[0, 1], [0, 1]]), require={(2, 3)})
    b = log_prior(4, 2, forbid=[(0, 1)], require=[(2, 3)])
    np.testing.assert_array_equal(a, b)


NAMES = ["A", "B", "C", "D"]


@pytest.mark.parametrize("kwargs,message", [
    (dict(kind="bdeu"), "unknown prior"),
    (dict(forbid=[(0, 1)], require=[(0, 1)]), "edge A -> B is both required and forbidden"),
    (dict(edge_prob=np.where(np.eye(4) > 0, np.nan, 0.0), require=[(0, 1)]),
     "edge A -> B is both required and forbidden"),
    (dict(require=[(2, 2)]), "required edge C -> C is a self-loop"),
    (dict(require=[(0, 3), (1, 3), (2, 3)]), "D has 3 required parents (A, B, C) but at most 2"),
    (dict(require=[(0, 3), (1, 3)], max_parents=np.array([2, 2, 2, 1])),
     "D has 2 required parents (A, B) but at most 1"),
    (dict(require=[(0, 1), (1, 2), (2, 0)]), "required edges form a cycle: A -> B -> C -> A"),
    (dict(require=[(3, 1), (1, 2), (2, 3)]), "required edges form a cycle: B -> C -> D -> B"),
    (dict(edge_prob=np.triu(np.ones((4, 4)), 1)),  # p = 1 for every u -> v with u < v
     "D has 3 required parents (A, B, C) but at most 2"),
    (dict(require=[(0, 1)], max_parents=np.array([2, 0, 2, 2])), "B has 1 required parent (A) but at most 0 allowed"),
    (dict(max_parents=np.array([1, 2, 3, 1])), "max parents of C is 3, must be in 0..k=2"),
    (dict(max_parents=np.array([1, 2])), "max_parents must be an integer array"),
    (dict(forbid=[(0, 9)]), "node index 9 is not in 0..3"),
    (dict(edge_prob=np.full((4, 4), 1.5)), "edge_prob entries must lie in [0, 1]"),
    (dict(edge_prob=np.full((3, 3), 0.5)), "edge_prob must have shape (4, 4)"),
])
def test_validation_errors(kwargs, message):
    kind = kwargs.pop("kind", "koivisto-sood")
    with pytest.raises(OptionError) as e:
        log_prior(4, 2, kind, names=NAMES, **kwargs)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_tight_constraints_are_not_refused():
    # Every edge into D forbidden and D limited to no parents: only the empty family is left.
    got = log_prior(4, 2, forbid=[(u, 3) for u in range(3)], max_parents=np.array([2, 2, 2, 0]))
    assert np.isfinite(got[3, 0]) and np.isneginf(got[3, 1:]).all()


def test_names_default_to_indices():
    with pytest.raises(OptionError, match="required edges form a cycle: 0 -> 1 -> 0"):
        log_prior(3, 2, require=[(0, 1), (1, 0)])


# ---- end to end with the naive posteriors ----------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constraints_give_exact_posteriors(seed):
    rng = np.random.default_rng(seed)
    n, k = 5, 2
    scores = naive.random_beta(n, k, rng, spread=5.0)
    forbid = [(0, 1), (3, 2), (4, 0)]
    require = [(1, 2), (0, 4)]
    p = np.full((n, n), np.nan)
    p[2, 3], p[4, 1] = 0.0, 1.0
    beta = scores + log_prior(n, k, forbid=forbid, require=require, edge_prob=p)
    for P, _ in (naive.edges_by_dags(beta, k), naive.edges_by_orders(beta, k)):
        for u, v in forbid + [(2, 3)]:
            assert P[u, v] == 0.0
        for u, v in require + [(4, 1)]:  # 1 up to the rounding of the reference's log p(x)
            assert P[u, v] == pytest.approx(1.0, abs=1e-12)
        # and every other edge not closing a cycle with the required chain 0->4->1->2 is uncertain
        chain = [0, 4, 1, 2]
        ruled = set(forbid + require + [(2, 3), (4, 1)])
        ruled |= {(chain[b], chain[a]) for a in range(4) for b in range(a + 1, 4)}
        free = [(u, v) for u in range(n) for v in range(n) if u != v and (u, v) not in ruled]
        assert all(0.0 < P[u, v] < 1.0 for u, v in free)


def test_edge_prob_acts_like_rho():
    # Factorised edge prior = adding its log factor to beta by hand.
    rng = np.random.default_rng(5)
    n, k = 4, 3
    scores = naive.random_beta(n, k, rng, spread=3.0)
    p = rng.uniform(0.1, 0.9, size=(n, n))
    by_hand = scores + reference(n, k, "uniform", edge_prob=p)
    P1, l1 = naive.edges_by_dags(scores + log_prior(n, k, "uniform", edge_prob=p), k)
    P2, l2 = naive.edges_by_dags(by_hand, k)
    np.testing.assert_allclose(P1, P2, atol=1e-12)
    assert l1 == pytest.approx(l2, abs=1e-10)


# ---- readers ---------------------------------------------------------------------------

def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_edge_list(tmp_path):
    path = write(tmp_path, "e.csv", "parent,child\nA,B\n\n D , A\n")
    assert read_edge_list(path, NAMES) == [(0, 1), (3, 0)]


@pytest.mark.parametrize("text,message", [
    ("parent,child\nA,B\nA,E\n", "e.csv, line 3, column child: unknown node 'E'"),
    ("parent,child\nA,B\nX,A\n", "e.csv, line 3, column parent: unknown node 'X'"),
    ("from,to\nA,B\n", "e.csv, line 1: expected header parent,child"),
    ("parent,child\nA,B,C\n", "e.csv, line 2: expected 2 fields, found 3"),
    ("", "e.csv, line 1: expected header parent,child"),
    ("parent,child\nA,B\nC,C\n", "e.csv, line 3: self-loop C -> C"),
    ("parent,child\nA,B\nid,A\n", "unknown node 'id' (not a variable of the data; they are A, B, C, D)"),
    ("parent,child\nA,b\n", "line 2, column child: unknown node 'b' (did you mean 'B'? names are case-sensitive)"),  # not "required edge C -> C" without a file
])
def test_read_edge_list_errors(tmp_path, text, message):
    path = write(tmp_path, "e.csv", text)
    with pytest.raises(DataError) as e:
        read_edge_list(path, NAMES)
    assert message in str(e.value)


def test_read_edge_list_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        read_edge_list(tmp_path / "nope.csv", NAMES)


def test_read_edge_prob(tmp_path):
    path = write(tmp_path, "p.csv", "parent,child,prob\nA,B,0.25\nC,A,1\n")
    p = read_edge_prob(path, NAMES)
    assert p.shape == (4, 4)
    assert p[0, 1] == 0.25 and p[2, 0] == 1.0
    assert np.isnan(p).sum() == 14
    q = read_edge_prob(path, NAMES, default=0.5)
    assert q[1, 0] == 0.5 and q[0, 1] == 0.25


@pytest.mark.parametrize("text,message", [
    ("parent,child,prob\nA,B,1.5\n", "p.csv, line 2, column prob: '1.5' is not a probability"),
    ("parent,child,prob\nA,B,x\n", "p.csv, line 2, column prob: 'x' is not a probability"),
    ("parent,child,prob\nA,B,0.1\nA,B,0.2\n", "p.csv, line 3: edge A -> B listed twice"),
    ("parent,child,prob\nA,A,0.1\n", "p.csv, line 2: self-loop A -> A"),
    ("parent,child,prob\nA,Q,0.1\n", "p.csv, line 2, column child: unknown node 'Q'"),
])
def test_read_edge_prob_errors(tmp_path, text, message):
    path = write(tmp_path, "p.csv", text)
    with pytest.raises(DataError) as e:
        read_edge_prob(path, NAMES)
    assert message in str(e.value)


def test_read_max_parents(tmp_path):
    path = write(tmp_path, "m.csv", "node,max_parents\nB,0\nD,2\n")
    np.testing.assert_array_equal(read_max_parents(path, NAMES, 3), [3, 0, 3, 2])
    np.testing.assert_array_equal(read_max_parents(str(path), NAMES, 3), [3, 0, 3, 2])
    np.testing.assert_array_equal(read_max_parents("2", NAMES, 3), [2, 2, 2, 2])


def test_read_max_parents_errors(tmp_path):
    path = write(tmp_path, "m.csv", "node,max_parents\nB,4\n")
    with pytest.raises(DataError, match="m.csv, line 2, column max_parents: '4' is not an integer in 0..k=3"):
        read_max_parents(path, NAMES, 3)
    path = write(tmp_path, "m.csv", "node,max_parents\nZ,1\n")
    with pytest.raises(DataError, match="line 2, column node: unknown node 'Z'"):
        read_max_parents(path, NAMES, 3)
    with pytest.raises(DataError, match="not a file and not an integer"):
        read_max_parents(tmp_path / "missing.csv", NAMES, 3)
    with pytest.raises(OptionError, match="max parents 5 must be in 0..k=3"):
        read_max_parents("5", NAMES, 3)


# ------------------------------------------------------------ moved from the review tests (issues #10, #12)

def test_bom_in_constraint_files(tmp_path):
    forbid = tmp_path / "forbid.csv"
    forbid.write_bytes(b"\xef\xbb\xbfparent,child\nasia,tub\n")
    r = h.cli("run", h.ASIA, "-w", tmp_path / "w", "-q", "-k", 1, "--forbid", forbid)
    assert r.exit_code == 0, r.output
    assert "asia,tub,0\n" in (tmp_path / "w" / "edges.csv").read_text()


def test_node_listed_twice_in_a_max_parents_file(tmp_path):
    f = tmp_path / "mp.csv"
    f.write_text("node,max_parents\ntub,1\nlung,2\ntub,0\n")
    r = h.cli("run", h.ASIA, "-w", tmp_path / "w", "-q", "--max-parents-file", f)
    assert r.exit_code == 1 and "line 4: node 'tub' is listed again (first on line 2)" in r.output


_ROW = [np.nan, 0.5, 0.5, 0.5]


@pytest.mark.parametrize("edge_prob, message", [
    ({(0, 1): {}}, "edge_prob must be a (4, 4) matrix (entry [u][v]: the prior probability of u -> v), "
                   "got a dict"),
    (np.array([[np.nan, {}, 0.5, 0.5]] + [_ROW] * 3, dtype=object),
     "edge_prob of A -> B (entry [0][1]) must be a probability in [0, 1] (or NaN for no opinion), got {}"),
    ([[None, 0.5, "0.5", 0.5]] + [_ROW] * 3,  # the diagonal is ignored, text is not a number
     "edge_prob of A -> C (entry [0][2]) must be a probability in [0, 1] (or NaN for no opinion), got '0.5'"),
    ([_ROW, _ROW[:3]] + [_ROW] * 2, "edge_prob must be a (4, 4) matrix (entry [u][v]: the prior "
                                    "probability of u -> v); cannot read it as one"),
], ids=["dict", "dict entry", "text entry", "ragged"])
@pytest.mark.parametrize("tiered", [False, True], ids=["untiered", "tiered"])
def test_edge_prob_that_is_not_a_matrix_of_numbers(edge_prob, message, tiered):
    """Issue #37: edge_prob={(u, v): {...}}, or an entry that is not a number, raised
    TypeError from float(), with and without tiers (bigbn/plan/tiers.py uses the same check)."""
    import bigbn

    with pytest.raises(OptionError) as e:
        if tiered:
            X = np.random.default_rng(0).integers(0, 2, (30, 4))
            bigbn.learn(X, names=NAMES, max_parents=2, tiers=[NAMES[:2], NAMES[2:]],
                        prior_kwargs={"edge_prob": edge_prob})
        else:
            log_prior(4, 2, names=NAMES, edge_prob=edge_prob)
    assert str(e.value) == message


def test_edge_probabilities_float64_turns_into_0_or_1_are_refused(tmp_path):
    """'1e-400' read as 0.0 silently forbade the edge, '0.99999999999999999' read as 1.0
    silently required it, '1.00000000000000000001' (above 1) was taken as 1, and a subnormal
    '1e-320' went into the prior's log with a few digits. Each is refused naming file, line
    and cell; 0, 1, '1.0', '0.000' and '1e0' are read as before."""
    import re

    names = ["A", "B", "C", "D"]
    for cell, needle in (("1e-400", "too close to 0 .* forbid the edge"),
                         ("0.99999999999999999", "too close to 1 .* require the edge"),
                         ("1.00000000000000000001", "not a probability in \\[0, 1\\]"),
                         ("1e-320", "too close to 0 .* hold fewer digits")):
        f = tmp_path / "p.csv"
        f.write_text(f"parent,child,prob\nB,C,0.5\nA,B,{cell}\n")
        with pytest.raises(DataError, match=rf"p\.csv, line 3, column prob: '{re.escape(cell)}' .*{needle}"):
            read_edge_prob(f, names)
    f.write_text("parent,child,prob\nA,B,1.0\nB,C,0.000\nC,D,1e0\nD,A,0\nB,A,1\nC,B,1e-300\n")
    p = read_edge_prob(f, names)
    assert [p[0, 1], p[1, 2], p[2, 3], p[3, 0], p[1, 0], p[2, 1]] == [1.0, 0.0, 1.0, 0.0, 1.0, 1e-300]


@pytest.mark.parametrize("cell", ["0.2_5", "٠.٥", "０.５"])
def test_an_edge_probability_is_written_in_ascii_decimals(tmp_path, cell):
    """float() read '0.2_5' as 0.25 and other scripts' digits as digits: a cell the file does
    not mean as that number was a prior factor with no error (the jkl and tiers readers
    refuse such cells). One line naming file, line and column."""
    f = tmp_path / "p.csv"
    f.write_text(f"parent,child,prob\nA,B,{cell}\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"p\.csv, line 2, column prob: '{cell}' is not a probability in \[0, 1\]"):
        read_edge_prob(f, NAMES)


@pytest.mark.parametrize("cell", ["1_0", "２", "٢"])
def test_a_max_parents_limit_is_written_in_ascii_digits(tmp_path, cell):
    """int() read '1_0' as 10 and '２' as 2: a limit the file does not say, silently."""
    f = tmp_path / "m.csv"
    f.write_text(f"node,max_parents\nB,{cell}\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"m\.csv, line 2, column max_parents: '{cell}' is not an integer in 0..k=12"):
        read_max_parents(f, NAMES, 12)
    with pytest.raises(DataError, match="not a file and not an integer"):
        read_max_parents(cell, NAMES, 12)


@pytest.mark.parametrize("cell", ["0.25", "+.25", "25e-2", "2.5E-1", "1", "0", "1.", "0.2_5", "٠.٥", "1e", "e1",
                                  "0x1", "inf", "nan", "1 0", "--1"])
def test_every_reader_takes_numbers_by_one_grammar(tmp_path, cell):
    """c9e833b gave --edge-prob and --max-parents-file cells a third copy of the number
    patterns of the data reader (and a second of the jkl reader's and the tiers reader's):
    one grammar now, `bigbn.io.data.DECIMAL` and `INTEGER`, which the readers share, so a
    cell one of them takes the others take too."""
    from bigbn.io import data
    from bigbn.scores import jkl, priors

    assert jkl.DECIMAL is priors.DECIMAL is data.DECIMAL and priors.INTEGER is data.INTEGER
    f = tmp_path / "p.csv"
    f.write_text(f"parent,child,prob\na,b,{cell}\n")
    s = tmp_path / "s.jkl"
    s.write_text(f"2\na 1\n{cell} 0\nb 1\n-1 0\n")
    edge, score = True, True
    try:
        read_edge_prob(f, ["a", "b"])
    except DataError:
        edge = False
    try:
        jkl.read_jkl(s)
    except DataError:
        score = False
    assert edge == (score and 0 <= float(cell) <= 1)
    assert bool(data.INTEGER.fullmatch(cell)) == (cell in ("1", "0"))
