"""The plans endpoint group: multi-agent plans (a goal, a status, shared state), versioned."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, principal_of, resolve, with_etag
from engram.memories.models import Identifier
from engram.observability import logger, tracer
from engram.pagination import MAX_CURSOR_CHARS
from engram.plans.models import STATUS_PATTERN, Plan, PlanCreate, PlanPage, PlanUpdate
from engram.versions import Expected

app = build_resolver()
PlanId = Annotated[str, Path(description="the plan's id")]


def _expected() -> Expected:
    return Expected.parse(app.current_event.headers.get("If-Match"))


@app.post("/v1/plans")
def create_plan(body: PlanCreate) -> Response[Plan]:
    plan = deps.plan_service().create(principal_of(app).tenant_id, body)
    return with_etag(plan, plan.version, 201)


@app.get("/v1/plans")
def list_plans(
    status: Annotated[
        str | None, Query(pattern=STATUS_PATTERN, description="only plans in this status")
    ] = None,
    user_id: Annotated[Identifier | None, Query(description="only the plans of this user")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
) -> PlanPage:
    return deps.plan_service().list(
        principal_of(app).tenant_id, status=status, user_id=user_id, limit=limit, cursor=cursor
    )


@app.get("/v1/plans/<plan_id>")
def get_plan(plan_id: PlanId) -> Response[Plan]:
    plan = deps.plan_service().get(principal_of(app).tenant_id, plan_id)
    return with_etag(plan, plan.version)


@app.put("/v1/plans/<plan_id>")
def update_plan(plan_id: PlanId, body: PlanUpdate) -> Response[Plan]:
    plan, created = deps.plan_service().update(principal_of(app).tenant_id, plan_id, body, _expected())
    return with_etag(plan, plan.version, 201 if created else 200)


@app.delete("/v1/plans/<plan_id>", responses={204: {"description": "deleted"}})
def delete_plan(plan_id: PlanId) -> None:
    deps.plan_service().delete(principal_of(app).tenant_id, plan_id, _expected())
    return Response(status_code=204, body="")  # type: ignore[return-value]


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
