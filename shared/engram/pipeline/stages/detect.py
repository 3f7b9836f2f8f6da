"""Step 'detect': the file's type, and so which extract function reads it."""

from __future__ import annotations

from typing import Any

from engram.documents.runs import DocumentRef
from engram.observability import logger
from engram.pipeline.context import PipelineContext
from engram.pipeline.readers import identify
from engram.pipeline.stages.claims import claim
from engram.pipeline.stages.source import document_source


def detect_step(ctx: PipelineContext, ref: DocumentRef) -> dict[str, Any]:
    """The file's type and so its family: which extract function reads it (engram.pipeline.steps)."""
    doc = claim(ctx, ref, "extracting")
    found = identify(document_source(ctx, ref, doc, fetch=True), ctx.limits)
    logger.info("detected", extra={"content_type": found.content_type, "family": found.family})
    return {"family": found.family}
