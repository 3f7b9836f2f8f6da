"""The only code that runs SQL on the container tree. Maintenance here (counting, deleting,
archiving) runs with the party EVERYONE: it acts on every user's memories of the one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg import sql

from engram.db import restore
from engram.db.database import TenantTx
from engram.memories import predicates
from engram.memories.predicates import ContainerScope
from engram.memories.repo import ensure_container


def _subtree(alias: str, column: str, name: str) -> sql.Composable:
    """`name` and everything below it."""
    return predicates.in_container(ContainerScope.subtree(name), alias, column)


def tree_rows(cur: TenantTx, tenant_id: UUID) -> list[dict[str, Any]]:
    """Every container with the number of current memories directly in it."""
    return cur.execute(
        sql.SQL(
            "SELECT c.name, c.parent, c.description, c.created_at, coalesce(n.count, 0) AS memory_count "
            "FROM containers c LEFT JOIN (SELECT m.container, count(*) AS count FROM memories m "
            "  WHERE m.tenant_id = %(tenant)s AND {live} GROUP BY m.container) n ON n.container = c.name "
            "WHERE c.tenant_id = %(tenant)s ORDER BY c.name"
        ).format(live=predicates.current()),
        {"tenant": tenant_id},
    ).fetchall()


def get(cur: TenantTx, tenant_id: UUID, name: str) -> dict[str, Any] | None:
    return cur.execute(
        "SELECT name, parent, description, created_at FROM containers WHERE tenant_id = %s AND name = %s",
        (tenant_id, name),
    ).fetchone()


def create(cur: TenantTx, tenant_id: UUID, name: str, description: str | None) -> tuple[dict[str, Any], bool]:
    """Create `name` (and any missing ancestor) or set its description; None creates it without one and
    keeps an existing container's. True when it is new."""
    parent = name.rpartition(".")[0] or None
    if parent is not None:
        ensure_container(cur, tenant_id, parent)
    row = cur.execute(
        "INSERT INTO containers AS c (tenant_id, name, parent, description) "
        "VALUES (%s, %s, %s, coalesce(%s::text, '')) "
        "ON CONFLICT (tenant_id, name) DO UPDATE SET description = coalesce(%s::text, c.description) "
        "RETURNING c.name, c.parent, c.description, c.created_at, (xmax = 0) AS created",
        (tenant_id, name, parent, description, description),
    ).fetchone()
    assert row is not None
    created = bool(row.pop("created"))
    return row, created


def count_contents(cur: TenantTx, tenant_id: UUID, name: str) -> tuple[int, int, int]:
    """(memories of any version, sub-containers, documents) in `name` and below."""
    row = cur.execute(
        sql.SQL(
            "SELECT (SELECT count(*) FROM memories m WHERE m.tenant_id = %(tenant)s AND {memories}) "
            "AS memories, "
            "(SELECT count(*) FROM containers c WHERE c.tenant_id = %(tenant)s AND {containers}) - 1 "
            "AS containers, "
            "(SELECT count(*) FROM documents d WHERE d.tenant_id = %(tenant)s AND {documents}) AS documents"
        ).format(
            memories=_subtree("m", "container", name),
            containers=_subtree("c", "name", name),
            documents=_subtree("d", "container", name),
        ),
        {"tenant": tenant_id},
    ).fetchone()
    assert row is not None
    return int(row["memories"]), int(row["containers"]), int(row["documents"])


def delete_subtree(cur: TenantTx, tenant_id: UUID, name: str) -> tuple[int, int, list[UUID]]:
    """Delete `name`, everything below it, all their memories (relationships cascade) and documents
    (their chunks and sources cascade). Returns (containers, memories, the documents' ids)."""
    cur.execute(
        sql.SQL("DELETE FROM memories m WHERE m.tenant_id = %s AND {}").format(
            _subtree("m", "container", name)
        ),
        (tenant_id,),
    )
    memories = cur.rowcount
    documents = cur.execute(
        sql.SQL("DELETE FROM documents d WHERE d.tenant_id = %s AND {} RETURNING d.id").format(
            _subtree("d", "container", name)
        ),
        (tenant_id,),
    ).fetchall()
    # One statement: the parent/child foreign key is checked at its end, when all are gone.
    cur.execute(
        sql.SQL("DELETE FROM containers c WHERE c.tenant_id = %s AND {}").format(_subtree("c", "name", name)),
        (tenant_id,),
    )
    return cur.rowcount, memories, [row["id"] for row in documents]


