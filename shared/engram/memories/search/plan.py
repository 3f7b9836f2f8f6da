"""A search plan: what each leg of the fused query looks for (planner.py chooses how the vector leg
runs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from engram.memories.models import SearchFilters
from engram.memories.periods import Period
from engram.memories.predicates import CURRENT, ContainerScope, TimeScope

# The time leg counts twice in fusion: a period the query names is a strong hint (conversational dev set,
# tests/bench/conversations.py, hybrid evidence recall@10: 0.648 at weight 1, 0.755 at 2, 0.755 at 3).
TIME_LEG_WEIGHT = 2.0
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
    # Entities one relation away from those (graph.repo.neighbours): the graph leg reaches their memories.
    graph_neighbours: tuple[UUID, ...] = ()
    # Hints of engram.memories.search.understanding: the people the query names (name keys; memories
    # that name them rank higher) and the period it names (the time leg: memories of that period).
    people: tuple[str, ...] = ()
    period: Period | None = None

    @property
    def legs(self) -> float:
        """The weight of the legs the plan runs: what a result first in every leg scores in fusion."""
        return (
            (self.vector is not None)
            + (self.text is not None)
            + bool(self.graph_entities or self.people)
            + TIME_LEG_WEIGHT * (self.period is not None)
        )


def candidates_for(limit: int) -> int:
    return max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
