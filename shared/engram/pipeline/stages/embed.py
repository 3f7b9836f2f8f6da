"""Step 'embed': the chunks' vectors, a page at a time."""

from __future__ import annotations

from engram.db.vectors import vector_literal
from engram.documents import repo as documents
from engram.documents.runs import DocumentRef
from engram.pipeline.context import PipelineContext
from engram.pipeline.embedding import embed_batched
from engram.pipeline.stages.claims import claim, current
from engram.providers.tenant_models import embedder_for

# The embed step reads, embeds and writes this many chunks at a time.
EMBED_PAGE_CHUNKS = 256


def embed_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """Embeds the chunks a page at a time, each page committed once the revision is checked again:
    memory stays bounded whatever the document's size, and a retry resumes where it stopped."""
    claim(ctx, ref, "embedding")
    with ctx.db.tenant(ref.tenant_id) as cur:
        embedder = embedder_for(ctx.embedder, cur, ref.tenant_id)  # a tenant moved by `engram reembed`
    model = embedder.model_id
    after = -1
    while True:
        with ctx.db.tenant(ref.tenant_id) as cur:
            rows = documents.chunks_to_embed(
                cur, ref.tenant_id, ref.document_id, model, after_ordinal=after, limit=EMBED_PAGE_CHUNKS
            )
        if not rows:
            return
        vectors = embed_batched(
            embedder,
            [r["content"] for r in rows],
            batch_size=ctx.settings.embed_batch_size,
            sleep=ctx.sleep,
        )
        with ctx.db.tenant(ref.tenant_id) as cur:
            current(cur, ref)
            documents.set_chunk_embeddings(
                cur,
                ref.tenant_id,
                [(r["id"], vector_literal(v)) for r, v in zip(rows, vectors, strict=True)],
                model,
            )
        after = rows[-1]["ordinal"]
