"""When search scans the filtered set exactly instead of walking the HNSW index."""

from __future__ import annotations

from engram.memories.service import exact_scan_cap


def test_the_threshold_decides_for_a_small_index() -> None:
    assert exact_scan_cap(5000, index_rows=100_000, candidates=40, max_scan_tuples=40_000) == 5000


def test_a_large_index_raises_the_cap_so_the_iterative_scan_can_still_fill_the_top_k() -> None:
    # 10M indexed rows: 40 candidates within 40K visited rows need a population of 10K; twice that.
    assert exact_scan_cap(5000, index_rows=10_000_000, candidates=40, max_scan_tuples=40_000) == 20_000


def test_a_model_without_an_index_is_always_scanned_exactly() -> None:
    assert exact_scan_cap(5000, index_rows=None, candidates=40, max_scan_tuples=40_000) >= 2**30
