"""The SDK against the local stack over real HTTP: a client per test, for the test's own tenant."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from engram.tenants.service import IssuedKey
from engram_client import AsyncEngram, Engram


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def engram(live_url: str, tenant: IssuedKey) -> Iterator[Engram]:
    with Engram(base_url=live_url, api_key=tenant.plaintext) as client:
        yield client


@pytest.fixture
async def async_engram(live_url: str, tenant: IssuedKey) -> AsyncIterator[AsyncEngram]:
    async with AsyncEngram(base_url=live_url, api_key=tenant.plaintext) as client:
        yield client
