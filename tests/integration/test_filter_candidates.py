"""memory_filter_candidates (0009): the time scope and the user rule of search, and the exact scan
it runs for tag and metadata filters, against the real database; and the vector leg using it."""

from __future__ import annotations

import random
from typing import Any
from uuid import UUID

import pytest

from engram.db.database import EVERYONE, NOBODY, Party
from engram.local.stack import LocalDatabase
from engram.settings import LOCAL_EMBEDDING_MODEL
from engram.tenants.service import IssuedKey
from tests.conftest import Api

JAN_5, JAN_9 = "2026-01-05T09:00:00Z", "2026-01-09T09:00:00Z"
CANDIDATES_SQL = (
    "SELECT id, distance FROM memory_filter_candidates(%(model)s, %(limit)s, NULL, false, NULL, "
    "%(tags)s::text[], NULL, NULL, NULL, %(as_of)s::timestamptz, %(history)s, %(query)s::vector)"
)


def _vector(rng: random.Random) -> list[float]:
    raw = [rng.gauss(0, 1) for _ in range(384)]
    norm = sum(x * x for x in raw) ** 0.5
    return [x / norm for x in raw]


def _near(base: list[float], rng: random.Random, noise: float) -> list[float]:
    raw = [x + rng.gauss(0, noise) for x in base]
    norm = sum(x * x for x in raw) ** 0.5
    return [x / norm for x in raw]


def _literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(x) for x in vector) + "]"


def _store(api: Api, content: str, vector: list[float], **extra: Any) -> str:
    body = {"content": content, "embedding": vector, "embedding_model": LOCAL_EMBEDDING_MODEL, **extra}
    response = api.post("/v1/memories", body)
    assert response.status == 201, response.json
    return str(response.json["id"])


def _candidates(
    local_db: LocalDatabase,
    tenant_id: UUID,
    party: Party = NOBODY,
    *,
    tags: list[str] | None = None,
    as_of: str | None = None,
    history: bool = False,
    query: list[float] | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    params = {
        "model": LOCAL_EMBEDDING_MODEL,
        "limit": limit,
        "tags": tags or ["rare"],
        "as_of": as_of,
        "history": history,
        "query": _literal(query) if query else None,
    }
    with local_db.app.tenant(tenant_id, party) as cur:
        return list(cur.execute(CANDIDATES_SQL, params).fetchall())


@pytest.fixture
def rng() -> random.Random:
    return random.Random(11)


@pytest.fixture
def versions(api: Api, rng: random.Random) -> tuple[str, str]:
    """Alice lived in Paris from 5 January, then in Berlin from 9 January (which superseded it)."""
    paris = _store(api, "Alice lives in Paris", _vector(rng), tags=["rare"], valid_from=JAN_5)
    berlin = _store(
        api, "Alice moved to Berlin", _vector(rng), tags=["rare"], valid_from=JAN_9, supersedes=paris
    )
    return paris, berlin


def test_filter_candidates_follow_the_time_scope(
    versions: tuple[str, str], tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    paris, berlin = versions

    def ids(**scope: Any) -> set[str]:
        return {str(r["id"]) for r in _candidates(local_db, tenant.tenant_id, **scope)}

    assert ids() == {berlin}
    assert ids(history=True) == {paris, berlin}
    assert ids(as_of="2026-01-06T12:00:00Z") == {paris}
    assert ids(as_of="2026-01-10T12:00:00Z") == {berlin}
    assert ids(as_of="2025-12-31T00:00:00Z") == set()


def test_filter_candidates_skip_a_reverted_version_in_history(
    api: Api, versions: tuple[str, str], tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    paris, berlin = versions
    assert api.post(f"/v1/memories/{paris}/revert").status == 200

    history = {str(r["id"]) for r in _candidates(local_db, tenant.tenant_id, history=True)}
    current = {str(r["id"]) for r in _candidates(local_db, tenant.tenant_id)}

    assert berlin not in history
    assert history == current == {paris}


def test_filter_candidates_never_return_another_users_private_memory(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, rng: random.Random
) -> None:
    secret = _store(
        api, "Alice's locker code", _vector(rng), tags=["rare"], user_id="alice", visibility="private"
    )
    mine = _store(api, "Bob's own note", _vector(rng), tags=["rare"], user_id="bob", visibility="private")
    shared = _store(api, "The office opens at 8", _vector(rng), tags=["rare"], user_id="alice")

    def ids(party: Party) -> set[str]:
        return {str(r["id"]) for r in _candidates(local_db, tenant.tenant_id, party)}

    assert ids(Party(user_id="bob")) == {mine, shared}
    assert ids(Party(user_id="alice")) == {secret, shared}
    assert ids(NOBODY) == {shared}
    assert ids(EVERYONE) == {secret, mine, shared}


def test_filter_candidates_with_a_query_are_the_exact_nearest_first(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, rng: random.Random
) -> None:
    query = _vector(rng)
    stored = {_store(api, f"note {i}", _vector(rng), tags=["rare"]): i for i in range(12)}
    _store(api, "untagged", query, tags=["common"])

    rows = _candidates(local_db, tenant.tenant_id, query=query, limit=5)
    every = _candidates(local_db, tenant.tenant_id, query=query)

    distances = [r["distance"] for r in every]
    assert len(every) == 12 and set(map(str, (r["id"] for r in every))) == set(stored)
    assert distances == sorted(distances)
    assert [r["id"] for r in rows] == [r["id"] for r in every[:5]]
    assert all(0.0 <= d <= 2.0 for d in distances)


def test_filtered_vector_search_uses_the_time_scope(api: Api, versions: tuple[str, str]) -> None:
    paris, berlin = versions

    def found(**scope: Any) -> list[str]:
        body = {
            "query": "where does Alice live",
            "mode": "vector",
            "filters": {"tags": ["rare"]},
            "embedding": _vector(random.Random(3)),
            "embedding_model": LOCAL_EMBEDDING_MODEL,
            **scope,
        }
        response = api.post("/v1/search", body)
        assert response.status == 200, response.json
        return [r["id"] for r in response.json["results"]]

    assert found() == [berlin]
    assert set(found(include_history=True)) == {paris, berlin}
    assert found(as_of="2026-01-06T12:00:00Z") == [paris]
    assert found(as_of="2026-01-10T12:00:00Z") == [berlin]
    assert found(as_of="2025-12-31T00:00:00Z") == []


def test_other_users_private_memories_take_no_candidate_slots(api: Api, rng: random.Random) -> None:
    """Fifty private memories of Alice lie nearer the query than Bob's three shared ones: the vector
    leg's 40 candidates must be Bob's, not rows that RLS would then drop."""
    query = _vector(rng)
    for i in range(50):
        _store(
            api,
            f"Alice's secret {i}",
            _near(query, rng, 0.01),
            tags=["rare"],
            user_id="alice",
            visibility="private",
        )
    shared = {_store(api, f"shared note {i}", _vector(rng), tags=["rare"]) for i in range(3)}

    response = api.post(
        "/v1/search",
        {
            "query": "note",
            "mode": "vector",
            "limit": 3,
            "user_id": "bob",
            "filters": {"tags": ["rare"]},
            "embedding": query,
            "embedding_model": LOCAL_EMBEDDING_MODEL,
        },
    )

    assert response.status == 200, response.json
    assert {r["id"] for r in response.json["results"]} == shared
