"""Filtered vector search: exact over a small filtered set, HNSW over a large one, and neither
crosses tenants."""

from __future__ import annotations

import random
from uuid import UUID

import pytest

from engram.local.stack import LocalDatabase
from engram.memories.models import SearchFilters, SearchRequest
from engram.memories.search import planner
from engram.memories.search.service import MemorySearch
from engram.providers.local_embeddings import LocalEmbedder
from engram.settings import LOCAL_EMBEDDING_MODEL
from tests.conftest import Api


def _vector(rng: random.Random) -> list[float]:
    raw = [rng.gauss(0, 1) for _ in range(384)]
    norm = sum(x * x for x in raw) ** 0.5
    return [x / norm for x in raw]


def _store(api: Api, vectors: list[list[float]], tagged: set[int]) -> list[str]:
    ids = []
    for i, vector in enumerate(vectors):
        body = {
            "content": f"note {i}",
            "tags": ["rare"] if i in tagged else ["common"],
            "embedding": vector,
            "embedding_model": LOCAL_EMBEDDING_MODEL,
        }
        response = api.post("/v1/memories", body)
        assert response.status == 201
        ids.append(response.json["id"])
    return ids


@pytest.fixture
def vectors() -> list[list[float]]:
    rng = random.Random(7)
    return [_vector(rng) for _ in range(40)]


def test_tag_filter_returns_every_tagged_memory_nearest_first(api: Api, vectors: list[list[float]]) -> None:
    ids = _store(api, vectors, tagged={3, 17, 29})

    found = api.post(
        "/v1/search",
        {
            "query": "note",
            "mode": "vector",
            "filters": {"tags": ["rare"]},
            "embedding": vectors[17],
            "embedding_model": LOCAL_EMBEDDING_MODEL,
        },
    ).json

    assert found["results"][0]["id"] == ids[17]
    assert {r["id"] for r in found["results"]} == {ids[3], ids[17], ids[29]}


def test_tag_filter_never_returns_another_tenants_memory(
    api: Api, other_api: Api, vectors: list[list[float]]
) -> None:
    _store(other_api, vectors, tagged=set(range(40)))
    mine = _store(api, vectors[:5], tagged={1})

    found = api.post(
        "/v1/search",
        {
            "query": "note",
            "mode": "vector",
            "filters": {"tags": ["rare"]},
            "embedding": vectors[30],
            "embedding_model": LOCAL_EMBEDDING_MODEL,
        },
    ).json

    assert [r["id"] for r in found["results"]] == [mine[1]]


def test_hnsw_path_with_a_tag_filter_finds_the_tagged_memories(
    api: Api,
    tenant,
    local_db: LocalDatabase,
    embedder: LocalEmbedder,
    vectors: list[list[float]],  # type: ignore[no-untyped-def]
) -> None:
    ids = _store(api, vectors, tagged={5, 6})
    service = MemorySearch(local_db.app, embedder, exact_scan_threshold=0)
    request = SearchRequest(query="note", mode="vector", filters=SearchFilters(tags=["rare"]))

    found = service.search_with_vector(tenant.tenant_id, request, vectors[6], LOCAL_EMBEDDING_MODEL)

    assert [str(r.id) for r in found.results] == [ids[6], ids[5]]


# The functions that reach filtered rows beside RLS (migrations/0012, 0029), each with its arguments for
# a "rare" tag filter: they answer for the transaction's tenant only.
CANDIDATE_FUNCTIONS = {
    "memory_filter_candidates": (
        "SELECT id FROM memory_filter_candidates(%s, 100, NULL, false, NULL, %s::text[])",
        (LOCAL_EMBEDDING_MODEL, ["rare"]),
    ),
    "memory_scope_ids": ("SELECT id FROM memory_scope_ids(100, NULL, false, NULL, %s::text[])", (["rare"],)),
}


@pytest.mark.parametrize("function", sorted(CANDIDATE_FUNCTIONS))
def test_candidate_functions_return_nothing_without_a_tenant(
    api: Api, local_db: LocalDatabase, vectors: list[list[float]], function: str
) -> None:
    _store(api, vectors[:3], tagged={0, 1, 2})
    query, args = CANDIDATE_FUNCTIONS[function]

    with local_db.app.transaction() as cur:
        rows = cur.execute(query, args).fetchall()

    assert rows == []


