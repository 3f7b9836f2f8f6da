"""The API Gateway resolver every handler uses, with domain errors mapped to HTTP once.

Errors always have the shape `{"error": {"code": ..., "message": ..., "field"?: ...}}`. Anything
unexpected becomes a generic 500 that gives away no internals; the full error is logged.
"""

from __future__ import annotations

import base64
import json
from typing import Any, TypeVar, get_args
from uuid import UUID

import psycopg
import pydantic_core
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter, Route
from aws_lambda_powertools.event_handler.openapi.compat import field_annotation_is_sequence
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from engram.api.routes import ROUTES
from engram.apikey import AmbiguousApiKey, api_key_from
from engram.errors import EngramError, InvalidInput, MalformedJson, ServiceUnavailable, Unauthorized
from engram.fields import (
    MAX_JSON_DEPTH,
    InexactNumber,
    error_message,
    field_nested_too_deep,
    may_underflow,
    underflow_parser,
)
from engram.observability import logger
from engram.tenants.principal import Principal
from engram.unavailable import DATABASE_SECONDS, retry_after

M = TypeVar("M", bound=BaseModel)

MALFORMED = "the request body is not valid JSON"
DATABASE_UNAVAILABLE = "the database could not be reached; retry later"


def error_response(status: int, code: str, message: str, **extra: Any) -> Response:
    body = {"error": {"code": code, "message": message, **extra}}
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


def unavailable_response(code: str, message: str, seconds: int, **extra: Any) -> Response:
    """A 503, with Retry-After: `seconds` (engram.unavailable)."""
    response = error_response(503, code, message, **extra)
    response.headers.update(retry_after(seconds))
    return response


def with_etag(item: Any, version: int, status: int = 200) -> Response[Any]:
    """A versioned item, with its version as the ETag (what If-Match sends back)."""
    return Response(
        status_code=status, content_type="application/json", body=item, headers={"ETag": f'"{version}"'}
    )


def _field_of(loc: tuple[Any, ...]) -> str:
    # ("body", "filters", "tags", 0) -> "filters.tags[0]"; the leading "body"/"query" is where, not what.
    parts = list(loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc)
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or str(loc[0] if loc else "body")


def body_error(exc: ValidationError) -> EngramError:
    """A body a route validates itself (an upload's JSON, a multipart form's fields), reported as the
    resolver reports the bodies it validates: 400 malformed_json, or 422 naming the fields."""
    errors = _wrapped_first([{**e, "loc": ("body", *e.get("loc", ()))} for e in exc.errors()])
    if any(e.get("type") == "json_invalid" for e in errors):
        return MalformedJson(MALFORMED)
    field, message, listed = _described(errors)
    return InvalidInput(f"{field}: {message}", details={"field": field, "errors": listed})


_WRONG_UNION_MEMBER = frozenset(
    {"uuid_type", "uuid_parsing", "model_type", "model_attributes_type", "dict_type"}
)


def _first(errors: list[Any]) -> Any:
    # A value that matches no member of a union (an entity id or {name, ...}) fails every member; the
    # error from the member it was meant for says more than "not a UUID".
    return next(
        (e for e in errors if e.get("type") not in _WRONG_UNION_MEMBER),
        errors[0] if errors else {"loc": ("body",), "msg": "invalid request"},
    )


def _described(errors: list[Any]) -> tuple[str, str, list[dict[str, str]]]:
    """(the field named first, its message, every problem) of pydantic's errors."""
    first = _first(errors)
    field = _field_of(tuple(first.get("loc", ())))
    listed = [{"field": _field_of(tuple(e.get("loc", ()))), "message": error_message(e)} for e in errors[:20]]
    return field, error_message(first), listed


def _wrapped_first(errors: list[Any]) -> list[Any]:
    """An unknown top-level field holding an object is most likely the whole request nested one level
    too deep ({"memory": {...}}): name that first, and say what to send instead."""
    for index, error in enumerate(errors):
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "extra_forbidden" and len(loc) == 2 and isinstance(error.get("input"), dict):
            hint = "not a field of this request; if it wraps the request, send its fields at the top level"
            return [{**error, "msg": hint}, *errors[:index], *errors[index + 1 :]]
    return errors


def _validation_error(exc: RequestValidationError) -> Response:
    errors = _wrapped_first(list(exc.errors()))
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, MalformedJson.code, MALFORMED)
    field, message, listed = _described(errors)
    if _first(errors).get("type") == "missing" and field in ("body", ""):
        return error_response(422, "validation_error", "a JSON request body is required", field="body")
    return error_response(422, "validation_error", f"{field}: {message}", field=field, errors=listed)


