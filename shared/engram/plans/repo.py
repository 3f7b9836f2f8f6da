"""The only code that runs SQL on plans and task contexts. Writes are single statements that check the
version themselves (compare-and-swap, as in working memory): under READ COMMITTED a concurrent writer
waits for the row and re-checks the version on the row as the first writer left it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db.database import TenantTx

PLAN_COLUMNS = ("plan_id", "goal_event", "goal_data", "status", "state", "user_id")
TASK_COLUMNS = (
    "task_id",
    "plan_id",
    "event_type",
    "response_event",
    "response_topic",
    "data",
    "sub_tasks",
    "state",
)
_JSON = frozenset({"goal_data", "state", "data"})
_META = ("version", "created_at", "updated_at")


class Table:
    """One of the two tables: its name, key column and columns."""

    def __init__(self, name: str, key: str, columns: tuple[str, ...]) -> None:
        self.name, self.key, self.columns = name, key, columns
        self.returning = sql.SQL(", ").join(sql.Identifier(c) for c in (*columns, *_META))


PLANS = Table("plans", "plan_id", PLAN_COLUMNS)
TASKS = Table("task_contexts", "task_id", TASK_COLUMNS)


def _value(column: str, value: Any) -> Any:
    return Jsonb(value) if column in _JSON else value


def insert(cur: TenantTx, table: Table, tenant_id: UUID, fields: dict[str, Any]) -> dict[str, Any] | None:
    """None when the key is already taken in this tenant."""
    query = sql.SQL(
        "INSERT INTO {table} (tenant_id, {columns}) VALUES (%s, {values}) "
        "ON CONFLICT (tenant_id, {key}) DO NOTHING RETURNING {returning}"
    ).format(
        table=sql.Identifier(table.name),
        columns=sql.SQL(", ").join(sql.Identifier(c) for c in table.columns),
        values=sql.SQL(", ").join(sql.Placeholder() for _ in table.columns),
        key=sql.Identifier(table.key),
        returning=table.returning,
    )
    return cur.execute(query, [tenant_id, *(_value(c, fields[c]) for c in table.columns)]).fetchone()


def get(cur: TenantTx, table: Table, tenant_id: UUID, key: str) -> dict[str, Any] | None:
    query = sql.SQL("SELECT {returning} FROM {table} WHERE tenant_id = %s AND {key} = %s").format(
        returning=table.returning, table=sql.Identifier(table.name), key=sql.Identifier(table.key)
    )
    return cur.execute(query, (tenant_id, key)).fetchone()


def update(
    cur: TenantTx, table: Table, tenant_id: UUID, key: str, changes: dict[str, Any], version: int | None
) -> dict[str, Any] | None:
    """None when the row is missing or not at `version`."""
    assignments = [sql.SQL("{} = %s").format(sql.Identifier(c)) for c in changes]
    query = sql.SQL(
        "UPDATE {table} SET {assignments}, version = version + 1, updated_at = now() "
        "WHERE tenant_id = %s AND {key} = %s AND (%s::bigint IS NULL OR version = %s) RETURNING {returning}"
    ).format(
        table=sql.Identifier(table.name),
        assignments=sql.SQL(", ").join(assignments),
        key=sql.Identifier(table.key),
        returning=table.returning,
    )
    params = [*(_value(c, v) for c, v in changes.items()), tenant_id, key, version, version]
    return cur.execute(query, params).fetchone()


def delete(cur: TenantTx, table: Table, tenant_id: UUID, key: str, version: int | None) -> bool:
    query = sql.SQL(
        "DELETE FROM {table} WHERE tenant_id = %s AND {key} = %s AND (%s::bigint IS NULL OR version = %s)"
    ).format(table=sql.Identifier(table.name), key=sql.Identifier(table.key))
    cur.execute(query, (tenant_id, key, version, version))
    return cur.rowcount == 1


def current_version(cur: TenantTx, table: Table, tenant_id: UUID, key: str) -> int | None:
    row = get(cur, table, tenant_id, key)
    return None if row is None else int(row["version"])


def list_page(
    cur: TenantTx,
    table: Table,
    tenant_id: UUID,
    filters: dict[str, str | None],
    limit: int,
    after: tuple[datetime, str] | None,
) -> list[dict[str, Any]]:
    """Newest first; `filters` are column = value conditions (None: no condition)."""
    conditions: list[sql.Composable] = [sql.SQL("tenant_id = %s")]
    params: list[Any] = [tenant_id]
    for column, value in filters.items():
        if value is not None:
            conditions.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(value)
    if after is not None:
        conditions.append(sql.SQL("(created_at, {key}) < (%s, %s)").format(key=sql.Identifier(table.key)))
        params.extend(after)
    query = sql.SQL(
        "SELECT {returning} FROM {table} WHERE {where} ORDER BY created_at DESC, {key} DESC LIMIT %s"
    ).format(
        returning=table.returning,
        table=sql.Identifier(table.name),
        where=sql.SQL(" AND ").join(conditions),
        key=sql.Identifier(table.key),
    )
    return cur.execute(query, [*params, limit]).fetchall()


def lock_sub_tasks(cur: TenantTx, tenant_id: UUID, sub_tasks: Sequence[str]) -> None:
    """Serialise writers that claim the same sub-task ids (in one order: no deadlock), so that the
    check that no other task holds them and the write that claims them are one step."""
    cur.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s || ':' || s, 0)) "
        "FROM (SELECT DISTINCT s FROM unnest(%s::text[]) AS s ORDER BY s) AS ordered",
        (str(tenant_id), list(sub_tasks)),
    )


def sub_task_owners(cur: TenantTx, sub_tasks: Sequence[str]) -> dict[str, str]:
    """sub-task id -> the task that lists it, among the transaction tenant's tasks (through the GIN
    index: see task_context_sub_task_owners in 0011)."""
    rows = cur.execute(
        "SELECT task_id, sub_task FROM task_context_sub_task_owners(%s::text[])", (list(sub_tasks),)
    ).fetchall()
    return {row["sub_task"]: row["task_id"] for row in rows}


def delete_of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> tuple[int, int]:
    """Erasure: the plans of `user_id` and the task contexts of those plans. (plans, task contexts)"""
    plans = cur.execute(
        "DELETE FROM plans WHERE tenant_id = %s AND user_id = %s RETURNING plan_id", (tenant_id, user_id)
    ).fetchall()
    ids = [row["plan_id"] for row in plans]
    if not ids:
        return 0, 0
    cur.execute("DELETE FROM task_contexts WHERE tenant_id = %s AND plan_id = ANY(%s)", (tenant_id, ids))
    return len(ids), cur.rowcount
