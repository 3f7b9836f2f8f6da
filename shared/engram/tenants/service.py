"""Tenant administration and API-key authentication."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

from engram.db.party import NOBODY, Party
from engram.errors import Forbidden, InvalidInput, Unauthorized
from engram.tenants import repo
from engram.tenants.keys import from_plaintext, hash_api_key, new_api_key
from engram.tenants.principal import Principal

if TYPE_CHECKING:
    from engram.db.database import Database, UnitOfWork

UNKNOWN_OR_REVOKED = "unknown or revoked API key"
TENANT_NAME_RULE = "lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 63"
# `keys list` prints one key per line, and API Gateway keeps the name as the key's description.
KEY_NAME_MAX = 200


@dataclass(frozen=True)
class IssuedKey:
    tenant_id: UUID
    tenant_name: str
    key_id: UUID
    plaintext: str
    prefix: str


def authenticate(db: Database, api_key: str | None) -> Principal:
    if not api_key:
        raise Unauthorized("missing API key: send it in the x-api-key header")
    found = repo.lookup_key(db, hash_api_key(api_key))
    if found is None or found.revoked:
        # One answer for both: a caller must not learn which keys once existed.
        raise Forbidden(UNKNOWN_OR_REVOKED)
    return Principal(tenant_id=found.tenant_id, tenant_name=found.tenant_name, key_id=found.key_id)


def ensure_tenant(admin_db: Database, name: str) -> UUID:
    with _created_if_missing(admin_db, name, NOBODY) as uow:
        return uow.tenant_id


@contextmanager
def tenant_unit_of_work(
    admin_db: Database, name: str, *, app_role: str, party: Party
) -> Iterator[UnitOfWork]:
    """A unit of work for the tenant `name`, as the app role (its rights, RLS), that first creates the
    tenant if there is none: so that the tenant is there afterwards only if the work commits (an import
    refused into a new tenant leaves no empty one behind)."""
    with _created_if_missing(admin_db, name, party) as uow:
        uow.run_as(app_role)
        yield uow


@contextmanager
def _created_if_missing(admin_db: Database, name: str, party: Party) -> Iterator[UnitOfWork]:
    """An administrator's unit of work for the tenant `name`, which creates it first if it does not
    exist."""
    check_tenant_name(name)
    with admin_db.transaction() as cur:
        existing = repo.tenant_id_by_name(cur, name)
    tenant_id = existing or uuid.uuid4()
    with admin_db.unit_of_work(tenant_id, party) as uow:
        if existing is None:
            repo.insert_tenant(uow.cur, tenant_id, name)
        yield uow


def issue_key(
    admin_db: Database, tenant_name: str, *, plaintext: str | None = None, label: str = ""
) -> IssuedKey:
    """Create a tenant if needed and give it a key: a new random one, or `plaintext` (the dev key)."""
    key = from_plaintext(plaintext) if plaintext else new_api_key()
    tenant_id, key_id = register_key(admin_db, tenant_name, key.key_hash, key.prefix, label=label)
    return IssuedKey(tenant_id, tenant_name, key_id, key.plaintext, key.prefix)


def register_key(
    admin_db: Database, tenant_name: str, key_hash: bytes, prefix: str, *, label: str = ""
) -> tuple[UUID, UUID]:
    """Store a key that was made elsewhere (the AWS path: the CLI makes it and only its hash travels).
    Creates the tenant if needed; returns (tenant_id, key_id)."""
    check_key_name(label)
    if len(key_hash) != 32:
        raise InvalidInput("key_hash must be a SHA-256 digest (32 bytes)", details={"field": "key_hash"})
    tenant_id = ensure_tenant(admin_db, tenant_name)
    with admin_db.tenant(tenant_id) as cur:
        key_id = repo.insert_key(cur, tenant_id, key_hash, prefix, label)
    return tenant_id, key_id


def revoke_key(
    admin_db: Database,
    tenant_name: str,
    *,
    plaintext: str | None = None,
    prefix: str | None = None,
    key_hash: bytes | None = None,
) -> int:
    tenant_id = ensure_existing_tenant(admin_db, tenant_name)
    with admin_db.tenant(tenant_id) as cur:
        if plaintext or key_hash:
            return repo.revoke_key(cur, tenant_id, key_hash=key_hash or hash_api_key(plaintext or ""))
        if not prefix:
            raise InvalidInput("give the key, its hash or its prefix")
        return repo.revoke_key(cur, tenant_id, prefix=prefix)


def ensure_existing_tenant(admin_db: Database, name: str) -> UUID:
    with admin_db.transaction() as cur:
        tenant_id = repo.tenant_id_by_name(cur, name)
    if tenant_id is None:
        raise InvalidInput(f"no tenant named {name!r}")
    return tenant_id


def check_tenant_name(name: str) -> None:
    import re

    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,62}", name):
        raise InvalidInput(f"invalid tenant name {name!r}: {TENANT_NAME_RULE}")


def check_key_name(label: str) -> None:
    """A key's name is one line of printable text: a line break or tab would break `keys list`."""
    if len(label) > KEY_NAME_MAX or not label.isprintable():
        raise InvalidInput(
            f"invalid key name {label[:40]!r}{'…' if len(label) > 40 else ''} ({len(label)} characters): "
            f"printable text on one line, at most {KEY_NAME_MAX} characters",
            details={"field": "name"},
        )
