"""What every step does first and last: claim the document for its revision, and check the revision
again in the transaction that writes the step's results."""

from __future__ import annotations

from typing import Any

from engram.documents import repo as documents
from engram.documents.blobs import work_key
from engram.documents.failures import Superseded
from engram.documents.runs import DocumentRef
from engram.pipeline.context import PipelineContext


def claim(ctx: PipelineContext, ref: DocumentRef, status: str) -> dict[str, Any]:
    with ctx.db.tenant(ref.tenant_id) as cur:
        row = current(cur, ref)
        documents.set_status(cur, ref.tenant_id, ref.document_id, status)
    return row


def current(cur: Any, ref: DocumentRef) -> dict[str, Any]:
    row = current_or_none(cur, ref)
    if row is None:
        raise Superseded(
            f"document {ref.document_id} revision {ref.revision} was deleted, re-queued or finished"
        )
    return row


def current_or_none(cur: Any, ref: DocumentRef) -> dict[str, Any] | None:
    return documents.current_for_run(cur, ref.tenant_id, ref.document_id, ref.revision)


def extracted_key(ctx: PipelineContext, ref: DocumentRef) -> str:
    """Where the extract step leaves the text for the chunk step."""
    return work_key(
        ctx.settings.work_prefix, ref.tenant_id, ref.document_id, f"r{ref.revision}/extracted.json"
    )
