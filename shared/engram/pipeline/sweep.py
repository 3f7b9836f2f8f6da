"""No document stays unfinished: the sweeper fails documents whose run died without reaching
mark-failed (an execution that never started, a crash in mark-failed itself). In AWS a schedule runs
it; `engram local` instead resumes unfinished documents when it starts."""

from __future__ import annotations

from uuid import UUID

from engram.db.database import Database
from engram.documents import repo
from engram.documents.outputs import fail_document
from engram.documents.runs import DocumentRef, PipelineStarter, execution_name


def unfinished(db: Database, older_than_minutes: int, limit: int) -> list[DocumentRef]:
    with db.transaction() as cur:  # no tenant: only the SECURITY DEFINER function sees across tenants
        rows = repo.stale_documents(cur, older_than_minutes, limit)
    return [DocumentRef(UUID(str(r["tenant_id"])), UUID(str(r["id"])), int(r["revision"])) for r in rows]


def sweep(db: Database, older_than_minutes: int, limit: int = 500) -> int:
    failed = 0
    for ref in unfinished(db, older_than_minutes, limit):
        failed += fail_document(
            db,
            ref,
            "stale",
            f"ingestion stopped without finishing (no progress for {older_than_minutes} minutes); "
            "send it again",
        )
    return failed


def resume(db: Database, starter: PipelineStarter, limit: int = 1000) -> int:
    """Start a run again for every unfinished document (steps are idempotent)."""
    refs = unfinished(db, 0, limit)
    for ref in refs:
        starter.start(ref, execution_name("resume", str(ref.document_id), f"r{ref.revision}"))
    return len(refs)
