"""engram-client's retries, against a scripted transport: 429 and 5xx and broken connections are
retried with backoff only where repeating the call is harmless, Retry-After is honoured, and what is
not retried surfaces at once as an exception with the server's code and message."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from engram_client import APIConnectionError, Engram, RateLimitError, RetryPolicy, ServerError, _base
from tests import export_records as records

MEMORY = records.memory_response(id="6b1f4c1e-8c4c-4c2a-9d0e-111111111111", embedding_model="m")


def _error(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": f"{code}!"}}, headers=headers)


class Script:
    """Answers each request with the next step: a response, or an exception to raise."""

    def __init__(self, *steps: httpx.Response | Exception) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    delays: list[float] = []
    monkeypatch.setattr(_base.time, "sleep", delays.append)
    return delays


def _client(script: Callable[[httpx.Request], httpx.Response]) -> Engram:
    return Engram(base_url="http://engram.test", api_key="k", transport=httpx.MockTransport(script))


def test_a_read_is_retried_through_503s_then_succeeds(slept: list[float]) -> None:
    script = Script(
        _error(503, "service_unavailable"), _error(502, "upstream_error"), httpx.Response(200, json=MEMORY)
    )

    memory = _client(script).get_memory("6b1f4c1e-8c4c-4c2a-9d0e-111111111111")

    assert memory.content == "x" and len(script.requests) == 3 and len(slept) == 2
    assert all(request.headers["x-api-key"] == "k" for request in script.requests)


def test_a_create_is_not_repeated_after_a_5xx(slept: list[float]) -> None:
    script = Script(_error(503, "service_unavailable"))

    with pytest.raises(ServerError) as raised:
        _client(script).create_memory(content="x")

    assert (raised.value.status, raised.value.code, raised.value.message) == (
        503,
        "service_unavailable",
        "service_unavailable!",
    )
    assert len(script.requests) == 1 and slept == []


def test_retry_after_is_honoured_and_the_last_429_is_raised(slept: list[float]) -> None:
    script = Script(*[_error(429, "throttled", {"Retry-After": "2"}) for _ in range(4)])

    with pytest.raises(RateLimitError):
        _client(script).search(query="x")

    assert len(script.requests) == 4 and slept == [2.0, 2.0, 2.0]


def test_a_broken_connection_is_retried_for_a_read_but_not_for_a_create(slept: list[float]) -> None:
    read = Script(httpx.ReadError("reset"), httpx.Response(200, json=MEMORY))
    create = Script(httpx.ReadError("reset"))

    assert _client(read).get_memory("6b1f4c1e-8c4c-4c2a-9d0e-111111111111").content == "x"
    with pytest.raises(APIConnectionError, match="ReadError"):
        _client(create).create_memory(content="x")
    assert len(read.requests) == 2 and len(create.requests) == 1


def test_a_document_with_a_custom_id_is_an_upsert_and_retried_without_one_it_is_not(
    slept: list[float],
) -> None:
    accepted = httpx.Response(202, json={"id": MEMORY["id"], "status": "queued", "duplicate": False})
    keyed = Script(_error(503, "service_unavailable"), accepted)
    unkeyed = Script(_error(503, "service_unavailable"))

    assert _client(keyed).create_document(content="x", custom_id="doc-1").status == "queued"
    with pytest.raises(ServerError):
        _client(unkeyed).create_document(content="x")
    assert len(keyed.requests) == 2 and len(unkeyed.requests) == 1


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=8, backoff=0.5, max_backoff=4.0)
    delays = [policy.delay(attempt) for attempt in range(6)]

    ceilings = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    assert policy.delay(0, retry_after="3") == 3.0 and policy.delay(0, retry_after="Wed, 21 Oct") <= 0.5
