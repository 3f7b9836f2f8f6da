"""Every API route and the function that serves it: read by the local HTTP front, by the CDK app and by
the OpenAPI document (engram.api.contract), so all three always agree.

Besides where a route goes, each says what a client needs to know about it that the handler's types
cannot: its operation id (the method name of generated clients and of the SDK), its success status
(and the other one, for a create that may find the item already there), the errors particular to it,
the request headers it reads, and whether repeating it is harmless."""

from __future__ import annotations

from dataclasses import dataclass

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})


@dataclass(frozen=True)
class Route:
    function: str  # folder under functions/
    method: str
    path: str  # API Gateway resource path, with {param} placeholders
    operation_id: str  # a verb: create_memory, search, ...
    authorized: bool = True
    status: int = 200  # the success status
    also: tuple[int, ...] = ()  # other success statuses (200 when a create finds the item already there)
    errors: tuple[int, ...] = ()  # error statuses particular to this route (409, 502, ...)
    headers: tuple[str, ...] = ()  # request headers it reads besides x-api-key ("If-Match")
    etag: bool = False  # answers with an ETag: the item's version
    retry_safe: bool | None = None  # a POST that changes nothing when repeated; default: by method
    idempotency_key: str | None = None  # a body field that, when sent, makes repeating the call safe
    # engram local streams the body to the handler as it arrives, up to MAX_STREAMED_REQUEST_BYTES (an import
    # of any size, in one transaction; an upload's file); in AWS the body stays under the 6 MB Lambda limit.
    streamed_body: bool = False

    @property
    def idempotent(self) -> bool:
        return self.retry_safe if self.retry_safe is not None else self.method in IDEMPOTENT_METHODS


CONFLICT = (409,)
PROVIDER = (502,)  # the embedding model or LLM failed
IF_MATCH = ("If-Match",)

