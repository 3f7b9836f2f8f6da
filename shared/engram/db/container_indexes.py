"""One HNSW index per large container of a large tenant, besides the tenant's own.

A search of one container of a few thousand rows either scans them all exactly (every row's page is read)
or walks the tenant's index, checking each entry it meets against the container on the heap. At 100K
memories per tenant (`make bench`), the first search of a 2.5K-row container read 2.5K pages from outside
shared buffers and took 15-25 ms. A partial index `WHERE tenant_id = … AND embedding_model = … AND
container = …` holds only that container's vectors: the walk meets no one else's, and the planner picks
it (it is smaller) for a search naming that container. The search planner (engram.memories.search.planner)
sizes its choice between the exact scan and the walk by it.

A scope is a container by its exact name ('crm.notes'), or a name with everything below it ('crm.*': its
index's predicate is the range `container >= 'crm' AND container < 'crm/'`, which the search's
`container = 'crm' OR (container > 'crm.' AND container < 'crm/')` implies; it also holds a sibling named
'crm-…', if any, which the search's own predicate then leaves out). Which scopes: in a tenant
with an index of its own (engram.db.tenant_indexes), each holding at least `min_rows` vectors of the model
and at most 1/MAX_SHARE of the tenant's (above that share, the tenant's walk keeps most of the entries it
meets); not 'a.*' when one part of it (container 'a', or one 'a.b.*') holds all of its rows. An index is
kept until its scope falls below half of `min_rows` or above twice the share, so that a scope near a line
is not built and dropped in turn. At most MAX_CONTAINER_INDEXES per model (the ones already made first,
then the largest): each partial index adds a little planning time to every search of the table.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from engram.db.migrate import create_partial_hnsw_index, of_model
from engram.observability import logger

MAX_SHARE = 5
MAX_CONTAINER_INDEXES = 100
WITH_CHILDREN = ".*"
_PREDICATE = re.compile(
    r"tenant_id = '([0-9a-f-]{36})'::uuid\) AND \(embedding_model = '((?:[^']|'')*)'::text\) "
    r"AND \(container (=|>=) '((?:[^']|'')*)'::text\)"
)

Key = tuple[UUID, str]  # (tenant, container or scope)


def index_scope(name: str, with_children: bool) -> str:
    """The scope of a search of container `name` (and of everything below it)."""
    return name + WITH_CHILDREN if with_children else name


def container_index_name(tenant_id: UUID, model: str, dimensions: int, scope: str) -> str:
    digest = hashlib.sha1(
        f"{tenant_id}:{model}:{dimensions}:{scope}".encode(), usedforsecurity=False
    ).hexdigest()
    return f"memories_c{digest[:24]}_hnsw"  # 39 characters: any container name fits PostgreSQL's 63


def per_tenant(rows: Mapping[Key, int]) -> dict[UUID, int]:
    """The vectors per tenant, from those per tenant and container."""
    totals: dict[UUID, int] = {}
    for (tenant_id, _), n in rows.items():
        totals[tenant_id] = totals.get(tenant_id, 0) + n
    return totals


def scope_rows(rows: Mapping[Key, int]) -> dict[Key, int]:
    """The vectors per tenant and scope, from those per tenant and container: each container, and each
    name on a container's path with everything below it, unless one part of it holds all of its rows."""
    scopes: dict[Key, int] = {}
    for (tenant_id, container), n in rows.items():
        scopes[(tenant_id, container)] = scopes.get((tenant_id, container), 0) + n
        parts = container.split(".")
        for depth in range(1, len(parts) + 1):
            key = (tenant_id, ".".join(parts[:depth]) + WITH_CHILDREN)
            scopes[key] = scopes.get(key, 0) + n
    largest_part: dict[Key, int] = {}
    for (tenant_id, scope), n in scopes.items():
        if scope.endswith(WITH_CHILDREN):  # a part of its parent's 'a.*', if it has a parent
            parent = scope.removesuffix(WITH_CHILDREN).rpartition(".")[0]
            whole = (tenant_id, parent + WITH_CHILDREN) if parent else None
        else:  # the container 'a' is a part of 'a.*'
            whole = (tenant_id, scope + WITH_CHILDREN)
        if whole is not None:
            largest_part[whole] = max(largest_part.get(whole, 0), n)
    return {key: n for key, n in scopes.items() if n > largest_part.get(key, 0)}


