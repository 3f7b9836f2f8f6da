"""Explicit supersession: history, time travel with as_of, include_history, and revert."""

from __future__ import annotations

import uuid

from tests.conftest import Api, assert_invalid


def _store(api: Api, **body: object) -> dict:
    response = api.post("/v1/memories", body)
    assert response.status == 201, response.json
    return dict(response.json)


def _search(api: Api, **body: object) -> list[dict]:
    response = api.post("/v1/search", {"query": "where does Alice live", "container": "people", **body})
    assert response.status == 200, response.json
    return list(response.json["results"])


def test_a_superseded_memory_becomes_history_with_its_end_date(api: Api) -> None:
    paris = _store(api, content="Alice lives in Paris", container="people", valid_from="2026-01-05T09:00:00Z")
    berlin = _store(
        api,
        content="Alice moved to Berlin",
        container="people",
        valid_from="2026-01-09T09:00:00Z",
        supersedes=paris["id"],
    )

    old = api.get(f"/v1/memories/{paris['id']}").json
    current = [r["content"] for r in _search(api)]
    with_history = {r["content"]: r for r in _search(api, include_history=True)}

    assert old["is_latest"] is False
    assert old["valid_to"] == berlin["valid_from"]
    assert current == ["Alice moved to Berlin"]
    assert with_history["Alice lives in Paris"]["valid_to"] == berlin["valid_from"]
    assert with_history["Alice lives in Paris"]["is_latest"] is False
    assert with_history["Alice moved to Berlin"]["valid_to"] is None


def test_as_of_returns_what_was_true_then(api: Api) -> None:
    paris = _store(api, content="Alice lives in Paris", container="people", valid_from="2026-01-05T09:00:00Z")
    _store(
        api,
        content="Alice moved to Berlin",
        container="people",
        valid_from="2026-01-09T09:00:00Z",
        supersedes=paris["id"],
    )

    for mode in ("hybrid", "vector", "text"):
        tuesday = [r["content"] for r in _search(api, as_of="2026-01-06T12:00:00Z", mode=mode)]
        saturday = [r["content"] for r in _search(api, as_of="2026-01-10T12:00:00Z", mode=mode)]
        before = _search(api, as_of="2025-12-31T00:00:00Z", mode=mode)
        assert tuesday == ["Alice lives in Paris"], mode
        assert saturday == ["Alice moved to Berlin"], mode
        assert before == [], mode


def test_history_lists_the_chain_oldest_first_from_any_version(api: Api) -> None:
    v1 = _store(api, content="Alice lives in Paris", container="people", valid_from="2026-01-01T00:00:00Z")
    v2 = _store(
        api,
        content="Alice lives in Berlin",
        container="people",
        valid_from="2026-02-01T00:00:00Z",
        supersedes=v1["id"],
    )
    v3 = _store(
        api,
        content="Alice lives in Rome",
        container="people",
        valid_from="2026-03-01T00:00:00Z",
        supersedes=v2["id"],
    )

    for start in (v1, v2, v3):
        history = api.get(f"/v1/memories/{start['id']}/history").json
        assert [v["id"] for v in history["versions"]] == [v1["id"], v2["id"], v3["id"]]
    assert [v["is_latest"] for v in history["versions"]] == [False, False, True]


def test_revert_makes_the_old_version_current_and_marks_the_replacement(api: Api) -> None:
    paris = _store(api, content="Alice lives in Paris", container="people")
    wrong = _store(api, content="Alice moved to Berlin", container="people", supersedes=paris["id"])

    reverted = api.post(f"/v1/memories/{paris['id']}/revert")

    assert reverted.status == 200
    assert reverted.json["is_latest"] is True and reverted.json["valid_to"] is None
    replacement = api.get(f"/v1/memories/{wrong['id']}").json
    assert replacement["is_latest"] is False and replacement["reverted_at"] is not None
    assert [r["content"] for r in _search(api)] == ["Alice lives in Paris"]
    assert "Alice moved to Berlin" not in [r["content"] for r in _search(api, include_history=True)]


