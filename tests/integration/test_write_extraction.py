"""Contradictions resolved on direct writes: POST /v1/memories, /batch and /upsert (and PATCH of
content) take `extract: none|light|full`; the memory's entities and relations are found and graph-link
runs, as for documents and messages, in the write's transaction."""

from __future__ import annotations

import json
from typing import Any

from engram.db.database import EVERYONE
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid
from tests.integration.test_kg_pipeline import llm_stack
from tests.llm_fakes import scripted_openai_server


def _where_alice_lives(api: Api, user: str = "alice", **body: Any) -> list[str]:
    response = api.post(
        "/v1/search",
        {"query": "where does Alice live", "container": "people", "user_id": user, "limit": 5, **body},
    )
    assert response.status == 200, response.json
    return [r["content"] for r in response.json["results"]]


def _write(api: Api, path: str = "/v1/memories", status: int = 201, **body: Any) -> dict[str, Any]:
    response = api.post(path, {"container": "people", **body})
    assert response.status == status, response.json
    return dict(response.json)


def test_upsert_of_a_changed_fact_retires_the_old_one(api: Api) -> None:
    paris = _write(api, content="Alice lives in Paris", user_id="alice", valid_from="2026-01-05T09:00:00Z")

    berlin = _write(api, "/v1/memories/upsert", 200, content="Alice moved to Berlin", user_id="alice")
    old = api.get(f"/v1/memories/{paris['id']}").json
    new = api.get(f"/v1/memories/{berlin['id']}").json
    history = api.get(f"/v1/memories/{berlin['id']}/history").json["versions"]

    assert (berlin["status"], berlin["matched_id"], berlin["superseded"]) == (
        "updated",
        paris["id"],
        [paris["id"]],
    )
    assert old["is_latest"] is False and old["valid_to"] == new["valid_from"]
    assert [v["content"] for v in history] == ["Alice lives in Paris", "Alice moved to Berlin"]
    assert _where_alice_lives(api) == ["Alice moved to Berlin"]
    assert _where_alice_lives(api, as_of="2026-01-06T00:00:00Z") == ["Alice lives in Paris"]


def test_post_retires_the_contradicted_memory_and_says_so(api: Api) -> None:
    paris = _write(api, content="Alice lives in Paris", user_id="alice")

    berlin = _write(api, content="Alice lives in Berlin", user_id="alice", extract="light")
    relations = api.get("/v1/entities?q=Alice").json["entities"]

    assert berlin["superseded"] == [paris["id"]]
    assert api.get(f"/v1/memories/{paris['id']}").json["is_latest"] is False
    assert [e["name"] for e in relations] == ["Alice"]


def test_a_changed_fact_about_a_name_written_with_an_accented_capital_retires_the_old_one(api: Api) -> None:
    # Given a fact about someone whose name starts with a letter outside ASCII
    lyon = _write(api, content="Élodie lives in Lyon.", user_id="elodie")

    # When the fact changes
    berlin = _write(api, "/v1/memories/upsert", 200, content="Élodie moved to Berlin.", user_id="elodie")

    # Then the old one is retired, as it is for "Elodie"
    assert (berlin["status"], berlin["superseded"]) == ("updated", [lyon["id"]])
    assert api.get(f"/v1/memories/{lyon['id']}").json["is_latest"] is False


def test_a_write_never_retires_another_owner_s_memory(api: Api) -> None:
    bobs = _write(api, content="Alice lives in Madrid", user_id="bob")
    shared = _write(api, content="Alice lives in Rome")

    alices = _write(api, content="Alice lives in Berlin", user_id="alice")

    assert alices["superseded"] == []
    assert api.get(f"/v1/memories/{bobs['id']}").json["is_latest"] is True
    assert api.get(f"/v1/memories/{shared['id']}").json["is_latest"] is True


def test_extract_none_keeps_both_current(api: Api, tenant: IssuedKey, local_db: LocalDatabase) -> None:
    paris = _write(api, content="Alice lives in Paris", user_id="alice", extract="none")
    berlin = _write(
        api, "/v1/memories/upsert", content="Alice lives in Berlin", user_id="alice", extract="none"
    )

    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        mentions = cur.execute("SELECT count(*) AS n FROM entity_mentions").fetchone()

    assert berlin["status"] == "created" and berlin["superseded"] == []
    assert api.get(f"/v1/memories/{paris['id']}").json["is_latest"] is True
    assert mentions is not None and mentions["n"] == 0


def test_a_batch_resolves_its_own_contradictions_in_order(api: Api) -> None:
    response = api.post(
        "/v1/memories/batch",
        {
            "memories": [
                {"content": "Alice lives in Paris", "user_id": "alice", "container": "people"},
                {"content": "Alice moved to Berlin", "user_id": "alice", "container": "people"},
            ]
        },
    )
    assert response.status == 201, response.json
    stored = response.json["memories"]

    paris, berlin = stored
    assert berlin["superseded"] == [paris["id"]]
    assert _where_alice_lives(api) == ["Alice moved to Berlin"]


def test_patch_of_content_is_related_too(api: Api) -> None:
    paris = _write(api, content="Alice lives in Paris", user_id="alice")
    lyon = _write(api, content="Alice lives in Lyon", user_id="alice", extract="none")

    patched = api.patch(f"/v1/memories/{lyon['id']}", {"content": "Alice lives in Berlin"})

    assert patched.status == 200
    assert api.get(f"/v1/memories/{paris['id']}").json["is_latest"] is False
    assert _where_alice_lives(api) == ["Alice lives in Berlin"]


