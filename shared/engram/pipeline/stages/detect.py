"""Step 'detect': the file's type, and so which extract function reads it."""

from __future__ import annotations

from typing import Any

from engram.documents import repo as documents
from engram.documents.runs import DocumentRef
from engram.observability import logger
from engram.pipeline.context import PipelineContext
from engram.pipeline.readers import stored_type, unpack
from engram.pipeline.stages.claims import claim, current
from engram.pipeline.stages.source import document_source


def detect_step(ctx: PipelineContext, ref: DocumentRef) -> dict[str, Any]:
    """The file's type and so its family: which extract function reads it (engram.pipeline.steps).

    The type of the bytes as stored is recorded as soon as it is known, before a gzip file is
    decompressed, so that a document that fails after (a corrupt gzip file here, or anything later)
    still shows it (the extract step records the type it read). Not the type inside a gzip file: the
    extract step reads the recorded type as the declared one, and must still know to decompress."""
    doc = claim(ctx, ref, "extracting")
    source = document_source(ctx, ref, doc, fetch=True)
    stored = stored_type(source, ctx.limits)
    with ctx.db.tenant(ref.tenant_id) as cur:
        current(cur, ref)
        documents.record_content_type(cur, ref.tenant_id, ref.document_id, stored)
    found = unpack(source, stored, ctx.limits)
    logger.info("detected", extra={"content_type": found.content_type, "family": found.family})
    return {"family": found.family}
