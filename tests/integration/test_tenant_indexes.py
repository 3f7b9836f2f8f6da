"""Per-tenant HNSW indexes: made for tenants past the threshold, idempotent, rebuilt when invalid, and
chosen by the planner for that tenant's vector search (run as the app role, under RLS); those tenants
left out of the model's shared index, which other tenants' searches still use."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import replace

import psycopg
import pytest
from psycopg import sql

from engram.db.database import EVERYONE
from engram.db.migrate import embedding_index_name, ensure_embedding_index, migrate
from engram.db.tenant_indexes import (
    INDEX_LOCK_KEY,
    MAX_LEFT_OUT,
    IndexPolicy,
    ensure_tenant_indexes,
    tenant_index_name,
    tenants_to_leave_out,
)
from engram.local.stack import LocalDatabase
from engram.memories import predicates, repo
from engram.memories.models import SearchFilters
from engram.memories.new_memory import Embedding, NewMemory
from engram.memories.predicates import ContainerScope
from engram.settings import Settings
from engram.tenants.service import IssuedKey
from tests.integration.owned_database import owned_database

MODEL, DIMS = "test-model-8", 8
NO_BOUND = 10**9
# Tenants of 50 vectors or more get their own index; no bound on the shared one; no container indexes.
POLICY = IndexPolicy(MODEL, DIMS, tenant_min_rows=50, shared_max_rows=NO_BOUND, container_min_rows=0)


def _vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIMS)]


def _store(local_db: LocalDatabase, tenant: IssuedKey, count: int, seed: int) -> None:
    rng = random.Random(seed)
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        for i in range(count):
            repo.insert_memory(
                cur, tenant.tenant_id, NewMemory(f"memory {i}", "default"), Embedding(_vector(rng), MODEL)
            )


def _index_exists(local_db: LocalDatabase, name: str) -> bool:
    with psycopg.connect(local_db.admin_conninfo) as conn:
        return conn.execute("SELECT 1 FROM pg_class WHERE relname = %s", (name,)).fetchone() is not None


def _index(local_db: LocalDatabase, name: str) -> tuple[int, str]:
    """(oid, predicate) of a valid index `name`."""
    with psycopg.connect(local_db.admin_conninfo) as conn:
        row = conn.execute(
            "SELECT i.indexrelid::int, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i "
            "WHERE i.indexrelid = to_regclass(%s) AND i.indisvalid",
            (name,),
        ).fetchone()
    assert row is not None, f"no valid index {name}"
    return row[0], row[1]


def search_plan(local_db: LocalDatabase, tenant: IssuedKey, container: ContainerScope | None = None) -> str:
    """The plan of the vector search's shape for `tenant` (in `container`), with the search's own
    predicates, as the app role under RLS."""
    query = sql.SQL(
        "EXPLAIN SELECT m.id FROM memories m WHERE {where} AND m.embedding_model = {model} "
        "ORDER BY m.embedding::vector(8) <=> {q}::vector(8) LIMIT 5"
    ).format(
        where=predicates.where(tenant.tenant_id, container, SearchFilters()),
        model=sql.Literal(MODEL),
        q=sql.Literal(str(_vector(random.Random(3)))),
    )
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        # Whether a scan of the tenant's rows plus a sort looks cheaper than the walk depends on the
        # table's statistics, which the other tests' rows and autovacuum's timing decide (it once
        # estimated 1 row for the tenant and sorted). Without those paths, the plan shows which index
        # serves the search's shape (its predicate, its expression, its order).
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL enable_sort = off")
        return "\n".join(str(row["QUERY PLAN"]) for row in cur.execute(query).fetchall())


def test_large_tenants_get_an_index_that_their_searches_use(
    local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    _store(local_db, tenant, 60, seed=1)
    _store(local_db, other_tenant, 5, seed=2)
    big = tenant_index_name(tenant.tenant_id, MODEL, DIMS)
    small = tenant_index_name(other_tenant.tenant_id, MODEL, DIMS)

    created = ensure_tenant_indexes(local_db.admin_conninfo, POLICY)
    again = ensure_tenant_indexes(local_db.admin_conninfo, POLICY)

    assert created == [big] and again == []
    assert _index_exists(local_db, big) and not _index_exists(local_db, small)
    assert ensure_tenant_indexes(local_db.admin_conninfo, replace(POLICY, tenant_min_rows=0)) == []
    plan = search_plan(local_db, tenant)
    assert big in plan, plan


def test_an_index_left_invalid_is_built_again(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    _store(local_db, tenant, 55, seed=4)
    (name,) = ensure_tenant_indexes(local_db.admin_conninfo, POLICY)
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        # What an interrupted CREATE INDEX CONCURRENTLY leaves behind.
        conn.execute(
            "UPDATE pg_index SET indisvalid = false "
            "WHERE indexrelid = (SELECT oid FROM pg_class WHERE relname = %s)",
            (name,),
        )

    assert ensure_tenant_indexes(local_db.admin_conninfo, POLICY) == [name]
    _index(local_db, name)  # valid again


@pytest.fixture
def shared_index(local_db: LocalDatabase) -> Iterator[str]:
    """The test model's shared index (migrations make one for the configured model only)."""
    name = embedding_index_name(MODEL, DIMS)
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        ensure_embedding_index(conn, MODEL, DIMS)
    yield name
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))