def test_extract_full_without_an_llm_is_refused_before_anything_is_stored(api: Api) -> None:
    single = api.post("/v1/memories", {"content": "Alice lives in Paris", "extract": "full"})
    batch = api.post(
        "/v1/memories/batch",
        {
            "memories": [
                {"content": "Alice lives in Paris"},
                {"content": "Bob lives in Oslo", "extract": "full"},
            ]
        },
    )

    assert_invalid(single, "extract")
    assert_invalid(batch, "memories[1].extract")
    assert api.get("/v1/stats").json["total"] == 0


def test_extract_full_asks_the_llm_what_the_memory_names(api: Api) -> None:
    def answer(city: str) -> str:
        memory = {
            "content": f"Alice Smith lives in {city}.",
            "memory_type": "fact",
            "confidence": 0.9,
            "entities": [
                {"name": "Alice Smith", "type": "person", "aliases": ["Alice"]},
                {"name": city, "type": "place"},
            ],
            "subject": "Alice Smith",
            "relations": [{"source": "Alice Smith", "relation": "lives_in", "target": city}],
            "valid_from": None,
            "expires_at": None,
            "source_chunk": None,
        }
        return json.dumps({"memories": [memory]})

    api.put("/v1/extraction-instructions", {"container": "people", "instructions": "Track homes."})
    with scripted_openai_server([answer("Paris"), answer("Berlin")]) as server, llm_stack(server):
        paris = _write(api, content="she lives in paris", user_id="alice")
        berlin = _write(api, "/v1/memories/upsert", 200, content="she moved to berlin", user_id="alice")

    system = server.requests[0].body["messages"][0]["content"]
    assert "- Track homes." in system
    assert berlin["status"] == "updated" and berlin["superseded"] == [paris["id"]]
    # Stored as sent; the LLM only said what it names.
    assert api.get(f"/v1/memories/{berlin['id']}").json["content"] == "she moved to berlin"
    (alice,) = api.get("/v1/entities?q=Alice").json["entities"]
    assert (alice["name"], alice["entity_type"]) == ("Alice Smith", "person")


def test_a_refused_patch_of_content_asks_the_llm_nothing(api: Api) -> None:
    # Given memories a PATCH of content must refuse to change (written without extraction), and one it may
    superseded = _write(api, content="Alice lives in Paris", extract="none")
    api.patch(f"/v1/memories/{superseded['id']}", {"content": "Alice lives in Rome", "extract": "none"})
    bobs = _write(api, content="Bob lives in Oslo", user_id="bob", extract="none")
    later = _write(api, content="Dan moves to Oslo", valid_from="2999-01-01T00:00:00Z", extract="none")
    shared = _write(api, content="Eve lives in Nice", extract="none")
    changeable = _write(api, content="Fay lives in Lima", user_id="fay", extract="none")
    found = {
        "content": "Fay lives in Quito.",
        "memory_type": "fact",
        "confidence": 0.9,
        "entities": [{"name": "Fay", "type": "person"}, {"name": "Quito", "type": "place"}],
        "subject": "Fay",
        "relations": [{"source": "Fay", "relation": "lives_in", "target": "Quito"}],
        "valid_from": None,
        "expires_at": None,
        "source_chunk": None,
    }

    # When each gets new content with extract full, against an LLM that records every call
    with scripted_openai_server([json.dumps({"memories": [found]})]) as server, llm_stack(server):
        refused = [
            api.patch(
                f"/v1/memories/{superseded['id']}", {"content": "Alice lives in Oslo", "extract": "full"}
            ),
            api.patch(
                f"/v1/memories/{bobs['id']}?user_id=alice", {"content": "Bob is in Bergen", "extract": "full"}
            ),
            api.patch(f"/v1/memories/{later['id']}", {"content": "Dan moves to Bergen", "extract": "full"}),
            api.patch(
                f"/v1/memories/{shared['id']}",
                {"content": "Eve lives in Rome", "visibility": "private", "extract": "full"},
            ),
        ]
        calls_before_accepted = len(server.requests)
        accepted = api.patch(
            f"/v1/memories/{changeable['id']}", {"content": "Fay lives in Quito", "extract": "full"}
        )

    # Then the refusals (not current, another user's, valid from later, private without a user) made no
    # LLM call, and the accepted PATCH still extracts
    assert [(r.status, r.json["error"].get("field")) for r in refused] == [
        (409, "content"),
        (409, "user_id"),
        (409, "content"),
        (422, "visibility"),
    ]
    assert calls_before_accepted == 0
    assert accepted.status == 200, accepted.json
    assert len(server.requests) == 1
    (fay,) = api.get("/v1/entities?q=Fay").json["entities"]
    assert fay["name"] == "Fay"


def test_a_patch_that_sends_the_content_unchanged_asks_the_llm_nothing(api: Api) -> None:
    # Given a memory, and a PATCH that sends its own content back with new tags
    memory = _write(api, content="Gus lives in Porto", extract="none")

    # When it asks for full extraction, against an LLM that records every call
    with scripted_openai_server([json.dumps({"memories": []})]) as server, llm_stack(server):
        patched = api.patch(
            f"/v1/memories/{memory['id']}",
            {"content": "Gus lives in Porto", "tags": ["x"], "extract": "full"},
        )

    # Then the tags change in place, no version is made, and there was nothing to extract
    assert patched.status == 200, patched.json
    assert (patched.json["id"], patched.json["tags"], patched.json["superseded"]) == (memory["id"], ["x"], [])
    assert server.requests == []
