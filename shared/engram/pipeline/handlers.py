"""What the thin Lambdas of the pipeline's steps (functions/pipeline/<step>/) call: event in, one step,
ids out. The finish function's is engram.pipeline.finish.run_finish.

Errors leave as exceptions whose class name is the Step Functions error name: TransientError (retried
with backoff), a PipelineFailure subclass (the document fails with its message), anything else
(caught as States.ALL, the document fails with a generic message; the details are in the logs).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psycopg

from engram.documents.failures import PipelineFailure, TransientError
from engram.documents.runs import DocumentRef
from engram.errors import ProviderError
from engram.observability import logger
from engram.pipeline.run import STEP_FUNCTIONS, load_step

if TYPE_CHECKING:
    from engram.pipeline.context import PipelineContext

__all__ = ["load_step", "run_step"]


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
