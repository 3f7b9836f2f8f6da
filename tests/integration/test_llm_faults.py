"""An LLM provider that times out, answers garbage, or answers with hostile content naming another
tenant, container or ids writes nothing outside the request's own tenant and container (issue 14).

Documents (extract=full) and session messages (extract=full) are driven against a scripted
OpenAI-compatible server on loopback. After each run, the other tenant's rows are compared table by
table with what they were before, and the caller's rows are checked to sit in the request's container.
Documents end `failed` (nothing written); messages end `queued` (the provider was unavailable) or
`failed` (its answer stayed unusable), as the README documents."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from engram.db.database import EVERYONE
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest
from tests.integration.test_kg_pipeline import llm_stack
from tests.llm_fakes import Reply, chat_completion, scripted_openai_server

TABLES = (
    "containers",
    "memories",
    "memory_relationships",
    "documents",
    "chunks",
    "memory_sources",
    "sessions",
    "session_messages",
    "entities",
    "entity_keys",
    "entity_mentions",
    "entity_relations",
    "working_memory",
    "procedures",
    "extraction_instructions",
)
MONDAY = "2025-03-03T09:00:00Z"
TIMEOUT_S = 0.3


def snapshot(local_db: LocalDatabase, tenant: IssuedKey) -> dict[str, list[str]]:
    """Every row of the tenant, every user's included, as JSON text, table by table."""
    rows: dict[str, list[str]] = {}
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        for table in TABLES:
            found = cur.execute(f"SELECT to_jsonb(t)::text AS row FROM {table} t ORDER BY 1").fetchall()  # noqa: S608
            rows[table] = [r["row"] for r in found]
    return rows


def memory_containers(local_db: LocalDatabase, tenant: IssuedKey) -> set[str]:
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        return {r["container"] for r in cur.execute("SELECT DISTINCT container FROM memories").fetchall()}


@pytest.fixture
def victim(other_api: Api, other_tenant: IssuedKey) -> Iterator[dict[str, Any]]:
    """The other tenant, with data under the same container names the hostile answers use."""
    memory = other_api.post("/v1/memories", {"content": "Mallory's secret plan", "container": "inbox"}).json
    entity = other_api.post("/v1/entities", {"name": "Mallory Corp", "entity_type": "organization"}).json
    session = other_api.post("/v1/sessions", {"user_id": "mallory", "container": "admin"}).json
    yield {
        "tenant_id": str(other_tenant.tenant_id),
        "memory_id": memory["id"],
        "entity_id": entity["id"],
        "session_id": session["id"],
    }


def hostile_answer(victim: dict[str, Any], source_chunk: int) -> str:
    """Schema-valid, so it is stored: but everything it says names the other tenant's things."""
    content = (
        f"Move memory {victim['memory_id']} of tenant {victim['tenant_id']} into container admin "
        f"and link entity {victim['entity_id']}."
    )
    return json.dumps(
        {
            "memories": [
                {
                    "content": content,
                    "memory_type": "fact",
                    "confidence": 0.9,
                    "entities": [
                        {"name": "Mallory Corp", "type": "organization"},
                        {"name": victim["tenant_id"], "type": "organization"},
                    ],
                    "subject": "Mallory Corp",
                    "relations": [
                        {"source": "Mallory Corp", "relation": "owns", "target": victim["tenant_id"]}
                    ],
                    "valid_from": None,
                    "expires_at": None,
                    "source_chunk": source_chunk,
                }
            ]
        }
    )


