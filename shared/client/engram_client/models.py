"""Generated from the Engram API's OpenAPI document by shared/client/tools/codegen.py: do not edit."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, RootModel


class Container(BaseModel):
    name: Annotated[str, Field(title="Name")]
    parent: Annotated[str | None, Field(title="Parent")]
    description: Annotated[str, Field(title="Description")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class ContainerArchived(BaseModel):
    archived: Annotated[str, Field(title="Archived")]
    into: Annotated[str, Field(title="Into")]
    containers: Annotated[
        list[str],
        Field(
            description="the containers removed, whose content moved into `into`",
            title="Containers",
        ),
    ]
    memories: Annotated[
        int,
        Field(
            description="memories moved; each keeps metadata.archived_from",
            title="Memories",
        ),
    ]
    documents: Annotated[
        int,
        Field(
            description="documents moved (with their chunks); each keeps metadata.archived_from",
            title="Documents",
        ),
    ]


class ContainerCount(BaseModel):
    container: Annotated[str, Field(title="Container")]
    count: Annotated[int, Field(title="Count")]


class Parent(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="an existing container to create it under",
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Parent",
        ),
    ]


class ContainerCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    name: Annotated[
        str,
        Field(
            description="the full name ('crm.contacts'), or a name below `parent`",
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Name",
        ),
    ]
    parent: Annotated[
        Parent | None,
        Field(description="an existing container to create it under", title="Parent"),
    ] = None
    description: Annotated[
        str | None,
        Field(
            description="a new container's description; an existing container keeps its own unless one is sent ('' clears it)",
            max_length=2000,
            pattern="^[^\\x00]*$",
            title="Description",
        ),
    ] = ""


class ContainerDeleted(BaseModel):
    deleted: Annotated[str, Field(title="Deleted")]
    containers: Annotated[
        int,
        Field(
            description="containers removed: this one and everything below it",
            title="Containers",
        ),
    ]
    memories: Annotated[
        int,
        Field(
            description="memories removed, every version and every user's",
            title="Memories",
        ),
    ]
    documents: Annotated[
        int,
        Field(
            description="documents removed, with their chunks and stored files",
            title="Documents",
        ),
    ]


class ContainerNode(BaseModel):
    name: Annotated[str, Field(title="Name")]
    parent: Annotated[str | None, Field(title="Parent")]
    description: Annotated[str, Field(title="Description")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    memory_count: Annotated[
        int,
        Field(
            description="current memories directly in this container",
            title="Memory Count",
        ),
    ]
    total_count: Annotated[
        int,
        Field(
            description="current memories in this container and everything below it",
            title="Total Count",
        ),
    ]
    children: Annotated[list[ContainerNode], Field(title="Children")]


class ContainerTree(BaseModel):
    containers: Annotated[
        list[ContainerNode],
        Field(
            description="top-level containers, each with its subtree",
            title="Containers",
        ),
    ]
    total_memories: Annotated[int, Field(title="Total Memories")]


class ContainerTypeCount(BaseModel):
    container: Annotated[str, Field(title="Container")]
    memory_type: Annotated[str, Field(title="Memory Type")]
    count: Annotated[int, Field(title="Count")]


class ContextItem(BaseModel):
    source: Annotated[
        Literal["memory", "fact", "procedure", "summary", "message", "plan", "working"],
        Field(title="Source"),
    ]
    id: Annotated[
        str,
        Field(
            description="the row it came from: a memory, procedure, message or session id, a plan id",
            title="Id",
        ),
    ]
    text: Annotated[str, Field(description="the line as it stands in `context`", title="Text")]
    score: Annotated[
        float | None,
        Field(
            description="relevance to the query, where it was ranked by it",
            title="Score",
        ),
    ] = None


class UserId(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user the turn is for",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class AgentId(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the agent (its private procedures)",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Agent Id",
        ),
    ]


class Container1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="memories of this container only ('a.b', or 'a.b.*' with everything below)",
            max_length=522,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}(\\.\\*)?$",
            title="Container",
        ),
    ]


class PlanId(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="a plan (/v1/plans): its status and state, and its WorkflowState values in working memory",
            pattern="^[A-Za-z0-9_.:-]{1,128}$",
            title="Plan Id",
        ),
    ]


class ContextRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    query: Annotated[
        str,
        Field(
            description="what the agent is about to do or answer: the turn's message",
            max_length=10000,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Query",
        ),
    ]
    user_id: Annotated[UserId | None, Field(description="the user the turn is for", title="User Id")] = None
    agent_id: Annotated[
        AgentId | None,
        Field(description="the agent (its private procedures)", title="Agent Id"),
    ] = None
    session_id: Annotated[
        UUID | None,
        Field(
            description="the conversation: its summary and last messages",
            title="Session Id",
        ),
    ] = None
    container: Annotated[
        Container1 | None,
        Field(
            description="memories of this container only ('a.b', or 'a.b.*' with everything below)",
            title="Container",
        ),
    ] = None
    plan_id: Annotated[
        PlanId | None,
        Field(
            description="a plan (/v1/plans): its status and state, and its WorkflowState values in working memory",
            title="Plan Id",
        ),
    ] = None
    max_tokens: Annotated[
        int | None,
        Field(
            description="the budget of `context`, estimated at 4 characters per token",
            ge=50,
            le=8000,
            title="Max Tokens",
        ),
    ] = 1000


class ConversationSummary(BaseModel):
    """
    The session's rolling summary (engram.sessions.summaries), kept up to date as messages arrive.
    """

    content: Annotated[str, Field(title="Content")]
    method: Annotated[
        Literal["llm", "extractive"],
        Field(
            description="llm: written by the configured LLM; extractive: the conversation's own most informative sentences (no LLM configured, or it failed for good), each with its message's seq and role",
            title="Method",
        ),
    ]
    model: Annotated[
        str | None,
        Field(description='"llm:<provider>:<model>" for an LLM summary', title="Model"),
    ]
    through_seq: Annotated[
        int,
        Field(
            description="the last message it covers (behind while it catches up)",
            title="Through Seq",
        ),
    ]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class CreatedMemory(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    content: Annotated[str, Field(title="Content")]
    container: Annotated[str, Field(title="Container")]
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"],
        Field(title="Memory Type"),
    ]
    tags: Annotated[list[str], Field(title="Tags")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    conversation_id: Annotated[str | None, Field(title="Conversation Id")]
    user_id: Annotated[str | None, Field(title="User Id")]
    visibility: Annotated[Literal["private", "tenant"], Field(title="Visibility")]
    confidence: Annotated[float, Field(title="Confidence")]
    is_latest: Annotated[bool, Field(title="Is Latest")]
    valid_from: Annotated[AwareDatetime, Field(title="Valid From")]
    valid_to: Annotated[AwareDatetime | None, Field(title="Valid To")]
    expires_at: Annotated[AwareDatetime | None, Field(title="Expires At")]
    reverted_at: Annotated[AwareDatetime | None, Field(title="Reverted At")]
    embedding_model: Annotated[str | None, Field(title="Embedding Model")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]
    superseded: Annotated[
        list[UUID] | None,
        Field(
            description="the memories this write retired (kept as history): the one it supersedes (for a PATCH of content, the patched memory), and those graph-link found it contradicts",
            title="Superseded",
        ),
    ] = None


class DeliveryAttempt(BaseModel):
    event_id: Annotated[UUID, Field(title="Event Id")]
    event_type: Annotated[
        Literal[
            "memory.created",
            "memory.updated",
            "memory.superseded",
            "memory.deleted",
            "document.done",
            "document.failed",
            "session.summarized",
        ],
        Field(title="Event Type"),
    ]
    status: Annotated[Literal["pending", "delivered", "failed"], Field(title="Status")]
    attempts: Annotated[int, Field(title="Attempts")]
    last_status: Annotated[
        int | None,
        Field(
            description="the receiver's HTTP status, null when it was not reached",
            title="Last Status",
        ),
    ]
    last_error: Annotated[str | None, Field(title="Last Error")]
    next_attempt_at: Annotated[
        AwareDatetime | None,
        Field(description="pending: when it is tried again", title="Next Attempt At"),
    ]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class DeliveryCounts(BaseModel):
    delivered: Annotated[int, Field(title="Delivered")]
    pending: Annotated[
        int,
        Field(description="waiting for their first try, or for a retry", title="Pending"),
    ]
    failed: Annotated[
        int,
        Field(description="given up after every retry (kept 7 days)", title="Failed"),
    ]


class DocumentAccepted(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    status: Annotated[
        Literal[
            "queued",
            "extracting",
            "chunking",
            "embedding",
            "indexing",
            "done",
            "failed",
        ],
        Field(title="Status"),
    ]
    duplicate: Annotated[
        bool | None,
        Field(
            description="the same content was already ingested: nothing new to do",
            title="Duplicate",
        ),
    ] = False


class Content(RootModel[str]):
    root: Annotated[
        str,
        Field(description="the document's text", pattern="^[^\\x00]*$", title="Content"),
    ]


class Url(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="an http(s) page or file to fetch",
            max_length=4096,
            min_length=8,
            pattern="^https?://[^\\s\\x00]+$",
            title="Url",
        ),
    ]


class FileBase64(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="a file's bytes, base64; send filename too",
            pattern="^[^\\x00]*$",
            title="File Base64",
        ),
    ]


class Filename(RootModel[str]):
    root: Annotated[
        str,
        Field(max_length=255, min_length=1, pattern="^[^\\x00/\\\\]+$", title="Filename"),
    ]


class ContentType(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="detected from the bytes when missing",
            max_length=200,
            min_length=3,
            pattern="^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\\s*;[^\\x00]*[^\\s\\x00])?$",
            title="Content Type",
        ),
    ]


class Title(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=500,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Title",
        ),
    ]


class Tag(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=100,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
        ),
    ]


class CustomId(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="your id: sending it again replaces the document (same content: no-op)",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Custom Id",
        ),
    ]


class UserId1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user who uploads it: the document and the memories extracted from it are theirs (user_id, visible to the tenant), erased with them (DELETE /v1/users/{user_id})",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class DocumentError(BaseModel):
    code: Annotated[str, Field(title="Code")]
    message: Annotated[str, Field(title="Message")]


class Container2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=522,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}(\\.\\*)?$",
            title="Container",
        ),
    ]


class Cursor(RootModel[str]):
    root: Annotated[str, Field(max_length=2048, pattern="^[^\\x00]*$", title="Cursor")]


class DocumentListRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    container: Annotated[Container2 | None, Field(title="Container")] = None
    status: Annotated[
        Literal[
            "queued",
            "extracting",
            "chunking",
            "embedding",
            "indexing",
            "done",
            "failed",
        ]
        | None,
        Field(title="Status"),
    ] = None
    limit: Annotated[int | None, Field(ge=1, le=100, title="Limit")] = 20
    cursor: Annotated[Cursor | None, Field(title="Cursor")] = None


class EmbeddingCoverage(BaseModel):
    embedded: Annotated[int, Field(title="Embedded")]
    missing: Annotated[int, Field(title="Missing")]
    coverage: Annotated[
        float,
        Field(
            description="share of memories that carry an embedding, 0 to 1",
            title="Coverage",
        ),
    ]
    models: Annotated[dict[str, int], Field(title="Models")]


class Entity(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    name: Annotated[str, Field(title="Name")]
    entity_type: Annotated[str, Field(title="Entity Type")]
    aliases: Annotated[list[str], Field(title="Aliases")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class Alias(RootModel[str]):
    root: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\x00]*$")]


class EntityCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\x00]*$", title="Name")]
    entity_type: Annotated[
        str | None,
        Field(
            description="a lowercase word: person, place, ...",
            max_length=40,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Entity Type",
        ),
    ] = "unknown"
    aliases: Annotated[
        list[Alias] | None,
        Field(
            description="other names; each a key of its own (not the name's, nor another alias's)",
            max_length=20,
            title="Aliases",
        ),
    ] = None


class EntityPage(BaseModel):
    entities: Annotated[list[Entity], Field(title="Entities")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class EntityRef(BaseModel):
    """
    An entity by name, created if it does not exist yet (deduplicated like any other).
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, pattern="^[^\\x00]*$", title="Name")]
    entity_type: Annotated[
        str | None,
        Field(max_length=40, min_length=1, pattern="^[^\\x00]*$", title="Entity Type"),
    ] = "unknown"