def _move_with_provenance(cur: TenantTx, table: str, tenant_id: UUID, name: str, into: str) -> int:
    """Move the rows of `table` in `name` and below into `into`, appending where each came from to
    metadata.archived_from. Returns how many moved."""
    cur.execute(
        sql.SQL(
            "UPDATE {table} t SET container = %(into)s, updated_at = now(), metadata = jsonb_set("
            # archived_at in UTC with a Z, as the API writes every timestamp (to_jsonb(now()) wrote +00:00)
            "  t.metadata || jsonb_build_object('archived_at', "
            "    to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')), "
            "  '{{archived_from}}', "
            "  coalesce(t.metadata -> 'archived_from', '[]'::jsonb) || to_jsonb(t.container::text)) "
            "WHERE t.tenant_id = %(tenant)s AND {subtree}"
        ).format(table=sql.Identifier(table), subtree=_subtree("t", "container", name)),
        {"tenant": tenant_id, "into": into},
    )
    return cur.rowcount


def archive_subtree(cur: TenantTx, tenant_id: UUID, name: str, into: str) -> tuple[list[str], int, int]:
    """Move every memory and document of `name` and below into `into`, appending where it came from
    to metadata.archived_from; point conversations that extract there at `into`; drop the containers.
    Returns (the containers removed, memories moved, documents moved)."""
    moved = _move_with_provenance(cur, "memories", tenant_id, name, into)
    # Documents move the same way; their chunks carry the container too, for search.
    documents = _move_with_provenance(cur, "documents", tenant_id, name, into)
    cur.execute(
        sql.SQL("UPDATE chunks k SET container = %s WHERE k.tenant_id = %s AND {}").format(
            _subtree("k", "container", name)
        ),
        (into, tenant_id),
    )
    cur.execute(
        sql.SQL("UPDATE sessions s SET container = %s WHERE s.tenant_id = %s AND {}").format(
            _subtree("s", "container", name)
        ),
        (into, tenant_id),
    )
    removed = cur.execute(
        sql.SQL("DELETE FROM containers c WHERE c.tenant_id = %s AND {} RETURNING c.name").format(
            _subtree("c", "name", name)
        ),
        (tenant_id,),
    ).fetchall()
    return sorted(row["name"] for row in removed), moved, documents


def restore_container(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    """An exported container as it was (a parent comes before its children)."""
    return restore.insert_as_is(cur, "containers", tenant_id, row, conflict="(tenant_id, name)")


def delete_emptied(cur: TenantTx, tenant_id: UUID, names: Sequence[str]) -> int:
    """Of these containers and their ancestors, those left with nothing in them (no memory, document,
    session, sub-container or extraction instructions) that nobody described: containers that only
    held what was just erased. Leaves first, then their parents."""
    candidates = sorted({".".join(n.split(".")[:i]) for n in names for i in range(1, len(n.split(".")) + 1)})
    deleted = 0
    while candidates:
        gone = cur.execute(
            """DELETE FROM containers c WHERE c.tenant_id = %(t)s AND c.name = ANY(%(n)s)
               AND c.description = ''
               AND NOT EXISTS (SELECT 1 FROM containers k
                               WHERE k.tenant_id = c.tenant_id AND k.parent = c.name)
               AND NOT EXISTS (SELECT 1 FROM memories m
                               WHERE m.tenant_id = c.tenant_id AND m.container = c.name)
               AND NOT EXISTS (SELECT 1 FROM documents d
                               WHERE d.tenant_id = c.tenant_id AND d.container = c.name)
               AND NOT EXISTS (SELECT 1 FROM sessions s
                               WHERE s.tenant_id = c.tenant_id AND s.container = c.name)
               AND NOT EXISTS (SELECT 1 FROM extraction_instructions i
                               WHERE i.tenant_id = c.tenant_id AND i.container = c.name)
               RETURNING c.name""",
            {"t": tenant_id, "n": candidates},
        ).fetchall()
        if not gone:
            break
        deleted += len(gone)
        candidates = sorted(set(candidates) - {row["name"] for row in gone})
    return deleted
