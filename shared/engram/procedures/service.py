"""Procedural memory logic: triggers are embedded, situations matched against them. No SQL here."""

from __future__ import annotations

from uuid import UUID

from engram.db.database import Database, Party
from engram.errors import InvalidInput, NotFound
from engram.pagination import decode_cursor, encode_cursor, listing
from engram.procedures import repo
from engram.procedures.models import (
    MatchRequest,
    MatchResponse,
    Procedure,
    ProcedureCreate,
    ProcedureMatch,
    ProcedurePage,
    ProcedurePatch,
)
from engram.providers.embeddings import Embedder


class ProcedureService:
    def __init__(self, db: Database, embedder: Embedder) -> None:
        self.db = db
        self.embedder = embedder

    def create(self, tenant_id: UUID, request: ProcedureCreate) -> Procedure:
        vector = self.embedder.embed_documents([request.trigger])[0]
        with self.db.tenant(tenant_id, Party(agent_id=request.agent_id)) as cur:
            row = repo.insert(cur, tenant_id, request.model_dump(), vector, self.embedder.model_id)
        return Procedure(**row)

    def get(self, tenant_id: UUID, procedure_id: UUID, *, agent_id: str | None = None) -> Procedure:
        with self.db.tenant(tenant_id, Party(agent_id=agent_id)) as cur:
            row = repo.get(cur, tenant_id, procedure_id)
        if row is None:
            raise _not_found(procedure_id)
        return Procedure(**row)

    def patch(
        self, tenant_id: UUID, procedure_id: UUID, request: ProcedurePatch, *, agent_id: str | None = None
    ) -> Procedure:
        changes = request.model_dump(include=request.model_fields_set)
        with self.db.tenant(tenant_id, Party(agent_id=agent_id)) as cur:
            current = repo.get(cur, tenant_id, procedure_id)
            if current is None:
                raise _not_found(procedure_id)
            if changes.get("visibility") == "private" and current["agent_id"] is None:
                raise InvalidInput(
                    "visibility 'private' needs a procedure with an agent_id; this one has none",
                    details={"field": "visibility"},
                )
            if changes.get("visibility") == "private" and current["agent_id"] != agent_id:
                raise InvalidInput(
                    "only a request made for the procedure's agent (?agent_id=) can make it private",
                    details={"field": "visibility"},
                )
            vector = None
            if "trigger" in changes and changes["trigger"] != current["trigger"]:
                vector = self.embedder.embed_documents([changes["trigger"]])[0]
            row = repo.update(cur, tenant_id, procedure_id, changes, vector, self.embedder.model_id)
        if row is None:
            raise _not_found(procedure_id)
        return Procedure(**row)

    def delete(self, tenant_id: UUID, procedure_id: UUID, *, agent_id: str | None = None) -> None:
        with self.db.tenant(tenant_id, Party(agent_id=agent_id)) as cur:
            if not repo.delete(cur, tenant_id, procedure_id):
                raise _not_found(procedure_id)

    def list(
        self, tenant_id: UUID, *, agent_id: str | None, kind: str | None, limit: int, cursor: str | None
    ) -> ProcedurePage:
        pages = listing("procedures", agent_id=agent_id, kind=kind)
        after = decode_cursor(cursor, pages)
        with self.db.tenant(tenant_id, Party(agent_id=agent_id)) as cur:
            rows = repo.list_page(cur, tenant_id, kind, limit + 1, after)
        procedures = [Procedure(**row) for row in rows[:limit]]
        more = len(rows) > limit
        next_cursor = encode_cursor(pages, procedures[-1].created_at, procedures[-1].id) if more else None
        return ProcedurePage(procedures=procedures, next_cursor=next_cursor)

    def match(self, tenant_id: UUID, request: MatchRequest) -> MatchResponse:
        vector = self.embedder.embed_query(request.situation)
        with self.db.tenant(tenant_id, Party(agent_id=request.agent_id)) as cur:
            rows = repo.match(
                cur,
                tenant_id,
                vector,
                self.embedder.model_id,
                request.kind,
                request.min_similarity,
                request.limit,
            )
        matches = [
            ProcedureMatch(**{**row, "similarity": round(float(row["similarity"]), 6)}) for row in rows
        ]
        return MatchResponse(situation=request.situation, matches=matches)


def _not_found(procedure_id: UUID) -> NotFound:
    return NotFound(f"procedure {procedure_id} not found")