@pytest.mark.parametrize("function", sorted(CANDIDATE_FUNCTIONS))
def test_candidate_functions_see_only_the_transactions_tenant(
    api: Api,
    other_api: Api,
    tenant,  # type: ignore[no-untyped-def]
    local_db: LocalDatabase,
    vectors: list[list[float]],
    function: str,
) -> None:
    mine = _store(api, vectors[:3], tagged={0, 2})
    _store(other_api, vectors[3:7], tagged={0, 1, 2, 3})
    query, args = CANDIDATE_FUNCTIONS[function]

    with local_db.app.tenant(tenant.tenant_id) as cur:
        rows = cur.execute(query, args).fetchall()

    assert {str(row["id"]) for row in rows} == {mine[0], mine[2]}
    assert all(isinstance(row["id"], UUID) for row in rows)


class _Recording:
    """The app database, recording the statements each run sends."""

    def __init__(self, db) -> None:  # type: ignore[no-untyped-def]
        self._db = db
        self.sent: list[str] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._db, name)

    def run(self, tenant_id, party, statements, settings=None):  # type: ignore[no-untyped-def]
        with self._db.transaction() as cur:
            self.sent += [s.as_string(cur.connection) for s in statements]
        return self._db.run(tenant_id, party, statements, settings)


def test_a_population_counted_once_is_not_counted_again_and_the_results_are_the_same(
    api: Api,
    tenant,  # type: ignore[no-untyped-def]
    local_db: LocalDatabase,
    embedder: LocalEmbedder,
    vectors: list[list[float]],
) -> None:
    # Given memories, and a search service that records its statements
    _store(api, vectors, tagged={3})
    db = _Recording(local_db.app)
    service = MemorySearch(db, embedder)  # type: ignore[arg-type]
    request = SearchRequest(query="note", mode="hybrid", limit=5)

    # When the same population is searched twice
    first = service.search_with_vector(tenant.tenant_id, request, vectors[9], LOCAL_EMBEDDING_MODEL)
    second = service.search_with_vector(tenant.tenant_id, request, vectors[9], LOCAL_EMBEDDING_MODEL)

    # Then only the first search counts it (and plans both ways); both find the same, in the same order
    fused = [s for s in db.sent if s.startswith("WITH")]
    assert ["population AS MATERIALIZED" in s for s in fused] == [True, False]
    assert "::vector(384)" in fused[0] and "::vector(384)" not in fused[1]
    assert [(r.id, r.score) for r in second.results] == [(r.id, r.score) for r in first.results]


def test_a_text_search_lists_a_small_filtered_scope_and_not_again_one_found_large(
    api: Api,
    tenant,  # type: ignore[no-untyped-def]
    local_db: LocalDatabase,
    embedder: LocalEmbedder,
    vectors: list[list[float]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given 3 memories tagged "rare" and 37 "common", a scope cap of 5, and a service recording statements
    _store(api, vectors, tagged={3, 17, 29})
    monkeypatch.setattr(planner, "TEXT_SCOPE_CAP", 5)
    db = _Recording(local_db.app)
    service = MemorySearch(db, embedder)  # type: ignore[arg-type]

    def text(tag: str) -> list[str]:
        request = SearchRequest(query="note", mode="text", filters=SearchFilters(tags=[tag]), limit=50)
        return [str(r.id) for r in service.search(tenant.tenant_id, request).results]

    # When each filter is searched twice in text mode
    rare = [text("rare"), text("rare")]
    common = [text("common"), text("common")]

    # Then both rare searches list the scope (3 rows, under the cap) and return population 3; the common
    # scope is listed once, found larger than the cap, and then checked one by one without listing
    fused = [s for s in db.sent if s.startswith("WITH")]
    assert ["memory_scope_ids(6," in s for s in fused] == [True, True, True, False]
    assert len(set(rare[0])) == 3 and rare[0] == rare[1]
    assert len(common[0]) == 37 and common[0] == common[1]
