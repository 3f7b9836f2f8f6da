"""The retry rule: a call is sent again only when that cannot change the outcome or the answer. Lost
answers are made by a transport that forwards the request to the local stack and then breaks (the
request was applied, its answer never came back); gateway answers by httpx's MockTransport."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import httpx
import pytest

from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from engram_client import (
    APIConnectionError,
    AsyncEngram,
    Engram,
    InvalidInputError,
    MaybeApplied,
    NotFoundError,
    ServerError,
)
from tests.integration.db_cut import handlers_through_cuts


class LoseAnswers(httpx.BaseTransport):
    """Sends each request to the server; the answers of the first `lose` requests that `match` are
    lost on their way back (a connection reset, a read timeout)."""

    def __init__(
        self,
        lose: int,
        match: Callable[[httpx.Request], bool],
        error: type[httpx.TransportError] = httpx.ReadError,
    ) -> None:
        self.inner, self.lose, self.match, self.error = httpx.HTTPTransport(), lose, match, error
        self.sent: list[tuple[str, str, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()
        self.sent.append((request.method, request.url.path, response.status_code))
        if self.lose and self.match(request):
            self.lose -= 1
            raise self.error("the answer was lost", request=request)
        return response


class AsyncLoseAnswers(httpx.AsyncBaseTransport):
    def __init__(self, lose: int, match: Callable[[httpx.Request], bool]) -> None:
        self.inner, self.lose, self.match = httpx.AsyncHTTPTransport(), lose, match
        self.sent: list[tuple[str, int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        await response.aread()
        self.sent.append((request.method, response.status_code))
        if self.lose and self.match(request):
            self.lose -= 1
            raise httpx.ReadError("the answer was lost", request=request)
        return response


def method(name: str) -> Callable[[httpx.Request], bool]:
    return lambda request: request.method == name


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


@pytest.fixture
def lossy(live_url: str, tenant: IssuedKey) -> Iterator[tuple[Engram, LoseAnswers]]:
    transport = LoseAnswers(0, method("PUT"))
    with Engram(live_url, tenant.plaintext, transport=transport) as client:
        yield client, transport


def test_a_conditional_write_whose_answer_was_lost_is_applied_once_and_says_so(
    lossy: tuple[Engram, LoseAnswers],
) -> None:
    client, transport = lossy
    first = client.set_working("plan", "counter", value=0)
    transport.lose, transport.match = 1, method("PUT")

    with pytest.raises(MaybeApplied) as raised:
        client.set_working("plan", "counter", value=1, if_match=first.version)

    assert isinstance(raised.value, APIConnectionError)
    assert raised.value.operation == "PUT /v1/working/{scope}/{key}" and "may have been applied" in str(
        raised.value
    )
    assert [sent for sent in transport.sent if sent[0] == "PUT"][1:] == [
        ("PUT", "/v1/working/plan/counter", 200)
    ]
    stored = client.get_working("plan", "counter")
    assert (stored.value, stored.version) == (1, first.version + 1)


def test_a_write_that_timed_out_says_it_may_have_been_applied_and_is_sent_once(
    live_url: str, tenant: IssuedKey
) -> None:
    transport = LoseAnswers(1, method("POST"), error=httpx.ReadTimeout)
    with Engram(live_url, tenant.plaintext, transport=transport) as client:
        with pytest.raises(MaybeApplied, match="ReadTimeout"):
            client.create_memory(content="Bob moved to Lyon", container="timeouts")

        assert [m.content for m in client.iter_memories(container="timeouts")] == ["Bob moved to Lyon"]
    assert [sent[0] for sent in transport.sent].count("POST") == 2  # the create, then the list


def test_a_delete_whose_answer_was_lost_is_answered_as_done(lossy: tuple[Engram, LoseAnswers]) -> None:
    client, transport = lossy
    memory = client.create_memory(content="a memory to delete", container="deletes")
    transport.lose, transport.match = 1, method("DELETE")

    assert client.delete_memory(memory.id) is None

    assert [sent[2] for sent in transport.sent if sent[0] == "DELETE"] == [204, 404]
    with pytest.raises(NotFoundError):
        client.get_memory(memory.id)


def test_a_delete_of_nothing_is_still_not_found(engram: Engram) -> None:
    with pytest.raises(NotFoundError):
        engram.delete_working("plan", "never-set")


def test_erasing_a_user_is_not_repeated_after_a_lost_answer(lossy: tuple[Engram, LoseAnswers]) -> None:
    client, transport = lossy
    client.create_memory(content="Eve has a cat", user_id="eve", visibility="private", container="erase")
    transport.lose, transport.match = 1, method("DELETE")

    with pytest.raises(MaybeApplied):
        client.erase_user("eve", confirm=True)

    assert [sent for sent in transport.sent if sent[0] == "DELETE"] == [("DELETE", "/v1/users/eve", 200)]


def test_a_read_whose_answer_was_lost_is_read_again(lossy: tuple[Engram, LoseAnswers]) -> None:
    client, transport = lossy
    client.set_working("plan", "step", value=3)
    transport.lose, transport.match = 2, method("GET")

    assert client.get_working("plan", "step").value == 3


@pytest.mark.anyio
async def test_the_async_client_answers_a_lost_delete_as_done(live_url: str, tenant: IssuedKey) -> None:
    transport = AsyncLoseAnswers(0, method("DELETE"))
    async with AsyncEngram(live_url, tenant.plaintext, transport=transport) as client:
        await client.set_working("plan", "k", value=1)
        transport.lose = 1

        assert await client.delete_working("plan", "k") is None

    assert [sent for sent in transport.sent if sent[0] == "DELETE"] == [("DELETE", 204), ("DELETE", 404)]


def answers(*responses: httpx.Response) -> tuple[list[httpx.Request], httpx.MockTransport]:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return responses[min(len(calls), len(responses)) - 1]

    return calls, httpx.MockTransport(handler)


def error(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": "x", "message": f"m{status}"}}, headers=headers)


WORKING = {
    "scope": "s",
    "key": "k",
    "value": 1,
    "version": 2,
    "created_at": "2024-01-01T00:00:00Z",
    "updated_at": "2024-01-01T00:00:00Z",
}


def test_a_conditional_write_is_not_repeated_after_a_gateway_timeout_and_may_have_been_applied() -> None:
    calls, transport = answers(error(504), httpx.Response(200, json=WORKING))
    client = Engram("http://engram.test", "key", transport=transport)

    with pytest.raises(MaybeApplied) as raised:
        client.set_working("s", "k", value=1, if_match=1)

    assert raised.value.status == 504 and isinstance(raised.value.__cause__, ServerError)
    assert len(calls) == 1


def test_a_create_refused_because_the_key_could_not_be_checked_is_sent_again_and_stored_once(
    live_url: str, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given: the connection to the database drops at the authorizer's first statement
    transport = LoseAnswers(0, method("POST"))
    with (
        handlers_through_cuts(local_db) as (proxy, _),
        Engram(live_url, tenant.plaintext, transport=transport) as client,
    ):
        proxy.cut_at(1)

        # When: a create is sent, and refused before any handler ran (503 not_handled, Retry-After)
        created = client.create_memory(content="Dana lives in Oslo", container="refused")
        proxy.cut_at(None)

        # Then: the client sent it again, and it was stored once
        assert [status for _, _, status in transport.sent] == [503, 201]
        assert [m.id for m in client.iter_memories(container="refused")] == [created.id]


def test_a_delete_answered_not_found_after_a_lost_answer_is_done() -> None:
    calls, transport = answers(error(502), error(404))
    client = Engram("http://engram.test", "key", transport=transport)

    assert client.delete_memory("7f6e2b8c-1d2a-4c3b-9e8f-0a1b2c3d4e5f") is None
    assert len(calls) == 2


def test_a_throttled_write_is_sent_again() -> None:
    calls, transport = answers(error(429, {"Retry-After": "0"}), error(422))
    client = Engram("http://engram.test", "key", transport=transport)

    with pytest.raises(InvalidInputError):  # the answer to the second attempt
        client.create_memory(content="x")

    assert len(calls) == 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CALLS: dict[str, Callable[[Engram], Any]] = {
    "read": lambda client: client.get_health(),
    "write": lambda client: client.create_memory(content="x"),
}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("max_retries", [0, 2])
def test_a_server_that_is_down_is_tried_as_often_as_the_policy_says(
    call: str, max_retries: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    connects: list[Any] = []
    connect = httpcore.SyncBackend.connect_tcp

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        connects.append(args)
        return connect(self, *args, **kwargs)

    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", counted)
    with (
        Engram(f"http://127.0.0.1:{free_port()}", "key", max_retries=max_retries) as client,
        pytest.raises(APIConnectionError) as raised,
    ):
        CALLS[call](client)

    assert len(connects) == max_retries + 1
    assert not isinstance(raised.value, MaybeApplied)
