"""The only code that runs SQL for cleanup. Each delete takes one bounded batch, so a large
backlog never holds one long transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from psycopg import sql

from engram.memories import predicates

if TYPE_CHECKING:
    from engram.db.database import TenantTx


def tenant_ids(cur: TenantTx) -> list[UUID]:
    return [row["id"] for row in cur.execute("SELECT id FROM engram_tenant_ids() AS t(id)").fetchall()]


def delete_expired_memories(cur: TenantTx, tenant_id: UUID, batch: int) -> int:
    cur.execute(
        sql.SQL(
            "DELETE FROM memories WHERE id IN (SELECT m.id FROM memories m WHERE m.tenant_id = %s "
            "AND {expired} LIMIT %s)"
        ).format(expired=predicates.expired()),
        (tenant_id, batch),
    )
    return cur.rowcount


def delete_superseded_memories(cur: TenantTx, tenant_id: UUID, retention_days: int, batch: int) -> int:
    """Versions that stopped being current more than `retention_days` ago."""
    cur.execute(
        "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE tenant_id = %s AND NOT is_latest "
        "AND valid_to IS NOT NULL AND valid_to < now() - make_interval(days => %s) LIMIT %s)",
        (tenant_id, retention_days, batch),
    )
    return cur.rowcount


def delete_expired_working(cur: TenantTx, tenant_id: UUID, batch: int) -> int:
    cur.execute(
        "DELETE FROM working_memory WHERE (tenant_id, scope, key) IN (SELECT tenant_id, scope, key "
        "FROM working_memory WHERE tenant_id = %s AND expires_at IS NOT NULL AND expires_at <= now() "
        "LIMIT %s)",
        (tenant_id, batch),
    )
    return cur.rowcount
