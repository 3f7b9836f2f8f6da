"""GET /v1/stats: counts per container and memory type, and embedding coverage."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, resolve, tenant_of
from engram.memories.models import Identifier, Stats
from engram.observability import logger, tracer

app = build_resolver()


@app.get("/v1/stats")
def stats(
    user_id: Annotated[Identifier | None, Query(description="count only this user's memories")] = None,
) -> Stats:
    return deps.memory_service().stats(tenant_of(app), user_id=user_id)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