def register_error_handlers(app: APIGatewayRestResolver) -> None:
    @app.exception_handler(RequestValidationError)
    def _on_validation(exc: RequestValidationError) -> Response:
        return _validation_error(exc)

    @app.exception_handler(EngramError)
    def _on_domain(exc: EngramError) -> Response:
        if exc.status_code >= 500:
            logger.exception("request failed", extra={"code": exc.code})
        # Details are part of the contract (e.g. "field", or "current_version" on a version conflict).
        if isinstance(exc, ServiceUnavailable):
            return unavailable_response(exc.code, exc.message, exc.retry_after_seconds, **exc.details)
        return error_response(exc.status_code, exc.code, exc.message, **exc.details)

    @app.exception_handler(psycopg.OperationalError)
    def _on_database_lost(exc: psycopg.OperationalError) -> Response:
        # The connection dropped or the server went away mid-request: what was not committed is rolled
        # back, and the request may be sent again. A commit whose answer was lost may have been applied,
        # so this is not NOT_HANDLED (engram.unavailable): a client must not repeat a write blindly.
        logger.warning("database unavailable", extra={"error": type(exc).__name__})
        return unavailable_response("service_unavailable", DATABASE_UNAVAILABLE, DATABASE_SECONDS)

    @app.exception_handler(Exception)
    def _on_unexpected(exc: Exception) -> Response:
        logger.exception("unhandled error")
        return error_response(500, "internal_error", "an internal error occurred; it has been logged")

    @app.not_found
    def _on_not_found(exc: Exception) -> Response:
        return error_response(
            404, "not_found", f"no route for {app.current_event.http_method} {app.current_event.path}"
        )


def _refusal(status: int, code: str, message: str, **extra: Any) -> dict[str, Any]:
    """An error answered before the resolver sees the event."""
    problem = {"error": {"code": code, "message": message, **extra}}
    headers = {"Content-Type": "application/json"}
    return {"statusCode": status, "headers": headers, "body": json.dumps(problem)}


def route_of(app: APIGatewayRestResolver, method: str, resource: str) -> Route | None:
    """The resolver's route for an event's method and API Gateway resource ("/v1/memories/{id}"), or
    None (the resolver then answers its 404). Powertools keeps its routes in these two lists."""
    for route in (*app._static_routes, *app._dynamic_routes):
        if route.method == method and route.openapi_path == resource:
            return route
    return None


# The routes whose handlers read the body themselves rather than declare it: an import's JSON Lines, an
# upload's file (engram local streams both to the handler as they arrive).
_OWN_BODY = frozenset((route.method, route.path) for route in ROUTES if route.streamed_body)


def _query_names(route: Route) -> list[str]:
    """The query parameters the route's handler declares, by the name a client sends."""
    return [field.alias for field in route.dependant.query_params]


def _single_valued(route: Route) -> set[str]:
    """The declared query parameters that take one value (not a list, nor a union holding one)."""
    return {
        field.alias
        for field in route.dependant.query_params
        if not any(
            field_annotation_is_sequence(member)
            for member in (field.field_info.annotation, *get_args(field.field_info.annotation))
        )
    }


def _query_refusal(event: dict[str, Any], method: str, resource: str, route: Route) -> dict[str, Any] | None:
    """A 422 for a query string the route cannot read as sent, or None: one naming every parameter the
    route does not declare, else one naming every parameter that takes one value and was sent more
    than once. Left to the resolver, a parameter it does not know is dropped (a typo, ?dept= for
    ?depth=, ?userid= for ?user_id=, would be answered as if it had not been sent), and a repeated one
    is refused in pydantic's words for a list ("Input should be a valid integer")."""
    multi = event.get("multiValueQueryStringParameters") or {}
    sent = {**(event.get("queryStringParameters") or {}), **multi}
    declared = _query_names(route)
    unknown = [name for name in sent if name not in declared]
    if unknown:
        takes = f"it takes {', '.join(declared)}" if declared else "it takes none"
        where = f"not a query parameter of {method} {resource}; {takes}"
        listed = [{"field": name, "message": where} for name in unknown[:20]]
        return _refusal(422, "validation_error", f"{unknown[0]}: {where}", field=unknown[0], errors=listed)
    single = _single_valued(route)
    repeated = {name: len(values) for name, values in multi.items() if name in single and len(values) > 1}
    if not repeated:
        return None
    listed = [
        {"field": name, "message": f"sent {times} times; this query parameter takes one value"}
        for name, times in list(repeated.items())[:20]
    ]
    first = listed[0]
    return _refusal(
        422, "validation_error", f"{first['field']}: {first['message']}", field=first["field"], errors=listed
    )


