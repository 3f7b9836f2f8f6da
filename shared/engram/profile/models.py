"""Request and response models of the profile API."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from engram.lazymodel import LazyModel
from engram.memories.models import MemoryType

DEFAULT_MAX_TOKENS = 800
MAX_TOKENS_LIMIT = 8000


class ProfileSubject(LazyModel):
    user_id: str | None
    agent_id: str | None
    container: str | None


class ProfileItem(LazyModel):
    id: UUID = Field(description="the memory this line comes from")
    content: str
    memory_type: MemoryType
    container: str
    created_at: datetime
    valid_from: datetime | None = Field(
        default=None,
        description="when what it says is true from: one later than now ends its line of `context` with "
        "(from DATE)",
    )
    score: float | None = Field(default=None, description="search score, for relevant_memories")


class Profile(LazyModel):
    subject: ProfileSubject
    static_facts: list[ProfileItem] = Field(
        description="latest facts and preferences, near-duplicates removed"
    )
    recent_context: list[ProfileItem] = Field(description="the most recent episodes and tasks")
    relevant_memories: list[ProfileItem] | None = Field(description="search results for q; null without q")
    context: str = Field(description="ready to paste into a prompt; every line ends with [memory:<id>]")
    token_estimate: int = Field(description="tokens in context, estimated at 4 characters per token")
    max_tokens: int
    omitted: int = Field(description="items that did not fit in the token budget")
