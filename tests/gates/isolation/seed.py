"""Give a tenant one of everything, through its own API: memories (a version chain, private ones),
documents (ingested to `done`), sessions with messages, working state, procedures, entities,
relations, extraction instructions and containers.

Every text carries the tenant's secret marker; names (containers, tags, users, scopes, entity names)
never do, because the other tenant is given those names to probe with. A response to the other
tenant that contains the marker therefore carries this tenant's content."""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass

from tests.gates.isolation.client import TenantClient

SYLLABLES = ("qor", "vath", "bren", "holt", "ilsa", "mar", "dun", "ket", "zel", "wyn", "tor", "ash")


@dataclass(frozen=True)
class Seeded:
    label: str  # the prefix of every name this tenant uses
    secret: str  # in every text it stored
    users: tuple[str, ...]
    agents: tuple[str, ...]
    containers: tuple[str, ...]
    scopes: tuple[str, ...]


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(2)).capitalize()


def seed(client: TenantClient, label: str, secret: str, rng: random.Random) -> Seeded:
    person, other, org, city, town = (_name(rng) + " " + _name(rng) for _ in range(5))
    user, agent = f"{label}-user", f"{label}-agent"
    notes, docs, chat, old = f"{label}.notes", f"{label}.docs", f"{label}.chat", f"{label}.notes.old"
    scope = f"{label}-plan"

    client.ok("POST", "/v1/containers", {"name": notes, "description": f"notes {secret}"})
    client.ok("POST", "/v1/containers", {"name": old, "description": f"old notes {secret}"})

    # memories: a version chain, a private one, metadata, tags, an agent and a conversation
    first = client.ok(
        "POST",
        "/v1/memories",
        {
            "content": f"{person} lives in {city}. {secret} one",
            "container": notes,
            "tags": [f"{label}-tag", "home"],
            "metadata": {"ref": f"{secret}-meta", "n": 1},
            "agent_id": agent,
            "conversation_id": f"{label}-conv",
        },
    )
    second = client.ok(
        "POST",
        "/v1/memories",
        {"content": f"{person} moved to {town}. {secret} two", "container": notes, "supersedes": first["id"]},
    )
    client.ok(
        "POST",
        "/v1/memories",
        {
            "content": f"{person} prefers green tea. {secret} three",
            "container": notes,
            "user_id": user,
            "visibility": "private",
            "memory_type": "preference",
        },
    )
    for i in range(12):
        client.ok(
            "POST",
            "/v1/memories",
            {
                "content": f"Meeting {i} with {other} about {org}. {secret} m{i}",
                "container": old,
                "tags": ["meeting"],
            },
        )
    client.ok(
        "POST",
        "/v1/memories/upsert",
        {"content": f"{org} is based in {city}. {secret} up", "container": notes},
    )

    # the graph: entities, relations (by id and by name), observations
    someone = client.ok(
        "POST", "/v1/entities", {"name": person, "entity_type": "person", "aliases": [f"{label}-alias"]}
    )
    company = client.ok("POST", "/v1/entities", {"name": org, "entity_type": "organization"})
    client.ok(
        "POST",
        "/v1/relations",
        {
            "source": someone["id"],
            "relation_type": "works_for",
            "target": company["id"],
            "valid_from": "2024-01-01T00:00:00Z",
            "source_memory_id": second["id"],
        },
    )
    client.ok(
        "POST",
        "/v1/relations",
        {
            "source": {"name": org, "entity_type": "organization"},
            "relation_type": "based_in",
            "target": {"name": city, "entity_type": "place"},
        },
    )
    client.ok("POST", f"/v1/entities/{someone['id']}/observations", {"memory_id": second["id"]})
    client.ok(
        "POST",
        f"/v1/entities/{company['id']}/observations",
        {"content": f"{org} hired {other}. {secret} obs", "container": notes},
    )

    # documents, ingested to the end
    texts = [
        f"# Handbook {secret}\n\n{person} works for {org} in {city}. {other} lives in {town}. {secret} doc",
        f"{other} met {person} in {city} last spring. They discussed {org}. {secret} minutes",
        f"{org} opened an office in {town}. {other} leads it. {secret} news",
    ]
    for i, text in enumerate(texts):
        accepted = client.ok(
            "POST",
            "/v1/documents",
            {
                "content": text,
                "container": docs,
                "title": f"Doc {i} {secret}",
                "custom_id": f"{label}-doc-{i}",
                "extract": "light",
                "metadata": {"note": secret},
            },
        )
        _wait_done(client, accepted["id"])

    # sessions with messages (one user's, one agent-only)
    talk = client.ok(
        "POST",
        "/v1/sessions",
        {"user_id": user, "agent_id": agent, "container": chat, "metadata": {"t": secret}},
    )
    client.ok(
        "POST",
        f"/v1/sessions/{talk['id']}/messages",
        {
            "messages": [
                {"role": "user", "content": f"I live in {city} now. {secret} said"},
                {"role": "assistant", "content": f"Noted that you live in {city}. {secret} reply"},
                {"role": "user", "content": f"My manager is {other}. {secret} again"},
            ],
            "extract": "light",
        },
        user_id=user,
        agent_id=agent,
    )
    for i in range(2):
        solo = client.ok("POST", "/v1/sessions", {"agent_id": agent, "container": chat})
        client.ok(
            "POST",
            f"/v1/sessions/{solo['id']}/messages",
            {"messages": [{"role": "system", "content": f"Agent notes {i} {secret} solo"}]},
            agent_id=agent,
        )

    # working state, procedures, instructions
    for plan, step in itertools.product((scope, f"{scope}-b"), range(5)):
        client.ok("PUT", f"/v1/working/{plan}/step-{step}", {"value": {"note": f"{secret} step", "n": step}})
    for topic in (org, city, town):
        body = {"trigger": f"when asked about {topic} {secret}", "content": f"Be brief {secret}"}
        client.ok("POST", "/v1/procedures", body)
    client.ok(
        "POST",
        "/v1/procedures",
        {"kind": "example", "trigger": f"greeting {secret}", "content": f"Hello {secret}"},
    )
    client.ok(
        "POST",
        "/v1/procedures",
        {
            "trigger": f"private trigger {secret}",
            "content": f"private rule {secret}",
            "agent_id": agent,
            "visibility": "private",
        },
    )
    client.ok("PUT", "/v1/extraction-instructions", {"instructions": f"Prefer full names. {secret}"})
    client.ok(
        "PUT", "/v1/extraction-instructions", {"instructions": f"Track homes. {secret}", "container": notes}
    )

    # a multi-agent plan and the task context waiting on its sub-tasks
    plan = f"{label}-trip"
    client.ok(
        "POST",
        "/v1/plans",
        {"plan_id": plan, "goal_event": "trip.requested", "goal_data": {"note": secret}, "user_id": user},
    )
    client.ok(
        "POST",
        "/v1/task-context",
        {
            "task_id": f"{label}-book",
            "plan_id": plan,
            "event_type": "book.flight",
            "data": {"note": f"{secret} task"},
            "sub_tasks": [f"{label}-seat", f"{label}-meal"],
        },
    )

    # a webhook, for an event nothing raises during the probe (its deliveries would change it)
    client.ok("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["document.failed"]})
    _wait_summaries(client, talk["id"], user_id=user, agent_id=agent)

    return Seeded(label, secret, (user,), (agent,), (label, notes, docs, chat, old), (scope, f"{scope}-b"))


def _wait_summaries(client: TenantClient, session_id: str, timeout_s: float = 60.0, **party: str) -> None:
    """The relay writes the summaries after the appends: wait for it, so the snapshot is settled."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        conversation = client.ok("GET", f"/v1/sessions/{session_id}", **party)
        summary = conversation.get("summary")
        if summary and summary["through_seq"] == conversation["session"]["message_count"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"session {session_id} was not summarized within {timeout_s:.0f} s")


def _wait_done(client: TenantClient, document_id: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = client.ok("GET", f"/v1/documents/{document_id}")["status"]
        if status == "done":
            return
        if status == "failed":
            raise RuntimeError(f"seed document {document_id} failed")
        time.sleep(0.2)
    raise RuntimeError(f"seed document {document_id} did not finish within {timeout_s}s")
