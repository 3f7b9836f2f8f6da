"""The request and answer of POST /v1/context."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import ConfigDict, Field

from engram.fields import Integer
from engram.lazymodel import LazyModel
from engram.memories.models import ContainerQuery, Identifier, QueryText
from engram.plans.models import ItemId

DEFAULT_MAX_TOKENS = 1000
MAX_TOKENS_LIMIT = 8000

Source = Literal["memory", "fact", "procedure", "summary", "message", "plan", "working"]


class ContextRequest(LazyModel):
    model_config = ConfigDict(extra="forbid")

    query: QueryText = Field(description="what the agent is about to do or answer: the turn's message")
    user_id: Identifier | None = Field(default=None, description="the user the turn is for")
    agent_id: Identifier | None = Field(default=None, description="the agent (its private procedures)")
    session_id: UUID | None = Field(
        default=None, description="the conversation: its summary and last messages"
    )
    container: ContainerQuery | None = Field(
        default=None, description="memories of this container only ('a.b', or 'a.b.*' with everything below)"
    )
    plan_id: ItemId | None = Field(
        default=None,
        description="a plan (/v1/plans): its status and state, and its WorkflowState values in working "
        "memory",
    )
    max_tokens: Integer = Field(
        default=DEFAULT_MAX_TOKENS,
        ge=50,
        le=MAX_TOKENS_LIMIT,
        description="the budget of `context`, estimated at 4 characters per token",
    )


class ContextItem(LazyModel):
    source: Source
    id: str = Field(description="the row it came from: a memory, procedure, message or session id, a plan id")
    text: str = Field(description="the line as it stands in `context`")
    score: float | None = Field(default=None, description="relevance to the query, where it was ranked by it")


class AgentContext(LazyModel):
    context: str = Field(
        description="ready to paste into a prompt: sections in priority order, each line ending with "
        "[source:id]"
    )
    items: list[ContextItem] = Field(description="the lines of `context`, in order")
    token_estimate: int
    max_tokens: int
    omitted: int = Field(description="candidate lines that did not fit in the budget")
