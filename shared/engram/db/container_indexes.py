"""One HNSW index per large container of a large tenant, besides the tenant's own.

A search of one container of a few thousand rows either scans them all exactly (every row's page is read)
or walks the tenant's index, checking each entry it meets against the container on the heap. At 100K
memories per tenant (`make bench`), the first search of a 2.5K-row container read 2.5K pages from outside
shared buffers and took 15-25 ms. A partial index `WHERE tenant_id = … AND embedding_model = … AND
container = …` holds only that container's vectors: the walk meets no one else's, and the planner picks
it (it is smaller) for a search naming that container. The search planner (engram.memories.search.planner)
sizes its choice between the exact scan and the walk by it.

Which containers: in a tenant with an index of its own (engram.db.tenant_indexes), each container (by its
exact name: a search of a container with its children cannot use it) holding at least `min_rows` vectors
of the model and at most 1/MAX_SHARE of the tenant's. Above that share, the tenant's walk keeps most of
the entries it meets. An index is kept until its container falls below half of `min_rows` or above twice
the share, so that a container near a line is not built and dropped in turn. At most
MAX_CONTAINER_INDEXES per model (the ones already made first, then the largest): each partial index adds
a little planning time to every search of the table.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from engram.db.migrate import hnsw_index_body, of_model
from engram.observability import logger

MAX_SHARE = 5
MAX_CONTAINER_INDEXES = 100
_PREDICATE = re.compile(
    r"tenant_id = '([0-9a-f-]{36})'::uuid\) AND \(embedding_model = '((?:[^']|'')*)'::text\) "
    r"AND \(container = '((?:[^']|'')*)'::text\)"
)

Key = tuple[UUID, str]  # (tenant, container)


def container_index_name(tenant_id: UUID, model: str, dimensions: int, container: str) -> str:
    digest = hashlib.sha1(
        f"{tenant_id}:{model}:{dimensions}:{container}".encode(), usedforsecurity=False
    ).hexdigest()[:24]
    return f"memories_c{digest}_hnsw"  # 39 characters: any container name fits PostgreSQL's 63


def containers_to_index(
    rows: Mapping[Key, int], with_own_index: set[UUID], indexed: set[Key], min_rows: int
) -> set[Key]:
    """Which containers should have an index: those that have one and still qualify (the looser bounds),
    then the largest of the others that qualify, up to MAX_CONTAINER_INDEXES."""
    tenant_rows: dict[UUID, int] = {}
    for (tenant_id, _), n in rows.items():
        tenant_rows[tenant_id] = tenant_rows.get(tenant_id, 0) + n

    def qualifies(key: Key, least: int, share: float) -> bool:
        n = rows.get(key, 0)
        return key[0] in with_own_index and n >= least and n * share <= tenant_rows[key[0]]

    kept = sorted(
        (k for k in indexed if qualifies(k, (min_rows + 1) // 2, MAX_SHARE / 2)), key=_largest(rows)
    )
    new = sorted(
        (k for k in rows if k not in indexed and qualifies(k, min_rows, MAX_SHARE)), key=_largest(rows)
    )
    return set((kept + new)[:MAX_CONTAINER_INDEXES])


def ensure_container_indexes(
    conn: psycopg.Connection[Any],
    model: str,
    dimensions: int,
    rows: Mapping[Key, int],
    with_own_index: set[UUID],
    min_rows: int,
) -> list[str]:
    """Make the indexes of the containers that should have one (and rebuild any left invalid), drop
    those of containers that no longer should. `rows`: the vectors of `model` per tenant and container.
    Returns the names created. `min_rows` 0: none made, none dropped."""
    if min_rows <= 0:
        return []
    existing = _existing(conn, model, dimensions)
    wanted = containers_to_index(rows, with_own_index, set(existing), min_rows)
    created: list[str] = []
    for tenant_id, container in sorted(wanted - {k for k, valid in existing.items() if valid}):
        name = container_index_name(tenant_id, model, dimensions, container)
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        where = sql.SQL("tenant_id = {} AND {} AND container = {}").format(
            sql.Literal(tenant_id), of_model(model), sql.Literal(container)
        )
        conn.execute(
            sql.SQL("CREATE INDEX CONCURRENTLY {name} {body} WHERE {where}").format(
                name=sql.Identifier(name), body=hnsw_index_body(dimensions), where=where
            )
        )
        logger.info("container vector index created", extra={"index": name, "tenant_id": str(tenant_id)})
        created.append(name)
    for tenant_id, container in sorted(set(existing) - wanted):
        name = container_index_name(tenant_id, model, dimensions, container)
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        logger.info("container vector index dropped", extra={"index": name, "tenant_id": str(tenant_id)})
    return created


def _existing(conn: psycopg.Connection[Any], model: str, dimensions: int) -> dict[Key, bool]:
    """The container indexes of `model` there are, read from their predicates: (tenant, container) ->
    whether the index is valid. An index is taken as ours only under the name this module gives it."""
    found: dict[Key, bool] = {}
    for name, predicate, valid in conn.execute(
        "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid), i.indisvalid FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid "
        r"WHERE i.indrelid = 'memories'::regclass AND c.relname LIKE 'memories\_c%\_hnsw'"
    ).fetchall():
        parsed = _PREDICATE.search(predicate or "")
        if parsed is None:
            continue
        tenant_id = UUID(parsed.group(1))
        of, container = (parsed.group(i).replace("''", "'") for i in (2, 3))
        if of == model and name == container_index_name(tenant_id, model, dimensions, container):
            found[(tenant_id, container)] = bool(valid)
    return found


def _largest(rows: Mapping[Key, int]) -> Any:
    return lambda key: (-rows.get(key, 0), str(key[0]), key[1])
