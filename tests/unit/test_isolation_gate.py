"""The isolation gate's own checks: every route has a request template, and the leak and change
checks can fail (`make isolation` runs the gate itself against the local stack)."""

from __future__ import annotations

import pytest

from engram.api import routes
from engram.api.routes import Route
from tests.gates.isolation import templates
from tests.gates.isolation.__main__ import differences, leaks
from tests.gates.isolation.client import Answer, Call
from tests.gates.isolation.reads import Harvest
from tests.gates.isolation.seed import Seeded

VICTIM_ID = "0b7e2f4c-1d2e-4f5a-9b8c-7d6e5f4a3b2c"


def victim() -> Harvest:
    seeded = Seeded("v1", "sxsecret", ("v1-user",), ("v1-agent",), ("v1",), ("v1-plan",))
    return Harvest(seeded, ids={"memory": [VICTIM_ID]})


def test_every_route_has_a_request_template() -> None:
    assert templates.coverage_problems() == []


def test_a_new_route_without_a_template_stops_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        templates, "ROUTES", (*routes.ROUTES, Route("future", "GET", "/v1/future/{id}", "get_future"))
    )

    assert templates.coverage_problems() == [
        "no request template for GET /v1/future/{id}: add one to tests.gates.isolation.templates"
    ]


def test_an_id_the_request_named_may_come_back_in_a_404() -> None:
    call = Call("GET", f"/v1/memories/{VICTIM_ID.upper()}")

    assert leaks(call, Answer(404, f'{{"message": "memory {VICTIM_ID.upper()} not found"}}'), victim()) == []


def test_an_id_or_content_the_request_did_not_name_is_a_leak() -> None:
    call = Call("POST", "/v1/search", body={"query": "anything"})

    found = leaks(
        call, Answer(200, f'{{"results": [{{"id": "{VICTIM_ID}", "content": "x SXSECRET"}}]}}'), victim()
    )

    assert found == ["the victim's content (its secret marker)", f"the victim's id {VICTIM_ID}"]


def test_a_changed_value_is_reported_with_where_it_changed() -> None:
    before = {"memories": [{"id": 1, "tags": ["a"]}], "stats": {"total": 1}}
    after = {"memories": [{"id": 1, "tags": ["a", "b"]}], "stats": {"total": 1}}

    assert differences(before, before) == []
    assert differences(before, after) == ['/memories[0]/tags: ["a"] -> ["a", "b"]']
