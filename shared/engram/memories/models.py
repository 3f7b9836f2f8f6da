"""Request and response models of the memories API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from engram.fields import (
    DirectedVector,
    Flag,
    Integer,
    JsonObject,
    Label,
    NoNul,
    Number,
    Timestamp,
    not_blank,
    not_null,
)
from engram.lazymodel import LazyModel
from engram.pagination import MAX_CURSOR_CHARS

MAX_CONTENT_BYTES = 100 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_EMBEDDING_DIMENSIONS = 16_000
CONTAINER_PATTERN = r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}$"
CONTAINER_QUERY_PATTERN = r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}(\.\*)?$"

MemoryType = Literal["fact", "preference", "episode", "insight", "task", "procedure"]
SearchMode = Literal["hybrid", "vector", "text"]
Visibility = Literal["private", "tenant"]
# memories and chunks (documents) are ranked together; messages are a user's conversation messages.
SearchScope = Literal["memories", "chunks", "all", "messages"]
ResultKind = Literal["memory", "chunk"]
UpsertStatus = Literal["created", "updated", "unchanged"]
ExtractMode = Literal["none", "light", "full"]
MAX_BATCH_MEMORIES = 100

_EXTRACT = (
    "find the memory's entities and relations and relate it to the owner's older memories, as for "
    "documents and messages (graph-link: a changed fact retires the old one): 'light' the offline "
    "heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, "
    "else 'light'. The content is stored as sent either way"
)


def _content_fits(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    size = len(value.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise ValueError(f"is {size} bytes; a single memory holds at most {MAX_CONTENT_BYTES} bytes (100 KB)")
    return value


def _metadata_fits(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    encoded = json.dumps(value, ensure_ascii=False)
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise ValueError(f"is larger than {MAX_METADATA_BYTES} bytes of JSON")
    return value


Content = Annotated[str, *NoNul, AfterValidator(_content_fits)]
ContainerName = Annotated[str, StringConstraints(pattern=CONTAINER_PATTERN, max_length=520)]
ContainerQuery = Annotated[str, StringConstraints(pattern=CONTAINER_QUERY_PATTERN, max_length=522)]
# Tags are kept exactly as sent; one with whitespace at either end is refused, never trimmed.
Tag = Annotated[Label, StringConstraints(min_length=1, max_length=100)]
# An id a caller names (user_id, agent_id, conversation_id): a party, matched exactly, so " alice" would
# be another user than "alice": whitespace at either end is refused as for a tag, never trimmed.
Identifier = Annotated[Label, StringConstraints(min_length=1, max_length=255)]
# An id as stored: what an export holds, restored as it was (ids stored before the rule above may have
# whitespace at an end; a backup that holds one still restores).
StoredIdentifier = Annotated[str, StringConstraints(min_length=1, max_length=255), *NoNul]
Metadata = Annotated[JsonObject, AfterValidator(_metadata_fits)]
Vector = Annotated[DirectedVector, Field(min_length=1, max_length=MAX_EMBEDDING_DIMENSIONS)]
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=200), *NoNul]
Cursor = Annotated[str, StringConstraints(max_length=MAX_CURSOR_CHARS), *NoNul]
QueryText = Annotated[
    str, StringConstraints(min_length=1, max_length=10_000), *NoNul, AfterValidator(not_blank)
]
"""What a search is asked (and a context's query, a procedure match's situation): text to embed and
match, so never empty or only whitespace. On the field, so that the 422 names it."""


class _Strict(LazyModel):
    # Unknown fields are an error: a typo in a filter must not silently widen a search.
    model_config = ConfigDict(extra="forbid")


def _embedding_pair(embedding: list[float] | None, model: str | None) -> None:
    if (embedding is None) != (model is None):
        raise ValueError("embedding and embedding_model go together: send both or neither")


class MemoryCreate(_Strict):
    content: Content
    container: ContainerName = "default"
    memory_type: MemoryType = "fact"
    tags: list[Tag] = Field(default_factory=list, max_length=50)
    metadata: Metadata = Field(default_factory=dict)
    agent_id: Identifier | None = None
    conversation_id: Identifier | None = None
    user_id: Identifier | None = Field(default=None, description="the user this memory is about and for")
    visibility: Visibility = Field(
        default="tenant", description="'private': seen only by requests made for user_id; 'tenant': by all"
    )
    confidence: Number = Field(default=1.0, ge=0.0, le=1.0)
    valid_from: Timestamp | None = None
    expires_at: Timestamp | None = None
    embedding: Vector | None = Field(default=None, repr=False)  # see SearchRequest.embedding
    embedding_model: ModelName | None = None
    supersedes: UUID | None = Field(
        default=None,
        description="the id of the memory this one replaces: it stays as history, no longer current",
    )
    extract: ExtractMode | None = Field(default=None, description=_EXTRACT)

    @field_validator("expires_at")
    @classmethod
    def _expires_after_it_begins(cls, expires_at: datetime | None, info: ValidationInfo) -> datetime | None:
        # valid_from defaults to the time of the write. A memory that expires before it begins is found by
        # no read and no as_of; one that expired later than it began is history as_of still finds.
        begins = info.data.get("valid_from") or datetime.now(UTC)
        if expires_at is not None and expires_at <= begins:
            raise ValueError(
                f"must come after valid_from ({begins.isoformat()}): a memory that expires before it "
                "begins is never found, at any as_of"
            )
        return expires_at

    @model_validator(mode="after")
    def _pair(self) -> MemoryCreate:
        _embedding_pair(self.embedding, self.embedding_model)
        if self.visibility == "private" and self.user_id is None:
            raise ValueError("visibility 'private' needs a user_id: private memories belong to a user")
        return self


class MemoryUpsert(MemoryCreate):
    supersedes: None = Field(
        default=None,
        description="not accepted here: upsert decides itself which memory it updates. To replace a "
        "given memory, POST /v1/memories with supersedes",
    )
    dedupe_threshold: Number = Field(
        default=0.95,
        gt=0.0,
        le=1.0,
        description="an existing memory at least this similar (cosine) is the same memory",
    )

    @field_validator("supersedes", mode="before")
    @classmethod
    def _no_supersedes(cls, value: Any) -> None:
        if value is not None:
            raise ValueError(
                "upsert does not take supersedes: it finds the memory it updates itself (status "
                "'updated'). To replace a given memory, POST /v1/memories with supersedes"
            )
        return None


class UpsertResult(LazyModel):
    status: UpsertStatus
    id: UUID = Field(description="the current memory: the new one, or the existing one when unchanged")
    matched_id: UUID | None = Field(
        default=None,
        description="the existing memory that matched, if any: the similar one it updates, or the first "
        "one graph-link found it contradicts",
    )
    similarity: float | None = None
    superseded: list[UUID] = Field(
        default_factory=list, description="the memories this write retired (kept as history)"
    )


class MemoryBatch(_Strict):
    memories: list[MemoryCreate] = Field(
        min_length=1,
        max_length=MAX_BATCH_MEMORIES,
        description=f"1 to {MAX_BATCH_MEMORIES} memories, each as POST /v1/memories takes it: stored all "
        "or none, in this order",
    )


class MemoryPatch(_Strict):
    content: Content | None = Field(
        default=None,
        description="new text: a new version, as supersedes makes one (the memory stays as history); "
        "the answer is the new version",
    )
    tags: list[Tag] | None = Field(default=None, max_length=50)
    metadata: Metadata | None = None
    memory_type: MemoryType | None = None
    expires_at: Timestamp | None = None
    visibility: Visibility | None = None
    extract: ExtractMode | None = Field(default=None, description=f"with content: {_EXTRACT}")

    _not_null = field_validator("content", "tags", "metadata", "memory_type", "visibility")(not_null)

    @model_validator(mode="after")
    def _something_to_change(self) -> MemoryPatch:
        if not self.model_fields_set - {"extract"}:
            raise ValueError(
                "nothing to change: send at least one of content, tags, metadata, memory_type, expires_at, "
                "visibility"
            )
        if self.extract is not None and self.content is None:
            raise ValueError("extract applies to new content: send content with it")
        return self


class Memory(LazyModel):
    id: UUID
    content: str
    container: str
    memory_type: MemoryType
    tags: list[str]
    metadata: dict[str, Any]
    agent_id: str | None
    conversation_id: str | None
    user_id: str | None
    visibility: Visibility
    confidence: float
    is_latest: bool
    valid_from: datetime
    valid_to: datetime | None
    expires_at: datetime | None
    reverted_at: datetime | None
    embedding_model: str | None
    created_at: datetime
    updated_at: datetime


class CreatedMemory(Memory):
    superseded: list[UUID] = Field(
        default_factory=list,
        description="the memories this write retired (kept as history): the one it supersedes (for a "
        "PATCH of content, the patched memory), and those graph-link found it contradicts",
    )


class MemoryBatchResult(LazyModel):
    memories: list[CreatedMemory] = Field(description="the stored memories, in the order sent")


class MemoryHistory(LazyModel):
    id: UUID
    versions: list[Memory] = Field(description="the version chain through `updates` links, oldest first")


class SearchFilters(_Strict):
    memory_type: list[MemoryType] = Field(default_factory=list, max_length=6)
    tags: list[Tag] = Field(
        default_factory=list, max_length=50, description="memories carrying all of these tags"
    )
    agent_id: Identifier | None = None
    conversation_id: Identifier | None = None
    metadata: Metadata = Field(default_factory=dict, description="key/value pairs the metadata must contain")
    user_id: Identifier | None = Field(
        default=None,
        description="only this user's memories (their user_id). Their private ones only when the request "
        "is also made for them (user_id)",
    )


class SearchRequest(_Strict):
    query: QueryText
    scope: SearchScope = Field(
        default="all",
        description="memories, chunks (of documents), all (both, ranked together), or messages (the "
        "user_id's conversation messages, with filters.agent_id)",
    )
    user_id: Identifier | None = Field(default=None, description="the user the request is made for")
    container: ContainerQuery | None = Field(
        default=None, description="'a.b' exactly, or 'a.b.*' for a.b and below"
    )
    limit: Integer = Field(default=10, ge=1, le=100)
    score_threshold: Number | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="leave out the results whose `score` is below it (a vector mode score below 0 always)",
    )
    mode: SearchMode = "hybrid"
    filters: SearchFilters = Field(default_factory=SearchFilters)
    # Not in repr: Powertools formats every request's arguments (an eager f-string, even with debug
    # logging off), and 384 numbers took 0.3-0.4 ms of each call.
    embedding: Vector | None = Field(
        default=None,
        description="a query vector of your own, of embedding_model: the configured model, or one the "
        "searched rows have vectors of (memories': those sent with them; chunks': those they were embedded "
        "with; scope messages: the configured model); another model is a 422 on embedding_model that lists "
        "them. Scope all searches such a model in the kind that has its vectors only",
        repr=False,
    )
    embedding_model: ModelName | None = None
    as_of: Timestamp | None = Field(
        default=None,
        description="return the memories valid at this time, and the document chunks created by then (a "
        "chunk is valid from its creation, its valid_from, whatever its document's document_date) (not "
        "with scope 'messages')",
    )
    include_history: Flag = Field(
        default=False,
        description="also return superseded memories; chunks have no versions: they are returned alike "
        "(not with scope 'messages')",
    )
    include_related: Flag = Field(
        default=False,
        description="attach each memory result's neighbours, with the relationship type (not with scope "
        "'messages')",
    )

    @model_validator(mode="after")
    def _pair(self) -> SearchRequest:
        if self.as_of is not None and self.include_history:
            raise ValueError("as_of and include_history do not go together: as_of already picks the versions")
        _embedding_pair(self.embedding, self.embedding_model)
        if self.scope == "messages":
            for name in ("memory_type", "tags"):
                if getattr(self.filters, name):
                    raise ValueError(f"filters.{name} applies to memories, not to scope 'messages'")
            for name in ("container", "as_of"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} applies to memories, not to scope 'messages'")
            for name in ("include_history", "include_related"):  # messages have no versions, no links
                if getattr(self, name):
                    raise ValueError(f"{name} applies to memories, not to scope 'messages'")
            if self.user_id is None and self.filters.agent_id is None and self.filters.user_id is None:
                raise ValueError(
                    "scope 'messages' needs user_id, filters.user_id or filters.agent_id: messages have "
                    "a party"
                )
        return self


class Scores(LazyModel):
    """How the result was scored. `fused` is the sum, over the search's `weights`, of each weight times
    the score of the same name here (a null score counts 0): every share that goes into it is a field."""

    vector: float | None = Field(
        description="cosine similarity to the query, -1 to 1 (1: the same direction; unrelated texts score "
        "near 0, some below it), when the result has a vector of the query's model"
    )
    text: float | None = Field(
        description="BM25 over the best score the query allows (0-1), when the result holds a query term: "
        "what text mode ranks by. A message (scope messages): PostgreSQL's ts_rank_cd over 1 + the log of "
        "its length, as rank / (rank + 1), 0-1; in text mode, that counted as one word more beside the "
        "query's words it holds ((coverage * words + rank) / (words + 1)), so a message holding more of "
        "them ranks first and one holding all of them scores at least 0.5"
    )
    text_relative: float | None = Field(
        default=None,
        description="hybrid mode: `text` over the best `text` among the search's candidates of the same "
        "kind (memories, chunks, messages), 0-1; null when the result holds no query term",
    )
    coverage: float | None = Field(
        default=None,
        description="hybrid mode: the share of the query's idf (inverse document frequency: a rare word "
        "weighs more than a common one) that the result's terms carry, 0-1; a message: the share of the "
        "query's words it holds, each alike (messages keep no term statistics); null when it holds no "
        "query term",
    )
    graph: float | None = Field(
        default=None,
        description="hybrid mode, the entity graph: the share of the entities the query names (by name "
        "or alias) that the result mentions, an entity one relation away from them counting half, at "
        "most 1; null when it mentions none, or the query names no known entity",
    )
    people: float | None = Field(
        default=None,
        description="hybrid mode, memories: the share of the names the query writes (capitalised words "
        "other than its first: 'Tobias', \"Melanie's\") whose every word the memory's text holds, 0-1, "
        "whether or not an entity has that name; null when it holds none, or the query writes no name",
    )
    time: float | None = Field(
        default=None,
        description="hybrid mode, memories: 1 when the memory's text states the period the query names "
        "('in June 2023', 'last June'), 0.5 when the memory is only from that period (its date); null "
        "otherwise, or when the query names no period",
    )
    fused: float = Field(
        description="what ranks the results: the sum over the response's `weights` of weight x the score "
        "of that name here (null counts 0). Hybrid mode: vector, text_relative, coverage, graph, people "
        "and time, weighted; vector mode: vector; text mode: text"
    )


class RelatedLink(LazyModel):
    """A memory next to another one: through a memory relationship (`updates`, `extends`, `derives`;
    `outgoing` when the first memory is the newer side) or through entities both mention."""

    id: UUID
    content: str
    memory_type: MemoryType
    is_latest: bool
    valid_from: datetime
    valid_to: datetime | None
    relationship: Literal["updates", "extends", "derives", "shares_entity"]
    direction: Literal["outgoing", "incoming", "shared"]
    depth: int = Field(description="steps from the memory (shared entities: always 1)")
    via: UUID | None = Field(
        default=None,
        description="the memory one step closer, when depth > 1; null when it is one the request may not see",
    )
    shared_entities: list[str] = Field(default_factory=list)


class RelatedMemories(LazyModel):
    id: UUID
    related: list[RelatedLink]


class SearchResult(LazyModel):
    id: UUID
    kind: ResultKind = Field(default="memory", description="a memory, or a chunk of a document")
    document_id: UUID | None = Field(default=None, description="the document a chunk or memory came from")
    content: str
    memory_type: MemoryType | None = Field(description="null for chunks")
    container: str
    tags: list[str]
    metadata: dict[str, Any]
    agent_id: str | None
    conversation_id: str | None
    is_latest: bool
    valid_from: datetime
    valid_to: datetime | None = Field(description="when this stopped being true (superseded), if it has")
    user_id: str | None
    visibility: Visibility
    created_at: datetime
    score: float = Field(
        description="what score_threshold applies to: in hybrid mode a calibrated probability that the "
        "result is relevant (0-1, fitted on SciFact's train split), in vector mode the cosine similarity "
        "(scores.vector, -1 to 1: below 0 for a vector pointing away from the query's), in text mode "
        "scores.text (0-1)"
    )
    scores: Scores
    related: list[RelatedLink] | None = Field(
        default=None, description="with include_related: this memory's neighbours (depth 1)"
    )


# What a search answer's `total` is (memories and messages alike).
RESULTS_IN_ANSWER = (
    "the number of results in this answer, len(results) (after limit and score_threshold): not a count of "
    "every match, and there are no further pages"
)


class SearchResponse(LazyModel):
    query: str
    results: list[SearchResult]
    total: int = Field(description=RESULTS_IN_ANSWER)
    weights: dict[str, float] = Field(
        description="the weight of each score the fused score adds up, by its name in `scores`: every "
        "result's scores.fused is the sum of weight x scores.<name> over these (a null score counts 0). "
        "Hybrid mode: vector, text_relative, coverage, graph, people, time; vector mode: vector 1; text "
        "mode: text 1"
    )


class ListRequest(_Strict):
    user_id: Identifier | None = Field(default=None, description="the user the request is made for")
    container: ContainerQuery | None = None
    filters: SearchFilters = Field(default_factory=SearchFilters)
    limit: Integer = Field(default=20, ge=1, le=100)
    cursor: Cursor | None = None


class MemoryPage(LazyModel):
    memories: list[Memory]
    next_cursor: str | None


class ContainerCount(LazyModel):
    container: str
    count: int


class TypeCount(LazyModel):
    memory_type: str
    count: int


class ContainerTypeCount(LazyModel):
    container: str
    memory_type: str
    count: int


class EmbeddingCoverage(LazyModel):
    embedded: int
    missing: int
    coverage: float = Field(description="share of memories that carry an embedding, 0 to 1")
    models: dict[str, int]


class Stats(LazyModel):
    total: int
    containers: list[ContainerCount]
    memory_types: list[TypeCount]
    by_container_and_type: list[ContainerTypeCount]
    embeddings: EmbeddingCoverage
