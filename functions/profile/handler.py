"""GET /v1/profile: a prompt-ready summary of a user or an agent, within a token budget; POST /v1/context:
everything an agent needs for one turn (engram.context)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, resolve, tenant_of
from engram.context.models import AgentContext, ContextRequest
from engram.errors import InvalidInput
from engram.memories.models import CONTAINER_QUERY_PATTERN, Identifier, QueryText
from engram.observability import logger, tracer
from engram.profile.models import DEFAULT_MAX_TOKENS, MAX_TOKENS_LIMIT, Profile

app = build_resolver()


@app.get("/v1/profile")
def profile(
    user_id: Annotated[Identifier | None, Query(description="the user to summarise (and made for)")] = None,
    agent_id: Annotated[Identifier | None, Query(description="the agent to summarise")] = None,
    container: Annotated[
        str | None, Query(pattern=CONTAINER_QUERY_PATTERN, description="'a.b' or 'a.b.*'")
    ] = None,
    q: Annotated[
        QueryText | None, Query(max_length=2000, description="add memories relevant to this")
    ] = None,
    max_tokens: Annotated[int, Query(ge=50, le=MAX_TOKENS_LIMIT)] = DEFAULT_MAX_TOKENS,
) -> Profile:
    if user_id is None and agent_id is None and container is None:
        raise InvalidInput("name whose profile: user_id, agent_id or container", details={"field": "user_id"})
    return deps.profile_service().build(
        tenant_of(app),
        user_id=user_id,
        agent_id=agent_id,
        container=container,
        q=q,
        max_tokens=max_tokens,
    )


@app.post("/v1/context")
def context(body: ContextRequest) -> AgentContext:
    return deps.context_service().build(tenant_of(app), body)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
