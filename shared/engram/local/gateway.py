"""A local stand-in for API Gateway: HTTP request -> authorizer -> REST proxy event -> handler.

It builds the same events API Gateway sends (see events/ for samples), so the handlers cannot tell
the difference. `LocalGateway` runs the handlers in this process, one invocation at a time; the HTTP
server of `engram local` (engram.local.asgi) matches routes with `match_route` before it hands a
request to a worker process, which runs a `LocalGateway` of its own.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from engram.api.routes import AUTHORIZER_FUNCTION, ROUTES, Route
from engram.auth import AuthorizerDenied
from engram.limits import MAX_REQUEST_BYTES, TOO_LARGE_MESSAGE
from engram.local.functions import LocalLambdaContext, handler_of, load_function
from engram.observability import logger
from engram.unavailable import AUTHORIZER_SECONDS, NOT_HANDLED, retry_after

STAGE = "local"
API_ID = "local"
OPENAPI_PATH = "/openapi.json"
AUTHORIZER_FAILED = "the API key could not be checked; retry later"

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    # Every header line as the handler set it (multiValueHeaders give one line per value).
    header_lines: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    close_connection: bool = False  # the front closes the connection after this answer

    def lines(self) -> tuple[tuple[str, str], ...]:
        return self.header_lines or tuple(self.headers.items())


def _route_regex(path: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    return re.compile(f"^{pattern}$")


_COMPILED = [(route, _route_regex(route.path)) for route in ROUTES]


def json_response(status: int, body: Any) -> HttpResponse:
    return HttpResponse(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


def error(status: int, code: str, message: str) -> HttpResponse:
    return json_response(status, {"error": {"code": code, "message": message}})


def unavailable(code: str, message: str, seconds: int) -> HttpResponse:
    """A 503, with Retry-After: `seconds` (engram.unavailable)."""
    refused = error(503, code, message)
    return HttpResponse(refused.status, {**refused.headers, **retry_after(seconds)}, refused.body)


def too_large(message: str = TOO_LARGE_MESSAGE) -> HttpResponse:
    return error(413, "payload_too_large", message)


@dataclass(frozen=True)
class Matched:
    route: Route
    path: str  # decoded, as API Gateway puts it in the event
    params: dict[str, str]  # decoded


def match_route(method: str, raw_path: str) -> Matched | HttpResponse:
    """The route for a request path as sent (percent-encoded), or the JSON 404/405 API Gateway's
    gateway responses give. Routes are matched segment by segment on the encoded path, so `%2F`
    stays inside its segment; path parameters are then percent-decoded, as API Gateway does."""
    matching = [(route, found) for route, regex in _COMPILED if (found := regex.match(raw_path))]
    # The resource is the most specific path that matches, as in API Gateway: a literal segment wins
    # over a parameter (/v1/memories/list is not /v1/memories/{id}); only its methods are allowed.
    resource = min((route.path for route, _ in matching), key=_specificity, default=None)
    allowed = []
    for route, found in matching:
        if route.path != resource:
            continue
        if route.method == method:
            params = {name: unquote(value) for name, value in found.groupdict().items()}
            return Matched(route, _decoded_path(raw_path), params)
        allowed.append(route.method)
    shown = _decoded_path(raw_path)
    if allowed:
        refused = error(
            405, "method_not_allowed", f"{method} is not allowed on {shown}; use {', '.join(allowed)}"
        )
        # A 405 names what the path allows (RFC 9110, 15.5.6).
        return HttpResponse(refused.status, {**refused.headers, "Allow": ", ".join(allowed)}, refused.body)
    return error(404, "not_found", f"no route for {method} {shown}")


def _specificity(path: str) -> tuple[int, ...]:
    return tuple(int(segment.startswith("{")) for segment in path.split("/"))


def _decoded_path(raw_path: str) -> str:
    # A decoded '/' would split a segment in two, and the handler's router would then see another
    # route than the one matched here: it stays encoded.
    return "/".join(unquote(segment).replace("/", "%2F") for segment in raw_path.split("/"))


def header_pairs(headers: Headers) -> list[tuple[str, str]]:
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


class LocalGateway:
    def __init__(self) -> None:
        self._openapi: dict[str, Any] | None = None
        # Lambda runs one invocation at a time per container, and Powertools relies on it: the
        # resolver keeps the current event in a class attribute shared by every resolver in the
        # process. Concurrent callers in one process would otherwise read each other's event
        # (another request's body, or another tenant's principal).
        self._invoke = threading.Lock()

    def handle(self, method: str, raw_path: str, headers: Headers, body: bytes) -> HttpResponse:
        """`raw_path` as sent (percent-encoded, with its query string); `headers` as a mapping or
        as (name, value) lines, repeated names included."""
        if len(body) > MAX_REQUEST_BYTES:
            return too_large()
        path, _, query = raw_path.partition("?")
        if method == "GET" and path == OPENAPI_PATH:
            return json_response(200, self.openapi())
        match = match_route(method, path)
        if isinstance(match, HttpResponse):
            return match
        event = proxy_event(match.route, method, match.path, query, header_pairs(headers), body, match.params)
        with self._invoke:
            if match.route.authorized:
                denied = self._authorize(event)
                if denied is not None:
                    return denied
            result = handler_of(match.route.function)(
                event, LocalLambdaContext(function_name=match.route.function)
            )
        return to_http(result)

    def _authorize(self, event: dict[str, Any]) -> HttpResponse | None:
        method, resource = event["httpMethod"], event["resource"]
        authorizer_event = {
            "type": "REQUEST",
            "methodArn": f"arn:aws:execute-api:local:000000000000:{API_ID}/{STAGE}/{method}{resource}",
            "resource": resource,
            "path": event["path"],
            "httpMethod": method,
            "headers": event["headers"],
            "multiValueHeaders": event["multiValueHeaders"],
            "queryStringParameters": event["queryStringParameters"],
            "multiValueQueryStringParameters": event["multiValueQueryStringParameters"],
            "pathParameters": event["pathParameters"],
            "requestContext": event["requestContext"],
        }
        try:
            result = handler_of(AUTHORIZER_FUNCTION)(
                authorizer_event, LocalLambdaContext(AUTHORIZER_FUNCTION)
            )
        except AuthorizerDenied:
            return error(401, "unauthorized", "missing API key: send it in the x-api-key header")
        except Exception:  # API Gateway's AUTHORIZER_FAILURE (infra/api.py): the key could not be checked
            logger.exception("authorizer failed")
            return unavailable(NOT_HANDLED, AUTHORIZER_FAILED, AUTHORIZER_SECONDS)
        statement = result["policyDocument"]["Statement"][0]
        if statement["Effect"] != "Allow":
            reason = result.get("context", {}).get("reason", "forbidden")
            return error(403, "forbidden", reason)
        event["requestContext"]["authorizer"] = {"principalId": result["principalId"], **result["context"]}
        event["requestContext"]["identity"]["apiKey"] = result.get("usageIdentifierKey")
        return None

    def openapi(self) -> dict[str, Any]:
        """One OpenAPI document, from every function's resolver and the route table."""
        if self._openapi is None:
            from engram.api.contract import build

            functions = dict.fromkeys(route.function for route in ROUTES)
            self._openapi = build((function, load_function(function).app) for function in functions)
        return self._openapi


