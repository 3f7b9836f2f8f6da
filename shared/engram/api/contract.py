"""The OpenAPI document of the whole API: what every function's resolver infers from its handlers'
types, merged, then made true with what only the route table knows (engram.api.routes): operation
ids, success statuses, the error shape on every operation, request headers, security, and the few
bodies a handler reads or writes by hand (the multipart upload, the NDJSON export).

Served at GET /openapi.json; generated clients and the SDK's models are built from it, and the
contract tests compare every documented response with what the server really sends."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import TypeAdapter

from engram import __version__
from engram.api.routes import ROUTES, Route

TITLE = "Engram API"
SECURITY_SCHEME = "apiKey"
ERROR_SCHEMA = "ErrorResponse"
_REF = "#/components/schemas/"
_JSON = "application/json"
NDJSON = "application/x-ndjson"
MULTIPART = "multipart/form-data"

# Why a status can happen on (almost) every route; each route adds its own (Route.errors).
ERROR_DESCRIPTIONS = {
    400: "malformed JSON body",
    401: "no API key: send it in the x-api-key header",
    403: "unknown or revoked API key",
    404: "not found (unknown and other tenants' ids are the same 404)",
    409: "conflict with the current state (a version, an existing id, a supersession)",
    413: "request body over 10 MB",
    422: (
        "invalid input: `error.field` names the field; `error.errors` lists each rule the request broke, "
        "when its validation found them"
    ),
    429: (
        "refused before any handler ran: throttled (`error.code` `throttled`), or the key's daily quota "
        "is used up (`quota_exceeded`): retry after the Retry-After header's seconds"
    ),
    500: "internal error (logged; the message gives away no internals)",
    502: "the embedding model or LLM failed",
    503: (
        "temporarily unavailable: retry after the Retry-After header's seconds. `error.code` "
        "`not_handled`: refused before any handler ran, nothing was applied; any other code: a write "
        "may have been applied"
    ),
}
SUCCESS_DESCRIPTIONS = {
    200: "OK",
    201: "created",
    202: "accepted: processing goes on after the response",
    204: "done; no content",
}
REQUEST_HEADERS: dict[str, dict[str, Any]] = {
    "If-Match": {
        "name": "If-Match",
        "in": "header",
        "required": False,
        "description": (
            "write only if the item is at this version (the `version` field, or the ETag); "
            "'0': only if it does not exist; '*': only if it exists. A mismatch is a 409 with "
            "`error.current_version`"
        ),
        "schema": {"type": "string", "pattern": r'^(\*|(W/)?"?[0-9]{1,18}"?)$'},
    }
}
ETAG = {
    "description": "the item's version, quoted: send it back in If-Match",
    "schema": {"type": "string"},
}
# Response headers of an error status (engram.unavailable holds the values).
RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before sending the request again",
        "schema": {"type": "integer", "minimum": 0},
    }
}
ERROR_HEADERS: dict[int, dict[str, Any]] = {429: RETRY_AFTER, 503: RETRY_AFTER}


class Resolver(Protocol):
    def get_openapi_json_schema(self, *, title: str, version: str) -> str: ...


def error_schemas() -> dict[str, Any]:
    return {
        "FieldError": {
            "type": "object",
            "required": ["field", "message"],
            "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
        },
        "ErrorDetail": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "stable, machine-readable: not_found, ..."},
                "message": {"type": "string", "description": "what went wrong and what to do about it"},
                "field": {"type": "string", "description": "the input at fault, e.g. filters.tags[0]"},
                "errors": {"type": "array", "items": {"$ref": _REF + "FieldError"}},
                "current_version": {
                    "type": ["integer", "null"],
                    "description": "on a version conflict: the item's version (null: it does not exist)",
                },
            },
            # Some errors carry more details (documented with the route that sends them).
            "additionalProperties": True,
        },
        ERROR_SCHEMA: {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"$ref": _REF + "ErrorDetail"}},
        },
    }


def build(resolvers: Iterable[tuple[str, Resolver]], routes: tuple[Route, ...] = ROUTES) -> dict[str, Any]:
    """The document, from each API function's resolver (function name, resolver)."""
    document = _merge(resolvers)
    served = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    declared = {(route.method, route.path) for route in routes}
    if served != declared:
        raise ValueError(f"resolvers and route table disagree: {sorted(served ^ declared)}")
    schemas = document["components"]["schemas"]
    for route in routes:
        operation = document["paths"][route.path][route.method.lower()]
        _apply_route(route, operation, schemas)
    schemas.update(error_schemas())
    document["components"]["securitySchemes"] = {
        SECURITY_SCHEME: {
            "type": "apiKey",
            "in": "header",
            "name": "x-api-key",
            "description": "the API key alone decides the tenant",
        }
    }
    document["security"] = [{SECURITY_SCHEME: []}]
    document["info"] = {
        "title": TITLE,
        "version": __version__,
        "description": "Long-term memory for AI agents. Errors are always "
        '`{"error": {"code", "message", "field"?, "errors"?}}`.',
    }
    _drop_unreferenced(document)
    _bounds_in_json_schema_words(document)
    return document


