"""The only code that runs SQL for re-embedding (migrations/0024): the rows still to embed under a
model, their staged vectors, and the switch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from psycopg import sql

from engram.providers.tenant_models import lock_switch

if TYPE_CHECKING:
    from engram.db.database import TenantTx

Table = Literal["memories", "chunks"]
TABLES: tuple[Table, ...] = ("memories", "chunks")
_KEY = {"memories": "memory_id", "chunks": "chunk_id"}


def _names(table: Table) -> dict[str, sql.Composable]:
    return {"table": sql.Identifier(table), "key": sql.Identifier(_KEY[table])}


def pending(
    cur: TenantTx,
    tenant_id: UUID,
    table: Table,
    model: str,
    olds: Sequence[str],
    after: UUID | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Rows embedded under one of `olds` with no vector staged under `model` for their current text,
    by id from `after` (keyset)."""
    query = sql.SQL(
        "SELECT t.id, t.content FROM {table} t WHERE t.tenant_id = %(tenant)s "
        "AND t.embedding_model = ANY(%(olds)s) AND (%(after)s::uuid IS NULL OR t.id > %(after)s) "
        "AND NOT EXISTS (SELECT 1 FROM embedding_staging s WHERE s.tenant_id = %(tenant)s "
        "AND s.model = %(model)s AND s.{key} = t.id AND s.content_md5 = md5(t.content)) "
        "ORDER BY t.id LIMIT %(limit)s"
    ).format(**_names(table))
    params = {"tenant": tenant_id, "olds": list(olds), "after": after, "model": model, "limit": limit}
    return cur.execute(query, params).fetchall()


def count(cur: TenantTx, tenant_id: UUID, table: Table, model: str, olds: Sequence[str]) -> tuple[int, int]:
    """(rows under one of `olds`, of which already staged under `model` for their current text)."""
    query = sql.SQL(
        "SELECT count(*) AS total, count(s.{key}) AS staged FROM {table} t "
        "LEFT JOIN embedding_staging s ON s.tenant_id = t.tenant_id AND s.model = %(model)s "
        "AND s.{key} = t.id AND s.content_md5 = md5(t.content) "
        "WHERE t.tenant_id = %(tenant)s AND t.embedding_model = ANY(%(olds)s)"
    ).format(**_names(table))
    row = cur.execute(query, {"tenant": tenant_id, "model": model, "olds": list(olds)}).fetchone()
    assert row is not None  # an aggregate has a row
    return int(row["total"]), int(row["staged"])


def stage(
    cur: TenantTx, tenant_id: UUID, table: Table, model: str, rows: Sequence[tuple[UUID, str, str]]
) -> None:
    """Stage (row id, vector literal, md5 of the embedded text); a vector staged before is replaced."""
    key = sql.Identifier(_KEY[table])
    cur.execute(
        sql.SQL(
            "DELETE FROM embedding_staging WHERE tenant_id = %s AND model = %s AND {key} = ANY(%s)"
        ).format(key=key),
        (tenant_id, model, [r[0] for r in rows]),
    )
    cur.executemany(
        sql.SQL(
            "INSERT INTO embedding_staging (tenant_id, model, {key}, embedding, content_md5) "
            "VALUES (%s, %s, %s, %s::vector, %s)"
        ).format(key=key),
        [(tenant_id, model, row_id, vector, md5) for row_id, vector, md5 in rows],
    )


def lock_tenant(cur: TenantTx, tenant_id: UUID) -> None:
    """Serialises a switch with the other switches of the tenant and with its memory writes."""
    lock_switch(cur, tenant_id, shared=False)


def apply(cur: TenantTx, tenant_id: UUID, table: Table, model: str, olds: Sequence[str]) -> int:
    """Every row under one of `olds` takes its staged vector (the text it was made from unchanged)."""
    query = sql.SQL(
        "UPDATE {table} t SET embedding = s.embedding, embedding_model = s.model FROM embedding_staging s "
        "WHERE t.tenant_id = %(tenant)s AND t.embedding_model = ANY(%(olds)s) AND s.tenant_id = t.tenant_id "
        "AND s.model = %(model)s AND s.{key} = t.id AND s.content_md5 = md5(t.content)"
    ).format(**_names(table))
    cur.execute(query, {"tenant": tenant_id, "olds": list(olds), "model": model})
    return cur.rowcount


def record_model(cur: TenantTx, tenant_id: UUID, model: str) -> None:
    cur.execute(
        "INSERT INTO tenant_embedding_models (tenant_id, model) VALUES (%s, %s) "
        "ON CONFLICT (tenant_id) DO UPDATE SET model = EXCLUDED.model, switched_at = now()",
        (tenant_id, model),
    )


def clear_staging(cur: TenantTx, tenant_id: UUID) -> None:
    cur.execute("DELETE FROM embedding_staging WHERE tenant_id = %s", (tenant_id,))


def quiet_change_events(cur: TenantTx) -> None:
    """A new vector for the same text is no change a reader or a webhook needs to hear of."""
    cur.execute("SELECT set_config('engram.no_change_events', 'on', true)")
