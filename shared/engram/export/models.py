"""The JSON Lines format: a header line, then one record per line in dependency order (RECORD_ORDER:
whatever a record points at comes before it). Each record names its kind in `record`; its other fields
are its table's columns (engram.export.coverage says which table, and a test holds every tenant table
and column of the catalogue to it). Records never carry a tenant: the import decides it.

Version 3 ends with an `end` record that counts the records of each kind before it, so that a file cut
short (an export whose stream broke off) is told from a whole one. Version 2 carries every tenant table,
without the end record; version 1 files (containers, memories, relationships, sessions, messages, working
memory, procedures, plans, task contexts) still import."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from engram.fields import Flag, Float4Vector, JsonObject, Number, Text
from engram.lazymodel import LazyModel
from engram.memories.models import (
    ContainerName,
    ContainerQuery,
    MemoryType,
    ModelName,
    StoredIdentifier,
    Tag,
    Visibility,
)

# 4: entity records say whether they are curated (migrations/0033), which a version 3 importer would
# refuse record by record; by the header it refuses the file at once.
FORMAT_VERSION: Literal[4] = 4
RECORD_ORDER = (
    "container",
    "instruction",
    "document",
    "document_file",
    "chunk",
    "session",
    "message",
    "summary",
    "memory",
    "memory_source",
    "relationship",
    "entity",
    "entity_key",
    "mention",
    "relation",
    "working",
    "procedure",
    "plan",
    "task_context",
)
V1_RECORD_ORDER = (
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
    version: Literal[1, 2, 3, 4] = FORMAT_VERSION
    tenant: str
    container: str | None
    with_files: bool = False
    exported_at: datetime


class End(_Record):
    """The last line of a file of version 3 or later: how many records of each kind come before it (the
    header left out). A file without it, or whose records do not match it, is incomplete."""

    record: Literal["end"] = "end"
    counts: dict[str, int]


class ContainerRecord(_Record):
    record: Literal["container"] = "container"
    name: str
    parent: str | None
    description: str
    created_at: datetime


class InstructionRecord(_Record):
    record: Literal["instruction"] = "instruction"
    container: str | None
    instructions: str
    created_at: datetime
    updated_at: datetime


class DocumentRecord(_Record):
    record: Literal["document"] = "document"
    id: UUID
    container: str
    content_type: str | None
    source_kind: str
    source: str
    filename: str | None
    title: str | None
    metadata: dict[str, JsonValue]
    tags: list[str]
    status: str
    error_code: str | None
    error: str | None
    checksum: str | None
    size_bytes: int | None
    custom_id: str | None
    revision: int
    extract_mode: str
    document_date: datetime | None
    extraction: dict[str, JsonValue]
    user_id: str | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


class DocumentFileRecord(_Record):
    """A document's original bytes (export with_files): base64, one record per file."""

    record: Literal["document_file"] = "document_file"
    document_id: UUID
    data: str = Field(description="base64")


class ChunkRecord(_Record):
    record: Literal["chunk"] = "chunk"
    id: UUID
    document_id: UUID
    container: str
    tags: list[str]
    ordinal: int
    content: str
    token_count: int
    metadata: dict[str, JsonValue]
    embedding: list[float] | None
    embedding_model: str | None
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


class SummaryRecord(_Record):
    record: Literal["summary"] = "summary"
    session_id: UUID
    user_id: str | None
    agent_id: str | None
    content: str
    method: str
    model: str | None
    through_seq: int
    input_tokens: int
    output_tokens: int
    created_at: datetime
    updated_at: datetime


