"""A local stand-in for API Gateway: HTTP request -> authorizer -> REST proxy event -> handler.

It builds the same events API Gateway sends (see events/ for samples), so the handlers cannot tell
the difference.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from engram.api.routes import AUTHORIZER_FUNCTION, ROUTES, Route
from engram.auth import AuthorizerDenied
from engram.limits import MAX_REQUEST_BYTES
from engram.local.functions import LocalLambdaContext, handler_of, load_function

MAX_BODY_BYTES = MAX_REQUEST_BYTES  # what Lambda takes in one synchronous call (engram.limits)
STAGE = "local"
API_ID = "local"


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def _route_regex(path: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    return re.compile(f"^{pattern}$")


_COMPILED = [(route, _route_regex(route.path)) for route in ROUTES]


def json_response(status: int, body: Any) -> HttpResponse:
    return HttpResponse(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


def error(status: int, code: str, message: str) -> HttpResponse:
    return json_response(status, {"error": {"code": code, "message": message}})


class LocalGateway:
    def __init__(self) -> None:
        self._openapi: dict[str, Any] | None = None
        # Lambda runs one invocation at a time per container, and Powertools relies on it: the
        # resolver keeps the current event in a class attribute shared by every resolver in the
        # process. Concurrent requests to the threaded local server would otherwise read each
        # other's event (another request's body, or another tenant's principal).
        self._invoke = threading.Lock()

    def handle(
        self,
        method: str,
        raw_path: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        body: bytes,
    ) -> HttpResponse:
        """`headers`: a mapping, or every (name, value) pair as received, repeated names included
        (API Gateway passes all of a repeated header's values in multiValueHeaders)."""
        path, _, query = raw_path.partition("?")
        if method == "GET" and path == "/openapi.json":
            return json_response(200, self.openapi())
        match = self._match(method, path)
        if isinstance(match, HttpResponse):
            return match
        route, params = match
        event = self._proxy_event(route, method, path, query, headers, body, params)
        with self._invoke:
            if route.authorized:
                denied = self._authorize(event)
                if denied is not None:
                    return denied
            result = handler_of(route.function)(event, LocalLambdaContext(function_name=route.function))
        return self._to_http(result)

    def _match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | HttpResponse:
        allowed = []
        for route, regex in _COMPILED:
            found = regex.match(path)
            if found:
                if route.method == method:
                    return route, found.groupdict()
                allowed.append(route.method)
        if allowed:
            return error(
                405, "method_not_allowed", f"{method} is not allowed on {path}; use {', '.join(allowed)}"
            )
        return error(404, "not_found", f"no route for {method} {path}")

    def _proxy_event(
        self,
        route: Route,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        body: bytes,
        params: dict[str, str],
    ) -> dict[str, Any]:
        pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
        single: dict[str, str] = {}
        multi_headers: dict[str, list[str]] = {}
        for name, value in pairs:
            single[name] = value
            multi_headers.setdefault(name, []).append(value)
        multi_query = {k: v for k, v in parse_qs(query, keep_blank_values=True).items()}
        try:
            text_body: str | None = body.decode("utf-8") if body else None
            is_base64 = False
        except UnicodeDecodeError:
            import base64

            text_body, is_base64 = base64.b64encode(body).decode(), True
        return {
            "resource": route.path,
            "path": path,
            "httpMethod": method,
            "headers": single,
            "multiValueHeaders": multi_headers,
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

    def _authorize(self, event: dict[str, Any]) -> HttpResponse | None:
        method, resource = event["httpMethod"], event["resource"]
        authorizer_event = {
            "type": "REQUEST",
            "methodArn": f"arn:aws:execute-api:local:000000000000:{API_ID}/{STAGE}/{method}{resource}",
            "resource": resource,
            "path": event["path"],
            "httpMethod": method,
            "headers": event["headers"],
            "queryStringParameters": event["queryStringParameters"],
            "pathParameters": event["pathParameters"],
            "requestContext": event["requestContext"],
        }
        try:
            result = handler_of(AUTHORIZER_FUNCTION)(
                authorizer_event, LocalLambdaContext(AUTHORIZER_FUNCTION)
            )
        except AuthorizerDenied:
            return error(401, "unauthorized", "missing API key: send it in the x-api-key header")
        statement = result["policyDocument"]["Statement"][0]
        if statement["Effect"] != "Allow":
            reason = result.get("context", {}).get("reason", "forbidden")
            return error(403, "forbidden", reason)
        event["requestContext"]["authorizer"] = {"principalId": result["principalId"], **result["context"]}
        event["requestContext"]["identity"]["apiKey"] = result.get("usageIdentifierKey")
        return None

    @staticmethod
    def _to_http(result: dict[str, Any]) -> HttpResponse:
        headers: dict[str, str] = {k: str(v) for k, v in (result.get("headers") or {}).items()}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers.setdefault(name, ", ".join(str(v) for v in values))
        raw = result.get("body") or ""
        if result.get("isBase64Encoded"):
            import base64

            body = base64.b64decode(raw)
        else:
            body = raw.encode("utf-8")
        return HttpResponse(int(result.get("statusCode", 500)), headers, body)

    def openapi(self) -> dict[str, Any]:
        """One OpenAPI document, from every function's resolver and the route table."""
        if self._openapi is None:
            from engram.api.contract import build

            functions = dict.fromkeys(route.function for route in ROUTES)
            self._openapi = build((function, load_function(function).app) for function in functions)
        return self._openapi
