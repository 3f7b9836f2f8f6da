"""A request made for a user (?user_id=) changes only that user's memories: a PATCH, DELETE or revert of
another user's memory, or of a shared one (no user_id), is a 409 naming whose it is, and nothing
changes; as POST with `supersedes` never retires another owner's memory. A request made for no user
(the tenant's own caller) keeps its rights over every memory it sees."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api


def _store(api: Api, **body: Any) -> dict[str, Any]:
    response = api.post("/v1/memories", {"container": "parties", "extract": "none", **body})
    assert response.status == 201, response.json
    return dict(response.json)


def _unchanged(api: Api, memory: dict[str, Any]) -> None:
    again = api.get(f"/v1/memories/{memory['id']}").json
    assert again["content"] == memory["content"] and again["tags"] == memory["tags"]
    assert again["is_latest"] is True and again["valid_to"] is None
    listed = api.post("/v1/memories/list", {"container": "parties"}).json["memories"]
    assert memory["id"] in [m["id"] for m in listed]


def test_a_patch_made_for_one_user_cannot_rewrite_another_users_memory(api: Api) -> None:
    # Given frank's memory, seen by the whole tenant
    franks = _store(api, content="Frank prefers aisle seats", user_id="frank")

    # When a request made for bob gives it new content
    response = api.patch(
        f"/v1/memories/{franks['id']}?user_id=bob",
        {"content": "Frank prefers window seats", "extract": "none"},
    )

    # Then it is refused, naming whose memory it is, and no version is made
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "user_id"
    assert response.json["error"]["message"] == (
        "a request made for user 'bob' cannot change a memory of user 'frank'; "
        "make it without user_id, or for user 'frank'"
    )
    _unchanged(api, franks)
    assert len(api.get(f"/v1/memories/{franks['id']}/history").json["versions"]) == 1


def test_a_patch_made_for_one_user_cannot_change_another_users_memory_in_place(api: Api) -> None:
    # Given frank's memory, seen by the whole tenant
    franks = _store(api, content="Frank prefers aisle seats", user_id="frank", tags=["travel"])

    # When a request made for bob changes its tags
    response = api.patch(f"/v1/memories/{franks['id']}?user_id=bob", {"tags": ["bob"]})

    # Then it is refused and the tags stay
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "user_id"
    _unchanged(api, franks)


def test_a_delete_made_for_one_user_cannot_delete_another_users_memory(api: Api) -> None:
    # Given frank's memory, seen by the whole tenant
    franks = _store(api, content="Frank prefers aisle seats", user_id="frank")

    # When a request made for bob deletes it
    response = api.delete(f"/v1/memories/{franks['id']}?user_id=bob")

    # Then it is refused, naming whose it is, and the memory stays
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "user_id"
    assert "a memory of user 'frank'" in response.json["error"]["message"]
    _unchanged(api, franks)


def test_a_request_made_for_a_user_cannot_change_a_shared_memory(api: Api) -> None:
    # Given a shared memory (no user_id)
    shared = _store(api, content="The office opens at 9")

    # When a request made for bob changes its content
    response = api.patch(f"/v1/memories/{shared['id']}?user_id=bob", {"content": "The office opens at 8"})

    # Then it is refused: the request must be made without user_id
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "user_id"
    assert response.json["error"]["message"] == (
        "a request made for user 'bob' cannot change a shared memory (it has no user_id); "
        "make it without user_id"
    )
    _unchanged(api, shared)


def test_a_request_made_for_a_user_cannot_delete_a_shared_memory(api: Api) -> None:
    # Given a shared memory (no user_id)
    shared = _store(api, content="The office opens at 9")

    # When a request made for bob deletes it
    response = api.delete(f"/v1/memories/{shared['id']}?user_id=bob")

    # Then it is refused and the memory stays
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "user_id"
    _unchanged(api, shared)


def test_a_revert_made_for_one_user_cannot_undo_another_users_change(api: Api) -> None:
    # Given frank's memory, changed by a request made for frank
    franks = _store(api, content="Frank prefers aisle seats", user_id="frank")
    changed = api.patch(
        f"/v1/memories/{franks['id']}?user_id=frank", {"content": "Frank prefers window seats"}
    )
    assert changed.status == 200, changed.json

    # When a request made for bob reverts the change
    response = api.post(f"/v1/memories/{franks['id']}/revert?user_id=bob")

    # Then it is refused and frank's new version stays current
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "user_id"
    assert api.get(f"/v1/memories/{changed.json['id']}").json["is_latest"] is True
    assert api.get(f"/v1/memories/{franks['id']}").json["is_latest"] is False


def test_a_request_made_for_the_memorys_user_changes_it(api: Api) -> None:
    # Given frank's memory
    franks = _store(api, content="Frank prefers aisle seats", user_id="frank")

    # When requests made for frank change it, revert the change and delete it
    patched = api.patch(
        f"/v1/memories/{franks['id']}?user_id=frank", {"content": "Frank prefers window seats"}
    )
    reverted = api.post(f"/v1/memories/{franks['id']}/revert?user_id=frank")
    deleted = api.delete(f"/v1/memories/{franks['id']}?user_id=frank")

    # Then each is done
    assert patched.status == 200 and patched.json["user_id"] == "frank", patched.json
    assert reverted.status == 200 and reverted.json["is_latest"] is True, reverted.json
    assert deleted.status == 204


def test_a_request_made_for_no_user_changes_any_memory_it_sees(api: Api) -> None:
    # Given frank's memory
    franks = _store(api, content="Frank prefers aisle seats", user_id="frank")

    # When the tenant's caller, made for no user, changes it and then deletes the new version
    patched = api.patch(f"/v1/memories/{franks['id']}", {"content": "Frank prefers window seats"})
    deleted = api.delete(f"/v1/memories/{patched.json['id']}")

    # Then both are done: a new version owned by frank, deleted, and frank's memory current again
    assert patched.status == 200 and patched.json["user_id"] == "frank", patched.json
    assert deleted.status == 204
    assert api.get(f"/v1/memories/{franks['id']}").json["is_latest"] is True
