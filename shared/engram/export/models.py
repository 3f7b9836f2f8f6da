"""The JSON Lines format: a header line, then one record per line in dependency order
(containers, memories, relationships, sessions, messages, working memory, procedures, plans, task
contexts).
Each record names its kind in `record`. Records never carry a tenant: import decides it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from engram.lazymodel import LazyModel
from engram.memories.models import ContainerQuery

RECORD_ORDER = (
    "container",
    "memory",
    "relationship",
    "session",
    "message",
    "working",
    "procedure",
    "plan",
    "task_context",
)


class _Record(LazyModel):
    model_config = ConfigDict(extra="forbid")


class Header(_Record):
    record: Literal["header"] = "header"
    format: Literal["engram-export"] = "engram-export"
    version: Literal[1] = 1
    tenant: str
    container: str | None
    exported_at: datetime


class ContainerRecord(_Record):
    record: Literal["container"] = "container"
    name: str
    parent: str | None
    description: str
    created_at: datetime


class MemoryRecord(_Record):
    record: Literal["memory"] = "memory"
    id: UUID
    container: str
    content: str
    memory_type: str
    tags: list[str]
    metadata: dict[str, JsonValue]
    agent_id: str | None
    conversation_id: str | None
    user_id: str | None
    visibility: str
    confidence: float
    is_latest: bool
    valid_from: datetime
    valid_to: datetime | None
    expires_at: datetime | None
    embedding: list[float] | None
    embedding_model: str | None
    created_at: datetime
    updated_at: datetime


class RelationshipRecord(_Record):
    record: Literal["relationship"] = "relationship"
    id: UUID
    source_id: UUID
    target_id: UUID
    relationship_type: str
    confidence: float
    metadata: dict[str, JsonValue]
    created_at: datetime


class SessionRecord(_Record):
    record: Literal["session"] = "session"
    id: UUID
    user_id: str | None
    agent_id: str | None
    container: str
    metadata: dict[str, JsonValue]
    message_count: int
    last_message_at: datetime | None
    created_at: datetime
    updated_at: datetime


class MessageRecord(_Record):
    record: Literal["message"] = "message"
    id: UUID
    session_id: UUID
    seq: int
    user_id: str | None
    agent_id: str | None
    role: str
    content: str
    metadata: dict[str, JsonValue]
    embedding: list[float] | None
    embedding_model: str | None
    extraction: str
    extract_mode: str | None = None
    extraction_error: str | None = None
    occurred_at: datetime | None = None
    created_at: datetime


class WorkingRecord(_Record):
    record: Literal["working"] = "working"
    scope: str
    key: str
    value: JsonValue
    version: int
    expires_at: datetime | None
    user_id: str | None = None
    created_at: datetime
    updated_at: datetime


class ProcedureRecord(_Record):
    record: Literal["procedure"] = "procedure"
    id: UUID
    kind: str
    trigger: str
    content: str
    agent_id: str | None
    visibility: str
    user_id: str | None = None
    tags: list[str]
    metadata: dict[str, JsonValue]
    embedding: list[float] | None
    embedding_model: str | None
    created_at: datetime
    updated_at: datetime


class PlanRecord(_Record):
    record: Literal["plan"] = "plan"
    plan_id: str
    goal_event: str
    goal_data: dict[str, JsonValue]
    status: str
    state: JsonValue
    user_id: str | None
    version: int
    created_at: datetime
    updated_at: datetime


class TaskContextRecord(_Record):
    record: Literal["task_context"] = "task_context"
    task_id: str
    plan_id: str | None
    event_type: str
    response_event: str | None
    response_topic: str | None
    data: dict[str, JsonValue]
    sub_tasks: list[str]
    state: JsonValue
    version: int
    created_at: datetime
    updated_at: datetime


Record = Annotated[
    ContainerRecord
    | MemoryRecord
    | RelationshipRecord
    | SessionRecord
    | MessageRecord
    | WorkingRecord
    | ProcedureRecord
    | PlanRecord
    | TaskContextRecord,
    Field(discriminator="record"),
]


class ExportRequest(_Record):
    container: ContainerQuery | None = Field(
        default=None, description="only this container ('a.b', or 'a.b.*' with everything below)"
    )


class ImportReport(LazyModel):
    tenant: str
    inserted: dict[str, int]
    skipped: dict[str, int] = Field(description="records whose id was already there (import is idempotent)")


def dump(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")
