"""The only code that runs SQL on procedures. Private procedures are narrowed to their agent by
the party policy (0002); these queries add only the tenant and the filters asked for."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db import restore
from engram.db.database import TenantTx
from engram.db.vectors import vector_literal

COLUMNS = sql.SQL(
    "p.id, p.kind, p.trigger, p.content, p.agent_id, p.visibility, p.user_id, p.tags, p.metadata, "
    "p.embedding_model, p.created_at, p.updated_at"
)


def insert(
    cur: TenantTx, tenant_id: UUID, fields: dict[str, Any], embedding: Sequence[float], model: str
) -> dict[str, Any]:
    row = cur.execute(
        sql.SQL(
            "INSERT INTO procedures AS p (tenant_id, kind, trigger, content, agent_id, visibility, user_id, "
            "tags, metadata, embedding, embedding_model) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s) RETURNING {columns}"
        ).format(columns=COLUMNS),
        (
            tenant_id,
            fields["kind"],
            fields["trigger"],
            fields["content"],
            fields["agent_id"],
            fields["visibility"],
            fields.get("user_id"),
            fields["tags"],
            Jsonb(fields["metadata"]),
            vector_literal(embedding),
            model,
        ),
    ).fetchone()
    assert row is not None
    return row


def get(cur: TenantTx, tenant_id: UUID, procedure_id: UUID) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL("SELECT {columns} FROM procedures p WHERE p.tenant_id = %s AND p.id = %s").format(
            columns=COLUMNS
        ),
        (tenant_id, procedure_id),
    ).fetchone()


def update(
    cur: TenantTx,
    tenant_id: UUID,
    procedure_id: UUID,
    changes: dict[str, Any],
    embedding: Sequence[float] | None,
    model: str | None,
) -> dict[str, Any] | None:
    assignments: list[sql.Composable] = [sql.SQL("updated_at = now()")]
    params: list[Any] = []
    for column in ("kind", "trigger", "content", "visibility", "tags", "metadata"):
        if column in changes:
            assignments.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(Jsonb(changes[column]) if column == "metadata" else changes[column])
    if embedding is not None:
        assignments.append(sql.SQL("embedding = %s::vector, embedding_model = %s"))
        params.extend([vector_literal(embedding), model])
    return cur.execute(
        sql.SQL(
            "UPDATE procedures AS p SET {assignments} WHERE p.tenant_id = %s AND p.id = %s "
            "RETURNING {columns}"
        ).format(assignments=sql.SQL(", ").join(assignments), columns=COLUMNS),
        (*params, tenant_id, procedure_id),
    ).fetchone()


def delete(cur: TenantTx, tenant_id: UUID, procedure_id: UUID) -> bool:
    cur.execute("DELETE FROM procedures WHERE tenant_id = %s AND id = %s", (tenant_id, procedure_id))
    return cur.rowcount == 1


def list_page(
    cur: TenantTx, tenant_id: UUID, kind: str | None, limit: int, after: tuple[datetime, UUID] | None
) -> list[dict[str, Any]]:
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM procedures p WHERE p.tenant_id = %s AND (%s::text IS NULL OR p.kind = %s) "
            "AND (%s::timestamptz IS NULL OR (p.created_at, p.id) < (%s, %s)) "
            "ORDER BY p.created_at DESC, p.id DESC LIMIT %s"
        ).format(columns=COLUMNS),
        (tenant_id, kind, kind, after and after[0], after and after[0], after and after[1], limit),
    ).fetchall()


def match(
    cur: TenantTx,
    tenant_id: UUID,
    vector: Sequence[float],
    model: str,
    kind: str | None,
    min_similarity: float,
    limit: int,
) -> list[dict[str, Any]]:
    """Procedures whose trigger is at least `min_similarity` similar to the situation, best first.
    An exact scan: a tenant's procedures are few, and a rule must never be missed."""
    literal = vector_literal(vector)
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, 1 - (p.embedding <=> %(q)s::vector) AS similarity FROM procedures p "
            "WHERE p.tenant_id = %(tenant)s AND p.embedding_model = %(model)s "
            "AND (%(kind)s::text IS NULL OR p.kind = %(kind)s) "
            "AND 1 - (p.embedding <=> %(q)s::vector) >= %(min)s "
            "ORDER BY p.embedding <=> %(q)s::vector, p.id LIMIT %(limit)s"
        ).format(columns=COLUMNS),
        {
            "q": literal,
            "tenant": tenant_id,
            "model": model,
            "kind": kind,
            "min": min_similarity,
            "limit": limit,
        },
    ).fetchall()


def restore_procedure(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "procedures", tenant_id, row, conflict="(id)", json=("metadata",))


def delete_of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> int:
    """Erasure: the procedures that belong to `user_id`."""
    cur.execute("DELETE FROM procedures WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id))
    return cur.rowcount
