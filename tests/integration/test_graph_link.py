"""The offline baseline of the last two states: heuristic memories with their origin; a newer
near-duplicate about the same subject `updates` the older one, one without a shared subject only
`extends` it (no over-invalidation, Graphiti #1728)."""

from __future__ import annotations

from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest
from tests.integration.pipeline_helpers import run as run_document

OLD = b"Payments API is deployed to the eu-west cluster every Friday morning."
NEW = b"Payments API is deployed to the eu-west cluster every Monday morning."
# "It" names no entity: the heuristic finds no subject in these.
NO_SUBJECT_OLD = b"It is deployed to the eu-west cluster every Friday morning."
NO_SUBJECT_NEW = b"It is deployed to the eu-west cluster every Monday morning."


def _memories(local_db: LocalDatabase, tenant: IssuedKey) -> list[dict]:
    with local_db.app.tenant(tenant.tenant_id) as cur:
        return cur.execute(
            """SELECT m.id, m.content, m.is_latest, m.valid_to, m.metadata, s.document_id, s.chunk_id
               FROM memories m LEFT JOIN memory_sources s ON s.memory_id = m.id ORDER BY m.created_at"""
        ).fetchall()


def test_each_memory_records_its_document_and_chunk(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    ref, status = run_document(tenant.tenant_id, OLD, "deploys.txt", "ops")

    rows = _memories(local_db, tenant)
    assert status == "done"
    assert [r["content"] for r in rows] == [OLD.decode()]
    assert rows[0]["document_id"] == ref.document_id
    assert rows[0]["chunk_id"] is not None
    assert rows[0]["metadata"]["extractor"] == "heuristic"
    assert rows[0]["metadata"]["chunk_id"] == str(rows[0]["chunk_id"])


def test_a_newer_near_duplicate_updates_the_older_memory(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    run_document(tenant.tenant_id, OLD, "deploys-v1.txt", "ops")

    new_ref, status = run_document(tenant.tenant_id, NEW, "deploys-v2.txt", "ops")

    old, new = _memories(local_db, tenant)
    assert status == "done"
    assert (old["is_latest"], new["is_latest"]) == (False, True)
    assert old["valid_to"] is not None
    with local_db.app.tenant(tenant.tenant_id) as cur:
        link = cur.execute(
            "SELECT source_id, target_id, relationship_type, confidence, metadata FROM memory_relationships"
        ).fetchall()
    assert [(r["source_id"], r["target_id"], r["relationship_type"]) for r in link] == [
        (new["id"], old["id"], "updates")
    ]
    assert 0.9 <= link[0]["confidence"] <= 1.0
    assert link[0]["metadata"] == {
        "linker": "rules",
        "document_id": str(new_ref.document_id),
        "reason": "near-duplicate, same subject",
    }


def test_a_near_duplicate_without_a_shared_subject_only_extends(
    tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    run_document(tenant.tenant_id, NO_SUBJECT_OLD, "a.txt", "ops")
    run_document(tenant.tenant_id, NO_SUBJECT_NEW, "b.txt", "ops")

    rows = _memories(local_db, tenant)
    with local_db.app.tenant(tenant.tenant_id) as cur:
        kinds = [r["relationship_type"] for r in cur.execute("SELECT * FROM memory_relationships").fetchall()]
    assert len(rows) == 2 and all(r["is_latest"] for r in rows)
    assert kinds == ["extends"]


def test_unrelated_memories_are_not_linked(tenant: IssuedKey, local_db: LocalDatabase) -> None:
    run_document(tenant.tenant_id, OLD, "deploys.txt", "ops")
    run_document(
        tenant.tenant_id, b"The cafeteria serves vegetarian lunch on Wednesdays only.", "food.txt", "ops"
    )

    assert all(r["is_latest"] for r in _memories(local_db, tenant))


def test_deleting_the_newer_document_makes_the_older_memory_current_again(api: Api) -> None:
    ingest(api, {"content": OLD.decode(), "container": "ops"})
    newer = ingest(api, {"content": NEW.decode(), "container": "ops"})
    before = api.post("/v1/search", {"query": "when is the payments API deployed", "scope": "memories"}).json

    api.delete(f"/v1/documents/{newer['id']}")
    after = api.post("/v1/search", {"query": "when is the payments API deployed", "scope": "memories"}).json

    assert [r["content"] for r in before["results"]] == [NEW.decode()]  # search shows only the latest
    assert [r["content"] for r in after["results"]] == [OLD.decode()]
