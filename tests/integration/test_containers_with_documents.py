"""Deleting or archiving a container that holds documents (issue 14: both answered 500): the documents
go with the container (deleted with their chunks and stored files, or moved into the parent with
their chunks), in one transaction with the memories."""

from __future__ import annotations

from pathlib import Path

from engram import deps
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

TEXT = "Alice Smith lives in Paris. Bob Jones works for Acme in Berlin."


def _stored_files(tenant: IssuedKey, document_id: str) -> list[Path]:
    root = Path(deps.current().settings.data_dir) / "blobs"
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and str(tenant.tenant_id) in str(p) and document_id in str(p)
    ]


def _rows(local_db: LocalDatabase, tenant: IssuedKey, container_prefix: str) -> dict[str, int]:
    with local_db.app.tenant(tenant.tenant_id) as cur:
        row = cur.execute(
            "SELECT (SELECT count(*) FROM documents WHERE container LIKE %(p)s) AS documents, "
            "(SELECT count(*) FROM chunks WHERE container LIKE %(p)s) AS chunks",
            {"p": container_prefix + "%"},
        ).fetchone()
    assert row is not None
    return dict(row)


def test_deleting_a_container_holding_a_document_deletes_the_document(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    doc = ingest(api, {"content": TEXT, "container": "dc.sub", "filename": "people.txt", "extract": "light"})
    assert doc["status"] == "done" and doc["memory_count"] > 0
    assert _stored_files(tenant, doc["id"])

    unconfirmed = api.delete("/v1/containers/dc")
    deleted = api.delete("/v1/containers/dc?confirm=true")

    assert unconfirmed.status == 409 and unconfirmed.json["error"]["documents"] == 1
    assert deleted.status == 200, deleted.json
    assert deleted.json == {"deleted": "dc", "containers": 2, "memories": doc["memory_count"], "documents": 1}
    assert api.get(f"/v1/documents/{doc['id']}").status == 404
    assert _rows(local_db, tenant, "dc") == {"documents": 0, "chunks": 0}
    assert _stored_files(tenant, doc["id"]) == []
    assert api.post("/v1/search", {"query": "where does Alice live"}).json["results"] == []


def test_a_container_holding_only_documents_asks_for_confirmation(api: Api) -> None:
    doc = ingest(api, {"content": TEXT, "container": "only.docs", "extract": "none"})

    response = api.delete("/v1/containers/only.docs")

    assert response.status == 409 and response.json["error"]["code"] == "confirmation_required"
    assert (response.json["error"]["documents"], response.json["error"]["memories"]) == (1, 0)
    assert api.get(f"/v1/documents/{doc['id']}").json["status"] == "done"


def test_archiving_a_container_holding_a_document_moves_it_into_the_parent(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    doc = ingest(api, {"content": TEXT, "container": "arc.sub", "extract": "light"})

    archived = api.post("/v1/containers/arc.sub/archive")

    assert archived.status == 200, archived.json
    assert archived.json["documents"] == 1 and archived.json["memories"] == doc["memory_count"]
    moved = api.get(f"/v1/documents/{doc['id']}").json
    assert moved["container"] == "arc" and moved["metadata"]["archived_from"] == ["arc.sub"]
    assert _rows(local_db, tenant, "arc.sub") == {"documents": 0, "chunks": 0}
    chunks = api.post("/v1/search", {"query": "Bob Jones Acme", "container": "arc", "scope": "chunks"})
    assert [r["document_id"] for r in chunks.json["results"]] == [doc["id"]]
