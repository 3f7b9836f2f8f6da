"""Request and response models of the sessions API and of message search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, field_validator, model_validator

from engram.fields import Timestamp
from engram.lazymodel import LazyModel
from engram.memories.models import RESULTS_IN_ANSWER, ContainerName, Content, Identifier, Metadata, Scores

Role = Literal["user", "assistant", "system", "tool"]
Extraction = Literal["none", "queued", "done", "failed"]
ExtractMode = Literal["none", "light", "full"]
MAX_MESSAGES_PER_APPEND = 100
CLOCK_SKEW = timedelta(minutes=5)


class _Strict(LazyModel):
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


class Session(LazyModel):
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
    occurred_at: Timestamp | None = Field(
        default=None,
        description="when the message was said, for an imported conversation; default: when it is "
        "received. Extraction resolves relative dates ('last week') against it",
    )

    @field_validator("occurred_at")
    @classmethod
    def _not_in_the_future(cls, value: datetime | None) -> datetime | None:
        if value is not None and value > datetime.now(UTC) + CLOCK_SKEW:
            raise ValueError("occurred_at is in the future")
        return value


class MessagesAppend(_Strict):
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_MESSAGES_PER_APPEND)
    extract: ExtractMode = Field(
        default="none",
        description="memory extraction from the messages, as for documents: `none`; `light`, the "
        "offline heuristic (statements in the user's messages); `full`, the configured LLM over the "
        "user's and the assistant's messages. `true` and `false` still mean `light` and `none`",
    )

    @field_validator("extract", mode="before")
    @classmethod
    def _boolean_means_light(cls, value: Any) -> Any:
        return {True: "light", False: "none"}.get(value, value) if isinstance(value, bool) else value


class Message(LazyModel):
    id: UUID
    session_id: UUID
    seq: int = Field(description="1, 2, 3, ... in conversation order")
    role: Role
    content: str
    metadata: dict[str, Any]
    extraction: Extraction
    extract_mode: Literal["light", "full"] | None
    extraction_error: str | None = Field(description="why extraction failed (extraction: failed)")
    occurred_at: datetime = Field(description="when it was said: as sent, else when it was received")
    created_at: datetime


class ExtractionReport(LazyModel):
    """What one extraction run over a session's queued messages did."""

    status: Literal["done", "queued", "failed", "nothing_queued"] = Field(
        description="done: every queued message was processed; queued: the LLM was unavailable, the "
        "messages stay queued (POST /v1/sessions/{id}/extract, or the next append with extract, tries "
        "again); failed: the LLM's answer stayed unusable, those messages are marked failed"
    )
    extractors: list[str] = Field(description='"heuristic", or "llm:<provider>:<model>"')
    memory_ids: list[UUID] = Field(description="memories created, or already held, for these messages")
    messages_done: int
    messages_failed: int
    messages_queued: int
    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls: int = 0
    error: str | None = None


class AppendResult(LazyModel):
    session_id: UUID
    messages: list[Message]
    extracted_memory_ids: list[UUID] = Field(description="memories created or updated by extraction")
    extraction: ExtractionReport | None = Field(description="null when the append asked for none")


class ConversationSummary(LazyModel):
    """The session's rolling summary (engram.sessions.summaries), kept up to date as messages arrive."""

    content: str
    method: Literal["llm", "extractive"] = Field(
        description="llm: written by the configured LLM; extractive: the conversation's own most informative "
        "sentences (no LLM configured, or it failed for good), each with its message's seq and role"
    )
    model: str | None = Field(description='"llm:<provider>:<model>" for an LLM summary')
    through_seq: int = Field(description="the last message it covers (behind while it catches up)")
    updated_at: datetime


class Conversation(LazyModel):
    session: Session
    messages: list[Message]
    next_after: int | None = Field(description="pass as ?after= for the rest; null when complete")
    summary: ConversationSummary | None = Field(
        default=None, description="the rolling summary; null until the first one is written"
    )


class LastMessage(LazyModel):
    role: Role
    preview: str = Field(description="the first 200 characters")
    created_at: datetime


class SessionSummary(Session):
    last_message: LastMessage | None


class SessionPage(LazyModel):
    sessions: list[SessionSummary]
    next_cursor: str | None


class RecentMessages(LazyModel):
    session_id: UUID
    messages: list[Message] = Field(description="the latest messages, oldest first")


class MessageSearchResult(LazyModel):
    id: UUID
    session_id: UUID
    seq: int
    role: Role
    content: str
    metadata: dict[str, Any]
    user_id: str | None
    agent_id: str | None
    created_at: datetime
    score: float = Field(
        description="what score_threshold applies to, as for memories: in hybrid mode a calibrated "
        "probability that the message is relevant (0-1, from scores.fused), in vector mode scores.vector "
        "(a cosine similarity, -1 to 1), in text mode scores.text (0-1)"
    )
    scores: Scores


class MessageSearchResponse(LazyModel):
    query: str
    scope: Literal["messages"] = "messages"
    results: list[MessageSearchResult]
    total: int = Field(description=RESULTS_IN_ANSWER)
    weights: dict[str, float] = Field(
        description="the weight of each score the fused score adds up, by its name in `scores`, as for "
        "memories: hybrid mode vector, text_relative and coverage; vector mode: vector 1; text mode: text 1"
    )
