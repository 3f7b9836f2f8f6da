"""Step 'chunk': the extracted text cut into chunks, replacing the document's earlier ones."""

from __future__ import annotations

from engram.documents import repo as documents
from engram.documents.failures import EmptyContent, TooLarge
from engram.documents.runs import DocumentRef
from engram.pipeline.chunking import chunk
from engram.pipeline.context import PipelineContext
from engram.pipeline.extracted import Extracted
from engram.pipeline.stages.claims import claim, current, extracted_key


def chunk_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    claim(ctx, ref, "chunking")
    extracted = Extracted.from_json(ctx.blobs.get(extracted_key(ctx, ref)))
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
        doc = current(cur, ref)
        documents.replace_chunks(
            cur, ref.tenant_id, doc, [(d.content, d.token_count, d.metadata) for d in drafts]
        )