def scopes_to_index(
    rows: Mapping[Key, int], with_own_index: set[UUID], indexed: set[Key], min_rows: int
) -> set[Key]:
    """Which scopes should have an index, from the vectors per tenant and container (`rows`): those that
    have one and still qualify (the looser bounds), then the largest of the others that qualify, up to
    MAX_CONTAINER_INDEXES."""
    tenant_rows = per_tenant(rows)
    scopes = scope_rows(rows)

    def qualifies(key: Key, least: int, share: float) -> bool:
        n = scopes.get(key, 0)
        return key[0] in with_own_index and n >= least and n * share <= tenant_rows.get(key[0], 0)

    by_size = _largest(scopes)
    kept = sorted((k for k in indexed if qualifies(k, (min_rows + 1) // 2, MAX_SHARE / 2)), key=by_size)
    new = sorted((k for k in scopes if k not in indexed and qualifies(k, min_rows, MAX_SHARE)), key=by_size)
    return set((kept + new)[:MAX_CONTAINER_INDEXES])


def ensure_container_indexes(
    conn: psycopg.Connection[Any],
    model: str,
    dimensions: int,
    rows: Mapping[Key, int],
    with_own_index: set[UUID],
    min_rows: int,
) -> list[str]:
    """Make the indexes of the scopes that should have one (and rebuild any left invalid), drop those of
    scopes that no longer should. `rows`: the vectors of `model` per tenant and container. Returns the
    names created. `min_rows` 0: none made, none dropped."""
    if min_rows <= 0:
        return []
    existing = _existing(conn, model, dimensions)
    wanted = scopes_to_index(rows, with_own_index, set(existing), min_rows)
    created: list[str] = []
    for tenant_id, scope in sorted(wanted - {k for k, valid in existing.items() if valid}):
        name = container_index_name(tenant_id, model, dimensions, scope)
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        where = sql.SQL("tenant_id = {} AND {} AND {}").format(
            sql.Literal(tenant_id), of_model(model), _in_scope(scope)
        )
        create_partial_hnsw_index(conn, name, dimensions, where)
        logger.info("container vector index created", extra={"index": name, "tenant_id": str(tenant_id)})
        created.append(name)
    for tenant_id, scope in sorted(set(existing) - wanted):
        name = container_index_name(tenant_id, model, dimensions, scope)
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        logger.info("container vector index dropped", extra={"index": name, "tenant_id": str(tenant_id)})
    return created


def _existing(conn: psycopg.Connection[Any], model: str, dimensions: int) -> dict[Key, bool]:
    """The container indexes of `model` there are, read from their predicates: (tenant, scope) ->
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
        of, container = (parsed.group(i).replace("''", "'") for i in (2, 4))
        scope = index_scope(container, with_children=parsed.group(3) == ">=")
        if of == model and name == container_index_name(tenant_id, model, dimensions, scope):
            found[(tenant_id, scope)] = bool(valid)
    return found


def _in_scope(scope: str) -> sql.Composable:
    """The index's predicate on the container: the name, or (with its children) one range that the
    search's predicate for 'a.*' implies (engram.memories.predicates.in_container; '.' + 1 = '/')."""
    if not scope.endswith(WITH_CHILDREN):
        return sql.SQL("container = {}").format(sql.Literal(scope))
    name = scope.removesuffix(WITH_CHILDREN)
    return sql.SQL("container >= {} AND container < {}").format(sql.Literal(name), sql.Literal(name + "/"))


def _largest(rows: Mapping[Key, int]) -> Any:
    return lambda key: (-rows.get(key, 0), str(key[0]), key[1])
