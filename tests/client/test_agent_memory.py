"""AgentMemoryProtocol, driven exactly as its specification defines it, against both backends (Engram
over HTTP, and in-process): store, get, search with its filters and threshold, delete, failures as
Error values (never raised), unknown tenants, other tenants' ids, and caller-supplied embeddings."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import pytest

from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from engram_client import AsyncEngram, agent_memory
from engram_client.agent_memory import (
    AgentMemoryProtocol,
    EngramAgentMemory,
    Error,
    InMemoryAgentMemory,
    Memory,
    SearchResult,
    create_memory_backend,
)

pytestmark = pytest.mark.anyio
MODEL = "toy-3d"


def toy_embedding(text: str) -> list[float]:
    """A 3-d embedding of my own: one axis per animal."""
    lowered = text.lower()
    return [float("cat" in lowered), float("dog" in lowered), float("bird" in lowered) + 0.01]


@pytest.fixture(params=["engram", "memory"])
async def backend(
    request: pytest.FixtureRequest, live_url: str, tenant: IssuedKey
) -> AsyncIterator[tuple[Any, UUID]]:
    if request.param == "memory":
        yield InMemoryAgentMemory(embedders={MODEL: toy_embedding}), tenant.tenant_id
        return
    async with EngramAgentMemory(
        {tenant.tenant_id: tenant.plaintext}, live_url, embedders={MODEL: toy_embedding}
    ) as memory:
        yield memory, tenant.tenant_id


async def test_both_backends_implement_the_protocol(backend: tuple[Any, UUID]) -> None:
    memory, _ = backend
    assert isinstance(memory, AgentMemoryProtocol)


async def test_a_stored_memory_is_read_back(backend: tuple[Any, UUID]) -> None:
    memory, tenant_id = backend

    stored = await memory.store(
        "The user prefers window seats",
        "travel-agent",
        tenant_id=tenant_id,
        conversation_id="c-1",
        tags=["prefs"],
    )
    read = await memory.get(stored.id, tenant_id=tenant_id)

    assert isinstance(stored, Memory) and read == stored
    assert (stored.agent_id, stored.conversation_id, stored.tags) == ("travel-agent", "c-1", ["prefs"])


async def test_search_ranks_by_similarity_and_filters(backend: tuple[Any, UUID]) -> None:
    memory, tenant_id = backend
    window = await memory.store(
        "The user prefers window seats on flights", "travel", tenant_id=tenant_id, tags=["a"]
    )
    await memory.store("The user is allergic to peanuts", "food", tenant_id=tenant_id, tags=["b"])

    found = await memory.search("window seats on flights", tenant_id=tenant_id, top_k=5)
    by_agent = await memory.search("window seats on flights", tenant_id=tenant_id, agent_id="food")
    by_tags = await memory.search("window seats on flights", tenant_id=tenant_id, tags=["b"])
    strict = await memory.search("window seats on flights", tenant_id=tenant_id, score_threshold=0.99)

    assert isinstance(found, list) and all(isinstance(r, SearchResult) for r in found)
    assert found[0].memory.id == window.id and 0 < found[0].score <= 1
    assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)
    assert [r.memory.agent_id for r in by_agent] == ["food"]
    assert [r.memory.tags for r in by_tags] == [["b"]]
    assert all(r.score >= 0.99 for r in strict) and len(strict) < len(found)


async def test_delete_answers_whether_something_was_deleted(backend: tuple[Any, UUID]) -> None:
    memory, tenant_id = backend
    stored = await memory.store("temporary note", "a", tenant_id=tenant_id)

    assert await memory.delete(stored.id, tenant_id=tenant_id) is True
    assert await memory.delete(stored.id, tenant_id=tenant_id) is False
    assert await memory.get(stored.id, tenant_id=tenant_id) is None


async def test_a_caller_supplied_embedding_must_carry_its_model(backend: tuple[Any, UUID]) -> None:
    memory, tenant_id = backend

    no_model = await memory.store("a cat on the mat", "a", tenant_id=tenant_id, embedding=[1.0, 0.0, 0.0])
    cat = await memory.store(
        "a cat on the mat", "a", tenant_id=tenant_id, embedding=toy_embedding("cat"), embedding_model=MODEL
    )
    await memory.store(
        "a dog", "a", tenant_id=tenant_id, embedding=toy_embedding("dog"), embedding_model=MODEL
    )
    found = await memory.search("my cat", tenant_id=tenant_id, embedding_model=MODEL, top_k=1)
    unknown = await memory.search("my cat", tenant_id=tenant_id, embedding_model="nobody-embeds-this")

    assert isinstance(no_model, Error) and "embedding_model" in no_model.description
    assert isinstance(cat, Memory) and [r.memory.id for r in found] == [cat.id] and found[0].score > 0.99
    assert isinstance(unknown, Error) and "embedders=" in unknown.description


async def test_failures_are_error_values_never_raised(backend: tuple[Any, UUID]) -> None:
    memory, tenant_id = backend

    empty = await memory.store("   ", "a", tenant_id=tenant_id)

    assert isinstance(empty, Error) and empty.description


async def test_an_unknown_tenant_is_an_error(live_url: str, tenant: IssuedKey) -> None:
    async with EngramAgentMemory({tenant.tenant_id: tenant.plaintext}, live_url) as memory:
        stranger = uuid.uuid4()

        results = [
            await memory.store("x", "a", tenant_id=stranger),
            await memory.search("x", tenant_id=stranger),
            await memory.get(uuid.uuid4(), tenant_id=stranger),
            await memory.delete(uuid.uuid4(), tenant_id=stranger),
        ]

    assert all(isinstance(r, Error) and f"unknown tenant {stranger}" in r.description for r in results)


async def test_another_tenants_id_reads_as_none(live_url: str, local_db: LocalDatabase) -> None:
    a = tenants.issue_key(local_db.admin, f"am-a-{uuid.uuid4().hex[:8]}")
    b = tenants.issue_key(local_db.admin, f"am-b-{uuid.uuid4().hex[:8]}")
    keys = {a.tenant_id: a.plaintext, b.tenant_id: b.plaintext}
    async with EngramAgentMemory(lambda tenant_id: keys.get(tenant_id), live_url) as memory:
        stored = await memory.store("A's secret plan", "agent", tenant_id=a.tenant_id)
        assert isinstance(stored, Memory)

        assert await memory.get(stored.id, tenant_id=b.tenant_id) is None
        assert await memory.delete(stored.id, tenant_id=b.tenant_id) is False
        assert await memory.search("secret plan", tenant_id=b.tenant_id) == []
        assert await memory.get(stored.id, tenant_id=a.tenant_id) == stored


async def test_an_unreachable_server_is_an_error(tenant: IssuedKey) -> None:
    async with EngramAgentMemory({tenant.tenant_id: "k"}, "http://127.0.0.1:9", max_retries=0) as memory:
        result = await memory.get(uuid.uuid4(), tenant_id=tenant.tenant_id)

    assert isinstance(result, Error) and "connect" in result.description.lower()


def test_the_factory_selects_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = {uuid.uuid4(): "k"}

    assert isinstance(create_memory_backend("memory"), InMemoryAgentMemory)
    assert isinstance(create_memory_backend("engram", keys=keys, base_url="http://x.test"), EngramAgentMemory)
    monkeypatch.setenv("MEMORY_BACKEND", "memory")
    assert isinstance(create_memory_backend(), InMemoryAgentMemory)
    monkeypatch.delenv("MEMORY_BACKEND")
    assert isinstance(create_memory_backend(keys=keys), EngramAgentMemory)
    with pytest.raises(ValueError, match="needs keys"):
        create_memory_backend("engram")
    with pytest.raises(ValueError, match="unknown memory backend 'qdrant'"):
        create_memory_backend("qdrant")


async def test_the_engram_backend_keeps_to_its_container(live_url: str, tenant: IssuedKey) -> None:
    # Given a memory of the tenant in another container than the backend's
    async with (
        EngramAgentMemory({tenant.tenant_id: tenant.plaintext}, live_url, container="hr.private") as hr,
        EngramAgentMemory(
            {tenant.tenant_id: tenant.plaintext}, live_url, container="agents.travel"
        ) as travel,
    ):
        secret = await hr.store("Mallory's salary is 90k", "hr-agent", tenant_id=tenant.tenant_id)
        assert isinstance(secret, Memory)

        # When the travel backend searches for it, reads it and deletes it
        found = await travel.search("Mallory's salary", tenant_id=tenant.tenant_id)
        read = await travel.get(secret.id, tenant_id=tenant.tenant_id)
        deleted = await travel.delete(secret.id, tenant_id=tenant.tenant_id)

        # Then it is not found, and stays
        assert found == [] and read is None and deleted is False
        assert await hr.get(secret.id, tenant_id=tenant.tenant_id) == secret


async def test_an_embedder_that_fails_is_an_error_value(live_url: str, tenant: IssuedKey) -> None:
    def broken(text: str) -> list[float]:
        raise ConnectionError("embedding service unavailable")

    engram = EngramAgentMemory({tenant.tenant_id: tenant.plaintext}, live_url, embedders={"m": broken})
    for memory in (engram, InMemoryAgentMemory(embedders={"m": broken})):
        result = await memory.search("x", tenant_id=tenant.tenant_id, embedding_model="m")

        assert isinstance(result, Error) and "embedding service unavailable" in result.description
    await engram.aclose()


def test_the_engram_backend_serves_one_event_loop_after_another_and_leaves_no_client_open(
    live_url: str, tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a backend used from several event loops, one asyncio.run after another
    made: list[AsyncEngram] = []

    class Recorded(AsyncEngram):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(agent_memory, "AsyncEngram", Recorded)
    memory = EngramAgentMemory({tenant.tenant_id: tenant.plaintext}, live_url)

    # When each loop stores a memory
    stored = [asyncio.run(memory.store(f"loop {n}", "a", tenant_id=tenant.tenant_id)) for n in range(4)]

    # Then every call succeeds, and each loop's client was closed when its loop ended
    assert all(isinstance(s, Memory) for s in stored), stored
    assert len(made) == 4 and all(client._http.is_closed for client in made)
