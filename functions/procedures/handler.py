"""The procedures endpoint group: rules and few-shot examples, and matching them to a situation."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.api.ids import path_id
from engram.fields import Text
from engram.memories.models import Identifier
from engram.observability import logger, metrics, tracer
from engram.pagination import MAX_CURSOR_CHARS
from engram.procedures.models import (
    MatchRequest,
    MatchResponse,
    Procedure,
    ProcedureCreate,
    ProcedureKind,
    ProcedurePage,
    ProcedurePatch,
)

app = build_resolver()
ProcedureId = Annotated[str, Path(description="the procedure's id")]
AgentId = Annotated[Identifier | None, Query(description="the agent the request is made for")]


@app.post("/v1/procedures")
def create_procedure(body: ProcedureCreate) -> tuple[Procedure, int]:
    procedure = deps.procedure_service().create(tenant_of(app), body)
    metrics.add_metric(name="ProceduresCreated", unit="Count", value=1)
    return procedure, 201


@app.post("/v1/procedures/match")
def match_procedures(body: MatchRequest) -> MatchResponse:
    return deps.procedure_service().match(tenant_of(app), body)


@app.get("/v1/procedures")
def list_procedures(
    agent_id: AgentId = None,
    kind: Annotated[ProcedureKind | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[Text | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
) -> ProcedurePage:
    return deps.procedure_service().list(
        tenant_of(app), agent_id=agent_id, kind=kind, limit=limit, cursor=cursor
    )


@app.get("/v1/procedures/<id>")
def get_procedure(id: ProcedureId, agent_id: AgentId = None) -> Procedure:
    return deps.procedure_service().get(tenant_of(app), path_id(id, "procedure"), agent_id=agent_id)


@app.patch("/v1/procedures/<id>")
def patch_procedure(id: ProcedureId, body: ProcedurePatch, agent_id: AgentId = None) -> Procedure:
    return deps.procedure_service().patch(tenant_of(app), path_id(id, "procedure"), body, agent_id=agent_id)


@app.delete("/v1/procedures/<id>", responses={204: {"description": "deleted"}})
def delete_procedure(id: ProcedureId, agent_id: AgentId = None) -> None:
    deps.procedure_service().delete(tenant_of(app), path_id(id, "procedure"), agent_id=agent_id)
    return no_content()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
