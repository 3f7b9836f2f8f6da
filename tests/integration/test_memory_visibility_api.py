"""Memories carry user_id and visibility: a private memory is seen only by requests made for its
user, on every read path; another tenant sees nothing."""

from __future__ import annotations

from tests.conftest import Api, assert_invalid


def _private(api: Api, user: str, content: str) -> str:
    response = api.post("/v1/memories", {"content": content, "user_id": user, "visibility": "private"})
    assert response.status == 201
    assert response.json["user_id"] == user and response.json["visibility"] == "private"
    return str(response.json["id"])


def test_a_private_memory_is_read_only_for_its_user(api: Api) -> None:
    memory_id = _private(api, "alice", "Alice's locker code is 4471")

    assert api.get(f"/v1/memories/{memory_id}?user_id=alice").status == 200
    assert api.get(f"/v1/memories/{memory_id}?user_id=bob").status == 404
    assert api.get(f"/v1/memories/{memory_id}").status == 404


def test_list_and_search_show_private_rows_only_to_their_user(api: Api) -> None:
    private_id = _private(api, "alice", "Alice's locker code is 4471")
    shared = api.post("/v1/memories", {"content": "The office locker room is on floor 2"}).json

    def listed(user: str | None) -> set[str]:
        body = {"user_id": user} if user else {}
        return {m["id"] for m in api.post("/v1/memories/list", body).json["memories"]}

    def searched(user: str | None, mode: str) -> set[str]:
        body = {"query": "locker code", "mode": mode, **({"user_id": user} if user else {})}
        return {r["id"] for r in api.post("/v1/search", body).json["results"]}

    assert listed("alice") == {private_id, shared["id"]}
    assert listed("bob") == listed(None) == {shared["id"]}
    for mode in ("hybrid", "vector", "text"):
        assert private_id in searched("alice", mode), mode
        assert private_id not in searched("bob", mode), mode
        assert private_id not in searched(None, mode), mode


def test_another_user_cannot_change_or_delete_a_private_memory(api: Api) -> None:
    memory_id = _private(api, "alice", "Alice is allergic to peanuts")

    assert api.patch(f"/v1/memories/{memory_id}?user_id=bob", {"tags": ["x"]}).status == 404
    assert api.delete(f"/v1/memories/{memory_id}?user_id=bob").status == 404
    assert (
        api.patch(f"/v1/memories/{memory_id}?user_id=alice", {"visibility": "tenant"}).json["visibility"]
        == "tenant"
    )
    assert api.get(f"/v1/memories/{memory_id}?user_id=bob").status == 200
    assert api.delete(f"/v1/memories/{memory_id}?user_id=alice").status == 204


def test_another_tenant_sees_nothing_even_when_naming_the_user(api: Api, other_api: Api) -> None:
    memory_id = _private(api, "alice", "Alice's passport expires in 2031")

    assert other_api.get(f"/v1/memories/{memory_id}?user_id=alice").status == 404
    assert other_api.post("/v1/memories/list", {"user_id": "alice"}).json["memories"] == []
    assert other_api.post("/v1/search", {"query": "passport", "user_id": "alice"}).json["results"] == []


def test_visibility_errors(api: Api) -> None:
    shared = api.post("/v1/memories", {"content": "no owner"}).json

    no_owner = api.post("/v1/memories", {"content": "x", "visibility": "private"})
    bad_value = api.post("/v1/memories", {"content": "x", "user_id": "a", "visibility": "secret"})
    private_without_user = api.patch(f"/v1/memories/{shared['id']}", {"visibility": "private"})
    too_long = api.get(f"/v1/memories/{shared['id']}?user_id={'u' * 300}")

    assert_invalid(no_owner, "body")
    assert "user_id" in no_owner.json["error"]["message"]
    assert bad_value.status == 422 and bad_value.json["error"]["field"] == "visibility"
    assert private_without_user.status == 422 and private_without_user.json["error"]["field"] == "visibility"
    assert too_long.status == 422 and too_long.json["error"]["field"] == "user_id"


def test_only_the_owner_can_make_a_shared_memory_private(api: Api) -> None:
    shared = api.post("/v1/memories", {"content": "Alice's team is Platform", "user_id": "alice"}).json

    by_bob = api.patch(f"/v1/memories/{shared['id']}?user_id=bob", {"visibility": "private"})
    by_nobody = api.patch(f"/v1/memories/{shared['id']}", {"visibility": "private"})
    by_alice = api.patch(f"/v1/memories/{shared['id']}?user_id=alice", {"visibility": "private"})

    assert by_bob.status == 409 and by_bob.json["error"]["field"] == "user_id"
    assert_invalid(by_nobody, "visibility")
    assert by_alice.status == 200 and by_alice.json["visibility"] == "private"
    assert api.get(f"/v1/memories/{shared['id']}?user_id=bob").status == 404