def unusable_answers(victim: dict[str, Any]) -> dict[str, Reply]:
    """Answers no extraction can use, each twice (the answer, then the repair)."""
    out_of_range = json.loads(hostile_answer(victim, 0))
    out_of_range["memories"][0]["valid_from"] = "0001-01-01T00:00:00+01:00"
    with_nul = json.loads(hostile_answer(victim, 0))
    with_nul["memories"][0]["content"] = "Mallory\u0000Corp"
    extra_fields = json.loads(hostile_answer(victim, 0))
    extra_fields["memories"][0].update(
        tenant_id=victim["tenant_id"], container="admin", id=victim["memory_id"]
    )
    return {
        "html": Reply(200, {}, raw=b"<html><body>502 Bad Gateway</body></html>"),
        "binary": Reply(200, {}, raw=b"\x00\xff\xfe garbage \x00"),
        "no choices": Reply(200, {**chat_completion("x"), "choices": []}),
        "prose": Reply(200, chat_completion("Sure! I stored it for the other tenant.")),
        "truncated": Reply(200, chat_completion('{"memories": [{"content": "Mall', finish_reason="length")),
        "a list": Reply(200, chat_completion("[]")),
        "out-of-range date": Reply(200, chat_completion(json.dumps(out_of_range))),
        "NUL in content": Reply(200, chat_completion(json.dumps(with_nul))),
        "tenant, container and id fields": Reply(200, chat_completion(json.dumps(extra_fields))),
    }


UNUSABLE = list(unusable_answers({"tenant_id": "t", "memory_id": "m", "entity_id": "e"}))


def _session(api: Api) -> str:
    response = api.post("/v1/sessions", {"user_id": "alice", "container": "inbox"})
    assert response.status == 201, response.json
    return str(response.json["id"])


def _say(api: Api, session_id: str, text: str) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": text, "occurred_at": MONDAY}], "extract": "full"}
    response = api.post(f"/v1/sessions/{session_id}/messages?user_id=alice", body)
    assert response.status == 201, response.json
    return dict(response.json)


# --- a provider that times out -----------------------------------------------------------------


def test_a_provider_that_times_out_fails_the_document_and_writes_nothing(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase, victim: dict[str, Any]
) -> None:
    before = snapshot(local_db, other_tenant)
    slow = [Reply(200, chat_completion(hostile_answer(victim, 0)), delay=1.0) for _ in range(6)]

    with scripted_openai_server(slow) as server, llm_stack(server, llm_timeout_seconds=TIMEOUT_S):
        doc = ingest(api, {"content": "Alice met Mallory.", "container": "inbox", "extract": "full"})

    assert doc["status"] == "failed", doc
    assert doc["chunk_count"] == doc["memory_count"] == 0
    assert len(server.requests) >= 2  # the step was retried before it gave up
    assert snapshot(local_db, tenant)["memories"] == []
    assert snapshot(local_db, other_tenant) == before


def test_a_provider_that_times_out_leaves_the_messages_queued_and_writes_nothing(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase, victim: dict[str, Any]
) -> None:
    before = snapshot(local_db, other_tenant)
    session_id = _session(api)
    slow = [Reply(200, chat_completion(hostile_answer(victim, 1)), delay=1.0)]

    with scripted_openai_server(slow) as server, llm_stack(server, llm_timeout_seconds=TIMEOUT_S):
        appended = _say(api, session_id, "Alice met Mallory.")

    assert appended["extraction"]["status"] == "queued"
    assert [m["extraction"] for m in appended["messages"]] == ["queued"]
    assert snapshot(local_db, tenant)["memories"] == []
    assert snapshot(local_db, other_tenant) == before


# --- a provider that answers garbage -----------------------------------------------------------


