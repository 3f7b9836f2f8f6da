"""POST /v1/search over memories and document chunks: embed the query, plan each corpus's legs, run
the fused query (engram.memories.search.repo), and score the rows alike. No SQL here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from engram.db.database import Database, Party, TenantTx
from engram.graph import repo as graph_repo
from engram.graph.names import query_keys
from engram.memories import repo as memories_repo
from engram.memories.models import Scores, SearchRequest, SearchResponse, SearchResult
from engram.memories.predicates import ContainerScope, TimeScope
from engram.memories.search import repo
from engram.memories.search.plan import SearchPlan, VectorQuery, candidates_for
from engram.memories.search.planner import SearchPlanner
from engram.memories.search.repo import MEMORIES, RRF_K, Corpus
from engram.memories.search.understanding import Understanding, event_period, understand
from engram.observability import tracer
from engram.providers.embeddings import Embedder, check_dimensions


class MemorySearch:
    """`chunks`: the document chunks' corpus (engram.documents.repo.CHUNKS), searched with
    scope chunks or all; without it, only memories are."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        exact_scan_threshold: int = 5_000,
        ef_search: int = 100,
        max_scan_tuples: int = 40_000,
        chunks: Corpus | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.chunks = chunks
        self.planner = SearchPlanner(
            id(db),
            exact_scan_threshold=exact_scan_threshold,
            ef_search=ef_search,
            max_scan_tuples=max_scan_tuples,
        )

    @tracer.capture_method
    def search(self, tenant_id: UUID, request: SearchRequest) -> SearchResponse:
        query_vector: Sequence[float] | None = None
        model = self.embedder.model_id
        if request.mode != "text":
            if request.embedding is not None and request.embedding_model is not None:
                query_vector, model = request.embedding, request.embedding_model
                if model == self.embedder.model_id:
                    check_dimensions(query_vector, self.embedder.dimensions)
            else:
                query_vector = self.embedder.embed_query(_matched_text(request))
        return self.search_with_vector(tenant_id, request, query_vector, model)

    def search_with_vector(
        self, tenant_id: UUID, request: SearchRequest, query_vector: Sequence[float] | None, model: str
    ) -> SearchResponse:
        """Search with the query already embedded (the benchmark times this part alone)."""
        corpora = [c for c in self._corpora(request.scope) if c.can_match(request.filters)]
        with self.db.tenant(tenant_id, Party(user_id=request.user_id)) as cur:
            if query_vector is not None and model != self.embedder.model_id:
                dims = memories_repo.stored_dimensions(cur, tenant_id, model)
                if dims is not None:
                    check_dimensions(query_vector, dims)
            plan = SearchPlan(
                tenant_id=tenant_id,
                text=_matched_text(request) if request.mode != "vector" else None,
                vector=None if query_vector is None else VectorQuery(query_vector, model, exact=True),
                container=ContainerScope.parse(request.container),
                filters=request.filters,
                candidates=candidates_for(request.limit),
                limit=request.limit,
                time=TimeScope(as_of=request.as_of, include_history=request.include_history),
                graph_entities=(
                    graph_repo.entities_named(cur, tenant_id, *query_keys(request.query))
                    if request.mode == "hybrid"
                    else ()
                ),
            )
            if request.mode == "hybrid":
                plan = _with_hints(cur, plan, request.query, understand(request.query))
            rows = []
            for corpus in corpora:
                rows += repo.search(cur, corpus, self.planner.for_corpus(cur, corpus, plan))
        results = [
            # A person the query names is often an entity too: the larger count is what there is to reach.
            _result(row, request.mode, plan.legs, max(len(plan.graph_entities), len(plan.people)))
            for row in rows
        ]
        if request.scope == "all" and self.chunks is not None:
            # Both kinds are scored alike (RRF scaled the same way, or the same similarity / rank).
            results = sorted(results, key=lambda r: (-r.score, r.kind != "memory", str(r.id)))
            results = results[: request.limit]
        if request.score_threshold is not None:
            results = [r for r in results if r.score >= request.score_threshold]
        return SearchResponse(query=request.query, results=results, total=len(results))

    def _corpora(self, scope: str) -> list[Corpus]:
        corpora = [MEMORIES] if scope != "chunks" else []
        if scope != "memories" and self.chunks is not None:
            corpora.append(self.chunks)
        return corpora


def _matched_text(request: SearchRequest) -> str:
    """What the query's words and vector are matched with: in hybrid mode, the query without the times
    and events it names (the time leg finds those: engram.memories.search.understanding)."""
    return understand(request.query).rest if request.mode == "hybrid" else request.query


def _with_hints(cur: TenantTx, plan: SearchPlan, query: str, hints: Understanding) -> SearchPlan:
    """The plan with what the query says besides its words (engram.memories.search.understanding):
    the people it names, the entities one relation away from the entities it names, and the period
    it names, relative times read against the latest day of the searched memories and "before/after
    <event>" against the day of the memory that best matches the event."""
    period = hints.period
    if hints.needs_reference:
        reference = repo.latest_day(cur, plan) or datetime.now(UTC).date()
        period = understand(query, reference).period
    if period is None and hints.event is not None:
        side, event = hints.event
        found = repo.search(
            cur,
            MEMORIES,
            replace(plan, text=f"{' '.join(hints.people)} {event}", vector=None, limit=1, graph_entities=()),
        )
        day = repo.own_day(cur, plan.tenant_id, found[0]["id"]) if found else None
        period = event_period(side, day) if day is not None else None
    neighbours = graph_repo.neighbours(cur, plan.tenant_id, plan.graph_entities, plan.time.as_of)
    return replace(plan, people=hints.people, period=period, graph_neighbours=neighbours)


def _result(row: dict[str, Any], mode: str, legs: float, query_entities: int) -> SearchResult:
    fused = float(row["rrf"]) * (RRF_K + 1) / max(legs, 1)
    similarity = None if row["similarity"] is None else round(float(row["similarity"]), 6)
    text_rank = None if row["text_rank"] is None else round(float(row["text_rank"]), 6)
    score = {"hybrid": fused, "vector": similarity, "text": text_rank}[mode]
    graph = None
    if row.get("graph_hits") and query_entities:
        graph = round(min(1.0, float(row["graph_hits"]) / query_entities), 6)
    return SearchResult(
        id=row["id"],
        kind=row.get("kind", "memory"),
        document_id=row.get("document_id"),
        content=row["content"],
        memory_type=row["memory_type"],
        container=row["container"],
        tags=row["tags"],
        metadata=row["metadata"],
        agent_id=row["agent_id"],
        conversation_id=row["conversation_id"],
        is_latest=row["is_latest"],
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        user_id=row["user_id"],
        visibility=row["visibility"],
        created_at=row["created_at"],
        score=round(score if score is not None else 0.0, 6),
        scores=Scores(vector=similarity, text=text_rank, graph=graph, fused=round(fused, 6)),
    )
