"""The pipeline's SQL on the memory graph: nearest candidates for a new memory, and recording that a
newer memory extends or derives from an older one. (Documents, chunks and sources: engram.documents.repo;
`updates`: engram.memories.repo.retire.)"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from engram.db.database import TenantTx


def nearest_latest_memories(
    cur: TenantTx,
    tenant_id: UUID,
    memory_id: UUID,
    limit: int,
    *,
    document_id: UUID | None = None,
    same_owner: bool = False,
) -> list[dict[str, Any]]:
    """The latest, older memories of the same container and embedding model closest to `memory_id`,
    leaving out every memory that came from `document_id` itself; with `same_owner`, only those of the
    same user and visibility (a user's conversation never retires someone else's memory)."""
    return cur.execute(
        """SELECT o.id, o.content, 1 - (o.embedding <=> n.embedding) AS similarity
           FROM memories n
           JOIN memories o ON o.tenant_id = n.tenant_id AND o.container = n.container
                          AND o.embedding_model = n.embedding_model
           WHERE n.tenant_id = %(t)s AND n.id = %(m)s AND n.embedding IS NOT NULL
             AND o.id <> n.id AND o.is_latest AND o.created_at < n.created_at
             AND (o.expires_at IS NULL OR o.expires_at > now())
             AND NOT EXISTS (SELECT 1 FROM memory_sources s
                             WHERE s.memory_id = o.id AND s.document_id = %(d)s)
             AND (NOT %(owner)s OR (o.user_id IS NOT DISTINCT FROM n.user_id AND o.visibility = n.visibility))
           ORDER BY o.embedding <=> n.embedding, o.id
           LIMIT %(k)s""",
        {"t": tenant_id, "m": memory_id, "d": document_id, "owner": same_owner, "k": limit},
    ).fetchall()


def relate(
    cur: TenantTx,
    tenant_id: UUID,
    newer: UUID,
    older: UUID,
    relationship: str,
    confidence: float,
    metadata: dict[str, Any],
) -> bool:
    """`newer` extends or derives from `older` (an `updates` goes through memories.repo.retire)."""
    if relationship == "updates":
        raise ValueError("updates retire the older memory: use engram.memories.repo.retire")
    cur.execute(
        """INSERT INTO memory_relationships
               (tenant_id, source_id, target_id, relationship_type, confidence, metadata)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (source_id, target_id, relationship_type) DO NOTHING""",
        (tenant_id, newer, older, relationship, max(0.0, min(1.0, confidence)), Jsonb(metadata)),
    )
    return cur.rowcount == 1
