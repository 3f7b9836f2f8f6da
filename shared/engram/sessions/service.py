"""Conversation logic: sessions, ordered messages, recall, message search and the extraction
queue (engram.sessions.message_memories). No SQL here. A call may name its party (user_id, agent_id):
the database then hides the sessions of other users and agents; without one, a session is reached by
its id within the tenant (migrations/0002_scopes.sql, 0012)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from engram.db.database import Database, Party
from engram.errors import InvalidInput, NotFound
from engram.memories.models import SearchRequest
from engram.memories.search.fusion import calibrated, mode_weights, result_scores
from engram.pagination import decode_cursor, encode_cursor, listing
from engram.providers.embeddings import Embedder, check_dimensions, unknown_model
from engram.sessions import repo, summary_repo
from engram.sessions.message_memories import MessageExtraction
from engram.sessions.models import (
    AppendResult,
    Conversation,
    ConversationSummary,
    ExtractionReport,
    LastMessage,
    Message,
    MessagesAppend,
    MessageSearchResponse,
    MessageSearchResult,
    RecentMessages,
    Session,
    SessionCreate,
    SessionPage,
    SessionSummary,
)

MAX_CONVERSATION_PAGE = 1000
CANDIDATES_PER_RESULT, MIN_CANDIDATES = 4, 40


class SessionService:
    def __init__(self, db: Database, embedder: Embedder, extraction: MessageExtraction) -> None:
        self.db = db
        self.embedder = embedder
        self.extraction = extraction

    def create(self, tenant_id: UUID, request: SessionCreate) -> Session:
        party = Party(user_id=request.user_id, agent_id=request.agent_id)
        with self.db.tenant(tenant_id, party) as cur:
            row = repo.insert_session(cur, tenant_id, request.model_dump())
        return Session(**row)

    def conversation(
        self,
        tenant_id: UUID,
        session_id: UUID,
        party: Party,
        *,
        after: int = 0,
        limit: int = MAX_CONVERSATION_PAGE,
    ) -> Conversation:
        with self.db.tenant(tenant_id, party) as cur:
            session = repo.get_session(cur, tenant_id, session_id)
            if session is None:
                raise _not_found(session_id)
            rows = repo.messages_after(cur, tenant_id, session_id, after, limit + 1)
            summary = summary_repo.get_summary(cur, tenant_id, session_id)
        messages = [Message(**row) for row in rows[:limit]]
        next_after = messages[-1].seq if len(rows) > limit else None
        return Conversation(
            session=Session(**session),
            messages=messages,
            next_after=next_after,
            summary=ConversationSummary(**summary) if summary else None,
        )

    def list(self, tenant_id: UUID, party: Party, *, limit: int, cursor: str | None) -> SessionPage:
        if party.user_id is None and party.agent_id is None:
            raise InvalidInput("name the party: user_id, agent_id or both", details={"field": "user_id"})
        pages = listing("sessions", user_id=party.user_id, agent_id=party.agent_id)
        after = decode_cursor(cursor, pages)
        with self.db.tenant(tenant_id, party) as cur:
            rows = repo.list_sessions(cur, tenant_id, party.user_id, party.agent_id, limit + 1, after)
        sessions = [_summary(row) for row in rows[:limit]]
        more = len(rows) > limit
        return SessionPage(
            sessions=sessions,
            next_cursor=encode_cursor(pages, sessions[-1].created_at, sessions[-1].id) if more else None,
        )

    def delete(self, tenant_id: UUID, session_id: UUID, party: Party) -> None:
        with self.db.tenant(tenant_id, party) as cur:
            if not repo.delete_session(cur, tenant_id, session_id):
                raise _not_found(session_id)

    def recent(self, tenant_id: UUID, session_id: UUID, party: Party, *, limit: int) -> RecentMessages:
        with self.db.tenant(tenant_id, party) as cur:
            if repo.get_session(cur, tenant_id, session_id) is None:
                raise _not_found(session_id)
            rows = repo.latest_messages(cur, tenant_id, session_id, limit)
        return RecentMessages(session_id=session_id, messages=[Message(**row) for row in rows])

    def append(
        self, tenant_id: UUID, session_id: UUID, party: Party, request: MessagesAppend
    ) -> AppendResult:
        """Append in order, embedded; with `extract`, queue them and run the extraction now. The
        messages are stored whatever extraction does: if the LLM is unavailable they stay queued."""
        mode = None if request.extract == "none" else request.extract
        if mode is not None:
            self.extraction.extractor_for(mode)  # extract=full without an LLM: 422, nothing stored
        contents = [m.content for m in request.messages]
        vectors = self.embedder.embed_documents(contents)
        with self.db.tenant(tenant_id, party) as cur:
            session = repo.reserve_seqs(cur, tenant_id, session_id, len(contents))
            if session is None:
                raise _not_found(session_id)
            first_seq = session["message_count"] - len(contents) + 1
            rows = repo.insert_messages(
                cur,
                tenant_id,
                session,
                first_seq,
                [m.model_dump() for m in request.messages],
                vectors,
                self.embedder.model_id,
                mode,
            )
        report = self.extract(tenant_id, session_id, party) if mode is not None else None
        if report is not None:
            with self.db.tenant(tenant_id, party) as cur:
                rows = repo.messages_after(cur, tenant_id, session_id, first_seq - 1, len(contents))
        return AppendResult(
            session_id=session_id,
            messages=[Message(**row) for row in rows],
            extracted_memory_ids=report.memory_ids if report else [],
            extraction=report,
        )

    def extract(self, tenant_id: UUID, session_id: UUID, party: Party) -> ExtractionReport:
        """Extract memories from the session's queued messages (engram.sessions.message_memories).
        Idempotent: of two runs at once, one writes; the same statement twice is one memory. Each
        step is its own short transaction, so this never holds two connections (a Lambda has one)."""
        with self.db.tenant(tenant_id, party) as cur:
            session = repo.get_session(cur, tenant_id, session_id)
            if session is None:
                raise _not_found(session_id)
            queued = repo.queued_messages(cur, tenant_id, session_id)
        # Memories go to the session's user (private to them) whoever reached the session.
        owner = Party(user_id=session["user_id"], agent_id=session["agent_id"])
        if not queued:
            return ExtractionReport(
                status="nothing_queued",
                extractors=[],
                memory_ids=[],
                messages_done=0,
                messages_failed=0,
                messages_queued=0,
            )
        return self.extraction.run(tenant_id, session, owner, queued)

    # --- search -------------------------------------------------------------------------------

    def search_messages(self, tenant_id: UUID, request: SearchRequest) -> MessageSearchResponse:
        """Search over the party's messages, scored like memory search: the legs' scores fused by the
        same weights (engram.memories.search.fusion; the response's `weights`), and in hybrid mode the
        same calibrated score, which score_threshold applies to."""
        f = request.filters
        party = Party(user_id=request.user_id, agent_id=f.agent_id)
        # Messages have no graph, people or time legs.
        weights = {k: w for k, w in mode_weights(request.mode).items() if k in MESSAGE_SHARES}
        if f.user_id is not None and request.user_id not in (None, f.user_id):  # another user's
            return MessageSearchResponse(query=request.query, results=[], total=0, weights=weights)
        filters = (f.user_id or request.user_id, f.agent_id, f.conversation_id, dict(f.metadata))
        vector = self._query_vector(request)
        with self.db.tenant(tenant_id, party) as cur:
            rows = repo.search(
                cur,
                tenant_id,
                filters,
                text=request.query if request.mode != "vector" else None,
                vector=vector,
                model=self.embedder.model_id,
                candidates=max(MIN_CANDIDATES, request.limit * CANDIDATES_PER_RESULT),
                limit=request.limit,
            )
        best = max((float(row["fused"]) for row in rows), default=0.0)
        results = [_message_result(row, request.mode, best) for row in rows]
        if request.score_threshold is not None:
            results = [r for r in results if r.score >= request.score_threshold]
        return MessageSearchResponse(
            query=request.query, results=results, total=len(results), weights=weights
        )

    def _query_vector(self, request: SearchRequest) -> Sequence[float] | None:
        """The query's vector: the caller's own when it is of the model messages are embedded with (the
        configured one: reembed leaves messages as they are), else the query embedded."""
        if request.mode == "text":
            return None
        if request.embedding is None or request.embedding_model is None:
            return self.embedder.embed_query(request.query)
        if request.embedding_model != self.embedder.model_id:
            raise unknown_model(request.embedding_model, [self.embedder.model_id])
        check_dimensions(request.embedding, self.embedder.dimensions)
        return request.embedding


def _message_result(row: dict[str, Any], mode: str, best: float) -> MessageSearchResult:
    scores = result_scores(row, mode)
    score = calibrated(float(row["fused"]), best) if mode == "hybrid" else getattr(scores, mode)
    return MessageSearchResult(
        **{k: row[k] for k in MESSAGE_RESULT_FIELDS},
        score=round(score, 6) if mode == "hybrid" else (score or 0.0),
        scores=scores,
    )


# The shares a message is scored by (fusion.HYBRID_WEIGHTS, and the text leg's own score).
MESSAGE_SHARES = ("vector", "text", "text_relative", "coverage")
MESSAGE_RESULT_FIELDS = (
    "id",
    "session_id",
    "seq",
    "role",
    "content",
    "metadata",
    "user_id",
    "agent_id",
    "created_at",
)


def _summary(row: dict[str, Any]) -> SessionSummary:
    last = None
    if row["last_role"] is not None:
        last = LastMessage(
            role=row["last_role"], preview=row["last_preview"], created_at=row["last_created_at"]
        )
    fields = {k: v for k, v in row.items() if not k.startswith("last_") or k == "last_message_at"}
    return SessionSummary(**fields, last_message=last)


def _not_found(session_id: UUID) -> NotFound:
    return NotFound(f"session {session_id} not found")
