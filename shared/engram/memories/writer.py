"""The only code that stores memories and links them: what the document pipeline and session
extraction found, direct writes (POST /v1/memories, /upsert) and the new memories of entity
observations.

Every method works in the caller's unit of work: a memory, its entity links and its graph links
commit together or not at all, with whatever else the caller writes (a document's sources, a
session's messages marked done). Nothing here opens a transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from engram.db.database import UnitOfWork
from engram.errors import Conflict, InvalidInput
from engram.extraction.schema import ExtractedEntity, ExtractedRelation
from engram.graph.autolink import link_to_nearest
from engram.graph.linking import link_memory
from engram.memories import repo
from engram.memories.models import MemoryCreate, MemoryType, UpsertResult, Visibility
from engram.pipeline.linking import RuleLinker
from engram.providers.embeddings import Embedder, check_dimensions


@dataclass(frozen=True)
class Owner:
    """Whom a memory belongs to: `private` memories are seen only by requests made for `user_id`."""

    user_id: str | None = None
    visibility: Visibility = "tenant"


@dataclass(frozen=True)
class Embedding:
    vector: Sequence[float]
    model: str


@dataclass(frozen=True)
class Mentions:
    """What extraction found in a memory's text: the entities it names, the relations it states
    between them, and the entity it is about. Names are only data: they never choose a row."""

    entities: Sequence[ExtractedEntity] = ()
    relations: Sequence[ExtractedRelation] = ()
    subject: str | None = None

    def __bool__(self) -> bool:
        return bool(self.entities or self.relations or self.subject)


@dataclass(frozen=True)
class NewMemory:
    content: str
    container: str
    memory_type: MemoryType = "fact"
    owner: Owner = Owner()
    agent_id: str | None = None
    conversation_id: str | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    confidence: float = 1.0
    valid_from: datetime | None = None  # None: from now
    expires_at: datetime | None = None
    embedding: Embedding | None = None  # None: the writer embeds the content
    mentions: Mentions = Mentions()

    @classmethod
    def written(cls, request: MemoryCreate) -> NewMemory:
        """A memory as POST /v1/memories (or /upsert) sends it."""
        given, model = request.embedding, request.embedding_model
        return cls(
            content=request.content,
            container=request.container,
            memory_type=request.memory_type,
            owner=Owner(request.user_id, request.visibility),
            agent_id=request.agent_id,
            conversation_id=request.conversation_id,
            tags=request.tags,
            metadata=request.metadata,
            confidence=request.confidence,
            valid_from=request.valid_from,
            expires_at=request.expires_at,
            embedding=None if given is None or model is None else Embedding(given, model),
        )


@dataclass(frozen=True)
class Peers:
    """The existing memories of the container a new one is compared with, for the same text (stored
    once) and by graph-link. `same_owner`: only those of the same user and visibility (a user's
    conversation never merges with, or retires, someone else's memory); otherwise every memory the
    unit of work's party sees (a document's facts are shared). Graph-link leaves out the memories
    `document_id` made, and records `provenance` on each link it makes."""

    same_owner: bool
    document_id: UUID | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredMemory:
    id: UUID
    row: dict[str, Any] | None  # the new memory's row; None when the same text was already stored

    @property
    def created(self) -> bool:
        return self.row is not None


class MemoryWriter:
    def __init__(self, embedder: Embedder, linker: RuleLinker) -> None:
        self.embedder = embedder
        self.linker = linker

    def create(self, uow: UnitOfWork, memory: NewMemory, *, supersedes: UUID | None = None) -> dict[str, Any]:
        """A direct write. With `supersedes`, the new memory retires that one (kept as history), in
        the same unit of work: both happen, or neither."""
        old = self._supersedable(uow, supersedes) if supersedes is not None else None
        row = self._insert(uow, memory)
        if old is not None:
            repo.retire(uow.cur, uow.tenant_id, old["id"], row["id"], row["valid_from"])
        return row

    def upsert(self, uow: UnitOfWork, memory: NewMemory, threshold: float) -> UpsertResult:
        """Store a fact unless the container already holds it. The nearest current memory with the
        same model, owner and visibility decides: at least `threshold` similar and the same text is
        `unchanged`; similar but different text becomes a new version that supersedes it
        (`updated`); otherwise the memory is `created`. Writers to one container are serialised, so
        concurrent identical upserts leave exactly one memory."""
        embedding = self._embedding(uow, memory)
        memory = replace(memory, embedding=embedding)
        repo.lock_container_writes(uow.cur, uow.tenant_id, memory.container)
        match = repo.nearest_same_owner(
            uow.cur,
            uow.tenant_id,
            memory.container,
            embedding.model,
            embedding.vector,
            memory.owner.user_id,
            memory.owner.visibility,
        )
        similarity = round(float(match["similarity"]), 6) if match else None
        if match is None or similarity is None or similarity < threshold:
            return UpsertResult(status="created", id=self._insert(uow, memory)["id"])
        if match["content"] == memory.content:
            return UpsertResult(
                status="unchanged", id=match["id"], matched_id=match["id"], similarity=similarity
            )
        row = self._insert(uow, memory)
        repo.supersede(uow.cur, uow.tenant_id, match["id"], row["id"], similarity)
        return UpsertResult(status="updated", id=row["id"], matched_id=match["id"], similarity=similarity)

    def store(self, uow: UnitOfWork, memories: Sequence[NewMemory], peers: Peers) -> list[StoredMemory]:
        """Each memory, unless a peer already says exactly the same (then that one stands for it),
        with its entities and relations. In input order. Writers to one container are serialised
        until the unit of work ends, so the same text stored twice at once is one memory."""
        for container in sorted({m.container for m in memories}):
            repo.lock_container_writes(uow.cur, uow.tenant_id, container)
        stored: list[StoredMemory] = []
        for memory in memories:
            owner = (memory.owner.user_id, memory.owner.visibility) if peers.same_owner else None
            existing = repo.current_with_content(
                uow.cur, uow.tenant_id, memory.container, memory.content, owner
            )
            if existing is not None:
                stored.append(StoredMemory(existing, None))
                continue
            row = self._insert(uow, memory)
            stored.append(StoredMemory(row["id"], row))
        return stored

    def graph_link(self, uow: UnitOfWork, memories: Sequence[Mapping[str, Any]], peers: Peers) -> int:
        """How each new memory (a row: id, content, memory_type, valid_from) relates to its nearest
        older peers: `updates` retires the older one, `extends` or `derives` link them (the rules:
        engram.pipeline.linking). Returns the number of links made."""
        links = 0
        for memory in memories:
            links += link_to_nearest(
                uow.cur,
                uow.tenant_id,
                self.linker,
                memory,
                metadata=peers.provenance,
                document_id=peers.document_id,
                same_owner=peers.same_owner,
            )
        return links

    def _supersedable(self, uow: UnitOfWork, memory_id: UUID) -> dict[str, Any]:
        old = repo.lock_memory(uow.cur, uow.tenant_id, memory_id)
        if old is None:
            raise InvalidInput(f"supersedes: memory {memory_id} not found", details={"field": "supersedes"})
        if not old["is_latest"]:
            raise Conflict(f"memory {memory_id} is already superseded; supersede its current version instead")
        return old

    def _embedding(self, uow: UnitOfWork, memory: NewMemory) -> Embedding:
        """The memory's vector: the caller's (checked against the size of the model's stored vectors),
        or the embedder's for its text."""
        given = memory.embedding
        if given is None:
            return Embedding(self.embedder.embed_documents([memory.content])[0], self.embedder.model_id)
        if given.model == self.embedder.model_id:
            check_dimensions(given.vector, self.embedder.dimensions)
        else:
            # A model of the caller's own: every vector stored under one name must agree in size.
            dims = repo.stored_dimensions(uow.cur, uow.tenant_id, given.model)
            if dims is not None:
                check_dimensions(given.vector, dims)
        return given

    def _insert(self, uow: UnitOfWork, memory: NewMemory) -> dict[str, Any]:
        embedding = self._embedding(uow, memory)
        row = repo.insert_memory(
            uow.cur,
            uow.tenant_id,
            container=memory.container,
            content=memory.content,
            memory_type=memory.memory_type,
            tags=memory.tags,
            metadata=memory.metadata,
            agent_id=memory.agent_id,
            conversation_id=memory.conversation_id,
            user_id=memory.owner.user_id,
            visibility=memory.owner.visibility,
            confidence=memory.confidence,
            valid_from=memory.valid_from,
            expires_at=memory.expires_at,
            embedding=embedding.vector,
            embedding_model=embedding.model,
        )
        if memory.mentions:
            m = memory.mentions
            link_memory(uow.cur, uow.tenant_id, row["id"], m.entities, m.relations, m.subject)
        return row
