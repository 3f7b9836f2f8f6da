"""The only code that runs SQL on session summaries and the summary queue (migration 0016). A trigger on
session_messages queues a session in the append's own transaction; the relay takes entries off the queue
here, and writes the summary back only if it covers more than the stored one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

from psycopg import sql

from engram.db import restore
from engram.db.database import TenantTx

SUMMARY_COLUMNS = sql.SQL("s.content, s.method, s.model, s.through_seq, s.updated_at")


def get_summary(cur: TenantTx, tenant_id: UUID, session_id: UUID) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM session_summaries s WHERE s.tenant_id = %s AND s.session_id = %s"
        ).format(columns=SUMMARY_COLUMNS),
        (tenant_id, session_id),
    ).fetchone()


def take_queued(cur: TenantTx, tenant_id: UUID, limit: int) -> list[UUID]:
    """Take up to `limit` due sessions off the queue (rows another relay holds are skipped). An append
    meanwhile queues its session again, so nothing it adds is missed."""
    rows = cur.execute(
        "DELETE FROM summary_queue q WHERE (q.tenant_id, q.session_id) IN ("
        "  SELECT tenant_id, session_id FROM summary_queue WHERE tenant_id = %s AND queued_at <= now() "
        "  ORDER BY queued_at LIMIT %s FOR UPDATE SKIP LOCKED) "
        "RETURNING q.session_id",
        (tenant_id, limit),
    ).fetchall()
    return [row["session_id"] for row in rows]


def requeue(cur: TenantTx, tenant_id: UUID, session_id: UUID, delay: timedelta) -> None:
    """Try the session again after `delay` (its summarizer failed for a while)."""
    cur.execute(
        "INSERT INTO summary_queue (tenant_id, session_id, queued_at) "
        "SELECT %s, s.id, now() + %s FROM sessions s WHERE s.tenant_id = %s AND s.id = %s "
        "ON CONFLICT (tenant_id, session_id) DO UPDATE SET queued_at = greatest(summary_queue.queued_at, "
        "EXCLUDED.queued_at)",
        (tenant_id, delay, tenant_id, session_id),
    )


def save_summary(cur: TenantTx, tenant_id: UUID, session: dict[str, Any], summary: dict[str, Any]) -> bool:
    """Store the summary unless the stored one already covers as much (a slower run finishing late)."""
    row = cur.execute(
        "INSERT INTO session_summaries AS s (tenant_id, session_id, user_id, agent_id, content, method, "
        "model, through_seq, input_tokens, output_tokens) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (tenant_id, session_id) DO UPDATE SET content = EXCLUDED.content, "
        "method = EXCLUDED.method, model = EXCLUDED.model, through_seq = EXCLUDED.through_seq, "
        "input_tokens = s.input_tokens + EXCLUDED.input_tokens, "
        "output_tokens = s.output_tokens + EXCLUDED.output_tokens, updated_at = now() "
        "WHERE s.through_seq < EXCLUDED.through_seq RETURNING true AS saved",
        (
            tenant_id,
            session["id"],
            session["user_id"],
            session["agent_id"],
            summary["content"],
            summary["method"],
            summary["model"],
            summary["through_seq"],
            summary["input_tokens"],
            summary["output_tokens"],
        ),
    ).fetchone()
    return row is not None


def tenants_with_queued(cur: TenantTx, limit: int) -> list[UUID]:
    """Tenants with sessions to summarize (ids only, across tenants: a SECURITY DEFINER function)."""
    rows = cur.execute("SELECT tenant_id FROM tenants_with_queued_summaries(%s)", (limit,)).fetchall()
    return [row["tenant_id"] for row in rows]


def restore_summary(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "session_summaries", tenant_id, row, conflict="(tenant_id, session_id)")
