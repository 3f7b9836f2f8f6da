"""Memory logic: validation beyond the models, embeddings, hybrid search. No SQL here."""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from engram.db.database import EVERYONE, Database, Party, TenantTx
from engram.errors import InvalidInput, NotFound
from engram.graph import relationships
from engram.graph.names import query_keys
from engram.memories import repo
from engram.memories.models import (
    ContainerCount,
    ContainerTypeCount,
    EmbeddingCoverage,
    ListRequest,
    Memory,
    MemoryCreate,
    MemoryHistory,
    MemoryPage,
    MemoryPatch,
    MemoryUpsert,
    Scores,
    SearchRequest,
    SearchResponse,
    SearchResult,
    Stats,
    TypeCount,
    UpsertResult,
)
from engram.memories.new_memory import NewMemory
from engram.memories.predicates import ContainerScope, TimeScope
from engram.memories.repo import SearchPlan, VectorQuery
from engram.memories.writer import MemoryWriter
from engram.observability import tracer
from engram.providers.embeddings import Embedder, check_dimensions

# How many candidates each leg hands to fusion, per result asked for.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 40
# Pages an HNSW search reads per index entry it visits, relative to an exact scan's per row (measured).
HNSW_COST_RATIO = 8
# The size of each model's HNSW index changes slowly: look it up at most this often per process.
INDEX_ROWS_TTL_S = 300.0
_INDEX_ROWS: dict[tuple[int, str, int], tuple[float | None, float]] = {}


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


class ChunkSearch(Protocol):
    """Search over document chunks with the same plan (engram.documents supplies it). Rows have the
    memory rows' columns (memory_type, agent_id and conversation_id null) plus kind and document_id."""

    def search(self, cur: TenantTx, plan: SearchPlan) -> list[dict[str, Any]]: ...


