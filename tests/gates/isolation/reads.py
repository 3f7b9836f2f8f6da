"""Everything a tenant can read about itself through its own API (the snapshot compared before and
after the probe), and what the probe is built from: its ids, names and cursors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.gates.isolation.client import TenantClient
from tests.gates.isolation.seed import Seeded

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Harvest:
    """What one tenant's data offers a prober: ids by kind, names by kind, cursors by list."""

    seeded: Seeded
    ids: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)
    cursors: dict[str, list[str]] = field(default_factory=dict)

    def every_id(self) -> set[str]:
        return {i for ids in self.ids.values() for i in ids}


def _pages(
    client: TenantClient, method: str, path: str, items: str, body: dict[str, Any] | None = None, **query: Any
) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    while True:
        if method == "POST":
            page = client.ok(
                "POST", path, {**(body or {}), "cursor": cursor} if cursor else (body or {}), **query
            )
        else:
            page = client.ok("GET", path, **query, cursor=cursor)
        yield from page[items]
        cursor = page.get("next_cursor")
        if not cursor:
            return


def snapshot(client: TenantClient, seeded: Seeded) -> dict[str, Any]:
    """The tenant's data as its own API shows it, every user's and agent's included."""
    users: list[str | None] = [None, *seeded.users]
    agents: list[str | None] = [None, *seeded.agents]
    exported = client.http.post("/v1/export", json={})
    exported.raise_for_status()
    export_lines = [json.loads(line) for line in exported.text.splitlines()[1:]]  # not the dated header
    out: dict[str, Any] = {
        "export": export_lines,
        "containers": client.ok("GET", "/v1/containers"),
        "instructions": client.ok("GET", "/v1/extraction-instructions"),
        "stats": client.ok("GET", "/v1/stats"),
    }
    out["documents"] = [
        client.ok("GET", f"/v1/documents/{d['id']}")
        for d in _pages(client, "POST", "/v1/documents/list", "documents")
    ]
    memories: dict[str, Any] = {}
    for user in users:
        for memory in _pages(
            client, "POST", "/v1/memories/list", "memories", {"user_id": user} if user else {}
        ):
            key = f"{memory['id']}:{user}"
            memories[key] = {
                "memory": client.ok("GET", f"/v1/memories/{memory['id']}", user_id=user),
                "history": client.ok("GET", f"/v1/memories/{memory['id']}/history", user_id=user),
                "related": client.ok("GET", f"/v1/memories/{memory['id']}/related", user_id=user, depth=2),
            }
    out["memories"] = memories
    sessions: dict[str, Any] = {}
    for user in users:
        for agent in agents:
            if user is None and agent is None:
                continue
            party = {"user_id": user, "agent_id": agent}
            for session in _pages(client, "GET", "/v1/sessions", "sessions", **party):
                sessions[session["id"]] = client.ok("GET", f"/v1/sessions/{session['id']}", **party)
    out["sessions"] = sessions
    out["working"] = {scope: client.ok("GET", f"/v1/working/{scope}") for scope in seeded.scopes}
    procedures: dict[str, Any] = {}
    for agent in agents:
        for procedure in _pages(client, "GET", "/v1/procedures", "procedures", agent_id=agent):
            procedures[procedure["id"]] = client.ok(
                "GET", f"/v1/procedures/{procedure['id']}", agent_id=agent
            )
    out["procedures"] = procedures
    entities: dict[str, Any] = {}
    for entity in _pages(client, "GET", "/v1/entities", "entities"):
        for user in users:
            entities[f"{entity['id']}:{user}"] = {
                "detail": client.ok("GET", f"/v1/entities/{entity['id']}", user_id=user, limit=100),
                "graph": client.ok(
                    "GET", "/v1/graph", entity=entity["id"], include_history="true", user_id=user
                ),
            }
    out["entities"] = entities
    out["profiles"] = {user: client.ok("GET", "/v1/profile", user_id=user) for user in seeded.users}
    out["plans"] = {
        plan["plan_id"]: client.ok("GET", f"/v1/plans/{plan['plan_id']}")
        for plan in _pages(client, "GET", "/v1/plans", "plans")
    }
    out["tasks"] = {
        task["task_id"]: client.ok("GET", f"/v1/task-context/{task['task_id']}")
        for task in _pages(client, "GET", "/v1/task-context", "task_contexts")
    }
    out["webhooks"] = {
        hook["id"]: client.ok("GET", f"/v1/webhooks/{hook['id']}")
        for hook in client.ok("GET", "/v1/webhooks")["webhooks"]
    }
    return out


