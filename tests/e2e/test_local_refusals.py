"""The 503s engram local's front answers before any worker runs the request (no worker came free; the
server is stopping), over real HTTP: the front (Hypercorn and its ASGI app) hands each request to
LocalStack's own dispatch, onto a pool whose workers never start or that is closed. Each says when
to try again (Retry-After) and that nothing ran (`not_handled`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from engram.local import run
from engram.local.asgi import StreamedResponse
from engram.local.channel import Boot, HttpCall
from engram.local.gateway import HttpResponse
from engram.local.run import LocalStack
from engram.local.workers import WorkerPool
from tests.conftest import serving


async def _never_boots() -> Boot:
    raise AssertionError("no worker is started in these tests")


@pytest.fixture
def pool() -> WorkerPool:
    return WorkerPool("api", 1, _never_boots)  # not started: no worker ever comes free


@pytest.fixture
def front(pool: WorkerPool) -> Iterator[str]:
    async def invoke(call: HttpCall, body: AsyncIterator[bytes] | None) -> HttpResponse | StreamedResponse:
        return await LocalStack._http(pool, call, body)

    with serving(invoke) as url:
        yield url


def test_no_worker_free_is_a_503_with_retry_after_that_says_nothing_was_handled(
    pool: WorkerPool, front: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "API_TIMEOUT_SECONDS", 0.05)  # the wait for a worker, cut short

    answer = httpx.post(f"{front}/v1/memories", json={"content": "x"}, headers={"x-api-key": "k"})

    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"
    assert answer.json()["error"]["code"] == "not_handled"


def test_a_stopping_server_refuses_with_retry_after_and_says_nothing_was_handled(
    pool: WorkerPool, front: str
) -> None:
    asyncio.run(pool.close(grace=0))

    answer = httpx.post(f"{front}/v1/memories", json={"content": "x"}, headers={"x-api-key": "k"})

    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert answer.json()["error"] == {"code": "not_handled", "message": "the server is stopping"}
