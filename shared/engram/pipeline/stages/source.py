"""A document's bytes for the detect and extract steps: its stored blob, or a URL's answer."""

from __future__ import annotations

from typing import Any

from engram.documents import repo as documents
from engram.documents.blobs import revision_prefix_of, work_key
from engram.documents.failures import SourceMissing
from engram.documents.runs import DocumentRef
from engram.pipeline.context import PipelineContext
from engram.pipeline.readers import Source
from engram.pipeline.stages.claims import current


def fetched_key(ctx: PipelineContext, ref: DocumentRef) -> str:
    return work_key(ctx.settings.work_prefix, ref.tenant_id, ref.document_id, f"r{ref.revision}/fetched")


def document_source(ctx: PipelineContext, ref: DocumentRef, doc: dict[str, Any], *, fetch: bool) -> Source:
    """The document's bytes: its stored blob, or a URL's answer (fetched by detect and kept for the
    extract step; `fetch`: fetch it now rather than read what detect kept)."""
    url = doc["source"] if doc["source_kind"] == "url" else None
    if url is not None:
        filename = doc["filename"] or url.rstrip("/").rsplit("/", 1)[-1]
        key = fetched_key(ctx, ref)
        if fetch:
            fetched = ctx.fetcher.fetch(url)
            data, declared = fetched.data, doc["content_type"] or fetched.content_type
            ctx.blobs.put(key, data, declared)
            with ctx.db.tenant(ref.tenant_id) as cur:
                current(cur, ref)
                documents.record_content_type(cur, ref.tenant_id, ref.document_id, declared)
        else:
            data, declared = ctx.blobs.get(key, max_bytes=ctx.settings.max_file_bytes), doc["content_type"]
    else:
        if not doc["blob_key"]:
            raise SourceMissing("the document has no stored content")
        data = ctx.blobs.get(
            doc["blob_key"], version=doc["blob_version"], max_bytes=ctx.settings.max_file_bytes
        )
        declared, filename = doc["content_type"], doc["filename"]
    s3_uri = (
        f"s3://{ctx.settings.documents_bucket}/{doc['blob_key']}"
        if ctx.settings.documents_bucket and doc["blob_key"]
        else None
    )
    return Source(
        data=data,
        filename=filename,
        declared_type=declared,
        url=url,
        s3_uri=s3_uri,
        job_name=f"engram-{ref.document_id}-r{ref.revision}",
        work_dir=revision_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id, ref.revision),
    )