def harvest(client: TenantClient, seeded: Seeded, snap: dict[str, Any]) -> Harvest:
    """Ids, names and cursors of the tenant, from its snapshot and a few one-item pages."""
    found = Harvest(seeded)
    records: dict[str, list[dict[str, Any]]] = {}
    for line in snap["export"]:
        records.setdefault(line["record"], []).append(line)
    found.ids = {
        "memory": [r["id"] for r in records.get("memory", [])],
        "session": [r["id"] for r in records.get("session", [])],
        "message": [r["id"] for r in records.get("message", [])],
        "procedure": [r["id"] for r in records.get("procedure", [])],
        "document": [d["id"] for d in snap["documents"]],
        "entity": sorted({v["detail"]["entity"]["id"] for v in snap["entities"].values()}),
        "relation": sorted({r["id"] for v in snap["entities"].values() for r in v["detail"]["relations"]}),
        "webhook": sorted(snap["webhooks"]),
    }
    chunks = client.ok("POST", "/v1/search", {"query": "lives works met", "scope": "chunks", "limit": 100})
    found.ids["chunk"] = [r["id"] for r in chunks["results"]]
    # Every id anywhere in the snapshot (key ids, message ids, ...) counts as the tenant's.
    found.ids["other"] = sorted(
        set(UUID_RE.findall(json.dumps(snap))) - {i for v in found.ids.values() for i in v}
    )
    details = [v["detail"] for v in snap["entities"].values()]
    found.names = {
        "container": sorted({r["name"] for r in records.get("container", [])}),
        "user": list(seeded.users),
        "agent": list(seeded.agents),
        "scope": list(seeded.scopes),
        "key": sorted({i["key"] for w in snap["working"].values() for i in w["items"]}),
        "tag": sorted({t for r in records.get("memory", []) for t in r["tags"]}),
        "conversation": sorted(
            {r["conversation_id"] for r in records.get("memory", []) if r["conversation_id"]}
        ),
        "custom_id": sorted({d["custom_id"] for d in snap["documents"] if d["custom_id"]}),
        "entity_name": sorted(
            {d["entity"]["name"] for d in details} | {a for d in details for a in d["entity"]["aliases"]}
        ),
        "entity_type": sorted({d["entity"]["entity_type"] for d in details}),
        "plan": sorted(snap["plans"]),
        "task": sorted(snap["tasks"]),
        "subtask": sorted({st for task in snap["tasks"].values() for st in task["sub_tasks"]}),
    }
    found.cursors = _cursors(client, seeded, found)
    return found


def _cursors(client: TenantClient, seeded: Seeded, found: Harvest) -> dict[str, list[str]]:
    """The next_cursor of a one-item first page of every paginated list."""
    user, agent = seeded.users[0], seeded.agents[0]

    def first(answer: dict[str, Any], key: str = "next_cursor") -> list[str]:
        return [answer[key]] if answer.get(key) else []

    cursors = {
        "memories": first(client.ok("POST", "/v1/memories/list", {"limit": 1}))
        + first(client.ok("POST", "/v1/memories/list", {"limit": 1, "user_id": user})),
        "documents": first(client.ok("POST", "/v1/documents/list", {"limit": 1})),
        "sessions": first(client.ok("GET", "/v1/sessions", user_id=user, agent_id=agent, limit=1))
        + first(client.ok("GET", "/v1/sessions", agent_id=agent, limit=1)),
        "procedures": first(client.ok("GET", "/v1/procedures", limit=1)),
        "entities": first(client.ok("GET", "/v1/entities", limit=1)),
        "observations": [],
        "relations": [],
        "graph": [],
        "plans": first(client.ok("GET", "/v1/plans", limit=1)),
        "tasks": first(client.ok("GET", "/v1/task-context", limit=1)),
    }
    for entity_id in found.ids["entity"]:
        detail = client.ok("GET", f"/v1/entities/{entity_id}", limit=1, user_id=user)
        cursors["observations"] += first(detail, "observations_next_cursor")
        cursors["relations"] += first(detail, "relations_next_cursor")
        cursors["graph"] += first(client.ok("GET", "/v1/graph", entity=entity_id, limit=1))
    return cursors
