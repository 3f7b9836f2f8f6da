"""The only code that runs SQL on extraction_instructions."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg import sql

from engram.db import restore
from engram.db.database import TenantTx
from engram.memories.repo import ensure_container

_COLUMNS = sql.SQL("container, instructions, created_at, updated_at")


def put(
    cur: TenantTx, tenant_id: UUID, container: str | None, instructions: str
) -> tuple[dict[str, Any], bool]:
    """Set the scope's instructions (creating the container if needed). True when they are new."""
    if container is not None:
        ensure_container(cur, tenant_id, container)
    row = cur.execute(
        sql.SQL(
            """INSERT INTO extraction_instructions AS i (tenant_id, container, instructions)
               VALUES (%s, %s, %s)
               ON CONFLICT (tenant_id, container)
               DO UPDATE SET instructions = EXCLUDED.instructions, updated_at = now()
               RETURNING {columns}, (xmax = 0) AS created"""
        ).format(columns=_COLUMNS),
        (tenant_id, container, instructions),
    ).fetchone()
    assert row is not None
    created = bool(row.pop("created"))
    return row, created


def delete(cur: TenantTx, tenant_id: UUID, container: str | None) -> bool:
    cur.execute(
        "DELETE FROM extraction_instructions WHERE tenant_id = %s AND container IS NOT DISTINCT FROM %s",
        (tenant_id, container),
    )
    return cur.rowcount == 1


def all_of_tenant(cur: TenantTx, tenant_id: UUID) -> list[dict[str, Any]]:
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM extraction_instructions WHERE tenant_id = %s "
            "ORDER BY container NULLS FIRST"
        ).format(columns=_COLUMNS),
        (tenant_id,),
    ).fetchall()


def applying_to(cur: TenantTx, tenant_id: UUID, container: str) -> list[dict[str, Any]]:
    """The tenant's instructions, then those of each ancestor of `container`, then its own."""
    parts = container.split(".")
    scopes = [".".join(parts[: i + 1]) for i in range(len(parts))]
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM extraction_instructions WHERE tenant_id = %s "
            "AND (container IS NULL OR container = ANY(%s)) ORDER BY container IS NOT NULL, length(container)"
        ).format(columns=_COLUMNS),
        (tenant_id, scopes),
    ).fetchall()


def restore_instructions(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(
        cur, "extraction_instructions", tenant_id, row, conflict="(tenant_id, container)"
    )
