"""No silent drops: every route of engram.api.routes that reads a JSON body refuses a body of the wrong
shape with a 422 that says so. An array is not read as its first item (Powertools' validation would
take a list's first element for a model and drop the rest), and a request nested one level too deep
({"memory": {...}}) is not read as an empty one."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from engram.api.routes import ROUTES, Route
from engram.local.gateway import LocalGateway
from tests.conftest import Api

# A body each route would accept, so that the only thing wrong with what is sent is its shape.
VALID: dict[str, dict[str, Any]] = {
    "create_memory": {"content": "Alice lives in Paris"},
    "create_memories": {"memories": [{"content": "Alice lives in Paris"}]},
    "list_memories": {},
    "upsert_memory": {"content": "Alice lives in Paris"},
    "update_memory": {"tags": ["home"]},
    "search": {"query": "where does Alice live"},
    "create_session": {"user_id": "alice"},
    "add_messages": {"messages": [{"role": "user", "content": "hi"}]},
    "create_document": {"content": "hello", "filename": "a.txt"},
    "upload_document": {"filename": "a.txt"},
    "list_documents": {},
    "create_entity": {"name": "Alice"},
    "add_observation": {"content": "Alice lives in Paris"},
    "create_relation": {"source": {"name": "Alice"}, "relation_type": "knows", "target": {"name": "Bob"}},
    "set_working": {"value": {"step": 1}},
    "create_procedure": {"trigger": "a refund", "content": "check the receipt"},
    "update_procedure": {"content": "check the receipt"},
    "match_procedures": {"situation": "a refund"},
    "create_container": {"name": "crm"},
    "set_extraction_instructions": {"instructions": "Track homes."},
    "export": {},
    "get_context": {"query": "book a flight"},
    "create_webhook": {"url": "http://127.0.0.1:9/hook", "events": ["memory.created"]},
    "create_plan": {"plan_id": "p1", "goal_event": "trip.planned"},
    "update_plan": {"status": "done"},
    "create_task_context": {"task_id": "t1", "event_type": "flight.search"},
    "update_task_context": {"state": {"n": 1}},
}


def _body_routes() -> list[Route]:
    """The routes whose operation in /openapi.json takes a JSON body."""
    document = LocalGateway().openapi()
    with_body = {
        op["operationId"]
        for ops in document["paths"].values()
        for op in ops.values()
        if isinstance(op, dict) and "application/json" in op.get("requestBody", {}).get("content", {})
    }
    return [route for route in ROUTES if route.operation_id in with_body]


BODY_ROUTES = _body_routes()


def _url(route: Route) -> str:
    path = route.path
    for name in ("id", "memory_id", "scope", "key", "name", "plan_id", "task_id", "subtask_id"):
        path = path.replace("{" + name + "}", str(uuid.UUID(int=7)) if "id" in name else "x")
    return path


def test_every_route_that_reads_a_body_has_a_valid_example() -> None:
    assert len(BODY_ROUTES) >= 25
    assert {r.operation_id for r in BODY_ROUTES} == set(VALID), "add the new route's body to VALID"


@pytest.mark.parametrize("route", BODY_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_an_array_body_is_refused(api: Api, route: Route) -> None:
    body = [VALID[route.operation_id], VALID[route.operation_id]]

    response = api.call(route.method, _url(route), body)

    assert response.status == 422, (response.status, response.json)
    error = response.json["error"]
    assert (error["code"], error["field"]) == ("validation_error", "body")
    assert "not an array" in error["message"]
    # the batch route is suggested where it is what the caller meant, not on every route
    assert ("/v1/memories/batch" in error["message"]) == (
        (route.method, route.path) == ("POST", "/v1/memories")
    )


@pytest.mark.parametrize("route", BODY_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_a_body_nested_one_level_too_deep_is_refused(api: Api, route: Route) -> None:
    response = api.call(route.method, _url(route), {"request": VALID[route.operation_id]})

    assert response.status == 422, (response.status, response.json)
    error = response.json["error"]
    assert (error["code"], error["field"]) == ("validation_error", "request")
    assert "top level" in error["message"]


@pytest.mark.parametrize("route", BODY_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_a_null_body_is_refused(api: Api, route: Route) -> None:
    # null is not an object, even where the body may be left out (export): left out means no bytes
    response = api.call(route.method, _url(route), raw=b"null")

    assert response.status == 422, (response.status, response.json)
    assert "must be one JSON object {...}, not null" in response.json["error"]["message"]


@pytest.mark.parametrize("body", ["Alice lives in Paris", 5, True])
def test_a_scalar_body_is_refused(api: Api, body: Any) -> None:
    response = api.post("/v1/memories", body)

    assert response.status == 422 and "must be one JSON object" in response.json["error"]["message"]


def test_the_array_stores_nothing(api: Api) -> None:
    response = api.post("/v1/memories", [{"content": "a"}, {"content": "b"}])

    assert response.status == 422
    assert "POST /v1/memories/batch" in response.json["error"]["message"]
    assert api.get("/v1/stats").json["total"] == 0
