"""Calling the Lambda handlers in-process, with the event API Gateway would send.

The authorizer's answer is put in the event's request context directly, as API Gateway does from its
authorizer cache on a warm key: the timings are the handler's (validation, service, SQL, response
model), nothing else. `via_gateway` goes through the local front instead, authorizer included.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

# No X-Ray daemon here, and quiet logs. Metrics stay on: each invocation prints its EMF line as in
# Lambda (to /dev/null here). Disabling them would not help: Powertools then never clears the
# metric set and prints it anyway once it holds 100 values.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from engram.api.routes import ROUTES
from engram.local.functions import LocalLambdaContext, handler_of
from engram.local.gateway import LocalGateway, proxy_event


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    seconds: float


class Handlers:
    def __init__(self) -> None:
        self._gateway = LocalGateway()
        self._sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the harness

    def call(
        self,
        method: str,
        path: str,
        tenant_id: UUID,
        body: Any,
        *,
        query: str = "",
        params: dict[str, str] | None = None,
    ) -> Reply:
        """`path` is the route's (`/v1/memories/{id}/related`), filled in from `params`."""
        route = next(r for r in ROUTES if r.method == method and r.path == path)
        raw = json.dumps(body).encode() if body is not None else b""
        handler = handler_of(route.function)
        started = time.perf_counter()
        event = proxy_event(
            route,
            method,
            path.format(**params) if params else path,
            query,
            {"Content-Type": "application/json"},
            raw,
            params or {},
        )
        event["requestContext"]["authorizer"] = {
            "principalId": str(tenant_id),
            "tenantId": str(tenant_id),
            "tenantName": "bench",
            "keyId": str(tenant_id),
        }
        with contextlib.redirect_stdout(self._sink):
            result = handler(event, LocalLambdaContext(function_name=route.function))
        elapsed = time.perf_counter() - started
        payload = json.loads(result["body"]) if result.get("body") else None
        return Reply(int(result["statusCode"]), payload, elapsed)

    def via_gateway(self, method: str, path: str, api_key: str, body: Any) -> Reply:
        headers = {"Content-Type": "application/json", "x-api-key": api_key}
        started = time.perf_counter()
        with contextlib.redirect_stdout(self._sink):
            response = self._gateway.handle(method, path, headers, json.dumps(body).encode())
        elapsed = time.perf_counter() - started
        return Reply(response.status, json.loads(response.body) if response.body else None, elapsed)


def check(reply: Reply, expected: int = 200) -> Reply:
    if reply.status != expected:
        raise RuntimeError(f"handler answered {reply.status}: {reply.body}")
    return reply
