"""Containers: the tree with counts, create with description and parent, delete with confirmation,
archive into the parent with provenance, errors and tenant isolation."""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import Api, assert_invalid


def _node(tree: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for node in tree:
        if node["name"] == name:
            return node
        found = _node(node["children"], name) if name.startswith(node["name"] + ".") else None
        if found:
            return found
    raise AssertionError(f"{name} not in tree")


def test_tree_has_direct_and_total_counts(api: Api) -> None:
    api.post("/v1/memories", {"content": "a customer", "container": "crm"})
    for i in range(2):
        api.post("/v1/memories", {"content": f"contact {i}", "container": "crm.contacts"})
    api.post("/v1/memories", {"content": "a deal", "container": "crm.deals.2026"})
    api.post(
        "/v1/memories",
        {"content": "private", "container": "crm.contacts", "user_id": "u", "visibility": "private"},
    )

    tree = api.get("/v1/containers").json

    crm = _node(tree["containers"], "crm")
    assert (crm["memory_count"], crm["total_count"]) == (1, 5)
    assert [c["name"] for c in crm["children"]] == ["crm.contacts", "crm.deals"]
    assert _node(tree["containers"], "crm.contacts")["memory_count"] == 3
    deals = _node(tree["containers"], "crm.deals")
    assert (deals["memory_count"], deals["total_count"]) == (0, 1)
    assert tree["total_memories"] == 5


def test_create_with_parent_and_description_and_update_the_description(api: Api) -> None:
    api.post("/v1/containers", {"name": "projects"})

    created = api.post("/v1/containers", {"name": "apollo", "parent": "projects", "description": "moon shot"})
    updated = api.post("/v1/containers", {"name": "projects.apollo", "description": "moon landing"})
    deep = api.post("/v1/containers", {"name": "a.b.c", "description": "ancestors are created"})

    assert created.status == 201
    assert created.json["name"] == "projects.apollo" and created.json["parent"] == "projects"
    assert updated.status == 200 and updated.json["description"] == "moon landing"
    assert deep.status == 201 and deep.json["parent"] == "a.b"
    tree = api.get("/v1/containers").json["containers"]
    assert _node(tree, "projects.apollo")["description"] == "moon landing"
    assert _node(tree, "a.b")["children"][0]["name"] == "a.b.c"


def test_posting_an_existing_container_without_a_description_keeps_its_description(api: Api) -> None:
    # Given: container proj with a description
    api.post("/v1/containers", {"name": "proj", "description": "the moon project"})

    # When: it is posted again without a description
    again = api.post("/v1/containers", {"name": "proj"})

    # Then: 200, and the description it had is kept
    assert again.status == 200 and again.json["description"] == "the moon project"
    assert _node(api.get("/v1/containers").json["containers"], "proj")["description"] == "the moon project"


def test_posting_an_empty_description_clears_it(api: Api) -> None:
    # Given: container proj with a description
    api.post("/v1/containers", {"name": "proj", "description": "the moon project"})

    # When: it is posted again with description ""
    cleared = api.post("/v1/containers", {"name": "proj", "description": ""})

    # Then: the description is cleared
    assert cleared.status == 200 and cleared.json["description"] == ""
    assert _node(api.get("/v1/containers").json["containers"], "proj")["description"] == ""


def test_a_null_description_is_a_422_naming_it(api: Api) -> None:
    # Given: container proj with a description
    api.post("/v1/containers", {"name": "proj", "description": "the moon project"})

    # When: it is posted with description null
    refused = api.post("/v1/containers", {"name": "proj", "description": None})

    # Then: 422 naming description, and the description is kept
    assert refused.status == 422 and refused.json["error"]["field"] == "description"
    assert _node(api.get("/v1/containers").json["containers"], "proj")["description"] == "the moon project"


def test_confirm_yes_is_refused_and_deletes_nothing(api: Api) -> None:
    # Given a container with a memory in it
    api.post("/v1/memories", {"content": "keep me", "container": "crm"})

    # When its deletion is "confirmed" with a word other than true
    response = api.delete("/v1/containers/crm?confirm=yes")

    # Then it is a 422 naming confirm, and the memory is still there
    assert_invalid(response, "confirm")
    assert api.get("/v1/stats").json["total"] == 1


def test_delete_asks_for_confirmation_when_not_empty(api: Api) -> None:
    api.post("/v1/memories", {"content": "old note", "container": "scratch.tmp"})
    api.post(
        "/v1/memories",
        {"content": "private", "container": "scratch", "user_id": "u", "visibility": "private"},
    )
    api.post("/v1/containers", {"name": "empty"})

    unconfirmed = api.delete("/v1/containers/scratch")
    confirmed = api.delete("/v1/containers/scratch?confirm=true")
    empty = api.delete("/v1/containers/empty")

    assert unconfirmed.status == 409
    assert unconfirmed.json["error"]["code"] == "confirmation_required"
    assert unconfirmed.json["error"]["memories"] == 2 and unconfirmed.json["error"]["containers"] == 1
    assert confirmed.status == 200
    assert confirmed.json == {"deleted": "scratch", "containers": 2, "memories": 2, "documents": 0}
    assert empty.status == 200 and empty.json["memories"] == 0
    assert api.post("/v1/memories/list", {"container": "scratch.*", "user_id": "u"}).json["memories"] == []
    names = [n["name"] for n in api.get("/v1/containers").json["containers"]]
    assert "scratch" not in names and "empty" not in names


def test_archive_moves_content_into_the_parent_and_keeps_provenance(api: Api) -> None:
    kept = api.post("/v1/memories", {"content": "Q1 plan", "container": "team.q1", "metadata": {"k": 1}}).json
    deep = api.post("/v1/memories", {"content": "week 3 notes", "container": "team.q1.w3"}).json
    private = api.post(
        "/v1/memories",
        {"content": "my review", "container": "team.q1", "user_id": "u", "visibility": "private"},
    ).json

    archived = api.post("/v1/containers/team.q1/archive")

    assert archived.status == 200
    assert archived.json == {
        "archived": "team.q1",
        "into": "team",
        "containers": ["team.q1", "team.q1.w3"],
        "memories": 3,
        "documents": 0,
    }
    moved = api.get(f"/v1/memories/{kept['id']}").json
    assert moved["container"] == "team"
    assert moved["metadata"]["archived_from"] == ["team.q1"] and moved["metadata"]["k"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", moved["metadata"]["archived_at"])
    assert api.get(f"/v1/memories/{deep['id']}").json["metadata"]["archived_from"] == ["team.q1.w3"]
    assert api.get(f"/v1/memories/{private['id']}?user_id=u").json["container"] == "team"
    tree = api.get("/v1/containers").json["containers"]
    assert _node(tree, "team")["children"] == [] and _node(tree, "team")["memory_count"] == 3
    found = api.post("/v1/search", {"query": "week 3 notes", "container": "team"}).json["results"]
    assert found[0]["id"] == deep["id"]


def test_archive_then_delete(api: Api) -> None:
    api.post("/v1/memories", {"content": "draft", "container": "docs.drafts"})
    api.post("/v1/containers/docs.drafts/archive")

    assert api.delete("/v1/containers/docs").status == 409
    assert api.delete("/v1/containers/docs?confirm=true").json["memories"] == 1
    assert api.get("/v1/containers").json["containers"] == []


def test_container_errors(api: Api) -> None:
    api.post("/v1/containers", {"name": "top"})

    assert api.post("/v1/containers/top/archive").status == 409
    assert api.post("/v1/containers/missing.child/archive").status == 404
    assert api.delete("/v1/containers/missing").status == 404
    assert api.delete("/v1/containers/bad%20name").json["error"]["field"] == "name"
    assert api.delete("/v1/containers/top?confirm=maybe").json["error"]["field"] == "confirm"
    assert api.post("/v1/containers", {"name": "x", "parent": "nope"}).status == 404
    assert api.post("/v1/containers", {"name": "bad name"}).json["error"]["field"] == "name"
    assert (
        api.post("/v1/containers", {"name": "top", "description": "x" * 2001}).json["error"]["field"]
        == "description"
    )
    too_deep = api.post("/v1/containers", {"name": "a.b.c.d.e", "parent": "p1.p2.p3.p4"})
    assert too_deep.status == 422 and too_deep.json["error"]["field"] == "name"
    assert_invalid(api.post("/v1/containers", {"name": "top", "colour": "red"}), "colour")


def test_another_tenant_sees_and_touches_nothing(api: Api, other_api: Api) -> None:
    api.post("/v1/memories", {"content": "mine", "container": "secret.plans"})

    assert other_api.get("/v1/containers").json == {"containers": [], "total_memories": 0}
    assert other_api.delete("/v1/containers/secret?confirm=true").status == 404
    assert other_api.post("/v1/containers/secret.plans/archive").status == 404
    assert api.get("/v1/containers").json["total_memories"] == 1
