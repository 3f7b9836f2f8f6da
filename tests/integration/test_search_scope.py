"""Search scope over memories and chunks: kinds, document ids, filters that chunks cannot match, and
the chunk full-text path under RLS."""

from __future__ import annotations

from engram.documents.repo import CHUNKS
from engram.local.stack import LocalDatabase
from engram.memories.models import SearchRequest
from engram.memories.search import repo as search_repo
from engram.memories.search.service import MemorySearch
from engram.providers.local_embeddings import LocalEmbedder
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

TEXT = "The kraken incident on the ingestion cluster was caused by an expired certificate."


def test_manual_memories_have_no_document(api: Api) -> None:
    api.post("/v1/memories", {"content": "The kraken mascot is purple."})

    results = api.post("/v1/search", {"query": "kraken mascot", "scope": "memories"}).json["results"]

    assert [(r["kind"], r["document_id"]) for r in results] == [("memory", None)]


def test_results_far_below_the_best_stay_in_fused_order_when_their_scores_round_to_zero(api: Api) -> None:
    unrelated = ["Alice lives in Paris", "Carol prefers tea over coffee", "Dave works at Initech"]
    unrelated += [
        "Gina plays chess",
        "Hank repairs bicycles",
        "Ivy grows tomatoes",
        "The invoice is due Friday",
    ]
    for content in ["Bob enjoys sailing on weekends", *unrelated]:
        api.post("/v1/memories", {"content": content})

    results = api.post("/v1/search", {"query": "Bob enjoys sailing on weekends", "limit": 20}).json["results"]

    tail = [r["scores"]["fused"] for r in results if r["score"] == 0.0]
    assert len(tail) >= 5  # the case: ties in the rounded score
    assert [r["scores"]["fused"] for r in results] == sorted(
        (r["scores"]["fused"] for r in results), reverse=True
    )


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


def test_chunk_postings_are_seen_only_by_the_transactions_tenant(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    ingest(api, {"content": TEXT})
    kraken = "SELECT doc_id FROM text_postings WHERE corpus = 'c' AND term = 'kraken'"

    with local_db.app.tenant(other_tenant.tenant_id) as cur:
        theirs = cur.execute(kraken).fetchall()
    with local_db.app.transaction() as cur:
        nobody = cur.execute(kraken).fetchall()
        visible = cur.execute("SELECT count(*) AS n FROM chunks").fetchone()
    with local_db.app.tenant(tenant.tenant_id) as cur:
        mine = cur.execute(kraken).fetchall()
        chunk = cur.execute("SELECT id FROM chunks WHERE content LIKE '%kraken%'").fetchone()

    assert theirs == [] and nobody == [] and visible == {"n": 0}
    assert chunk is not None and [r["doc_id"] for r in mine] == [chunk["id"]]


def test_chunks_whose_memories_name_the_querys_entity_join_the_graph_leg(api: Api) -> None:
    # Given a document whose extracted memories mention Alice Moreau, and one that does not
    doc = ingest(api, {"content": "Alice Moreau lives in Lisbon with her two cats."})
    ingest(api, {"content": "The Lisbon office moved to a larger building in spring."})

    # When a hybrid search over chunks names her
    results = api.post("/v1/search", {"query": "Where does Alice Moreau live?", "scope": "chunks"}).json[
        "results"
    ]

    # Then her document's chunk comes first, with its graph score; the other has none
    assert results[0]["document_id"] == doc["id"] and results[0]["scores"]["graph"] == 1.0
    assert all(r["scores"]["graph"] is None for r in results[1:])


def test_chunk_search_walks_the_hnsw_index_when_the_planner_says_so(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, embedder: LocalEmbedder
) -> None:
    # Given chunks of several documents
    for text in (TEXT, "Quarterly revenue grew in every region.", "The cafeteria serves soup on Fridays."):
        ingest(api, {"content": text})
    request = SearchRequest(query="why did the ingestion cluster fail", scope="chunks", mode="vector")

    # When the planner must walk the HNSW index (no population is small enough), and when it scans
    hnsw = MemorySearch(local_db.app, embedder, exact_scan_threshold=0, chunks=CHUNKS)
    exact = MemorySearch(local_db.app, embedder, exact_scan_threshold=10**9, chunks=CHUNKS)
    walked = hnsw.search(tenant.tenant_id, request).results
    scanned = exact.search(tenant.tenant_id, request).results

    # Then both find the same chunks in the same order (and there was an index to walk)
    with local_db.app.tenant(tenant.tenant_id) as cur:
        assert (
            search_repo.index_rows(cur, "chunks", None, embedder.model_id, embedder.dimensions, None)
            is not None
        )
    assert [r.id for r in walked] == [r.id for r in scanned] and walked[0].content == TEXT


def test_a_tenants_first_document_is_found_by_the_next_search(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, embedder: LocalEmbedder
) -> None:
    # Given a tenant with memories only, searched once over both kinds (the chunks are only checked)
    api.post("/v1/memories", {"content": "The kraken mascot is purple."})
    service = MemorySearch(local_db.app, embedder, chunks=CHUNKS)
    request = SearchRequest(query="kraken certificate", scope="all")
    before = service.search(tenant.tenant_id, request).results

    # When its first document is added
    doc = ingest(api, {"content": TEXT})

    # Then the same service's next search finds its chunk beside the memory
    after = service.search(tenant.tenant_id, request).results
    assert [r.kind for r in before] == ["memory"]
    assert {(r.kind, r.document_id and str(r.document_id)) for r in after} >= {
        ("memory", None),
        ("chunk", doc["id"]),
    }


def test_as_of_leaves_out_the_chunks_created_after_it(api: Api) -> None:
    # Given a document ingested now, though its content dates from 2019
    doc = ingest(api, {"content": TEXT, "extract": "none", "document_date": "2019-05-01T00:00:00Z"})
    chunk_created = api.post("/v1/search", {"query": "kraken incident", "scope": "chunks"}).json["results"]

    # When chunks are searched as of 2020, in every mode and both scopes that hold them, and as of now
    before = [
        api.post(
            "/v1/search",
            {"query": "kraken incident", "scope": scope, "mode": mode, "as_of": "2020-01-01T00:00:00Z"},
        ).json["results"]
        for scope in ("chunks", "all")
        for mode in ("hybrid", "vector", "text")
    ]
    later = api.post(
        "/v1/search", {"query": "kraken incident", "scope": "chunks", "as_of": chunk_created[0]["valid_from"]}
    ).json["results"]

    # Then 2020 knew none of its chunks (a chunk is valid from its creation, its valid_from); now does
    assert before == [[]] * 6
    assert [r["document_id"] for r in later] == [doc["id"]]


def test_include_history_leaves_chunks_as_they_are(api: Api) -> None:
    # Given a document's chunk (chunks have no versions)
    ingest(api, {"content": TEXT, "extract": "none"})

    # When chunks are searched with and without history
    current = api.post("/v1/search", {"query": "kraken incident", "scope": "chunks"}).json["results"]
    history = api.post(
        "/v1/search", {"query": "kraken incident", "scope": "chunks", "include_history": True}
    ).json["results"]

    # Then both find the same chunks, alike
    assert current and history == current