def _takes_no_body(route: Route, method: str, resource: str) -> bool:
    return not route.dependant.body_params and (method, resource) not in _OWN_BODY


def _unread_body(text: str, route: Route) -> dict[str, Any] | None:
    """A 422 for a body sent to a route that reads none, or None when it carries nothing (no bytes,
    whitespace, or `{}`). Left to the resolver, it is dropped unread: `{"limit": 1}` to a route that
    takes ?limit= would be answered with the default limit."""
    if not text.strip():
        return None
    try:
        sent = json.loads(text)
    except (ValueError, RecursionError):
        sent = None
    if sent == {}:
        return None
    declared = _query_names(route)
    meant = [key for key in sent if key in declared] if isinstance(sent, dict) else []
    if meant:
        verb = "goes" if len(meant) == 1 else "go"
        hint = f"; {', '.join(meant)} {verb} in the query string (?{meant[0]}=...)"
    elif declared:
        hint = f"; its parameters go in the query string: {', '.join(declared)}"
    else:
        hint = ""
    message = f"body: this route takes no body{hint}"
    return _refusal(422, "validation_error", message, field="body")


def resolve(
    app: APIGatewayRestResolver,
    event: dict[str, Any],
    context: Any,
    *,
    multipart_routes: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Resolve an event. The API speaks JSON, so a body sent without a JSON content type (curl -d
    sends form encoding, a client may say multipart) is still read as JSON rather than as a form. The
    one exception is a multipart upload to one of `multipart_routes`, which reads it itself.

    A request naming several API keys is refused here too, not only by the authorizer: in AWS the
    authorizer's cached answer for one of those keys would otherwise let it through. So are a query
    parameter the route does not declare, one that takes one value sent twice, and a body sent to a
    route that reads none, once for every route."""
    try:
        api_key_from(event)
    except AmbiguousApiKey as exc:
        return _refusal(403, "forbidden", str(exc))
    method, resource = str(event.get("httpMethod") or ""), str(event.get("resource") or "")
    route = route_of(app, method, resource)
    if route is not None:
        refused = _query_refusal(event, method, resource, route)
        if refused is not None:
            return refused
    headers = event.get("headers") or {}
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "") or ""
    content_type = content_type.strip()
    if content_type.lower().startswith("multipart/") and event.get("resource") in multipart_routes:
        return app.resolve(event, context)
    if event.get("isBase64Encoded") and event.get("body"):
        try:
            body = base64.b64decode(event["body"]).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return _refusal(400, "malformed_json", "the request body is not UTF-8 JSON")
        event = {**event, "body": body, "isBase64Encoded": False}
    if route is not None and event.get("body") and _takes_no_body(route, method, resource):
        unread = _unread_body(str(event["body"]), route)
        if unread is not None:
            return unread
    if not content_type.startswith("application/json"):  # exactly as the resolver tests it
        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        headers["Content-Type"] = "application/json"
        multi = {
            k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"
        }
        event = {
            **event,
            "headers": headers,
            "multiValueHeaders": {**multi, "Content-Type": ["application/json"]},
        }
    return app.resolve(event, context)


def decode_json_body(text: str, route: tuple[str, str] | None) -> Any:
    """The body as JSON, strictly: NaN and Infinity are not JSON, a key sent twice in one object is a 422
    naming it (Python's decoder keeps the last value and drops the others), and so is a number a double
    holds only as 0.0 (engram.fields.underflow_parser). What the decoder itself
    cannot take (nesting some 1,000 levels deep, an integer of more than 4,300 digits) is a 422 naming the
    field, long before the validators would have refused it. `route`: the request's (method, resource),
    for the refusal's hint (_one_object)."""

    def no_constant(name: str) -> Any:
        raise json.JSONDecodeError(f"{name} is not JSON", text, text.find(name))

    repeated: list[tuple[dict[str, Any], str]] = []
    inexact: list[InexactNumber] = []

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        decoded = dict(pairs)
        if len(decoded) < len(pairs):
            repeated.append((decoded, _first_repeated(pairs)))
        return decoded

    try:
        decoded = json.loads(
            text,
            parse_constant=no_constant,
            object_pairs_hook=unique_keys,
            parse_float=underflow_parser(inexact) if may_underflow(text) else None,
        )
    except json.JSONDecodeError:
        raise
    except RecursionError:
        field = field_nested_too_deep(text) or "body"
        problem = f"nested deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as exc:  # int() of too many digits: Python's guard against quadratic conversion
        field, problem = "body", f"holds a number too long to read ({exc})"
    else:
        if repeated:
            holder, key = repeated[0]
            loc = ("body", *_path_to(decoded, holder), key)
            problem = "sent more than once in one object (JSON keys must be unique: send it once)"
            raise RequestValidationError([{"type": "value_error", "loc": loc, "msg": problem}])
        if inexact:
            loc = ("body", *_path_to(decoded, inexact[0]))
            raise RequestValidationError([{"type": "value_error", "loc": loc, "msg": inexact[0].problem}])
        return _one_object(decoded, route)
    raise RequestValidationError([{"type": "value_error", "loc": ("body", field), "msg": problem}])


def _first_repeated(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return ""


def _path_to(root: Any, target: Any) -> tuple[str | int, ...]:
    """Where `target` (that very object) lies in a decoded body: the keys and indexes leading to it.
    Walked iteratively, for a refusal only."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, dict):
            stack.extend((child, (*path, key)) for key, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((child, (*path, index)) for index, child in reversed(list(enumerate(node))))
    return ()


_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


# Where an array body has a route of its own that takes several: (method, resource) -> the hint.
_ARRAY_ROUTES = {("POST", "/v1/memories"): "to store several memories at once: POST /v1/memories/batch"}


def _one_object(decoded: Any, route: tuple[str, str] | None) -> Any:
    """Every body the API reads is one JSON object. Anything else (null too) is refused here, once for every
    route: left to the resolver, an array would be read as its first element (Powertools'
    validation takes a list's first item for a field that is not a list), and the rest dropped.
    `route` (method, resource) names the route that takes an array instead, where there is one."""
    if isinstance(decoded, dict):
        return decoded
    # null too: it is not an object, and where a body may be left out (export), left out is no bytes
    kind = "null" if decoded is None else _JSON_KINDS.get(type(decoded), "not an object")
    hint = _ARRAY_ROUTES.get(route) if isinstance(decoded, list) and route else None
    problem = f"must be one JSON object {{...}}, not {kind}" + (f" ({hint})" if hint else "")
    raise RequestValidationError([{"type": "object_type", "loc": ("body",), "msg": problem}])


def read_body(model: type[M], raw: bytes) -> M:
    """A JSON body a route reads itself, decoded and refused exactly as the resolver's bodies are."""
    try:
        payload = decode_json_body(raw.decode("utf-8"), None) if raw.strip() else {}
        return model.model_validate(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise MalformedJson(MALFORMED) from None
    except ValidationError as exc:
        raise body_error(exc) from None


def build_resolver() -> APIGatewayRestResolver:
    def decode(text: str) -> Any:
        event = app.current_event
        return decode_json_body(text, (event.http_method, event.resource))

    app = APIGatewayRestResolver(
        enable_validation=True,
        strip_prefixes=None,
        json_body_deserializer=decode,
        serializer=serialize_json_body,
    )
    register_error_handlers(app)
    return app


def serialize_json_body(body: Any) -> str:
    """A response body as compact JSON, by pydantic's Rust encoder: 80 against 400 us for a 50-node graph
    page with Powertools' default (json.dumps). The same values; text is UTF-8 rather than \\u escapes,
    an exponent is written 1e-6 rather than 1e-06, and a NaN (which is not JSON) becomes null."""
    return pydantic_core.to_json(body, inf_nan_mode="null").decode()


def principal_of(app: BaseRouter) -> Principal:
    """The tenant the authorizer verified, read once per request (the resolver clears its context
    after each). Never read from the body, query or any header but the authorizer's context (API
    Gateway sets it; clients cannot)."""
    known = app.context.get("principal")
    if isinstance(known, Principal):
        return known
    context = (app.current_event.raw_event.get("requestContext") or {}).get("authorizer") or {}
    tenant_id = context.get("tenantId")
    if not tenant_id:
        raise Unauthorized("request was not authorized")
    principal = Principal(
        tenant_id=UUID(str(tenant_id)),
        tenant_name=str(context.get("tenantName", "")),
        key_id=UUID(str(context.get("keyId"))) if context.get("keyId") else UUID(int=0),
    )
    app.append_context(principal=principal)
    return principal


def tenant_of(app: BaseRouter) -> UUID:
    """The request's tenant: what every authorized route passes to its service first."""
    return principal_of(app).tenant_id


def no_content() -> Any:
    """204 No Content, for a route declared to return nothing (DELETE)."""
    return Response(status_code=204, body="")
