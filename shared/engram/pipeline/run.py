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

from engram.documents import repo as documents
from engram.documents.blobs import sha256_hex, work_key, work_prefix_of
from engram.documents.failures import (
    EmptyContent,
    ExtractionUnusable,
    SourceMissing,
    Superseded,
    TooLarge,
    UnsupportedHere,
)
from engram.documents.outputs import fail_document, purge_memories
from engram.documents.runs import DocumentRef
from engram.errors import ExtractionFailed, InvalidInput
from engram.instructions.service import instructions_for
from engram.memories.new_memory import Embedding, Mentions, NewMemory, Owner, Peers
from engram.memory_extraction import make_extractor
from engram.observability import logger
from engram.pipeline.chunking import chunk
from engram.pipeline.context import PipelineContext
from engram.pipeline.document_memories import (
    CandidateMemory,
    ChunkInfo,
    DocumentExtraction,
    DocumentInfo,
    extract_memories,
)
from engram.pipeline.embedding import embed_batched, vector_literal
from engram.pipeline.readers import Source, identify, read
from engram.pipeline.readers.result import Extracted

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


# --- detect and extract ---------------------------------------------------------------------


def _fetched_key(ctx: PipelineContext, ref: DocumentRef) -> str:
    return work_key(ctx.settings.work_prefix, ref.tenant_id, ref.document_id, f"r{ref.revision}/fetched")


def _source(ctx: PipelineContext, ref: DocumentRef, doc: dict[str, Any], *, fetch: bool) -> Source:
    """The document's bytes: its stored blob, or a URL's answer (fetched by detect and kept for the
    extract step; `fetch`: fetch it now rather than read what detect kept)."""
    url = doc["source"] if doc["source_kind"] == "url" else None
    if url is not None:
        filename = doc["filename"] or url.rstrip("/").rsplit("/", 1)[-1]
        key = _fetched_key(ctx, ref)
        if fetch:
            fetched = ctx.fetcher.fetch(url)
            data, declared = fetched.data, doc["content_type"] or fetched.content_type
            ctx.blobs.put(key, data, declared)
            with ctx.db.tenant(ref.tenant_id) as cur:
                _current(cur, ref)
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
    )


def detect_step(ctx: PipelineContext, ref: DocumentRef) -> dict[str, Any]:
    """The file's type and so its family: which extract function reads it (engram.pipeline.steps)."""
    doc = _claim(ctx, ref, "extracting")
    found = identify(_source(ctx, ref, doc, fetch=True), ctx.limits)
    logger.info("detected", extra={"content_type": found.content_type, "family": found.family})
    return {"family": found.family}


def extract_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    doc = _claim(ctx, ref, "extracting")
    source = _source(ctx, ref, doc, fetch=False)
    extracted = read(source, ctx.limits, ctx.services)
    ctx.blobs.put(_extracted_key(ctx, ref), extracted.to_json(), "application/json")
    with ctx.db.tenant(ref.tenant_id) as cur:
        _current(cur, ref)
        documents.record_extraction(
            cur,
            ref.tenant_id,
            ref.document_id,
            content_type=extracted.content_type,
            title=extracted.title,
            checksum=sha256_hex(source.data),
            size_bytes=len(source.data),
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
    model = ctx.embedder.model_id
    new = [_new_memory(doc, c, Embedding(v, model)) for c, v in zip(candidates, vectors, strict=True)]
    with ctx.db.unit_of_work(ref.tenant_id) as uow:
        _current(uow.cur, ref)
        # An earlier attempt of this step may have committed: start from a clean slate.
        purge_memories(uow.cur, ref.tenant_id, ref.document_id)
        stored = ctx.writer.store(uow, new, Peers(same_owner=False))
        for candidate, memory in zip(candidates, stored, strict=True):
            documents.add_memory_source(
                uow.cur, ref.tenant_id, memory.id, ref.document_id, candidate.chunk_id
            )
        documents.record_usage(uow.cur, ref.tenant_id, ref.document_id, extraction.record())


def _new_memory(doc: dict[str, Any], candidate: CandidateMemory, embedding: Embedding) -> NewMemory:
    """A memory of the document: its container, tags and user; its text, kind and times from
    extraction."""
    return NewMemory(
        content=candidate.content,
        container=doc["container"],
        memory_type=candidate.memory_type,
        owner=Owner(doc["user_id"]),  # the uploader's, shared with the tenant
        tags=doc["tags"],
        metadata=candidate.metadata,
        confidence=candidate.confidence,
        valid_from=candidate.valid_from,
        expires_at=candidate.expires_at,
        embedding=embedding,
        mentions=Mentions(candidate.entities, candidate.relations, candidate.subject),
    )


def _current_or_none(cur: Any, ref: DocumentRef) -> dict[str, Any] | None:
    return documents.current_for_run(cur, ref.tenant_id, ref.document_id, ref.revision)


# --- graph-link -------------------------------------------------------------------------------


def graph_link_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """How each new memory relates to the container's existing memories nearest to it (by vector and
    by shared entities): `updates` (retires the older one, as an explicit `supersedes` does; only
    between memories about one subject), `extends`, `derives`, or nothing (engram.graph.graph_link
    decides, the memory writer records). One transaction."""
    _claim(ctx, ref, "indexing")
    peers = Peers(
        same_owner=False, document_id=ref.document_id, provenance={"document_id": str(ref.document_id)}
    )
    with ctx.db.unit_of_work(ref.tenant_id) as uow:
        _current(uow.cur, ref)
        made = [  # not the older memories this document only confirmed
            memory
            for memory in documents.memories_of(uow.cur, ref.tenant_id, ref.document_id)
            if memory["metadata"].get("document_id") == str(ref.document_id)
        ]
        links = ctx.writer.graph_link(uow, made, peers)
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


def _drop_work_files(ctx: PipelineContext, ref: DocumentRef) -> None:
    try:
        ctx.blobs.delete_prefix(
            work_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id) + f"r{ref.revision}/"
        )
    except Exception:  # only intermediate files: never fail a document over them
        logger.exception("could not delete work files", extra={"document_id": str(ref.document_id)})


# A step's output beyond the ids (detect's {"family": ...}, which routes the next step), or None.
StepFunction = Callable[[PipelineContext, DocumentRef], dict[str, Any] | None]

# By step name, as in engram.pipeline.steps.STEPS (every extract function runs `extract`).
STEP_FUNCTIONS: dict[str, StepFunction] = {
    "detect": detect_step,
    "extract": extract_step,
    "chunk": chunk_step,
    "embed": embed_step,
    "llm-extract": llm_extract_step,
    "graph-link": graph_link_step,
}
