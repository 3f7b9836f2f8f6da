"""Step 'extract': the file's text, kept for the chunk step; its type, title and checksum recorded."""

from __future__ import annotations

from engram.documents import repo as documents
from engram.documents.blobs import sha256_hex
from engram.documents.runs import DocumentRef
from engram.pipeline.context import PipelineContext
from engram.pipeline.readers import read
from engram.pipeline.stages.claims import claim, current, extracted_key
from engram.pipeline.stages.source import document_source


def extract_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    doc = claim(ctx, ref, "extracting")
    source = document_source(ctx, ref, doc, fetch=False)
    extracted = read(source, ctx.limits, ctx.services)
    ctx.blobs.put(extracted_key(ctx, ref), extracted.to_json(), "application/json")
    with ctx.db.tenant(ref.tenant_id) as cur:
        current(cur, ref)
        documents.record_extraction(
            cur,
            ref.tenant_id,
            ref.document_id,
            content_type=extracted.content_type,
            title=extracted.title,
            checksum=sha256_hex(source.data),
            size_bytes=len(source.data),
        )
