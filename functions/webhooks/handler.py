"""The webhooks endpoint group: a tenant's subscriptions to its change events (engram.changes)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.api.ids import path_id
from engram.changes.models import WebhookCreate, WebhookCreated, WebhookDetail, WebhookList
from engram.observability import logger, tracer

app = build_resolver()
WebhookId = Annotated[str, Path(description="the webhook's id")]


@app.post("/v1/webhooks")
def create_webhook(body: WebhookCreate) -> tuple[WebhookCreated, int]:
    return deps.webhook_service().create(tenant_of(app), body), 201


@app.get("/v1/webhooks")
def list_webhooks() -> WebhookList:
    return deps.webhook_service().list(tenant_of(app))


@app.get("/v1/webhooks/<id>")
def get_webhook(id: WebhookId) -> WebhookDetail:
    return deps.webhook_service().get(tenant_of(app), path_id(id, "webhook"))


@app.delete("/v1/webhooks/<id>", responses={204: {"description": "deleted"}})
def delete_webhook(id: WebhookId) -> None:
    deps.webhook_service().delete(tenant_of(app), path_id(id, "webhook"))
    return no_content()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
