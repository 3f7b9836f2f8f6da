"""The local runner: the state machine's behaviour, in-process, over the same step list.

It invokes the same Lambda handlers (functions/pipeline/<step>/handler.py) in the order of
`engram.pipeline.steps.STAGES` (a route's branch chosen by the previous step's output, as the state
machine's Choice does), retries TransientError with the same backoff policy, sends any other
failure to mark-failed with the step's name, and marks the document done at the end. Time limits
are the invoker's: `engram local` runs each step in a worker process it kills at the step's timeout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from engram.documents.runs import DocumentRef
from engram.observability import logger
from engram.pipeline.steps import (
    FINISH,
    RETRY_BACKOFF_RATE,
    RETRY_MAX_ATTEMPTS,
    RETRY_MAX_DELAY_SECONDS,
    STAGES,
    TRANSIENT_ERRORS,
)

# Calls the Lambda of one step, functions/pipeline/<function>/handler.py, with an event; returns its
# result. Given by whoever runs the pipeline in-process (engram.local.functions.invoke_pipeline_step).
Invoke = Callable[[str, dict[str, Any]], dict[str, Any]]


def error_name(exc: BaseException) -> str:
    """The error name Step Functions matches: the exception's class name, or the name an invoker
    gives (a step that ran in another process, a timeout)."""
    return str(getattr(exc, "error_name", None) or type(exc).__name__)


def error_object(exc: BaseException) -> dict[str, str]:
    """The {Error, Cause} a Catch sees when a Python Lambda raises `exc`."""
    name = error_name(exc)
    return {"Error": name, "Cause": json.dumps({"errorMessage": str(exc), "errorType": name})}


class LocalRunner:
    def __init__(
        self,
        invoke: Invoke,
        *,
        retry_interval: float = 0.5,
        max_retries: int = RETRY_MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.invoke = invoke
        self.retry_interval = retry_interval
        self.max_retries = max_retries
        self.sleep = sleep

    def run(self, ref: DocumentRef) -> str:
        """Run every step for `ref`; returns "done" or "failed"."""
        state = ref.to_event()
        for stage in STAGES:
            try:
                step = stage.choose(state)
                # Like a Task's payload, only the ids go in; the output may carry more (detect's family).
                state = self._with_retry(step.function, ref.to_event())
            except Exception as exc:
                logger.info(
                    "pipeline step failed",
                    extra={
                        "step": stage.name,
                        "document_id": str(ref.document_id),
                        "error": error_name(exc),
                    },
                )
                self._finish(
                    {**ref.to_event(), "outcome": "failed", "step": stage.name, "error": error_object(exc)}
                )
                return "failed"
        try:
            self._with_retry(FINISH.function, {**ref.to_event(), "outcome": "done"})
        except Exception as exc:
            self._finish(
                {**ref.to_event(), "outcome": "failed", "step": "mark-done", "error": error_object(exc)}
            )
            return "failed"
        return "done"

    def _finish(self, event: dict[str, Any]) -> None:
        try:
            self._with_retry(FINISH.function, event)
        except Exception:
            # Left unfinished: the sweeper (or the next `engram local`) resolves it.
            logger.exception("mark-failed failed", extra={"document_id": event.get("document_id")})

    def _with_retry(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        delay = self.retry_interval
        for attempt in range(self.max_retries + 1):
            try:
                return self.invoke(function, event)
            except Exception as exc:
                if error_name(exc) not in TRANSIENT_ERRORS or attempt == self.max_retries:
                    raise
                logger.info(
                    "retrying", extra={"function": function, "attempt": attempt + 1, "error": str(exc)}
                )
                self.sleep(delay)
                delay = min(delay * RETRY_BACKOFF_RATE, RETRY_MAX_DELAY_SECONDS)
        raise AssertionError("unreachable")