ROUTES: tuple[Route, ...] = (
    Route("health", "GET", "/health", "get_health", authorized=False),
    Route("memories", "POST", "/v1/memories", "create_memory", status=201, errors=(*CONFLICT, *PROVIDER)),
    Route(
        "memories", "POST", "/v1/memories/batch", "create_memories", status=201, errors=(*CONFLICT, *PROVIDER)
    ),
    Route("memories", "POST", "/v1/memories/list", "list_memories", retry_safe=True),
    Route(
        "memories",
        "POST",
        "/v1/memories/upsert",
        "upsert_memory",
        status=201,
        also=(200,),
        retry_safe=True,
        errors=(*CONFLICT, *PROVIDER),
    ),
    Route("memories", "GET", "/v1/memories/{id}", "get_memory"),
    Route("memories", "PATCH", "/v1/memories/{id}", "update_memory", errors=PROVIDER),
    Route("memories", "DELETE", "/v1/memories/{id}", "delete_memory", status=204),
    Route("memories", "GET", "/v1/memories/{id}/history", "get_memory_history"),
    Route("memories", "POST", "/v1/memories/{id}/revert", "revert_memory", errors=CONFLICT),
    Route("memories", "GET", "/v1/memories/{id}/related", "get_related_memories"),
    Route("search", "POST", "/v1/search", "search", retry_safe=True, errors=PROVIDER),
    Route("sessions", "POST", "/v1/sessions", "create_session", status=201),
    Route("sessions", "GET", "/v1/sessions", "list_sessions"),
    Route("sessions", "GET", "/v1/sessions/{id}", "get_session"),
    Route("sessions", "DELETE", "/v1/sessions/{id}", "delete_session", status=204),
    Route("sessions", "POST", "/v1/sessions/{id}/messages", "add_messages", status=201, errors=PROVIDER),
    Route("sessions", "POST", "/v1/sessions/{id}/extract", "extract_session", errors=PROVIDER),
    Route("sessions", "POST", "/v1/sessions/{id}/recent", "get_recent_messages", retry_safe=True),
    Route("stats", "GET", "/v1/stats", "get_stats"),
    Route(
        "documents",
        "POST",
        "/v1/documents",
        "create_document",
        status=202,
        errors=CONFLICT,
        idempotency_key="custom_id",
    ),
    # Locally the file is read as it arrives (up to ENGRAM_MAX_FILE_BYTES); in AWS it goes to S3.
    Route(
        "documents",
        "POST",
        "/v1/documents/upload",
        "upload_document",
        status=202,
        also=(200,),
        errors=CONFLICT,
        streamed_body=True,
    ),
    Route("documents", "POST", "/v1/documents/list", "list_documents", retry_safe=True),
    Route("documents", "GET", "/v1/documents/{id}", "get_document"),
    Route("documents", "DELETE", "/v1/documents/{id}", "delete_document", status=204),
    Route("graph", "GET", "/v1/entities", "list_entities"),
    Route("graph", "POST", "/v1/entities", "create_entity", status=201, also=(200,), errors=CONFLICT),
    Route("graph", "GET", "/v1/entities/{id}", "get_entity"),
    Route("graph", "DELETE", "/v1/entities/{id}", "delete_entity", status=204),
    Route("graph", "POST", "/v1/entities/{id}/observations", "add_observation", status=201),
    Route("graph", "DELETE", "/v1/entities/{id}/observations/{memory_id}", "delete_observation", status=204),
    Route("graph", "POST", "/v1/relations", "create_relation", status=201, also=(200,), errors=CONFLICT),
    Route("graph", "DELETE", "/v1/relations/{id}", "delete_relation", status=204),
    Route("graph", "GET", "/v1/graph", "get_graph", errors=CONFLICT),
    Route(
        "working",
        "PUT",
        "/v1/working/{scope}/{key}",
        "set_working",
        also=(201,),
        errors=CONFLICT,
        headers=IF_MATCH,
        etag=True,
    ),
    Route("working", "GET", "/v1/working/{scope}/{key}", "get_working", etag=True),
    Route(
        "working",
        "DELETE",
        "/v1/working/{scope}/{key}",
        "delete_working",
        status=204,
        errors=CONFLICT,
        headers=IF_MATCH,
    ),
    Route("working", "GET", "/v1/working/{scope}", "list_working"),
    Route("working", "DELETE", "/v1/working/{scope}", "clear_working"),
    Route("procedures", "POST", "/v1/procedures", "create_procedure", status=201, errors=PROVIDER),
    Route("procedures", "GET", "/v1/procedures", "list_procedures"),
    Route("procedures", "POST", "/v1/procedures/match", "match_procedures", retry_safe=True, errors=PROVIDER),
    Route("procedures", "GET", "/v1/procedures/{id}", "get_procedure"),
    Route("procedures", "PATCH", "/v1/procedures/{id}", "update_procedure", errors=PROVIDER),
    Route("procedures", "DELETE", "/v1/procedures/{id}", "delete_procedure", status=204),
    Route("profile", "GET", "/v1/profile", "get_profile", errors=PROVIDER),
    Route("profile", "POST", "/v1/context", "get_context", retry_safe=True, errors=PROVIDER),
    Route("containers", "GET", "/v1/containers", "list_containers"),
    Route("containers", "POST", "/v1/containers", "create_container", status=201, also=(200,)),
    Route("containers", "DELETE", "/v1/containers/{name}", "delete_container", errors=CONFLICT),
    Route("containers", "POST", "/v1/containers/{name}/archive", "archive_container", errors=CONFLICT),
    Route("containers", "DELETE", "/v1/users/{user_id}", "erase_user", errors=CONFLICT),
    Route("containers", "GET", "/v1/extraction-instructions", "list_extraction_instructions"),
    Route("containers", "PUT", "/v1/extraction-instructions", "set_extraction_instructions", also=(201,)),
    Route(
        "containers", "DELETE", "/v1/extraction-instructions", "delete_extraction_instructions", status=204
    ),
    Route("export", "POST", "/v1/export", "export", also=(202,), retry_safe=True),
    Route("export", "GET", "/v1/export/{id}", "get_export"),
    Route(
        "export",
        "POST",
        "/v1/import",
        "import_tenant",
        also=(202,),
        errors=CONFLICT,
        retry_safe=True,
        streamed_body=True,
    ),
    Route("export", "GET", "/v1/import/{id}", "get_import"),
    Route("webhooks", "POST", "/v1/webhooks", "create_webhook", status=201, errors=CONFLICT),
    Route("webhooks", "GET", "/v1/webhooks", "list_webhooks"),
    Route("webhooks", "GET", "/v1/webhooks/{id}", "get_webhook"),
    Route("webhooks", "DELETE", "/v1/webhooks/{id}", "delete_webhook", status=204),
    Route("plans", "POST", "/v1/plans", "create_plan", status=201, errors=CONFLICT, etag=True),
    Route("plans", "GET", "/v1/plans", "list_plans"),
    Route("plans", "GET", "/v1/plans/{plan_id}", "get_plan", etag=True),
    Route(
        "plans",
        "PUT",
        "/v1/plans/{plan_id}",
        "update_plan",
        also=(201,),
        errors=CONFLICT,
        headers=IF_MATCH,
        etag=True,
    ),
    Route(
        "plans", "DELETE", "/v1/plans/{plan_id}", "delete_plan", status=204, errors=CONFLICT, headers=IF_MATCH
    ),
    Route(
        "task_context",
        "POST",
        "/v1/task-context",
        "create_task_context",
        status=201,
        errors=CONFLICT,
        etag=True,
    ),
    Route("task_context", "GET", "/v1/task-context", "list_task_contexts"),
    Route(
        "task_context",
        "GET",
        "/v1/task-context/by-subtask/{subtask_id}",
        "find_task_context_by_subtask",
        etag=True,
    ),
    Route("task_context", "GET", "/v1/task-context/{task_id}", "get_task_context", etag=True),
    Route(
        "task_context",
        "PUT",
        "/v1/task-context/{task_id}",
        "update_task_context",
        also=(201,),
        errors=CONFLICT,
        headers=IF_MATCH,
        etag=True,
    ),
    Route(
        "task_context",
        "DELETE",
        "/v1/task-context/{task_id}",
        "delete_task_context",
        status=204,
        errors=CONFLICT,
        headers=IF_MATCH,
    ),
)

API_FUNCTIONS: tuple[str, ...] = tuple(dict.fromkeys(route.function for route in ROUTES))
AUTHORIZER_FUNCTION = "authorizer"
