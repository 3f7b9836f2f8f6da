"""The steps themselves, as plain functions of (context, document reference).

Each step: (1) claims the document for its revision and sets the status (a short transaction);
(2) does its work outside any transaction; (3) writes its results in one transaction that first checks
the revision again. So a step either writes everything or nothing, a retried step overwrites its own
earlier attempt, and a superseded run (the document deleted or queued again) writes nothing. The
embed step writes a page of chunks at a time (its memory stays bounded); a retry resumes after the
last page written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engram.db.database import Database
from engram.documents import repo as documents
from engram.errors import ExtractionFailed, InvalidInput
from engram.extraction import make_extractor
from engram.graph.autolink import link_to_nearest
from engram.graph.service import GraphService
from engram.instructions.service import instructions_for
from engram.memories import repo as memories
from engram.observability import logger
from engram.pipeline.blobs import sha256_hex, work_key, work_prefix_of
from engram.pipeline.chunking import chunk
from engram.pipeline.context import PipelineContext
from engram.pipeline.embedding import embed_batched, vector_literal
from engram.pipeline.errors import (
    EmptyContent,
    ExtractionUnusable,
    SourceMissing,
    Superseded,
    TooLarge,
    UnsupportedHere,
)
from engram.pipeline.extracted import Extracted
from engram.pipeline.extractors import Source, extract
from engram.pipeline.memory_extraction import ChunkInfo, DocumentExtraction, DocumentInfo, extract_memories
from engram.pipeline.refs import DocumentRef

# The embed step reads, embeds and writes this many chunks at a time.
EMBED_PAGE_CHUNKS = 256


def _claim(ctx: PipelineContext, ref: DocumentRef, status: str) -> dict[str, Any]:
    with ctx.db.tenant(ref.tenant_id) as cur:
        row = _current(cur, ref)
        documents.set_status(cur, ref.tenant_id, ref.document_id, status)
    return row


def _current(cur: Any, ref: DocumentRef) -> dict[str, Any]:
    row = documents.current_for_run(cur, ref.tenant_id, ref.document_id, ref.revision)
    if row is None:
        raise Superseded(
            f"document {ref.document_id} revision {ref.revision} was deleted, re-queued or finished"
        )
    return row


def _extracted_key(ctx: PipelineContext, ref: DocumentRef) -> str:
    return work_key(
        ctx.settings.work_prefix, ref.tenant_id, ref.document_id, f"r{ref.revision}/extracted.json"
    )


# --- extract ----------------------------------------------------------------------------------


def extract_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    doc = _claim(ctx, ref, "extracting")
    url = doc["source"] if doc["source_kind"] == "url" else None
    if url is not None:
        fetched = ctx.fetcher.fetch(url)
        data, declared = fetched.data, doc["content_type"] or fetched.content_type
        filename = doc["filename"] or url.rstrip("/").rsplit("/", 1)[-1]
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
    source = Source(
        data=data,
        filename=filename,
        declared_type=declared,
        url=url,
        s3_uri=s3_uri,
        job_name=f"engram-{ref.document_id}-r{ref.revision}",
    )
    extracted = extract(source, ctx.limits, ctx.services)
    ctx.blobs.put(_extracted_key(ctx, ref), extracted.to_json(), "application/json")
    with ctx.db.tenant(ref.tenant_id) as cur:
        _current(cur, ref)
        documents.record_extraction(
            cur,
            ref.tenant_id,
            ref.document_id,
            content_type=extracted.content_type,
            title=extracted.title,
            checksum=sha256_hex(data),
            size_bytes=len(data),
        )


# --- chunk ------------------------------------------------------------------------------------


def chunk_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    _claim(ctx, ref, "chunking")
    extracted = Extracted.from_json(ctx.blobs.get(_extracted_key(ctx, ref)))
    drafts = chunk(extracted, ctx.settings.chunk_tokens, ctx.settings.chunk_overlap_tokens)
    if not drafts:
        raise EmptyContent("the document has no text to index")
    limit = ctx.settings.resolved_max_chunks_per_document
    if len(drafts) > limit:
        raise TooLarge(
            f"the document makes {len(drafts):,} chunks of about {ctx.settings.chunk_tokens} tokens; "
            f"the limit is {limit:,} (ENGRAM_MAX_CHUNKS_PER_DOCUMENT): split it into smaller documents"
        )
    with ctx.db.tenant(ref.tenant_id) as cur:
        doc = _current(cur, ref)
        documents.replace_chunks(
            cur, ref.tenant_id, doc, [(d.content, d.token_count, d.metadata) for d in drafts]
        )


# --- embed ------------------------------------------------------------------------------------


def embed_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """Embeds the chunks a page at a time, each page committed once the revision is checked again:
    memory stays bounded whatever the document's size, and a retry resumes where it stopped."""
    _claim(ctx, ref, "embedding")
    model = ctx.embedder.model_id
    after = -1
    while True:
        with ctx.db.tenant(ref.tenant_id) as cur:
            rows = documents.chunks_to_embed(
                cur, ref.tenant_id, ref.document_id, model, after_ordinal=after, limit=EMBED_PAGE_CHUNKS
            )
        if not rows:
            return
        vectors = embed_batched(
            ctx.embedder,
            [r["content"] for r in rows],
            batch_size=ctx.settings.embed_batch_size,
            sleep=ctx.sleep,
        )
        with ctx.db.tenant(ref.tenant_id) as cur:
            _current(cur, ref)
            documents.set_chunk_embeddings(
                cur,
                ref.tenant_id,
                [(r["id"], vector_literal(v)) for r, v in zip(rows, vectors, strict=True)],
                model,
            )
        after = rows[-1]["ordinal"]


# --- llm-extract ------------------------------------------------------------------------------


def llm_extract_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """Memories (with their entities and relations) from the chunks, by the document's extract mode.
    Nothing is written until extraction has fully succeeded; then memories, sources, graph links and
    the token usage commit in one transaction. Tenant, container and ids come from the document."""
    doc = _claim(ctx, ref, "indexing")
    try:
        extractor = make_extractor(doc["extract_mode"], llm=ctx.llm)
    except InvalidInput as exc:
        raise UnsupportedHere(exc.message) from exc
    with ctx.db.tenant(ref.tenant_id) as cur:
        rows = documents.chunks_of(cur, ref.tenant_id, ref.document_id)
        instructions = instructions_for(cur, ref.tenant_id, doc["container"]) if extractor else ()
    info = DocumentInfo(
        doc["id"],
        doc["container"],
        doc["title"] or doc["filename"],
        doc["content_type"],
        doc["tags"],
        reference_time=doc["document_date"] or doc["created_at"],
        instructions=instructions,
    )
    chunks = [ChunkInfo(r["id"], r["ordinal"], r["content"], r["metadata"]) for r in rows]
    if extractor is None:
        extraction = DocumentExtraction([], "none")
    else:
        try:
            extraction = extract_memories(extractor, info, chunks, ctx.settings.max_memories_per_document)
        except ExtractionFailed as exc:
            spent = dict(exc.details.get("usage") or {})
            with ctx.db.tenant(ref.tenant_id) as cur:  # what the failed attempts cost; no memories
                if _current_or_none(cur, ref) is not None:
                    documents.record_usage(
                        cur, ref.tenant_id, ref.document_id, {"extractor": extractor.name, **spent}
                    )
            raise ExtractionUnusable(exc.message) from exc
    candidates = extraction.memories
    vectors = embed_batched(
        ctx.embedder,
        [c.content for c in candidates],
        batch_size=ctx.settings.embed_batch_size,
        sleep=ctx.sleep,
    )
    graph = GraphService(ctx.db)
    with ctx.db.tenant(ref.tenant_id) as cur:
        _current(cur, ref)
        # An earlier attempt of this step may have committed: start from a clean slate.
        documents.purge_memories(cur, ref.tenant_id, ref.document_id)
        for candidate, vector in zip(candidates, vectors, strict=True):
            existing = documents.latest_memory_with_content(
                cur, ref.tenant_id, doc["container"], candidate.content
            )
            if existing is None:
                row = memories.insert_memory(
                    cur,
                    ref.tenant_id,
                    {
                        "container": doc["container"],
                        "content": candidate.content,
                        "memory_type": candidate.memory_type,
                        "tags": doc["tags"],
                        "metadata": candidate.metadata,
                        "agent_id": None,
                        "conversation_id": None,
                        "confidence": candidate.confidence,
                        "valid_from": candidate.valid_from,
                        "expires_at": candidate.expires_at,
                    },
                    vector,
                    ctx.embedder.model_id,
                )
                existing = row["id"]
                graph.link_entities(
                    ref.tenant_id,
                    existing,
                    candidate.entities,
                    candidate.relations,
                    subject=candidate.subject,
                    tx=cur,
                )
            documents.add_memory_source(cur, ref.tenant_id, existing, ref.document_id, candidate.chunk_id)
        documents.record_usage(cur, ref.tenant_id, ref.document_id, extraction.record())