class MemoryService:
    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        writer: MemoryWriter,
        *,
        exact_scan_threshold: int = 5_000,
        ef_search: int = 100,
        max_scan_tuples: int = 40_000,
        chunks: ChunkSearch | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.writer = writer
        self.chunks = chunks
        self.exact_scan_threshold = exact_scan_threshold
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples

    # --- writes -------------------------------------------------------------------------------

    @tracer.capture_method
    def create(self, tenant_id: UUID, request: MemoryCreate) -> Memory:
        with self.db.unit_of_work(tenant_id, Party(user_id=request.user_id)) as uow:
            row = self.writer.create(uow, NewMemory.written(request), supersedes=request.supersedes)
        return Memory(**row)

    @tracer.capture_method
    def upsert(self, tenant_id: UUID, request: MemoryUpsert) -> UpsertResult:
        """Store a fact unless the container already holds it (MemoryWriter.upsert)."""
        with self.db.unit_of_work(tenant_id, Party(user_id=request.user_id)) as uow:
            return self.writer.upsert(uow, NewMemory.written(request), request.dedupe_threshold)

    @tracer.capture_method
    def patch(
        self, tenant_id: UUID, memory_id: UUID, request: MemoryPatch, *, user_id: str | None = None
    ) -> Memory:
        with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
            return Memory(**self.writer.update(uow, memory_id, request, user_id=user_id))

    def delete(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> None:
        with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
            self.writer.delete(uow, memory_id)

    @tracer.capture_method
    def revert(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> Memory:
        """Undo the supersession that retired `memory_id` (MemoryWriter.revert)."""
        with self.db.unit_of_work(tenant_id, Party(user_id=user_id)) as uow:
            return Memory(**self.writer.revert(uow, memory_id))

    # --- reads --------------------------------------------------------------------------------

    def history(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> MemoryHistory:
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            rows = relationships.version_chain(cur, tenant_id, memory_id)
        if not rows:
            raise _not_found(memory_id)
        return MemoryHistory(id=memory_id, versions=[Memory(**row) for row in rows])

    def get(self, tenant_id: UUID, memory_id: UUID, *, user_id: str | None = None) -> Memory:
        with self.db.tenant(tenant_id, Party(user_id=user_id)) as cur:
            row = repo.get_memory(cur, tenant_id, memory_id)
        if row is None:
            raise _not_found(memory_id)
        return Memory(**row)

    def list_memories(self, tenant_id: UUID, request: ListRequest) -> MemoryPage:
        after = _decode_cursor(request.cursor) if request.cursor else None
        with self.db.tenant(tenant_id, Party(user_id=request.user_id)) as cur:
            rows = repo.list_memories(
                cur,
                tenant_id,
                ContainerScope.parse(request.container),
                request.filters,
                request.limit + 1,
                after,
            )
        memories = [Memory(**row) for row in rows[: request.limit]]
        next_cursor = (
            _encode_cursor(memories[-1].created_at, memories[-1].id) if len(rows) > request.limit else None
        )
        return MemoryPage(memories=memories, next_cursor=next_cursor)

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
                query_vector = self.embedder.embed_query(request.query)
        return self.search_with_vector(tenant_id, request, query_vector, model)

    def search_with_vector(
        self, tenant_id: UUID, request: SearchRequest, query_vector: Sequence[float] | None, model: str
    ) -> SearchResponse:
        """Search with the query already embedded (the benchmark times this part alone)."""
        container = ContainerScope.parse(request.container)
        candidates = max(MIN_CANDIDATES, request.limit * CANDIDATES_PER_RESULT)
        time_scope = TimeScope(as_of=request.as_of, include_history=request.include_history)
        with self.db.tenant(tenant_id, Party(user_id=request.user_id)) as cur:
            vector: VectorQuery | None = None
            if query_vector is not None:
                if model != self.embedder.model_id:
                    dims = repo.stored_dimensions(cur, tenant_id, model)
                    if dims is not None:
                        check_dimensions(query_vector, dims)
                indexed = self._index_rows(cur, model, len(query_vector))
                cap = exact_scan_cap(self.exact_scan_threshold, indexed, candidates, self.max_scan_tuples)
                # The HNSW settings travel with the count (used only if the plan turns out HNSW).
                population = repo.count_vector_population(
                    cur,
                    tenant_id,
                    model,
                    container,
                    request.filters,
                    cap,
                    time_scope,
                    scan=(max(self.ef_search, candidates), self.max_scan_tuples),
                )
                exact = population <= cap
                vector = VectorQuery(vector=query_vector, model=model, exact=exact)
            plan = SearchPlan(
                tenant_id=tenant_id,
                text=request.query if request.mode != "vector" else None,
                vector=vector,
                container=container,
                filters=request.filters,
                candidates=candidates,
                limit=request.limit,
                time=time_scope,
                graph_entities=(
                    repo.query_entities(cur, tenant_id, *query_keys(request.query))
                    if request.mode == "hybrid"
                    else ()
                ),
            )
            rows = repo.search(cur, plan) if request.scope != "chunks" else []
            if request.scope != "memories" and self.chunks is not None:
                rows = rows + self.chunks.search(cur, plan)
        legs = (vector is not None) + (plan.text is not None) + bool(plan.graph_entities)
        results = [_result(row, request.mode, legs, len(plan.graph_entities)) for row in rows]
        if request.scope == "all" and self.chunks is not None:
            # Both kinds are scored alike (RRF scaled the same way, or the same similarity / rank).
            results = sorted(results, key=lambda r: (-r.score, r.kind != "memory", str(r.id)))
            results = results[: request.limit]
        if request.score_threshold is not None:
            results = [r for r in results if r.score >= request.score_threshold]
        return SearchResponse(query=request.query, results=results, total=len(results))

    def _index_rows(self, cur: Any, model: str, dimensions: int) -> float | None:
        key = (id(self.db), model, dimensions)
        cached = _INDEX_ROWS.get(key)
        now = time.monotonic()
        if cached is None or now - cached[1] > INDEX_ROWS_TTL_S:
            cached = (repo.index_rows(cur, model, dimensions), now)
            _INDEX_ROWS[key] = cached
        return cached[0]

    def stats(self, tenant_id: UUID) -> Stats:
        # Counts of the whole tenant, every user's private memories included (no content).
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            raw = repo.stats(cur, tenant_id)
        containers: dict[str, int] = {}
        types: dict[str, int] = {}
        for row in raw["by_container_type"]:
            containers[row["container"]] = containers.get(row["container"], 0) + row["count"]
            types[row["memory_type"]] = types.get(row["memory_type"], 0) + row["count"]
        models = {row["model"]: row["count"] for row in raw["models"] if row["model"]}
        total = sum(containers.values())
        embedded = sum(models.values())
        return Stats(
            total=total,
            containers=[ContainerCount(container=k, count=v) for k, v in sorted(containers.items())],
            memory_types=[TypeCount(memory_type=k, count=v) for k, v in sorted(types.items())],
            by_container_and_type=[ContainerTypeCount(**row) for row in raw["by_container_type"]],
            embeddings=EmbeddingCoverage(
                embedded=embedded,
                missing=total - embedded,
                coverage=round(embedded / total, 4) if total else 1.0,
                models=models,
            ),
        )


def _result(row: dict[str, Any], mode: str, legs: int, query_entities: int) -> SearchResult:
    fused = float(row["rrf"]) * (repo.RRF_K + 1) / max(legs, 1)
    similarity = None if row["similarity"] is None else round(float(row["similarity"]), 6)
    text_rank = None if row["text_rank"] is None else round(float(row["text_rank"]), 6)
    score = {"hybrid": fused, "vector": similarity, "text": text_rank}[mode]
    graph = None
    if row.get("graph_hits") and query_entities:
        graph = round(min(1.0, int(row["graph_hits"]) / query_entities), 6)
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


def _not_found(memory_id: UUID) -> NotFound:
    return NotFound(f"memory {memory_id} not found")


def _encode_cursor(created_at: datetime, memory_id: UUID) -> str:
    raw = json.dumps([created_at.isoformat(), str(memory_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, memory_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(created_at), UUID(memory_id)
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError) as exc:
        raise InvalidInput("cursor is not one this API returned", details={"field": "cursor"}) from exc
