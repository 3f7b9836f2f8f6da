"""POST /v1/context at handler level: one call for an agent's turn, over the travel agent's conversation
(the summary and context tests' fixture), with the local model embedding each query."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from tests.bench.harness import Handlers, check
from tests.bench.report import Figure, Target, percentiles
from tests.bench.writes import drop_tenant
from tests.integration.travel import AGENT, CONVERSATION, USER

CONTEXT_P95_TARGET_MS = 60.0
# What an agent asks before a turn of that conversation.
QUERIES = (
    "book a flight to Oslo",
    "which seat should I reserve",
    "find a hotel for the conference",
    "what did we plan for the client dinner",
    "how does the traveller get from the airport",
    "where should the itinerary be sent",
)
FACTS = (
    "Maria prefers window seats",
    "Maria is vegetarian",
    "Maria's company pays for breakfast",
    "Maria avoids connections through Frankfurt",
    "Maria's work email is maria@example.com",
)


def context_latency(
    handlers: Handlers, local: LocalDatabase, calls: int, log: Callable[[str], None]
) -> list[Figure]:
    """A fresh tenant (deleted afterwards) with the conversation, a few facts of the user and one
    procedure; then `calls` context calls, the queries in turn, after one warm-up round."""
    tenant_id = tenants.ensure_tenant(local.admin, f"bench-context-{uuid.uuid4().hex[:8]}")
    party = f"user_id={USER}&agent_id={AGENT}"
    try:
        session = check(
            handlers.call("POST", "/v1/sessions", tenant_id, {"user_id": USER, "agent_id": AGENT}), 201
        ).body["id"]
        for start in range(0, len(CONVERSATION), 2):
            turn = [{"role": role, "content": text} for role, text in CONVERSATION[start : start + 2]]
            check(
                handlers.call(
                    "POST",
                    "/v1/sessions/{id}/messages",
                    tenant_id,
                    {"messages": turn, "extract": "light"},
                    query=party,
                    params={"id": session},
                ),
                201,
            )
        for fact in FACTS:
            check(handlers.call("POST", "/v1/memories", tenant_id, {"content": fact, "user_id": USER}), 201)
        procedure = {"trigger": "booking a flight", "content": "check the traveller's seat preference"}
        check(handlers.call("POST", "/v1/procedures", tenant_id, procedure), 201)

        def ask(query: str) -> float:
            body = {"query": query, "user_id": USER, "agent_id": AGENT, "session_id": session}
            return check(handlers.call("POST", "/v1/context", tenant_id, body)).seconds * 1000

        for query in QUERIES:
            ask(query)
        samples = [ask(QUERIES[i % len(QUERIES)]) for i in range(calls)]
    finally:
        drop_tenant(local, tenant_id)
    log(f"  context: {calls} calls over a {len(CONVERSATION)}-message conversation")
    p = percentiles(samples)
    return [
        Figure(
            key=f"context.post.p{k}",
            section="context (POST /v1/context through the handler; the local model embeds each query)",
            name=f"POST /v1/context p{k} (n={calls})",
            value=p[k],
            unit="ms",
            target=Target("<=", CONTEXT_P95_TARGET_MS) if k == 95 else None,
        )
        for k in (50, 95)
    ]
