"""The memories endpoints, their errors, and tenant isolation over the API."""

from __future__ import annotations

import uuid

from tests.conftest import Api


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
