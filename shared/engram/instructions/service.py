"""Custom extraction instructions: set, list and remove them, and the ones an extraction applies.

Instructions only reach the LLM extractor (extract=full), in the prompt's slot for the memories'
owner (engram/memory_extraction/prompt.md); the offline heuristic has no use for them. They come from the
tenant's own API calls, never from documents or LLM output."""

from __future__ import annotations

from uuid import UUID

from engram.db.database import EVERYONE, Database, TenantTx
from engram.errors import NotFound
from engram.instructions import repo
from engram.instructions.models import Instructions, InstructionsList, InstructionsSet


class InstructionsService:
    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, tenant_id: UUID, request: InstructionsSet) -> tuple[Instructions, bool]:
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            row, created = repo.put(cur, tenant_id, request.container, request.instructions)
        return Instructions(**row), created

    def list(self, tenant_id: UUID, container: str | None = None) -> InstructionsList:
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            rows = (
                repo.all_of_tenant(cur, tenant_id)
                if container is None
                else repo.applying_to(cur, tenant_id, container)
            )
        return InstructionsList(instructions=[Instructions(**row) for row in rows])

    def delete(self, tenant_id: UUID, container: str | None) -> None:
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            if not repo.delete(cur, tenant_id, container):
                scope = f"container {container!r}" if container else "the tenant"
                raise NotFound(f"{scope} has no extraction instructions")


def instructions_for(cur: TenantTx, tenant_id: UUID, container: str) -> tuple[str, ...]:
    """For ExtractionContext.instructions, inside the caller's transaction."""
    return tuple(row["instructions"] for row in repo.applying_to(cur, tenant_id, container))
