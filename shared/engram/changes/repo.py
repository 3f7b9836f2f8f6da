"""The only code that runs SQL on change_events, webhooks and webhook_deliveries (migration 0016). Each
function works in one tenant's transaction, under RLS; the look-ups across tenants return tenant ids only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql

from engram.db.database import TenantTx

RECENT_FAILURES = 10
WEBHOOK_COLUMNS = sql.SQL("w.id, w.url, w.events, w.description, w.created_at")


# --- webhooks ---------------------------------------------------------------------------------------


def insert_webhook(
    cur: TenantTx, tenant_id: UUID, url: str, events: Sequence[str], description: str, secret: str
) -> dict[str, Any]:
    row = cur.execute(
        sql.SQL(
            "INSERT INTO webhooks AS w (tenant_id, url, events, description, secret) "
            "VALUES (%s, %s, %s, %s, %s) RETURNING {columns}"
        ).format(columns=WEBHOOK_COLUMNS),
        (tenant_id, url, list(events), description, secret),
    ).fetchone()
    assert row is not None
    return row


def list_webhooks(cur: TenantTx, tenant_id: UUID) -> list[dict[str, Any]]:
    return cur.execute(
        sql.SQL("SELECT {columns} FROM webhooks w WHERE w.tenant_id = %s ORDER BY w.created_at, w.id").format(
            columns=WEBHOOK_COLUMNS
        ),
        (tenant_id,),
    ).fetchall()


def get_webhook(cur: TenantTx, tenant_id: UUID, webhook_id: UUID) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL("SELECT {columns} FROM webhooks w WHERE w.tenant_id = %s AND w.id = %s").format(
            columns=WEBHOOK_COLUMNS
        ),
        (tenant_id, webhook_id),
    ).fetchone()


def delete_webhook(cur: TenantTx, tenant_id: UUID, webhook_id: UUID) -> bool:
    found = cur.execute(
        "DELETE FROM webhooks WHERE tenant_id = %s AND id = %s RETURNING id", (tenant_id, webhook_id)
    ).fetchone()
    return found is not None


def delivery_counts(cur: TenantTx, tenant_id: UUID, webhook_id: UUID) -> dict[str, int]:
    rows = cur.execute(
        "SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = %s AND webhook_id = %s "
        "GROUP BY status",
        (tenant_id, webhook_id),
    ).fetchall()
    counts = {"delivered": 0, "pending": 0, "failed": 0}
    counts.update({row["status"]: row["n"] for row in rows})
    return counts


def recent_failures(cur: TenantTx, tenant_id: UUID, webhook_id: UUID) -> list[dict[str, Any]]:
    return cur.execute(
        "SELECT d.event_id, d.event_type, d.status, d.attempts, d.last_status, d.last_error, "
        "CASE WHEN d.status = 'pending' THEN d.next_attempt_at END AS next_attempt_at, d.created_at "
        "FROM webhook_deliveries d WHERE d.tenant_id = %s AND d.webhook_id = %s AND d.last_error IS NOT NULL "
        "AND d.status <> 'delivered' ORDER BY d.created_at DESC, d.id DESC LIMIT %s",
        (tenant_id, webhook_id, RECENT_FAILURES),
    ).fetchall()


# --- the outbox -------------------------------------------------------------------------------------


def take_events(cur: TenantTx, tenant_id: UUID, limit: int) -> list[dict[str, Any]]:
    """Take the tenant's oldest events off the outbox (rows another relay holds are skipped); they are
    gone when the transaction commits, so whatever is done with them must happen in it. Oldest first:
    RETURNING follows the delete's plan (the heap's order), not the subquery's ORDER BY."""
    return cur.execute(
        "WITH taken AS ("
        "  DELETE FROM change_events e WHERE e.id IN ("
        "    SELECT id FROM change_events WHERE tenant_id = %s ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
        "  RETURNING e.id, e.event_id, e.event_type, e.subject, e.occurred_at) "
        "SELECT * FROM taken ORDER BY id",
        (tenant_id, limit),
    ).fetchall()


def subscriptions(cur: TenantTx, tenant_id: UUID) -> list[dict[str, Any]]:
    return cur.execute("SELECT id, events FROM webhooks WHERE tenant_id = %s", (tenant_id,)).fetchall()