class EntitySummary(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    name: Annotated[str, Field(title="Name")]
    entity_type: Annotated[str, Field(title="Entity Type")]


class ExportJob(BaseModel):
    id: Annotated[str, Field(title="Id")]
    status: Annotated[Literal["running", "done", "failed"], Field(title="Status")]
    status_url: Annotated[
        str,
        Field(description="GET it until the status is done or failed", title="Status Url"),
    ]
    url: Annotated[
        str | None,
        Field(description="done: a presigned GET URL for the JSON Lines file", title="Url"),
    ] = None
    expires_in: Annotated[int | None, Field(title="Expires In")] = None
    counts: Annotated[dict[str, int] | None, Field(title="Counts")] = None
    error: Annotated[str | None, Field(title="Error")] = None


class Container3(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="only this container ('a.b', or 'a.b.*' with everything below)",
            max_length=522,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}(\\.\\*)?$",
            title="Container",
        ),
    ]


class ExportRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    container: Annotated[
        Container3 | None,
        Field(
            description="only this container ('a.b', or 'a.b.*' with everything below)",
            title="Container",
        ),
    ] = None
    with_files: Annotated[
        bool | None,
        Field(
            description="also the documents' original bytes (base64, a document_file record each)",
            title="With Files",
        ),
    ] = False


class ExtractionReport(BaseModel):
    """
    What one extraction run over a session's queued messages did.
    """

    status: Annotated[
        Literal["done", "queued", "failed", "nothing_queued"],
        Field(
            description="done: every queued message was processed; queued: the LLM was unavailable, the messages stay queued (POST /v1/sessions/{id}/extract, or the next append with extract, tries again); failed: the LLM's answer stayed unusable, those messages are marked failed",
            title="Status",
        ),
    ]
    extractors: Annotated[
        list[str],
        Field(description='"heuristic", or "llm:<provider>:<model>"', title="Extractors"),
    ]
    memory_ids: Annotated[
        list[UUID],
        Field(
            description="memories created, or already held, for these messages",
            title="Memory Ids",
        ),
    ]
    messages_done: Annotated[int, Field(title="Messages Done")]
    messages_failed: Annotated[int, Field(title="Messages Failed")]
    messages_queued: Annotated[int, Field(title="Messages Queued")]
    input_tokens: Annotated[int | None, Field(title="Input Tokens")] = 0
    output_tokens: Annotated[int | None, Field(title="Output Tokens")] = 0
    llm_calls: Annotated[int | None, Field(title="Llm Calls")] = 0
    error: Annotated[str | None, Field(title="Error")] = None


class FieldError(BaseModel):
    field: str
    message: str


class GraphNode(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    name: Annotated[str, Field(title="Name")]
    entity_type: Annotated[str, Field(title="Entity Type")]
    aliases: Annotated[list[str], Field(title="Aliases")]
    depth: Annotated[int, Field(description="hops from the starting entity", title="Depth")]


class Health(BaseModel):
    status: Annotated[str, Field(title="Status")]
    database: Annotated[str, Field(title="Database")]


class ImportReport(BaseModel):
    status: Annotated[Literal["done"], Field(title="Status")] = "done"
    tenant: Annotated[str, Field(title="Tenant")]
    inserted: Annotated[dict[str, int], Field(title="Inserted")]
    skipped: Annotated[
        dict[str, int],
        Field(
            description="records whose id was already there (import is idempotent)",
            title="Skipped",
        ),
    ]
    entities_curated: Annotated[
        int | None,
        Field(
            description="entities the tenant already held (the same id, or the same name and type), counted under skipped, that are curated from now on because the file's were: kept without references",
            title="Entities Curated",
        ),
    ] = 0
    new_ids: Annotated[
        bool | None,
        Field(
            description="ids were replaced (by the same new ones each time)",
            title="New Ids",
        ),
    ] = False


class Instructions(BaseModel):
    container: Annotated[str | None, Field(description="null: the whole tenant", title="Container")]
    instructions: Annotated[str, Field(title="Instructions")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class InstructionsList(BaseModel):
    instructions: Annotated[
        list[Instructions],
        Field(
            description="without ?container=: every scope's instructions; with it: the ones that apply to that container, in the order the prompt lists them (the tenant's, each ancestor's, its own)",
            title="Instructions",
        ),
    ]


class Container4(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the container (and everything below it); null for the whole tenant",
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ]


class InstructionsSet(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    container: Annotated[
        Container4 | None,
        Field(
            description="the container (and everything below it); null for the whole tenant",
            title="Container",
        ),
    ] = None
    instructions: Annotated[
        str,
        Field(
            description="added to the LLM extraction prompt (extract=full) for memories of this scope, e.g. 'Record dietary restrictions as preferences.' They refine what is extracted; they cannot change the output format, the rules, or where memories are stored",
            max_length=2000,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Instructions",
        ),
    ]


class LastMessage(BaseModel):
    role: Annotated[Literal["user", "assistant", "system", "tool"], Field(title="Role")]
    preview: Annotated[str, Field(description="the first 200 characters", title="Preview")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class UserId2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user the request is made for",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class Container5(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=522,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}(\\.\\*)?$",
            title="Container",
        ),
    ]


class AgentId1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="also match this agent's private procedures",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Agent Id",
        ),
    ]


class MatchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    situation: Annotated[
        str,
        Field(max_length=10000, min_length=1, pattern="^[^\\x00]*$", title="Situation"),
    ]
    limit: Annotated[int | None, Field(ge=1, le=50, title="Limit")] = 5
    agent_id: Annotated[
        AgentId1 | None,
        Field(description="also match this agent's private procedures", title="Agent Id"),
    ] = None
    kind: Annotated[Literal["rule", "example"] | None, Field(title="Kind")] = None
    min_similarity: Annotated[
        float | None,
        Field(
            description="cosine similarity between situation and trigger",
            ge=0.0,
            le=1.0,
            title="Min Similarity",
        ),
    ] = 0.3


class Memory(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    content: Annotated[str, Field(title="Content")]
    container: Annotated[str, Field(title="Container")]
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"],
        Field(title="Memory Type"),
    ]
    tags: Annotated[list[str], Field(title="Tags")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    conversation_id: Annotated[str | None, Field(title="Conversation Id")]
    user_id: Annotated[str | None, Field(title="User Id")]
    visibility: Annotated[Literal["private", "tenant"], Field(title="Visibility")]
    confidence: Annotated[float, Field(title="Confidence")]
    is_latest: Annotated[bool, Field(title="Is Latest")]
    valid_from: Annotated[AwareDatetime, Field(title="Valid From")]
    valid_to: Annotated[AwareDatetime | None, Field(title="Valid To")]
    expires_at: Annotated[AwareDatetime | None, Field(title="Expires At")]
    reverted_at: Annotated[AwareDatetime | None, Field(title="Reverted At")]
    embedding_model: Annotated[str | None, Field(title="Embedding Model")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class MemoryBatchResult(BaseModel):
    memories: Annotated[
        list[CreatedMemory],
        Field(description="the stored memories, in the order sent", title="Memories"),
    ]


class AgentId2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Agent Id",
        ),
    ]


class ConversationId(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Conversation Id",
        ),
    ]


class UserId3(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user this memory is about and for",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class EmbeddingItem(RootModel[float]):
    root: Annotated[float, Field(ge=-3.4028234663852886e38, le=3.4028234663852886e38)]


class Embedding(RootModel[list[EmbeddingItem]]):
    root: Annotated[list[EmbeddingItem], Field(max_length=16000, min_length=1, title="Embedding")]


class EmbeddingModel(RootModel[str]):
    root: Annotated[
        str,
        Field(max_length=200, min_length=1, pattern="^[^\\x00]*$", title="Embedding Model"),
    ]


class MemoryCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    content: Annotated[str, Field(pattern="^[^\\x00]*$", title="Content")]
    container: Annotated[
        str | None,
        Field(
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ] = "default"
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"] | None,
        Field(title="Memory Type"),
    ] = "fact"
    tags: Annotated[list[Tag] | None, Field(max_length=50, title="Tags")] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    agent_id: Annotated[AgentId2 | None, Field(title="Agent Id")] = None
    conversation_id: Annotated[ConversationId | None, Field(title="Conversation Id")] = None
    user_id: Annotated[
        UserId3 | None,
        Field(description="the user this memory is about and for", title="User Id"),
    ] = None
    visibility: Annotated[
        Literal["private", "tenant"] | None,
        Field(
            description="'private': seen only by requests made for user_id; 'tenant': by all",
            title="Visibility",
        ),
    ] = "tenant"
    confidence: Annotated[float | None, Field(ge=0.0, le=1.0, title="Confidence")] = 1.0
    valid_from: Annotated[AwareDatetime | None, Field(title="Valid From")] = None
    expires_at: Annotated[AwareDatetime | None, Field(title="Expires At")] = None
    embedding: Annotated[Embedding | None, Field(title="Embedding")] = None
    embedding_model: Annotated[EmbeddingModel | None, Field(title="Embedding Model")] = None
    supersedes: Annotated[
        UUID | None,
        Field(
            description="the id of the memory this one replaces: it stays as history, no longer current",
            title="Supersedes",
        ),
    ] = None
    extract: Annotated[
        Literal["none", "light", "full"] | None,
        Field(
            description="find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way",
            title="Extract",
        ),
    ] = None


class MemoryHistory(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    versions: Annotated[
        list[Memory],
        Field(
            description="the version chain through `updates` links, oldest first",
            title="Versions",
        ),
    ]


class MemoryPage(BaseModel):
    memories: Annotated[list[Memory], Field(title="Memories")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class Content1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="new text: a new version, as supersedes makes one (the memory stays as history); the answer is the new version",
            pattern="^[^\\x00]*$",
            title="Content",
        ),
    ]


class Tags(RootModel[list[Tag]]):
    root: Annotated[list[Tag], Field(max_length=50, title="Tags")]


class MemoryPatch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    content: Annotated[
        Content1 | None,
        Field(
            description="new text: a new version, as supersedes makes one (the memory stays as history); the answer is the new version",
            title="Content",
        ),
    ] = None
    tags: Annotated[Tags | None, Field(title="Tags")] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"] | None,
        Field(title="Memory Type"),
    ] = None
    expires_at: Annotated[AwareDatetime | None, Field(title="Expires At")] = None
    visibility: Annotated[Literal["private", "tenant"] | None, Field(title="Visibility")] = None
    extract: Annotated[
        Literal["none", "light", "full"] | None,
        Field(
            description="with content: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way",
            title="Extract",
        ),
    ] = None


class Embedding1Item(RootModel[float]):
    root: Annotated[float, Field(ge=-3.4028234663852886e38, le=3.4028234663852886e38)]


class Embedding1(RootModel[list[Embedding1Item]]):
    root: Annotated[list[Embedding1Item], Field(max_length=16000, min_length=1, title="Embedding")]


