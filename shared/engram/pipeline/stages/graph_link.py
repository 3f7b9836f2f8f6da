"""Step 'graph-link': how the document's new memories relate to the container's older ones."""

from __future__ import annotations

from engram.documents import repo as documents
from engram.documents.runs import DocumentRef
from engram.memories.new_memory import Peers
from engram.observability import logger
from engram.pipeline.context import PipelineContext
from engram.pipeline.stages.claims import claim, current


def graph_link_step(ctx: PipelineContext, ref: DocumentRef) -> None:
    """How each new memory relates to the container's existing memories nearest to it (by vector and
    by shared entities): `updates` (retires the older one, as an explicit `supersedes` does; only
    between memories about one subject), `extends`, `derives`, or nothing (engram.graph.graph_link
    decides, the memory writer records). One transaction."""
    claim(ctx, ref, "indexing")
    peers = Peers(
        same_owner=False, document_id=ref.document_id, provenance={"document_id": str(ref.document_id)}
    )
    with ctx.db.unit_of_work(ref.tenant_id) as uow:
        current(uow.cur, ref)
        made = [  # not the older memories this document only confirmed
            memory
            for memory in documents.memories_of(uow.cur, ref.tenant_id, ref.document_id)
            if memory["metadata"].get("document_id") == str(ref.document_id)
        ]
        links = ctx.writer.graph_link(uow, made, peers)
    logger.info("graph-link", extra={"document_id": str(ref.document_id), "links": links})
