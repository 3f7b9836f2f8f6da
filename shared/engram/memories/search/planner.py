"""How a plan's vector leg runs: an exact scan of the filtered rows, or a walk of the HNSW index. No
SQL here (the counts: repo.py)."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from engram.db.database import TenantTx
from engram.memories.search import repo
from engram.memories.search.plan import SearchPlan
from engram.memories.search.repo import Corpus

# Pages an HNSW search reads per index entry it visits, relative to an exact scan's per row (measured).
HNSW_COST_RATIO = 8
# The size of each model's HNSW index changes slowly: look it up at most this often per process.
INDEX_ROWS_TTL_S = 300.0
_INDEX_ROWS: dict[tuple[int, str, str, int], tuple[float | None, float]] = {}


def exact_scan_cap(threshold: int, index_rows: float | None, candidates: int, max_scan_tuples: int) -> int:
    """The largest filtered population that is scanned exactly rather than through HNSW.

    An exact scan reads about one page per row of the population P. The HNSW index is shared by
    every tenant of a model (N rows); walking it until `candidates` rows pass the filters visits
    about candidates * N / P entries, each several pages. The two costs meet at
    P = sqrt(HNSW_COST_RATIO * candidates * N): ~18K rows at N = 1M for the default 40 candidates,
    which is where `make bench` measured them to meet (buffers read per search). The iterative scan
    also stops after `max_scan_tuples`, so a population below 2 * candidates * N / max_scan_tuples
    could not fill the top-k through it: that is scanned exactly as well. `threshold` is the floor.
    A model without an HNSW index is always scanned exactly."""
    if index_rows is None:
        return 2**31 - 2
    crossover = math.isqrt(int(HNSW_COST_RATIO * candidates * index_rows))
    needed_for_recall = math.ceil(2 * candidates * index_rows / max_scan_tuples)
    return max(threshold, crossover, needed_for_recall)


class SearchPlanner:
    """Decides, per corpus (memories, chunks), whether the plan's vector leg is exact. `cache_key`
    names the database whose index sizes are cached."""

    def __init__(
        self,
        cache_key: int,
        *,
        exact_scan_threshold: int = 5_000,
        ef_search: int = 100,
        max_scan_tuples: int = 40_000,
    ) -> None:
        self.cache_key = cache_key
        self.exact_scan_threshold = exact_scan_threshold
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples

    def for_corpus(self, cur: TenantTx, corpus: Corpus, plan: SearchPlan) -> SearchPlan:
        """The plan with its vector leg exact when the corpus's filtered population is small enough
        (the HNSW scan settings travel with the count, used only if the plan turns out HNSW)."""
        if plan.vector is None:
            return plan
        indexed = self._index_rows(cur, corpus, plan.vector.model, len(plan.vector.vector))
        cap = exact_scan_cap(self.exact_scan_threshold, indexed, plan.candidates, self.max_scan_tuples)
        scan = (max(self.ef_search, plan.candidates), self.max_scan_tuples)
        population = repo.count_population(cur, corpus, plan, cap, scan=scan)
        return replace(plan, vector=replace(plan.vector, exact=population <= cap))

    def _index_rows(self, cur: TenantTx, corpus: Corpus, model: str, dimensions: int) -> float | None:
        key = (self.cache_key, corpus.table, model, dimensions)
        cached = _INDEX_ROWS.get(key)
        now = time.monotonic()
        if cached is None or now - cached[1] > INDEX_ROWS_TTL_S:
            cached = (repo.index_rows(cur, corpus.table, model, dimensions), now)
            _INDEX_ROWS[key] = cached
        return cached[0]
