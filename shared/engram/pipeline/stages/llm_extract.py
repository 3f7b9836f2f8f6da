"""Step 'llm-extract': the document's memories, with their entities and relations."""

from __future__ import annotations

from typing import Any

from engram.documents import repo as documents
from engram.documents.failures import ExtractionUnusable, UnsupportedHere
from engram.documents.outputs import purge_memories
from engram.documents.runs import DocumentRef
from engram.errors import ExtractionFailed, InvalidInput
from engram.instructions.service import instructions_for
from engram.memories.new_memory import Embedding, Mentions, NewMemory, Owner, Peers
from engram.memory_extraction import make_extractor
from engram.pipeline.context import PipelineContext
from engram.pipeline.document_memories import (
    CandidateMemory,
    ChunkInfo,
    DocumentExtraction,
    DocumentInfo,
    extract_memories,
)
from engram.pipeline.embedding import embed_batched
from engram.pipeline.stages.claims import claim, current, current_or_none
from engram.providers.tenant_models import embedder_for


def llm_extract_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """Memories (with their entities and relations) from the chunks, by the document's extract mode.
    Nothing is written until extraction has fully succeeded; then memories, sources, graph links and
    the token usage commit in one transaction. Tenant, container and ids come from the document."""
    doc = claim(ctx, ref, "indexing")
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
                if current_or_none(cur, ref) is not None:
                    documents.record_usage(
                        cur, ref.tenant_id, ref.document_id, {"extractor": extractor.name, **spent}
                    )
            raise ExtractionUnusable(exc.message) from exc
    candidates = extraction.memories
    with ctx.db.tenant(ref.tenant_id) as cur:
        embedder = embedder_for(ctx.embedder, cur, ref.tenant_id)  # a tenant moved by `engram reembed`
    vectors = embed_batched(
        embedder,
        [c.content for c in candidates],
        batch_size=ctx.settings.embed_batch_size,
        sleep=ctx.sleep,
    )
    model = embedder.model_id
    new = [_new_memory(doc, c, Embedding(v, model)) for c, v in zip(candidates, vectors, strict=True)]
    with ctx.db.unit_of_work(ref.tenant_id) as uow:
        current(uow.cur, ref)
        # An earlier attempt of this step may have committed: start from a clean slate.
        purge_memories(uow.cur, ref.tenant_id, ref.document_id, drop_orphaned_entities=False)
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