# pydantic writes a bound set on a type it validates with a BeforeValidator (engram.fields' Number,
# Integer) under its own name, which JSON Schema ignores: clients and fuzzers would not see it.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _bounds_in_json_schema_words(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") in ("number", "integer"):
            for pydantic_name, keyword in _BOUNDS.items():
                if pydantic_name in node:
                    node[keyword] = node.pop(pydantic_name)
        for child in node.values():
            _bounds_in_json_schema_words(child)
    elif isinstance(node, list):
        for child in node:
            _bounds_in_json_schema_words(child)


def _merge(resolvers: Iterable[tuple[str, Resolver]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for function, app in resolvers:
        schema = json.loads(app.get_openapi_json_schema(title=TITLE, version=__version__))
        if not merged:
            merged = {"openapi": schema["openapi"], "paths": {}, "components": {"schemas": {}}}
        for path, operations in schema.get("paths", {}).items():
            merged["paths"].setdefault(path, {}).update(operations)
        for name, component in schema.get("components", {}).get("schemas", {}).items():
            known = merged["components"]["schemas"].get(name)
            if known is not None and known != component:
                raise ValueError(
                    f"two models named {name!r} differ ({owner[name]} and {function}): rename one"
                )
            merged["components"]["schemas"][name] = component
            owner.setdefault(name, function)
    return merged


def _apply_route(route: Route, operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    operation["operationId"] = route.operation_id
    operation["tags"] = [route.function]
    operation["x-idempotent"] = route.idempotent
    if route.idempotency_key:
        operation["x-idempotency-key"] = route.idempotency_key
    if not route.authorized:
        operation["security"] = []
    _optional_body_is_plain(operation)
    if route.headers:
        operation.setdefault("parameters", []).extend(
            copy.deepcopy(REQUEST_HEADERS[h]) for h in route.headers
        )
    inferred: list[dict[str, Any]] = [r for c, r in operation.get("responses", {}).items() if c != "422"]
    content = next((r["content"] for r in inferred if r.get("content")), None)
    description = inferred[0].get("description") if inferred else None
    responses: dict[str, Any] = {}
    for status in (route.status, *route.also):
        response: dict[str, Any] = {"description": _success_description(status, description)}
        if status != 204 and content is not None:
            response["content"] = copy.deepcopy(content)
        if route.etag and status != 204:
            response["headers"] = {"ETag": copy.deepcopy(ETAG)}
        responses[str(status)] = response
    for status in _error_statuses(route, operation):
        responses[str(status)] = _error_response(ERROR_DESCRIPTIONS[status])
        if status in ERROR_HEADERS:
            responses[str(status)]["headers"] = copy.deepcopy(ERROR_HEADERS[status])
    responses["default"] = _error_response("any other error, in the same shape")
    operation["responses"] = responses
    special = _SPECIAL.get(route.operation_id)
    if special is not None:
        special(operation, schemas)


def _optional_body_is_plain(operation: dict[str, Any]) -> None:
    """An optional body is declared `anyOf: [Model, null]`; generated clients then send their "unset"
    marker as JSON. Say it as OpenAPI does: the model, with the body not required."""
    body = operation.get("requestBody")
    if body is None or body.get("required"):
        return
    for media in body.get("content", {}).values():
        options = media.get("schema", {}).get("anyOf", [])
        models = [o for o in options if o.get("type") != "null"]
        if len(options) == 2 and len(models) == 1:
            media["schema"] = models[0]


def _success_description(status: int, inferred: str | None) -> str:
    if inferred and inferred not in ("Successful Response", "Validation Error"):
        return inferred
    return SUCCESS_DESCRIPTIONS.get(status, "OK")


def _error_statuses(route: Route, operation: dict[str, Any]) -> list[int]:
    # 422 on every route: each refuses a query parameter it does not take and a body it does not read.
    statuses = {422, 500, 503}
    if route.authorized:
        statuses |= {401, 403, 404, 429}
    if operation.get("requestBody") or route.method in ("POST", "PUT", "PATCH"):
        statuses |= {400, 413}
    return sorted(statuses | set(route.errors))


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": {"$ref": _REF + ERROR_SCHEMA}}}}


def _model_schema(model: Any, schemas: dict[str, Any], *, request: bool = False) -> dict[str, Any]:
    """A model's schema under components (with the models it uses), and a reference to it."""
    found = TypeAdapter(model).json_schema(
        ref_template=_REF + "{model}", mode="validation" if request else "serialization"
    )
    for name, definition in found.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    schemas.setdefault(model.__name__, found)
    return {"$ref": _REF + model.__name__}


def _upload(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Locally the file itself as multipart/form-data (202, the document); in AWS JSON naming the file,
    answered with a presigned S3 PUT (200)."""
    from engram.documents.models import DocumentAccepted, UploadRequest, UploadTicket

    operation["requestBody"] = {
        "required": True,
        "content": {
            MULTIPART: {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "additionalProperties": False,
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "the file"},
                        "container": {"type": "string", "description": "default: 'default'"},
                        "content_type": {"type": "string", "description": "detected when missing"},
                        "title": {"type": "string"},
                        "custom_id": {"type": "string", "description": "makes the upload an upsert"},
                        "user_id": {
                            "type": "string",
                            "description": "the uploader, as in POST /v1/documents",
                        },
                        "tags": {"type": "string", "description": "a JSON array of strings"},
                        "metadata": {"type": "string", "description": "a JSON object"},
                        "extract": {
                            "type": "string",
                            "enum": ["none", "light", "full"],
                            "description": "as in POST /v1/documents",
                        },
                        "document_date": {
                            "type": "string",
                            "description": "ISO 8601, as in POST /v1/documents",
                        },
                    },
                }
            },
            _JSON: {"schema": _model_schema(UploadRequest, schemas, request=True)},
        },
    }
    responses = operation["responses"]
    responses["202"]["description"] = "the file was received (local stack): follow GET /v1/documents/{id}"
    responses["202"]["content"] = {_JSON: {"schema": _model_schema(DocumentAccepted, schemas)}}
    responses["200"]["description"] = "AWS: PUT the file to `url` before it expires"
    responses["200"]["content"] = {_JSON: {"schema": _model_schema(UploadTicket, schemas)}}
    operation["responses"] = {k: responses[k] for k in sorted(responses, key=lambda c: (c == "default", c))}


def _export(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Locally the export itself (200); in AWS a job that a worker writes to S3 (202)."""
    from engram.export.jobs import ExportJob

    operation["responses"]["200"] = {
        "description": "the local stack: the export as JSON Lines (a header line, then one record a line)",
        "content": {NDJSON: {"schema": {"type": "string", "description": "JSON Lines"}}},
    }
    operation["responses"]["202"] = {
        "description": "AWS: the export job; follow `status_url` (GET /v1/export/{id}) until it is done",
        "headers": {"Location": {"description": "the job's status_url", "schema": {"type": "string"}}},
        "content": {_JSON: {"schema": _model_schema(ExportJob, schemas)}},
    }


def _export_job(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    """The job's status (AWS); the handler writes it by hand, leaving out the fields not yet known."""
    from engram.export.jobs import ExportJob

    operation["responses"]["200"] = {
        "description": "AWS: the job: running, failed (with `error`) or done (with a presigned `url`)",
        "content": {_JSON: {"schema": _model_schema(ExportJob, schemas)}},
    }


def _import(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    """The export file as the body, imported at once (200, the report); or, with upload=true where imports
    are uploaded (AWS), no body and a job with a presigned upload URL (202)."""
    from engram.export.import_jobs import ImportJob
    from engram.export.models import ImportReport

    operation["requestBody"] = {
        "required": False,
        "description": "an export (JSON Lines, up to the 6 MB request limit); none with upload=true",
        "content": {NDJSON: {"schema": {"type": "string", "description": "JSON Lines"}}},
    }
    operation["responses"]["200"] = {
        "description": "the body was imported: what was inserted and what was already there",
        "content": {_JSON: {"schema": _model_schema(ImportReport, schemas)}},
    }
    operation["responses"]["202"] = {
        "description": "AWS, upload=true: PUT the file to `upload_url`, then follow `status_url`",
        "headers": {"Location": {"description": "the job's status_url", "schema": {"type": "string"}}},
        "content": {_JSON: {"schema": _model_schema(ImportJob, schemas)}},
    }


def _import_job(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    from engram.export.import_jobs import ImportJob

    operation["responses"]["200"] = {
        "description": "AWS: the job: awaiting_upload, running, failed (with `error`), done (with `report`)",
        "content": {_JSON: {"schema": _model_schema(ImportJob, schemas)}},
    }


_SPECIAL = {
    "upload_document": _upload,
    "export": _export,
    "get_export": _export_job,
    "import_tenant": _import,
    "get_import": _import_job,
}


def _drop_unreferenced(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    reached: set[str] = set()
    pending = [document["paths"]]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF):
                name = ref.removeprefix(_REF)
                if name not in reached:
                    reached.add(name)
                    pending.append(schemas[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    for name in list(schemas):
        if name not in reached:
            del schemas[name]
    document["components"]["schemas"] = dict(sorted(schemas.items()))
