"""Request and response models of the sessions API and of message search."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engram.memories.models import ContainerName, Content, Identifier, Metadata, Scores

Role = Literal["user", "assistant", "system", "tool"]
Extraction = Literal["none", "queued", "done"]
MAX_MESSAGES_PER_APPEND = 100


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionCreate(_Strict):
    user_id: Identifier | None = Field(default=None, description="the user in this conversation")
    agent_id: Identifier | None = Field(default=None, description="the agent in this conversation")
    container: ContainerName = Field(default="default", description="where extracted memories are stored")
    metadata: Metadata = Field(default_factory=dict)

    @model_validator(mode="after")
    def _has_a_party(self) -> SessionCreate:
        if self.user_id is None and self.agent_id is None:
            raise ValueError("a session needs a user_id, an agent_id or both: it is private to them")
        return self


class Session(BaseModel):
    id: UUID
    user_id: str | None
    agent_id: str | None
    container: str
    metadata: dict[str, Any]
    message_count: int
    last_message_at: datetime | None
    created_at: datetime
    updated_at: datetime


class MessageIn(_Strict):
    role: Role
    content: Content
    metadata: Metadata = Field(default_factory=dict)


class MessagesAppend(_Strict):
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_MESSAGES_PER_APPEND)
    extract: bool = Field(
        default=False,
        description="queue the messages for memory extraction (offline heuristic: facts and preferences "
        "the user states about themselves become memories)",
    )


class Message(BaseModel):
    id: UUID
    session_id: UUID
    seq: int = Field(description="1, 2, 3, ... in conversation order")
    role: Role
    content: str
    metadata: dict[str, Any]
    extraction: Extraction
    created_at: datetime


class AppendResult(BaseModel):
    session_id: UUID
    messages: list[Message]
    extracted_memory_ids: list[UUID] = Field(description="memories created or updated by extraction")


class Conversation(BaseModel):
    session: Session
    messages: list[Message]
    next_after: int | None = Field(description="pass as ?after= for the rest; null when complete")


class LastMessage(BaseModel):
    role: Role
    preview: str = Field(description="the first 200 characters")
    created_at: datetime


class SessionSummary(Session):
    last_message: LastMessage | None


class SessionPage(BaseModel):
    sessions: list[SessionSummary]
    next_cursor: str | None


class RecentMessages(BaseModel):
    session_id: UUID
    messages: list[Message] = Field(description="the latest messages, oldest first")


class MessageSearchResult(BaseModel):
    id: UUID
    session_id: UUID
    seq: int
    role: Role
    content: str
    metadata: dict[str, Any]
    user_id: str | None
    agent_id: str | None
    created_at: datetime
    score: float
    scores: Scores


class MessageSearchResponse(BaseModel):
    query: str
    scope: Literal["messages"] = "messages"
    results: list[MessageSearchResult]
    total: int
