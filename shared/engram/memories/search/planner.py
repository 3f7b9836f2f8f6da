"""How a plan's vector leg may run: an exact scan of the filtered rows, or a walk of the HNSW index,
depending on how many rows the filters leave (counted by the statement itself, repo.py). Here: the
population above which the index is walked. No SQL here (the lookups: repo.py)."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from uuid import UUID

from engram.db.database import Database
from engram.memories.search import repo
from engram.memories.search.plan import SearchPlan
from engram.memories.search.repo import Corpus

# Pages an HNSW search reads per index entry it visits, relative to an exact scan's per row (measured).
HNSW_COST_RATIO = 8
# Index sizes change slowly: look each up at most this often per process.
INDEX_ROWS_TTL_S = 300.0
_INDEX_ROWS: dict[tuple[int, str, UUID | None, str, int], tuple[float | None, float]] = {}


def exact_scan_cap(threshold: int, index_rows: float | None, candidates: int, max_scan_tuples: int) -> int:
    """The largest filtered population that is scanned exactly rather than through HNSW.

    An exact scan reads about one page per row of the population P. The HNSW index the search walks
    (the tenant's own, or the model's shared one) holds N rows; walking it until `candidates` rows
    pass the filters visits about candidates * N / P entries, each several pages. The two costs meet
    at P = sqrt(HNSW_COST_RATIO * candidates * N): ~18K rows at N = 1M for the default 40 candidates,
    ~5.7K at N = 100K, which is where `make bench` measured them to meet (buffers read per search).
    The iterative scan also stops after `max_scan_tuples`, so a population below
    2 * candidates * N / max_scan_tuples could not fill the top-k through it: that is scanned exactly
    as well. `threshold` is the floor. A model without an HNSW index is always scanned exactly."""
    if index_rows is None:
        return 2**31 - 2
    crossover = math.isqrt(int(HNSW_COST_RATIO * candidates * index_rows))
    needed_for_recall = math.ceil(2 * candidates * index_rows / max_scan_tuples)
    return max(threshold, crossover, needed_for_recall)


class SearchPlanner:
    """Sets, per corpus (memories, chunks), the population above which the vector leg walks the HNSW
    index. `db` answers the index-size lookups (cached per process)."""

    def __init__(
        self,
        db: Database,
        *,
        exact_scan_threshold: int = 5_000,
        ef_search: int = 100,
        max_scan_tuples: int = 40_000,
    ) -> None:
        self.db = db
        self.exact_scan_threshold = exact_scan_threshold
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples

    def for_corpus(self, corpus: Corpus, plan: SearchPlan) -> SearchPlan:
        if plan.vector is None:
            return plan
        indexed = self._index_rows(corpus, plan.tenant_id, plan.vector.model, len(plan.vector.vector))
        if indexed is None:
            return replace(plan, vector=replace(plan.vector, exact=True), exact_cap=None)
        cap = exact_scan_cap(self.exact_scan_threshold, indexed, plan.candidates, self.max_scan_tuples)
        return replace(plan, exact_cap=cap)

    def scan_settings(self, plan: SearchPlan) -> dict[str, str]:
        """The HNSW scan's settings for this plan (transaction-local; read only by an index walk)."""
        return repo.scan_settings(max(self.ef_search, plan.candidates), self.max_scan_tuples)

    def _index_rows(self, corpus: Corpus, tenant_id: UUID, model: str, dimensions: int) -> float | None:
        """Rows of the index this tenant's search walks: its own, when it has one, else the model's."""
        own = self._cached(corpus, tenant_id, model, dimensions) if corpus.tenant_indexes else None
        return own if own is not None else self._cached(corpus, None, model, dimensions)

    def _cached(self, corpus: Corpus, tenant_id: UUID | None, model: str, dimensions: int) -> float | None:
        key = (id(self.db), corpus.table, tenant_id, model, dimensions)
        cached = _INDEX_ROWS.get(key)
        now = time.monotonic()
        if cached is None or now - cached[1] > INDEX_ROWS_TTL_S:
            with self.db.transaction() as cur:
                cached = (repo.index_rows(cur, corpus.table, tenant_id, model, dimensions), now)
            _INDEX_ROWS[key] = cached
        return cached[0]
