"""The working-memory endpoint group: versioned JSON state under a plan or agent scope."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.memories.models import Identifier
from engram.observability import logger, metrics, tracer
from engram.versions import Expected
from engram.working.models import (
    KEY_PATTERN,
    SCOPE_PATTERN,
    ScopeCleared,
    WorkingItem,
    WorkingPut,
    WorkingScope,
)

app = build_resolver()
Scope = Annotated[str, Path(pattern=SCOPE_PATTERN, description="a plan or agent scope, e.g. plan-42")]
Key = Annotated[str, Path(pattern=KEY_PATTERN)]
IF_MATCH = "If-Match"
UserId = Annotated[
    Identifier | None,
    Query(
        description="the user the request is made for: a key of another user is not found (one of no user, "
        "or theirs, is)"
    ),
]


def _expected() -> Expected:
    return Expected.parse(app.current_event.headers.get(IF_MATCH))  # headers are case-insensitive


def _with_etag(item: WorkingItem, status: int) -> Response[WorkingItem]:
    return Response(
        status_code=status, content_type="application/json", body=item, headers={"ETag": f'"{item.version}"'}
    )


@app.put("/v1/working/<scope>/<key>")
def put_value(scope: Scope, key: Key, body: WorkingPut) -> Response[WorkingItem]:
    item, created = deps.working_service().put(tenant_of(app), scope, key, body, _expected())
    metrics.add_metric(name="WorkingWrites", unit="Count", value=1)
    return _with_etag(item, 201 if created else 200)


@app.get("/v1/working/<scope>/<key>")
def get_value(scope: Scope, key: Key, user_id: UserId = None) -> Response[WorkingItem]:
    return _with_etag(deps.working_service().get(tenant_of(app), scope, key, user_id=user_id), 200)


@app.get("/v1/working/<scope>")
def list_scope(
    scope: Scope,
    after: Annotated[
        str | None, Query(pattern=KEY_PATTERN, description="the last key of the previous page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    user_id: UserId = None,
) -> WorkingScope:
    return deps.working_service().list(tenant_of(app), scope, after=after, limit=limit, user_id=user_id)


@app.delete("/v1/working/<scope>/<key>", responses={204: {"description": "deleted"}})
def delete_value(scope: Scope, key: Key, user_id: UserId = None) -> None:
    deps.working_service().delete(tenant_of(app), scope, key, _expected(), user_id=user_id)
    return no_content()


@app.delete("/v1/working/<scope>")
def clear_scope(scope: Scope, user_id: UserId = None) -> ScopeCleared:
    return deps.working_service().clear(tenant_of(app), scope, _expected(), user_id=user_id)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
