"""The sessions endpoint group: conversations of a user/agent pair, their messages and recall.

Every request names its party with ?user_id= and/or ?agent_id= (POST /v1/sessions: in the body).
A session is visible only to requests made for its user (and, if the request names an agent, that
agent); a session without a user belongs to its agent alone."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.api.ids import path_id
from engram.db.party import Party
from engram.fields import Text
from engram.memories.models import Identifier
from engram.observability import logger, metrics, tracer
from engram.pagination import MAX_CURSOR_CHARS
from engram.sessions.models import (
    AppendResult,
    Conversation,
    ExtractionReport,
    MessagesAppend,
    RecentMessages,
    Session,
    SessionCreate,
    SessionPage,
)

app = build_resolver()
SessionId = Annotated[str, Path(description="the session's id")]
UserId = Annotated[Identifier | None, Query(description="the user the request is made for")]
AgentId = Annotated[Identifier | None, Query(description="the agent the request is made for")]


@app.post("/v1/sessions")
def create_session(body: SessionCreate) -> tuple[Session, int]:
    session = deps.session_service().create(tenant_of(app), body)
    metrics.add_metric(name="SessionsCreated", unit="Count", value=1)
    return session, 201


@app.get("/v1/sessions")
def list_sessions(
    user_id: UserId = None,
    agent_id: AgentId = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[Text | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
) -> SessionPage:
    party = Party(user_id=user_id, agent_id=agent_id)
    return deps.session_service().list(tenant_of(app), party, limit=limit, cursor=cursor)


@app.get("/v1/sessions/<id>")
def get_conversation(
    id: SessionId,
    user_id: UserId = None,
    agent_id: AgentId = None,
    after: Annotated[int, Query(ge=0, description="return messages after this seq")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> Conversation:
    party = Party(user_id=user_id, agent_id=agent_id)
    return deps.session_service().conversation(
        tenant_of(app), path_id(id, "session"), party, after=after, limit=limit
    )


@app.delete("/v1/sessions/<id>", responses={204: {"description": "deleted, with its messages"}})
def delete_session(id: SessionId, user_id: UserId = None, agent_id: AgentId = None) -> None:
    party = Party(user_id=user_id, agent_id=agent_id)
    deps.session_service().delete(tenant_of(app), path_id(id, "session"), party)
    return no_content()


@app.post("/v1/sessions/<id>/messages")
def append_messages(
    id: SessionId, body: MessagesAppend, user_id: UserId = None, agent_id: AgentId = None
) -> tuple[AppendResult, int]:
    party = Party(user_id=user_id, agent_id=agent_id)
    result = deps.session_service().append(tenant_of(app), path_id(id, "session"), party, body)
    metrics.add_metric(name="MessagesAppended", unit="Count", value=len(result.messages))
    return result, 201


@app.post("/v1/sessions/<id>/extract")
def extract_queued(id: SessionId, user_id: UserId = None, agent_id: AgentId = None) -> ExtractionReport:
    """Run extraction over the session's queued messages: those an unavailable LLM left queued."""
    party = Party(user_id=user_id, agent_id=agent_id)
    report = deps.session_service().extract(tenant_of(app), path_id(id, "session"), party)
    metrics.add_metric(name="MessagesExtracted", unit="Count", value=report.messages_done)
    return report


@app.post("/v1/sessions/<id>/recent")
def recent_messages(
    id: SessionId,
    user_id: UserId = None,
    agent_id: AgentId = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> RecentMessages:
    party = Party(user_id=user_id, agent_id=agent_id)
    return deps.session_service().recent(tenant_of(app), path_id(id, "session"), party, limit=limit)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
