"""The one extraction schema: what an extractor (an LLM, or the offline heuristic) makes of a text.

An LLM answers with `ExtractionPayload` as JSON; it is validated here, strictly: unknown fields (a
`tenant_id`, a `container`, an `id`) are errors, not ignored. The result is pure data. Where memories
are written (tenant, container) and every id come from the caller, never from this schema.

    {"memories": [{
        "content": "Alice moved to Berlin.",          # self-contained, <= 2000 characters
        "memory_type": "fact",                         # fact|preference|episode|insight|task|procedure
        "confidence": 0.9,                             # 0..1
        "entities": [{"name": "Alice", "type": "person", "aliases": []},
                     {"name": "Berlin", "type": "place"}],
        "subject": "Alice",                            # one of the entities, or null
        "relations": [{"source": "Alice", "relation": "lives_in", "target": "Berlin",
                       "valid_from": null, "valid_to": null, "confidence": 0.9}],
        "valid_from": "2025-03-03",                    # when it became true; null: the reference time
        "expires_at": null,                            # temporary facts only
        "source_chunk": 0                              # the <chunk n=...> it came from, or null
    }]}
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from engram.fields import no_nul, timestamp_in_range
from engram.graph.names import display_name, normalize_name, normalize_type
from engram.memories.models import MemoryType
from engram.providers.llm import TokenUsage

MAX_MEMORY_CHARS = 2000
MAX_MEMORIES = 100
MAX_ENTITIES_PER_MEMORY = 20
MAX_RELATIONS_PER_MEMORY = 20
MAX_ALIASES = 10


def _name(value: str) -> str:
    shown = display_name(value)
    if not normalize_name(shown):
        raise ValueError("must contain a letter or a digit")
    return shown


def _type(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    slug = normalize_type(value)
    if not slug or not slug[0].isalpha():
        raise ValueError("must be one or more English words, e.g. person, place, lives_in")
    return slug


def _time(value: Any) -> Any:
    """ISO 8601 dates and times; a date is its midnight UTC, a time without offset is UTC."""
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            try:
                parsed = datetime.combine(date.fromisoformat(text), time())
            except ValueError:
                raise ValueError("must be an ISO 8601 date or date-time, e.g. 2025-03-03") from None
        value = parsed
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime.combine(value, time())
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def _content(value: str) -> str:
    no_nul(value)  # what PostgreSQL cannot store is refused (and the answer repaired), never stored
    text = " ".join(value.split())
    if not text:
        raise ValueError("must not be empty")
    if len(text) > MAX_MEMORY_CHARS:
        raise ValueError(f"is {len(text)} characters; a memory holds at most {MAX_MEMORY_CHARS}")
    return text


Name = Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_name)]
EntityType = Annotated[str, BeforeValidator(_type), Field(min_length=1, max_length=40)]
RelationType = Annotated[str, BeforeValidator(_type), Field(min_length=1, max_length=40)]
Timestamp = Annotated[datetime, BeforeValidator(_time), AfterValidator(timestamp_in_range)]
Content = Annotated[str, Field(min_length=1, max_length=20_000), AfterValidator(_content)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExtractedEntity(_Strict):
    name: Name
    type: EntityType = "unknown"
    aliases: list[Name] = Field(default_factory=list, max_length=MAX_ALIASES)

    @property
    def key(self) -> str:
        return normalize_name(self.name)


class ExtractedRelation(_Strict):
    source: Name
    relation: RelationType
    target: Name
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sane(self) -> ExtractedRelation:
        if normalize_name(self.source) == normalize_name(self.target):
            raise ValueError("a relation links two different entities")
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be after valid_from")
        return self


class ExtractedMemory(_Strict):
    content: Content
    memory_type: MemoryType
    confidence: float = Field(ge=0.0, le=1.0)
    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=MAX_ENTITIES_PER_MEMORY)
    subject: Name | None = None
    relations: list[ExtractedRelation] = Field(default_factory=list, max_length=MAX_RELATIONS_PER_MEMORY)
    valid_from: Timestamp | None = None
    expires_at: Timestamp | None = None
    source_chunk: int | None = Field(default=None, ge=0)

    @field_validator("source_chunk")
    @classmethod
    def _known_chunk(cls, value: int | None, info: ValidationInfo) -> int | None:
        chunks = (info.context or {}).get("chunks")
        if value is not None and chunks is not None and value not in chunks:
            allowed = ", ".join(map(str, sorted(chunks))) or "none: use null"
            raise ValueError(f"{value} is not a chunk of this text (chunks: {allowed})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ExtractedMemory:
        keys = {entity.key for entity in self.entities}
        if self.subject is not None and normalize_name(self.subject) not in keys:
            raise ValueError(f"subject {self.subject!r} must be one of this memory's entities")
        for i, relation in enumerate(self.relations):
            for end in (relation.source, relation.target):
                if normalize_name(end) not in keys:
                    raise ValueError(f"relations[{i}]: {end!r} must be one of this memory's entities")
        if self.valid_from and self.expires_at and self.expires_at <= self.valid_from:
            raise ValueError("expires_at must be after valid_from")
        return self


class ExtractionPayload(_Strict):
    """Exactly what an LLM must answer."""

    memories: list[ExtractedMemory] = Field(max_length=MAX_MEMORIES)

    @model_validator(mode="after")
    def _not_too_many(self, info: ValidationInfo) -> ExtractionPayload:
        limit = (info.context or {}).get("max_memories")
        if limit is not None and len(self.memories) > limit:
            raise ValueError(f"{len(self.memories)} memories; answer with at most {limit}, the most useful")
        return self


class ExtractionResult(_Strict):
    """What `Extractor.extract` returns: the memories (source_chunk and valid_from resolved against
    the context), which extractor made them, and the tokens it spent."""

    memories: list[ExtractedMemory]
    extractor: str = Field(description='"heuristic", or "llm:<provider>:<model>"')
    usage: TokenUsage = Field(default_factory=TokenUsage)
    attempts: int = Field(default=0, ge=0, description="LLM calls made (2 when the answer was repaired)")
