"""Expiry: a memory past its expires_at is gone from every read at once. Cleanup: expired rows and
superseded versions past the retention period are deleted, for every tenant, as the app role."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from engram import deps
from engram.graph.linking import link_memory, resolve_entity
from engram.local.stack import LocalDatabase
from engram.maintenance.service import cleanup
from engram.memory_extraction import ExtractedEntity
from engram.tenants.service import IssuedKey
from tests.conftest import REPO, Api


def _past() -> str:
    return (datetime.now(UTC) - timedelta(seconds=1)).isoformat()


def _expired() -> dict[str, str]:
    """A memory that began a day ago and has just expired (one that would expire before it begins is
    refused)."""
    return {"valid_from": (datetime.now(UTC) - timedelta(days=1)).isoformat(), "expires_at": _past()}


def _exists(local_db: LocalDatabase, table: str, column: str, value: Any) -> bool:
    with local_db.admin.transaction() as cur:
        row = cur.execute(f"SELECT count(*) AS n FROM {table} WHERE {column} = %s", (value,)).fetchone()  # noqa: S608
    return bool(row and row["n"])


def test_an_expired_memory_disappears_from_every_read_at_once(api: Api) -> None:
    text = "The temporary door code is 5521"
    memory = api.post("/v1/memories", {"content": text, "container": "site", "user_id": "ann"}).json
    api.post("/v1/memories", {"content": "The site opens at 8am", "container": "site", "user_id": "ann"})

    expired = api.patch(f"/v1/memories/{memory['id']}", {"expires_at": _past()})

    assert expired.status == 200
    assert api.get(f"/v1/memories/{memory['id']}").status == 404
    assert memory["id"] not in {m["id"] for m in api.post("/v1/memories/list", {}).json["memories"]}
    for mode in ("hybrid", "vector", "text"):
        found = api.post("/v1/search", {"query": "temporary door code", "mode": mode}).json["results"]
        assert memory["id"] not in {r["id"] for r in found}, mode
    profile = api.get("/v1/profile?user_id=ann&q=door%20code").json
    assert "5521" not in profile["context"]
    assert api.get("/v1/containers").json["containers"][0]["memory_count"] == 1
    assert api.get("/v1/stats").json["total"] == 1
    assert (
        api.post("/v1/memories/upsert", {"content": text, "container": "site", "user_id": "ann"}).json[
            "status"
        ]
        == "created"
    )


def test_a_memory_created_already_expired_is_never_visible(api: Api) -> None:
    memory = api.post("/v1/memories", {"content": "stale news", **_expired()}).json

    assert api.get(f"/v1/memories/{memory['id']}").status == 404
    assert api.post("/v1/search", {"query": "stale news"}).json["results"] == []


# --- every read that returns a memory's content leaves an expired memory out -----------------------


def _write(api: Api, content: str, **body: object) -> str:
    """A memory of the container `vault`, without extraction (the tests link what they need)."""
    created = api.post("/v1/memories", {"content": content, "container": "vault", "extract": "none", **body})
    assert created.status == 201, created.json
    return str(created.json["id"])


def _expire(local_db: LocalDatabase, *memory_ids: str) -> None:
    """These memories expired a second ago (cleanup has not run: their rows are still there)."""
    with local_db.admin.transaction() as cur:
        cur.execute(
            "UPDATE memories SET expires_at = now() - interval '1 s' WHERE id = ANY(%s::uuid[])",
            (list(memory_ids),),
        )


def _mention(tenant: IssuedKey, name: str, *memory_ids: str) -> None:
    """Each memory names the person `name` (as extraction would link it)."""
    for memory_id in memory_ids:
        with deps.database().tenant(tenant.tenant_id) as cur:
            link_memory(
                cur, tenant.tenant_id, UUID(memory_id), [ExtractedEntity(name=name, type="person")], [], name
            )


def test_history_leaves_out_expired_versions_and_an_expired_memory_has_none(
    api: Api, local_db: LocalDatabase
) -> None:
    # Given a chain v1 -> v2 -> v3 whose middle version has expired
    v1 = _write(api, "Ivan Petrov keeps the vault code 1100")
    v2 = _write(api, "Ivan Petrov keeps the vault code 7741", supersedes=v1)
    v3 = _write(api, "Ivan Petrov keeps the vault code 3090", supersedes=v2)
    _expire(local_db, v2)

    # When the history is read from each end and from the expired version
    from_current = api.get(f"/v1/memories/{v3}/history")
    from_oldest = api.get(f"/v1/memories/{v1}/history")
    from_expired = api.get(f"/v1/memories/{v2}/history")

    # Then the expired version is in neither chain (the walk passes through it), and is a 404 itself
    assert from_current.status == 200 and [v["id"] for v in from_current.json["versions"]] == [v1, v3]
    assert "7741" not in str(from_current.json)
    assert [v["id"] for v in from_oldest.json["versions"]] == [v1, v3]
    assert from_expired.status == 404, from_expired.json


def test_related_leaves_out_an_expired_neighbour_and_never_names_it_as_the_way(
    api: Api, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given old -> middle -> new (`updates`), the middle one expired, and an expired memory that names
    # the same person as the new one
    old = _write(api, "The vault code was 1100")
    middle = _write(api, "The vault code was 7741", supersedes=old)
    new = _write(api, "Ivan Petrov works at the bank", supersedes=middle)
    secret = _write(api, "Ivan Petrov keeps the vault code 7741")
    _mention(tenant, "Ivan Petrov", new, secret)
    _expire(local_db, middle, secret)

    # When the new memory's neighbours are read, two steps out
    related = api.get(f"/v1/memories/{new}/related?depth=2")

    # Then only the old version is there, reached through a memory that is not named
    assert related.status == 200
    assert [(r["id"], r["depth"], r["via"]) for r in related.json["related"]] == [(old, 2, None)]
    assert "7741" not in str(related.json)


def test_search_with_include_related_attaches_no_expired_neighbour(
    api: Api, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given a memory and an expired one that names the same person
    bank = _write(api, "Ivan Petrov works at the bank")
    secret = _write(api, "Ivan Petrov keeps the vault code 7741")
    _mention(tenant, "Ivan Petrov", bank, secret)
    _expire(local_db, secret)

    # When a search attaches each result's neighbours
    found = api.post(
        "/v1/search", {"query": "where does Ivan Petrov work", "container": "vault", "include_related": True}
    ).json["results"]

    # Then the expired memory is neither a result nor a neighbour of one
    assert [r["id"] for r in found] == [bank]
    assert found[0]["related"] == []
    assert "7741" not in str(found)


def test_an_expired_memory_is_no_observation_of_its_entity(api: Api, local_db: LocalDatabase) -> None:
    # Given two observations of Ivan Petrov, one of which has expired
    ivan = api.post("/v1/entities", {"name": "Ivan Petrov", "entity_type": "person"}).json["id"]
    bank = _write(api, "Ivan Petrov works at the bank")
    secret = _write(api, "Ivan Petrov keeps the vault code 7741")
    for memory_id in (bank, secret):
        assert api.post(f"/v1/entities/{ivan}/observations", {"memory_id": memory_id}).status == 201
    _expire(local_db, secret)

    # When the entity is read, and the expired observation is unlinked or linked again
    observations = api.get(f"/v1/entities/{ivan}").json["observations"]
    unlinked = api.delete(f"/v1/entities/{ivan}/observations/{secret}")
    linked = api.post(f"/v1/entities/{ivan}/observations", {"memory_id": secret})

    # Then only the live memory is an observation, and the expired one is not found, as GET says
    assert [o["memory_id"] for o in observations] == [bank]
    assert unlinked.status == 404, unlinked.json
    assert linked.status == 404 and linked.json["error"]["field"] == "memory_id", linked.json
    assert "7741" not in str(linked.json)


def test_the_relations_of_an_expired_memory_are_gone_from_its_entities_and_the_graph_history(
    api: Api, local_db: LocalDatabase
) -> None:
    # Given a relation stated by a memory that has expired (valid from 2020; the memory expired in 2021)
    secret = _write(api, "Ivan Petrov keeps the vault code 7741")
    relation = {
        "source": {"name": "Ivan Petrov", "entity_type": "person"},
        "relation_type": "holds_key_to",
        "target": {"name": "City Bank vault", "entity_type": "place"},
        "valid_from": "2020-01-01T00:00:00Z",
        "source_memory_id": secret,
    }
    created = api.post("/v1/relations", relation)
    assert created.status == 201, created.json
    ivan = created.json["source"]["id"]
    with local_db.admin.transaction() as cur:
        cur.execute("UPDATE memories SET expires_at = '2021-01-01T00:00:00Z' WHERE id = %s", (secret,))

    # When the entity, its graph with history and as it was in 2020 are read, and the relation cited again
    detail = api.get(f"/v1/entities/{ivan}").json
    history = api.get(f"/v1/graph?entity={ivan}&include_history=true").json
    in_2020 = api.get(f"/v1/graph?entity={ivan}&as_of=2020-06-01T00:00:00Z").json
    cited = api.post("/v1/relations", relation)

    # Then the relation is gone from the entity and from history; as of 2020 it held, as search reads an
    # expired memory as of a time before its expiry
    assert detail["relations"] == []
    assert history["edges"] == [] and [n["id"] for n in history["nodes"]] == [ivan]
    assert [e["id"] for e in in_2020["edges"]] == [created.json["id"]]
    assert cited.status == 404 and cited.json["error"]["field"] == "source_memory_id", cited.json


def test_reverting_to_an_expired_version_is_not_found_and_changes_nothing(
    api: Api, local_db: LocalDatabase
) -> None:
    # Given an expired version, superseded by the current one
    old = _write(api, "Ivan Petrov keeps the vault code 7741")
    new = _write(api, "Ivan Petrov keeps the vault code 3090", supersedes=old)
    _expire(local_db, old)

    # When the supersession is reverted
    reverted = api.post(f"/v1/memories/{old}/revert")

    # Then the expired version is not found, as GET says, and the current one stays current
    assert reverted.status == 404, reverted.json
    assert "7741" not in str(reverted.json)
    current = api.get(f"/v1/memories/{new}")
    assert current.status == 200 and current.json["is_latest"] is True


def test_an_expired_memory_cannot_be_superseded(api: Api, local_db: LocalDatabase) -> None:
    # Given an expired memory (GET answers 404)
    old = _write(api, "Ivan Petrov keeps the vault code 7741")
    _expire(local_db, old)

    # When a write names it in supersedes
    refused = api.post(
        "/v1/memories", {"content": "Ivan Petrov keeps the vault code 3090", "supersedes": old}
    )

    # Then it is not found, as to GET, and nothing is stored
    assert refused.status == 422 and refused.json["error"]["field"] == "supersedes"
    assert "not found" in refused.json["error"]["message"]
    listed = api.post("/v1/memories/list", {}).json["memories"]
    assert [m["content"] for m in listed if "3090" in m["content"]] == []


def _superseded(api: Api, local_db: LocalDatabase, text: str, days_ago: int) -> str:
    old = api.post("/v1/memories/upsert", {"content": text + "."}).json["id"]
    api.post("/v1/memories/upsert", {"content": text + "!", "dedupe_threshold": 0.8})
    with local_db.admin.transaction() as cur:
        cur.execute(
            "UPDATE memories SET valid_to = now() - make_interval(days => %s) WHERE id = %s", (days_ago, old)
        )
    return str(old)


def test_cleanup_deletes_expired_rows_and_old_superseded_versions_only(
    api: Api, other_api: Api, local_db: LocalDatabase
) -> None:
    live = api.post("/v1/memories", {"content": "keep me"}).json["id"]
    gone = api.post("/v1/memories", {"content": "expired", **_expired()}).json["id"]
    theirs = other_api.post("/v1/memories", {"content": "expired too", **_expired()}).json["id"]
    old = _superseded(api, local_db, "The printer is on floor three", days_ago=100)
    recent = _superseded(api, local_db, "The canteen closes at two", days_ago=5)
    api.put("/v1/working/plan/temp", {"value": 1, "ttl_seconds": 60})
    api.put("/v1/working/plan/kept", {"value": 2})
    with local_db.admin.transaction() as cur:
        cur.execute("UPDATE working_memory SET expires_at = now() - interval '1 s' WHERE key = 'temp'")

    report = cleanup(local_db.app, retention_days=30)

    assert report.tenants >= 2 and report.retention_days == 30
    assert (
        report.expired_memories >= 2 and report.superseded_memories >= 1 and report.expired_working_keys >= 1
    )
    assert not _exists(local_db, "memories", "id", gone)
    assert not _exists(local_db, "memories", "id", theirs)
    assert not _exists(local_db, "memories", "id", old)
    assert _exists(local_db, "memories", "id", recent)
    assert _exists(local_db, "memories", "id", live)
    assert not _exists(local_db, "working_memory", "key", "temp")
    assert api.get("/v1/working/plan/kept").status == 200


def test_cleanup_without_retention_keeps_superseded_versions(api: Api, local_db: LocalDatabase) -> None:
    old = _superseded(api, local_db, "The gym opens at six", days_ago=1000)

    cleanup(local_db.app, retention_days=None)

    assert _exists(local_db, "memories", "id", old)


def _entity_names(api: Api, q: str) -> list[str]:
    return [e["name"] for e in api.get(f"/v1/entities?q={q}").json["entities"]]


def test_cleanup_deletes_the_extracted_entities_only_expired_memories_named_and_counts_them(
    api: Api, local_db: LocalDatabase
) -> None:
    # Given an entity made on purpose, and an expired memory, the only one to name it and Acme
    assert api.post("/v1/entities", {"name": "Zorana Petrovic"}).status == 201
    secret = api.post("/v1/memories", {"content": "Zorana Petrovic works at Acme.", "extract": "light"})
    _expire(local_db, secret.json["id"])
    assert _entity_names(api, "acme") == ["Acme"]  # the memory is gone from reads, its rows are not

    # When cleanup runs
    report = cleanup(local_db.app, retention_days=None)

    # Then the entity extraction made goes with the memory, and is counted; the one made on purpose stays
    assert report.orphaned_entities >= 1
    assert not _exists(local_db, "memories", "id", secret.json["id"])
    assert _entity_names(api, "acme") == []
    assert _entity_names(api, "zorana") == ["Zorana Petrovic"]


def test_cleanup_leaves_an_entity_that_a_transaction_is_linking_for_a_later_run(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given an extracted entity nothing refers to any more (its only mention unlinked)
    memory = api.post("/v1/memories", {"content": "Zorana Petrovic likes tea.", "extract": "light"})
    (zorana,) = api.get("/v1/entities?q=zorana").json["entities"]
    unlinked = api.delete(f"/v1/entities/{zorana['id']}/observations/{memory.json['id']}")
    assert unlinked.status == 204

    # When cleanup runs while a transaction that resolved it to link a memory is still open, and again
    # after it has ended
    with deps.database().tenant(tenant.tenant_id) as cur:
        row, _ = resolve_entity(cur, tenant.tenant_id, "Zorana Petrovic", "unknown", curated=False)
        cleanup(local_db.app, retention_days=None)
        kept = _entity_names(api, "zorana")
    cleanup(local_db.app, retention_days=None)

    # Then the first run skips it (the link would have lost its entity), and the second deletes it
    assert str(row["id"]) == zorana["id"] and kept == ["Zorana Petrovic"]
    assert _entity_names(api, "zorana") == []


def test_engram_cleanup_command(api: Api, local_db: LocalDatabase, tmp_path: Path) -> None:
    gone = api.post("/v1/memories", {"content": "expired via cli", **_expired()}).json["id"]
    named = api.post("/v1/memories", {"content": "Zorana Petrovic works at Acme.", "extract": "light"})
    _expire(local_db, named.json["id"])
    env = {
        **os.environ,
        "DATABASE_URL": local_db.admin_conninfo,
        "ENGRAM_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO / "shared"),
    }

    done = subprocess.run(
        [sys.executable, "-m", "engram.cli", "cleanup", "--retention-days", "30"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["expired_memories"] >= 2 and report["retention_days"] == 30
    assert report["orphaned_entities"] >= 2  # Zorana Petrovic and Acme
    assert not _exists(local_db, "memories", "id", gone)
