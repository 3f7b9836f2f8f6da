"""Request and response models of the procedures API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, field_validator, model_validator

from engram.fields import Integer, Number, not_null
from engram.lazymodel import LazyModel
from engram.memories.models import Content, Identifier, Metadata, QueryText, Tag, Visibility

ProcedureKind = Literal["rule", "example"]


class _Strict(LazyModel):
    model_config = ConfigDict(extra="forbid")


def _private_needs_agent(visibility: str | None, agent_id: str | None) -> None:
    if visibility == "private" and agent_id is None:
        raise ValueError("visibility 'private' needs an agent_id: private procedures belong to an agent")


class ProcedureCreate(_Strict):
    kind: ProcedureKind = Field(
        default="rule", description="'rule': an instruction; 'example': a few-shot example"
    )
    trigger: Content = Field(description="the situation in which this procedure applies")
    content: Content = Field(description="the rule, or the example (input and output)")
    agent_id: Identifier | None = None
    visibility: Visibility = Field(
        default="tenant", description="'private': only requests for agent_id see it"
    )
    user_id: Identifier | None = Field(
        default=None,
        description="the user it was learned from or is for: erased with them (DELETE /v1/users/{user_id}); "
        "it does not limit who reads it",
    )
    tags: list[Tag] = Field(default_factory=list, max_length=50)
    metadata: Metadata = Field(default_factory=dict)

    @model_validator(mode="after")
    def _owner(self) -> ProcedureCreate:
        _private_needs_agent(self.visibility, self.agent_id)
        return self


class ProcedurePatch(_Strict):
    kind: ProcedureKind | None = None
    trigger: Content | None = None
    content: Content | None = None
    visibility: Visibility | None = None
    tags: list[Tag] | None = Field(default=None, max_length=50)
    metadata: Metadata | None = None

    _not_null = field_validator("*")(not_null)

    @model_validator(mode="after")
    def _something_to_change(self) -> ProcedurePatch:
        if not self.model_fields_set:
            raise ValueError(
                "nothing to change: send at least one of kind, trigger, content, visibility, tags, metadata"
            )
        return self


class Procedure(LazyModel):
    id: UUID
    kind: ProcedureKind
    trigger: str
    content: str
    agent_id: str | None
    visibility: Visibility
    user_id: str | None
    tags: list[str]
    metadata: dict[str, Any]
    embedding_model: str | None
    created_at: datetime
    updated_at: datetime


class ProcedurePage(LazyModel):
    procedures: list[Procedure]
    next_cursor: str | None


class MatchRequest(_Strict):
    situation: QueryText
    limit: Integer = Field(default=5, ge=1, le=50)
    agent_id: Identifier | None = Field(
        default=None, description="also match this agent's private procedures"
    )
    kind: ProcedureKind | None = None
    min_similarity: Number = Field(
        default=0.3, ge=0.0, le=1.0, description="cosine similarity between situation and trigger"
    )


class ProcedureMatch(Procedure):
    similarity: float


class MatchResponse(LazyModel):
    situation: str
    matches: list[ProcedureMatch]
