"""The memories endpoints, their errors, and tenant isolation over the API."""

from __future__ import annotations

import uuid

from tests.conftest import Api, assert_invalid


def test_create_returns_201_with_the_stored_memory(api: Api) -> None:
    # Given / When
    response = api.post("/v1/memories", {"content": "Alice lives in Paris", "tags": ["people"]})

    # Then
    assert response.status == 201
    body = response.json
    assert body["content"] == "Alice lives in Paris"
    assert body["container"] == "default"
    assert body["memory_type"] == "fact"
    assert body["tags"] == ["people"]
    assert body["is_latest"] is True
    for field in ("id", "metadata", "agent_id", "conversation_id", "created_at", "updated_at"):
        assert field in body


def test_memory_is_searchable_as_soon_as_create_returns(api: Api) -> None:
    created = api.post("/v1/memories", {"content": "The staging database runs on port 6543"}).json

    found = api.post("/v1/search", {"query": "which port does staging database use"}).json

    assert found["results"][0]["id"] == created["id"]


def test_another_tenants_memory_is_the_same_404_as_an_unknown_id(api: Api, other_api: Api) -> None:
    mine = api.post("/v1/memories", {"content": "secret plan"}).json

    theirs = other_api.get(f"/v1/memories/{mine['id']}")
    unknown = other_api.get(f"/v1/memories/{uuid.uuid4()}")

    assert theirs.status == unknown.status == 404
    assert theirs.json["error"]["code"] == unknown.json["error"]["code"] == "not_found"


def test_get_patch_and_delete_round_trip(api: Api) -> None:
    created = api.post("/v1/memories", {"content": "Bob likes tea", "memory_type": "preference"}).json

    fetched = api.get(f"/v1/memories/{created['id']}")
    patched = api.patch(
        f"/v1/memories/{created['id']}",
        {"tags": ["drinks"], "metadata": {"source": "chat"}, "memory_type": "fact"},
    )
    deleted = api.delete(f"/v1/memories/{created['id']}")
    after = api.get(f"/v1/memories/{created['id']}")

    assert fetched.status == 200 and fetched.json["content"] == "Bob likes tea"
    assert patched.status == 200
    assert patched.json["tags"] == ["drinks"]
    assert patched.json["metadata"] == {"source": "chat"}
    assert patched.json["memory_type"] == "fact"
    assert patched.json["updated_at"] >= created["updated_at"]
    assert deleted.status == 204 and deleted.raw == b""
    assert after.status == 404


def test_patching_content_re_embeds_it(api: Api) -> None:
    created = api.post("/v1/memories", {"content": "The office is in Lisbon"}).json

    patched = api.patch(
        f"/v1/memories/{created['id']}", {"content": "Quarterly revenue grew by twelve percent"}
    )
    found = api.post("/v1/search", {"query": "how much did revenue grow", "mode": "vector"}).json

    assert found["results"][0]["id"] == patched.json["id"] != created["id"]
    assert found["results"][0]["scores"]["vector"] > 0.5


def test_patch_with_nothing_to_change_is_422(api: Api) -> None:
    created = api.post("/v1/memories", {"content": "x marks the spot"}).json

    response = api.patch(f"/v1/memories/{created['id']}", {})

    assert_invalid(response, "body")
    assert "nothing to change" in response.json["error"]["message"]


def test_patch_and_delete_of_another_tenants_memory_are_404_and_change_nothing(
    api: Api, other_api: Api
) -> None:
    mine = api.post("/v1/memories", {"content": "only mine"}).json

    patched = other_api.patch(f"/v1/memories/{mine['id']}", {"content": "overwritten"})
    deleted = other_api.delete(f"/v1/memories/{mine['id']}")

    assert patched.status == deleted.status == 404
    assert api.get(f"/v1/memories/{mine['id']}").json["content"] == "only mine"


def test_malformed_ids_are_plain_404s(api: Api) -> None:
    for path in ("/v1/memories/not-a-uuid", "/v1/memories/%00", "/v1/memories/" + "9" * 300):
        response = api.get(path)
        assert response.status == 404, path
        assert response.json["error"]["code"] == "not_found"


