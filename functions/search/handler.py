"""POST /v1/search: hybrid (vector + full text) search over a tenant's memories, or with
`scope: messages` over the conversation messages of one user/agent pair."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, resolve, tenant_of
from engram.memories.models import SearchRequest, SearchResponse
from engram.observability import logger, metrics, tracer
from engram.sessions.models import MessageSearchResponse

app = build_resolver()


@app.post("/v1/search")
def search(body: SearchRequest) -> SearchResponse | MessageSearchResponse:
    tenant_id = tenant_of(app)
    metrics.add_metric(name="Searches", unit="Count", value=1)
    if body.scope == "messages":
        return deps.session_service().search_messages(tenant_id, body)
    found = deps.memory_search().search(tenant_id, body)
    if body.include_related:
        return deps.graph_service().attach_related(tenant_id, found, user_id=body.user_id)
    return found


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
