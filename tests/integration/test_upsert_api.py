"""POST /v1/memories/upsert: created, unchanged, updated (a new version), errors, and real
concurrency against the embedded PostgreSQL."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from uuid import UUID

from engram import deps
from engram.memories.models import MemoryUpsert
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid


def test_first_upsert_creates_then_the_same_text_is_unchanged(api: Api) -> None:
    first = api.post("/v1/memories/upsert", {"content": "The deploy window is Tuesday 14:00 UTC"})
    again = api.post("/v1/memories/upsert", {"content": "The deploy window is Tuesday 14:00 UTC"})

    assert first.status == 201
    assert first.json["status"] == "created"
    assert first.json["matched_id"] is None
    assert again.status == 200
    assert again.json == {
        "status": "unchanged",
        "id": first.json["id"],
        "matched_id": first.json["id"],
        "similarity": 1.0,
        "superseded": [],
    }


def test_a_near_duplicate_becomes_a_new_version_that_supersedes_the_old(api: Api) -> None:
    old = api.post("/v1/memories/upsert", {"content": "Alice's favourite colour is green."}).json

    new = api.post(
        "/v1/memories/upsert", {"content": "Alice's favourite colour is green!", "dedupe_threshold": 0.9}
    ).json

    assert new["status"] == "updated"
    assert new["matched_id"] == old["id"] and new["id"] != old["id"]
    assert 0.9 <= new["similarity"] < 1.0
    assert api.get(f"/v1/memories/{new['id']}").json["is_latest"] is True
    retired = api.get(f"/v1/memories/{old['id']}").json
    assert retired["is_latest"] is False and retired["valid_to"] is not None
    listed = api.post("/v1/memories/list", {}).json["memories"]
    assert [m["id"] for m in listed] == [new["id"]]


def test_a_different_fact_below_the_threshold_is_created(api: Api) -> None:
    api.post("/v1/memories/upsert", {"content": "Bob works at Initech as a database administrator"})

    other = api.post("/v1/memories/upsert", {"content": "The office coffee machine is broken"})

    assert other.json["status"] == "created"
    assert len(api.post("/v1/memories/list", {}).json["memories"]) == 2


def test_upsert_dedupes_only_within_the_container_and_owner(api: Api) -> None:
    text = "Carol prefers tea over coffee"
    a = api.post("/v1/memories/upsert", {"content": text, "container": "crm"}).json
    b = api.post("/v1/memories/upsert", {"content": text, "container": "support"}).json
    c = api.post(
        "/v1/memories/upsert",
        {"content": text, "container": "crm", "user_id": "carol", "visibility": "private"},
    ).json

    assert [a["status"], b["status"], c["status"]] == ["created", "created", "created"]
    assert len({a["id"], b["id"], c["id"]}) == 3


def test_upsert_errors(api: Api) -> None:
    assert_invalid(
        api.post("/v1/memories/upsert", {"content": "x", "dedupe_threshold": 0}), "dedupe_threshold"
    )
    assert (
        api.post("/v1/memories/upsert", {"content": "x", "dedupe_threshold": 1.5}).json["error"]["field"]
        == "dedupe_threshold"
    )
    assert_invalid(api.post("/v1/memories/upsert", {"content": "   "}), "content")
    assert_invalid(api.post("/v1/memories/upsert", {"content": "x", "visibility": "private"}), "body")
    assert_invalid(api.post("/v1/memories/upsert", {"content": "x", "colour": "red"}), "colour")
    assert api.post("/v1/memories/upsert", raw=b"{not json").status == 400


def test_twenty_concurrent_identical_upserts_leave_exactly_one_memory(api: Api, tenant: IssuedKey) -> None:
    # Given: twenty writers released at the same moment, each with its own connection
    service = deps.memory_service()
    request = MemoryUpsert(content="The on-call phone number is +1 555 0100", container="ops")
    barrier = threading.Barrier(20)

    def upsert(_: int) -> tuple[str, UUID]:
        barrier.wait()
        result = service.upsert(tenant.tenant_id, request)
        return result.status, result.id

    # When
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(upsert, range(20)))

    # Then
    statuses = [status for status, _ in results]
    assert statuses.count("created") == 1 and statuses.count("unchanged") == 19
    assert len({memory_id for _, memory_id in results}) == 1
    stored = api.post("/v1/memories/list", {"container": "ops"}).json["memories"]
    assert [m["id"] for m in stored] == [str(results[0][1])]


def test_concurrent_upserts_over_http_also_leave_one(api: Api) -> None:
    body = {"content": "Standup is at 9:30 every weekday", "container": "team"}
    with ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(lambda _: api.post("/v1/memories/upsert", body).json["status"], range(10)))

    assert statuses.count("created") == 1
    assert len(api.post("/v1/memories/list", {"container": "team"}).json["memories"]) == 1
