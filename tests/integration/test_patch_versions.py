"""PATCH of content makes a new version exactly as `supersedes` does: the old text stays as history
(is_latest false, valid_to), an `updates` link joins them, and history, as_of and revert work. PATCH
of tags, metadata or type changes the memory in place."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api


def _store(api: Api, **body: Any) -> dict[str, Any]:
    response = api.post("/v1/memories", {"container": "people", **body})
    assert response.status == 201, response.json
    return dict(response.json)


def test_new_content_is_a_new_version_and_the_old_text_stays_in_history(api: Api) -> None:
    paris = _store(api, content="Alice lives in Paris", tags=["home"], metadata={"k": "v"})

    patched = api.patch(f"/v1/memories/{paris['id']}", {"content": "Alice lives in Rome"})
    old = api.get(f"/v1/memories/{paris['id']}").json
    history = api.get(f"/v1/memories/{patched.json['id']}/history").json
    related = api.get(f"/v1/memories/{patched.json['id']}/related").json["related"]

    assert patched.status == 200
    new = patched.json
    assert new["id"] != paris["id"] and new["is_latest"] is True and new["content"] == "Alice lives in Rome"
    assert (new["tags"], new["metadata"], new["container"]) == (["home"], {"k": "v"}, "people")
    assert old["is_latest"] is False and old["valid_to"] == new["valid_from"]
    assert old["content"] == "Alice lives in Paris"
    assert [v["content"] for v in history["versions"]] == ["Alice lives in Paris", "Alice lives in Rome"]
    assert [(r["id"], r["relationship"], r["direction"]) for r in related] == [
        (paris["id"], "updates", "outgoing")
    ]


def test_as_of_and_revert_see_the_patched_versions(api: Api) -> None:
    paris = _store(api, content="Alice lives in Paris", valid_from="2026-01-05T09:00:00Z")
    rome = api.patch(f"/v1/memories/{paris['id']}", {"content": "Alice lives in Rome"}).json

    before = api.post(
        "/v1/search",
        {"query": "where does Alice live", "container": "people", "as_of": rome["valid_from"][:19] + "Z"},
    )
    reverted = api.post(f"/v1/memories/{paris['id']}/revert")
    current = api.post("/v1/search", {"query": "where does Alice live", "container": "people"}).json

    assert [r["content"] for r in before.json["results"]] == ["Alice lives in Paris"]
    assert reverted.status == 200 and reverted.json["is_latest"] is True
    assert [r["content"] for r in current["results"]] == ["Alice lives in Paris"]
    assert api.get(f"/v1/memories/{rome['id']}").json["reverted_at"] is not None


def test_the_patch_s_other_fields_go_to_the_new_version(api: Api) -> None:
    memory = _store(
        api, content="Bob likes tea", memory_type="preference", user_id="bob", visibility="private"
    )

    new = api.patch(
        f"/v1/memories/{memory['id']}?user_id=bob",
        {"content": "Bob likes coffee", "tags": ["drinks"], "expires_at": "2999-01-01T00:00:00Z"},
    ).json

    assert (new["content"], new["tags"], new["memory_type"]) == ("Bob likes coffee", ["drinks"], "preference")
    assert (new["user_id"], new["visibility"], new["expires_at"]) == (
        "bob",
        "private",
        "2999-01-01T00:00:00Z",
    )
    assert api.get(f"/v1/memories/{memory['id']}?user_id=bob").json["tags"] == []


def test_tags_metadata_and_type_change_in_place(api: Api) -> None:
    memory = _store(api, content="Carol plays chess")

    patched = api.patch(
        f"/v1/memories/{memory['id']}", {"tags": ["games"], "metadata": {"n": 1}, "memory_type": "preference"}
    ).json
    same_text = api.patch(f"/v1/memories/{memory['id']}", {"content": "Carol plays chess"}).json
    history = api.get(f"/v1/memories/{memory['id']}/history").json["versions"]

    assert patched["id"] == same_text["id"] == memory["id"] and patched["is_latest"] is True
    assert (patched["tags"], patched["metadata"], patched["memory_type"]) == (
        ["games"],
        {"n": 1},
        "preference",
    )
    assert [v["id"] for v in history] == [memory["id"]]


def test_the_content_of_a_superseded_version_cannot_change(api: Api) -> None:
    memory = _store(api, content="Dan lives in Oslo")
    api.patch(f"/v1/memories/{memory['id']}", {"content": "Dan lives in Bergen"})

    again = api.patch(f"/v1/memories/{memory['id']}", {"content": "Dan lives in Tromso"})
    tagged = api.patch(f"/v1/memories/{memory['id']}", {"tags": ["old"]})

    assert again.status == 409 and "current version" in again.json["error"]["message"]
    assert tagged.status == 200 and tagged.json["is_latest"] is False


def test_extract_needs_content(api: Api) -> None:
    memory = _store(api, content="Eve lives in Nice")

    response = api.patch(f"/v1/memories/{memory['id']}", {"tags": ["x"], "extract": "light"})

    assert response.status == 422 and "extract" in response.json["error"]["message"]


def test_a_memory_valid_from_a_later_time_cannot_get_a_new_version_now(api: Api) -> None:
    # Given a memory valid from a time still to come
    later = _store(api, content="Dan moves to Oslo", valid_from="2999-01-01T00:00:00Z")

    # When its content is patched (a new version starts now)
    response = api.patch(f"/v1/memories/{later['id']}", {"content": "Dan moves to Bergen"})

    # Then it is refused, naming its start, and it stays current
    assert response.status == 409, response.json
    assert "2999-01-01T00:00:00Z" in response.json["error"]["message"]
    kept = api.get(f"/v1/memories/{later['id']}").json
    assert kept["is_latest"] is True and kept["content"] == "Dan moves to Oslo"


def test_a_patch_of_content_answers_the_memories_it_retired(api: Api) -> None:
    # Given where Nora lives, and what she likes
    rome = _store(api, content="Nora Quinn lives in Rome")
    pizza = _store(api, content="Nora Quinn likes pizza")

    # When the second is patched to say she moved
    response = api.patch(f"/v1/memories/{pizza['id']}", {"content": "Nora Quinn moved to Madrid"})

    # Then the answer names both memories it retired: the patched one, and the one graph-link found
    assert response.status == 200, response.json
    assert response.json["superseded"] == [pizza["id"], rome["id"]]
    assert api.get(f"/v1/memories/{rome['id']}").json["is_latest"] is False


def test_a_patch_in_place_retires_nothing(api: Api) -> None:
    # Given a memory
    memory = _store(api, content="Nora Quinn likes pasta")

    # When its tags change
    response = api.patch(f"/v1/memories/{memory['id']}", {"tags": ["food"]})

    # Then it is the same memory, and the answer says it retired nothing
    assert response.status == 200, response.json
    assert response.json["id"] == memory["id"] and response.json["superseded"] == []
