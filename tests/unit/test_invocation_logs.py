"""Each invocation's log lines carry only that invocation's keys: its Lambda context, its correlation id
and what it appended, never another's, whether the other ran before it (a warm Lambda) or at the same
time in another thread (the local front)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aws_lambda_powertools.logging import correlation_paths

from engram.observability import logger


@dataclass
class Context:
    aws_request_id: str
    function_name: str = "memories"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:111111111111:function:memories"


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(logger.registered_formatter.format(record)))


@pytest.fixture
def lines() -> Iterator[list[dict[str, Any]]]:
    capture = Capture()
    logger.addHandler(capture)
    try:
        yield capture.lines
    finally:
        logger.removeHandler(capture)


def _event(request: str) -> dict[str, Any]:
    return {"requestContext": {"requestId": request}, "path": "/v1/memories"}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: Context) -> None:
    """Appends a key of its own, logs, waits for the other invocation if asked to, and logs again."""
    logger.append_keys(document_id=event["document_id"])
    logger.warning("started")
    if "pause" in event:
        event["paused"].set()
        event["pause"].wait(5)
    logger.warning("finished")


def _by_request(lines: list[dict[str, Any]], request: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("function_request_id") == request]


def test_two_interleaved_invocations_never_log_each_other_s_keys(lines: list[dict[str, Any]]) -> None:
    paused, resume = threading.Event(), threading.Event()
    first = {**_event("req-A"), "document_id": "doc-A", "pause": resume, "paused": paused}
    a = threading.Thread(target=handler, args=(first, Context("lambda-A")))
    a.start()
    assert paused.wait(5)
    # B runs whole while A is half way through, then A finishes.
    b = threading.Thread(
        target=handler, args=({**_event("req-B"), "document_id": "doc-B"}, Context("lambda-B"))
    )
    b.start()
    b.join(5)
    resume.set()
    a.join(5)

    assert [line["message"] for line in lines] == ["started", "started", "finished", "finished"]
    for request, own in (("lambda-A", "A"), ("lambda-B", "B")):
        mine = _by_request(lines, request)
        assert len(mine) == 2, lines
        assert {(line["correlation_id"], line["document_id"]) for line in mine} == {
            (f"req-{own}", f"doc-{own}")
        }


def test_a_warm_invocation_keeps_nothing_of_the_one_before(lines: list[dict[str, Any]]) -> None:
    handler({**_event("req-1"), "document_id": "doc-1"}, Context("lambda-1"))

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
    def quiet(event: dict[str, Any], context: Context) -> None:
        logger.warning("no keys of its own")

    quiet(_event("req-2"), Context("lambda-2"))
    logger.warning("outside any invocation")

    second, outside = lines[-2], lines[-1]
    assert (second["correlation_id"], second["function_request_id"]) == ("req-2", "lambda-2")
    assert "document_id" not in second
    assert not {"document_id", "correlation_id", "function_request_id"} & set(outside)
