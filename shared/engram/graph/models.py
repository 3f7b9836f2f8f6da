"""Request and response models of the entities, relations and graph API."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated
from uuid import UUID

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from engram.fields import Flag, NoNul, Number, Timestamp
from engram.graph.names import MAX_NAME_CHARS, display_name, normalize_name, normalize_type
from engram.lazymodel import LazyModel
from engram.memories.models import ContainerName, Content, MemoryType
from engram.pagination import MAX_CURSOR_CHARS

MAX_ALIASES = 20
MAX_DEPTH = 4  # hops a subgraph reaches from its entity


class _Strict(LazyModel):
    model_config = ConfigDict(extra="forbid")


def _as_stored(value: str) -> str:
    """A name is stored as sent or refused: never with its spaces, control characters or Unicode
    forms silently rewritten."""
    shown = display_name(value)
    if shown != value:
        raise ValueError(
            f"would be stored as {shown!r}: send it that way (names are NFKC-normalised, with single "
            "spaces, no control characters and nothing at either end)"
        )
    if not normalize_name(value):
        raise ValueError("must contain a letter or a digit")
    return value


def _canonical_type(value: str) -> str:
    canonical = normalize_type(value)
    if not canonical or not canonical[0].isalpha():
        raise ValueError("must be one or more English words, e.g. person, place, lives_in")
    if canonical != value:
        raise ValueError(f"would be stored as {canonical!r}: send it that way (lowercase words joined by _)")
    return value


Name = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS), *NoNul, AfterValidator(_as_stored)
]
TypeName = Annotated[
    str, StringConstraints(min_length=1, max_length=40), *NoNul, AfterValidator(_canonical_type)
]
EntityType = TypeName
RelationType = TypeName


# --- requests ---------------------------------------------------------------------------------


class EntityCreate(_Strict):
    name: Name
    entity_type: EntityType = Field(default="unknown", description="a lowercase word: person, place, ...")
    aliases: list[Name] = Field(
        default_factory=list,
        max_length=MAX_ALIASES,
        description="other names; each a key of its own (not the name's, nor another alias's)",
    )

    @field_validator("aliases")
    @classmethod
    def _each_alias_once(cls, aliases: list[str], info: ValidationInfo) -> list[str]:
        """An entity is found by each of its keys once: an alias that is the key of the name or of an
        earlier alias would be kept once, so it is refused, naming it (aliases[i]), as a name that
        would be stored otherwise is (_as_stored)."""
        name = info.data.get("name")
        seen = {normalize_name(name): "the name " + repr(name)} if name else {}
        for index, alias in enumerate(aliases):
            key = normalize_name(alias)
            if key in seen:
                raise ValidationError.from_exception_data(
                    cls.__name__,
                    [
                        InitErrorDetails(
                            type=PydanticCustomError(
                                "value_error", f"repeats {seen[key]} (both are the key {key!r}): send it once"
                            ),
                            loc=(index,),
                            input=alias,
                        )
                    ],
                )
            seen[key] = f"aliases[{index}] {alias!r}"
        return aliases


class EntityRef(_Strict):
    """An entity by name, created if it does not exist yet (deduplicated like any other)."""

    name: Name
    entity_type: EntityType = "unknown"


class RelationCreate(_Strict):
    source: UUID | EntityRef = Field(description="an entity id, or {name, entity_type}")
    relation_type: RelationType = Field(description="lowercase_with_underscores: lives_in, works_for, ...")
    target: UUID | EntityRef
    valid_from: Timestamp | None = Field(default=None, description="default: now")
    valid_to: Timestamp | None = Field(
        default=None, description="after valid_from; without valid_from, in the future (valid_from is now)"
    )
    confidence: Number = Field(default=1.0, ge=0.0, le=1.0)
    source_memory_id: UUID | None = Field(default=None, description="the memory that states it, if any")

    @model_validator(mode="after")
    def _sane(self) -> RelationCreate:
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be after valid_from")
        if self.valid_from is None and self.valid_to is not None and self.valid_to <= datetime.now(UTC):
            raise ValueError(
                "valid_to is in the past and valid_from defaults to now: send valid_from too (when it began)"
            )
        return self


class ObservationCreate(_Strict):
    """Link an existing memory to the entity (`memory_id`), or store a new memory (`content`, with
    `container` and `memory_type`) and link it."""

    memory_id: UUID | None = None
    content: Content | None = None
    container: ContainerName = "default"
    memory_type: MemoryType = "fact"
    is_subject: Flag = Field(default=True, description="the memory is about this entity")

    @model_validator(mode="after")
    def _one_of(self) -> ObservationCreate:
        if (self.memory_id is None) == (self.content is None):
            raise ValueError("send either memory_id (an existing memory) or content (a new one)")
        return self


# --- responses --------------------------------------------------------------------------------


class Entity(LazyModel):
    id: UUID
    name: str
    entity_type: str
    aliases: list[str]
    created_at: datetime
    updated_at: datetime


class EntitySummary(LazyModel):
    id: UUID
    name: str
    entity_type: str


class EntityPage(LazyModel):
    entities: list[Entity]
    next_cursor: str | None


class Observation(LazyModel):
    memory_id: UUID
    content: str
    container: str
    memory_type: str
    is_subject: bool
    is_latest: bool
    valid_from: datetime
    valid_to: datetime | None
    created_at: datetime


class Relation(LazyModel):
    id: UUID
    source: EntitySummary
    relation_type: str
    target: EntitySummary
    valid_from: datetime
    valid_to: datetime | None = Field(description="when it stopped holding, or when its source memory did")
    current: bool
    confidence: float
    source_memory_id: UUID | None
    created_at: datetime


class EntityDetail(LazyModel):
    entity: Entity
    observations: list[Observation]
    observations_next_cursor: str | None
    relations: list[Relation]
    relations_next_cursor: str | None


class GraphNode(LazyModel):
    id: UUID
    name: str
    entity_type: str
    aliases: list[str]
    depth: int = Field(description="hops from the starting entity")


class Subgraph(LazyModel):
    root: UUID
    depth: int
    nodes: list[GraphNode] = Field(description="this page's entities, nearest first")
    edges: list[Relation] = Field(description="relations between this page's entities and earlier ones")
    next_cursor: str | None
    truncated: bool = Field(description="the walk hit its row limit: entities further out were not reached")
    edges_truncated: bool = Field(description="this page has more relations than one answer holds")


# --- the pipeline's graph-link result ---------------------------------------------------------


@dataclass(frozen=True)
class LinkResult:
    entity_ids: list[UUID] = field(default_factory=list)
    relation_ids: list[UUID] = field(default_factory=list)
    subject_entity_id: UUID | None = None
    created_entities: int = 0


Cursor = Annotated[str, Field(max_length=MAX_CURSOR_CHARS)]


@dataclass(frozen=True)
class MemoryFacts:
    """What the graph knows about one memory: for graph-link's `updates`/`extends` decisions."""

    entities: frozenset[UUID]
    subjects: frozenset[UUID]
    relations: frozenset[tuple[UUID, str, UUID]]  # (source entity, relation type, target entity)
