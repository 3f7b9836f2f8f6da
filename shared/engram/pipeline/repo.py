"""The pipeline's SQL on the memory graph: near-duplicate candidates for a new memory, and recording
that a newer memory supersedes an older one. (Documents, chunks and sources: engram.documents.repo.)"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from engram.db.database import TenantTx


def nearest_latest_memories(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, document_id: UUID, limit: int
) -> list[dict[str, Any]]:
    """The latest, older memories of the same container and embedding model closest to `memory_id`,
    leaving out every memory that came from `document_id` itself."""
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
           ORDER BY o.embedding <=> n.embedding, o.id
           LIMIT %(k)s""",
        {"t": tenant_id, "m": memory_id, "d": document_id, "k": limit},
    ).fetchall()


def supersede(
    cur: TenantTx,
    tenant_id: UUID,
    newer: UUID,
    older: UUID,
    relationship: str,
    confidence: float,
    metadata: dict[str, Any],
) -> bool:
    """`newer` updates `older`: the older memory stops being the latest (valid until now)."""
    if relationship == "updates":
        cur.execute(
            """UPDATE memories SET is_latest = false, valid_to = now(), updated_at = now()
               WHERE tenant_id = %s AND id = %s AND is_latest""",
            (tenant_id, older),
        )
        if cur.rowcount != 1:
            return False
    cur.execute(
        """INSERT INTO memory_relationships
               (tenant_id, source_id, target_id, relationship_type, confidence, metadata)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (source_id, target_id, relationship_type) DO NOTHING""",
        (tenant_id, newer, older, relationship, confidence, Jsonb(metadata)),
    )
    return True
