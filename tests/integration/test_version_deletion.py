"""Deleting a version mends its chain: the version it had retired is current again when the deleted one
was current, and is linked to the deleted one's replacement otherwise, so history stays one chain."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api


def _store(api: Api, **body: Any) -> dict[str, Any]:
    response = api.post("/v1/memories", {"container": "versions", **body})
    assert response.status == 201, response.json
    return dict(response.json)


def test_deleting_the_current_version_makes_the_one_it_retired_current_again(api: Api) -> None:
    # Given A, and B made from it by a PATCH of its content
    a = _store(api, content="The printer is on floor 2")
    b = api.patch(f"/v1/memories/{a['id']}", {"content": "The printer is on floor 3"}).json

    # When B is deleted
    deleted = api.delete(f"/v1/memories/{b['id']}")

    # Then A is current again: listed, and open to a new version
    assert deleted.status == 204
    again = api.get(f"/v1/memories/{a['id']}").json
    assert again["is_latest"] is True and again["valid_to"] is None
    listed = api.post("/v1/memories/list", {"container": "versions"}).json["memories"]
    assert [m["id"] for m in listed] == [a["id"]]
    assert api.patch(f"/v1/memories/{a['id']}", {"content": "The printer is on floor 4"}).status == 200


def test_deleting_a_middle_version_links_its_neighbours(api: Api) -> None:
    # Given the chain v1 -> v2 -> v3
    v1 = _store(api, content="Build runs on Jenkins", valid_from="2026-01-01T00:00:00Z")
    v2 = _store(api, content="Build runs on GitLab", valid_from="2026-02-01T00:00:00Z", supersedes=v1["id"])
    v3 = _store(api, content="Build runs on GitHub", valid_from="2026-03-01T00:00:00Z", supersedes=v2["id"])

    # When v2 is deleted
    deleted = api.delete(f"/v1/memories/{v2['id']}")

    # Then v3 updates v1 directly, v1 stays history with its valid_to, and history is one chain
    assert deleted.status == 204
    old = api.get(f"/v1/memories/{v1['id']}").json
    assert old["is_latest"] is False and old["valid_to"] == "2026-02-01T00:00:00Z"
    for start in (v1, v3):
        history = api.get(f"/v1/memories/{start['id']}/history").json
        assert [v["id"] for v in history["versions"]] == [v1["id"], v3["id"]]
    related = api.get(f"/v1/memories/{v3['id']}/related").json["related"]
    assert [(r["id"], r["relationship"]) for r in related] == [(v1["id"], "updates")]
