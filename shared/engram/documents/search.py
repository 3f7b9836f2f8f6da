"""Chunk search for `POST /v1/search` (scope chunks or all), plugged into MemoryService."""

from __future__ import annotations

import dataclasses
from typing import Any

from engram.db.database import TenantTx
from engram.documents import repo
from engram.memories import repo as memories_repo
from engram.memories.repo import SearchPlan


class ChunkSearcher:
    def __init__(
        self, *, exact_scan_threshold: int = 20_000, ef_search: int = 100, max_scan_tuples: int = 40_000
    ) -> None:
        self.exact_scan_threshold = exact_scan_threshold
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples

    def search(self, cur: TenantTx, plan: SearchPlan) -> list[dict[str, Any]]:
        f = plan.filters
        if f.memory_type or f.agent_id is not None or f.conversation_id is not None:
            return []  # chunks have no memory type, agent or conversation: none can match
        if plan.vector is not None:
            population = repo.count_chunks_up_to(
                cur, plan.tenant_id, plan.vector.model, plan.container, self.exact_scan_threshold
            )
            exact = population <= self.exact_scan_threshold
            if not exact:
                memories_repo.tune_vector_scan(
                    cur, max(self.ef_search, plan.candidates), self.max_scan_tuples
                )
            plan = dataclasses.replace(plan, vector=dataclasses.replace(plan.vector, exact=exact))
        return repo.search_chunks(cur, plan)
