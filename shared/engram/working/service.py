"""Working memory logic: compare-and-swap writes, expiry, listing. No SQL here."""

from __future__ import annotations

from uuid import UUID

from engram.db.database import Database
from engram.errors import Conflict, InvalidInput, NotFound
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
        `ttl_seconds` keeps the key's expiry; `null` clears it; a number sets it anew. A write for a
        user (`user_id` given, not null) never takes a live key of another user: a 409 on `user_id`."""
        for_user = request.user_id if "user_id" in request.model_fields_set else None
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
                for_user=for_user,
                version=expected.version,
                exists=expected.exists,
            )
            if row is None:
                current = repo.current_version(cur, tenant_id, scope, key)
                if (
                    for_user is not None
                    and current is not None
                    and repo.get(cur, tenant_id, scope, key, for_user=for_user) is None
                ):
                    raise Conflict(
                        f"key {key!r} in working scope {scope!r} belongs to another user: a write for "
                        f"user {for_user!r} cannot change it; write it without user_id, as the tenant",
                        details={"field": "user_id"},
                    )
                raise _conflict(scope, key, expected, current)
        created = bool(row.pop("created"))
        return WorkingItem(**row), created

    def get(self, tenant_id: UUID, scope: str, key: str, *, user_id: str | None = None) -> WorkingItem:
        """The key; made for a user (`user_id`), a key of another user is not found (one of no user is)."""
        with self.db.tenant(tenant_id) as cur:
            row = repo.get(cur, tenant_id, scope, key, for_user=user_id)
        if row is None:
            raise NotFound(f"no key {key!r} in working scope {scope!r}")
        return WorkingItem(**row)

    def list(
        self, tenant_id: UUID, scope: str, *, after: str | None, limit: int, user_id: str | None
    ) -> WorkingScope:
        """The scope's keys; made for a user (`user_id`), theirs and those of no user."""
        with self.db.tenant(tenant_id) as cur:
            rows = repo.list_scope(cur, tenant_id, scope, after, limit + 1, for_user=user_id)
        items = [WorkingItem(**row) for row in rows[:limit]]
        return WorkingScope(scope=scope, items=items, next_after=items[-1].key if len(rows) > limit else None)

    def delete(
        self, tenant_id: UUID, scope: str, key: str, expected: Expected, *, user_id: str | None = None
    ) -> None:
        """Delete the key; made for a user (`user_id`), a key of another user is not found."""
        with self.db.tenant(tenant_id) as cur:
            # If-Match: 0 (the key must not exist) has nothing to delete: it only learns why not.
            if expected.exists is not False and repo.delete(
                cur, tenant_id, scope, key, expected.version, for_user=user_id
            ):
                return
            seen = repo.get(cur, tenant_id, scope, key, for_user=user_id)
            current = None if seen is None else int(seen["version"])
        if current is None:
            raise NotFound(f"no key {key!r} in working scope {scope!r}")
        raise _conflict(scope, key, expected, current)

    def clear(self, tenant_id: UUID, scope: str, expected: Expected, *, user_id: str | None) -> ScopeCleared:
        """Every key of the scope (made for a user: theirs and those of no user). A condition on versions
        is refused, not ignored: each key has its own."""
        if expected is not Expected.ANY:
            raise InvalidInput(
                "If-Match applies to one key (DELETE /v1/working/{scope}/{key}); a scope is cleared whole",
                details={"field": "If-Match"},
            )
        with self.db.tenant(tenant_id) as cur:
            deleted = repo.delete_scope(cur, tenant_id, scope, for_user=user_id)
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
