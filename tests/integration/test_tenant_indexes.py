"""Per-tenant HNSW indexes: made for tenants past the threshold, idempotent, rebuilt when invalid, and
chosen by the planner for that tenant's vector search (run as the app role, under RLS)."""

from __future__ import annotations

import random

import psycopg
from psycopg import sql

from engram.db.database import EVERYONE
from engram.db.tenant_indexes import ensure_tenant_indexes, tenant_index_name
from engram.local.stack import LocalDatabase
from engram.memories import repo
from engram.memories.new_memory import Embedding, NewMemory
from engram.tenants.service import IssuedKey

MODEL, DIMS = "test-model-8", 8


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


def test_large_tenants_get_an_index_that_their_searches_use(
    local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    _store(local_db, tenant, 60, seed=1)
    _store(local_db, other_tenant, 5, seed=2)
    big = tenant_index_name(tenant.tenant_id, MODEL, DIMS)
    small = tenant_index_name(other_tenant.tenant_id, MODEL, DIMS)

    created = ensure_tenant_indexes(local_db.admin_conninfo, MODEL, DIMS, min_rows=50)
    again = ensure_tenant_indexes(local_db.admin_conninfo, MODEL, DIMS, min_rows=50)

    assert created == [big] and again == []
    assert _index_exists(local_db, big) and not _index_exists(local_db, small)
    assert ensure_tenant_indexes(local_db.admin_conninfo, MODEL, DIMS, min_rows=0) == []
    query = sql.SQL(
        "EXPLAIN SELECT m.id FROM memories m WHERE m.tenant_id = {t} AND m.embedding_model = {model} "
        "ORDER BY m.embedding::vector(8) <=> {q}::vector(8) LIMIT 5"
    ).format(
        t=sql.Literal(tenant.tenant_id),
        model=sql.Literal(MODEL),
        q=sql.Literal(str(_vector(random.Random(3)))),
    )
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        # Whether a scan of the tenant's rows plus a sort looks cheaper than the walk depends on the
        # table's statistics, which the other tests' rows and autovacuum's timing decide (it once
        # estimated 1 row for the tenant and sorted). Without those paths, the plan shows whether the
        # tenant's index serves the search's shape (its predicate, its expression, its order).
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(str(row["QUERY PLAN"]) for row in cur.execute(query).fetchall())
    assert big in plan, plan


def test_an_index_left_invalid_is_built_again(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    _store(local_db, tenant, 55, seed=4)
    (name,) = ensure_tenant_indexes(local_db.admin_conninfo, MODEL, DIMS, min_rows=50)
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        # What an interrupted CREATE INDEX CONCURRENTLY leaves behind.
        conn.execute(
            "UPDATE pg_index SET indisvalid = false "
            "WHERE indexrelid = (SELECT oid FROM pg_class WHERE relname = %s)",
            (name,),
        )

    assert ensure_tenant_indexes(local_db.admin_conninfo, MODEL, DIMS, min_rows=50) == [name]
    with psycopg.connect(local_db.admin_conninfo) as conn:
        row = conn.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s",
            (name,),
        ).fetchone()
    assert row == (True,)