def test_tenants_with_their_own_index_are_left_out_of_the_shared_one(
    local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey, shared_index: str
) -> None:
    _store(local_db, tenant, 60, seed=5)
    _store(local_db, other_tenant, 5, seed=6)
    before, _ = _index(local_db, shared_index)

    ensure_tenant_indexes(local_db.admin_conninfo, POLICY)

    rebuilt, predicate = _index(local_db, shared_index)
    assert rebuilt != before
    assert str(tenant.tenant_id) in predicate and str(other_tenant.tenant_id) not in predicate
    assert not _index_exists(local_db, f"{shared_index}_next")
    assert not _index_exists(local_db, f"{shared_index}_prev")
    # The small tenant's search can still prove the predicate and use the shared index; the large
    # tenant's uses its own (the shared one no longer holds its rows, so may not serve it).
    assert shared_index in search_plan(local_db, other_tenant)
    plan = search_plan(local_db, tenant)
    assert tenant_index_name(tenant.tenant_id, MODEL, DIMS) in plan and shared_index not in plan
    # Nothing changed since: no rebuild.
    ensure_tenant_indexes(local_db.admin_conninfo, POLICY)
    assert _index(local_db, shared_index) == (rebuilt, predicate)


def test_the_shared_index_is_not_rebuilt_past_its_row_bound(
    local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey, shared_index: str
) -> None:
    _store(local_db, tenant, 60, seed=7)
    _store(local_db, other_tenant, 5, seed=8)
    before = _index(local_db, shared_index)

    ensure_tenant_indexes(local_db.admin_conninfo, replace(POLICY, shared_max_rows=4))

    assert _index(local_db, shared_index) == before
    assert _index_exists(local_db, tenant_index_name(tenant.tenant_id, MODEL, DIMS))


def test_who_is_left_out_changes_only_when_it_must() -> None:
    a, b, c, gone = (uuid.uuid4() for _ in range(4))
    rows = {a: 500, b: 900, c: 700}
    # Already left out and still indexed: kept; no longer indexed: back in; new ones: added.
    assert tenants_to_leave_out({a, gone}, {a, b, c}, rows) == {a, b, c}
    many = {uuid.uuid4(): 1_000 + i for i in range(MAX_LEFT_OUT + 5)}
    chosen = tenants_to_leave_out(set(), set(many), many)
    assert chosen == set(sorted(many, key=many.__getitem__, reverse=True)[:MAX_LEFT_OUT])
    # At the cap, the ones left out stay left out, even if a newcomer is larger.
    newcomer = uuid.uuid4()
    grown = {**many, newcomer: 10**6}
    assert tenants_to_leave_out(chosen, set(grown), grown) == chosen


def test_a_run_that_finds_another_at_work_leaves_the_indexes_to_it(
    local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    _store(local_db, tenant, 55, seed=9)
    name = tenant_index_name(tenant.tenant_id, MODEL, DIMS)
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as other_run:
        other_run.execute("SELECT pg_advisory_lock(%s)", (INDEX_LOCK_KEY,))
        assert ensure_tenant_indexes(local_db.admin_conninfo, POLICY) == []
        assert not _index_exists(local_db, name)
    # That run's connection is gone, and its lock with it.
    assert ensure_tenant_indexes(local_db.admin_conninfo, POLICY) == [name]


def test_the_owner_counts_every_users_memories_when_it_picks_tenants(
    local_db: LocalDatabase, settings: Settings
) -> None:
    # Given a database migrated by an owner that is no superuser (as on RDS), where a tenant holds
    # past the threshold of memories, all private to one user
    with owned_database(local_db, "idx") as database:
        migrate(database.owner, settings.migrations_dir)
        rng = random.Random(5)
        with psycopg.connect(database.admin, autocommit=True) as conn:
            tenant_id = conn.execute("INSERT INTO tenants (name) VALUES ('private') RETURNING id").fetchone()
            assert tenant_id is not None
            conn.execute("INSERT INTO containers (tenant_id, name) VALUES (%s, 'default')", tenant_id)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memories (tenant_id, container, content, visibility, user_id, embedding, "
                    "embedding_model) VALUES (%s, 'default', %s, 'private', 'u1', %s::vector, %s)",
                    [(tenant_id[0], f"memory {i}", str(_vector(rng)), MODEL) for i in range(60)],
                )

        # When the owner makes the tenants' indexes, as the deploy's migrate function does
        created = ensure_tenant_indexes(database.owner, POLICY)

    # Then that tenant gets its own: the owner saw its memories under forced row-level security
    assert created == [tenant_index_name(tenant_id[0], MODEL, DIMS)]
