"""The per-node shift of local scores (bigbn/scores/offsets.py): what it leaves alone, what it
shifts, what it raises to a floor and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest

import bigbn
import naive
from bigbn.errors import DataError
from bigbn.scores.offsets import CLAMP, NEGLIGIBLE, SAFE, centre
from bigbn.scores.base import BDeu


def test_scores_of_data_size_pass_untouched():
    """Below SAFE nothing is shifted: the same array, so runs on data keep their bits."""
    beta = naive.random_beta(6, 2, np.random.default_rng(1), spread=SAFE / 2)
    beta[2, 5] = -np.inf
    out, c = centre(beta, list("abcdef"))
    assert out is beta and not c.any()


def test_a_shifted_node_is_exact_near_its_best_and_floored_far_below():
    rng = np.random.default_rng(2)
    beta = rng.uniform(-40, 0, (3, 7))
    beta[1] += 3e12  # 3e12 + x: the subtraction of the best is exact (Sterbenz)
    beta[2, 0] = 5e15  # node 2's empty set far above the rest: they are floored
    beta[2, 4] = -np.inf
    out, c = centre(beta, ["a", "b", "c"])
    assert c[0] == 0 and np.array_equal(out[0], beta[0])
    assert c[1] == beta[1].max() and out[1].max() == 0
    assert np.array_equal(out[1] + c[1], beta[1])  # every difference carried exactly
    assert c[2] == 5e15 and out[2, 0] == 0 and out[2, 4] == -np.inf
    assert np.array_equal(out[2, [1, 2, 3, 5, 6]], np.full(5, -CLAMP))


@pytest.mark.parametrize("empty", [-6e12, -np.inf])
def test_families_float64_cannot_carry_are_refused(empty):
    """Node b's best is 6e12 above its empty set (or b has none), so every family of b
    can matter, and at 6e12 float64 spacing is 1e-3 nats."""
    beta = np.array([[-1.0, -2.0, -3.0], [empty, 0.0, -6e12 - 7.5], [-1.0, -1.5, -9.0]])
    with pytest.raises(DataError, match="scores of 'b' reach 6e\\+12 nats below its best"):
        centre(beta, ["a", "b", "c"], "s.jkl")
    beta[1, 0] = -NEGLIGIBLE / 2  # now the empty set is near the best: the far family is negligible
    out, c = centre(beta, ["a", "b", "c"])
    assert out[1, 2] == -NEGLIGIBLE / 2 - CLAMP


class _Shifted(BDeu):
    """BDeu plus a large constant per node (up to 1e16, where float64 spaces numbers 2
    apart): the scores as this object returns them are BDeu's rounded to that spacing."""

    name = "bdeu-shifted"
    constants = np.array([3e15, -7e13, 1e16, 0.0, -2.5e14])

    def local_scores(self, ds, k, options):
        return BDeu().local_scores(ds, k, options) + self.constants[:, None]


def test_a_score_object_with_huge_scores_against_exact_arithmetic(tmp_path):
    """The float path (a Score object, not a file): the exact posterior of the scores the
    object returns, summed over every DAG in 1300-bit arithmetic; 0f74746 put pairs above 1."""
    from bigbn.api import load_dataset, score_families
    from bigbn.kernels.families import family_masks, unsqueeze

    rows = np.loadtxt("examples/asia.csv", delimiter=",", skiprows=1, dtype=str)[:400, :5]
    header = open("examples/asia.csv").readline().strip().split(",")[:5]
    data = tmp_path / "five.csv"
    data.write_text(",".join(header) + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    ds, score, _ = load_dataset(str(data), None, _Shifted(), None)
    beta = score_families(ds, score, 2)
    masks = family_masks(4, 2).tolist()
    scores = [{unsqueeze(sq, i): float(beta[i, f]) for f, sq in enumerate(masks)} for i in range(5)]
    P, _, log_px = naive.exact_by_dags(scores, 2)
    res = bigbn.learn(data, max_parents=2, score=_Shifted())
    np.testing.assert_allclose(res.posterior, P, rtol=0, atol=1e-12)
    assert ((P > 0.05) & (P < 0.95)).sum() >= 4
    assert res.log_marginal == pytest.approx(float(log_px), rel=1e-15)
