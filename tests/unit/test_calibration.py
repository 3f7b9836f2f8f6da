"""The hybrid score's calibration (engram.memories.search.fusion.calibrated): a probability that
ranks as the fused score does within a search, and reads a result against the search's best."""

from __future__ import annotations

import itertools

import pytest

from engram.memories.search import fusion

FUSED = [i / 100 for i in range(0, 131, 5)]


@pytest.mark.parametrize("best", [0.3, 0.6, 0.9, 1.3])
def test_within_one_search_the_score_keeps_the_fused_order(best: float) -> None:
    # Given the fused scores of one search's results, all at or below its best
    fused = [f for f in FUSED if f <= best]

    # When each is calibrated against the search's best
    scores = [fusion.calibrated(f, best) for f in fused]

    # Then the scores rise with the fused score, strictly, and stay within 0-1
    assert all(low < high for low, high in itertools.pairwise(scores))
    assert all(0.0 < s < 1.0 for s in scores)


def test_a_result_far_below_its_search_best_scores_lower_than_the_same_fused_score_at_the_top() -> None:
    # Given one fused score, as a search's best result and as a result under a much better one
    at_the_top = fusion.calibrated(0.6, 0.6)
    under_a_better_match = fusion.calibrated(0.6, 0.95)

    # Then the result under the better match is the less likely to be relevant
    assert under_a_better_match < at_the_top


def test_a_weak_best_match_falls_below_the_floor_and_a_strong_one_clears_it() -> None:
    # Given the best result of a search with nothing related (about the vector part of a 0.3
    # similarity, no query word in common) and of one with a close match (0.8 similarity, every word)
    unrelated = fusion.calibrated(0.18, 0.18)
    match = fusion.calibrated(0.88, 0.88)

    # Then the floor removes the first and keeps the second, with room
    assert unrelated < fusion.SCIFACT_FLOOR / 2
    assert match > 0.5
