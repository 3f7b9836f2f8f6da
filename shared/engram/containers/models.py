"""Request and response models of the containers API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints

from engram.fields import NoNul
from engram.lazymodel import LazyModel
from engram.memories.models import ContainerName

Description = Annotated[str, StringConstraints(max_length=2000), *NoNul]


class ContainerCreate(LazyModel):
    model_config = ConfigDict(extra="forbid")

    name: ContainerName = Field(description="the full name ('crm.contacts'), or a name below `parent`")
    parent: ContainerName | None = Field(default=None, description="an existing container to create it under")
    description: Description = Field(
        default="",
        description="a new container's description; an existing container keeps its own unless one is "
        "sent ('' clears it)",
    )

    def full_name(self) -> str:
        return f"{self.parent}.{self.name}" if self.parent else self.name

    def description_sent(self) -> str | None:
        """The description to store, or None when none was sent (an existing container keeps its own)."""
        return self.description if "description" in self.model_fields_set else None


class Container(LazyModel):
    name: str
    parent: str | None
    description: str
    created_at: datetime


class ContainerNode(Container):
    memory_count: int = Field(description="current memories directly in this container")
    total_count: int = Field(description="current memories in this container and everything below it")
    children: list[ContainerNode]


class ContainerTree(LazyModel):
    containers: list[ContainerNode] = Field(description="top-level containers, each with its subtree")
    total_memories: int


class ContainerDeleted(LazyModel):
    deleted: str
    containers: int = Field(description="containers removed: this one and everything below it")
    memories: int = Field(description="memories removed, every version and every user's")
    documents: int = Field(description="documents removed, with their chunks and stored files")


class ContainerArchived(LazyModel):
    archived: str
    into: str
    containers: list[str] = Field(description="the containers removed, whose content moved into `into`")
    memories: int = Field(description="memories moved; each keeps metadata.archived_from")
    documents: int = Field(
        description="documents moved (with their chunks); each keeps metadata.archived_from"
    )
