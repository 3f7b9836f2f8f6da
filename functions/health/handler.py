"""GET /health: the service and its database answer."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from engram import deps
from engram.api import build_resolver, resolve
from engram.health import check_health
from engram.observability import logger, tracer

app = build_resolver()


class Health(BaseModel):
    status: str
    database: str


@app.get("/health")
def health() -> Health:
    return Health(**check_health(deps.database()))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