class MemoryRecord(_Record):
    """A memory's values follow the API's rules for them (engram.fields, the memory models), so that a file
    brings in nothing the API would refuse, and a refusal names the field; its content has no size limit
    here, since memories extracted from documents and conversations were never held to the API's."""

    record: Literal["memory"] = "memory"
    id: UUID
    container: ContainerName
    content: Annotated[Text, Field(min_length=1)]
    memory_type: MemoryType
    tags: list[Tag]
    metadata: JsonObject
    agent_id: StoredIdentifier | None
    conversation_id: StoredIdentifier | None
    user_id: StoredIdentifier | None
    visibility: Visibility
    confidence: Annotated[Number, Field(ge=0.0, le=1.0)]
    is_latest: bool
    valid_from: datetime
    valid_to: datetime | None
    expires_at: datetime | None
    reverted_at: datetime | None = None
    embedding: Float4Vector | None
    embedding_model: ModelName | None
    created_at: datetime
    updated_at: datetime


class MemorySourceRecord(_Record):
    record: Literal["memory_source"] = "memory_source"
    memory_id: UUID
    document_id: UUID
    chunk_id: UUID | None
    created_at: datetime


class RelationshipRecord(_Record):
    record: Literal["relationship"] = "relationship"
    id: UUID
    source_id: UUID
    target_id: UUID
    relationship_type: str
    confidence: float
    metadata: dict[str, JsonValue]
    created_at: datetime


class EntityRecord(_Record):
    record: Literal["entity"] = "entity"
    id: UUID
    name: str
    normalized_name: str
    entity_type: str
    aliases: list[str]
    # Asked for through the API, so kept without references (migrations/0033). Files written before
    # it carry none: their entities were all kept, as curated ones are.
    curated: bool = True
    created_at: datetime
    updated_at: datetime


class EntityKeyRecord(_Record):
    record: Literal["entity_key"] = "entity_key"
    key: str
    entity_type: str
    entity_id: UUID


class MentionRecord(_Record):
    record: Literal["mention"] = "mention"
    entity_id: UUID
    memory_id: UUID
    is_subject: bool
    created_at: datetime


class RelationRecord(_Record):
    record: Literal["relation"] = "relation"
    id: UUID
    source_entity: UUID
    target_entity: UUID
    relation_type: str
    valid_from: datetime
    valid_to: datetime | None
    confidence: float
    source_memory_id: UUID | None
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


RECORD_MODELS: dict[str, type[_Record]] = {
    "container": ContainerRecord,
    "instruction": InstructionRecord,
    "document": DocumentRecord,
    "document_file": DocumentFileRecord,
    "chunk": ChunkRecord,
    "session": SessionRecord,
    "message": MessageRecord,
    "summary": SummaryRecord,
    "memory": MemoryRecord,
    "memory_source": MemorySourceRecord,
    "relationship": RelationshipRecord,
    "entity": EntityRecord,
    "entity_key": EntityKeyRecord,
    "mention": MentionRecord,
    "relation": RelationRecord,
    "working": WorkingRecord,
    "procedure": ProcedureRecord,
    "plan": PlanRecord,
    "task_context": TaskContextRecord,
}

Record = Annotated[
    ContainerRecord
    | InstructionRecord
    | DocumentRecord
    | DocumentFileRecord
    | ChunkRecord
    | SessionRecord
    | MessageRecord
    | SummaryRecord
    | MemoryRecord
    | MemorySourceRecord
    | RelationshipRecord
    | EntityRecord
    | EntityKeyRecord
    | MentionRecord
    | RelationRecord
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
    with_files: Flag = Field(
        default=False, description="also the documents' original bytes (base64, a document_file record each)"
    )


class ImportReport(LazyModel):
    status: Literal["done"] = "done"
    tenant: str
    inserted: dict[str, int]
    skipped: dict[str, int] = Field(description="records whose id was already there (import is idempotent)")
    entities_curated: int = Field(
        default=0,
        description="entities the tenant already held (the same id, or the same name and type), counted "
        "under skipped, that are curated from now on because the file's were: kept without references",
    )
    new_ids: bool = Field(default=False, description="ids were replaced (by the same new ones each time)")


def dump(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")
