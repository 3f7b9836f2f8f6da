"""`AgentMemoryProtocol`: the memory an agent framework is written against (store, search, delete, get,
every call scoped to a tenant), and its backends.

Failures come back as an `Error(description=...)` value, never raised. `EngramAgentMemory` keeps the
memories in Engram; the tenant comes only from an API key, so it takes `keys`, a mapping or a callable
from tenant UUID to that tenant's key. `InMemoryAgentMemory` keeps them in this process, for tests.
`create_memory_backend` chooses one (argument, else MEMORY_BACKEND, else "engram").

Embeddings: without one, the backend embeds the text (Engram: with the model it runs). A caller's own
embedding must name its model (`embedding_model`); to search those vectors, give the backend an
embedder for that model (`embedders={"my-model": fn}`), which embeds the query the same way.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import weakref
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable
from uuid import UUID, uuid4

from pydantic import BaseModel, Field

from engram_client.client import AsyncEngram
from engram_client.errors import NotFoundError

Embedder = Callable[[str], Sequence[float]]
KeyLookup = Mapping[UUID, str] | Callable[[UUID], str | None]


class Memory(BaseModel):
    """A stored memory."""

    id: UUID
    content: str
    created_at: datetime
    agent_id: str
    conversation_id: str | None = None
    tags: list[str] = Field(default_factory=list)


class SearchResult(BaseModel):
    """A memory with its similarity to the query (cosine, 0 to 1)."""

    memory: Memory
    score: float


class Error(BaseModel):
    """A failure, as a value."""

    description: str


@runtime_checkable
class AgentMemoryProtocol(Protocol):
    """Memory storage for agents; every operation is scoped to a tenant."""

    async def store(
        self,
        content: str,
        agent_id: str,
        *,
        tenant_id: UUID,
        conversation_id: str | None = None,
        tags: list[str] | None = None,
        embedding: list[float] | None = None,
        embedding_model: str | None = None,
    ) -> Memory | Error:
        """Store a memory and return it (or an Error)."""
        ...

    async def search(
        self,
        query: str,
        *,
        tenant_id: UUID,
        top_k: int = 10,
        score_threshold: float | None = None,
        tags: list[str] | None = None,
        agent_id: str | None = None,
        embedding_model: str | None = None,
    ) -> list[SearchResult] | Error:
        """The memories most similar to `query`, best first (or an Error)."""
        ...

    async def delete(self, memory_id: UUID, *, tenant_id: UUID) -> bool | Error:
        """True if deleted, False if not found, or an Error."""
        ...

    async def get(self, memory_id: UUID, *, tenant_id: UUID) -> Memory | None | Error:  # noqa: RUF036 - the specification's signature
        """The memory, None if not found, or an Error."""
        ...


def _embedding_error(embedding: Sequence[float] | None, embedding_model: str | None) -> Error | None:
    if embedding is not None and not embedding_model:
        return Error(description="a caller-supplied embedding must carry its model: pass embedding_model too")
    if embedding is None and embedding_model:
        return Error(
            description=f"embedding_model {embedding_model!r} names the model of an embedding, and none was "
            "given: pass the embedding too, or neither to let the backend embed the text"
        )
    return None


def _embed(embedder: Embedder, model: str, query: str) -> list[float] | Error:
    """The query embedded by the caller's embedder; its failure is an Error value, never raised."""
    try:
        return [float(x) for x in embedder(query)]
    except Exception as exc:
        return Error(description=f"the embedder for model {model!r} failed on the query: {exc!r}")


def _no_embedder(model: str) -> Error:
    return Error(
        description=f"searching vectors of model {model!r} needs the query embedded by that model: create "
        f"the backend with embedders={{{model!r}: <function text -> vector>}}"
    )


