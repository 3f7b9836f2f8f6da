"""The only code that runs SQL on working memory. Each write is one statement, so compare-and-swap
needs no explicit lock: under READ COMMITTED a concurrent writer waits for the row and re-checks
the version on the row as it is after the first writer committed."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db import restore
from engram.db.database import TenantTx

COLUMNS = sql.SQL("w.scope, w.key, w.value, w.version, w.expires_at, w.user_id, w.created_at, w.updated_at")
_LIVE = sql.SQL("(w.expires_at IS NULL OR w.expires_at > now())")
_EXPIRES = sql.SQL(
    "CASE WHEN %(ttl)s::integer IS NULL THEN NULL ELSE now() + make_interval(secs => %(ttl)s) END"
)
# An update that says nothing of the TTL keeps the key's expiry (a key that had expired is new: none).
_UPDATED_EXPIRES = sql.SQL("CASE WHEN %(keep_ttl)s AND {live} THEN w.expires_at ELSE {given} END").format(
    live=_LIVE, given=_EXPIRES
)
# Likewise its user.
_UPDATED_USER = sql.SQL("CASE WHEN %(keep_user)s AND {live} THEN w.user_id ELSE %(user)s END").format(
    live=_LIVE
)
# A write for a user (`for_user`) never takes a live key of another user; one of no user, or theirs, it may.
_FOR_USER = sql.SQL(
    "(%(for_user)s::text IS NULL OR NOT {live} OR w.user_id IS NULL OR w.user_id = %(for_user)s)"
).format(live=_LIVE)
# A read or delete for a user sees no key of another user.
_SEEN_BY = sql.SQL("(%(for_user)s::text IS NULL OR w.user_id IS NULL OR w.user_id = %(for_user)s)")


def write(
    cur: TenantTx,
    tenant_id: UUID,
    scope: str,
    key: str,
    value: Any,
    ttl_seconds: int | None,
    *,
    keep_ttl: bool = False,
    user_id: str | None = None,
    keep_user: bool = False,
    for_user: str | None = None,
    version: int | None,
    exists: bool | None,
) -> dict[str, Any] | None:
    """Write the value if the condition holds; None when it does not. An expired key counts as
    absent. Versions only ever grow, also across expiry, so a stale version never matches again.
    `keep_ttl`: a live key keeps its expiry (`ttl_seconds` is then ignored); `keep_user` its user.
    `for_user`: a live key of another user is not written (None)."""
    params = {
        "tenant": tenant_id,
        "scope": scope,
        "key": key,
        "value": Jsonb(value),
        "ttl": ttl_seconds,
        "keep_ttl": keep_ttl,
        "user": user_id,
        "keep_user": keep_user,
        "for_user": for_user,
        "version": version,
    }
    if exists:
        condition = sql.SQL("w.version = %(version)s") if version is not None else sql.SQL("true")
        query = sql.SQL(
            "UPDATE working_memory AS w SET value = %(value)s, version = w.version + 1, "
            "expires_at = {expires}, user_id = {user}, updated_at = now() "
            "WHERE w.tenant_id = %(tenant)s AND w.scope = %(scope)s AND w.key = %(key)s AND {live} "
            "AND {condition} AND {for_user} RETURNING {columns}, false AS created"
        ).format(
            expires=_UPDATED_EXPIRES,
            user=_UPDATED_USER,
            live=_LIVE,
            condition=condition,
            for_user=_FOR_USER,
            columns=COLUMNS,
        )
    else:
        only_if_absent = (
            sql.SQL(" WHERE NOT {live}").format(live=_LIVE)
            if exists is False
            else sql.SQL(" WHERE {for_user}").format(for_user=_FOR_USER)
        )
        query = sql.SQL(
            "INSERT INTO working_memory AS w (tenant_id, scope, key, value, expires_at, user_id) "
            "VALUES (%(tenant)s, %(scope)s, %(key)s, %(value)s, {expires}, %(user)s) "
            "ON CONFLICT (tenant_id, scope, key) DO UPDATE SET value = EXCLUDED.value, "
            "version = w.version + 1, expires_at = {updated_expires}, user_id = {updated_user}, "
            "updated_at = now(), "
            "created_at = CASE WHEN {live} THEN w.created_at ELSE now() END{only_if_absent} "
            "RETURNING {columns}, (xmax = 0 OR w.created_at = w.updated_at) AS created"
        ).format(
            expires=_EXPIRES,
            updated_expires=_UPDATED_EXPIRES,
            updated_user=_UPDATED_USER,
            live=_LIVE,
            only_if_absent=only_if_absent,
            columns=COLUMNS,
        )
    return cur.execute(query, params).fetchone()


def current_version(cur: TenantTx, tenant_id: UUID, scope: str, key: str) -> int | None:
    row = cur.execute(
        sql.SQL(
            "SELECT w.version FROM working_memory w WHERE w.tenant_id = %s AND w.scope = %s AND w.key = %s "
            "AND {live}"
        ).format(live=_LIVE),
        (tenant_id, scope, key),
    ).fetchone()
    return None if row is None else int(row["version"])


def get(
    cur: TenantTx, tenant_id: UUID, scope: str, key: str, *, for_user: str | None = None
) -> dict[str, Any] | None:
    """The live key; with `for_user`, None for a key of another user."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM working_memory w WHERE w.tenant_id = %(tenant)s AND w.scope = %(scope)s "
            "AND w.key = %(key)s AND {live} AND {seen}"
        ).format(columns=COLUMNS, live=_LIVE, seen=_SEEN_BY),
        {"tenant": tenant_id, "scope": scope, "key": key, "for_user": for_user},
    ).fetchone()


