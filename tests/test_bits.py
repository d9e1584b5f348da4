"""bigbn/kernels/bits.py, the one place bigbn counts bits: the scalar `popcount` (numba kernels and
Python alike) and the vectorised `popcounts`, against tests/naive.py's bit-by-bit count."""

import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

import naive
from bigbn.kernels.bits import lowest_bit, popcount, popcounts

EDGES = [0, 1, 2, 3, 255, 1 << 31, (1 << 32) - 1, 1 << 61, (1 << 62) | 1, (1 << 63) - 1]


@njit
def _in_a_kernel(masks, out):
    for j in range(masks.size):
        out[j] = popcount(masks[j])


@njit
def _words_in_a_kernel(words, out):
    for j in range(words.size):
        out[j] = popcount(words[j])


def test_popcount_against_naive_on_edge_cases_and_random_masks():
    rng = np.random.default_rng(0)
    masks = np.array(EDGES + rng.integers(0, 1 << 63, 2000, dtype=np.int64).tolist()
                     + [(1 << b) - 1 for b in range(64)], dtype=np.int64)
    want = np.array([naive.popcount(m) for m in masks], dtype=np.int64)
    assert want[len(EDGES) - 1] == 63 and want.max() == 63 and want.min() == 0
    assert [popcount(int(m)) for m in masks] == want.tolist()  # from Python
    out = np.empty(masks.size, dtype=np.int64)
    _in_a_kernel(masks, out)  # inside a numba kernel
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(popcounts(masks), want)
    assert popcounts(masks).dtype == np.int64


def test_popcount_of_uint64_words_and_negative_masks():
    """scores.py counts bits of uint64 words; all 64 bits count."""
    words = np.array([0, 1, 2**63, 2**64 - 1, 0xF0F0F0F0F0F0F0F0], dtype=np.uint64)
    out = np.empty(words.size, dtype=np.int64)
    _words_in_a_kernel(words, out)
    assert out.tolist() == [0, 1, 1, 64, 32] == [naive.popcount(w) for w in words.tolist()]
    neg = np.array([-1, -2, np.iinfo(np.int64).min], dtype=np.int64)
    assert popcounts(neg).tolist() == [64, 63, 1] == [naive.popcount(m) for m in neg]


def test_popcounts_keeps_the_shape():
    grid = np.arange(64, dtype=np.int64).reshape(4, 4, 4)
    out = popcounts(grid)
    assert out.shape == (4, 4, 4)
    assert out.ravel().tolist() == [naive.popcount(m) for m in range(64)]
    assert popcounts(np.zeros(0, dtype=np.int64)).shape == (0,)
    assert popcounts([7, 8]).tolist() == [3, 1] and int(popcounts(np.int64(5))) == 2


@settings(max_examples=200, deadline=None)
@given(st.integers(1, (1 << 63) - 1))
def test_lowest_bit_and_popcount_agree(x):
    assert lowest_bit(x) == naive.popcount((x & -x) - 1) == (x & -x).bit_length() - 1
    assert popcount(x) == naive.popcount(x) == int(popcounts(np.array([x]))[0])