def test_expired_memories_disappear_from_reads_and_search(api: Api) -> None:
    created = api.post(
        "/v1/memories",
        {
            "content": "the temporary door code is 4242",
            "valid_from": "1999-01-01T00:00:00Z",
            "expires_at": "2000-01-01T00:00:00Z",
        },
    ).json

    assert api.get(f"/v1/memories/{created['id']}").status == 404
    found = api.post("/v1/search", {"query": "temporary door code"}).json
    assert created["id"] not in {r["id"] for r in found["results"]}


def test_a_memory_that_would_expire_before_it_begins_is_refused(api: Api) -> None:
    before_it_begins = {"valid_from": "2025-06-01T00:00:00Z", "expires_at": "2025-01-01T00:00:00Z"}

    refused = api.post("/v1/memories", {"content": "the door code is 4242", **before_it_begins})
    already_gone = api.post(
        "/v1/memories", {"content": "the door code is 4242", "expires_at": "2000-01-01T00:00:00Z"}
    )

    assert refused.status == 422 and refused.json["error"]["field"] == "expires_at"
    assert already_gone.status == 422 and "before it begins" in already_gone.json["error"]["message"]
    assert api.post("/v1/memories/list", {}).json["memories"] == []


def test_a_memory_that_expired_after_it_began_is_history_as_of_finds(api: Api) -> None:
    body = {
        "content": "the door code was 1234",
        "valid_from": "2019-01-01T00:00:00Z",
        "expires_at": "2020-01-01T00:00:00Z",
    }

    created = api.post("/v1/memories", body)
    found = api.post("/v1/search", {"query": "door code", "as_of": "2019-06-01T00:00:00Z"}).json["results"]

    assert created.status == 201 and [r["id"] for r in found] == [created.json["id"]]


def test_list_pages_through_everything_with_a_cursor(api: Api) -> None:
    ids = {
        api.post("/v1/memories", {"content": f"note number {i}", "container": "notes"}).json["id"]
        for i in range(5)
    }

    seen: list[str] = []
    cursor = None
    while True:
        page = api.post("/v1/memories/list", {"container": "notes", "limit": 2, "cursor": cursor}).json
        seen.extend(m["id"] for m in page["memories"])
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert len(seen) == 5 and set(seen) == ids


def test_list_applies_the_search_filters(api: Api) -> None:
    api.post("/v1/memories", {"content": "tagged", "tags": ["keep"], "agent_id": "a1"})
    api.post("/v1/memories", {"content": "untagged", "agent_id": "a1"})

    page = api.post("/v1/memories/list", {"filters": {"tags": ["keep"], "agent_id": "a1"}}).json

    assert [m["content"] for m in page["memories"]] == ["tagged"]


def test_a_forged_cursor_is_422(api: Api) -> None:
    response = api.post("/v1/memories/list", {"cursor": "not-a-cursor"})

    assert_invalid(response, "cursor")


def test_stats_count_containers_types_and_embedding_coverage(api: Api) -> None:
    api.post("/v1/memories", {"content": "a", "container": "x"})
    api.post("/v1/memories", {"content": "b", "container": "x", "memory_type": "task"})
    api.post("/v1/memories", {"content": "c", "container": "y.z", "memory_type": "task"})

    stats = api.get("/v1/stats").json

    assert stats["total"] == 3
    assert {c["container"]: c["count"] for c in stats["containers"]} == {"x": 2, "y.z": 1}
    assert {t["memory_type"]: t["count"] for t in stats["memory_types"]} == {"fact": 1, "task": 2}
    assert stats["embeddings"]["coverage"] == 1.0
    assert stats["embeddings"]["models"] == {"sentence-transformers/all-MiniLM-L6-v2": 3}


def test_health_checks_the_database(anonymous_api: Api) -> None:
    response = anonymous_api.get("/health")

    assert response.status == 200
    assert response.json["status"] == "ok"


def test_openapi_document_lists_every_route(anonymous_api: Api) -> None:
    from engram.api.routes import ROUTES

    document = anonymous_api.get("/openapi.json").json

    for route in ROUTES:
        assert route.method.lower() in document["paths"][route.path], route
