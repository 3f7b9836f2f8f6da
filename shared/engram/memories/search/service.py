"""POST /v1/search over memories and document chunks: embed the query, plan each corpus's legs, run
the fused query (engram.memories.search.repo), and score the rows alike. No SQL here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from engram.db.database import NOBODY, Database, Party
from engram.graph.names import query_keys
from engram.memories.models import SearchRequest, SearchResponse, SearchResult
from engram.memories.predicates import ContainerScope, TimeScope
from engram.memories.search import repo
from engram.memories.search.fusion import calibrated, mode_weights, result_scores
from engram.memories.search.plan import GraphKeys, SearchPlan, VectorQuery, candidates_for
from engram.memories.search.planner import SearchPlanner
from engram.memories.search.repo import MEMORIES, Corpus
from engram.memories.search.understanding import Understanding, event_period, understand
from engram.observability import tracer
from engram.providers.embeddings import Embedder, check_dimensions, unknown_model
from engram.providers.tenant_models import TenantEmbedders, model_of, tenant_model_query


class MemorySearch:
    """`chunks`: the document chunks' corpus (engram.documents.repo.CHUNKS), searched with
    scope chunks or all; without it, only memories are."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        exact_scan_threshold: int = 2_000,
        ef_search: int | None = None,
        max_scan_tuples: int = 40_000,
        chunks: Corpus | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.chunks = chunks
        self.planner = SearchPlanner(
            db,
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
                embedder = self.embedder_of(tenant_id)
                text = _matched_text(request, _hints(request))
                query_vector, model = embedder.embed_query(text), embedder.model_id
        return self.search_with_vector(tenant_id, request, query_vector, model)

    def embedder_of(self, tenant_id: UUID) -> Embedder:
        """The tenant's model's embedder (engram.providers.tenant_models): one small read in one round
        trip (three for a transaction's BEGIN, read and COMMIT) when the service embeds with
        TenantEmbedders, none with a plain embedder."""
        if not isinstance(self.embedder, TenantEmbedders):
            return self.embedder
        (rows,) = self.db.run(tenant_id, NOBODY, [tenant_model_query(tenant_id)])
        return self.embedder.of_model(model_of(rows))

    def search_with_vector(
        self, tenant_id: UUID, request: SearchRequest, query_vector: Sequence[float] | None, model: str
    ) -> SearchResponse:
        """Search with the query already embedded (the benchmark times this part alone)."""
        in_scope = self._corpora(request.scope)
        corpora = [c for c in in_scope if c.can_match(request.filters)]
        party = Party(user_id=request.user_id)
        if query_vector is not None and model != self.embedder.model_id:
            with_vectors = self._with_vectors_of(tenant_id, party, corpora or in_scope, query_vector, model)
            corpora = [c for c in corpora if c in with_vectors]
        graph = GraphKeys(*query_keys(request.query)) if request.mode == "hybrid" else None
        hints = _hints(request)
        plan = SearchPlan(
            tenant_id=tenant_id,
            text=_matched_text(request, hints) if request.mode != "vector" else None,
            vector=None if query_vector is None else VectorQuery.of(query_vector, model, exact=True),
            container=ContainerScope.parse(request.container),
            filters=request.filters,
            candidates=candidates_for(request.limit),
            limit=request.limit,
            time=TimeScope(as_of=request.as_of, include_history=request.include_history),
            graph=graph if graph is not None and graph.keys else None,
        )
        if hints is not None:
            plan = self._with_hints(plan, party, request.query, hints)
        rows: list[dict[str, Any]] = []
        if corpora:
            rows = self._run(tenant_id, party, plan, corpora)
        # The calibrated score reads the search's best fused score (fusion.calibrated): the first row
        # of one corpus's rows, of either corpus's with chunks, whatever the limit.
        best = max((float(row["fused"]) for row in rows), default=0.0)
        results = [_result(row, request.mode, best) for row in rows]
        if request.scope == "all" and self.chunks is not None:
            # Both kinds are scored alike (the same fusion and calibration, similarity or BM25 share).
            # Scores far below the best round to 0.0: fused still orders them, as each corpus did.
            results = sorted(
                results, key=lambda r: (-r.score, -r.scores.fused, r.kind != "memory", str(r.id))
            )
            results = results[: request.limit]
        if request.score_threshold is not None:
            results = [r for r in results if r.score >= request.score_threshold]
        return SearchResponse(
            query=request.query, results=results, total=len(results), weights=mode_weights(request.mode)
        )

    def _with_vectors_of(
        self, tenant_id: UUID, party: Party, corpora: list[Corpus], vector: Sequence[float], model: str
    ) -> list[Corpus]:
        """Of `corpora`, those a model other than the configured one (the caller's own, or the tenant's
        after a reembed) is searched in: those whose rows the party sees have its vectors, each checked for
        its dimensions. One that has none of them is left out (scope all: a model only memories have
        searches memories only, and one only chunks have, chunks only), rather than matched by text
        alone and ranked against the others' vector scores; a model none of them has is a 422 listing
        the models they have (the caller gets `corpora`: the searched ones, or with filters no corpus
        can match, the scope's, so that such a model is refused all the same)."""
        if not corpora:  # (a service without the chunks' corpus, asked for chunks)
            return []
        tables = [c.table for c in corpora]
        with self.db.tenant(tenant_id, party) as cur:
            dims = repo.model_dimensions(cur, tenant_id, model, tables)
            found = any(d is not None for d in dims.values())
            stored = [] if found else repo.stored_models(cur, tenant_id, tables)
        if not found:
            raise unknown_model(model, [self.embedder.model_id, *stored])
        searched: list[Corpus] = []
        for corpus in corpora:
            expected = dims[corpus.table]
            if expected is not None:
                check_dimensions(vector, expected)
                searched.append(corpus)
        return searched

    def _run(
        self, tenant_id: UUID, party: Party, plan: SearchPlan, corpora: list[Corpus]
    ) -> list[dict[str, Any]]:
        """Each corpus's fused statement, in one round trip. What the tenant may have none of is only
        checked in that round trip, and searched in a second one once it has some (then no longer
        checked: SearchPlanner.has_rows): a corpus (Corpus.any_rows: chunks, for a tenant that never
        added a document), and entities (the graph leg: without any, it adds nothing to any row)."""
        probed = [c for c in corpora if self.planner.needs_probe(c, tenant_id)]
        searched = [c for c in corpora if c not in probed]
        graph_probe = plan.graph is not None and not self.planner.seen_rows(ENTITIES, tenant_id)
        run_plan = replace(plan, graph=None) if graph_probe else plan
        plans = [self.planner.for_corpus(corpus, run_plan, party) for corpus in searched]
        statements = [repo.statement(corpus, p) for corpus, p in zip(searched, plans, strict=True)]
        probes = [c.any_rows(tenant_id) for c in probed if c.any_rows is not None]
        if graph_probe:
            probes.append(repo.any_entities(tenant_id))
        found = self.db.run(tenant_id, party, statements + probes, self.planner.scan_settings(plans))
        answers = [bool(a[0]["any"]) for a in found[len(searched) :]]
        late = [c for c, has in zip(probed, answers, strict=False) if has]
        for corpus in late:
            self.planner.has_rows(corpus.table, tenant_id)
        if graph_probe and answers[-1]:
            self.planner.has_rows(ENTITIES, tenant_id)
            return self._run(tenant_id, party, plan, corpora)
        rows: list[dict[str, Any]] = []
        for corpus, corpus_plan, corpus_rows in zip(searched, plans, found, strict=False):
            self.planner.counted(corpus, corpus_plan, party, corpus_rows)
            rows += corpus_rows
        return rows + (self._run(tenant_id, party, plan, late) if late else [])

    def _with_hints(self, plan: SearchPlan, party: Party, query: str, hints: Understanding) -> SearchPlan:
        """The plan with what the query says besides its words (engram.memories.search.understanding):
        the people it names and the period it names. A relative time is read against the latest day
        of the searched memories, and "before/after <event>" against the day of the memory that best
        matches the event: each of those costs one more round trip before the search statement (a
        query with neither, the usual case, costs none)."""
        period = hints.period
        if hints.needs_reference:
            (found,) = self.db.run(plan.tenant_id, party, [repo.latest_day(plan)])
            reference = found[0]["day"] if found and found[0]["day"] else datetime.now(UTC).date()
            period = understand(query, reference).period
        if period is None and hints.event is not None:
            side, event = hints.event
            lookup = replace(
                plan,
                text=f"{' '.join(hints.people)} {event}",
                vector=None,
                limit=1,
                graph=None,
                exact_cap=None,
            )
            (found,) = self.db.run(plan.tenant_id, party, [repo.event_day(MEMORIES, lookup)])
            day = found[0]["day"] if found else None
            period = event_period(side, day) if day is not None else None
        return replace(plan, people=hints.people, period=period)

    def _corpora(self, scope: str) -> list[Corpus]:
        corpora = [MEMORIES] if scope != "chunks" else []
        if scope != "memories" and self.chunks is not None:
            corpora.append(self.chunks)
        return corpora


# What the graph leg needs the tenant to have (SearchPlanner.has_rows).
ENTITIES = "entity_keys"


def _hints(request: SearchRequest) -> Understanding | None:
    """What the query says besides its words, read in hybrid mode only (once per search: 0.15-0.2 ms)."""
    return understand(request.query) if request.mode == "hybrid" else None


def _matched_text(request: SearchRequest, hints: Understanding | None) -> str:
    """What the query's words and vector are matched with: in hybrid mode, the query without the times
    and events it names (the time leg finds those: engram.memories.search.understanding)."""
    return hints.rest if hints is not None else request.query


def _result(row: dict[str, Any], mode: str, best: float) -> SearchResult:
    fused = float(row["fused"])
    scores = result_scores(row, mode)
    score = calibrated(fused, best) if mode == "hybrid" else getattr(scores, mode)
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
        score=round(score, 6) if mode == "hybrid" else (score or 0.0),
        scores=scores,
    )
