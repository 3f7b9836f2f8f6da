"""What the finish function calls: the end of a run, done or failed (mark-done, mark-failed), and
executions that died without reaching MarkFailed (EventBridge's execution status changes)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from engram.documents import repo as documents
from engram.documents.blobs import revision_prefix_of
from engram.documents.failures import FAILURE_CODES
from engram.documents.outputs import fail_document
from engram.documents.runs import DocumentRef
from engram.observability import logger

if TYPE_CHECKING:
    from engram.pipeline.context import PipelineContext


def mark_done(ctx: PipelineContext, ref: DocumentRef) -> bool:
    with ctx.db.tenant(ref.tenant_id) as cur:
        done = documents.finish(cur, ref.tenant_id, ref.document_id, ref.revision, "done")
    if done:
        _drop_work_files(ctx, ref)
    return done


def mark_failed(ctx: PipelineContext, ref: DocumentRef, code: str, message: str) -> bool:
    """Fail the document's revision; and whatever the document's state, drop the run's work files: a
    document deleted (or queued again) while the run worked (a transcription job running) gets files
    the run writes after its delete (the transcript, the extracted text), which no later run reads."""
    changed = fail_document(ctx.db, ref, code, message)
    _drop_work_files(ctx, ref)
    return changed


def _drop_work_files(ctx: PipelineContext, ref: DocumentRef) -> None:
    try:
        ctx.blobs.delete_prefix(
            revision_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id, ref.revision)
        )
    except Exception:  # only intermediate files: never fail a document over them
        logger.exception("could not delete work files", extra={"document_id": str(ref.document_id)})


def describe_failure(step: str | None, error: dict[str, Any] | None) -> tuple[str, str]:
    """(code, message) for the document, from a Step Functions error object {Error, Cause}."""
    error = error or {}
    name = str(error.get("Error") or "")
    cause = error.get("Cause")
    message = ""
    if isinstance(cause, str) and cause:
        try:
            message = str(json.loads(cause).get("errorMessage") or "")
        except (json.JSONDecodeError, AttributeError):
            message = cause
    where = f"{step}: " if step else ""
    if name in FAILURE_CODES:
        return FAILURE_CODES[name], f"{where}{message}" if message else f"{where}{name}"
    # States.Timeout: the Task's TimeoutSeconds; Sandbox.Timedout: the Lambda's own timeout, which
    # comes first (the Task allows TASK_TIMEOUT_MARGIN_SECONDS more). `engram local` reports the latter.
    if name in ("States.Timeout", "Sandbox.Timedout"):
        return "timeout", f"{where}the step took longer than its time limit"
    if name == "TransientError" or name.startswith("Lambda."):
        return "unavailable", f"{where}still failing after retries ({name}: {message or 'no detail'})"
    if name.startswith("Execution."):
        return "execution_failed", message or f"the pipeline execution ended: {name}"
    return "internal_error", f"{where}an unexpected error occurred ({name or 'unknown'}); it has been logged"


def run_finish(ctx: PipelineContext, event: dict[str, Any]) -> dict[str, Any]:
    """mark-done / mark-failed, and EventBridge 'Step Functions Execution Status Change' events for
    executions that died without reaching MarkFailed (timed out, aborted)."""
    if event.get("source") == "aws.states":
        detail = event.get("detail") or {}
        ref = DocumentRef.from_event(json.loads(detail.get("input") or "{}"))
        status = str(detail.get("status", "FAILED"))
        changed = mark_failed(
            ctx,
            ref,
            "execution_" + status.lower(),
            f"the pipeline execution {status.lower().replace('_', ' ')}",
        )
        return {**ref.to_event(), "changed": changed}
    ref = DocumentRef.from_event(event)
    if event.get("outcome") == "done":
        return {**ref.to_event(), "changed": mark_done(ctx, ref)}
    code, message = describe_failure(event.get("step"), event.get("error"))
    return {**ref.to_event(), "changed": mark_failed(ctx, ref, code, message)}
