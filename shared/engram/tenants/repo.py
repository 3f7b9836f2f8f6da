"""SQL for tenants and API keys.

Admin operations (creating tenants and keys) run on the owner connection, still inside a tenant
transaction, because RLS is forced even for the owner. Authentication runs as the app role and only
calls the `authenticate_api_key` function: the app can never read the keys table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from engram.errors import Conflict

if TYPE_CHECKING:
    from engram.db.database import Database, TenantTx


@dataclass(frozen=True)
class KeyLookup:
    tenant_id: UUID
    tenant_name: str
    key_id: UUID
    revoked: bool


@dataclass(frozen=True)
class ApiKeyRow:
    id: UUID
    prefix: str
    name: str
    created_at: datetime
    revoked_at: datetime | None


def lookup_key(db: Database, key_hash: bytes) -> KeyLookup | None:
    """The key with this hash, through authenticate_api_key (SECURITY DEFINER: no tenant is set), in one
    round trip: the authorizer runs it for every request locally, and for each key once per cache
    period in AWS."""
    rows = db.read("SELECT * FROM authenticate_api_key(%s)", (key_hash,))
    return KeyLookup(**rows[0]) if rows else None


def tenant_id_by_name(cur: TenantTx, name: str) -> UUID | None:
    row = cur.execute("SELECT tenant_id_by_name(%s) AS id", (name,)).fetchone()
    return row["id"] if row else None


def insert_tenant(cur: TenantTx, tenant_id: UUID, name: str) -> None:
    """`cur` must be a transaction for `tenant_id` (the policy checks the new row)."""
    cur.execute("INSERT INTO tenants (id, name) VALUES (%s, %s)", (tenant_id, name))


def insert_key(cur: TenantTx, tenant_id: UUID, key_hash: bytes, prefix: str, name: str) -> UUID:
    row = cur.execute(
        """INSERT INTO api_keys (tenant_id, key_hash, prefix, name) VALUES (%s, %s, %s, %s)
           ON CONFLICT (key_hash) DO UPDATE SET revoked_at = NULL
           WHERE api_keys.tenant_id = EXCLUDED.tenant_id
           RETURNING id""",
        (tenant_id, key_hash, prefix, name),
    ).fetchone()
    if row is None:
        raise Conflict("that key already belongs to another tenant")
    key_id: UUID = row["id"]
    return key_id


def revoke_key(
    cur: TenantTx, tenant_id: UUID, *, key_hash: bytes | None = None, prefix: str | None = None
) -> int:
    # The tenant is named explicitly: locally the admin connection is a superuser, which RLS skips.
    if key_hash is not None:
        cur.execute(
            "UPDATE api_keys SET revoked_at = now() "
            "WHERE tenant_id = %s AND key_hash = %s AND revoked_at IS NULL",
            (tenant_id, key_hash),
        )
    else:
        cur.execute(
            "UPDATE api_keys SET revoked_at = now() "
            "WHERE tenant_id = %s AND prefix = %s AND revoked_at IS NULL",
            (tenant_id, prefix),
        )
    return cur.rowcount


def list_keys(cur: TenantTx, tenant_id: UUID) -> list[ApiKeyRow]:
    rows = cur.execute(
        "SELECT id, prefix, name, created_at, revoked_at FROM api_keys "
        "WHERE tenant_id = %s ORDER BY created_at",
        (tenant_id,),
    ).fetchall()
    return [ApiKeyRow(**row) for row in rows]
