"""When search scans the filtered set exactly instead of walking the HNSW index."""

from __future__ import annotations

from engram.memories.search.planner import exact_scan_cap


def test_the_threshold_is_the_floor_for_a_small_index() -> None:
    assert exact_scan_cap(5000, index_rows=10_000, candidates=40, max_scan_tuples=40_000) == 5000


def test_the_cap_grows_with_the_square_root_of_the_index_where_both_paths_cost_the_same() -> None:
    # sqrt(8 * 40 * 1M) = 17888: exact scans of up to ~18K rows at 1M indexed rows.
    assert exact_scan_cap(5000, index_rows=1_000_000, candidates=40, max_scan_tuples=40_000) == 17_888
    # More candidates (a larger limit) make the index walk longer, so more is scanned exactly.
    assert exact_scan_cap(5000, index_rows=1_000_000, candidates=400, max_scan_tuples=40_000) == 56_568


def test_a_huge_index_raises_the_cap_so_the_iterative_scan_can_still_fill_the_top_k() -> None:
    # 100M indexed rows: 40 candidates within 40K visited entries need a population of 100K; twice that.
    assert exact_scan_cap(5000, index_rows=100_000_000, candidates=40, max_scan_tuples=40_000) == 200_000


def test_a_model_without_an_index_is_always_scanned_exactly() -> None:
    assert exact_scan_cap(5000, index_rows=None, candidates=40, max_scan_tuples=40_000) >= 2**30
