"""What a document's run leaves behind (chunks, memory sources, the memories that come only from the
document) and removing it, in the caller's transaction: for a retried llm-extract step, a failed run,
a new revision and DELETE alike, so a failure never leaves partial rows."""

from __future__ import annotations

from uuid import UUID

from engram.db.database import Database, TenantTx, UnitOfWork
from engram.documents import repo
from engram.documents.runs import DocumentRef
from engram.memories.writer import remove as remove_memories


def purge_outputs(cur: TenantTx, tenant_id: UUID, document_id: UUID, *, drop_orphaned_entities: bool) -> None:
    """Everything the pipeline wrote for the document: its memories (purge_memories) and chunks."""
    purge_memories(cur, tenant_id, document_id, drop_orphaned_entities=drop_orphaned_entities)
    repo.delete_chunks(cur, tenant_id, document_id)


def purge_memories(
    cur: TenantTx, tenant_id: UUID, document_id: UUID, *, drop_orphaned_entities: bool
) -> None:
    """Remove the memories that come only from this document, mending the version chains they were
    part of, and the document's memory sources; with `drop_orphaned_entities` (the document is
    deleted), the uncurated entities they leave unreferenced too (engram.memories.writer.remove)."""
    own = repo.memories_only_from(cur, tenant_id, document_id)
    if own:
        remove_memories(UnitOfWork(cur, tenant_id), own, drop_orphaned_entities=drop_orphaned_entities)
    repo.delete_sources(cur, tenant_id, document_id)


def fail_document(db: Database, ref: DocumentRef, code: str, message: str) -> bool:
    """Record the failure and remove everything this revision wrote, in one transaction. A no-op for
    a document that is gone, finished, or already at a newer revision."""
    with db.tenant(ref.tenant_id) as cur:
        row = repo.get_document(cur, ref.tenant_id, ref.document_id, for_update=True)
        if row is None or row["revision"] != ref.revision or row["status"] in ("done", "failed"):
            return False
        # The entities stay: a retry links them again; cleanup takes those it does not.
        purge_outputs(cur, ref.tenant_id, ref.document_id, drop_orphaned_entities=False)
        repo.finish(cur, ref.tenant_id, ref.document_id, ref.revision, "failed", code, message[:2000])
    return True
