"""What the memory writer (engram.memories.writer) takes and gives back: typed values, never a dict of
columns. The repository stores a NewMemory as it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from engram.memories.models import MemoryCreate, MemoryType, Visibility

if TYPE_CHECKING:  # only annotations: the repositories that store a NewMemory load no extraction code
    from engram.memory_extraction.schema import ExtractedEntity, ExtractedRelation


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