class MemoryUpsert(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    content: Annotated[str, Field(pattern="^[^\\x00]*$", title="Content")]
    container: Annotated[
        str | None,
        Field(
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ] = "default"
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"] | None,
        Field(title="Memory Type"),
    ] = "fact"
    tags: Annotated[list[Tag] | None, Field(max_length=50, title="Tags")] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    agent_id: Annotated[AgentId2 | None, Field(title="Agent Id")] = None
    conversation_id: Annotated[ConversationId | None, Field(title="Conversation Id")] = None
    user_id: Annotated[
        UserId3 | None,
        Field(description="the user this memory is about and for", title="User Id"),
    ] = None
    visibility: Annotated[
        Literal["private", "tenant"] | None,
        Field(
            description="'private': seen only by requests made for user_id; 'tenant': by all",
            title="Visibility",
        ),
    ] = "tenant"
    confidence: Annotated[float | None, Field(ge=0.0, le=1.0, title="Confidence")] = 1.0
    valid_from: Annotated[AwareDatetime | None, Field(title="Valid From")] = None
    expires_at: Annotated[AwareDatetime | None, Field(title="Expires At")] = None
    embedding: Annotated[Embedding1 | None, Field(title="Embedding")] = None
    embedding_model: Annotated[EmbeddingModel | None, Field(title="Embedding Model")] = None
    supersedes: Annotated[
        None,
        Field(
            description="not accepted here: upsert decides itself which memory it updates. To replace a given memory, POST /v1/memories with supersedes",
            title="Supersedes",
        ),
    ] = None
    extract: Annotated[
        Literal["none", "light", "full"] | None,
        Field(
            description="find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way",
            title="Extract",
        ),
    ] = None
    dedupe_threshold: Annotated[
        float | None,
        Field(
            description="an existing memory at least this similar (cosine) is the same memory",
            gt=0.0,
            le=1.0,
            title="Dedupe Threshold",
        ),
    ] = 0.95


class Message(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    session_id: Annotated[UUID, Field(title="Session Id")]
    seq: Annotated[int, Field(description="1, 2, 3, ... in conversation order", title="Seq")]
    role: Annotated[Literal["user", "assistant", "system", "tool"], Field(title="Role")]
    content: Annotated[str, Field(title="Content")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    extraction: Annotated[Literal["none", "queued", "done", "failed"], Field(title="Extraction")]
    extract_mode: Annotated[Literal["light", "full"] | None, Field(title="Extract Mode")]
    extraction_error: Annotated[
        str | None,
        Field(
            description="why extraction failed (extraction: failed)",
            title="Extraction Error",
        ),
    ]
    occurred_at: Annotated[
        AwareDatetime,
        Field(
            description="when it was said: as sent, else when it was received",
            title="Occurred At",
        ),
    ]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class MessageIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    role: Annotated[Literal["user", "assistant", "system", "tool"], Field(title="Role")]
    content: Annotated[str, Field(pattern="^[^\\x00]*$", title="Content")]
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    occurred_at: Annotated[
        AwareDatetime | None,
        Field(
            description="when the message was said, for an imported conversation; default: when it is received. Extraction resolves relative dates ('last week') against it",
            title="Occurred At",
        ),
    ] = None


class MessagesAppend(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    messages: Annotated[list[MessageIn], Field(max_length=100, min_length=1, title="Messages")]
    extract: Annotated[
        Literal["none", "light", "full"] | None,
        Field(
            description="memory extraction from the messages, as for documents: `none`; `light`, the offline heuristic (statements in the user's messages); `full`, the configured LLM over the user's and the assistant's messages. `true` and `false` still mean `light` and `none`",
            title="Extract",
        ),
    ] = "none"


class Observation(BaseModel):
    memory_id: Annotated[UUID, Field(title="Memory Id")]
    content: Annotated[str, Field(title="Content")]
    container: Annotated[str, Field(title="Container")]
    memory_type: Annotated[str, Field(title="Memory Type")]
    is_subject: Annotated[bool, Field(title="Is Subject")]
    is_latest: Annotated[bool, Field(title="Is Latest")]
    valid_from: Annotated[AwareDatetime, Field(title="Valid From")]
    valid_to: Annotated[AwareDatetime | None, Field(title="Valid To")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class Content2(RootModel[str]):
    root: Annotated[str, Field(pattern="^[^\\x00]*$", title="Content")]


class ObservationCreate(BaseModel):
    """
    Link an existing memory to the entity (`memory_id`), or store a new memory (`content`, with
    `container` and `memory_type`) and link it.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    memory_id: Annotated[UUID | None, Field(title="Memory Id")] = None
    content: Annotated[Content2 | None, Field(title="Content")] = None
    container: Annotated[
        str | None,
        Field(
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ] = "default"
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"] | None,
        Field(title="Memory Type"),
    ] = "fact"
    is_subject: Annotated[
        bool | None,
        Field(description="the memory is about this entity", title="Is Subject"),
    ] = True


class Plan(BaseModel):
    plan_id: Annotated[str, Field(title="Plan Id")]
    goal_event: Annotated[str, Field(title="Goal Event")]
    goal_data: Annotated[dict[str, Any], Field(title="Goal Data")]
    status: Annotated[str, Field(title="Status")]
    state: Annotated[Any, Field(title="State")]
    user_id: Annotated[str | None, Field(title="User Id")]
    version: Annotated[
        int,
        Field(
            description="send it back in If-Match to write only if nobody wrote in between",
            title="Version",
        ),
    ]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class UserId5(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user the plan is for",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class PlanCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    plan_id: Annotated[
        str,
        Field(
            description="the caller's id for the plan, unique in the tenant",
            pattern="^[A-Za-z0-9_.:-]{1,128}$",
            title="Plan Id",
        ),
    ]
    goal_event: Annotated[
        str,
        Field(
            description="the event that set the goal, e.g. trip.requested",
            max_length=256,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Goal Event",
        ),
    ]
    goal_data: Annotated[dict[str, Any] | None, Field(description="the goal's data", title="Goal Data")] = (
        None
    )
    status: Annotated[
        str | None,
        Field(
            description="lower-case, e.g. pending, running, done, failed",
            pattern="^[a-z0-9_-]{1,32}$",
            title="Status",
        ),
    ] = "pending"
    state: Annotated[Any | None, Field(description="any JSON the agents keep with the plan")] = None
    user_id: Annotated[UserId5 | None, Field(description="the user the plan is for", title="User Id")] = None


class PlanPage(BaseModel):
    plans: Annotated[list[Plan], Field(title="Plans")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class GoalEvent(RootModel[str]):
    root: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\x00]*$", title="Goal Event"),
    ]


class Status(RootModel[str]):
    root: Annotated[str, Field(pattern="^[a-z0-9_-]{1,32}$", title="Status")]


class UserId6(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class PlanUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    goal_event: Annotated[GoalEvent | None, Field(title="Goal Event")] = None
    goal_data: Annotated[dict[str, Any] | None, Field(title="Goal Data")] = None
    status: Annotated[Status | None, Field(title="Status")] = None
    state: Any | None = None
    user_id: Annotated[UserId6 | None, Field(title="User Id")] = None


class Procedure(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    kind: Annotated[Literal["rule", "example"], Field(title="Kind")]
    trigger: Annotated[str, Field(title="Trigger")]
    content: Annotated[str, Field(title="Content")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    visibility: Annotated[Literal["private", "tenant"], Field(title="Visibility")]
    user_id: Annotated[str | None, Field(title="User Id")]
    tags: Annotated[list[str], Field(title="Tags")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    embedding_model: Annotated[str | None, Field(title="Embedding Model")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class UserId7(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user it was learned from or is for: erased with them (DELETE /v1/users/{user_id}); it does not limit who reads it",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class ProcedureCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    kind: Annotated[
        Literal["rule", "example"] | None,
        Field(
            description="'rule': an instruction; 'example': a few-shot example",
            title="Kind",
        ),
    ] = "rule"
    trigger: Annotated[
        str,
        Field(
            description="the situation in which this procedure applies",
            pattern="^[^\\x00]*$",
            title="Trigger",
        ),
    ]
    content: Annotated[
        str,
        Field(
            description="the rule, or the example (input and output)",
            pattern="^[^\\x00]*$",
            title="Content",
        ),
    ]
    agent_id: Annotated[AgentId2 | None, Field(title="Agent Id")] = None
    visibility: Annotated[
        Literal["private", "tenant"] | None,
        Field(
            description="'private': only requests for agent_id see it",
            title="Visibility",
        ),
    ] = "tenant"
    user_id: Annotated[
        UserId7 | None,
        Field(
            description="the user it was learned from or is for: erased with them (DELETE /v1/users/{user_id}); it does not limit who reads it",
            title="User Id",
        ),
    ] = None
    tags: Annotated[list[Tag] | None, Field(max_length=50, title="Tags")] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None


class ProcedureMatch(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    kind: Annotated[Literal["rule", "example"], Field(title="Kind")]
    trigger: Annotated[str, Field(title="Trigger")]
    content: Annotated[str, Field(title="Content")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    visibility: Annotated[Literal["private", "tenant"], Field(title="Visibility")]
    user_id: Annotated[str | None, Field(title="User Id")]
    tags: Annotated[list[str], Field(title="Tags")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    embedding_model: Annotated[str | None, Field(title="Embedding Model")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]
    similarity: Annotated[float, Field(title="Similarity")]


class ProcedurePage(BaseModel):
    procedures: Annotated[list[Procedure], Field(title="Procedures")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class Trigger(RootModel[str]):
    root: Annotated[str, Field(pattern="^[^\\x00]*$", title="Trigger")]


class Tags1Item(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=100,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
        ),
    ]


class Tags1(RootModel[list[Tags1Item]]):
    root: Annotated[list[Tags1Item], Field(max_length=50, title="Tags")]


class ProcedurePatch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    kind: Annotated[Literal["rule", "example"] | None, Field(title="Kind")] = None
    trigger: Annotated[Trigger | None, Field(title="Trigger")] = None
    content: Annotated[Content2 | None, Field(title="Content")] = None
    visibility: Annotated[Literal["private", "tenant"] | None, Field(title="Visibility")] = None
    tags: Annotated[Tags1 | None, Field(title="Tags")] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None


class ProfileItem(BaseModel):
    id: Annotated[UUID, Field(description="the memory this line comes from", title="Id")]
    content: Annotated[str, Field(title="Content")]
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"],
        Field(title="Memory Type"),
    ]
    container: Annotated[str, Field(title="Container")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    valid_from: Annotated[
        AwareDatetime | None,
        Field(
            description="when what it says is true from: one later than now ends its line of `context` with (from DATE)",
            title="Valid From",
        ),
    ] = None
    score: Annotated[
        float | None,
        Field(description="search score, for relevant_memories", title="Score"),
    ] = None


class ProfileSubject(BaseModel):
    user_id: Annotated[str | None, Field(title="User Id")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    container: Annotated[str | None, Field(title="Container")]


class RecentMessages(BaseModel):
    session_id: Annotated[UUID, Field(title="Session Id")]
    messages: Annotated[
        list[Message],
        Field(description="the latest messages, oldest first", title="Messages"),
    ]


class RelatedLink(BaseModel):
    """
    A memory next to another one: through a memory relationship (`updates`, `extends`, `derives`;
    `outgoing` when the first memory is the newer side) or through entities both mention.
    """

    id: Annotated[UUID, Field(title="Id")]
    content: Annotated[str, Field(title="Content")]
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"],
        Field(title="Memory Type"),
    ]
    is_latest: Annotated[bool, Field(title="Is Latest")]
    valid_from: Annotated[AwareDatetime, Field(title="Valid From")]
    valid_to: Annotated[AwareDatetime | None, Field(title="Valid To")]
    relationship: Annotated[
        Literal["updates", "extends", "derives", "shares_entity"],
        Field(title="Relationship"),
    ]
    direction: Annotated[Literal["outgoing", "incoming", "shared"], Field(title="Direction")]
    depth: Annotated[
        int,
        Field(
            description="steps from the memory (shared entities: always 1)",
            title="Depth",
        ),
    ]
    via: Annotated[
        UUID | None,
        Field(
            description="the memory one step closer, when depth > 1; null when it is one the request may not see",
            title="Via",
        ),
    ] = None
    shared_entities: Annotated[list[str] | None, Field(title="Shared Entities")] = None


class RelatedMemories(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    related: Annotated[list[RelatedLink], Field(title="Related")]


class Relation(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    source: EntitySummary
    relation_type: Annotated[str, Field(title="Relation Type")]
    target: EntitySummary
    valid_from: Annotated[AwareDatetime, Field(title="Valid From")]
    valid_to: Annotated[
        AwareDatetime | None,
        Field(
            description="when it stopped holding, or when its source memory did",
            title="Valid To",
        ),
    ]
    current: Annotated[bool, Field(title="Current")]
    confidence: Annotated[float, Field(title="Confidence")]
    source_memory_id: Annotated[UUID | None, Field(title="Source Memory Id")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class RelationCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    source: Annotated[
        UUID | EntityRef,
        Field(description="an entity id, or {name, entity_type}", title="Source"),
    ]
    relation_type: Annotated[
        str,
        Field(
            description="lowercase_with_underscores: lives_in, works_for, ...",
            max_length=40,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Relation Type",
        ),
    ]
    target: Annotated[UUID | EntityRef, Field(title="Target")]
    valid_from: Annotated[AwareDatetime | None, Field(description="default: now", title="Valid From")] = None
    valid_to: Annotated[
        AwareDatetime | None,
        Field(
            description="after valid_from; without valid_from, in the future (valid_from is now)",
            title="Valid To",
        ),
    ] = None
    confidence: Annotated[float | None, Field(ge=0.0, le=1.0, title="Confidence")] = 1.0
    source_memory_id: Annotated[
        UUID | None,
        Field(description="the memory that states it, if any", title="Source Memory Id"),
    ] = None


class ScopeCleared(BaseModel):
    scope: Annotated[str, Field(title="Scope")]
    deleted: Annotated[int, Field(title="Deleted")]


class Scores(BaseModel):
    """
    How the result was scored. `fused` is the sum, over the search's `weights`, of each weight times
    the score of the same name here (a null score counts 0): every share that goes into it is a field.
    """

    vector: Annotated[
        float | None,
        Field(
            description="cosine similarity to the query, -1 to 1 (1: the same direction; unrelated texts score near 0, some below it), when the result has a vector of the query's model",
            title="Vector",
        ),
    ]
    text: Annotated[
        float | None,
        Field(
            description="BM25 over the best score the query allows (0-1), when the result holds a query term: what text mode ranks by. A message (scope messages): PostgreSQL's ts_rank_cd over 1 + the log of its length, as rank / (rank + 1), 0-1; in text mode, that counted as one word more beside the query's words it holds ((coverage * words + rank) / (words + 1)), so a message holding more of them ranks first and one holding all of them scores at least 0.5",
            title="Text",
        ),
    ]
    text_relative: Annotated[
        float | None,
        Field(
            description="hybrid mode: `text` over the best `text` among the search's candidates of the same kind (memories, chunks, messages), 0-1; null when the result holds no query term",
            title="Text Relative",
        ),
    ] = None
    coverage: Annotated[
        float | None,
        Field(
            description="hybrid mode: the share of the query's idf (inverse document frequency: a rare word weighs more than a common one) that the result's terms carry, 0-1; a message: the share of the query's words it holds, each alike (messages keep no term statistics); null when it holds no query term",
            title="Coverage",
        ),
    ] = None
    graph: Annotated[
        float | None,
        Field(
            description="hybrid mode, the entity graph: the share of the entities the query names (by name or alias) that the result mentions, an entity one relation away from them counting half, at most 1; null when it mentions none, or the query names no known entity",
            title="Graph",
        ),
    ] = None
    people: Annotated[
        float | None,
        Field(
            description="hybrid mode, memories: the share of the names the query writes (capitalised words other than its first: 'Tobias', \"Melanie's\") whose every word the memory's text holds, 0-1, whether or not an entity has that name; null when it holds none, or the query writes no name",
            title="People",
        ),
    ] = None
    time: Annotated[
        float | None,
        Field(
            description="hybrid mode, memories: 1 when the memory's text states the period the query names ('in June 2023', 'last June'), 0.5 when the memory is only from that period (its date); null otherwise, or when the query names no period",
            title="Time",
        ),
    ] = None
    fused: Annotated[
        float,
        Field(
            description="what ranks the results: the sum over the response's `weights` of weight x the score of that name here (null counts 0). Hybrid mode: vector, text_relative, coverage, graph, people and time, weighted; vector mode: vector; text mode: text",
            title="Fused",
        ),
    ]


class UserId8(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="only this user's memories (their user_id). Their private ones only when the request is also made for them (user_id)",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class SearchFilters(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    memory_type: Annotated[
        list[Literal["fact", "preference", "episode", "insight", "task", "procedure"]] | None,
        Field(max_length=6, title="Memory Type"),
    ] = None
    tags: Annotated[
        list[Tag] | None,
        Field(
            description="memories carrying all of these tags",
            max_length=50,
            title="Tags",
        ),
    ] = None
    agent_id: Annotated[AgentId2 | None, Field(title="Agent Id")] = None
    conversation_id: Annotated[ConversationId | None, Field(title="Conversation Id")] = None
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description="key/value pairs the metadata must contain", title="Metadata"),
    ] = None
    user_id: Annotated[
        UserId8 | None,
        Field(
            description="only this user's memories (their user_id). Their private ones only when the request is also made for them (user_id)",
            title="User Id",
        ),
    ] = None


class UserId9(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user the request is made for",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class Container6(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="'a.b' exactly, or 'a.b.*' for a.b and below",
            max_length=522,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}(\\.\\*)?$",
            title="Container",
        ),
    ]


class ScoreThreshold(RootModel[float]):
    root: Annotated[
        float,
        Field(
            description="leave out the results whose `score` is below it (a vector mode score below 0 always)",
            ge=0.0,
            le=1.0,
            title="Score Threshold",
        ),
    ]


class Embedding2Item(RootModel[float]):
    root: Annotated[float, Field(ge=-3.4028234663852886e38, le=3.4028234663852886e38)]


class Embedding2(RootModel[list[Embedding2Item]]):
    root: Annotated[
        list[Embedding2Item],
        Field(
            description="a query vector of your own, of embedding_model: the configured model, or one the searched rows have vectors of (memories': those sent with them; chunks': those they were embedded with; scope messages: the configured model); another model is a 422 on embedding_model that lists them. Scope all searches such a model in the kind that has its vectors only",
            max_length=16000,
            min_length=1,
            title="Embedding",
        ),
    ]


class SearchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    query: Annotated[str, Field(max_length=10000, min_length=1, pattern="^[^\\x00]*$", title="Query")]
    scope: Annotated[
        Literal["memories", "chunks", "all", "messages"] | None,
        Field(
            description="memories, chunks (of documents), all (both, ranked together), or messages (the user_id's conversation messages, with filters.agent_id)",
            title="Scope",
        ),
    ] = "all"
    user_id: Annotated[
        UserId9 | None,
        Field(description="the user the request is made for", title="User Id"),
    ] = None
    container: Annotated[
        Container6 | None,
        Field(description="'a.b' exactly, or 'a.b.*' for a.b and below", title="Container"),
    ] = None
    limit: Annotated[int | None, Field(ge=1, le=100, title="Limit")] = 10
    score_threshold: Annotated[
        ScoreThreshold | None,
        Field(
            description="leave out the results whose `score` is below it (a vector mode score below 0 always)",
            title="Score Threshold",
        ),
    ] = None
    mode: Annotated[Literal["hybrid", "vector", "text"] | None, Field(title="Mode")] = "hybrid"
    filters: SearchFilters | None = None
    embedding: Annotated[
        Embedding2 | None,
        Field(
            description="a query vector of your own, of embedding_model: the configured model, or one the searched rows have vectors of (memories': those sent with them; chunks': those they were embedded with; scope messages: the configured model); another model is a 422 on embedding_model that lists them. Scope all searches such a model in the kind that has its vectors only",
            title="Embedding",
        ),
    ] = None
    embedding_model: Annotated[EmbeddingModel | None, Field(title="Embedding Model")] = None
    as_of: Annotated[
        AwareDatetime | None,
        Field(
            description="return the memories valid at this time, and the document chunks created by then (a chunk is valid from its creation, its valid_from, whatever its document's document_date) (not with scope 'messages')",
            title="As Of",
        ),
    ] = None
    include_history: Annotated[
        bool | None,
        Field(
            description="also return superseded memories; chunks have no versions: they are returned alike (not with scope 'messages')",
            title="Include History",
        ),
    ] = False
    include_related: Annotated[
        bool | None,
        Field(
            description="attach each memory result's neighbours, with the relationship type (not with scope 'messages')",
            title="Include Related",
        ),
    ] = False


class SearchResult(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    kind: Annotated[
        Literal["memory", "chunk"] | None,
        Field(description="a memory, or a chunk of a document", title="Kind"),
    ] = "memory"
    document_id: Annotated[
        UUID | None,
        Field(description="the document a chunk or memory came from", title="Document Id"),
    ] = None
    content: Annotated[str, Field(title="Content")]
    memory_type: Annotated[
        Literal["fact", "preference", "episode", "insight", "task", "procedure"] | None,
        Field(description="null for chunks", title="Memory Type"),
    ]
    container: Annotated[str, Field(title="Container")]
    tags: Annotated[list[str], Field(title="Tags")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    conversation_id: Annotated[str | None, Field(title="Conversation Id")]
    is_latest: Annotated[bool, Field(title="Is Latest")]
    valid_from: Annotated[AwareDatetime, Field(title="Valid From")]
    valid_to: Annotated[
        AwareDatetime | None,
        Field(
            description="when this stopped being true (superseded), if it has",
            title="Valid To",
        ),
    ]
    user_id: Annotated[str | None, Field(title="User Id")]
    visibility: Annotated[Literal["private", "tenant"], Field(title="Visibility")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    score: Annotated[
        float,
        Field(
            description="what score_threshold applies to: in hybrid mode a calibrated probability that the result is relevant (0-1, fitted on SciFact's train split), in vector mode the cosine similarity (scores.vector, -1 to 1: below 0 for a vector pointing away from the query's), in text mode scores.text (0-1)",
            title="Score",
        ),
    ]
    scores: Scores
    related: Annotated[
        list[RelatedLink] | None,
        Field(
            description="with include_related: this memory's neighbours (depth 1)",
            title="Related",
        ),
    ] = None


class Session(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    user_id: Annotated[str | None, Field(title="User Id")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    container: Annotated[str, Field(title="Container")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    message_count: Annotated[int, Field(title="Message Count")]
    last_message_at: Annotated[AwareDatetime | None, Field(title="Last Message At")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class UserId10(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user in this conversation",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class AgentId6(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the agent in this conversation",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="Agent Id",
        ),
    ]


class SessionCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    user_id: Annotated[
        UserId10 | None,
        Field(description="the user in this conversation", title="User Id"),
    ] = None
    agent_id: Annotated[
        AgentId6 | None,
        Field(description="the agent in this conversation", title="Agent Id"),
    ] = None
    container: Annotated[
        str | None,
        Field(
            description="where extracted memories are stored",
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ] = "default"
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None


class SessionSummary(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    user_id: Annotated[str | None, Field(title="User Id")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    container: Annotated[str, Field(title="Container")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    message_count: Annotated[int, Field(title="Message Count")]
    last_message_at: Annotated[AwareDatetime | None, Field(title="Last Message At")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]
    last_message: LastMessage | None


class Subgraph(BaseModel):
    root: Annotated[UUID, Field(title="Root")]
    depth: Annotated[int, Field(title="Depth")]
    nodes: Annotated[
        list[GraphNode],
        Field(description="this page's entities, nearest first", title="Nodes"),
    ]
    edges: Annotated[
        list[Relation],
        Field(
            description="relations between this page's entities and earlier ones",
            title="Edges",
        ),
    ]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]
    truncated: Annotated[
        bool,
        Field(
            description="the walk hit its row limit: entities further out were not reached",
            title="Truncated",
        ),
    ]
    edges_truncated: Annotated[
        bool,
        Field(
            description="this page has more relations than one answer holds",
            title="Edges Truncated",
        ),
    ]


class TaskContext(BaseModel):
    task_id: Annotated[str, Field(title="Task Id")]
    plan_id: Annotated[str | None, Field(title="Plan Id")]
    event_type: Annotated[str, Field(title="Event Type")]
    response_event: Annotated[str | None, Field(title="Response Event")]
    response_topic: Annotated[str | None, Field(title="Response Topic")]
    data: Annotated[dict[str, Any], Field(title="Data")]
    sub_tasks: Annotated[list[str], Field(title="Sub Tasks")]
    state: Annotated[Any, Field(title="State")]
    version: Annotated[
        int,
        Field(
            description="send it back in If-Match to write only if nobody wrote in between",
            title="Version",
        ),
    ]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class PlanId1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the plan the task belongs to",
            pattern="^[A-Za-z0-9_.:-]{1,128}$",
            title="Plan Id",
        ),
    ]


class ResponseEvent(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the event to answer with",
            max_length=256,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Response Event",
        ),
    ]


class ResponseTopic(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="where to send the answer",
            max_length=512,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Response Topic",
        ),
    ]


class SubTask(RootModel[str]):
    root: Annotated[str, Field(pattern="^[A-Za-z0-9_.:-]{1,128}$")]


class TaskContextCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    task_id: Annotated[
        str,
        Field(
            description="the caller's id for the task, unique in the tenant",
            pattern="^[A-Za-z0-9_.:-]{1,128}$",
            title="Task Id",
        ),
    ]
    plan_id: Annotated[
        PlanId1 | None,
        Field(description="the plan the task belongs to", title="Plan Id"),
    ] = None
    event_type: Annotated[
        str,
        Field(
            description="the event the task handles",
            max_length=256,
            min_length=1,
            pattern="^[^\\x00]*$",
            title="Event Type",
        ),
    ]
    response_event: Annotated[
        ResponseEvent | None,
        Field(description="the event to answer with", title="Response Event"),
    ] = None
    response_topic: Annotated[
        ResponseTopic | None,
        Field(description="where to send the answer", title="Response Topic"),
    ] = None
    data: Annotated[dict[str, Any] | None, Field(title="Data")] = None
    sub_tasks: Annotated[
        list[SubTask] | None,
        Field(
            description="ids of the sub-tasks it waits for; each belongs to one task",
            max_length=1000,
            title="Sub Tasks",
        ),
    ] = None
    state: Any | None = None


class TaskContextPage(BaseModel):
    task_contexts: Annotated[list[TaskContext], Field(title="Task Contexts")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class PlanId2(RootModel[str]):
    root: Annotated[str, Field(pattern="^[A-Za-z0-9_.:-]{1,128}$", title="Plan Id")]


class EventType(RootModel[str]):
    root: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\x00]*$", title="Event Type"),
    ]


class ResponseEvent1(RootModel[str]):
    root: Annotated[
        str,
        Field(max_length=256, min_length=1, pattern="^[^\\x00]*$", title="Response Event"),
    ]


class ResponseTopic1(RootModel[str]):
    root: Annotated[
        str,
        Field(max_length=512, min_length=1, pattern="^[^\\x00]*$", title="Response Topic"),
    ]


class SubTasks(RootModel[list[SubTask]]):
    root: Annotated[
        list[SubTask],
        Field(description="replaces the list", max_length=1000, title="Sub Tasks"),
    ]


class TaskContextUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    plan_id: Annotated[PlanId2 | None, Field(title="Plan Id")] = None
    event_type: Annotated[EventType | None, Field(title="Event Type")] = None
    response_event: Annotated[ResponseEvent1 | None, Field(title="Response Event")] = None
    response_topic: Annotated[ResponseTopic1 | None, Field(title="Response Topic")] = None
    data: Annotated[dict[str, Any] | None, Field(title="Data")] = None
    sub_tasks: Annotated[SubTasks | None, Field(description="replaces the list", title="Sub Tasks")] = None
    state: Any | None = None


class TypeCount(BaseModel):
    memory_type: Annotated[str, Field(title="Memory Type")]
    count: Annotated[int, Field(title="Count")]


class ContentType1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            max_length=200,
            min_length=3,
            pattern="^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\\s*;[^\\x00]*[^\\s\\x00])?$",
            title="Content Type",
        ),
    ] = None


class UploadRequest(BaseModel):
    """
    AWS: ask for a presigned PUT; the object then goes through the S3 drop pipeline.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    filename: Annotated[
        str,
        Field(max_length=255, min_length=1, pattern="^[^\\x00/\\\\]+$", title="Filename"),
    ]
    container: Annotated[
        str | None,
        Field(
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ] = "default"
    content_type: Annotated[ContentType1 | None, Field(title="Content Type")] = None


class UploadTicket(BaseModel):
    method: Annotated[Literal["PUT"], Field(title="Method")] = "PUT"
    url: Annotated[str, Field(title="Url")]
    key: Annotated[str, Field(title="Key")]
    headers: Annotated[dict[str, str], Field(title="Headers")]
    expires_in: Annotated[int, Field(description="seconds the URL stays valid", title="Expires In")]


class UpsertResult(BaseModel):
    status: Annotated[Literal["created", "updated", "unchanged"], Field(title="Status")]
    id: Annotated[
        UUID,
        Field(
            description="the current memory: the new one, or the existing one when unchanged",
            title="Id",
        ),
    ]
    matched_id: Annotated[
        UUID | None,
        Field(
            description="the existing memory that matched, if any: the similar one it updates, or the first one graph-link found it contradicts",
            title="Matched Id",
        ),
    ] = None
    similarity: Annotated[float | None, Field(title="Similarity")] = None
    superseded: Annotated[
        list[UUID] | None,
        Field(
            description="the memories this write retired (kept as history)",
            title="Superseded",
        ),
    ] = None


class UserErasure(BaseModel):
    user_id: Annotated[str, Field(title="User Id")]
    erased: Annotated[
        bool,
        Field(
            description="false: the counts are what ?confirm=true would remove",
            title="Erased",
        ),
    ]
    memories: Annotated[int, Field(description="the user's memories, every version", title="Memories")]
    entity_mentions: Annotated[
        int,
        Field(
            description="links from those memories to the entities they mention",
            title="Entity Mentions",
        ),
    ]
    entity_relations: Annotated[
        int,
        Field(
            description="relations extracted from those memories",
            title="Entity Relations",
        ),
    ]
    entities: Annotated[
        int,
        Field(
            description="entities only those memories named (none of anybody else's does)",
            title="Entities",
        ),
    ]
    sessions: Annotated[int, Field(title="Sessions")]
    messages: Annotated[int, Field(title="Messages")]
    working_keys: Annotated[int, Field(title="Working Keys")]
    procedures: Annotated[int, Field(title="Procedures")]
    documents: Annotated[
        int,
        Field(
            description="documents the user uploaded, with the memories only they gave",
            title="Documents",
        ),
    ]
    chunks: Annotated[int, Field(title="Chunks")]
    plans: Annotated[int, Field(title="Plans")]
    task_contexts: Annotated[
        int,
        Field(description="the task contexts of the user's plans", title="Task Contexts"),
    ]
    containers: Annotated[
        int,
        Field(
            description="containers left empty that only held what was erased",
            title="Containers",
        ),
    ]


class Webhook(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    url: Annotated[str, Field(title="Url")]
    events: Annotated[
        list[
            Literal[
                "memory.created",
                "memory.updated",
                "memory.superseded",
                "memory.deleted",
                "document.done",
                "document.failed",
                "session.summarized",
            ]
        ],
        Field(title="Events"),
    ]
    description: Annotated[str, Field(title="Description")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]


class WebhookCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    url: Annotated[
        str,
        Field(
            description="where each event is POSTed (http or https)",
            max_length=2048,
            min_length=8,
            pattern="^[^\\x00]*$",
            title="Url",
        ),
    ]
    events: Annotated[
        list[
            Literal[
                "memory.created",
                "memory.updated",
                "memory.superseded",
                "memory.deleted",
                "document.done",
                "document.failed",
                "session.summarized",
            ]
        ],
        Field(
            description="the event types to receive",
            max_length=7,
            min_length=1,
            title="Events",
        ),
    ]
    description: Annotated[str | None, Field(max_length=500, pattern="^[^\\x00]*$", title="Description")] = ""


class WebhookCreated(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    url: Annotated[str, Field(title="Url")]
    events: Annotated[
        list[
            Literal[
                "memory.created",
                "memory.updated",
                "memory.superseded",
                "memory.deleted",
                "document.done",
                "document.failed",
                "session.summarized",
            ]
        ],
        Field(title="Events"),
    ]
    description: Annotated[str, Field(title="Description")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    secret: Annotated[
        str,
        Field(
            description="signs every delivery: x-engram-signature: sha256=<hex HMAC-SHA256 of the body with this secret>. Shown once: store it now",
            title="Secret",
        ),
    ]


class WebhookDetail(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    url: Annotated[str, Field(title="Url")]
    events: Annotated[
        list[
            Literal[
                "memory.created",
                "memory.updated",
                "memory.superseded",
                "memory.deleted",
                "document.done",
                "document.failed",
                "session.summarized",
            ]
        ],
        Field(title="Events"),
    ]
    description: Annotated[str, Field(title="Description")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    deliveries: DeliveryCounts
    recent_failures: Annotated[
        list[DeliveryAttempt],
        Field(
            description="the latest deliveries whose last try failed (pending retries and given up), newest first",
            title="Recent Failures",
        ),
    ]


class WebhookList(BaseModel):
    webhooks: Annotated[list[Webhook], Field(title="Webhooks")]


class WorkingItem(BaseModel):
    scope: Annotated[str, Field(title="Scope")]
    key: Annotated[str, Field(title="Key")]
    value: Annotated[Any, Field(title="Value")]
    version: Annotated[
        int,
        Field(
            description="send it back in If-Match to write only if nobody wrote in between",
            title="Version",
        ),
    ]
    expires_at: Annotated[AwareDatetime | None, Field(title="Expires At")]
    user_id: Annotated[str | None, Field(title="User Id")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]


class TtlSeconds(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="the key expires this long after the write. Left out, an existing key keeps its expiry; null: it never expires",
            ge=1,
            le=31622400,
            title="Ttl Seconds",
        ),
    ]


class UserId11(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="the user this state belongs to: erased with them (DELETE /v1/users/{user_id}). A write for a user never takes a key of another user (409 on user_id); one of no user becomes theirs. Left out, an existing key keeps its user; null: none",
            max_length=255,
            min_length=1,
            pattern="^[^\\s\\x00](?:[^\\x00]*[^\\s\\x00])?$",
            title="User Id",
        ),
    ]


class WorkingPut(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    value: Annotated[Any, Field(description="any JSON value, null included")]
    ttl_seconds: Annotated[
        TtlSeconds | None,
        Field(
            description="the key expires this long after the write. Left out, an existing key keeps its expiry; null: it never expires",
            title="Ttl Seconds",
        ),
    ] = None
    user_id: Annotated[
        UserId11 | None,
        Field(
            description="the user this state belongs to: erased with them (DELETE /v1/users/{user_id}). A write for a user never takes a key of another user (409 on user_id); one of no user becomes theirs. Left out, an existing key keeps its user; null: none",
            title="User Id",
        ),
    ] = None


class WorkingScope(BaseModel):
    scope: Annotated[str, Field(title="Scope")]
    items: Annotated[list[WorkingItem], Field(title="Items")]
    next_after: Annotated[
        str | None,
        Field(
            description="pass as ?after= for the next page; null on the last page",
            title="Next After",
        ),
    ]


class AgentContext(BaseModel):
    context: Annotated[
        str,
        Field(
            description="ready to paste into a prompt: sections in priority order, each line ending with [source:id]",
            title="Context",
        ),
    ]
    items: Annotated[
        list[ContextItem],
        Field(description="the lines of `context`, in order", title="Items"),
    ]
    token_estimate: Annotated[int, Field(title="Token Estimate")]
    max_tokens: Annotated[int, Field(title="Max Tokens")]
    omitted: Annotated[
        int,
        Field(
            description="candidate lines that did not fit in the budget",
            title="Omitted",
        ),
    ]


class AppendResult(BaseModel):
    session_id: Annotated[UUID, Field(title="Session Id")]
    messages: Annotated[list[Message], Field(title="Messages")]
    extracted_memory_ids: Annotated[
        list[UUID],
        Field(
            description="memories created or updated by extraction",
            title="Extracted Memory Ids",
        ),
    ]
    extraction: Annotated[
        ExtractionReport | None,
        Field(description="null when the append asked for none"),
    ]


class Conversation(BaseModel):
    session: Session
    messages: Annotated[list[Message], Field(title="Messages")]
    next_after: Annotated[
        int | None,
        Field(
            description="pass as ?after= for the rest; null when complete",
            title="Next After",
        ),
    ]
    summary: Annotated[
        ConversationSummary | None,
        Field(description="the rolling summary; null until the first one is written"),
    ] = None


class Document(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    container: Annotated[str, Field(title="Container")]
    status: Annotated[
        Literal[
            "queued",
            "extracting",
            "chunking",
            "embedding",
            "indexing",
            "done",
            "failed",
        ],
        Field(title="Status"),
    ]
    content_type: Annotated[str | None, Field(title="Content Type")]
    source_kind: Annotated[Literal["inline", "url", "file", "s3", "drop"], Field(title="Source Kind")]
    source: Annotated[str, Field(title="Source")]
    filename: Annotated[str | None, Field(title="Filename")]
    title: Annotated[str | None, Field(title="Title")]
    tags: Annotated[list[str], Field(title="Tags")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    checksum: Annotated[str | None, Field(title="Checksum")]
    size_bytes: Annotated[int | None, Field(title="Size Bytes")]
    custom_id: Annotated[str | None, Field(title="Custom Id")]
    user_id: Annotated[str | None, Field(title="User Id")]
    extract: Annotated[Literal["none", "light", "full"], Field(title="Extract")]
    document_date: Annotated[AwareDatetime | None, Field(title="Document Date")]
    extraction: Annotated[
        dict[str, Any],
        Field(
            description="what llm-extract used and spent: extractor, input_tokens, output_tokens, llm_calls",
            title="Extraction",
        ),
    ]
    revision: Annotated[int, Field(title="Revision")]
    chunk_count: Annotated[int, Field(title="Chunk Count")]
    memory_count: Annotated[int, Field(title="Memory Count")]
    error: DocumentError | None
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    updated_at: Annotated[AwareDatetime, Field(title="Updated At")]
    finished_at: Annotated[AwareDatetime | None, Field(title="Finished At")]


class DocumentCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    content: Annotated[Content | None, Field(description="the document's text", title="Content")] = None
    url: Annotated[Url | None, Field(description="an http(s) page or file to fetch", title="Url")] = None
    file_base64: Annotated[
        FileBase64 | None,
        Field(description="a file's bytes, base64; send filename too", title="File Base64"),
    ] = None
    filename: Annotated[Filename | None, Field(title="Filename")] = None
    content_type: Annotated[
        ContentType | None,
        Field(description="detected from the bytes when missing", title="Content Type"),
    ] = None
    title: Annotated[Title | None, Field(title="Title")] = None
    container: Annotated[
        str | None,
        Field(
            max_length=520,
            pattern="^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$",
            title="Container",
        ),
    ] = "default"
    tags: Annotated[list[Tag] | None, Field(max_length=50, title="Tags")] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    custom_id: Annotated[
        CustomId | None,
        Field(
            description="your id: sending it again replaces the document (same content: no-op)",
            title="Custom Id",
        ),
    ] = None
    user_id: Annotated[
        UserId1 | None,
        Field(
            description="the user who uploads it: the document and the memories extracted from it are theirs (user_id, visible to the tenant), erased with them (DELETE /v1/users/{user_id})",
            title="User Id",
        ),
    ] = None
    extract: Annotated[
        Literal["none", "light", "full"] | None,
        Field(
            description="memories from the chunks: none (chunks only), light (offline heuristic) or full (the configured LLM); default: full when an LLM provider is configured, else light",
            title="Extract",
        ),
    ] = None
    document_date: Annotated[
        AwareDatetime | None,
        Field(
            description="when the content was written (ISO 8601); relative dates in the text are read against it, and it is a memory's valid_from when the text states none. Default: now",
            title="Document Date",
        ),
    ] = None


class DocumentPage(BaseModel):
    documents: Annotated[list[Document], Field(title="Documents")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class EntityDetail(BaseModel):
    entity: Entity
    observations: Annotated[list[Observation], Field(title="Observations")]
    observations_next_cursor: Annotated[str | None, Field(title="Observations Next Cursor")]
    relations: Annotated[list[Relation], Field(title="Relations")]
    relations_next_cursor: Annotated[str | None, Field(title="Relations Next Cursor")]


class ErrorDetail(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    code: Annotated[str, Field(description="stable, machine-readable: not_found, ...")]
    message: Annotated[str, Field(description="what went wrong and what to do about it")]
    field: Annotated[str | None, Field(description="the input at fault, e.g. filters.tags[0]")] = None
    errors: list[FieldError] | None = None
    current_version: Annotated[
        int | None,
        Field(description="on a version conflict: the item's version (null: it does not exist)"),
    ] = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ImportJob(BaseModel):
    id: Annotated[str, Field(title="Id")]
    status: Annotated[Literal["awaiting_upload", "running", "done", "failed"], Field(title="Status")]
    status_url: Annotated[
        str,
        Field(description="GET it until the status is done or failed", title="Status Url"),
    ]
    upload_url: Annotated[
        str | None,
        Field(
            description="awaiting_upload: PUT the export file here (Content-Type: application/x-ndjson)",
            title="Upload Url",
        ),
    ] = None
    expires_in: Annotated[
        int | None,
        Field(description="seconds the upload URL stays valid", title="Expires In"),
    ] = None
    report: ImportReport | None = None
    error: Annotated[str | None, Field(title="Error")] = None


class ListRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    user_id: Annotated[
        UserId2 | None,
        Field(description="the user the request is made for", title="User Id"),
    ] = None
    container: Annotated[Container5 | None, Field(title="Container")] = None
    filters: SearchFilters | None = None
    limit: Annotated[int | None, Field(ge=1, le=100, title="Limit")] = 20
    cursor: Annotated[Cursor | None, Field(title="Cursor")] = None


class MatchResponse(BaseModel):
    situation: Annotated[str, Field(title="Situation")]
    matches: Annotated[list[ProcedureMatch], Field(title="Matches")]


class MemoryBatch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    memories: Annotated[
        list[MemoryCreate],
        Field(
            description="1 to 100 memories, each as POST /v1/memories takes it: stored all or none, in this order",
            max_length=100,
            min_length=1,
            title="Memories",
        ),
    ]


class MessageSearchResult(BaseModel):
    id: Annotated[UUID, Field(title="Id")]
    session_id: Annotated[UUID, Field(title="Session Id")]
    seq: Annotated[int, Field(title="Seq")]
    role: Annotated[Literal["user", "assistant", "system", "tool"], Field(title="Role")]
    content: Annotated[str, Field(title="Content")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    user_id: Annotated[str | None, Field(title="User Id")]
    agent_id: Annotated[str | None, Field(title="Agent Id")]
    created_at: Annotated[AwareDatetime, Field(title="Created At")]
    score: Annotated[
        float,
        Field(
            description="what score_threshold applies to, as for memories: in hybrid mode a calibrated probability that the message is relevant (0-1, from scores.fused), in vector mode scores.vector (a cosine similarity, -1 to 1), in text mode scores.text (0-1)",
            title="Score",
        ),
    ]
    scores: Scores


class Profile(BaseModel):
    subject: ProfileSubject
    static_facts: Annotated[
        list[ProfileItem],
        Field(
            description="latest facts and preferences, near-duplicates removed",
            title="Static Facts",
        ),
    ]
    recent_context: Annotated[
        list[ProfileItem],
        Field(description="the most recent episodes and tasks", title="Recent Context"),
    ]
    relevant_memories: Annotated[
        list[ProfileItem] | None,
        Field(
            description="search results for q; null without q",
            title="Relevant Memories",
        ),
    ]
    context: Annotated[
        str,
        Field(
            description="ready to paste into a prompt; every line ends with [memory:<id>]",
            title="Context",
        ),
    ]
    token_estimate: Annotated[
        int,
        Field(
            description="tokens in context, estimated at 4 characters per token",
            title="Token Estimate",
        ),
    ]
    max_tokens: Annotated[int, Field(title="Max Tokens")]
    omitted: Annotated[
        int,
        Field(description="items that did not fit in the token budget", title="Omitted"),
    ]


class SearchResponse(BaseModel):
    query: Annotated[str, Field(title="Query")]
    results: Annotated[list[SearchResult], Field(title="Results")]
    total: Annotated[
        int,
        Field(
            description="the number of results in this answer, len(results) (after limit and score_threshold): not a count of every match, and there are no further pages",
            title="Total",
        ),
    ]
    weights: Annotated[
        dict[str, float],
        Field(
            description="the weight of each score the fused score adds up, by its name in `scores`: every result's scores.fused is the sum of weight x scores.<name> over these (a null score counts 0). Hybrid mode: vector, text_relative, coverage, graph, people, time; vector mode: vector 1; text mode: text 1",
            title="Weights",
        ),
    ]


class SessionPage(BaseModel):
    sessions: Annotated[list[SessionSummary], Field(title="Sessions")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class Stats(BaseModel):
    total: Annotated[int, Field(title="Total")]
    containers: Annotated[list[ContainerCount], Field(title="Containers")]
    memory_types: Annotated[list[TypeCount], Field(title="Memory Types")]
    by_container_and_type: Annotated[list[ContainerTypeCount], Field(title="By Container And Type")]
    embeddings: EmbeddingCoverage


class MessageSearchResponse(BaseModel):
    query: Annotated[str, Field(title="Query")]
    scope: Annotated[Literal["messages"], Field(title="Scope")] = "messages"
    results: Annotated[list[MessageSearchResult], Field(title="Results")]
    total: Annotated[
        int,
        Field(
            description="the number of results in this answer, len(results) (after limit and score_threshold): not a count of every match, and there are no further pages",
            title="Total",
        ),
    ]
    weights: Annotated[
        dict[str, float],
        Field(
            description="the weight of each score the fused score adds up, by its name in `scores`, as for memories: hybrid mode vector, text_relative and coverage; vector mode: vector 1; text mode: text 1",
            title="Weights",
        ),
    ]


ContainerNode.model_rebuild()