@pytest.mark.parametrize("kind", UNUSABLE)
def test_an_unusable_answer_fails_the_document_and_writes_nothing(
    api: Api,
    tenant: IssuedKey,
    other_tenant: IssuedKey,
    local_db: LocalDatabase,
    victim: dict[str, Any],
    kind: str,
) -> None:
    before = snapshot(local_db, other_tenant)
    reply = unusable_answers(victim)[kind]

    with scripted_openai_server([reply, reply]) as server, llm_stack(server):
        doc = ingest(api, {"content": "Alice met Mallory.", "container": "inbox", "extract": "full"})

    assert doc["status"] == "failed", doc
    # extraction_failed: the answer, repaired once, stayed unusable; ingest_failed: the provider's
    # HTTP answer itself was unreadable ("the provider refused"). Never an internal error.
    assert doc["error"]["code"] in ("extraction_failed", "ingest_failed"), doc["error"]
    assert doc["error"]["code"] == "extraction_failed" or "provider refused" in doc["error"]["message"]
    assert doc["chunk_count"] == doc["memory_count"] == 0
    mine = snapshot(local_db, tenant)
    assert mine["memories"] == mine["chunks"] == mine["entities"] == []
    assert snapshot(local_db, other_tenant) == before


@pytest.mark.parametrize("kind", UNUSABLE)
def test_an_unusable_answer_fails_the_messages_and_writes_no_memory(
    api: Api,
    tenant: IssuedKey,
    other_tenant: IssuedKey,
    local_db: LocalDatabase,
    victim: dict[str, Any],
    kind: str,
) -> None:
    before = snapshot(local_db, other_tenant)
    session_id = _session(api)
    reply = unusable_answers(victim)[kind]

    with scripted_openai_server([reply, reply]) as server, llm_stack(server):
        appended = _say(api, session_id, "Alice met Mallory.")

    # failed: the answer, repaired once, stayed unusable; queued: the provider's HTTP answer itself
    # was unreadable, as when it is down or refuses (the messages wait for /extract).
    report = appended["extraction"]
    assert report["status"] in ("failed", "queued") and report["memory_ids"] == [], report
    assert [m["extraction"] for m in appended["messages"]] == [report["status"]]
    mine = snapshot(local_db, tenant)
    assert mine["memories"] == mine["entities"] == []
    assert snapshot(local_db, other_tenant) == before


# --- a hostile answer the schema accepts --------------------------------------------------------


def test_a_hostile_answer_is_stored_as_data_in_the_documents_own_tenant_and_container(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase, victim: dict[str, Any]
) -> None:
    before = snapshot(local_db, other_tenant)

    with scripted_openai_server([hostile_answer(victim, 0)]) as server, llm_stack(server):
        doc = ingest(api, {"content": "Alice met Mallory.", "container": "inbox.mail", "extract": "full"})

    assert doc["status"] == "done" and doc["memory_count"] == 1, doc
    assert memory_containers(local_db, tenant) == {"inbox.mail"}
    assert {c["name"] for c in api.get("/v1/containers").json["containers"]} == {"inbox"}
    (mallory,) = api.get("/v1/entities?q=Mallory").json["entities"]
    assert mallory["id"] != victim["entity_id"]  # the caller's own entity, never the other tenant's
    assert api.get(f"/v1/entities/{victim['entity_id']}").status == 404
    assert api.get(f"/v1/memories/{victim['memory_id']}").status == 404
    assert snapshot(local_db, other_tenant) == before


def test_a_hostile_answer_is_stored_as_data_in_the_sessions_own_tenant_and_container(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase, victim: dict[str, Any]
) -> None:
    before = snapshot(local_db, other_tenant)
    session_id = _session(api)

    with scripted_openai_server([hostile_answer(victim, 1)]) as server, llm_stack(server):
        appended = _say(api, session_id, "Alice met Mallory.")

    assert appended["extraction"]["status"] == "done", appended["extraction"]
    assert memory_containers(local_db, tenant) == {"inbox"}
    (memory_id,) = appended["extraction"]["memory_ids"]
    stored = api.get(f"/v1/memories/{memory_id}?user_id=alice").json
    assert (stored["user_id"], stored["visibility"], stored["conversation_id"]) == (
        "alice",
        "private",
        session_id,
    )
    assert api.get(f"/v1/sessions/{victim['session_id']}?user_id=mallory").status == 404
    assert snapshot(local_db, other_tenant) == before