def test_revert_and_supersede_refuse_what_makes_no_sense(api: Api, other_api: Api) -> None:
    v1 = _store(api, content="v1", container="people")
    v2 = _store(api, content="v2", container="people", supersedes=v1["id"])
    _store(api, content="v3", container="people", supersedes=v2["id"])
    theirs = _store(other_api, content="not yours")

    current_revert = api.post(f"/v1/memories/{_store(api, content='alone')['id']}/revert")
    stacked_revert = api.post(f"/v1/memories/{v1['id']}/revert")
    double_supersede = api.post("/v1/memories", {"content": "again", "supersedes": v1["id"]})
    foreign = api.post("/v1/memories", {"content": "x", "supersedes": theirs["id"]})
    unknown = api.post("/v1/memories", {"content": "x", "supersedes": str(uuid.uuid4())})

    assert current_revert.status == 409
    assert (
        stacked_revert.status == 409
        and "revert the newer version first" in stacked_revert.json["error"]["message"]
    )
    assert double_supersede.status == 409
    assert_invalid(unknown, "supersedes")
    assert foreign.json["error"] == {
        "code": "validation_error",
        "message": f"supersedes: memory {theirs['id']} not found",
        "field": "supersedes",
    }
    assert unknown.json["error"]["message"].endswith("not found")
    assert other_api.get(f"/v1/memories/{theirs['id']}").json["is_latest"] is True
    assert api.get(f"/v1/memories/{uuid.uuid4()}/history").status == 404
    assert other_api.get(f"/v1/memories/{v1['id']}/history").status == 404


def test_as_of_with_include_history_is_a_clear_422(api: Api) -> None:
    response = api.post(
        "/v1/search", {"query": "x", "as_of": "2026-01-01T00:00:00Z", "include_history": True}
    )

    assert_invalid(response, "body")
    assert "as_of" in response.json["error"]["message"]


def test_a_private_write_cannot_supersede_a_shared_memory(api: Api) -> None:
    # Given a shared fact of the container
    shared = _store(api, content="Office hours are 9 to 5", container="r2")

    # When one user supersedes it with a private memory of theirs
    response = api.post(
        "/v1/memories",
        {
            "content": "Office hours are 10 to 6",
            "container": "r2",
            "user_id": "mallory",
            "visibility": "private",
            "supersedes": shared["id"],
        },
    )

    # Then it is refused, naming why, and nothing is stored
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "supersedes"
    assert "only a memory of the same owner and visibility" in response.json["error"]["message"]
    assert api.get(f"/v1/memories/{shared['id']}").json["is_latest"] is True
    mine = api.post("/v1/memories/list", {"container": "r2", "user_id": "mallory"}).json["memories"]
    assert [m["content"] for m in mine] == ["Office hours are 9 to 5"]


def test_a_user_cannot_supersede_another_users_memory(api: Api) -> None:
    # Given alice's memory, seen by the whole tenant
    alices = _store(api, content="Alice's desk is by the window", container="r2", user_id="alice")

    # When bob's write supersedes it
    response = api.post(
        "/v1/memories",
        {
            "content": "Alice's desk is by the door",
            "container": "r2",
            "user_id": "bob",
            "supersedes": alices["id"],
        },
    )

    # Then it is refused and alice's memory stays current
    assert response.status == 409, response.json
    assert response.json["error"]["field"] == "supersedes"
    assert api.get(f"/v1/memories/{alices['id']}").json["is_latest"] is True


def test_a_replacement_cannot_start_before_the_memory_it_replaces(api: Api) -> None:
    # Given a memory valid from 1 June 2025
    old = _store(api, content="Olga works in Riga", container="r5", valid_from="2025-06-01T00:00:00Z")

    # When a memory valid from 1 January 2025 supersedes it
    response = api.post(
        "/v1/memories",
        {
            "content": "Olga works in Tallinn",
            "container": "r5",
            "valid_from": "2025-01-01T00:00:00Z",
            "supersedes": old["id"],
        },
    )

    # Then it is a 422 on valid_from naming both dates, and nothing is stored
    assert_invalid(response, "valid_from")
    message = response.json["error"]["message"]
    assert "2025-01-01T00:00:00Z" in message and "2025-06-01T00:00:00Z" in message
    kept = api.get(f"/v1/memories/{old['id']}").json
    assert kept["is_latest"] is True and kept["valid_to"] is None
    listed = api.post("/v1/memories/list", {"container": "r5"}).json["memories"]
    assert [m["content"] for m in listed] == ["Olga works in Riga"]
