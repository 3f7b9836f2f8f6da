"""The only code that runs SQL on memory_relationships (with the walk it calls, related_memory_walk in
migrations/0027): how memories relate to each other.

`updates` (the source is a newer version of the target, which stays as history), `extends`, `derives`.
The memories themselves change through engram.memories.repo; engram.memories.writer does both in one
unit of work."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db import restore as db_restore
from engram.db.database import TenantTx
from engram.graph.link_rules import RelationshipType
from engram.memories import predicates
from engram.memories.repo import LINK_COLUMNS, MEMORY_COLUMNS


def add(
    cur: TenantTx,
    tenant_id: UUID,
    source_id: UUID,
    target_id: UUID,
    relationship: RelationshipType,
    confidence: float,
    metadata: Mapping[str, Any],
) -> bool:
    """`source_id` relates to `target_id` (newer to older); False when that link already exists."""
    cur.execute(
        """INSERT INTO memory_relationships
               (tenant_id, source_id, target_id, relationship_type, confidence, metadata)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (source_id, target_id, relationship_type) DO NOTHING""",
        (
            tenant_id,
            source_id,
            target_id,
            relationship,
            max(0.0, min(1.0, confidence)),
            Jsonb(dict(metadata)),
        ),
    )
    return cur.rowcount == 1


def replacement_of(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> UUID | None:
    """The memory that retired this one (the source of an `updates` link to it), if any."""
    row = cur.execute(
        "SELECT r.source_id FROM memory_relationships r JOIN memories m ON m.id = r.source_id "
        "WHERE r.tenant_id = %s AND r.target_id = %s AND r.relationship_type = 'updates' "
        "AND m.reverted_at IS NULL ORDER BY r.created_at DESC LIMIT 1",
        (tenant_id, memory_id),
    ).fetchone()
    return row["source_id"] if row else None


def mark_update_reverted(cur: TenantTx, tenant_id: UUID, replacement_id: UUID, memory_id: UUID) -> None:
    cur.execute(
        "UPDATE memory_relationships SET metadata = metadata || jsonb_build_object('reverted_at', now()) "
        "WHERE tenant_id = %s AND source_id = %s AND target_id = %s AND relationship_type = 'updates'",
        (tenant_id, replacement_id, memory_id),
    )


def mended_over(cur: TenantTx, tenant_id: UUID, removed: Sequence[UUID]) -> list[tuple[UUID, UUID | None]]:
    """How the version chains read once `removed` are gone: for each memory one of them retired
    (`updates`) that nothing else retires, the nearest newer version that stays (up the chain of
    replacements, past removed ones; reverted replacements do not count), or None when there is none
    (it is current again)."""
    if not removed:
        return []
    rows = cur.execute(
        """WITH RECURSIVE up(target_id, at) AS (
               SELECT DISTINCT r.target_id, r.source_id FROM memory_relationships r
               WHERE r.tenant_id = %(t)s AND r.relationship_type = 'updates'
                 AND r.source_id = ANY(%(gone)s) AND NOT (r.target_id = ANY(%(gone)s))
                 AND NOT EXISTS (SELECT 1 FROM memory_relationships r2
                                 WHERE r2.tenant_id = r.tenant_id AND r2.target_id = r.target_id
                                   AND r2.relationship_type = 'updates' AND NOT (r2.source_id = ANY(%(gone)s))
                                   AND NOT r2.metadata ? 'reverted_at')
               UNION
               SELECT u.target_id, r.source_id FROM up u
               JOIN memory_relationships r
                 ON r.tenant_id = %(t)s AND r.relationship_type = 'updates' AND r.target_id = u.at
                AND NOT r.metadata ? 'reverted_at'
               WHERE u.at = ANY(%(gone)s))
           SELECT DISTINCT ON (target_id) target_id,
                  CASE WHEN at = ANY(%(gone)s) THEN NULL ELSE at END AS successor
           FROM up ORDER BY target_id, (at = ANY(%(gone)s)), at""",
        {"t": tenant_id, "gone": list(removed)},
    ).fetchall()
    return [(row["target_id"], row["successor"]) for row in rows]


def version_chain(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> list[dict[str, Any]]:
    """Every version linked to this memory by `updates`, in either direction, oldest first: those that
    have not expired (the walk passes through expired ones, which are never read)."""
    return cur.execute(
        sql.SQL(
            """WITH RECURSIVE chain(id) AS (
                   SELECT %s::uuid
                   UNION  -- not UNION ALL: an id seen once is not walked again, so cycles end
                   SELECT CASE WHEN r.source_id = c.id THEN r.target_id ELSE r.source_id END
                   FROM chain c JOIN memory_relationships r
                     ON r.tenant_id = %s AND r.relationship_type = 'updates'
                    AND (r.source_id = c.id OR r.target_id = c.id))
               SELECT {columns} FROM memories m
               WHERE m.tenant_id = %s AND m.id IN (SELECT id FROM chain) AND {live}
               ORDER BY m.valid_from, m.created_at, m.id"""
        ).format(columns=MEMORY_COLUMNS, live=predicates.live()),
        (memory_id, tenant_id, tenant_id),
    ).fetchall()


def related_memories(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, depth: int, limit: int
) -> list[dict[str, Any]]:
    """Memories reached from `memory_id` over memory relationships (either direction), up to `depth`
    steps, each at its shortest distance; a path never visits a memory twice. Of paths of equal length
    the answer names one by a rule, so the same graph always reads the same. Each as a link
    (LINK_COLUMNS), with its depth, via, relationship and direction, nearest first.

    The walk is the database's related_memory_walk (migrations/0027), which a session plans once;
    the memories the request may see, and that have not expired, are joined here. The walk passes
    through memories the request may not see and expired ones; such a memory is never named, not even
    as another's `via` (then null)."""
    return cur.execute(
        sql.SQL(
            """SELECT {columns}, w.depth,
                      (SELECT v.id FROM memories v WHERE v.id = w.via AND v.tenant_id = %(t)s AND {via_live})
                      AS via,
                      w.relationship, w.direction
               FROM related_memory_walk(%(t)s, %(m)s, %(d)s) w
               JOIN memories m ON m.id = w.id AND m.tenant_id = %(t)s AND {live}
               ORDER BY w.depth, m.created_at DESC, m.id
               LIMIT %(k)s"""
        ).format(columns=LINK_COLUMNS, via_live=predicates.live("v"), live=predicates.live()),
        {"m": memory_id, "t": tenant_id, "d": depth, "k": limit},
    ).fetchall()


def restore(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    """A relationship as exported; one already linking the same pair the same way stands for it."""
    return db_restore.insert_as_is(
        cur, "memory_relationships", tenant_id, row, conflict="", json=("metadata",)
    )
