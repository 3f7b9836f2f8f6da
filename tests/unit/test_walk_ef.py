"""How long a list of candidates an HNSW walk keeps (hnsw.ef_search): sized to the index it walks."""

from __future__ import annotations

from engram.memories.search.planner import LARGE_INDEX_EF_SEARCH, walk_ef


def test_a_small_index_is_walked_with_a_short_list() -> None:
    assert walk_ef(10_000, candidates=40) == 64
    assert walk_ef(12_000, candidates=40) == 64


def test_the_list_grows_with_the_index() -> None:
    assert walk_ef(12_001, candidates=40) == 100
    assert walk_ef(60_000, candidates=40) == 100
    assert walk_ef(60_001, candidates=40) == LARGE_INDEX_EF_SEARCH == 160
    assert walk_ef(5_000_000, candidates=40) == 160


def test_the_list_holds_at_least_the_candidates_wanted() -> None:
    # A limit of 50 wants 200 candidates: a walk returns no more rows than its list holds.
    assert walk_ef(10_000, candidates=200) == 200
    assert walk_ef(1_000_000, candidates=200) == 200


def test_a_configured_list_is_used_for_every_index() -> None:
    assert walk_ef(1_000, candidates=40, configured=300) == 300
    assert walk_ef(1_000_000, candidates=40, configured=48) == 48
    assert walk_ef(1_000_000, candidates=100, configured=48) == 100
