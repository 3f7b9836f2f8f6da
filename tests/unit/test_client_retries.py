"""engram-client's retries, against a scripted transport: 429 and 5xx and broken connections are
retried with backoff only where repeating the call is harmless (or, for a 503 `not_handled`, where
nothing was applied), Retry-After is honoured up to the maximum backoff, and what is not retried
surfaces at once as an exception with the server's code and message: `MaybeApplied` for a write whose
answer was lost."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from engram_client import (
    APIConnectionError,
    Engram,
    MaybeApplied,
    RateLimitError,
    RetryPolicy,
    ServerError,
    _base,
)
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


def test_a_create_is_not_repeated_after_a_5xx_and_may_have_been_applied(slept: list[float]) -> None:
    script = Script(_error(503, "service_unavailable"))

    with pytest.raises(MaybeApplied) as raised:
        _client(script).create_memory(content="x")

    assert (raised.value.status, raised.value.operation) == (503, "POST /v1/memories")
    cause = raised.value.__cause__
    assert isinstance(cause, ServerError)
    assert (cause.status, cause.code, cause.message) == (503, "service_unavailable", "service_unavailable!")
    assert len(script.requests) == 1 and slept == []


@pytest.mark.parametrize("status", [502, 504])
def test_a_create_answered_by_a_gateway_that_lost_the_answer_may_have_been_applied(
    slept: list[float], status: int
) -> None:
    script = Script(_error(status, "upstream_error"))

    with pytest.raises(MaybeApplied) as raised:
        _client(script).create_memory(content="x")

    assert raised.value.status == status and isinstance(raised.value.__cause__, ServerError)
    assert len(script.requests) == 1 and slept == []


def test_a_create_refused_before_any_handler_ran_is_sent_again_after_retry_after(
    slept: list[float],
) -> None:
    refused = _error(503, "not_handled", {"Retry-After": "2"})
    script = Script(refused, httpx.Response(201, json=MEMORY))

    memory = _client(script).create_memory(content="x")

    assert memory.content == "x" and len(script.requests) == 2 and slept == [2.0]


def test_a_create_refused_not_handled_every_time_raises_the_refusal_not_maybe_applied(
    slept: list[float],
) -> None:
    script = Script(*[_error(503, "not_handled", {"Retry-After": "1"}) for _ in range(4)])

    with pytest.raises(ServerError) as raised:
        _client(script).create_memory(content="x")

    assert (raised.value.status, raised.value.code) == (503, "not_handled")
    assert len(script.requests) == 4 and slept == [1.0, 1.0, 1.0]


def test_an_upsert_is_sent_again_and_when_every_answer_is_lost_it_may_have_been_applied(
    slept: list[float],
) -> None:
    lost = Script(*[_error(503, "service_unavailable", {"Retry-After": "1"}) for _ in range(4)])
    broken = Script(*[httpx.ReadError("reset") for _ in range(4)])

    with pytest.raises(MaybeApplied) as answered:
        _client(lost).upsert_memory(content="Alice moved to Berlin")
    with pytest.raises(MaybeApplied) as cut:
        _client(broken).upsert_memory(content="Alice moved to Berlin")

    assert (answered.value.status, answered.value.operation) == (503, "POST /v1/memories/upsert")
    assert isinstance(answered.value.__cause__, ServerError)
    assert cut.value.operation == "POST /v1/memories/upsert"
    assert len(lost.requests) == len(broken.requests) == 4


def test_retry_after_on_a_503_that_may_follow_a_commit_does_not_send_a_create_again(
    slept: list[float],
) -> None:
    # The server's 503 for a lost database connection carries Retry-After too: the commit may have landed
    script = Script(_error(503, "service_unavailable", {"Retry-After": "2"}))

    with pytest.raises(MaybeApplied):
        _client(script).create_memory(content="x")

    assert len(script.requests) == 1 and slept == []


def test_a_read_waits_what_retry_after_asks_on_a_503(slept: list[float]) -> None:
    script = Script(
        _error(503, "service_unavailable", {"Retry-After": "2"}), httpx.Response(200, json=MEMORY)
    )

    assert _client(script).get_memory("6b1f4c1e-8c4c-4c2a-9d0e-111111111111").content == "x"
    assert slept == [2.0]


def test_a_long_retry_after_is_cut_to_the_maximum_backoff(slept: list[float]) -> None:
    script = Script(_error(429, "throttled", {"Retry-After": "600"}), httpx.Response(200, json=MEMORY))

    _client(script).get_memory("6b1f4c1e-8c4c-4c2a-9d0e-111111111111")

    assert slept == [RetryPolicy().max_backoff]


def test_retry_after_as_an_http_date_is_the_seconds_until_then() -> None:
    policy = RetryPolicy(max_backoff=60.0)
    then = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    assert 28.0 <= policy.delay(0, retry_after=then) <= 30.0
    assert policy.delay(0, retry_after=format_datetime(datetime(2000, 1, 1, tzinfo=UTC), usegmt=True)) == 0.0


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
    with pytest.raises(MaybeApplied):
        _client(unkeyed).create_document(content="x")
    assert len(keyed.requests) == 2 and len(unkeyed.requests) == 1


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=8, backoff=0.5, max_backoff=4.0)
    delays = [policy.delay(attempt) for attempt in range(6)]

    ceilings = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    assert policy.delay(0, retry_after="3") == 3.0 and policy.delay(0, retry_after="Wed, 21 Oct") <= 0.5


def test_a_used_up_daily_quota_is_raised_at_once(slept: list[float]) -> None:
    script = Script(_error(429, "quota_exceeded", {"Retry-After": "3600"}), httpx.Response(200, json=MEMORY))

    with pytest.raises(RateLimitError) as raised:
        _client(script).get_memory("6b1f4c1e-8c4c-4c2a-9d0e-111111111111")

    assert raised.value.code == "quota_exceeded"
    assert len(script.requests) == 1 and slept == []