def list_scope(
    cur: TenantTx, tenant_id: UUID, scope: str, after: str | None, limit: int, *, for_user: str | None
) -> list[dict[str, Any]]:
    """The live keys of the scope, in key order; with `for_user`, none of another user."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM working_memory w WHERE w.tenant_id = %(tenant)s AND w.scope = %(scope)s "
            "AND {live} AND {seen} AND (%(after)s::text IS NULL OR w.key > %(after)s) ORDER BY w.key "
            "LIMIT %(limit)s"
        ).format(columns=COLUMNS, live=_LIVE, seen=_SEEN_BY),
        {"tenant": tenant_id, "scope": scope, "after": after, "limit": limit, "for_user": for_user},
    ).fetchall()


def delete(
    cur: TenantTx, tenant_id: UUID, scope: str, key: str, version: int | None, *, for_user: str | None = None
) -> bool:
    """Delete the live key (at `version`, if given); with `for_user`, never a key of another user."""
    cur.execute(
        sql.SQL(
            "DELETE FROM working_memory w WHERE w.tenant_id = %(tenant)s AND w.scope = %(scope)s "
            "AND w.key = %(key)s AND {live} AND (%(version)s::bigint IS NULL OR w.version = %(version)s) "
            "AND {seen}"
        ).format(live=_LIVE, seen=_SEEN_BY),
        {"tenant": tenant_id, "scope": scope, "key": key, "version": version, "for_user": for_user},
    )
    return cur.rowcount == 1


def delete_scope(cur: TenantTx, tenant_id: UUID, scope: str, *, for_user: str | None) -> int:
    """Delete the live keys of the scope; with `for_user`, none of another user."""
    cur.execute(
        sql.SQL(
            "DELETE FROM working_memory w WHERE w.tenant_id = %(tenant)s AND w.scope = %(scope)s AND {live} "
            "AND {seen}"
        ).format(live=_LIVE, seen=_SEEN_BY),
        {"tenant": tenant_id, "scope": scope, "for_user": for_user},
    )
    return cur.rowcount


def restore_working(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(
        cur, "working_memory", tenant_id, row, conflict="(tenant_id, scope, key)", json=("value",)
    )


def delete_of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> int:
    """Erasure: every key that belongs to `user_id`, expired ones included."""
    cur.execute("DELETE FROM working_memory WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id))
    return cur.rowcount
