"""A search plan: what each leg of the fused query looks for (planner.py sets how the vector leg may
run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from psycopg import sql

from engram.db.vectors import vector_sql
from engram.memories.models import SearchFilters
from engram.memories.periods import Period
from engram.memories.predicates import CURRENT, ContainerScope, TimeScope

# How many candidates each leg hands to fusion, per result asked for.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 40


@dataclass(frozen=True)
class VectorQuery:
    vector: Sequence[float]
    model: str
    exact: bool
    # The vector as a SQL constant, written once: a hybrid statement names it in several places.
    value: sql.SQL

    @classmethod
    def of(cls, vector: Sequence[float], model: str, *, exact: bool) -> VectorQuery:
        return cls(vector, model, exact, vector_sql(vector))


@dataclass(frozen=True)
class GraphKeys:
    """The query's word runs that may name an entity (engram.graph.names.query_keys), and those it
    writes as names: the graph leg looks the entities up (engram.graph.repo.entities_named_query)."""

    keys: tuple[str, ...]
    named: tuple[str, ...]


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
    # Hybrid search: the graph leg, when the query has words that may name entities (the statement
    # looks them up, and the entities one relation away from them).
    graph: GraphKeys | None = None
    # Hints of engram.memories.search.understanding (hybrid): the people the query names (name keys;
    # memories whose text names them are proposed and score a people match) and the period it names
    # (memories of that period are proposed and score a time match).
    people: tuple[str, ...] = ()
    period: Period | None = None
    # With a vector: the largest filtered population the vector leg scans exactly; the statement
    # counts the population (up to this + 1) and walks the HNSW index above it. None: always exact
    # (`vector.exact` then says which one runs).
    exact_cap: int | None = None
    # With a vector leg that may walk an HNSW index: the walk's candidate list (hnsw.ef_search), sized by
    # the planner to the index walked (planner.walk_ef). None: the leg scans exactly.
    ef_search: int | None = None
    # Without a vector, under a filter the corpus lists the rows of (repo.Corpus.scope_ids): the most
    # rows the text leg ranks its matches among (text.leg_within); the statement lists the scope up to
    # this + 1 and returns its size (`population`), and checks the best matches one by one above it.
    # None: one by one. With a vector the population count decides instead (exact_cap, vector.exact).
    scope_cap: int | None = None


def candidates_for(limit: int) -> int:
    return max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
