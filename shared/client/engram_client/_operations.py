"""Generated from the Engram API's OpenAPI document by shared/client/tools/codegen.py.

Do not edit. One method per operation, named after its operation id; `SyncOperations` for
`Engram`, `AsyncOperations` for `AsyncEngram`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from typing import Any, Literal, overload
from uuid import UUID

from engram_client import models
from engram_client._base import (
    NOT_GIVEN,
    AsyncCore,
    NotGiven,
    Operation,
    SyncCore,
    document_finished,
    given,
)


def _headers(values: dict[str, Any]) -> dict[str, str]:
    return {name: str(value) for name, value in values.items() if value is not NOT_GIVEN}


_GET_HEALTH = Operation("GET", "/health", {200: models.Health}, True)
_GET_MEMORY = Operation("GET", "/v1/memories/{id}", {200: models.Memory}, True)
_DELETE_MEMORY = Operation("DELETE", "/v1/memories/{id}", {204: None}, True)
_UPDATE_MEMORY = Operation("PATCH", "/v1/memories/{id}", {200: models.CreatedMemory}, False)
_GET_MEMORY_HISTORY = Operation("GET", "/v1/memories/{id}/history", {200: models.MemoryHistory}, True)
_GET_RELATED_MEMORIES = Operation("GET", "/v1/memories/{id}/related", {200: models.RelatedMemories}, True)
_REVERT_MEMORY = Operation("POST", "/v1/memories/{id}/revert", {200: models.Memory}, False)
_CREATE_MEMORY = Operation("POST", "/v1/memories", {201: models.CreatedMemory}, False)
_CREATE_MEMORIES = Operation("POST", "/v1/memories/batch", {201: models.MemoryBatchResult}, False)
_UPSERT_MEMORY = Operation(
    "POST", "/v1/memories/upsert", {201: models.UpsertResult, 200: models.UpsertResult}, True
)
_LIST_MEMORIES = Operation("POST", "/v1/memories/list", {200: models.MemoryPage}, True)
_SEARCH = Operation("POST", "/v1/search", {200: models.SearchResponse | models.MessageSearchResponse}, True)
_GET_SESSION = Operation("GET", "/v1/sessions/{id}", {200: models.Conversation}, True)
_DELETE_SESSION = Operation("DELETE", "/v1/sessions/{id}", {204: None}, True)
_ADD_MESSAGES = Operation("POST", "/v1/sessions/{id}/messages", {201: models.AppendResult}, False)
_EXTRACT_SESSION = Operation("POST", "/v1/sessions/{id}/extract", {200: models.ExtractionReport}, False)
_GET_RECENT_MESSAGES = Operation("POST", "/v1/sessions/{id}/recent", {200: models.RecentMessages}, True)
_LIST_SESSIONS = Operation("GET", "/v1/sessions", {200: models.SessionPage}, True)
_CREATE_SESSION = Operation("POST", "/v1/sessions", {201: models.Session}, False)
_GET_STATS = Operation("GET", "/v1/stats", {200: models.Stats}, True)
_GET_DOCUMENT = Operation("GET", "/v1/documents/{id}", {200: models.Document}, True)
_DELETE_DOCUMENT = Operation("DELETE", "/v1/documents/{id}", {204: None}, True)
_CREATE_DOCUMENT = Operation("POST", "/v1/documents", {202: models.DocumentAccepted}, False)
_LIST_DOCUMENTS = Operation("POST", "/v1/documents/list", {200: models.DocumentPage}, True)
_GET_ENTITY = Operation("GET", "/v1/entities/{id}", {200: models.EntityDetail}, True)
_DELETE_ENTITY = Operation("DELETE", "/v1/entities/{id}", {204: None}, True)
_ADD_OBSERVATION = Operation("POST", "/v1/entities/{id}/observations", {201: models.Observation}, False)
_DELETE_OBSERVATION = Operation("DELETE", "/v1/entities/{id}/observations/{memory_id}", {204: None}, True)
_DELETE_RELATION = Operation("DELETE", "/v1/relations/{id}", {204: None}, True)
_LIST_ENTITIES = Operation("GET", "/v1/entities", {200: models.EntityPage}, True)
_CREATE_ENTITY = Operation("POST", "/v1/entities", {201: models.Entity, 200: models.Entity}, False)
_CREATE_RELATION = Operation("POST", "/v1/relations", {201: models.Relation, 200: models.Relation}, False)
_GET_GRAPH = Operation("GET", "/v1/graph", {200: models.Subgraph}, True)
_GET_WORKING = Operation("GET", "/v1/working/{scope}/{key}", {200: models.WorkingItem}, True)
_SET_WORKING = Operation(
    "PUT", "/v1/working/{scope}/{key}", {200: models.WorkingItem, 201: models.WorkingItem}, True
)
_DELETE_WORKING = Operation("DELETE", "/v1/working/{scope}/{key}", {204: None}, True)
_LIST_WORKING = Operation("GET", "/v1/working/{scope}", {200: models.WorkingScope}, True)
_CLEAR_WORKING = Operation("DELETE", "/v1/working/{scope}", {200: models.ScopeCleared}, True)
_GET_PROCEDURE = Operation("GET", "/v1/procedures/{id}", {200: models.Procedure}, True)
_DELETE_PROCEDURE = Operation("DELETE", "/v1/procedures/{id}", {204: None}, True)
_UPDATE_PROCEDURE = Operation("PATCH", "/v1/procedures/{id}", {200: models.Procedure}, False)
_LIST_PROCEDURES = Operation("GET", "/v1/procedures", {200: models.ProcedurePage}, True)
_CREATE_PROCEDURE = Operation("POST", "/v1/procedures", {201: models.Procedure}, False)
_MATCH_PROCEDURES = Operation("POST", "/v1/procedures/match", {200: models.MatchResponse}, True)
_GET_PROFILE = Operation("GET", "/v1/profile", {200: models.Profile}, True)
_GET_CONTEXT = Operation("POST", "/v1/context", {200: models.AgentContext}, True)
_DELETE_CONTAINER = Operation("DELETE", "/v1/containers/{name}", {200: models.ContainerDeleted}, True)
_ARCHIVE_CONTAINER = Operation(
    "POST", "/v1/containers/{name}/archive", {200: models.ContainerArchived}, False
)
_ERASE_USER = Operation("DELETE", "/v1/users/{user_id}", {200: models.UserErasure}, True)
_LIST_CONTAINERS = Operation("GET", "/v1/containers", {200: models.ContainerTree}, True)
_CREATE_CONTAINER = Operation("POST", "/v1/containers", {201: models.Container, 200: models.Container}, False)
_LIST_EXTRACTION_INSTRUCTIONS = Operation(
    "GET", "/v1/extraction-instructions", {200: models.InstructionsList}, True
)
_SET_EXTRACTION_INSTRUCTIONS = Operation(
    "PUT", "/v1/extraction-instructions", {200: models.Instructions, 201: models.Instructions}, True
)
_DELETE_EXTRACTION_INSTRUCTIONS = Operation("DELETE", "/v1/extraction-instructions", {204: None}, True)
_GET_EXPORT = Operation("GET", "/v1/export/{id}", {200: models.ExportJob}, True)
_GET_IMPORT = Operation("GET", "/v1/import/{id}", {200: models.ImportJob}, True)
_EXPORT = Operation("POST", "/v1/export", {200: str, 202: models.ExportJob}, True)
_GET_WEBHOOK = Operation("GET", "/v1/webhooks/{id}", {200: models.WebhookDetail}, True)
_DELETE_WEBHOOK = Operation("DELETE", "/v1/webhooks/{id}", {204: None}, True)
_LIST_WEBHOOKS = Operation("GET", "/v1/webhooks", {200: models.WebhookList}, True)
_CREATE_WEBHOOK = Operation("POST", "/v1/webhooks", {201: models.WebhookCreated}, False)
_GET_PLAN = Operation("GET", "/v1/plans/{plan_id}", {200: models.Plan}, True)
_UPDATE_PLAN = Operation("PUT", "/v1/plans/{plan_id}", {200: models.Plan, 201: models.Plan}, True)
_DELETE_PLAN = Operation("DELETE", "/v1/plans/{plan_id}", {204: None}, True)
_LIST_PLANS = Operation("GET", "/v1/plans", {200: models.PlanPage}, True)
_CREATE_PLAN = Operation("POST", "/v1/plans", {201: models.Plan}, False)
_FIND_TASK_CONTEXT_BY_SUBTASK = Operation(
    "GET", "/v1/task-context/by-subtask/{subtask_id}", {200: models.TaskContext}, True
)
_GET_TASK_CONTEXT = Operation("GET", "/v1/task-context/{task_id}", {200: models.TaskContext}, True)
_UPDATE_TASK_CONTEXT = Operation(
    "PUT", "/v1/task-context/{task_id}", {200: models.TaskContext, 201: models.TaskContext}, True
)
_DELETE_TASK_CONTEXT = Operation("DELETE", "/v1/task-context/{task_id}", {204: None}, True)
_LIST_TASK_CONTEXTS = Operation("GET", "/v1/task-context", {200: models.TaskContextPage}, True)
_CREATE_TASK_CONTEXT = Operation("POST", "/v1/task-context", {201: models.TaskContext}, False)


class SyncOperations(SyncCore):
    def wait_for_document(
        self, document_id: UUID | str, *, timeout: float = 300.0, interval: float = 0.5
    ) -> models.Document:
        """Follow a document until it is done: IngestionFailed if it failed, WaitTimeout if slow."""
        deadline = time.monotonic() + timeout
        while True:
            document = self.get_document(document_id)
            if document_finished(document, deadline, timeout):
                return document
            time.sleep(interval)

    def get_health(self) -> models.Health:
        """GET /health"""
        return self._call(
            _GET_HEALTH,
        )

    def get_memory(self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN) -> models.Memory:
        """GET /v1/memories/{id}

        id: the memory's id
        user_id: the user the request is made for
        """
        return self._call(_GET_MEMORY, path={"id": id}, query={"user_id": user_id})

    def delete_memory(self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/memories/{id}

        id: the memory's id
        user_id: the user the request is made for
        """
        return self._call(_DELETE_MEMORY, path={"id": id}, query={"user_id": user_id})

    def update_memory(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        content: str | NotGiven | None = NOT_GIVEN,
        tags: Sequence[str] | NotGiven | None = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven | None = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven
        | None = NOT_GIVEN,
        expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
    ) -> models.CreatedMemory:
        """PATCH /v1/memories/{id}

        id: the memory's id
        user_id: the user the request is made for
        content: new text: a new version, as supersedes makes one (the memory stays as history); the answer is the new version
        extract: with content: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way
        """
        return self._call(
            _UPDATE_MEMORY,
            path={"id": id},
            query={"user_id": user_id},
            body=given(
                content=content,
                tags=tags,
                metadata=metadata,
                memory_type=memory_type,
                expires_at=expires_at,
                visibility=visibility,
                extract=extract,
            ),
        )

    def get_memory_history(
        self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.MemoryHistory:
        """GET /v1/memories/{id}/history

        id: the memory's id
        user_id: the user the request is made for
        """
        return self._call(_GET_MEMORY_HISTORY, path={"id": id}, query={"user_id": user_id})

    def get_related_memories(
        self,
        id: str | UUID,
        *,
        depth: int | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.RelatedMemories:
        """GET /v1/memories/{id}/related

        id: the memory's id
        depth: steps over memory relationships
        user_id: the user the request is made for
        """
        return self._call(
            _GET_RELATED_MEMORIES, path={"id": id}, query={"depth": depth, "limit": limit, "user_id": user_id}
        )

    def revert_memory(self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN) -> models.Memory:
        """POST /v1/memories/{id}/revert

        id: the memory's id
        user_id: the user the request is made for
        """
        return self._call(_REVERT_MEMORY, path={"id": id}, query={"user_id": user_id})

    def create_memory(
        self,
        *,
        content: str,
        container: str | NotGiven = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        conversation_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven = NOT_GIVEN,
        confidence: float | NotGiven = NOT_GIVEN,
        valid_from: datetime | str | NotGiven | None = NOT_GIVEN,
        expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
        embedding: Sequence[float] | NotGiven | None = NOT_GIVEN,
        embedding_model: str | NotGiven | None = NOT_GIVEN,
        supersedes: UUID | str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
    ) -> models.CreatedMemory:
        """POST /v1/memories

        user_id: the user this memory is about and for
        visibility: 'private': seen only by requests made for user_id; 'tenant': by all
        supersedes: the id of the memory this one replaces: it stays as history, no longer current
        extract: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way
        """
        return self._call(
            _CREATE_MEMORY,
            body=given(
                content=content,
                container=container,
                memory_type=memory_type,
                tags=tags,
                metadata=metadata,
                agent_id=agent_id,
                conversation_id=conversation_id,
                user_id=user_id,
                visibility=visibility,
                confidence=confidence,
                valid_from=valid_from,
                expires_at=expires_at,
                embedding=embedding,
                embedding_model=embedding_model,
                supersedes=supersedes,
                extract=extract,
            ),
        )

    def create_memories(
        self, *, memories: Sequence[models.MemoryCreate | dict[str, Any]]
    ) -> models.MemoryBatchResult:
        """POST /v1/memories/batch

        memories: 1 to 100 memories, each as POST /v1/memories takes it: stored all or none, in this order
        """
        return self._call(_CREATE_MEMORIES, body=given(memories=memories))

    def upsert_memory(
        self,
        *,
        content: str,
        container: str | NotGiven = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        conversation_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven = NOT_GIVEN,
        confidence: float | NotGiven = NOT_GIVEN,
        valid_from: datetime | str | NotGiven | None = NOT_GIVEN,
        expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
        embedding: Sequence[float] | NotGiven | None = NOT_GIVEN,
        embedding_model: str | NotGiven | None = NOT_GIVEN,
        supersedes: NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        dedupe_threshold: float | NotGiven = NOT_GIVEN,
    ) -> models.UpsertResult:
        """POST /v1/memories/upsert

        user_id: the user this memory is about and for
        visibility: 'private': seen only by requests made for user_id; 'tenant': by all
        supersedes: not accepted here: upsert decides itself which memory it updates. To replace a given memory, POST /v1/memories with supersedes
        extract: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way
        dedupe_threshold: an existing memory at least this similar (cosine) is the same memory
        """
        return self._call(
            _UPSERT_MEMORY,
            body=given(
                content=content,
                container=container,
                memory_type=memory_type,
                tags=tags,
                metadata=metadata,
                agent_id=agent_id,
                conversation_id=conversation_id,
                user_id=user_id,
                visibility=visibility,
                confidence=confidence,
                valid_from=valid_from,
                expires_at=expires_at,
                embedding=embedding,
                embedding_model=embedding_model,
                supersedes=supersedes,
                extract=extract,
                dedupe_threshold=dedupe_threshold,
            ),
        )

    def list_memories(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        filters: models.SearchFilters | dict[str, Any] | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.MemoryPage:
        """POST /v1/memories/list

        user_id: the user the request is made for
        """
        return self._call(
            _LIST_MEMORIES,
            body=given(user_id=user_id, container=container, filters=filters, limit=limit, cursor=cursor),
        )

    def search(
        self,
        *,
        query: str,
        scope: Literal["memories", "chunks", "all", "messages"] | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        score_threshold: float | NotGiven | None = NOT_GIVEN,
        mode: Literal["hybrid", "vector", "text"] | NotGiven = NOT_GIVEN,
        filters: models.SearchFilters | dict[str, Any] | NotGiven = NOT_GIVEN,
        embedding: Sequence[float] | NotGiven | None = NOT_GIVEN,
        embedding_model: str | NotGiven | None = NOT_GIVEN,
        as_of: datetime | str | NotGiven | None = NOT_GIVEN,
        include_history: bool | NotGiven = NOT_GIVEN,
        include_related: bool | NotGiven = NOT_GIVEN,
    ) -> models.SearchResponse | models.MessageSearchResponse:
        """POST /v1/search

        scope: memories, chunks (of documents), all (both, ranked together), or messages (the user_id's conversation messages, with filters.agent_id)
        user_id: the user the request is made for
        container: 'a.b' exactly, or 'a.b.*' for a.b and below
        score_threshold: leave out the results whose `score` is below it (a vector mode score below 0 always)
        embedding: a query vector of your own, of embedding_model: the configured model, or one the searched rows have vectors of (memories': those sent with them; chunks': those they were embedded with; scope messages: the configured model); another model is a 422 on embedding_model that lists them. Scope all searches such a model in the kind that has its vectors only
        as_of: return the memories valid at this time, and the document chunks created by then (a chunk is valid from its creation, its valid_from, whatever its document's document_date) (not with scope 'messages')
        include_history: also return superseded memories; chunks have no versions: they are returned alike (not with scope 'messages')
        include_related: attach each memory result's neighbours, with the relationship type (not with scope 'messages')
        """
        return self._call(
            _SEARCH,
            body=given(
                query=query,
                scope=scope,
                user_id=user_id,
                container=container,
                limit=limit,
                score_threshold=score_threshold,
                mode=mode,
                filters=filters,
                embedding=embedding,
                embedding_model=embedding_model,
                as_of=as_of,
                include_history=include_history,
                include_related=include_related,
            ),
        )

    def get_session(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        after: int | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> models.Conversation:
        """GET /v1/sessions/{id}

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        after: return messages after this seq
        """
        return self._call(
            _GET_SESSION,
            path={"id": id},
            query={"user_id": user_id, "agent_id": agent_id, "after": after, "limit": limit},
        )

    def delete_session(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
    ) -> None:
        """DELETE /v1/sessions/{id}

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return self._call(_DELETE_SESSION, path={"id": id}, query={"user_id": user_id, "agent_id": agent_id})

    def add_messages(
        self,
        id: str | UUID,
        *,
        messages: Sequence[models.MessageIn | dict[str, Any]],
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven = NOT_GIVEN,
    ) -> models.AppendResult:
        """POST /v1/sessions/{id}/messages

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        extract: memory extraction from the messages, as for documents: `none`; `light`, the offline heuristic (statements in the user's messages); `full`, the configured LLM over the user's and the assistant's messages. `true` and `false` still mean `light` and `none`
        """
        return self._call(
            _ADD_MESSAGES,
            path={"id": id},
            query={"user_id": user_id, "agent_id": agent_id},
            body=given(messages=messages, extract=extract),
        )

    def extract_session(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.ExtractionReport:
        """POST /v1/sessions/{id}/extract

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return self._call(_EXTRACT_SESSION, path={"id": id}, query={"user_id": user_id, "agent_id": agent_id})

    def get_recent_messages(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> models.RecentMessages:
        """POST /v1/sessions/{id}/recent

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return self._call(
            _GET_RECENT_MESSAGES,
            path={"id": id},
            query={"user_id": user_id, "agent_id": agent_id, "limit": limit},
        )

    def list_sessions(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.SessionPage:
        """GET /v1/sessions

        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return self._call(
            _LIST_SESSIONS, query={"user_id": user_id, "agent_id": agent_id, "limit": limit, "cursor": cursor}
        )

    def create_session(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
    ) -> models.Session:
        """POST /v1/sessions

        user_id: the user in this conversation
        agent_id: the agent in this conversation
        container: where extracted memories are stored
        """
        return self._call(
            _CREATE_SESSION,
            body=given(user_id=user_id, agent_id=agent_id, container=container, metadata=metadata),
        )

    def get_stats(self, *, user_id: str | NotGiven | None = NOT_GIVEN) -> models.Stats:
        """GET /v1/stats

        user_id: count only this user's memories
        """
        return self._call(_GET_STATS, query={"user_id": user_id})

    def get_document(self, id: str | UUID) -> models.Document:
        """GET /v1/documents/{id}

        id: the document's id
        """
        return self._call(_GET_DOCUMENT, path={"id": id})

    def delete_document(self, id: str | UUID) -> None:
        """DELETE /v1/documents/{id}

        id: the document's id
        """
        return self._call(_DELETE_DOCUMENT, path={"id": id})

    @overload
    def create_document(
        self,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        url: str | NotGiven | None = NOT_GIVEN,
        file_base64: str | NotGiven | None = NOT_GIVEN,
        filename: str | NotGiven | None = NOT_GIVEN,
        content_type: str | NotGiven | None = NOT_GIVEN,
        title: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        document_date: datetime | str | NotGiven | None = NOT_GIVEN,
        wait: Literal[True],
        wait_timeout: float = 300.0,
    ) -> models.Document: ...

    @overload
    def create_document(
        self,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        url: str | NotGiven | None = NOT_GIVEN,
        file_base64: str | NotGiven | None = NOT_GIVEN,
        filename: str | NotGiven | None = NOT_GIVEN,
        content_type: str | NotGiven | None = NOT_GIVEN,
        title: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        document_date: datetime | str | NotGiven | None = NOT_GIVEN,
        wait: Literal[False] = False,
        wait_timeout: float = 300.0,
    ) -> models.DocumentAccepted: ...

    def create_document(
        self,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        url: str | NotGiven | None = NOT_GIVEN,
        file_base64: str | NotGiven | None = NOT_GIVEN,
        filename: str | NotGiven | None = NOT_GIVEN,
        content_type: str | NotGiven | None = NOT_GIVEN,
        title: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        document_date: datetime | str | NotGiven | None = NOT_GIVEN,
        wait: bool = False,
        wait_timeout: float = 300.0,
    ) -> models.DocumentAccepted | models.Document:
        """POST /v1/documents

        content: the document's text
        url: an http(s) page or file to fetch
        file_base64: a file's bytes, base64; send filename too
        content_type: detected from the bytes when missing
        custom_id: your id: sending it again replaces the document (same content: no-op)
        user_id: the user who uploads it: the document and the memories extracted from it are theirs (user_id, visible to the tenant), erased with them (DELETE /v1/users/{user_id})
        extract: memories from the chunks: none (chunks only), light (offline heuristic) or full (the configured LLM); default: full when an LLM provider is configured, else light
        document_date: when the content was written (ISO 8601); relative dates in the text are read against it, and it is a memory's valid_from when the text states none. Default: now
        """
        accepted = self._call(
            _CREATE_DOCUMENT,
            body=given(
                content=content,
                url=url,
                file_base64=file_base64,
                filename=filename,
                content_type=content_type,
                title=title,
                container=container,
                tags=tags,
                metadata=metadata,
                custom_id=custom_id,
                user_id=user_id,
                extract=extract,
                document_date=document_date,
            ),
            retry=True if custom_id not in (NOT_GIVEN, None) else None,
        )
        return self.wait_for_document(accepted.id, timeout=wait_timeout) if wait else accepted

    def list_documents(
        self,
        *,
        container: str | NotGiven | None = NOT_GIVEN,
        status: Literal["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"]
        | NotGiven
        | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.DocumentPage:
        """POST /v1/documents/list"""
        return self._call(
            _LIST_DOCUMENTS, body=given(container=container, status=status, limit=limit, cursor=cursor)
        )

    def get_entity(
        self,
        id: str | UUID,
        *,
        limit: int | NotGiven = NOT_GIVEN,
        observations_cursor: str | NotGiven | None = NOT_GIVEN,
        relations_cursor: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.EntityDetail:
        """GET /v1/entities/{id}

        id: the entity's id
        limit: items per page
        observations_cursor: next_cursor of the previous page
        relations_cursor: next_cursor of the previous page
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return self._call(
            _GET_ENTITY,
            path={"id": id},
            query={
                "limit": limit,
                "observations_cursor": observations_cursor,
                "relations_cursor": relations_cursor,
                "user_id": user_id,
            },
        )

    def delete_entity(self, id: str | UUID) -> None:
        """DELETE /v1/entities/{id}

        id: the entity's id
        """
        return self._call(_DELETE_ENTITY, path={"id": id})

    def add_observation(
        self,
        id: str | UUID,
        *,
        memory_id: UUID | str | NotGiven | None = NOT_GIVEN,
        content: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven = NOT_GIVEN,
        is_subject: bool | NotGiven = NOT_GIVEN,
    ) -> models.Observation:
        """POST /v1/entities/{id}/observations

        id: the entity's id
        is_subject: the memory is about this entity
        """
        return self._call(
            _ADD_OBSERVATION,
            path={"id": id},
            body=given(
                memory_id=memory_id,
                content=content,
                container=container,
                memory_type=memory_type,
                is_subject=is_subject,
            ),
        )

    def delete_observation(
        self, id: str | UUID, memory_id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> None:
        """DELETE /v1/entities/{id}/observations/{memory_id}

        id: the entity's id
        memory_id: the memory's id
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return self._call(
            _DELETE_OBSERVATION, path={"id": id, "memory_id": memory_id}, query={"user_id": user_id}
        )

    def delete_relation(self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/relations/{id}

        id: the relation's id
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return self._call(_DELETE_RELATION, path={"id": id}, query={"user_id": user_id})

    def list_entities(
        self,
        *,
        q: str | NotGiven | None = NOT_GIVEN,
        type: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.EntityPage:
        """GET /v1/entities

        q: name or alias
        type: entity type
        limit: items per page
        cursor: next_cursor of the previous page
        """
        return self._call(_LIST_ENTITIES, query={"q": q, "type": type, "limit": limit, "cursor": cursor})

    def create_entity(
        self,
        *,
        name: str,
        entity_type: str | NotGiven = NOT_GIVEN,
        aliases: Sequence[str] | NotGiven = NOT_GIVEN,
    ) -> models.Entity:
        """POST /v1/entities

        entity_type: a lowercase word: person, place, ...
        aliases: other names; each a key of its own (not the name's, nor another alias's)
        """
        return self._call(_CREATE_ENTITY, body=given(name=name, entity_type=entity_type, aliases=aliases))

    def create_relation(
        self,
        *,
        source: UUID | str | models.EntityRef | dict[str, Any],
        relation_type: str,
        target: UUID | str | models.EntityRef | dict[str, Any],
        valid_from: datetime | str | NotGiven | None = NOT_GIVEN,
        valid_to: datetime | str | NotGiven | None = NOT_GIVEN,
        confidence: float | NotGiven = NOT_GIVEN,
        source_memory_id: UUID | str | NotGiven | None = NOT_GIVEN,
    ) -> models.Relation:
        """POST /v1/relations

        source: an entity id, or {name, entity_type}
        relation_type: lowercase_with_underscores: lives_in, works_for, ...
        valid_from: default: now
        valid_to: after valid_from; without valid_from, in the future (valid_from is now)
        source_memory_id: the memory that states it, if any
        """
        return self._call(
            _CREATE_RELATION,
            body=given(
                source=source,
                relation_type=relation_type,
                target=target,
                valid_from=valid_from,
                valid_to=valid_to,
                confidence=confidence,
                source_memory_id=source_memory_id,
            ),
        )

    def get_graph(
        self,
        *,
        entity: str,
        depth: int | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        as_of: datetime | str | NotGiven | None = NOT_GIVEN,
        include_history: bool | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.Subgraph:
        """GET /v1/graph

        entity: an entity id, or its name
        depth: hops from the entity
        limit: entities per page
        cursor: next_cursor of the previous page
        as_of: relations valid at this time
        include_history: also relations no longer current
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return self._call(
            _GET_GRAPH,
            query={
                "entity": entity,
                "depth": depth,
                "limit": limit,
                "cursor": cursor,
                "as_of": as_of,
                "include_history": include_history,
                "user_id": user_id,
            },
        )

    def get_working(
        self, scope: str | UUID, key: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.WorkingItem:
        """GET /v1/working/{scope}/{key}

        scope: a plan or agent scope, e.g. plan-42
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        """
        return self._call(_GET_WORKING, path={"scope": scope, "key": key}, query={"user_id": user_id})

    def set_working(
        self,
        scope: str | UUID,
        key: str | UUID,
        *,
        value: Any,
        if_match: int | str | NotGiven = NOT_GIVEN,
        ttl_seconds: int | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.WorkingItem:
        """PUT /v1/working/{scope}/{key}

        scope: a plan or agent scope, e.g. plan-42
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        value: any JSON value, null included
        ttl_seconds: the key expires this long after the write. Left out, an existing key keeps its expiry; null: it never expires
        user_id: the user this state belongs to: erased with them (DELETE /v1/users/{user_id}). A write for a user never takes a key of another user (409 on user_id); one of no user becomes theirs. Left out, an existing key keeps its user; null: none
        """
        return self._call(
            _SET_WORKING,
            path={"scope": scope, "key": key},
            headers=_headers({"If-Match": if_match}),
            body=given(value=value, ttl_seconds=ttl_seconds, user_id=user_id),
        )

    def delete_working(
        self,
        scope: str | UUID,
        key: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        if_match: int | str | NotGiven = NOT_GIVEN,
    ) -> None:
        """DELETE /v1/working/{scope}/{key}

        scope: a plan or agent scope, e.g. plan-42
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return self._call(
            _DELETE_WORKING,
            path={"scope": scope, "key": key},
            query={"user_id": user_id},
            headers=_headers({"If-Match": if_match}),
        )

    def list_working(
        self,
        scope: str | UUID,
        *,
        after: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.WorkingScope:
        """GET /v1/working/{scope}

        scope: a plan or agent scope, e.g. plan-42
        after: the last key of the previous page
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        """
        return self._call(
            _LIST_WORKING, path={"scope": scope}, query={"after": after, "limit": limit, "user_id": user_id}
        )

    def clear_working(
        self, scope: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.ScopeCleared:
        """DELETE /v1/working/{scope}

        scope: a plan or agent scope, e.g. plan-42
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        """
        return self._call(_CLEAR_WORKING, path={"scope": scope}, query={"user_id": user_id})

    def get_procedure(
        self, id: str | UUID, *, agent_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.Procedure:
        """GET /v1/procedures/{id}

        id: the procedure's id
        agent_id: the agent the request is made for
        """
        return self._call(_GET_PROCEDURE, path={"id": id}, query={"agent_id": agent_id})

    def delete_procedure(self, id: str | UUID, *, agent_id: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/procedures/{id}

        id: the procedure's id
        agent_id: the agent the request is made for
        """
        return self._call(_DELETE_PROCEDURE, path={"id": id}, query={"agent_id": agent_id})

    def update_procedure(
        self,
        id: str | UUID,
        *,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        trigger: str | NotGiven | None = NOT_GIVEN,
        content: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven | None = NOT_GIVEN,
        tags: Sequence[str] | NotGiven | None = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven | None = NOT_GIVEN,
    ) -> models.Procedure:
        """PATCH /v1/procedures/{id}

        id: the procedure's id
        agent_id: the agent the request is made for
        """
        return self._call(
            _UPDATE_PROCEDURE,
            path={"id": id},
            query={"agent_id": agent_id},
            body=given(
                kind=kind,
                trigger=trigger,
                content=content,
                visibility=visibility,
                tags=tags,
                metadata=metadata,
            ),
        )

    def list_procedures(
        self,
        *,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.ProcedurePage:
        """GET /v1/procedures

        agent_id: the agent the request is made for
        """
        return self._call(
            _LIST_PROCEDURES, query={"agent_id": agent_id, "kind": kind, "limit": limit, "cursor": cursor}
        )

    def create_procedure(
        self,
        *,
        trigger: str,
        content: str,
        kind: Literal["rule", "example"] | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
    ) -> models.Procedure:
        """POST /v1/procedures

        kind: 'rule': an instruction; 'example': a few-shot example
        trigger: the situation in which this procedure applies
        content: the rule, or the example (input and output)
        visibility: 'private': only requests for agent_id see it
        user_id: the user it was learned from or is for: erased with them (DELETE /v1/users/{user_id}); it does not limit who reads it
        """
        return self._call(
            _CREATE_PROCEDURE,
            body=given(
                kind=kind,
                trigger=trigger,
                content=content,
                agent_id=agent_id,
                visibility=visibility,
                user_id=user_id,
                tags=tags,
                metadata=metadata,
            ),
        )

    def match_procedures(
        self,
        *,
        situation: str,
        limit: int | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        min_similarity: float | NotGiven = NOT_GIVEN,
    ) -> models.MatchResponse:
        """POST /v1/procedures/match

        agent_id: also match this agent's private procedures
        min_similarity: cosine similarity between situation and trigger
        """
        return self._call(
            _MATCH_PROCEDURES,
            body=given(
                situation=situation, limit=limit, agent_id=agent_id, kind=kind, min_similarity=min_similarity
            ),
        )

    def get_profile(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        q: str | NotGiven | None = NOT_GIVEN,
        max_tokens: int | NotGiven = NOT_GIVEN,
    ) -> models.Profile:
        """GET /v1/profile

        user_id: the user to summarise (and made for)
        agent_id: the agent to summarise
        container: 'a.b' or 'a.b.*'
        q: add memories relevant to this
        """
        return self._call(
            _GET_PROFILE,
            query={
                "user_id": user_id,
                "agent_id": agent_id,
                "container": container,
                "q": q,
                "max_tokens": max_tokens,
            },
        )

    def get_context(
        self,
        *,
        query: str,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        session_id: UUID | str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        max_tokens: int | NotGiven = NOT_GIVEN,
    ) -> models.AgentContext:
        """POST /v1/context

        query: what the agent is about to do or answer: the turn's message
        user_id: the user the turn is for
        agent_id: the agent (its private procedures)
        session_id: the conversation: its summary and last messages
        container: memories of this container only ('a.b', or 'a.b.*' with everything below)
        plan_id: a plan (/v1/plans): its status and state, and its WorkflowState values in working memory
        max_tokens: the budget of `context`, estimated at 4 characters per token
        """
        return self._call(
            _GET_CONTEXT,
            body=given(
                query=query,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                container=container,
                plan_id=plan_id,
                max_tokens=max_tokens,
            ),
        )

    def delete_container(
        self, name: str | UUID, *, confirm: bool | NotGiven = NOT_GIVEN
    ) -> models.ContainerDeleted:
        """DELETE /v1/containers/{name}

        name: the container's full name, e.g. crm.contacts
        confirm: required when the container is not empty
        """
        return self._call(_DELETE_CONTAINER, path={"name": name}, query={"confirm": confirm})

    def archive_container(self, name: str | UUID) -> models.ContainerArchived:
        """POST /v1/containers/{name}/archive

        name: the container's full name, e.g. crm.contacts
        """
        return self._call(_ARCHIVE_CONTAINER, path={"name": name})

    def erase_user(self, user_id: str | UUID, *, confirm: bool | NotGiven = NOT_GIVEN) -> models.UserErasure:
        """DELETE /v1/users/{user_id}

        user_id: the user whose data goes: every row of theirs
        confirm: required to erase; without it, a 409 lists what would go
        """
        return self._call(_ERASE_USER, path={"user_id": user_id}, query={"confirm": confirm})

    def list_containers(self) -> models.ContainerTree:
        """GET /v1/containers"""
        return self._call(
            _LIST_CONTAINERS,
        )

    def create_container(
        self, *, name: str, parent: str | NotGiven | None = NOT_GIVEN, description: str | NotGiven = NOT_GIVEN
    ) -> models.Container:
        """POST /v1/containers

        name: the full name ('crm.contacts'), or a name below `parent`
        parent: an existing container to create it under
        description: a new container's description; an existing container keeps its own unless one is sent ('' clears it)
        """
        return self._call(_CREATE_CONTAINER, body=given(name=name, parent=parent, description=description))

    def list_extraction_instructions(
        self, *, container: str | NotGiven | None = NOT_GIVEN
    ) -> models.InstructionsList:
        """GET /v1/extraction-instructions

        container: a container; omit for the whole tenant's instructions
        """
        return self._call(_LIST_EXTRACTION_INSTRUCTIONS, query={"container": container})

    def set_extraction_instructions(
        self, *, instructions: str, container: str | NotGiven | None = NOT_GIVEN
    ) -> models.Instructions:
        """PUT /v1/extraction-instructions

        container: the container (and everything below it); null for the whole tenant
        instructions: added to the LLM extraction prompt (extract=full) for memories of this scope, e.g. 'Record dietary restrictions as preferences.' They refine what is extracted; they cannot change the output format, the rules, or where memories are stored
        """
        return self._call(
            _SET_EXTRACTION_INSTRUCTIONS, body=given(container=container, instructions=instructions)
        )

    def delete_extraction_instructions(self, *, container: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/extraction-instructions

        container: a container; omit for the whole tenant's instructions
        """
        return self._call(_DELETE_EXTRACTION_INSTRUCTIONS, query={"container": container})

    def get_export(self, id: str | UUID) -> models.ExportJob:
        """GET /v1/export/{id}

        id: the id POST /v1/export answered
        """
        return self._call(_GET_EXPORT, path={"id": id})

    def get_import(self, id: str | UUID) -> models.ImportJob:
        """GET /v1/import/{id}

        id: the id POST /v1/import?upload=true answered
        """
        return self._call(_GET_IMPORT, path={"id": id})

    def export(
        self, *, container: str | NotGiven | None = NOT_GIVEN, with_files: bool | NotGiven = NOT_GIVEN
    ) -> str | models.ExportJob:
        """POST /v1/export

        container: only this container ('a.b', or 'a.b.*' with everything below)
        with_files: also the documents' original bytes (base64, a document_file record each)
        """
        return self._call(_EXPORT, body=given(container=container, with_files=with_files))

    def get_webhook(self, id: str | UUID) -> models.WebhookDetail:
        """GET /v1/webhooks/{id}

        id: the webhook's id
        """
        return self._call(_GET_WEBHOOK, path={"id": id})

    def delete_webhook(self, id: str | UUID) -> None:
        """DELETE /v1/webhooks/{id}

        id: the webhook's id
        """
        return self._call(_DELETE_WEBHOOK, path={"id": id})

    def list_webhooks(self) -> models.WebhookList:
        """GET /v1/webhooks"""
        return self._call(
            _LIST_WEBHOOKS,
        )

    def create_webhook(
        self,
        *,
        url: str,
        events: Sequence[
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
        description: str | NotGiven = NOT_GIVEN,
    ) -> models.WebhookCreated:
        """POST /v1/webhooks

        url: where each event is POSTed (http or https)
        events: the event types to receive
        """
        return self._call(_CREATE_WEBHOOK, body=given(url=url, events=events, description=description))

    def get_plan(self, plan_id: str | UUID) -> models.Plan:
        """GET /v1/plans/{plan_id}

        plan_id: the plan's id
        """
        return self._call(_GET_PLAN, path={"plan_id": plan_id})

    def update_plan(
        self,
        plan_id: str | UUID,
        *,
        if_match: int | str | NotGiven = NOT_GIVEN,
        goal_event: str | NotGiven | None = NOT_GIVEN,
        goal_data: dict[str, Any] | NotGiven | None = NOT_GIVEN,
        status: str | NotGiven | None = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.Plan:
        """PUT /v1/plans/{plan_id}

        plan_id: the plan's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return self._call(
            _UPDATE_PLAN,
            path={"plan_id": plan_id},
            headers=_headers({"If-Match": if_match}),
            body=given(
                goal_event=goal_event, goal_data=goal_data, status=status, state=state, user_id=user_id
            ),
        )

    def delete_plan(self, plan_id: str | UUID, *, if_match: int | str | NotGiven = NOT_GIVEN) -> None:
        """DELETE /v1/plans/{plan_id}

        plan_id: the plan's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return self._call(_DELETE_PLAN, path={"plan_id": plan_id}, headers=_headers({"If-Match": if_match}))

    def list_plans(
        self,
        *,
        status: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.PlanPage:
        """GET /v1/plans

        status: only plans in this status
        user_id: only the plans of this user
        """
        return self._call(
            _LIST_PLANS, query={"status": status, "user_id": user_id, "limit": limit, "cursor": cursor}
        )

    def create_plan(
        self,
        *,
        plan_id: str,
        goal_event: str,
        goal_data: dict[str, Any] | NotGiven = NOT_GIVEN,
        status: str | NotGiven = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.Plan:
        """POST /v1/plans

        plan_id: the caller's id for the plan, unique in the tenant
        goal_event: the event that set the goal, e.g. trip.requested
        goal_data: the goal's data
        status: lower-case, e.g. pending, running, done, failed
        state: any JSON the agents keep with the plan
        user_id: the user the plan is for
        """
        return self._call(
            _CREATE_PLAN,
            body=given(
                plan_id=plan_id,
                goal_event=goal_event,
                goal_data=goal_data,
                status=status,
                state=state,
                user_id=user_id,
            ),
        )

    def find_task_context_by_subtask(self, subtask_id: str | UUID) -> models.TaskContext:
        """GET /v1/task-context/by-subtask/{subtask_id}

        subtask_id: a sub-task's id
        """
        return self._call(_FIND_TASK_CONTEXT_BY_SUBTASK, path={"subtask_id": subtask_id})

    def get_task_context(self, task_id: str | UUID) -> models.TaskContext:
        """GET /v1/task-context/{task_id}

        task_id: the task's id
        """
        return self._call(_GET_TASK_CONTEXT, path={"task_id": task_id})

    def update_task_context(
        self,
        task_id: str | UUID,
        *,
        if_match: int | str | NotGiven = NOT_GIVEN,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        event_type: str | NotGiven | None = NOT_GIVEN,
        response_event: str | NotGiven | None = NOT_GIVEN,
        response_topic: str | NotGiven | None = NOT_GIVEN,
        data: dict[str, Any] | NotGiven | None = NOT_GIVEN,
        sub_tasks: Sequence[str] | NotGiven | None = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
    ) -> models.TaskContext:
        """PUT /v1/task-context/{task_id}

        task_id: the task's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        sub_tasks: replaces the list
        """
        return self._call(
            _UPDATE_TASK_CONTEXT,
            path={"task_id": task_id},
            headers=_headers({"If-Match": if_match}),
            body=given(
                plan_id=plan_id,
                event_type=event_type,
                response_event=response_event,
                response_topic=response_topic,
                data=data,
                sub_tasks=sub_tasks,
                state=state,
            ),
        )

    def delete_task_context(self, task_id: str | UUID, *, if_match: int | str | NotGiven = NOT_GIVEN) -> None:
        """DELETE /v1/task-context/{task_id}

        task_id: the task's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return self._call(
            _DELETE_TASK_CONTEXT, path={"task_id": task_id}, headers=_headers({"If-Match": if_match})
        )

    def list_task_contexts(
        self,
        *,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.TaskContextPage:
        """GET /v1/task-context

        plan_id: only this plan's tasks
        """
        return self._call(_LIST_TASK_CONTEXTS, query={"plan_id": plan_id, "limit": limit, "cursor": cursor})

    def create_task_context(
        self,
        *,
        task_id: str,
        event_type: str,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        response_event: str | NotGiven | None = NOT_GIVEN,
        response_topic: str | NotGiven | None = NOT_GIVEN,
        data: dict[str, Any] | NotGiven = NOT_GIVEN,
        sub_tasks: Sequence[str] | NotGiven = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
    ) -> models.TaskContext:
        """POST /v1/task-context

        task_id: the caller's id for the task, unique in the tenant
        plan_id: the plan the task belongs to
        event_type: the event the task handles
        response_event: the event to answer with
        response_topic: where to send the answer
        sub_tasks: ids of the sub-tasks it waits for; each belongs to one task
        """
        return self._call(
            _CREATE_TASK_CONTEXT,
            body=given(
                task_id=task_id,
                plan_id=plan_id,
                event_type=event_type,
                response_event=response_event,
                response_topic=response_topic,
                data=data,
                sub_tasks=sub_tasks,
                state=state,
            ),
        )

    def iter_memories(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        filters: models.SearchFilters | dict[str, Any] | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> Iterator[models.Memory]:
        """Every item of `list_memories`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_memories(
                user_id=user_id, container=container, filters=filters, limit=limit, cursor=cursor
            )
            yield from page.memories
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_sessions(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> Iterator[models.SessionSummary]:
        """Every item of `list_sessions`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_sessions(user_id=user_id, agent_id=agent_id, limit=limit, cursor=cursor)
            yield from page.sessions
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_documents(
        self,
        *,
        container: str | NotGiven | None = NOT_GIVEN,
        status: Literal["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"]
        | NotGiven
        | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> Iterator[models.Document]:
        """Every item of `list_documents`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_documents(container=container, status=status, limit=limit, cursor=cursor)
            yield from page.documents
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_entities(
        self,
        *,
        q: str | NotGiven | None = NOT_GIVEN,
        type: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> Iterator[models.Entity]:
        """Every item of `list_entities`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_entities(q=q, type=type, limit=limit, cursor=cursor)
            yield from page.entities
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_working(
        self,
        scope: str | UUID,
        *,
        limit: int | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> Iterator[models.WorkingItem]:
        """Every item of `list_working`, following `next_after` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_working(scope, limit=limit, user_id=user_id, after=cursor)
            yield from page.items
            if page.next_after is None:
                return
            cursor = page.next_after

    def iter_procedures(
        self,
        *,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> Iterator[models.Procedure]:
        """Every item of `list_procedures`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_procedures(agent_id=agent_id, kind=kind, limit=limit, cursor=cursor)
            yield from page.procedures
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_plans(
        self,
        *,
        status: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> Iterator[models.Plan]:
        """Every item of `list_plans`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_plans(status=status, user_id=user_id, limit=limit, cursor=cursor)
            yield from page.plans
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_task_contexts(
        self, *, plan_id: str | NotGiven | None = NOT_GIVEN, limit: int | NotGiven = NOT_GIVEN
    ) -> Iterator[models.TaskContext]:
        """Every item of `list_task_contexts`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = self.list_task_contexts(plan_id=plan_id, limit=limit, cursor=cursor)
            yield from page.task_contexts
            if page.next_cursor is None:
                return
            cursor = page.next_cursor


class AsyncOperations(AsyncCore):
    async def wait_for_document(
        self, document_id: UUID | str, *, timeout: float = 300.0, interval: float = 0.5
    ) -> models.Document:
        """Follow a document until it is done: IngestionFailed if it failed, WaitTimeout if slow."""
        deadline = time.monotonic() + timeout
        while True:
            document = await self.get_document(document_id)
            if document_finished(document, deadline, timeout):
                return document
            await asyncio.sleep(interval)

    async def get_health(self) -> models.Health:
        """GET /health"""
        return await self._call(
            _GET_HEALTH,
        )

    async def get_memory(
        self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.Memory:
        """GET /v1/memories/{id}

        id: the memory's id
        user_id: the user the request is made for
        """
        return await self._call(_GET_MEMORY, path={"id": id}, query={"user_id": user_id})

    async def delete_memory(self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/memories/{id}

        id: the memory's id
        user_id: the user the request is made for
        """
        return await self._call(_DELETE_MEMORY, path={"id": id}, query={"user_id": user_id})

    async def update_memory(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        content: str | NotGiven | None = NOT_GIVEN,
        tags: Sequence[str] | NotGiven | None = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven | None = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven
        | None = NOT_GIVEN,
        expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
    ) -> models.CreatedMemory:
        """PATCH /v1/memories/{id}

        id: the memory's id
        user_id: the user the request is made for
        content: new text: a new version, as supersedes makes one (the memory stays as history); the answer is the new version
        extract: with content: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way
        """
        return await self._call(
            _UPDATE_MEMORY,
            path={"id": id},
            query={"user_id": user_id},
            body=given(
                content=content,
                tags=tags,
                metadata=metadata,
                memory_type=memory_type,
                expires_at=expires_at,
                visibility=visibility,
                extract=extract,
            ),
        )

    async def get_memory_history(
        self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.MemoryHistory:
        """GET /v1/memories/{id}/history

        id: the memory's id
        user_id: the user the request is made for
        """
        return await self._call(_GET_MEMORY_HISTORY, path={"id": id}, query={"user_id": user_id})

    async def get_related_memories(
        self,
        id: str | UUID,
        *,
        depth: int | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.RelatedMemories:
        """GET /v1/memories/{id}/related

        id: the memory's id
        depth: steps over memory relationships
        user_id: the user the request is made for
        """
        return await self._call(
            _GET_RELATED_MEMORIES, path={"id": id}, query={"depth": depth, "limit": limit, "user_id": user_id}
        )

    async def revert_memory(
        self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.Memory:
        """POST /v1/memories/{id}/revert

        id: the memory's id
        user_id: the user the request is made for
        """
        return await self._call(_REVERT_MEMORY, path={"id": id}, query={"user_id": user_id})

    async def create_memory(
        self,
        *,
        content: str,
        container: str | NotGiven = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        conversation_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven = NOT_GIVEN,
        confidence: float | NotGiven = NOT_GIVEN,
        valid_from: datetime | str | NotGiven | None = NOT_GIVEN,
        expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
        embedding: Sequence[float] | NotGiven | None = NOT_GIVEN,
        embedding_model: str | NotGiven | None = NOT_GIVEN,
        supersedes: UUID | str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
    ) -> models.CreatedMemory:
        """POST /v1/memories

        user_id: the user this memory is about and for
        visibility: 'private': seen only by requests made for user_id; 'tenant': by all
        supersedes: the id of the memory this one replaces: it stays as history, no longer current
        extract: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way
        """
        return await self._call(
            _CREATE_MEMORY,
            body=given(
                content=content,
                container=container,
                memory_type=memory_type,
                tags=tags,
                metadata=metadata,
                agent_id=agent_id,
                conversation_id=conversation_id,
                user_id=user_id,
                visibility=visibility,
                confidence=confidence,
                valid_from=valid_from,
                expires_at=expires_at,
                embedding=embedding,
                embedding_model=embedding_model,
                supersedes=supersedes,
                extract=extract,
            ),
        )

    async def create_memories(
        self, *, memories: Sequence[models.MemoryCreate | dict[str, Any]]
    ) -> models.MemoryBatchResult:
        """POST /v1/memories/batch

        memories: 1 to 100 memories, each as POST /v1/memories takes it: stored all or none, in this order
        """
        return await self._call(_CREATE_MEMORIES, body=given(memories=memories))

    async def upsert_memory(
        self,
        *,
        content: str,
        container: str | NotGiven = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        conversation_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven = NOT_GIVEN,
        confidence: float | NotGiven = NOT_GIVEN,
        valid_from: datetime | str | NotGiven | None = NOT_GIVEN,
        expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
        embedding: Sequence[float] | NotGiven | None = NOT_GIVEN,
        embedding_model: str | NotGiven | None = NOT_GIVEN,
        supersedes: NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        dedupe_threshold: float | NotGiven = NOT_GIVEN,
    ) -> models.UpsertResult:
        """POST /v1/memories/upsert

        user_id: the user this memory is about and for
        visibility: 'private': seen only by requests made for user_id; 'tenant': by all
        supersedes: not accepted here: upsert decides itself which memory it updates. To replace a given memory, POST /v1/memories with supersedes
        extract: find the memory's entities and relations and relate it to the owner's older memories, as for documents and messages (graph-link: a changed fact retires the old one): 'light' the offline heuristic, 'full' the configured LLM, 'none' neither. Default: 'full' with an LLM configured, else 'light'. The content is stored as sent either way
        dedupe_threshold: an existing memory at least this similar (cosine) is the same memory
        """
        return await self._call(
            _UPSERT_MEMORY,
            body=given(
                content=content,
                container=container,
                memory_type=memory_type,
                tags=tags,
                metadata=metadata,
                agent_id=agent_id,
                conversation_id=conversation_id,
                user_id=user_id,
                visibility=visibility,
                confidence=confidence,
                valid_from=valid_from,
                expires_at=expires_at,
                embedding=embedding,
                embedding_model=embedding_model,
                supersedes=supersedes,
                extract=extract,
                dedupe_threshold=dedupe_threshold,
            ),
        )

    async def list_memories(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        filters: models.SearchFilters | dict[str, Any] | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.MemoryPage:
        """POST /v1/memories/list

        user_id: the user the request is made for
        """
        return await self._call(
            _LIST_MEMORIES,
            body=given(user_id=user_id, container=container, filters=filters, limit=limit, cursor=cursor),
        )

    async def search(
        self,
        *,
        query: str,
        scope: Literal["memories", "chunks", "all", "messages"] | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        score_threshold: float | NotGiven | None = NOT_GIVEN,
        mode: Literal["hybrid", "vector", "text"] | NotGiven = NOT_GIVEN,
        filters: models.SearchFilters | dict[str, Any] | NotGiven = NOT_GIVEN,
        embedding: Sequence[float] | NotGiven | None = NOT_GIVEN,
        embedding_model: str | NotGiven | None = NOT_GIVEN,
        as_of: datetime | str | NotGiven | None = NOT_GIVEN,
        include_history: bool | NotGiven = NOT_GIVEN,
        include_related: bool | NotGiven = NOT_GIVEN,
    ) -> models.SearchResponse | models.MessageSearchResponse:
        """POST /v1/search

        scope: memories, chunks (of documents), all (both, ranked together), or messages (the user_id's conversation messages, with filters.agent_id)
        user_id: the user the request is made for
        container: 'a.b' exactly, or 'a.b.*' for a.b and below
        score_threshold: leave out the results whose `score` is below it (a vector mode score below 0 always)
        embedding: a query vector of your own, of embedding_model: the configured model, or one the searched rows have vectors of (memories': those sent with them; chunks': those they were embedded with; scope messages: the configured model); another model is a 422 on embedding_model that lists them. Scope all searches such a model in the kind that has its vectors only
        as_of: return the memories valid at this time, and the document chunks created by then (a chunk is valid from its creation, its valid_from, whatever its document's document_date) (not with scope 'messages')
        include_history: also return superseded memories; chunks have no versions: they are returned alike (not with scope 'messages')
        include_related: attach each memory result's neighbours, with the relationship type (not with scope 'messages')
        """
        return await self._call(
            _SEARCH,
            body=given(
                query=query,
                scope=scope,
                user_id=user_id,
                container=container,
                limit=limit,
                score_threshold=score_threshold,
                mode=mode,
                filters=filters,
                embedding=embedding,
                embedding_model=embedding_model,
                as_of=as_of,
                include_history=include_history,
                include_related=include_related,
            ),
        )

    async def get_session(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        after: int | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> models.Conversation:
        """GET /v1/sessions/{id}

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        after: return messages after this seq
        """
        return await self._call(
            _GET_SESSION,
            path={"id": id},
            query={"user_id": user_id, "agent_id": agent_id, "after": after, "limit": limit},
        )

    async def delete_session(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
    ) -> None:
        """DELETE /v1/sessions/{id}

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return await self._call(
            _DELETE_SESSION, path={"id": id}, query={"user_id": user_id, "agent_id": agent_id}
        )

    async def add_messages(
        self,
        id: str | UUID,
        *,
        messages: Sequence[models.MessageIn | dict[str, Any]],
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven = NOT_GIVEN,
    ) -> models.AppendResult:
        """POST /v1/sessions/{id}/messages

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        extract: memory extraction from the messages, as for documents: `none`; `light`, the offline heuristic (statements in the user's messages); `full`, the configured LLM over the user's and the assistant's messages. `true` and `false` still mean `light` and `none`
        """
        return await self._call(
            _ADD_MESSAGES,
            path={"id": id},
            query={"user_id": user_id, "agent_id": agent_id},
            body=given(messages=messages, extract=extract),
        )

    async def extract_session(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.ExtractionReport:
        """POST /v1/sessions/{id}/extract

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return await self._call(
            _EXTRACT_SESSION, path={"id": id}, query={"user_id": user_id, "agent_id": agent_id}
        )

    async def get_recent_messages(
        self,
        id: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> models.RecentMessages:
        """POST /v1/sessions/{id}/recent

        id: the session's id
        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return await self._call(
            _GET_RECENT_MESSAGES,
            path={"id": id},
            query={"user_id": user_id, "agent_id": agent_id, "limit": limit},
        )

    async def list_sessions(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.SessionPage:
        """GET /v1/sessions

        user_id: the user the request is made for
        agent_id: the agent the request is made for
        """
        return await self._call(
            _LIST_SESSIONS, query={"user_id": user_id, "agent_id": agent_id, "limit": limit, "cursor": cursor}
        )

    async def create_session(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
    ) -> models.Session:
        """POST /v1/sessions

        user_id: the user in this conversation
        agent_id: the agent in this conversation
        container: where extracted memories are stored
        """
        return await self._call(
            _CREATE_SESSION,
            body=given(user_id=user_id, agent_id=agent_id, container=container, metadata=metadata),
        )

    async def get_stats(self, *, user_id: str | NotGiven | None = NOT_GIVEN) -> models.Stats:
        """GET /v1/stats

        user_id: count only this user's memories
        """
        return await self._call(_GET_STATS, query={"user_id": user_id})

    async def get_document(self, id: str | UUID) -> models.Document:
        """GET /v1/documents/{id}

        id: the document's id
        """
        return await self._call(_GET_DOCUMENT, path={"id": id})

    async def delete_document(self, id: str | UUID) -> None:
        """DELETE /v1/documents/{id}

        id: the document's id
        """
        return await self._call(_DELETE_DOCUMENT, path={"id": id})

    @overload
    async def create_document(
        self,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        url: str | NotGiven | None = NOT_GIVEN,
        file_base64: str | NotGiven | None = NOT_GIVEN,
        filename: str | NotGiven | None = NOT_GIVEN,
        content_type: str | NotGiven | None = NOT_GIVEN,
        title: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        document_date: datetime | str | NotGiven | None = NOT_GIVEN,
        wait: Literal[True],
        wait_timeout: float = 300.0,
    ) -> models.Document: ...

    @overload
    async def create_document(
        self,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        url: str | NotGiven | None = NOT_GIVEN,
        file_base64: str | NotGiven | None = NOT_GIVEN,
        filename: str | NotGiven | None = NOT_GIVEN,
        content_type: str | NotGiven | None = NOT_GIVEN,
        title: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        document_date: datetime | str | NotGiven | None = NOT_GIVEN,
        wait: Literal[False] = False,
        wait_timeout: float = 300.0,
    ) -> models.DocumentAccepted: ...

    async def create_document(
        self,
        *,
        content: str | NotGiven | None = NOT_GIVEN,
        url: str | NotGiven | None = NOT_GIVEN,
        file_base64: str | NotGiven | None = NOT_GIVEN,
        filename: str | NotGiven | None = NOT_GIVEN,
        content_type: str | NotGiven | None = NOT_GIVEN,
        title: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven | None = NOT_GIVEN,
        document_date: datetime | str | NotGiven | None = NOT_GIVEN,
        wait: bool = False,
        wait_timeout: float = 300.0,
    ) -> models.DocumentAccepted | models.Document:
        """POST /v1/documents

        content: the document's text
        url: an http(s) page or file to fetch
        file_base64: a file's bytes, base64; send filename too
        content_type: detected from the bytes when missing
        custom_id: your id: sending it again replaces the document (same content: no-op)
        user_id: the user who uploads it: the document and the memories extracted from it are theirs (user_id, visible to the tenant), erased with them (DELETE /v1/users/{user_id})
        extract: memories from the chunks: none (chunks only), light (offline heuristic) or full (the configured LLM); default: full when an LLM provider is configured, else light
        document_date: when the content was written (ISO 8601); relative dates in the text are read against it, and it is a memory's valid_from when the text states none. Default: now
        """
        accepted = await self._call(
            _CREATE_DOCUMENT,
            body=given(
                content=content,
                url=url,
                file_base64=file_base64,
                filename=filename,
                content_type=content_type,
                title=title,
                container=container,
                tags=tags,
                metadata=metadata,
                custom_id=custom_id,
                user_id=user_id,
                extract=extract,
                document_date=document_date,
            ),
            retry=True if custom_id not in (NOT_GIVEN, None) else None,
        )
        return await self.wait_for_document(accepted.id, timeout=wait_timeout) if wait else accepted

    async def list_documents(
        self,
        *,
        container: str | NotGiven | None = NOT_GIVEN,
        status: Literal["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"]
        | NotGiven
        | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.DocumentPage:
        """POST /v1/documents/list"""
        return await self._call(
            _LIST_DOCUMENTS, body=given(container=container, status=status, limit=limit, cursor=cursor)
        )

    async def get_entity(
        self,
        id: str | UUID,
        *,
        limit: int | NotGiven = NOT_GIVEN,
        observations_cursor: str | NotGiven | None = NOT_GIVEN,
        relations_cursor: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.EntityDetail:
        """GET /v1/entities/{id}

        id: the entity's id
        limit: items per page
        observations_cursor: next_cursor of the previous page
        relations_cursor: next_cursor of the previous page
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return await self._call(
            _GET_ENTITY,
            path={"id": id},
            query={
                "limit": limit,
                "observations_cursor": observations_cursor,
                "relations_cursor": relations_cursor,
                "user_id": user_id,
            },
        )

    async def delete_entity(self, id: str | UUID) -> None:
        """DELETE /v1/entities/{id}

        id: the entity's id
        """
        return await self._call(_DELETE_ENTITY, path={"id": id})

    async def add_observation(
        self,
        id: str | UUID,
        *,
        memory_id: UUID | str | NotGiven | None = NOT_GIVEN,
        content: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        memory_type: Literal["fact", "preference", "episode", "insight", "task", "procedure"]
        | NotGiven = NOT_GIVEN,
        is_subject: bool | NotGiven = NOT_GIVEN,
    ) -> models.Observation:
        """POST /v1/entities/{id}/observations

        id: the entity's id
        is_subject: the memory is about this entity
        """
        return await self._call(
            _ADD_OBSERVATION,
            path={"id": id},
            body=given(
                memory_id=memory_id,
                content=content,
                container=container,
                memory_type=memory_type,
                is_subject=is_subject,
            ),
        )

    async def delete_observation(
        self, id: str | UUID, memory_id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> None:
        """DELETE /v1/entities/{id}/observations/{memory_id}

        id: the entity's id
        memory_id: the memory's id
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return await self._call(
            _DELETE_OBSERVATION, path={"id": id, "memory_id": memory_id}, query={"user_id": user_id}
        )

    async def delete_relation(self, id: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/relations/{id}

        id: the relation's id
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return await self._call(_DELETE_RELATION, path={"id": id}, query={"user_id": user_id})

    async def list_entities(
        self,
        *,
        q: str | NotGiven | None = NOT_GIVEN,
        type: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.EntityPage:
        """GET /v1/entities

        q: name or alias
        type: entity type
        limit: items per page
        cursor: next_cursor of the previous page
        """
        return await self._call(
            _LIST_ENTITIES, query={"q": q, "type": type, "limit": limit, "cursor": cursor}
        )

    async def create_entity(
        self,
        *,
        name: str,
        entity_type: str | NotGiven = NOT_GIVEN,
        aliases: Sequence[str] | NotGiven = NOT_GIVEN,
    ) -> models.Entity:
        """POST /v1/entities

        entity_type: a lowercase word: person, place, ...
        aliases: other names; each a key of its own (not the name's, nor another alias's)
        """
        return await self._call(
            _CREATE_ENTITY, body=given(name=name, entity_type=entity_type, aliases=aliases)
        )

    async def create_relation(
        self,
        *,
        source: UUID | str | models.EntityRef | dict[str, Any],
        relation_type: str,
        target: UUID | str | models.EntityRef | dict[str, Any],
        valid_from: datetime | str | NotGiven | None = NOT_GIVEN,
        valid_to: datetime | str | NotGiven | None = NOT_GIVEN,
        confidence: float | NotGiven = NOT_GIVEN,
        source_memory_id: UUID | str | NotGiven | None = NOT_GIVEN,
    ) -> models.Relation:
        """POST /v1/relations

        source: an entity id, or {name, entity_type}
        relation_type: lowercase_with_underscores: lives_in, works_for, ...
        valid_from: default: now
        valid_to: after valid_from; without valid_from, in the future (valid_from is now)
        source_memory_id: the memory that states it, if any
        """
        return await self._call(
            _CREATE_RELATION,
            body=given(
                source=source,
                relation_type=relation_type,
                target=target,
                valid_from=valid_from,
                valid_to=valid_to,
                confidence=confidence,
                source_memory_id=source_memory_id,
            ),
        )

    async def get_graph(
        self,
        *,
        entity: str,
        depth: int | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
        as_of: datetime | str | NotGiven | None = NOT_GIVEN,
        include_history: bool | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.Subgraph:
        """GET /v1/graph

        entity: an entity id, or its name
        depth: hops from the entity
        limit: entities per page
        cursor: next_cursor of the previous page
        as_of: relations valid at this time
        include_history: also relations no longer current
        user_id: the user the request is made for: their private memories' observations and relations
        """
        return await self._call(
            _GET_GRAPH,
            query={
                "entity": entity,
                "depth": depth,
                "limit": limit,
                "cursor": cursor,
                "as_of": as_of,
                "include_history": include_history,
                "user_id": user_id,
            },
        )

    async def get_working(
        self, scope: str | UUID, key: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.WorkingItem:
        """GET /v1/working/{scope}/{key}

        scope: a plan or agent scope, e.g. plan-42
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        """
        return await self._call(_GET_WORKING, path={"scope": scope, "key": key}, query={"user_id": user_id})

    async def set_working(
        self,
        scope: str | UUID,
        key: str | UUID,
        *,
        value: Any,
        if_match: int | str | NotGiven = NOT_GIVEN,
        ttl_seconds: int | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.WorkingItem:
        """PUT /v1/working/{scope}/{key}

        scope: a plan or agent scope, e.g. plan-42
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        value: any JSON value, null included
        ttl_seconds: the key expires this long after the write. Left out, an existing key keeps its expiry; null: it never expires
        user_id: the user this state belongs to: erased with them (DELETE /v1/users/{user_id}). A write for a user never takes a key of another user (409 on user_id); one of no user becomes theirs. Left out, an existing key keeps its user; null: none
        """
        return await self._call(
            _SET_WORKING,
            path={"scope": scope, "key": key},
            headers=_headers({"If-Match": if_match}),
            body=given(value=value, ttl_seconds=ttl_seconds, user_id=user_id),
        )

    async def delete_working(
        self,
        scope: str | UUID,
        key: str | UUID,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        if_match: int | str | NotGiven = NOT_GIVEN,
    ) -> None:
        """DELETE /v1/working/{scope}/{key}

        scope: a plan or agent scope, e.g. plan-42
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return await self._call(
            _DELETE_WORKING,
            path={"scope": scope, "key": key},
            query={"user_id": user_id},
            headers=_headers({"If-Match": if_match}),
        )

    async def list_working(
        self,
        scope: str | UUID,
        *,
        after: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.WorkingScope:
        """GET /v1/working/{scope}

        scope: a plan or agent scope, e.g. plan-42
        after: the last key of the previous page
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        """
        return await self._call(
            _LIST_WORKING, path={"scope": scope}, query={"after": after, "limit": limit, "user_id": user_id}
        )

    async def clear_working(
        self, scope: str | UUID, *, user_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.ScopeCleared:
        """DELETE /v1/working/{scope}

        scope: a plan or agent scope, e.g. plan-42
        user_id: the user the request is made for: a key of another user is not found (one of no user, or theirs, is)
        """
        return await self._call(_CLEAR_WORKING, path={"scope": scope}, query={"user_id": user_id})

    async def get_procedure(
        self, id: str | UUID, *, agent_id: str | NotGiven | None = NOT_GIVEN
    ) -> models.Procedure:
        """GET /v1/procedures/{id}

        id: the procedure's id
        agent_id: the agent the request is made for
        """
        return await self._call(_GET_PROCEDURE, path={"id": id}, query={"agent_id": agent_id})

    async def delete_procedure(self, id: str | UUID, *, agent_id: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/procedures/{id}

        id: the procedure's id
        agent_id: the agent the request is made for
        """
        return await self._call(_DELETE_PROCEDURE, path={"id": id}, query={"agent_id": agent_id})

    async def update_procedure(
        self,
        id: str | UUID,
        *,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        trigger: str | NotGiven | None = NOT_GIVEN,
        content: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven | None = NOT_GIVEN,
        tags: Sequence[str] | NotGiven | None = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven | None = NOT_GIVEN,
    ) -> models.Procedure:
        """PATCH /v1/procedures/{id}

        id: the procedure's id
        agent_id: the agent the request is made for
        """
        return await self._call(
            _UPDATE_PROCEDURE,
            path={"id": id},
            query={"agent_id": agent_id},
            body=given(
                kind=kind,
                trigger=trigger,
                content=content,
                visibility=visibility,
                tags=tags,
                metadata=metadata,
            ),
        )

    async def list_procedures(
        self,
        *,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.ProcedurePage:
        """GET /v1/procedures

        agent_id: the agent the request is made for
        """
        return await self._call(
            _LIST_PROCEDURES, query={"agent_id": agent_id, "kind": kind, "limit": limit, "cursor": cursor}
        )

    async def create_procedure(
        self,
        *,
        trigger: str,
        content: str,
        kind: Literal["rule", "example"] | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        visibility: Literal["private", "tenant"] | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        tags: Sequence[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
    ) -> models.Procedure:
        """POST /v1/procedures

        kind: 'rule': an instruction; 'example': a few-shot example
        trigger: the situation in which this procedure applies
        content: the rule, or the example (input and output)
        visibility: 'private': only requests for agent_id see it
        user_id: the user it was learned from or is for: erased with them (DELETE /v1/users/{user_id}); it does not limit who reads it
        """
        return await self._call(
            _CREATE_PROCEDURE,
            body=given(
                kind=kind,
                trigger=trigger,
                content=content,
                agent_id=agent_id,
                visibility=visibility,
                user_id=user_id,
                tags=tags,
                metadata=metadata,
            ),
        )

    async def match_procedures(
        self,
        *,
        situation: str,
        limit: int | NotGiven = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        min_similarity: float | NotGiven = NOT_GIVEN,
    ) -> models.MatchResponse:
        """POST /v1/procedures/match

        agent_id: also match this agent's private procedures
        min_similarity: cosine similarity between situation and trigger
        """
        return await self._call(
            _MATCH_PROCEDURES,
            body=given(
                situation=situation, limit=limit, agent_id=agent_id, kind=kind, min_similarity=min_similarity
            ),
        )

    async def get_profile(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        q: str | NotGiven | None = NOT_GIVEN,
        max_tokens: int | NotGiven = NOT_GIVEN,
    ) -> models.Profile:
        """GET /v1/profile

        user_id: the user to summarise (and made for)
        agent_id: the agent to summarise
        container: 'a.b' or 'a.b.*'
        q: add memories relevant to this
        """
        return await self._call(
            _GET_PROFILE,
            query={
                "user_id": user_id,
                "agent_id": agent_id,
                "container": container,
                "q": q,
                "max_tokens": max_tokens,
            },
        )

    async def get_context(
        self,
        *,
        query: str,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        session_id: UUID | str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        max_tokens: int | NotGiven = NOT_GIVEN,
    ) -> models.AgentContext:
        """POST /v1/context

        query: what the agent is about to do or answer: the turn's message
        user_id: the user the turn is for
        agent_id: the agent (its private procedures)
        session_id: the conversation: its summary and last messages
        container: memories of this container only ('a.b', or 'a.b.*' with everything below)
        plan_id: a plan (/v1/plans): its status and state, and its WorkflowState values in working memory
        max_tokens: the budget of `context`, estimated at 4 characters per token
        """
        return await self._call(
            _GET_CONTEXT,
            body=given(
                query=query,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                container=container,
                plan_id=plan_id,
                max_tokens=max_tokens,
            ),
        )

    async def delete_container(
        self, name: str | UUID, *, confirm: bool | NotGiven = NOT_GIVEN
    ) -> models.ContainerDeleted:
        """DELETE /v1/containers/{name}

        name: the container's full name, e.g. crm.contacts
        confirm: required when the container is not empty
        """
        return await self._call(_DELETE_CONTAINER, path={"name": name}, query={"confirm": confirm})

    async def archive_container(self, name: str | UUID) -> models.ContainerArchived:
        """POST /v1/containers/{name}/archive

        name: the container's full name, e.g. crm.contacts
        """
        return await self._call(_ARCHIVE_CONTAINER, path={"name": name})

    async def erase_user(
        self, user_id: str | UUID, *, confirm: bool | NotGiven = NOT_GIVEN
    ) -> models.UserErasure:
        """DELETE /v1/users/{user_id}

        user_id: the user whose data goes: every row of theirs
        confirm: required to erase; without it, a 409 lists what would go
        """
        return await self._call(_ERASE_USER, path={"user_id": user_id}, query={"confirm": confirm})

    async def list_containers(self) -> models.ContainerTree:
        """GET /v1/containers"""
        return await self._call(
            _LIST_CONTAINERS,
        )

    async def create_container(
        self, *, name: str, parent: str | NotGiven | None = NOT_GIVEN, description: str | NotGiven = NOT_GIVEN
    ) -> models.Container:
        """POST /v1/containers

        name: the full name ('crm.contacts'), or a name below `parent`
        parent: an existing container to create it under
        description: a new container's description; an existing container keeps its own unless one is sent ('' clears it)
        """
        return await self._call(
            _CREATE_CONTAINER, body=given(name=name, parent=parent, description=description)
        )

    async def list_extraction_instructions(
        self, *, container: str | NotGiven | None = NOT_GIVEN
    ) -> models.InstructionsList:
        """GET /v1/extraction-instructions

        container: a container; omit for the whole tenant's instructions
        """
        return await self._call(_LIST_EXTRACTION_INSTRUCTIONS, query={"container": container})

    async def set_extraction_instructions(
        self, *, instructions: str, container: str | NotGiven | None = NOT_GIVEN
    ) -> models.Instructions:
        """PUT /v1/extraction-instructions

        container: the container (and everything below it); null for the whole tenant
        instructions: added to the LLM extraction prompt (extract=full) for memories of this scope, e.g. 'Record dietary restrictions as preferences.' They refine what is extracted; they cannot change the output format, the rules, or where memories are stored
        """
        return await self._call(
            _SET_EXTRACTION_INSTRUCTIONS, body=given(container=container, instructions=instructions)
        )

    async def delete_extraction_instructions(self, *, container: str | NotGiven | None = NOT_GIVEN) -> None:
        """DELETE /v1/extraction-instructions

        container: a container; omit for the whole tenant's instructions
        """
        return await self._call(_DELETE_EXTRACTION_INSTRUCTIONS, query={"container": container})

    async def get_export(self, id: str | UUID) -> models.ExportJob:
        """GET /v1/export/{id}

        id: the id POST /v1/export answered
        """
        return await self._call(_GET_EXPORT, path={"id": id})

    async def get_import(self, id: str | UUID) -> models.ImportJob:
        """GET /v1/import/{id}

        id: the id POST /v1/import?upload=true answered
        """
        return await self._call(_GET_IMPORT, path={"id": id})

    async def export(
        self, *, container: str | NotGiven | None = NOT_GIVEN, with_files: bool | NotGiven = NOT_GIVEN
    ) -> str | models.ExportJob:
        """POST /v1/export

        container: only this container ('a.b', or 'a.b.*' with everything below)
        with_files: also the documents' original bytes (base64, a document_file record each)
        """
        return await self._call(_EXPORT, body=given(container=container, with_files=with_files))

    async def get_webhook(self, id: str | UUID) -> models.WebhookDetail:
        """GET /v1/webhooks/{id}

        id: the webhook's id
        """
        return await self._call(_GET_WEBHOOK, path={"id": id})

    async def delete_webhook(self, id: str | UUID) -> None:
        """DELETE /v1/webhooks/{id}

        id: the webhook's id
        """
        return await self._call(_DELETE_WEBHOOK, path={"id": id})

    async def list_webhooks(self) -> models.WebhookList:
        """GET /v1/webhooks"""
        return await self._call(
            _LIST_WEBHOOKS,
        )

    async def create_webhook(
        self,
        *,
        url: str,
        events: Sequence[
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
        description: str | NotGiven = NOT_GIVEN,
    ) -> models.WebhookCreated:
        """POST /v1/webhooks

        url: where each event is POSTed (http or https)
        events: the event types to receive
        """
        return await self._call(_CREATE_WEBHOOK, body=given(url=url, events=events, description=description))

    async def get_plan(self, plan_id: str | UUID) -> models.Plan:
        """GET /v1/plans/{plan_id}

        plan_id: the plan's id
        """
        return await self._call(_GET_PLAN, path={"plan_id": plan_id})

    async def update_plan(
        self,
        plan_id: str | UUID,
        *,
        if_match: int | str | NotGiven = NOT_GIVEN,
        goal_event: str | NotGiven | None = NOT_GIVEN,
        goal_data: dict[str, Any] | NotGiven | None = NOT_GIVEN,
        status: str | NotGiven | None = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.Plan:
        """PUT /v1/plans/{plan_id}

        plan_id: the plan's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return await self._call(
            _UPDATE_PLAN,
            path={"plan_id": plan_id},
            headers=_headers({"If-Match": if_match}),
            body=given(
                goal_event=goal_event, goal_data=goal_data, status=status, state=state, user_id=user_id
            ),
        )

    async def delete_plan(self, plan_id: str | UUID, *, if_match: int | str | NotGiven = NOT_GIVEN) -> None:
        """DELETE /v1/plans/{plan_id}

        plan_id: the plan's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return await self._call(
            _DELETE_PLAN, path={"plan_id": plan_id}, headers=_headers({"If-Match": if_match})
        )

    async def list_plans(
        self,
        *,
        status: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.PlanPage:
        """GET /v1/plans

        status: only plans in this status
        user_id: only the plans of this user
        """
        return await self._call(
            _LIST_PLANS, query={"status": status, "user_id": user_id, "limit": limit, "cursor": cursor}
        )

    async def create_plan(
        self,
        *,
        plan_id: str,
        goal_event: str,
        goal_data: dict[str, Any] | NotGiven = NOT_GIVEN,
        status: str | NotGiven = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> models.Plan:
        """POST /v1/plans

        plan_id: the caller's id for the plan, unique in the tenant
        goal_event: the event that set the goal, e.g. trip.requested
        goal_data: the goal's data
        status: lower-case, e.g. pending, running, done, failed
        state: any JSON the agents keep with the plan
        user_id: the user the plan is for
        """
        return await self._call(
            _CREATE_PLAN,
            body=given(
                plan_id=plan_id,
                goal_event=goal_event,
                goal_data=goal_data,
                status=status,
                state=state,
                user_id=user_id,
            ),
        )

    async def find_task_context_by_subtask(self, subtask_id: str | UUID) -> models.TaskContext:
        """GET /v1/task-context/by-subtask/{subtask_id}

        subtask_id: a sub-task's id
        """
        return await self._call(_FIND_TASK_CONTEXT_BY_SUBTASK, path={"subtask_id": subtask_id})

    async def get_task_context(self, task_id: str | UUID) -> models.TaskContext:
        """GET /v1/task-context/{task_id}

        task_id: the task's id
        """
        return await self._call(_GET_TASK_CONTEXT, path={"task_id": task_id})

    async def update_task_context(
        self,
        task_id: str | UUID,
        *,
        if_match: int | str | NotGiven = NOT_GIVEN,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        event_type: str | NotGiven | None = NOT_GIVEN,
        response_event: str | NotGiven | None = NOT_GIVEN,
        response_topic: str | NotGiven | None = NOT_GIVEN,
        data: dict[str, Any] | NotGiven | None = NOT_GIVEN,
        sub_tasks: Sequence[str] | NotGiven | None = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
    ) -> models.TaskContext:
        """PUT /v1/task-context/{task_id}

        task_id: the task's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        sub_tasks: replaces the list
        """
        return await self._call(
            _UPDATE_TASK_CONTEXT,
            path={"task_id": task_id},
            headers=_headers({"If-Match": if_match}),
            body=given(
                plan_id=plan_id,
                event_type=event_type,
                response_event=response_event,
                response_topic=response_topic,
                data=data,
                sub_tasks=sub_tasks,
                state=state,
            ),
        )

    async def delete_task_context(
        self, task_id: str | UUID, *, if_match: int | str | NotGiven = NOT_GIVEN
    ) -> None:
        """DELETE /v1/task-context/{task_id}

        task_id: the task's id
        if_match: write only if the item is at this version (the `version` field, or the ETag); '0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with `error.current_version`
        """
        return await self._call(
            _DELETE_TASK_CONTEXT, path={"task_id": task_id}, headers=_headers({"If-Match": if_match})
        )

    async def list_task_contexts(
        self,
        *,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
        cursor: str | NotGiven | None = NOT_GIVEN,
    ) -> models.TaskContextPage:
        """GET /v1/task-context

        plan_id: only this plan's tasks
        """
        return await self._call(
            _LIST_TASK_CONTEXTS, query={"plan_id": plan_id, "limit": limit, "cursor": cursor}
        )

    async def create_task_context(
        self,
        *,
        task_id: str,
        event_type: str,
        plan_id: str | NotGiven | None = NOT_GIVEN,
        response_event: str | NotGiven | None = NOT_GIVEN,
        response_topic: str | NotGiven | None = NOT_GIVEN,
        data: dict[str, Any] | NotGiven = NOT_GIVEN,
        sub_tasks: Sequence[str] | NotGiven = NOT_GIVEN,
        state: Any | NotGiven = NOT_GIVEN,
    ) -> models.TaskContext:
        """POST /v1/task-context

        task_id: the caller's id for the task, unique in the tenant
        plan_id: the plan the task belongs to
        event_type: the event the task handles
        response_event: the event to answer with
        response_topic: where to send the answer
        sub_tasks: ids of the sub-tasks it waits for; each belongs to one task
        """
        return await self._call(
            _CREATE_TASK_CONTEXT,
            body=given(
                task_id=task_id,
                plan_id=plan_id,
                event_type=event_type,
                response_event=response_event,
                response_topic=response_topic,
                data=data,
                sub_tasks=sub_tasks,
                state=state,
            ),
        )

    async def iter_memories(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        container: str | NotGiven | None = NOT_GIVEN,
        filters: models.SearchFilters | dict[str, Any] | NotGiven = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> AsyncIterator[models.Memory]:
        """Every item of `list_memories`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_memories(
                user_id=user_id, container=container, filters=filters, limit=limit, cursor=cursor
            )
            for item in page.memories:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_sessions(
        self,
        *,
        user_id: str | NotGiven | None = NOT_GIVEN,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> AsyncIterator[models.SessionSummary]:
        """Every item of `list_sessions`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_sessions(user_id=user_id, agent_id=agent_id, limit=limit, cursor=cursor)
            for item in page.sessions:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_documents(
        self,
        *,
        container: str | NotGiven | None = NOT_GIVEN,
        status: Literal["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"]
        | NotGiven
        | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> AsyncIterator[models.Document]:
        """Every item of `list_documents`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_documents(container=container, status=status, limit=limit, cursor=cursor)
            for item in page.documents:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_entities(
        self,
        *,
        q: str | NotGiven | None = NOT_GIVEN,
        type: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> AsyncIterator[models.Entity]:
        """Every item of `list_entities`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_entities(q=q, type=type, limit=limit, cursor=cursor)
            for item in page.entities:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_working(
        self,
        scope: str | UUID,
        *,
        limit: int | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
    ) -> AsyncIterator[models.WorkingItem]:
        """Every item of `list_working`, following `next_after` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_working(scope, limit=limit, user_id=user_id, after=cursor)
            for item in page.items:
                yield item
            if page.next_after is None:
                return
            cursor = page.next_after

    async def iter_procedures(
        self,
        *,
        agent_id: str | NotGiven | None = NOT_GIVEN,
        kind: Literal["rule", "example"] | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> AsyncIterator[models.Procedure]:
        """Every item of `list_procedures`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_procedures(agent_id=agent_id, kind=kind, limit=limit, cursor=cursor)
            for item in page.procedures:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_plans(
        self,
        *,
        status: str | NotGiven | None = NOT_GIVEN,
        user_id: str | NotGiven | None = NOT_GIVEN,
        limit: int | NotGiven = NOT_GIVEN,
    ) -> AsyncIterator[models.Plan]:
        """Every item of `list_plans`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_plans(status=status, user_id=user_id, limit=limit, cursor=cursor)
            for item in page.plans:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_task_contexts(
        self, *, plan_id: str | NotGiven | None = NOT_GIVEN, limit: int | NotGiven = NOT_GIVEN
    ) -> AsyncIterator[models.TaskContext]:
        """Every item of `list_task_contexts`, following `next_cursor` page after page."""
        cursor: Any = NOT_GIVEN
        while True:
            page = await self.list_task_contexts(plan_id=plan_id, limit=limit, cursor=cursor)
            for item in page.task_contexts:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor
