"""Search scope over memories and chunks: kinds, document ids, filters that chunks cannot match, and
the chunk full-text path under RLS."""

from __future__ import annotations

from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

TEXT = "The kraken incident on the ingestion cluster was caused by an expired certificate."


def test_manual_memories_have_no_document(api: Api) -> None:
    api.post("/v1/memories", {"content": "The kraken mascot is purple."})

    results = api.post("/v1/search", {"query": "kraken mascot", "scope": "memories"}).json["results"]

    assert [(r["kind"], r["document_id"]) for r in results] == [("memory", None)]


def test_memory_only_filters_leave_chunks_out(api: Api) -> None:
    ingest(api, {"content": TEXT, "tags": ["incidents"]})

    by_type = api.post("/v1/search", {"query": "kraken incident", "filters": {"memory_type": ["fact"]}}).json
    by_tag = api.post("/v1/search", {"query": "kraken incident", "filters": {"tags": ["incidents"]}}).json
    other_tag = api.post(
        "/v1/search", {"query": "kraken incident", "scope": "chunks", "filters": {"tags": ["other"]}}
    ).json

    assert {r["kind"] for r in by_type["results"]} == {"memory"}
    assert {r["kind"] for r in by_tag["results"]} == {"memory", "chunk"}
    assert other_tag["results"] == []


def test_text_mode_finds_chunks_through_the_candidate_function(api: Api) -> None:
    doc = ingest(api, {"content": TEXT, "container": "ops.incidents"})

    found = api.post(
        "/v1/search",
        {"query": "expired certificate", "mode": "text", "scope": "chunks", "container": "ops.*"},
    ).json["results"]
    elsewhere = api.post(
        "/v1/search",
        {"query": "expired certificate", "mode": "text", "scope": "chunks", "container": "sales"},
    ).json["results"]

    assert [(r["kind"], r["document_id"]) for r in found] == [("chunk", doc["id"])]
    assert found[0]["scores"]["text"] > 0
    assert elsewhere == []


def test_chunk_candidates_see_only_the_transactions_tenant(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    ingest(api, {"content": TEXT})

    with local_db.app.tenant(other_tenant.tenant_id) as cur:
        theirs = cur.execute(
            "SELECT * FROM chunk_text_candidates(to_tsquery('english', 'kraken'), 10)"
        ).fetchall()
    with local_db.app.transaction() as cur:
        nobody = cur.execute(
            "SELECT * FROM chunk_text_candidates(to_tsquery('english', 'kraken'), 10)"
        ).fetchall()
        visible = cur.execute("SELECT count(*) AS n FROM chunks").fetchone()
    with local_db.app.tenant(tenant.tenant_id) as cur:
        mine = cur.execute(
            "SELECT * FROM chunk_text_candidates(to_tsquery('english', 'kraken'), 10)"
        ).fetchall()

    assert theirs == [] and nobody == [] and visible == {"n": 0}
    assert len(mine) == 1
