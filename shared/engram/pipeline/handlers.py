"""What the thin Lambdas in functions/pipeline/ call: event in, one step, ids out.

Errors leave as exceptions whose class name is the Step Functions error name: TransientError (retried
with backoff), a PipelineFailure subclass (the document fails with its message), anything else
(caught as States.ALL, the document fails with a generic message; the details are in the logs).
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg

from engram.documents.failures import FAILURE_CODES, PipelineFailure, TransientError
from engram.documents.runs import DocumentRef
from engram.errors import ProviderError
from engram.observability import logger
from engram.pipeline.context import PipelineContext
from engram.pipeline.run import STEP_FUNCTIONS, mark_done, mark_failed


def run_step(ctx: PipelineContext, step: str, event: dict[str, Any]) -> dict[str, Any]:
    ref = DocumentRef.from_event(event)
    logger.append_keys(document_id=str(ref.document_id), revision=ref.revision, step=step)
    started = time.monotonic()
    try:
        output = STEP_FUNCTIONS[step](ctx, ref)
    except (PipelineFailure, TransientError) as exc:
        logger.info("step stopped", extra={"error": type(exc).__name__, "reason": str(exc)})
        raise
    except ProviderError as exc:
        if exc.transient:
            raise TransientError(exc.message) from exc
        raise PipelineFailure(f"{step}: the provider refused: {exc.message}") from exc
    except (
        psycopg.OperationalError,
        psycopg.errors.SerializationFailure,
        psycopg.errors.DeadlockDetected,
    ) as exc:
        raise TransientError(f"database unavailable: {type(exc).__name__}") from exc
    logger.info("step done", extra={"seconds": round(time.monotonic() - started, 3)})
    return {**ref.to_event(), **(output or {})}


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
