"""Restoring rows exactly as they were exported (ids, times, versions and all), for each area's
repository to call with its own table: a row whose key is already taken is left alone, so a restore can
run twice. Vectors arrive as lists of numbers, JSON columns as any JSON value."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db.database import TenantTx
from engram.db.vectors import vector_literal
from engram.errors import InvalidInput


def insert_as_is(
    cur: TenantTx,
    table: str,
    tenant_id: UUID,
    row: Mapping[str, Any],
    *,
    conflict: str,
    json: Collection[str] = (),
    vectors: Collection[str] = ("embedding",),
) -> bool:
    """INSERT the row for the tenant, unless `conflict` (a key, or "" for any unique key) is taken:
    True when it was inserted. A row the schema refuses is InvalidInput, naming the table's complaint."""
    columns = list(row)
    values: list[Any] = [tenant_id]
    placeholders: list[sql.Composable] = [sql.SQL("%s")]
    for column in columns:
        value = row[column]
        if column in json:
            value = Jsonb(value)
        elif column in vectors and value is not None:
            value = vector_literal(value)
            placeholders.append(sql.SQL("%s::vector"))
            values.append(value)
            continue
        placeholders.append(sql.SQL("%s"))
        values.append(value)
    query = sql.SQL(
        "INSERT INTO {table} (tenant_id, {columns}) VALUES ({values}) ON CONFLICT {conflict} DO NOTHING "
        "RETURNING true AS inserted"
    ).format(
        table=sql.Identifier(table),
        columns=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        values=sql.SQL(", ").join(placeholders),
        conflict=sql.SQL(conflict),
    )
    try:
        inserted = cur.execute(query, values).fetchone()
    except (psycopg.errors.IntegrityError, psycopg.errors.DataError) as exc:
        # A value refused before it reached the server (a NUL in text) has no diagnostic: its own words.
        raise InvalidInput(f"{table} refused it: {exc.diag.message_primary or exc}") from exc
    return inserted is not None


def present(cur: TenantTx, table: str, key: Mapping[str, Any]) -> bool:
    """Whether the transaction's tenant holds a row with this key (RLS hides other tenants' rows)."""
    where = sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in key)
    found = cur.execute(
        sql.SQL("SELECT 1 FROM {} WHERE {} LIMIT 1").format(sql.Identifier(table), where), list(key.values())
    )
    return found.fetchone() is not None
