"""The local runner matches errors by the name Step Functions would see, also for steps that ran in
another process (their class is not importable here) and for timeouts the invoker enforces."""

from __future__ import annotations

import json
import uuid
from typing import Any

from engram.documents.runs import DocumentRef
from engram.pipeline.finish import describe_failure
from engram.pipeline.runner import LocalRunner


class StepError(Exception):
    """What an invoker raises for a step that failed in another process: the error's name only."""

    def __init__(self, error_name: str, message: str) -> None:
        super().__init__(message)
        self.error_name = error_name


class LambdaTimeout(Exception):
    error_name = "Sandbox.Timedout"


def _ref() -> DocumentRef:
    return DocumentRef(uuid.uuid4(), uuid.uuid4(), 1)


class Script:
    def __init__(self, failures: dict[str, list[Exception]]) -> None:
        self.failures = failures
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((function, event))
        pending = self.failures.get(function)
        if pending:
            raise pending.pop(0)
        ids = {k: event[k] for k in ("tenant_id", "document_id", "revision")}
        return {**ids, "family": "documents"} if function == "detect" else ids


def test_a_transient_error_from_a_worker_is_retried_by_its_name() -> None:
    script = Script(
        {"embed": [StepError("TransientError", "throttled"), StepError("TransientError", "again")]}
    )

    status = LocalRunner(script, sleep=lambda _: None).run(_ref())

    assert status == "done"
    assert [f for f, _ in script.calls].count("embed") == 3


def test_a_step_killed_at_its_time_limit_fails_the_document_with_timeout() -> None:
    script = Script({"llm_extract": [LambdaTimeout("Task timed out after 600.00 seconds")]})

    status = LocalRunner(script, sleep=lambda _: None).run(_ref())

    assert status == "failed"
    assert [f for f, _ in script.calls].count("llm_extract") == 1  # not retried
    finish = script.calls[-1][1]
    assert finish["outcome"] == "failed" and finish["error"]["Error"] == "Sandbox.Timedout"
    assert json.loads(finish["error"]["Cause"])["errorMessage"] == "Task timed out after 600.00 seconds"
    assert describe_failure(finish["step"], finish["error"])[0] == "timeout"