class EngramAgentMemory:
    """AgentMemoryProtocol over the Engram API. Memories go to `container`, and only memories there are
    its own: search looks there, and a memory elsewhere in the tenant reads as not found (get None,
    delete False). Search compares vectors (mode "vector"), so `score` is the cosine similarity and
    `score_threshold` applies to it."""

    def __init__(
        self,
        keys: KeyLookup,
        base_url: str | None = None,
        *,
        container: str = "default",
        embedders: Mapping[str, Embedder] | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        transport: Any = None,
    ) -> None:
        self._keys = keys
        self._base_url = base_url
        self._container = container
        self._embedders = dict(embedders or {})
        self._options = {"timeout": timeout, "max_retries": max_retries, "transport": transport}
        # A client's connections belong to the event loop that opened them: one set of clients per loop
        # (asyncio.run called again is another loop), each closed when its loop shuts down.
        self._loops: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[dict[str, AsyncEngram], AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()

    async def _client(self, tenant_id: UUID) -> AsyncEngram | Error:
        try:
            key = self._keys(tenant_id) if callable(self._keys) else self._keys.get(tenant_id)
        except Exception as exc:  # the caller's lookup failed: still a value, never raised
            return Error(description=f"no API key for tenant {tenant_id}: {exc}")
        if not key:
            return Error(description=f"unknown tenant {tenant_id}: no API key for it")
        loop = asyncio.get_running_loop()
        if loop not in self._loops:
            clients: dict[str, AsyncEngram] = {}
            closer = _closing(clients)
            # Started, the generator is the loop's: its shutdown (asyncio.run's end) closes it, and the
            # clients with it, on that loop, so no connection outlives it.
            await anext(closer)
            self._loops[loop] = (clients, closer)
        clients = self._loops[loop][0]
        if key not in clients:
            clients[key] = AsyncEngram(self._base_url, key, **self._options)
        return clients[key]

    async def aclose(self) -> None:
        """Close the clients of the running loop (those of loops that ended closed with them)."""
        found = self._loops.pop(asyncio.get_running_loop(), None)
        if found is not None:
            await found[1].aclose()

    async def __aenter__(self) -> EngramAgentMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def store(
        self,
        content: str,
        agent_id: str,
        *,
        tenant_id: UUID,
        conversation_id: str | None = None,
        tags: list[str] | None = None,
        embedding: list[float] | None = None,
        embedding_model: str | None = None,
    ) -> Memory | Error:
        problem = _embedding_error(embedding, embedding_model)
        client = problem or await self._client(tenant_id)
        if isinstance(client, Error):
            return client
        try:
            stored = await client.create_memory(
                content=content,
                container=self._container,
                agent_id=agent_id,
                conversation_id=conversation_id,
                tags=list(tags or []),
                embedding=list(embedding) if embedding is not None else None,
                embedding_model=embedding_model,
            )
        except Exception as exc:
            return Error(description=f"failed to store the memory: {exc}")
        return _memory(stored)

    async def search(
        self,
        query: str,
        *,
        tenant_id: UUID,
        top_k: int = 10,
        score_threshold: float | None = None,
        tags: list[str] | None = None,
        agent_id: str | None = None,
        embedding_model: str | None = None,
    ) -> list[SearchResult] | Error:
        client = await self._client(tenant_id)
        if isinstance(client, Error):
            return client
        vector: dict[str, Any] = {}
        if embedding_model:
            embedder = self._embedders.get(embedding_model)
            if embedder is None:
                return _no_embedder(embedding_model)
            embedded = _embed(embedder, embedding_model, query)
            if isinstance(embedded, Error):
                return embedded
            vector = {"embedding": embedded, "embedding_model": embedding_model}
        filters: dict[str, Any] = {"tags": list(tags or [])}
        if agent_id is not None:
            filters["agent_id"] = agent_id
        try:
            found = await client.search(
                query=query,
                scope="memories",
                container=self._container,
                mode="vector",
                limit=top_k,
                score_threshold=score_threshold,
                filters=filters,
                **vector,
            )
        except Exception as exc:
            return Error(description=f"failed to search memories: {exc}")
        return [SearchResult(memory=_memory(result), score=result.score) for result in found.results]

    async def delete(self, memory_id: UUID, *, tenant_id: UUID) -> bool | Error:
        client = await self._client(tenant_id)
        if isinstance(client, Error):
            return client
        try:
            if (await client.get_memory(memory_id)).container != self._container:
                return False  # another container's: not this backend's, as if unknown
            await client.delete_memory(memory_id)
        except NotFoundError:
            return False
        except Exception as exc:
            return Error(description=f"failed to delete memory {memory_id}: {exc}")
        return True

    async def get(self, memory_id: UUID, *, tenant_id: UUID) -> Memory | None | Error:  # noqa: RUF036 - the specification's signature
        client = await self._client(tenant_id)
        if isinstance(client, Error):
            return client
        try:
            found = await client.get_memory(memory_id)
        except NotFoundError:
            return None  # unknown, or another tenant's: the same answer
        except Exception as exc:
            return Error(description=f"failed to read memory {memory_id}: {exc}")
        return _memory(found) if found.container == self._container else None  # another container's


async def _closing(clients: dict[str, AsyncEngram]) -> AsyncGenerator[None, None]:
    """Closes `clients` when closed: by the event loop's shutdown (`shutdown_asyncgens`), or `aclose`."""
    try:
        yield
    finally:
        for client in list(clients.values()):
            await client.aclose()
        clients.clear()


def _memory(found: Any) -> Memory:
    return Memory(
        id=found.id,
        content=found.content,
        created_at=found.created_at,
        agent_id=found.agent_id or "",
        conversation_id=found.conversation_id,
        tags=list(found.tags),
    )


_WORD = re.compile(r"\w+")


def _lexical(text: str) -> Counter[str]:
    return Counter(word.lower() for word in _WORD.findall(text))


def _cosine(a: Mapping[Any, float] | Sequence[float], b: Mapping[Any, float] | Sequence[float]) -> float:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        dot = sum(value * b.get(key, 0.0) for key, value in a.items())
        norms = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    else:
        va, vb = list(a), list(b)
        if len(va) != len(vb):
            return 0.0
        dot = sum(x * y for x, y in zip(va, vb, strict=True))
        norms = math.sqrt(sum(x * x for x in va)) * math.sqrt(sum(y * y for y in vb))
    return max(0.0, dot / norms) if norms else 0.0


class InMemoryAgentMemory:
    """AgentMemoryProtocol in this process, for tests: any tenant, nothing persisted. Text is compared
    by its words (cosine over word counts), vectors of one model by cosine."""

    def __init__(self, *, embedders: Mapping[str, Embedder] | None = None) -> None:
        self._embedders = dict(embedders or {})
        self._memories: dict[UUID, dict[UUID, tuple[Memory, list[float] | None, str | None]]] = {}

    async def store(
        self,
        content: str,
        agent_id: str,
        *,
        tenant_id: UUID,
        conversation_id: str | None = None,
        tags: list[str] | None = None,
        embedding: list[float] | None = None,
        embedding_model: str | None = None,
    ) -> Memory | Error:
        problem = _embedding_error(embedding, embedding_model)
        if problem is not None:
            return problem
        if not content.strip():
            return Error(description="failed to store the memory: content must not be empty")
        memory = Memory(
            id=uuid4(),
            content=content,
            created_at=datetime.now(UTC),
            agent_id=agent_id,
            conversation_id=conversation_id,
            tags=list(tags or []),
        )
        vector = list(embedding) if embedding is not None else None
        self._memories.setdefault(tenant_id, {})[memory.id] = (memory, vector, embedding_model)
        return memory.model_copy(deep=True)

    async def search(
        self,
        query: str,
        *,
        tenant_id: UUID,
        top_k: int = 10,
        score_threshold: float | None = None,
        tags: list[str] | None = None,
        agent_id: str | None = None,
        embedding_model: str | None = None,
    ) -> list[SearchResult] | Error:
        query_vector: list[float] | None = None
        if embedding_model:
            embedder = self._embedders.get(embedding_model)
            if embedder is None:
                return _no_embedder(embedding_model)
            embedded = _embed(embedder, embedding_model, query)
            if isinstance(embedded, Error):
                return embedded
            query_vector = embedded
        words = _lexical(query)
        scored = []
        for memory, vector, model in self._memories.get(tenant_id, {}).values():
            if tags and not set(tags) <= set(memory.tags):
                continue
            if agent_id is not None and memory.agent_id != agent_id:
                continue
            if query_vector is not None:
                if model != embedding_model or vector is None:
                    continue
                score = _cosine(query_vector, vector)
            else:
                score = _cosine(words, _lexical(memory.content))
            if score_threshold is None or score >= score_threshold:
                scored.append(SearchResult(memory=memory.model_copy(deep=True), score=round(score, 6)))
        scored.sort(key=lambda r: (-r.score, str(r.memory.id)))
        return scored[:top_k]

    async def delete(self, memory_id: UUID, *, tenant_id: UUID) -> bool | Error:
        return self._memories.get(tenant_id, {}).pop(memory_id, None) is not None

    async def get(self, memory_id: UUID, *, tenant_id: UUID) -> Memory | None | Error:  # noqa: RUF036 - the specification's signature
        found = self._memories.get(tenant_id, {}).get(memory_id)
        return found[0].model_copy(deep=True) if found else None


class MemoryBackendType(StrEnum):
    ENGRAM = "engram"
    IN_MEMORY = "memory"


def create_memory_backend(
    backend_type: MemoryBackendType | str | None = None,
    *,
    keys: KeyLookup | None = None,
    base_url: str | None = None,
    container: str = "default",
    embedders: Mapping[str, Embedder] | None = None,
) -> EngramAgentMemory | InMemoryAgentMemory:
    """The backend named by `backend_type`, else by the MEMORY_BACKEND environment variable, else
    Engram. The Engram backend needs `keys` (tenant UUID -> API key) and takes `base_url` (default:
    ENGRAM_URL)."""
    chosen = backend_type or os.environ.get("MEMORY_BACKEND") or MemoryBackendType.ENGRAM
    try:
        kind = MemoryBackendType(chosen)
    except ValueError:
        names = ", ".join(repr(t.value) for t in MemoryBackendType)
        raise ValueError(f"unknown memory backend {chosen!r}: choose one of {names}") from None
    if kind is MemoryBackendType.IN_MEMORY:
        return InMemoryAgentMemory(embedders=embedders)
    if keys is None:
        raise ValueError("the engram backend needs keys: a mapping or a callable from tenant UUID to API key")
    return EngramAgentMemory(keys, base_url, container=container, embedders=embedders)
