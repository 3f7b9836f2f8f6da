"""Running documents through the local runner synchronously, and counting what they left behind."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any
from uuid import UUID

from engram import deps
from engram.db.database import Database
from engram.documents.blobs import sha256_hex
from engram.documents.runs import DocumentRef
from engram.documents.service import DocumentService, StoredObject
from engram.local.functions import invoke_pipeline_step
from engram.pipeline.context import PipelineContext
from engram.pipeline.readers import Services
from engram.pipeline.runner import LocalRunner


class RecordingStarter:
    """Records what would be started; the test runs it itself."""

    def __init__(self) -> None:
        self.started: list[tuple[DocumentRef, str]] = []

    def start(self, ref: DocumentRef, name: str) -> None:
        self.started.append((ref, name))


def service_with(starter: Any) -> DocumentService:
    settings = deps.current().settings
    return DocumentService(
        deps.database(),
        deps.blob_store(),
        starter,
        work_prefix=settings.work_prefix,
        max_file_bytes=settings.max_file_bytes,
        fetch_urls=settings.fetch_urls,
    )


def register(tenant_id: UUID, data: bytes, filename: str, container: str = "default") -> DocumentRef:
    starter = RecordingStarter()
    stored = StoredObject(
        container=container,
        source_kind="drop",
        source=filename,
        filename=filename,
        blob_key="",
        blob_version=None,
        checksum=sha256_hex(data),
        size_bytes=len(data),
    )
    registration = service_with(starter).register_stored(tenant_id, stored, data)
    assert starter.started, "a new document must be started"
    return registration.ref


def run(tenant_id: UUID, data: bytes, filename: str, container: str = "default") -> tuple[DocumentRef, str]:
    ref = register(tenant_id, data, filename, container)
    return ref, LocalRunner(invoke_pipeline_step, sleep=lambda _: None).run(ref)


def document(db: Database, ref: DocumentRef) -> dict[str, Any]:
    with db.tenant(ref.tenant_id) as cur:
        row = cur.execute("SELECT * FROM documents WHERE id = %s", (ref.document_id,)).fetchone()
    assert row is not None
    return row


def leftovers(db: Database, ref: DocumentRef) -> dict[str, int]:
    """Rows the document's runs wrote: chunks, memory sources, memories that name it as origin."""
    with db.tenant(ref.tenant_id) as cur:
        row = cur.execute(
            """SELECT (SELECT count(*) FROM chunks WHERE document_id = %(d)s) AS chunks,
                      (SELECT count(*) FROM memory_sources WHERE document_id = %(d)s) AS sources,
                      (SELECT count(*) FROM memories WHERE metadata->>'document_id' = %(s)s) AS memories""",
            {"d": ref.document_id, "s": str(ref.document_id)},
        ).fetchone()
    assert row is not None
    return dict(row)


def with_services(ctx: PipelineContext, services: Services) -> PipelineContext:
    """A copy of the context whose readers use these services (the rest it has built, it keeps)."""
    changed = copy.copy(ctx)
    changed.services = services
    return changed


def with_settings(**changes: Any) -> Any:
    """The current pipeline context with some settings changed (for limits)."""
    ctx = deps.pipeline_context()
    return dataclasses.replace(ctx, settings=ctx.settings.model_copy(update=changes))
