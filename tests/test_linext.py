"""#LE counting (bigbn/kernels/linext.py) against tests/naive.py on DAGs where the count is not
trivial, including DAGs whose memo outgrows the first hash table (so it is doubled and
the count redone)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from bigbn.errors import EngineError
from bigbn.kernels.linext import FIRST_SLOTS, count_linear_extensions


def random_dag(rng, n, density):
    order = rng.permutation(n)
    pm = np.zeros(n, dtype=np.int64)
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < density:
                pm[order[b]] |= 1 << int(order[a])
    return pm


def bipartite(a, b, missing=()):
    """Sources 0 .. a − 1, each a parent of every sink a .. a + b − 1, less the (u, v) in missing."""
    pm = np.zeros(a + b, dtype=np.int64)
    for v in range(a, a + b):
        for u in range(a):
            if (u, v) not in missing:
                pm[v] |= 1 << u
    return pm


def test_down_set_reference_against_permutations():
    rng = np.random.default_rng(3)
    for _ in range(30):
        pm = random_dag(rng, int(rng.integers(2, 8)), rng.random())
        assert naive.linear_extensions_by_down_sets(pm) == naive.linear_extensions_by_permutations(pm)


def test_random_dags_against_down_sets():
    rng = np.random.default_rng(4)
    dags = np.array([random_dag(rng, 18, d) for d in np.linspace(0.05, 0.5, 40)])
    got = count_linear_extensions(dags)
    want = [naive.linear_extensions_by_down_sets(pm) for pm in dags]
    assert len(set(want)) > 30  # not trivial: the counts differ
    assert got.tolist() == [float(w) for w in want]  # exact below 2^53


@pytest.mark.parametrize("a, b, missing", [(14, 14, ()), (14, 15, ((0, 20), (1, 25))), (15, 14, ((3, 20),))])
def test_memo_larger_than_the_first_table(a, b, missing):
    """Bipartite DAGs of 14 or 15 sources over 14 or 15 sinks need about 2^14 memoised sets
    whichever side the count branches on: more than half the first table, so it is doubled
    and the count redone. Counts beyond 2^53: the float recursion bit for bit, the exact
    count by down-sets to 1e-14."""
    pm = bipartite(a, b, missing)
    with pytest.raises(EngineError, match="more than"):  # more memoised sets than fit the first table
        count_linear_extensions(pm, max_sets=FIRST_SLOTS // 2)
    want = naive.linear_extensions_by_down_sets(pm)
    if not missing:
        assert want == math.factorial(a) * math.factorial(b)
    got = count_linear_extensions(pm)
    assert got == naive.linear_extensions_float_recursion(pm)
    assert got == pytest.approx(want, rel=1e-14)
    many = count_linear_extensions(np.array([pm, pm[::-1] * 0, pm]))  # the table is per DAG
    assert many.tolist() == [got, pytest.approx(math.factorial(a + b), rel=1e-14), got]


def test_stack_kernel_is_the_recursion_bit_for_bit_beyond_2_53():
    """The kernel counts on an explicit stack; its counts are those of the plain
    recursion (naive.linear_extensions_float_recursion) bit for bit, on sparse DAGs of
    24 to 30 nodes whose counts are far beyond 2^53 (so rounding order shows), and agree
    with the exact integer counts by down-sets to 1e-14."""
    rng = np.random.default_rng(39)
    dags = [random_dag(rng, int(rng.integers(24, 31)), float(d)) for d in rng.uniform(0.06, 0.12, 8)]
    got = [count_linear_extensions(pm) for pm in dags]
    assert max(got) > 2.0 ** 60
    for pm, g in zip(dags, got):
        assert g == naive.linear_extensions_float_recursion(pm)
    for pm, g in list(zip(dags, got))[:2]:
        assert g == pytest.approx(naive.linear_extensions_by_down_sets(pm), rel=1e-14)
