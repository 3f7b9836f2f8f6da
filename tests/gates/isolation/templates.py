"""One request template per route of `engram.api.routes`: the requests tenant A makes with tenant B's
ids, names and cursors (and, where a route pairs two things, with A's own next to B's).

A route without a template stops the gate before it starts: add one here when you add a route."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from engram.api.routes import ROUTES
from tests import export_records as records
from tests.gates.isolation.client import Call
from tests.gates.isolation.reads import Harvest

NDJSON = {"content-type": "application/x-ndjson"}

Template = Callable[[Harvest, Harvest], Iterable[Call]]


@dataclass(frozen=True)
class Spec:
    template: Template
    cap: int = 150  # requests drawn from the template's candidates (expensive routes take fewer)


def id_forms(value: str) -> list[str]:
    """The spellings a UUID path parameter accepts: as given, upper case, braces, urn."""
    return [value, value.upper(), "{" + value + "}", f"urn:uuid:{value}"]


def _ids(b: Harvest, kind: str, forms: bool = True) -> list[str]:
    values = b.ids.get(kind, [])
    return [form for value in values for form in id_forms(value)] if forms else list(values)


def _party(b: Harvest) -> list[dict[str, str]]:
    user, agent = b.names["user"][0], b.names["agent"][0]
    return [{}, {"user_id": user}, {"agent_id": agent}, {"user_id": user, "agent_id": agent}]


def _users(b: Harvest) -> list[dict[str, str]]:
    return [{}, *({"user_id": u} for u in b.names["user"])]


def _containers(b: Harvest) -> list[str]:
    return b.names["container"] + [f"{c}.*" for c in b.names["container"]]


def _content(a: Harvest) -> str:
    return f"Probe from the other tenant {a.seeded.secret}"


# --- memories ------------------------------------------------------------------------------------


def memories_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for memory in _ids(b, "memory", forms=False):
        yield Call("POST", "/v1/memories", body={"content": _content(a), "supersedes": memory})
    for container in b.names["container"]:
        yield Call("POST", "/v1/memories", body={"content": _content(a), "container": container})
    for user in b.names["user"]:
        body = {"content": _content(a), "user_id": user, "visibility": "private"}
        yield Call("POST", "/v1/memories", body=body)


def memories_list(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container, party in itertools.product([None, *_containers(b)], _users(b)):
        yield Call(
            "POST", "/v1/memories/list", body={**({"container": container} if container else {}), **party}
        )
    for cursor in b.cursors["memories"] + b.cursors["documents"]:
        yield Call("POST", "/v1/memories/list", body={"cursor": cursor, "limit": 100})
    for tag in b.names["tag"]:
        yield Call("POST", "/v1/memories/list", body={"filters": {"tags": [tag]}})
    for agent in b.names["agent"]:
        yield Call("POST", "/v1/memories/list", body={"filters": {"agent_id": agent}})
    for conversation in b.names["conversation"]:
        yield Call("POST", "/v1/memories/list", body={"filters": {"conversation_id": conversation}})
    for user in b.names["user"]:
        yield Call("POST", "/v1/memories/list", body={"user_id": user, "filters": {"user_id": user}})


def memories_batch(a: Harvest, b: Harvest) -> Iterable[Call]:
    """B's ids, containers and users inside a batch, beside a memory of A's own."""
    own = {"content": _content(a)}
    for memory in _ids(b, "memory", forms=False):
        yield Call("POST", "/v1/memories/batch", body={"memories": [own, {**own, "supersedes": memory}]})
    for container in b.names["container"]:
        yield Call("POST", "/v1/memories/batch", body={"memories": [own, {**own, "container": container}]})
    for user in b.names["user"]:
        private = {**own, "user_id": user, "visibility": "private"}
        yield Call("POST", "/v1/memories/batch", body={"memories": [private, own]})


def memories_upsert(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container, party in itertools.product(b.names["container"], _users(b)):
        yield Call(
            "POST", "/v1/memories/upsert", body={"content": _content(a), "container": container, **party}
        )


def memory_by_id(method: str, suffix: str = "", body: Any = None) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for memory, party in itertools.product(_ids(b, "memory") + _ids(b, "chunk", False), _party(b)):
            yield Call(method, f"/v1/memories/{memory}{suffix}", party, body)

    return template


def memories_related(a: Harvest, b: Harvest) -> Iterable[Call]:
    for memory, depth, party in itertools.product(_ids(b, "memory", False), ("1", "4"), _party(b)):
        yield Call("GET", f"/v1/memories/{memory}/related", {"depth": depth, **party})


def search(a: Harvest, b: Harvest) -> Iterable[Call]:
    queries = b.names["entity_name"] + b.names["tag"] + b.names["container"] + _ids(b, "memory", False)
    for query, scope in itertools.product(queries, ("all", "memories", "chunks")):
        yield Call("POST", "/v1/search", body={"query": query, "scope": scope, "limit": 100})
    for container, party in itertools.product(_containers(b), _users(b)):
        body = {"query": "lives works met", "container": container, "include_history": True, **party}
        yield Call("POST", "/v1/search", body=body)
    for user, agent in itertools.product(b.names["user"], [None, *b.names["agent"]]):
        body = {"query": "live manager", "scope": "messages", "user_id": user}
        yield Call("POST", "/v1/search", body={**body, "filters": {"agent_id": agent}} if agent else body)
    for tag in b.names["tag"]:
        yield Call(
            "POST", "/v1/search", body={"query": "meeting", "filters": {"tags": [tag]}, "mode": "text"}
        )
    for user, scope in itertools.product(b.names["user"], ("all", "messages")):
        body = {"query": "lives works met", "scope": scope, "user_id": user, "filters": {"user_id": user}}
        yield Call("POST", "/v1/search", body=body)
    yield Call(
        "POST",
        "/v1/search",
        body={"query": "lives", "as_of": "2020-01-01T00:00:00Z", "include_related": False},
    )


# --- sessions ------------------------------------------------------------------------------------


def sessions_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for party, container in itertools.product(_party(b)[1:], b.names["container"]):
        yield Call("POST", "/v1/sessions", body={**party, "container": container})


def sessions_list(a: Harvest, b: Harvest) -> Iterable[Call]:
    for party in _party(b)[1:]:
        yield Call("GET", "/v1/sessions", party)
        for cursor in b.cursors["sessions"]:
            yield Call("GET", "/v1/sessions", {**party, "cursor": cursor})


def session_by_id(method: str, suffix: str = "", body: Any = None) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for session, party in itertools.product(_ids(b, "session"), _party(b)):
            yield Call(method, f"/v1/sessions/{session}{suffix}", party, body)

    return template


# --- documents -----------------------------------------------------------------------------------


def documents_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container, custom_id in zip(b.names["container"], b.names["custom_id"] * 3, strict=False):
        body = {"content": _content(a), "container": container, "custom_id": custom_id, "extract": "none"}
        yield Call("POST", "/v1/documents", body=body)


def documents_upload(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container in b.names["container"]:
        files = {"file": ("probe.txt", _content(a).encode(), "text/plain")}
        yield Call("POST", "/v1/documents/upload", files=files, data={"container": container})
        yield Call("POST", "/v1/documents/upload", body={"filename": "probe.txt", "container": container})


def documents_list(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container, status in itertools.product([None, *_containers(b)], (None, "done")):
        body = {k: v for k, v in (("container", container), ("status", status)) if v}
        yield Call("POST", "/v1/documents/list", body=body)
    for cursor in b.cursors["documents"] + b.cursors["memories"]:
        yield Call("POST", "/v1/documents/list", body={"cursor": cursor})


def document_by_id(method: str) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for document in _ids(b, "document") + _ids(b, "chunk", False):
            yield Call(method, f"/v1/documents/{document}")

    return template


# --- the graph -----------------------------------------------------------------------------------


def entities_search(a: Harvest, b: Harvest) -> Iterable[Call]:
    for name in b.names["entity_name"]:
        for prefix in {name, name[:3], name.split()[-1]}:
            yield Call("GET", "/v1/entities", {"q": prefix})
    for entity_type in b.names["entity_type"]:
        yield Call("GET", "/v1/entities", {"type": entity_type, "limit": "100"})
    for cursor in b.cursors["entities"]:
        yield Call("GET", "/v1/entities", {"cursor": cursor})


def entities_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for name, entity_type in zip(
        b.names["entity_name"], itertools.cycle(b.names["entity_type"]), strict=False
    ):
        yield Call("POST", "/v1/entities", body={"name": name, "entity_type": entity_type})


def entity_get(a: Harvest, b: Harvest) -> Iterable[Call]:
    for entity, party in itertools.product(_ids(b, "entity"), _users(b)):
        yield Call("GET", f"/v1/entities/{entity}", party)
    mine = a.ids["entity"][0]
    for cursor in b.cursors["observations"]:
        yield Call("GET", f"/v1/entities/{mine}", {"observations_cursor": cursor})
    for cursor in b.cursors["relations"]:
        yield Call("GET", f"/v1/entities/{mine}", {"relations_cursor": cursor})


def entity_delete(a: Harvest, b: Harvest) -> Iterable[Call]:
    for entity in _ids(b, "entity"):
        yield Call("DELETE", f"/v1/entities/{entity}")


def observations_add(a: Harvest, b: Harvest) -> Iterable[Call]:
    mine_entity, mine_memory = a.ids["entity"][0], a.ids["memory"][0]
    for memory in _ids(b, "memory", False):
        yield Call("POST", f"/v1/entities/{mine_entity}/observations", body={"memory_id": memory})
    for entity in _ids(b, "entity", False):
        yield Call("POST", f"/v1/entities/{entity}/observations", body={"memory_id": mine_memory})
        yield Call("POST", f"/v1/entities/{entity}/observations", body={"content": _content(a)})


def observations_delete(a: Harvest, b: Harvest) -> Iterable[Call]:
    mine_entity, mine_memory = a.ids["entity"][0], a.ids["memory"][0]
    for entity, memory in itertools.product(_ids(b, "entity", False), _ids(b, "memory", False)):
        yield Call("DELETE", f"/v1/entities/{entity}/observations/{memory}")
    for memory in _ids(b, "memory", False):
        yield Call("DELETE", f"/v1/entities/{mine_entity}/observations/{memory}")
    for entity in _ids(b, "entity", False):
        yield Call("DELETE", f"/v1/entities/{entity}/observations/{mine_memory}")


def relations_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    mine = a.ids["entity"][0]
    for theirs in _ids(b, "entity", False):
        yield Call("POST", "/v1/relations", body={"source": mine, "relation_type": "knows", "target": theirs})
        yield Call("POST", "/v1/relations", body={"source": theirs, "relation_type": "knows", "target": mine})
    for memory in _ids(b, "memory", False):
        body = {
            "source": {"name": "Probe One"},
            "relation_type": "knows",
            "target": {"name": "Probe Two"},
            "source_memory_id": memory,
        }
        yield Call("POST", "/v1/relations", body=body)


def relation_delete(a: Harvest, b: Harvest) -> Iterable[Call]:
    for relation in _ids(b, "relation"):
        yield Call("DELETE", f"/v1/relations/{relation}")


def graph(a: Harvest, b: Harvest) -> Iterable[Call]:
    for entity, party in itertools.product(_ids(b, "entity", False) + b.names["entity_name"], _users(b)):
        yield Call("GET", "/v1/graph", {"entity": entity, "depth": "4", "include_history": "true", **party})
    mine = a.ids["entity"][0]
    for cursor in b.cursors["graph"]:
        yield Call("GET", "/v1/graph", {"entity": mine, "cursor": cursor})


# --- working memory, procedures, profile, containers, export ----------------------------------------


def working_key(method: str, body: Any = None) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for scope, key in itertools.product(b.names["scope"], b.names["key"]):
            yield Call(method, f"/v1/working/{scope}/{key}", body=body)

    return template


def working_scope(method: str) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for scope in b.names["scope"]:
            yield Call(method, f"/v1/working/{scope}")
            for key in b.names["key"]:
                yield Call(method, f"/v1/working/{scope}", {"after": key} if method == "GET" else {})

    return template


def procedures_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for agent in b.names["agent"]:
        body = {"trigger": _content(a), "content": _content(a), "agent_id": agent, "visibility": "private"}
        yield Call("POST", "/v1/procedures", body=body)


def procedures_list(a: Harvest, b: Harvest) -> Iterable[Call]:
    for agent, kind in itertools.product([None, *b.names["agent"]], (None, "rule", "example")):
        yield Call("GET", "/v1/procedures", {k: v for k, v in (("agent_id", agent), ("kind", kind)) if v})
    for cursor in b.cursors["procedures"]:
        yield Call("GET", "/v1/procedures", {"cursor": cursor})


def procedures_match(a: Harvest, b: Harvest) -> Iterable[Call]:
    for situation, agent in itertools.product(
        b.names["entity_name"] + ["greeting"], [None, *b.names["agent"]]
    ):
        body = {"situation": situation, "min_similarity": 0.0, "limit": 50}
        yield Call("POST", "/v1/procedures/match", body={**body, "agent_id": agent} if agent else body)


def procedure_by_id(method: str, body: Any = None) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for procedure, agent in itertools.product(_ids(b, "procedure"), [None, *b.names["agent"]]):
            yield Call(method, f"/v1/procedures/{procedure}", {"agent_id": agent} if agent else {}, body)

    return template


def profile(a: Harvest, b: Harvest) -> Iterable[Call]:
    for party, container in itertools.product(_party(b)[1:], [None, *_containers(b)]):
        yield Call(
            "GET", "/v1/profile", {**party, **({"container": container} if container else {}), "q": "lives"}
        )


def context(a: Harvest, b: Harvest) -> Iterable[Call]:
    sessions = [None, *_ids(b, "session", forms=False)]
    for party, session, plan in itertools.product(_party(b), sessions, [None, *b.names["plan"]]):
        body: dict[str, Any] = {"query": "where does someone live", **party, "max_tokens": 400}
        body.update({k: v for k, v in (("session_id", session), ("plan_id", plan)) if v})
        yield Call("POST", "/v1/context", body=body)
    for container in _containers(b):
        yield Call("POST", "/v1/context", body={"query": "lives", "container": container})


def containers_tree(a: Harvest, b: Harvest) -> Iterable[Call]:
    yield from (Call("GET", "/v1/containers") for _ in range(3))


def containers_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container in b.names["container"]:
        yield Call("POST", "/v1/containers", body={"name": "probe", "parent": container})
        yield Call("POST", "/v1/containers", body={"name": container, "description": _content(a)})


def container_delete(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container, confirm in itertools.product(b.names["container"], ({}, {"confirm": "true"})):
        yield Call("DELETE", f"/v1/containers/{container}", confirm)


def container_archive(a: Harvest, b: Harvest) -> Iterable[Call]:
    for container in b.names["container"]:
        yield Call("POST", f"/v1/containers/{container}/archive")


def instructions(method: str) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for container in [None, *b.names["container"]]:
            query = {"container": container} if container else {}
            if method == "PUT":
                yield Call(method, "/v1/extraction-instructions", body={"instructions": _content(a), **query})
            else:
                yield Call(method, "/v1/extraction-instructions", query)

    return template


def export(a: Harvest, b: Harvest) -> Iterable[Call]:
    yield Call("POST", "/v1/export", body={})
    for container in _containers(b):
        yield Call("POST", "/v1/export", body={"container": container})


def export_job(a: Harvest, b: Harvest) -> Iterable[Call]:
    # Locally there are no export jobs (404 for every id); in AWS a job id is looked up under the
    # caller's tenant. Either way B's ids must find nothing.
    for value in _ids(b, "memory", False) + _ids(b, "document", False):
        yield Call("GET", f"/v1/export/{value.replace('-', '')}")


def import_tenant(a: Harvest, b: Harvest) -> Iterable[Call]:
    # A file that names B's memories by id: refused as another tenant's (409), or, with new ids, copied
    # into A under ids of A's own; B's rows are never read, changed or revealed either way.
    for memory in _ids(b, "memory", False):
        lines = records.jsonl([records.header(tenant="probe"), records.memory(_content(a), id=memory)])
        for new_ids in ("false", "true"):
            yield Call("POST", "/v1/import", {"new_ids": new_ids}, content=lines, headers=NDJSON)


def import_job(a: Harvest, b: Harvest) -> Iterable[Call]:
    # Locally imports run at once (404 for every id); in AWS a job is looked up under the caller's tenant.
    for value in _ids(b, "memory", False):
        yield Call("GET", f"/v1/import/{value.replace('-', '')}")


# --- webhooks --------------------------------------------------------------------------------------


def webhooks_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    body = {"url": "http://127.0.0.1:9/probe", "events": ["document.failed"]}
    yield Call("POST", "/v1/webhooks", body=body)


def webhook_by_id(method: str) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for webhook in _ids(b, "webhook"):
            yield Call(method, f"/v1/webhooks/{webhook}")

    return template


# --- plans and task context ----------------------------------------------------------------------


def plans_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for plan in b.names["plan"]:
        yield Call("POST", "/v1/plans", body={"plan_id": plan, "goal_event": "probe", "goal_data": {}})


def plans_list(a: Harvest, b: Harvest) -> Iterable[Call]:
    for user, status in itertools.product([None, *b.names["user"]], (None, "pending")):
        yield Call("GET", "/v1/plans", {k: v for k, v in (("user_id", user), ("status", status)) if v})
    for cursor in b.cursors["plans"] + b.cursors["tasks"]:
        yield Call("GET", "/v1/plans", {"cursor": cursor})


def plan_by_id(method: str, body: Any = None) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for plan, if_match in itertools.product(b.names["plan"], (None, "1", "*")):
            headers = {"If-Match": if_match} if if_match and method != "GET" else {}
            yield Call(method, f"/v1/plans/{plan}", body=body, headers=headers)

    return template


def tasks_create(a: Harvest, b: Harvest) -> Iterable[Call]:
    for task in b.names["task"]:
        yield Call("POST", "/v1/task-context", body={"task_id": task, "event_type": "probe"})
    for subtask in b.names["subtask"]:  # claiming B's sub-task ids must neither fail on B's nor move them
        body = {"task_id": f"probe-{subtask}", "event_type": "probe", "sub_tasks": [subtask]}
        yield Call("POST", "/v1/task-context", body=body)


def tasks_list(a: Harvest, b: Harvest) -> Iterable[Call]:
    for plan in [None, *b.names["plan"]]:
        yield Call("GET", "/v1/task-context", {"plan_id": plan} if plan else {})
    for cursor in b.cursors["tasks"] + b.cursors["plans"]:
        yield Call("GET", "/v1/task-context", {"cursor": cursor})


def task_by_id(method: str, body: Any = None) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        for task, if_match in itertools.product(b.names["task"], (None, "1", "*")):
            headers = {"If-Match": if_match} if if_match and method != "GET" else {}
            yield Call(method, f"/v1/task-context/{task}", body=body, headers=headers)

    return template


def task_by_subtask(a: Harvest, b: Harvest) -> Iterable[Call]:
    for subtask in b.names["subtask"] + b.names["task"]:
        yield Call("GET", f"/v1/task-context/by-subtask/{subtask}")


def users_erase(a: Harvest, b: Harvest) -> Iterable[Call]:
    """Erasing B's users from A: a preview, then the erasure (A's own tenant only, B untouched)."""
    for user in b.names["user"]:
        yield Call("DELETE", f"/v1/users/{user}")
        yield Call("DELETE", f"/v1/users/{user}", {"confirm": "true"})


def stats(a: Harvest, b: Harvest) -> Iterable[Call]:
    yield Call("GET", "/v1/stats")
    for user in b.names["user"]:
        yield Call("GET", "/v1/stats", {"user_id": user})


def once(method: str, path: str) -> Template:
    def template(a: Harvest, b: Harvest) -> Iterable[Call]:
        yield from (Call(method, path) for _ in range(3))

    return template


TEMPLATES: dict[tuple[str, str], Spec] = {
    ("GET", "/health"): Spec(once("GET", "/health")),
    ("POST", "/v1/memories"): Spec(memories_create),
    ("POST", "/v1/memories/batch"): Spec(memories_batch),
    ("POST", "/v1/memories/list"): Spec(memories_list),
    ("POST", "/v1/memories/upsert"): Spec(memories_upsert),
    ("GET", "/v1/memories/{id}"): Spec(memory_by_id("GET")),
    ("PATCH", "/v1/memories/{id}"): Spec(memory_by_id("PATCH", body={"tags": ["probe"], "content": "probe"})),
    ("DELETE", "/v1/memories/{id}"): Spec(memory_by_id("DELETE")),
    ("GET", "/v1/memories/{id}/history"): Spec(memory_by_id("GET", "/history")),
    ("POST", "/v1/memories/{id}/revert"): Spec(memory_by_id("POST", "/revert")),
    ("GET", "/v1/memories/{id}/related"): Spec(memories_related),
    ("POST", "/v1/search"): Spec(search, cap=200),
    ("POST", "/v1/sessions"): Spec(sessions_create),
    ("GET", "/v1/sessions"): Spec(sessions_list),
    ("GET", "/v1/sessions/{id}"): Spec(session_by_id("GET")),
    ("DELETE", "/v1/sessions/{id}"): Spec(session_by_id("DELETE")),
    ("POST", "/v1/sessions/{id}/messages"): Spec(
        session_by_id(
            "POST", "/messages", {"messages": [{"role": "user", "content": "probe"}], "extract": "light"}
        )
    ),
    ("POST", "/v1/sessions/{id}/extract"): Spec(session_by_id("POST", "/extract")),
    ("POST", "/v1/sessions/{id}/recent"): Spec(session_by_id("POST", "/recent")),
    ("GET", "/v1/stats"): Spec(stats),
    ("DELETE", "/v1/users/{user_id}"): Spec(users_erase),
    ("POST", "/v1/documents"): Spec(documents_create, cap=4),
    ("POST", "/v1/documents/upload"): Spec(documents_upload, cap=6),
    ("POST", "/v1/documents/list"): Spec(documents_list),
    ("GET", "/v1/documents/{id}"): Spec(document_by_id("GET")),
    ("DELETE", "/v1/documents/{id}"): Spec(document_by_id("DELETE")),
    ("GET", "/v1/entities"): Spec(entities_search),
    ("POST", "/v1/entities"): Spec(entities_create),
    ("GET", "/v1/entities/{id}"): Spec(entity_get),
    ("DELETE", "/v1/entities/{id}"): Spec(entity_delete),
    ("POST", "/v1/entities/{id}/observations"): Spec(observations_add),
    ("DELETE", "/v1/entities/{id}/observations/{memory_id}"): Spec(observations_delete),
    ("POST", "/v1/relations"): Spec(relations_create),
    ("DELETE", "/v1/relations/{id}"): Spec(relation_delete),
    ("GET", "/v1/graph"): Spec(graph),
    ("PUT", "/v1/working/{scope}/{key}"): Spec(working_key("PUT", {"value": "probe"})),
    ("GET", "/v1/working/{scope}/{key}"): Spec(working_key("GET")),
    ("DELETE", "/v1/working/{scope}/{key}"): Spec(working_key("DELETE")),
    ("GET", "/v1/working/{scope}"): Spec(working_scope("GET")),
    ("DELETE", "/v1/working/{scope}"): Spec(working_scope("DELETE")),
    ("POST", "/v1/procedures"): Spec(procedures_create),
    ("GET", "/v1/procedures"): Spec(procedures_list),
    ("POST", "/v1/procedures/match"): Spec(procedures_match),
    ("GET", "/v1/procedures/{id}"): Spec(procedure_by_id("GET")),
    ("PATCH", "/v1/procedures/{id}"): Spec(procedure_by_id("PATCH", {"content": "probe"})),
    ("DELETE", "/v1/procedures/{id}"): Spec(procedure_by_id("DELETE")),
    ("GET", "/v1/profile"): Spec(profile),
    ("POST", "/v1/context"): Spec(context, cap=60),
    ("GET", "/v1/containers"): Spec(containers_tree),
    ("POST", "/v1/containers"): Spec(containers_create),
    ("DELETE", "/v1/containers/{name}"): Spec(container_delete),
    ("POST", "/v1/containers/{name}/archive"): Spec(container_archive),
    ("GET", "/v1/extraction-instructions"): Spec(instructions("GET")),
    ("PUT", "/v1/extraction-instructions"): Spec(instructions("PUT")),
    ("DELETE", "/v1/extraction-instructions"): Spec(instructions("DELETE")),
    ("POST", "/v1/export"): Spec(export, cap=10),
    ("GET", "/v1/export/{id}"): Spec(export_job),
    ("POST", "/v1/import"): Spec(import_tenant, cap=6),
    ("GET", "/v1/import/{id}"): Spec(import_job),
    ("POST", "/v1/webhooks"): Spec(webhooks_create, cap=1),
    ("GET", "/v1/webhooks"): Spec(once("GET", "/v1/webhooks")),
    ("GET", "/v1/webhooks/{id}"): Spec(webhook_by_id("GET")),
    ("DELETE", "/v1/webhooks/{id}"): Spec(webhook_by_id("DELETE")),
    ("POST", "/v1/plans"): Spec(plans_create),
    ("GET", "/v1/plans"): Spec(plans_list),
    ("GET", "/v1/plans/{plan_id}"): Spec(plan_by_id("GET")),
    ("PUT", "/v1/plans/{plan_id}"): Spec(plan_by_id("PUT", {"status": "done", "state": {"probe": 1}})),
    ("DELETE", "/v1/plans/{plan_id}"): Spec(plan_by_id("DELETE")),
    ("POST", "/v1/task-context"): Spec(tasks_create),
    ("GET", "/v1/task-context"): Spec(tasks_list),
    ("GET", "/v1/task-context/by-subtask/{subtask_id}"): Spec(task_by_subtask),
    ("GET", "/v1/task-context/{task_id}"): Spec(task_by_id("GET")),
    ("PUT", "/v1/task-context/{task_id}"): Spec(task_by_id("PUT", {"state": {"probe": 1}})),
    ("DELETE", "/v1/task-context/{task_id}"): Spec(task_by_id("DELETE")),
}


def coverage_problems() -> list[str]:
    """Routes without a template, and templates for routes that no longer exist."""
    routes = {(route.method, route.path) for route in ROUTES}
    missing = sorted(routes - TEMPLATES.keys())
    stale = sorted(TEMPLATES.keys() - routes)
    return [f"no request template for {m} {p}: add one to {__name__}" for m, p in missing] + [
        f"a template for {m} {p}, which engram.api.routes no longer has" for m, p in stale
    ]
