"""Working memory logic: compare-and-swap writes, expiry, listing. No SQL here."""

from __future__ import annotations

from uuid import UUID

from engram.db.database import Database
from engram.errors import InvalidInput, NotFound
from engram.versions import Expected, VersionConflict
from engram.working import repo
from engram.working.models import ScopeCleared, WorkingItem, WorkingPut, WorkingScope


class WorkingMemoryService:
    def __init__(self, db: Database) -> None:
        self.db = db

    def put(
        self, tenant_id: UUID, scope: str, key: str, request: WorkingPut, expected: Expected
    ) -> tuple[WorkingItem, bool]:
        """Write `value`; with If-Match only if the key is still at that version. Returns the item
        and whether the key was created (it did not exist, or had expired). An update that sends no
        `ttl_seconds` keeps the key's expiry; `null` clears it; a number sets it anew."""
        with self.db.tenant(tenant_id) as cur:
            row = repo.write(
                cur,
                tenant_id,
                scope,
                key,
                request.value,
                request.ttl_seconds,
                keep_ttl="ttl_seconds" not in request.model_fields_set,
                user_id=request.user_id,
                keep_user="user_id" not in request.model_fields_set,
                version=expected.version,
                exists=expected.exists,
            )
            if row is None:
                current = repo.current_version(cur, tenant_id, scope, key)
                raise _conflict(scope, key, expected, current)
        created = bool(row.pop("created"))
        return WorkingItem(**row), created

    def get(self, tenant_id: UUID, scope: str, key: str) -> WorkingItem:
        with self.db.tenant(tenant_id) as cur:
            row = repo.get(cur, tenant_id, scope, key)
        if row is None:
            raise NotFound(f"no key {key!r} in working scope {scope!r}")
        return WorkingItem(**row)

    def list(self, tenant_id: UUID, scope: str, *, after: str | None, limit: int) -> WorkingScope:
        with self.db.tenant(tenant_id) as cur:
            rows = repo.list_scope(cur, tenant_id, scope, after, limit + 1)
        items = [WorkingItem(**row) for row in rows[:limit]]
        return WorkingScope(scope=scope, items=items, next_after=items[-1].key if len(rows) > limit else None)

    def delete(self, tenant_id: UUID, scope: str, key: str, expected: Expected) -> None:
        with self.db.tenant(tenant_id) as cur:
            # If-Match: 0 (the key must not exist) has nothing to delete: it only learns why not.
            if expected.exists is not False and repo.delete(cur, tenant_id, scope, key, expected.version):
                return
            current = repo.current_version(cur, tenant_id, scope, key)
        if current is None:
            raise NotFound(f"no key {key!r} in working scope {scope!r}")
        raise _conflict(scope, key, expected, current)

    def clear(self, tenant_id: UUID, scope: str, expected: Expected) -> ScopeCleared:
        """Every key of the scope. A condition on versions is refused, not ignored: each key has its own."""
        if expected is not Expected.ANY:
            raise InvalidInput(
                "If-Match applies to one key (DELETE /v1/working/{scope}/{key}); a scope is cleared whole",
                details={"field": "If-Match"},
            )
        with self.db.tenant(tenant_id) as cur:
            deleted = repo.delete_scope(cur, tenant_id, scope)
        return ScopeCleared(scope=scope, deleted=deleted)


def _conflict(scope: str, key: str, expected: Expected, current: int | None) -> VersionConflict:
    if expected.exists is False:
        message = f"key {key!r} in working scope {scope!r} already exists at version {current}"
    elif current is None:
        message = f"key {key!r} in working scope {scope!r} does not exist (or has expired)"
    else:
        message = (
            f"key {key!r} in working scope {scope!r} is at version {current}, not {expected.version}: "
            "read it again, then retry with If-Match set to the current version"
        )
    return VersionConflict(message, details={"current_version": current})
