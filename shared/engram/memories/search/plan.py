"""A search plan: what each leg of the fused query looks for (planner.py chooses how the vector leg
runs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from engram.memories.models import SearchFilters
from engram.memories.predicates import CURRENT, ContainerScope, TimeScope

# How many candidates each leg hands to fusion, per result asked for.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 40


@dataclass(frozen=True)
class VectorQuery:
    vector: Sequence[float]
    model: str
    exact: bool


@dataclass(frozen=True)
class SearchPlan:
    tenant_id: UUID
    text: str | None
    vector: VectorQuery | None
    container: ContainerScope | None
    filters: SearchFilters
    candidates: int
    limit: int
    time: TimeScope = CURRENT
    # The entities the query names (graph.repo.entities_named): the graph leg, when there are any.
    graph_entities: tuple[UUID, ...] = ()

    @property
    def legs(self) -> int:
        return (self.vector is not None) + (self.text is not None) + bool(self.graph_entities)


def candidates_for(limit: int) -> int:
    return max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
