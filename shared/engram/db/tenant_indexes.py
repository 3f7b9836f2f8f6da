"""One HNSW index per large tenant, besides the shared one per embedding model.

A tenant's search filters the shared index by tenant: with ten tenants of one size, the iterative scan
walks about ten times the candidates it keeps, and the graph it walks is built over everyone's
vectors. A partial index `WHERE tenant_id = <id> AND embedding_model = <model>` holds only that
tenant's vectors, and the planner picks it (it is smaller) for that tenant's searches, which name the
tenant as a literal. `make bench` at 100K memories per tenant: p95 29 -> 15.5 ms on one tenant.

Indexes are made CONCURRENTLY (writes go on) by the owner: after migrations (`engram migrate`, the
deploy-time migrate function and its daily schedule, `engram local`). A tenant gets one once it holds
`tenant_index_min_rows` vectors of the model. Many partial indexes cost the planner time on every
query, so the threshold keeps them for the tenants that need them.

Such a tenant is then left out of the model's shared index (its predicate gains `tenant_id <> ALL(...)`),
rebuilt CONCURRENTLY under a new name and swapped in. Otherwise each of its writes pays two HNSW inserts,
the slower one into an index of everyone's vectors that none of its searches reads. The planner proves
that a search naming another tenant satisfies the predicate, so small tenants keep the shared index.
The rebuild is skipped (and logged) when the shared index would hold more than `shared_max_rows`
vectors: the migrate function must finish within its timeout.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from engram.db.container_indexes import ensure_container_indexes, per_tenant
from engram.db.migrate import MIGRATION_LOCK_KEY, create_partial_hnsw_index, embedding_index_name, of_model
from engram.observability import logger
from engram.settings import Settings

# PostgreSQL's predicate prover gives up on an ALL(array) of more than 100 elements (predtest.c,
# MAX_SAOP_ARRAY_SIZE): past that, no search could prove it may use the shared index.
MAX_LEFT_OUT = 100
INDEX_LOCK_KEY = MIGRATION_LOCK_KEY + 1
_LEFT_OUT = re.compile(r"tenant_id <> ALL \('\{([^}]*)\}'")


def tenant_index_name(tenant_id: UUID, model: str, dimensions: int) -> str:
    digest = hashlib.sha1(f"{model}:{dimensions}".encode(), usedforsecurity=False).hexdigest()[:8]
    return f"memories_t{tenant_id.hex}_{digest}_hnsw"  # 56 characters, under PostgreSQL's 63


@dataclass(frozen=True)
class IndexPolicy:
    """Which vector indexes a run makes for one embedding model: a tenant's own from `tenant_min_rows`
    of its vectors (0: none, and nothing else either), the shared index rebuilt without those tenants
    while it would hold at most `shared_max_rows`, and large containers' own from `container_min_rows`
    (engram.db.container_indexes; 0: none)."""

    model: str
    dimensions: int
    tenant_min_rows: int
    shared_max_rows: int
    container_min_rows: int

    @classmethod
    def of(cls, settings: Settings) -> IndexPolicy:
        return cls(
            settings.resolved_embedding_model,
            settings.resolved_embedding_dimensions,
            settings.tenant_index_min_rows,
            settings.shared_index_max_rows,
            settings.container_index_min_rows,
        )


def ensure_tenant_indexes(conninfo: str, policy: IndexPolicy) -> list[str]:
    """Create the missing indexes of tenants with at least `tenant_min_rows` vectors of the model (and
    rebuild any left invalid by an interrupted build), and of their large containers, then leave those
    tenants out of the shared index. Returns the names created."""
    if policy.tenant_min_rows <= 0:
        return []
    with psycopg.connect(conninfo, autocommit=True) as conn:  # CONCURRENTLY: outside a transaction
        # One run at a time (the deploy's migrate, its daily schedule, `engram local`): two would build
        # the same index names. A run that finds another at work leaves the indexes to it. The lock is
        # the session's: closing the connection releases it, whatever happened.
        locked = conn.execute("SELECT pg_try_advisory_lock(%s)", (INDEX_LOCK_KEY,)).fetchone()
        if not (locked and locked[0]):
            logger.info("vector indexes: another run is making them; leaving them to it")
            return []
        return _ensure(conn, policy)


def _ensure(conn: psycopg.Connection[Any], policy: IndexPolicy) -> list[str]:
    model, dimensions = policy.model, policy.dimensions
    created: list[str] = []
    with conn.transaction():
        # Row-level security is forced, so the owner (the RDS master user, no superuser) counts as
        # engram_search, whose policy reads every tenant's memories, private ones included (0001).
        conn.execute("SET LOCAL ROLE engram_search")
        counted = conn.execute(
            "SELECT tenant_id, container, count(*) FROM memories WHERE embedding_model = %s "
            "GROUP BY tenant_id, container ORDER BY tenant_id, container",
            (model,),
        ).fetchall()
    in_containers: dict[tuple[UUID, str], int] = {(t, c): n for t, c, n in counted}
    rows = per_tenant(in_containers)
    with_own_index = _with_valid_index(conn, rows, model, dimensions)
    for tenant_id in (t for t, n in rows.items() if n >= policy.tenant_min_rows and t not in with_own_index):
        name = tenant_index_name(tenant_id, model, dimensions)
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        where = sql.SQL("tenant_id = {} AND {}").format(sql.Literal(tenant_id), of_model(model))
        create_partial_hnsw_index(conn, name, dimensions, where)
        logger.info("tenant vector index created", extra={"index": name, "tenant_id": str(tenant_id)})
        created.append(name)
        with_own_index.add(tenant_id)
    created += ensure_container_indexes(
        conn, model, dimensions, in_containers, with_own_index, policy.container_min_rows
    )
    _leave_out_of_shared_index(conn, model, dimensions, rows, with_own_index, policy.shared_max_rows)
    return created


def tenants_to_leave_out(
    left_out: set[UUID], with_own_index: set[UUID], rows: Mapping[UUID, int]
) -> set[UUID]:
    """Who the shared index should leave out: those it leaves out now that still have a valid index of
    their own (so the set changes, and the index is rebuilt, only when it must), then the largest of
    the others, up to MAX_LEFT_OUT."""
    kept = left_out & with_own_index
    others = sorted(with_own_index - kept, key=lambda t: (-rows.get(t, 0), str(t)))
    return kept | set(others[: max(MAX_LEFT_OUT - len(kept), 0)])


def _leave_out_of_shared_index(
    conn: psycopg.Connection[Any],
    model: str,
    dimensions: int,
    rows: Mapping[UUID, int],
    with_own_index: set[UUID],
    max_rows: int,
) -> None:
    shared = embedding_index_name(model, dimensions)
    building, retired = f"{shared}_next", f"{shared}_prev"
    for leftover in (building, retired):  # from a run stopped between its steps
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(leftover)))
    predicate = conn.execute(
        "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i "
        "WHERE i.indexrelid = to_regclass(%s) AND i.indisvalid",
        (shared,),
    ).fetchone()
    if predicate is None:
        return  # no shared index for this model: nothing to leave anyone out of
    found = _LEFT_OUT.search(predicate[0] or "")
    left_out = {UUID(t) for t in found.group(1).split(",")} if found else set()
    wanted = tenants_to_leave_out(left_out, with_own_index, rows)
    if wanted == left_out:
        return
    remaining = sum(n for t, n in rows.items() if t not in wanted)
    if remaining > max_rows:
        logger.warning(
            "shared vector index not rebuilt: it would hold more vectors than shared_index_max_rows",
            extra={"index": shared, "rows": remaining, "max_rows": max_rows},
        )
        return
    where = of_model(model)
    if wanted:
        where = sql.SQL("{} AND tenant_id <> ALL ({}::uuid[])").format(
            where, sql.Literal(sorted(wanted, key=str))
        )
    create_partial_hnsw_index(conn, building, dimensions, where)
    with conn.transaction():  # renaming takes a lock that lets reads and writes go on
        conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(*map(sql.Identifier, (shared, retired))))
        conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(*map(sql.Identifier, (building, shared))))
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY {}").format(sql.Identifier(retired)))
    logger.info(
        "shared vector index rebuilt", extra={"index": shared, "left_out": len(wanted), "rows": remaining}
    )


def _with_valid_index(
    conn: psycopg.Connection[Any], tenants: Mapping[UUID, int], model: str, dimensions: int
) -> set[UUID]:
    """The tenants whose own index exists and is valid (one catalog query for all of them)."""
    names = {tenant_index_name(t, model, dimensions): t for t in tenants}
    valid = conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = ANY(%s) AND i.indisvalid",
        (list(names),),
    ).fetchall()
    return {names[name] for (name,) in valid}