def _current_or_none(cur: Any, ref: DocumentRef) -> dict[str, Any] | None:
    return documents.current_for_run(cur, ref.tenant_id, ref.document_id, ref.revision)


# --- graph-link -------------------------------------------------------------------------------


def graph_link_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """How each new memory relates to the container's existing memories nearest to it (by vector and
    by shared entities): `updates` (retires the older one, as an explicit `supersedes` does; only
    between memories about one subject), `extends`, `derives`, or nothing (engram.graph.autolink).
    One transaction."""
    _claim(ctx, ref, "indexing")
    graph = GraphService(ctx.db)
    links = 0
    with ctx.db.tenant(ref.tenant_id) as cur:
        _current(cur, ref)
        for memory in documents.memories_of(cur, ref.tenant_id, ref.document_id):
            if memory["metadata"].get("document_id") != str(ref.document_id):
                continue  # an older memory this document only confirmed
            links += link_to_nearest(
                cur,
                ref.tenant_id,
                graph,
                ctx.linker,
                memory,
                metadata={"document_id": str(ref.document_id)},
                document_id=ref.document_id,
            )
    logger.info("graph-link", extra={"document_id": str(ref.document_id), "links": links})


# --- finish -----------------------------------------------------------------------------------


def mark_done(ctx: PipelineContext, ref: DocumentRef) -> bool:
    with ctx.db.tenant(ref.tenant_id) as cur:
        done = documents.finish(cur, ref.tenant_id, ref.document_id, ref.revision, "done")
    if done:
        _drop_work_files(ctx, ref)
    return done


def mark_failed(ctx: PipelineContext, ref: DocumentRef, code: str, message: str) -> bool:
    changed = fail_document(ctx.db, ref, code, message)
    if changed:
        _drop_work_files(ctx, ref)
    return changed


def fail_document(db: Database, ref: DocumentRef, code: str, message: str) -> bool:
    """Record the failure and remove everything this revision wrote, in one transaction. A no-op for
    a document that is gone, finished, or already at a newer revision."""
    with db.tenant(ref.tenant_id) as cur:
        row = documents.get_document(cur, ref.tenant_id, ref.document_id, for_update=True)
        if row is None or row["revision"] != ref.revision or row["status"] in ("done", "failed"):
            return False
        documents.purge_outputs(cur, ref.tenant_id, ref.document_id)
        documents.finish(cur, ref.tenant_id, ref.document_id, ref.revision, "failed", code, message[:2000])
    return True


def _drop_work_files(ctx: PipelineContext, ref: DocumentRef) -> None:
    try:
        ctx.blobs.delete_prefix(
            work_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id) + f"r{ref.revision}/"
        )
    except Exception:  # only intermediate files: never fail a document over them
        logger.exception("could not delete work files", extra={"document_id": str(ref.document_id)})


StepFunction = Callable[[PipelineContext, DocumentRef], None]

# By step name, as in engram.pipeline.steps.STEPS.
STEP_FUNCTIONS: dict[str, StepFunction] = {
    "extract": extract_step,
    "chunk": chunk_step,
    "embed": embed_step,
    "llm-extract": llm_extract_step,
    "graph-link": graph_link_step,
}