def proxy_event(
    route: Route,
    method: str,
    path: str,
    query: str,
    headers: Headers,
    body: bytes,
    params: dict[str, str],
) -> dict[str, Any]:
    """The REST proxy event for a matched request. Repeated headers keep every value, in order, in
    multiValueHeaders; `headers` holds the last one, as API Gateway does."""
    multi_query = {k: v for k, v in parse_qs(query, keep_blank_values=True).items()}
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    names: dict[str, str] = {}  # lower-case name -> the spelling first seen
    for name, value in header_pairs(headers):
        name = names.setdefault(name.lower(), name)
        single[name] = value
        multi.setdefault(name, []).append(value)
    try:
        text_body: str | None = body.decode("utf-8") if body else None
        is_base64 = False
    except UnicodeDecodeError:
        text_body, is_base64 = base64.b64encode(body).decode(), True
    return {
        "resource": route.path,
        "path": path,
        "httpMethod": method,
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": params or None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": route.path,
            "httpMethod": method,
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "apiId": API_ID,
            "accountId": "000000000000",
            "protocol": "HTTP/1.1",
            "identity": {"sourceIp": "127.0.0.1", "apiKey": None},
        },
        "body": text_body,
        "isBase64Encoded": is_base64,
    }


def to_http(result: dict[str, Any]) -> HttpResponse:
    """A Lambda proxy result as the HTTP response API Gateway sends."""
    lines = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
    headers: dict[str, str] = dict(lines)
    for name, values in (result.get("multiValueHeaders") or {}).items():
        if name not in headers:
            lines.extend((str(name), str(v)) for v in values)
            headers[name] = ", ".join(str(v) for v in values)
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode("utf-8")
    return HttpResponse(int(result.get("statusCode", 500)), headers, body, tuple(lines))