def add_deliveries(cur: TenantTx, tenant_id: UUID, deliveries: Sequence[tuple[UUID, UUID, str, str]]) -> None:
    """(webhook_id, event_id, event_type, body) each, due now."""
    if deliveries:
        cur.executemany(
            "INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_id, event_type, body) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (webhook_id, event_id) DO NOTHING",
            [(tenant_id, *delivery) for delivery in deliveries],
        )


def claim_due(cur: TenantTx, tenant_id: UUID, limit: int, lease_seconds: float) -> list[dict[str, Any]]:
    """Due deliveries, oldest event first, leased: a relay that dies while sending leaves them due again
    once the lease ends. `attempts` counts the tries made before this one."""
    return cur.execute(
        "UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => %s) FROM webhooks w "
        "WHERE d.id IN (SELECT id FROM webhook_deliveries WHERE tenant_id = %s AND status = 'pending' "
        "  AND next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT %s FOR UPDATE SKIP LOCKED) "
        "AND w.id = d.webhook_id "
        "RETURNING d.id, d.webhook_id, d.event_id, d.event_type, d.body, d.attempts, w.url, w.secret",
        (lease_seconds, tenant_id, limit),
    ).fetchall()


def record_delivered(cur: TenantTx, tenant_id: UUID, delivery_id: int, status: int) -> None:
    cur.execute(
        "UPDATE webhook_deliveries SET status = 'delivered', last_status = %s, finished_at = now(), "
        "attempts = attempts + 1 "
        "WHERE tenant_id = %s AND id = %s",
        (status, tenant_id, delivery_id),
    )


def record_failure(
    cur: TenantTx,
    tenant_id: UUID,
    delivery_id: int,
    *,
    status: int | None,
    error: str,
    retry_at: datetime | None,
) -> None:
    """A failed try: due again at `retry_at`, or given up (None)."""
    cur.execute(
        "UPDATE webhook_deliveries SET last_status = %s, last_error = %s, attempts = attempts + 1, "
        "status = CASE WHEN %s::timestamptz IS NULL THEN 'failed' ELSE 'pending' END, "
        "next_attempt_at = coalesce(%s::timestamptz, next_attempt_at), "
        "finished_at = CASE WHEN %s::timestamptz IS NULL THEN now() END "
        "WHERE tenant_id = %s AND id = %s",
        (status, error[:1000], retry_at, retry_at, retry_at, tenant_id, delivery_id),
    )


def release(cur: TenantTx, tenant_id: UUID, delivery_id: int, until: datetime) -> None:
    """Give a lease back untried: due again at `until`."""
    cur.execute(
        "UPDATE webhook_deliveries SET next_attempt_at = %s WHERE tenant_id = %s AND id = %s",
        (until, tenant_id, delivery_id),
    )


def postpone(cur: TenantTx, tenant_id: UUID, webhook_id: UUID, until: datetime) -> None:
    """A receiver that is down: its other due deliveries wait with the one that failed."""
    cur.execute(
        "UPDATE webhook_deliveries SET next_attempt_at = greatest(next_attempt_at, %s) "
        "WHERE tenant_id = %s AND webhook_id = %s AND status = 'pending'",
        (until, tenant_id, webhook_id),
    )


def prune(cur: TenantTx, tenant_id: UUID) -> None:
    cur.execute(
        "DELETE FROM webhook_deliveries WHERE tenant_id = %s AND ("
        "(status = 'delivered' AND finished_at < now() - interval '1 day') "
        "OR (status = 'failed' AND finished_at < now() - interval '7 days'))",
        (tenant_id,),
    )


# --- across tenants: ids only -------------------------------------------------------------------------


def tenants_with_events(cur: TenantTx, limit: int) -> list[UUID]:
    rows = cur.execute("SELECT tenant_id FROM tenants_with_change_events(%s)", (limit,)).fetchall()
    return [row["tenant_id"] for row in rows]


def tenants_with_due_deliveries(cur: TenantTx, limit: int) -> list[UUID]:
    rows = cur.execute("SELECT tenant_id FROM tenants_with_due_deliveries(%s)", (limit,)).fetchall()
    return [row["tenant_id"] for row in rows]


def suppress_change_events(cur: TenantTx) -> None:
    """This transaction records no change event and queues no summary (an import restores rows; it does
    not change them)."""
    cur.execute("SELECT set_config('engram.no_change_events', 'on', true)")
