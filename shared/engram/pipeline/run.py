"""The steps by name (engram.pipeline.steps), each imported when first run, so a step's Lambda loads
only its own module (engram.pipeline.stages), and the end of a run: done or failed."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from engram.documents import repo as documents
from engram.documents.blobs import work_prefix_of
from engram.documents.outputs import fail_document
from engram.documents.runs import DocumentRef
from engram.observability import logger
from engram.pipeline.context import PipelineContext


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


def _imported_when_run(module: str, function: str) -> StepFunction:
    def step(ctx: PipelineContext, ref: DocumentRef) -> dict[str, Any] | None:
        found: StepFunction = getattr(importlib.import_module(module), function)
        return found(ctx, ref)

    step.__name__ = function
    return step


# By step name, as in engram.pipeline.steps.STEPS (every extract function runs `extract`).
STEP_FUNCTIONS: dict[str, StepFunction] = {
    name: _imported_when_run(f"engram.pipeline.stages.{module}", f"{module}_step")
    for name, module in {
        "detect": "detect",
        "extract": "extract",
        "chunk": "chunk",
        "embed": "embed",
        "llm-extract": "llm_extract",
        "graph-link": "graph_link",
    }.items()
}
