"""`filters.user_id` reads one owner's memories: search (every mode, and the candidate functions'
paths), list, profile and stats. `user_id` on the request keeps its meaning: who the request is made
for, who sees their private memories."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api


@pytest.fixture
def two_users(api: Api) -> dict[str, str]:
    """Alice and Bob each with a shared and a private memory, and one memory of nobody in particular."""
    made = {}
    for name, body in {
        "alice": {"content": "Alice is vegetarian", "user_id": "alice"},
        "alice_private": {
            "content": "Alice eats no meat at all",
            "user_id": "alice",
            "visibility": "private",
        },
        "bob": {"content": "Bob eats steak every Friday", "user_id": "bob"},
        "bob_private": {"content": "Bob is allergic to nuts", "user_id": "bob", "visibility": "private"},
        "shared": {"content": "The canteen serves lunch at noon"},
    }.items():
        response = api.post("/v1/memories", {**body, "tags": ["food"]})
        assert response.status == 201, response.json
        made[name] = response.json["id"]
    return made


def _search(api: Api, **body: Any) -> list[str]:
    response = api.post("/v1/search", {"query": "what does the user eat?", "limit": 20, **body})
    assert response.status == 200, response.json
    return [r["id"] for r in response.json["results"]]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_search_for_bob_returns_none_of_alice_s_memories(
    api: Api, two_users: dict[str, str], mode: str
) -> None:
    as_bob = _search(api, mode=mode, query="eat", user_id="bob", filters={"user_id": "bob"})
    tagged = _search(api, mode=mode, query="eat", user_id="bob", filters={"user_id": "bob", "tags": ["food"]})

    assert set(as_bob) <= {two_users["bob"], two_users["bob_private"]} and two_users["bob"] in as_bob
    assert set(tagged) == set(as_bob)


def test_the_owner_filter_without_the_party_reads_only_what_the_tenant_shares(
    api: Api, two_users: dict[str, str]
) -> None:
    found = _search(api, mode="vector", filters={"user_id": "alice"})
    listed = api.post("/v1/memories/list", {"filters": {"user_id": "alice"}}).json["memories"]
    as_alice = api.post("/v1/memories/list", {"user_id": "alice", "filters": {"user_id": "alice"}}).json

    assert found == [two_users["alice"]]
    assert [m["id"] for m in listed] == [two_users["alice"]]
    assert {m["id"] for m in as_alice["memories"]} == {two_users["alice"], two_users["alice_private"]}


def test_user_id_alone_keeps_its_meaning(api: Api, two_users: dict[str, str]) -> None:
    found = set(_search(api, mode="vector", user_id="bob"))

    # Made for bob: his private memory too, and everything the tenant shares, Alice's included.
    assert found == {two_users["alice"], two_users["bob"], two_users["bob_private"], two_users["shared"]}


def test_list_pages_through_one_owner(api: Api, two_users: dict[str, str]) -> None:
    first = api.post("/v1/memories/list", {"user_id": "bob", "filters": {"user_id": "bob"}, "limit": 1}).json
    second = api.post(
        "/v1/memories/list",
        {"user_id": "bob", "filters": {"user_id": "bob"}, "limit": 1, "cursor": first["next_cursor"]},
    ).json

    assert [m["id"] for m in first["memories"] + second["memories"]] == [
        two_users["bob_private"],
        two_users["bob"],
    ]
    assert second["next_cursor"] is None


def test_profile_and_stats_count_one_owner(api: Api, two_users: dict[str, str]) -> None:
    profile = api.get("/v1/profile?user_id=bob&q=what%20does%20he%20eat").json
    alice = api.get("/v1/stats?user_id=alice").json
    everyone = api.get("/v1/stats").json

    assert {f["id"] for f in profile["static_facts"]} == {two_users["bob"], two_users["bob_private"]}
    assert {m["id"] for m in profile["relevant_memories"]} <= {two_users["bob"], two_users["bob_private"]}
    assert profile["relevant_memories"]
    assert (alice["total"], everyone["total"]) == (2, 5)


def test_message_search_takes_the_owner_filter(api: Api) -> None:
    session = api.post("/v1/sessions", {"user_id": "alice", "agent_id": "chef"}).json["id"]
    api.post(f"/v1/sessions/{session}/messages", {"messages": [{"role": "user", "content": "I eat tofu."}]})

    by_owner = api.post(
        "/v1/search", {"query": "tofu", "scope": "messages", "filters": {"user_id": "alice"}}
    ).json["results"]
    for_bob = api.post(
        "/v1/search",
        {"query": "tofu", "scope": "messages", "user_id": "bob", "filters": {"user_id": "alice"}},
    ).json["results"]

    assert [r["content"] for r in by_owner] == ["I eat tofu."]
    assert for_bob == []
