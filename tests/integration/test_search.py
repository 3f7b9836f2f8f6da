"""Hybrid search: filters, container wildcards, fusion, exact vs. HNSW scans, caller-supplied vectors."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from engram import deps
from engram.local.stack import LocalDatabase
from engram.memories.models import SearchRequest
from engram.memories.search import fusion
from engram.memories.search.service import MemorySearch
from engram.providers.local_embeddings import LocalEmbedder
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid
from tests.integration.documents_helpers import ingest

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _store(api: Api, content: str, **fields: object) -> str:
    response = api.post("/v1/memories", {"content": content, **fields})
    assert response.status == 201, response.json
    return str(response.json["id"])


def _ids(api: Api, body: dict) -> list[str]:
    response = api.post("/v1/search", body)
    assert response.status == 200, response.json
    return [r["id"] for r in response.json["results"]]


def test_results_carry_every_score_and_explain_the_fusion(api: Api) -> None:
    _store(api, "Alice lives in Paris")
    _store(api, "The quarterly report is due Friday")

    results = api.post("/v1/search", {"query": "Alice Paris"}).json["results"]
    result = results[0]

    assert result["content"] == "Alice lives in Paris"
    assert result["scores"]["vector"] > 0.5
    assert result["scores"]["text"] > 0
    # The best text match, holding every word of the query: the vector part plus the whole text part,
    # plus the graph part (direct writes extract entities: Alice and Paris, both named by the query),
    # plus the people part (the query writes "Paris" as a name, not its first word, and the text holds it).
    whole_text = fusion.TEXT_WEIGHT + fusion.COVERAGE_WEIGHT
    assert result["scores"]["graph"] == 1.0
    expected = (
        fusion.VECTOR_WEIGHT * result["scores"]["vector"]
        + whole_text
        + fusion.GRAPH_WEIGHT
        + fusion.PEOPLE_WEIGHT
    )
    assert result["scores"]["fused"] == pytest.approx(expected, abs=1e-5)
    best = result["scores"]["fused"]
    for each in results:
        assert each["score"] == pytest.approx(fusion.calibrated(each["scores"]["fused"], best), abs=1e-6)


def test_total_is_the_number_of_results_returned_as_documented(api: Api, document: dict[str, Any]) -> None:
    for content in ("deploy notes one", "deploy notes two", "deploy notes three"):
        _store(api, content)

    found = api.post("/v1/search", {"query": "deploy notes", "limit": 2}).json

    assert found["total"] == len(found["results"]) == 2
    for schema in ("SearchResponse", "MessageSearchResponse"):
        total = document["components"]["schemas"][schema]["properties"]["total"]
        assert "the number of results in this answer, len(results)" in total["description"]


def test_container_exact_and_wildcard(api: Api) -> None:
    top = _store(api, "deploy notes for the team", container="team")
    child = _store(api, "deploy notes for the backend", container="team.backend")
    grandchild = _store(api, "deploy notes for the database", container="team.backend.db")
    sibling = _store(api, "deploy notes for a lookalike", container="teamwork")
    # Inside [team, team/), the single range the vector leg's population count uses: counted, never found.
    dashed = _store(api, "deploy notes for the dashed lookalike", container="team-x")

    exact = _ids(api, {"query": "deploy notes", "container": "team.backend"})
    below = _ids(api, {"query": "deploy notes", "container": "team.backend.*"})
    everything = _ids(api, {"query": "deploy notes", "container": "team.*"})

    assert exact == [child]
    assert set(below) == {child, grandchild}
    assert set(everything) == {top, child, grandchild}
    assert sibling not in everything
    assert dashed not in everything
    for mode in ("vector", "text"):
        assert set(_ids(api, {"query": "deploy notes", "container": "team.*", "mode": mode})) == {
            top,
            child,
            grandchild,
        }


def test_each_filter_narrows_the_results(api: Api) -> None:
    a = _store(
        api,
        "coffee order for the meeting",
        memory_type="task",
        tags=["office", "food"],
        agent_id="planner",
        conversation_id="c1",
        metadata={"priority": "high", "n": 1},
    )
    b = _store(
        api,
        "coffee order for the party",
        memory_type="fact",
        tags=["office"],
        agent_id="helper",
        conversation_id="c2",
        metadata={"priority": "low"},
    )

    q = "coffee order"
    assert set(_ids(api, {"query": q})) == {a, b}
    assert _ids(api, {"query": q, "filters": {"memory_type": ["task"]}}) == [a]
    assert _ids(api, {"query": q, "filters": {"tags": ["office", "food"]}}) == [a]
    assert set(_ids(api, {"query": q, "filters": {"tags": ["office"]}})) == {a, b}
    assert _ids(api, {"query": q, "filters": {"agent_id": "helper"}}) == [b]
    assert _ids(api, {"query": q, "filters": {"conversation_id": "c1"}}) == [a]
    assert _ids(api, {"query": q, "filters": {"metadata": {"priority": "high"}}}) == [a]
    assert _ids(api, {"query": q, "filters": {"metadata": {"priority": "high"}}, "mode": "text"}) == [a]
    assert _ids(api, {"query": q, "filters": {"metadata": {"priority": "urgent"}}}) == []


def test_score_threshold_drops_weak_matches(api: Api) -> None:
    strong = _store(api, "The cat sat on the mat")
    _store(api, "Interest rates rose sharply in March")

    ids = _ids(api, {"query": "a cat sitting on a mat", "mode": "vector", "score_threshold": 0.6})

    assert ids == [strong]


def test_the_calibrated_hybrid_floor_removes_unrelated_hits_and_keeps_the_match(api: Api) -> None:
    # Rank-based scores gave "zebra quantum" hits scored 0.50, 0.43, 0.38 here (issue 13 item 9).
    soup = _store(api, "The cafeteria serves tomato soup on Fridays")
    _store(api, "Quarterly revenue grew in every region")
    _store(api, "The deploy pipeline runs the integration tests first")
    floor = fusion.SCIFACT_FLOOR

    unrelated = api.post("/v1/search", {"query": "zebra quantum"}).json["results"]
    assert unrelated and all(r["score"] < floor for r in unrelated)
    assert _ids(api, {"query": "zebra quantum", "score_threshold": floor}) == []
    assert _ids(api, {"query": "which soup does the cafeteria serve", "score_threshold": floor}) == [soup]


# A small labelled set: each query has one relevant memory. Some are found by meaning only
# (paraphrase, no shared words), some by exact tokens only (codes, names the model does not know).
CORPUS = {
    "car": "My car is a red Toyota Corolla from 2015",
    "allergy": "Sam is allergic to peanuts and carries an EpiPen",
    "wifi": "The guest wifi password is XK7-QP2-ZZ9",
    "flight": "Flight LX318 to Zurich departs at 07:45",
    "vacation": "Maria will be on holiday in Portugal during August",
    "server": "The build server hostname is orion-ci-04",
    "pet": "Our dog Biscuit needs his medicine twice a day",
    "stack": "The frontend is written in TypeScript with React",
    "invoice": "Invoice INV-20931 was paid on March 3rd",
    "sleep": "Jonas usually goes to bed around midnight",
    # The fact sits past the model's 256-token window: the vector never sees it, the text index does.
    "notes": " ".join(
        f"Item {i}: the team reviewed the sprint board, discussed hiring, and agreed to revisit the roadmap."
        for i in range(25)
    )
    + " Finally, the new vendor code name is Bluefin.",
}
QUERIES = {
    "what automobile do I drive": "car",
    "which nut can Sam not eat": "allergy",
    "XK7-QP2-ZZ9": "wifi",
    "LX318": "flight",
    "is Maria away in the summer": "vacation",
    "orion-ci-04": "server",
    "when does the puppy take its pills": "pet",
    "what UI framework do we use": "stack",
    "INV-20931": "invoice",
    "what time does Jonas fall asleep": "sleep",
    "vendor code name Bluefin": "notes",
}


# Near-duplicates that differ only in a code or number: meaning alone cannot tell them apart.
DISTRACTORS = [
    "The guest wifi password is XK7-QP2-ZZ8",
    "The office wifi password is MN4-RT6-YY1",
    "Flight LX319 to Geneva departs at 07:40",
    "Flight LX381 to Zurich departs at 09:15",
    "The build server hostname is orion-ci-05",
    "The staging server hostname is orion-stage-02",
    "Invoice INV-20932 was paid on March 4th",
    "Invoice INV-20391 was paid on March 13th",
    "Our supplier for blue paint is Dulux",
    "The fish market sells fresh tuna and mackerel",
    *(f"Weekly sync note {i}: roadmap item {i} is on track" for i in range(20)),
]


@pytest.fixture
def labelled(api: Api) -> dict[str, str]:
    ids = {label: _store(api, text, container="labelled") for label, text in CORPUS.items()}
    for text in DISTRACTORS:
        _store(api, text, container="labelled")
    return ids


def _hits_at_1(api: Api, labelled: dict[str, str], mode: str) -> set[str]:
    hits = set()
    for query, label in QUERIES.items():
        top = _ids(api, {"query": query, "container": "labelled", "mode": mode, "limit": 1})
        if top and top[0] == labelled[label]:
            hits.add(query)
    return hits


def test_hybrid_finds_what_vector_or_text_alone_misses(api: Api, labelled: dict[str, str]) -> None:
    vector = _hits_at_1(api, labelled, "vector")
    text = _hits_at_1(api, labelled, "text")
    hybrid = _hits_at_1(api, labelled, "hybrid")

    assert hybrid - vector, f"hybrid should find something vector misses: {vector=} {hybrid=}"
    assert hybrid - text, f"hybrid should find something text misses: {text=} {hybrid=}"
    assert len(hybrid) > max(len(vector), len(text)), (vector, text, hybrid)


# --- filtered recall: the true top-k even for a small container in a big tenant ---------------


@pytest.fixture
def crowded_tenant(local_db: LocalDatabase, tenant: IssuedKey) -> Iterator[IssuedKey]:
    """3,000 random vectors in one big container and 30 in a small one, written directly."""
    rng = random.Random(7)
    rows = []
    for i in range(3030):
        container = "small" if i < 30 else "big"
        vector = [rng.gauss(0, 1) for _ in range(384)]
        rows.append(
            (tenant.tenant_id, container, f"row {i}", "[" + ",".join(f"{x:.5f}" for x in vector) + "]")
        )
    with local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "INSERT INTO containers (tenant_id, name) VALUES (%s, 'small'), (%s, 'big')",
            (tenant.tenant_id, tenant.tenant_id),
        )
        cur.executemany(
            "INSERT INTO memories (tenant_id, container, content, embedding, embedding_model) "
            "VALUES (%s, %s, %s, %s::vector, %s)",
            [(*r, MODEL) for r in rows],
        )
    yield tenant


@pytest.mark.parametrize("threshold", [0, 1_000_000], ids=["hnsw-iterative", "exact"])
def test_a_small_container_gets_its_true_top_k(
    crowded_tenant: IssuedKey, local_db: LocalDatabase, embedder: LocalEmbedder, threshold: int
) -> None:
    service = MemorySearch(local_db.app, embedder, exact_scan_threshold=threshold)
    rng = random.Random(11)
    query = [rng.gauss(0, 1) for _ in range(384)]
    request = SearchRequest(query="row", container="small", limit=10, mode="vector")

    got = service.search_with_vector(crowded_tenant.tenant_id, request, query, MODEL)
    exact = MemorySearch(local_db.app, embedder, exact_scan_threshold=10**9).search_with_vector(
        crowded_tenant.tenant_id, request, query, MODEL
    )

    assert len(got.results) == 10
    recall = len({r.id for r in got.results} & {r.id for r in exact.results}) / 10
    assert recall >= 0.9
    assert all(r.container == "small" for r in got.results)


# --- embeddings supplied by the caller --------------------------------------------------------


def test_a_caller_supplied_embedding_is_searchable_with_its_own_model(api: Api) -> None:
    memory = _store(api, "vector from elsewhere", embedding=[1.0, 0.0, 0.0], embedding_model="my-3d-model")
    _store(api, "another one", embedding=[0.0, 1.0, 0.0], embedding_model="my-3d-model")

    found = api.post(
        "/v1/search",
        {
            "query": "anything",
            "mode": "vector",
            "embedding": [0.9, 0.1, 0.0],
            "embedding_model": "my-3d-model",
        },
    ).json

    assert found["results"][0]["id"] == memory
    assert api.get(f"/v1/memories/{memory}").json["embedding_model"] == "my-3d-model"


def test_a_vector_mode_score_is_the_cosine_similarity_below_zero_too_as_documented(
    api: Api, document: dict[str, Any]
) -> None:
    # Given a memory whose vector points away from the query's
    away = _store(api, "pointing away", embedding=[1.0, 0.0, 0.0], embedding_model="my-3d-model")

    # When it is searched in vector mode
    found = api.post(
        "/v1/search",
        {"query": "x", "mode": "vector", "embedding": [-1.0, 0.5, 0.0], "embedding_model": "my-3d-model"},
    ).json["results"]

    # Then its score is its cosine similarity, below 0, as the schema says a score may be
    assert [r["id"] for r in found] == [away]
    assert found[0]["score"] == found[0]["scores"]["vector"] == pytest.approx(-(0.8**0.5), abs=1e-6)
    schemas = document["components"]["schemas"]
    assert "-1 to 1" in schemas["SearchResult"]["properties"]["score"]["description"]
    assert "-1 to 1" in schemas["Scores"]["properties"]["vector"]["description"]
    assert "-1 to 1" in schemas["MessageSearchResult"]["properties"]["score"]["description"]


def test_vectors_of_different_models_never_meet(api: Api) -> None:
    _store(api, "stored under a custom model", embedding=[1.0] * 384, embedding_model="other-384d-model")

    found = api.post("/v1/search", {"query": "stored under a custom model", "mode": "vector"}).json

    assert all(r["content"] != "stored under a custom model" for r in found["results"])


def test_an_embedding_model_with_no_vectors_here_is_a_422_naming_it_and_the_models_here(api: Api) -> None:
    # Given memories embedded by the service, and one under a model of the caller's own
    _store(api, "Alice lives in Paris")
    _store(api, "vector from elsewhere", embedding=[1.0, 0.0, 0.0], embedding_model="my-3d-model")

    # When a search sends a vector of a model nothing here was embedded with, in each mode that embeds
    answers = [
        api.post(
            "/v1/search",
            {
                "query": "Alice",
                "mode": mode,
                "embedding": [1.0] * 384,
                "embedding_model": "my-model",
                **scope,
            },
        )
        for mode in ("vector", "hybrid")
        for scope in ({}, {"scope": "messages", "user_id": "alice"})
    ]

    # Then each is a 422 on embedding_model naming it and the models the search has
    for response in answers:
        assert_invalid(response, "embedding_model")
        message = response.json["error"]["message"]
        assert "'my-model'" in message and MODEL in message
    assert "my-3d-model" in answers[0].json["error"]["message"]  # memories: the caller's own model too


def test_a_model_no_chunk_was_embedded_with_is_a_422_for_scope_chunks(api: Api) -> None:
    # Given a document's chunk, and a memory under a model of the caller's own
    ingest(api, {"content": "The kraken mascot is purple.", "extract": "none"})
    _store(api, "x marks the kraken", embedding=[1.0, 2.0], embedding_model="other-x")

    # When chunks are searched by a vector of that model, in each mode that embeds
    answers = [
        api.post(
            "/v1/search",
            {
                "query": "kraken",
                "mode": mode,
                "scope": "chunks",
                "embedding": [1.0, 2.0],
                "embedding_model": "other-x",
            },
        )
        for mode in ("vector", "hybrid")
    ]

    # Then each is a 422 on embedding_model naming it and the models chunks were embedded with
    for response in answers:
        assert_invalid(response, "embedding_model")
        message = response.json["error"]["message"]
        assert "'other-x'" in message and MODEL in message


def test_scope_all_searches_a_model_only_memories_have_in_memories_only(api: Api) -> None:
    # Given a document's chunk, and a memory under a model of the caller's own, both about the kraken
    ingest(api, {"content": "The kraken mascot is purple.", "extract": "none"})
    memory = _store(api, "x marks the kraken", embedding=[1.0, 2.0], embedding_model="other-x")

    # When both kinds are searched by a vector of that model, in each mode that embeds
    found = [
        _ids(
            api,
            {"query": "kraken", "mode": mode, "embedding": [1.0, 2.0], "embedding_model": "other-x"},
        )
        for mode in ("vector", "hybrid")
    ]

    # Then the memory is found by its vector, and no chunk by its words alone
    assert found == [[memory], [memory]]


def test_a_caller_embedding_of_the_wrong_dimension_is_422(api: Api) -> None:
    _store(api, "first", embedding=[1.0, 0.0, 0.0], embedding_model="my-3d-model")

    wrong_for_custom = api.post(
        "/v1/memories", {"content": "x", "embedding": [1.0, 0.0], "embedding_model": "my-3d-model"}
    )
    wrong_for_default = api.post(
        "/v1/memories", {"content": "x", "embedding": [1.0] * 10, "embedding_model": MODEL}
    )
    wrong_query = api.post(
        "/v1/search", {"query": "x", "embedding": [1.0] * 5, "embedding_model": "my-3d-model"}
    )

    for response in (wrong_for_custom, wrong_for_default, wrong_query):
        assert_invalid(response, "embedding")
        assert "dimensions" in response.json["error"]["message"]


def test_the_service_embedder_is_the_configured_local_model() -> None:
    assert deps.embedder().model_id == MODEL
    assert deps.embedder().dimensions == 384
