"""What erasing a user removes, counted."""

from __future__ import annotations

from pydantic import Field

from engram.lazymodel import LazyModel


class UserErasure(LazyModel):
    user_id: str
    erased: bool = Field(description="false: the counts are what ?confirm=true would remove")
    memories: int = Field(description="the user's memories, every version")
    entity_mentions: int = Field(description="links from those memories to the entities they mention")
    entity_relations: int = Field(description="relations extracted from those memories")
    entities: int = Field(description="entities only those memories named (none of anybody else's does)")
    sessions: int
    messages: int
    working_keys: int
    procedures: int
    documents: int = Field(description="documents the user uploaded, with the memories only they gave")
    chunks: int
    plans: int
    task_contexts: int = Field(description="the task contexts of the user's plans")
    containers: int = Field(description="containers left empty that only held what was erased")
