"""Plans and task contexts: create (ids are the caller's), read, list, change and delete with
compare-and-swap (If-Match), and a sub-task's parent task. No SQL here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from engram.db.database import Database, TenantTx
from engram.errors import Conflict, InvalidInput, NotFound
from engram.fields import error_message
from engram.lazymodel import LazyModel
from engram.pagination import decode_key_cursor, encode_cursor, listing
from engram.plans import repo
from engram.plans.models import (
    Plan,
    PlanCreate,
    PlanPage,
    PlanUpdate,
    TaskContext,
    TaskContextCreate,
    TaskContextPage,
    TaskContextUpdate,
)
from engram.versions import Expected, VersionConflict


class AlreadyExists(Conflict):
    code = "already_exists"


class _Items:
    """What plans and task contexts share: a table keyed by the caller's id, with versions."""

    table: repo.Table
    what: str
    create_model: type[LazyModel]  # what POST takes: a PUT with If-Match: 0 creates as it does

    def __init__(self, db: Database) -> None:
        self.db = db

    def _insert(self, cur: TenantTx, tenant_id: UUID, fields: dict[str, Any]) -> dict[str, Any]:
        row = repo.insert(cur, self.table, tenant_id, fields)
        if row is None:
            key = fields[self.table.key]
            raise AlreadyExists(
                f"{self.what} {key!r} already exists: change it with PUT, or delete it first",
                details={"field": self.table.key},
            )
        return row

    def _get(self, tenant_id: UUID, key: str) -> dict[str, Any]:
        with self.db.tenant(tenant_id) as cur:
            row = repo.get(cur, self.table, tenant_id, key)
        if row is None:
            raise self._not_found(key)
        return row

    def _update(
        self, cur: TenantTx, tenant_id: UUID, key: str, changes: dict[str, Any], expected: Expected
    ) -> tuple[dict[str, Any], bool]:
        """The row written, and whether it was created. If-Match: 0 writes only if the item is absent
        (as in working memory): it creates the item from the fields sent, as POST would."""
        if expected.exists is False:
            row = repo.insert(cur, self.table, tenant_id, self._as_created(key, changes))
            if row is None:
                raise self._conflict(key, expected, repo.current_version(cur, self.table, tenant_id, key))
            return row, True
        row = repo.update(cur, self.table, tenant_id, key, changes, expected.version)
        if row is None:
            raise self._missing_or_conflict(cur, tenant_id, key, expected)
        return row, False

    def _as_created(self, key: str, changes: dict[str, Any]) -> dict[str, Any]:
        """The fields of a PUT that creates (If-Match: 0), checked and completed as POST's body is."""
        try:
            return self.create_model.model_validate({**changes, self.table.key: key}).model_dump()
        except ValidationError as exc:
            problem = exc.errors()[0]
            field = ".".join(str(part) for part in problem["loc"]) or self.table.key
            reason = "required" if problem["type"] == "missing" else error_message(problem)
            raise InvalidInput(
                f"{field}: {reason} to create {self.what} {key[:128]!r} (If-Match: 0 creates it)",
                details={"field": field},
            ) from None

    def _delete(self, tenant_id: UUID, key: str, expected: Expected) -> None:
        with self.db.tenant(tenant_id) as cur:
            if expected.exists is not False and repo.delete(
                cur, self.table, tenant_id, key, expected.version
            ):
                return
            raise self._missing_or_conflict(cur, tenant_id, key, expected)

    def _page(
        self, tenant_id: UUID, filters: dict[str, str | None], limit: int, cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        pages = listing(self.table.name, **filters)
        after = decode_key_cursor(cursor, pages)
        with self.db.tenant(tenant_id) as cur:
            rows = repo.list_page(cur, self.table, tenant_id, filters, limit + 1, after)
        page = rows[:limit]
        more = len(rows) > limit
        next_cursor = encode_cursor(pages, page[-1]["created_at"], page[-1][self.table.key]) if more else None
        return page, next_cursor

    def _missing_or_conflict(self, cur: TenantTx, tenant_id: UUID, key: str, expected: Expected) -> Exception:
        current = repo.current_version(cur, self.table, tenant_id, key)
        if current is None:
            return self._not_found(key)
        return self._conflict(key, expected, current)

    def _not_found(self, key: str) -> NotFound:
        return NotFound(f"{self.what} {key[:128]!r} not found")

    def _conflict(self, key: str, expected: Expected, current: int | None) -> VersionConflict:
        if expected.exists is False:
            message = (
                f"{self.what} {key!r} already exists at version {current} "
                "(If-Match: 0 asks for one that does not)"
            )
        else:
            message = (
                f"{self.what} {key!r} is at version {current}, not {expected.version}: read it again, "
                "then retry with If-Match set to the current version"
            )
        return VersionConflict(message, details={"current_version": current})


class PlanService(_Items):
    table = repo.PLANS
    what = "plan"
    create_model = PlanCreate

    def create(self, tenant_id: UUID, request: PlanCreate) -> Plan:
        with self.db.tenant(tenant_id) as cur:
            return Plan(**self._insert(cur, tenant_id, request.model_dump()))

    def get(self, tenant_id: UUID, plan_id: str) -> Plan:
        return Plan(**self._get(tenant_id, plan_id))

    def update(
        self, tenant_id: UUID, plan_id: str, request: PlanUpdate, expected: Expected
    ) -> tuple[Plan, bool]:
        """The plan, and whether this PUT created it (If-Match: 0)."""
        with self.db.tenant(tenant_id) as cur:
            row, created = self._update(cur, tenant_id, plan_id, request.changes(), expected)
        return Plan(**row), created

    def delete(self, tenant_id: UUID, plan_id: str, expected: Expected) -> None:
        self._delete(tenant_id, plan_id, expected)

    def list(
        self, tenant_id: UUID, *, status: str | None, user_id: str | None, limit: int, cursor: str | None
    ) -> PlanPage:
        rows, next_cursor = self._page(tenant_id, {"status": status, "user_id": user_id}, limit, cursor)
        return PlanPage(plans=[Plan(**row) for row in rows], next_cursor=next_cursor)


class TaskContextService(_Items):
    table = repo.TASKS
    what = "task context"
    create_model = TaskContextCreate

    def create(self, tenant_id: UUID, request: TaskContextCreate) -> TaskContext:
        with self.db.tenant(tenant_id) as cur:
            self._claim(cur, tenant_id, request.task_id, request.sub_tasks)
            return TaskContext(**self._insert(cur, tenant_id, request.model_dump()))

    def get(self, tenant_id: UUID, task_id: str) -> TaskContext:
        return TaskContext(**self._get(tenant_id, task_id))

    def update(
        self, tenant_id: UUID, task_id: str, request: TaskContextUpdate, expected: Expected
    ) -> tuple[TaskContext, bool]:
        """The task context, and whether this PUT created it (If-Match: 0)."""
        changes = request.changes()
        with self.db.tenant(tenant_id) as cur:
            if "sub_tasks" in changes:
                self._claim(cur, tenant_id, task_id, changes["sub_tasks"])
            row, created = self._update(cur, tenant_id, task_id, changes, expected)
        return TaskContext(**row), created

    def delete(self, tenant_id: UUID, task_id: str, expected: Expected) -> None:
        self._delete(tenant_id, task_id, expected)

    def list(
        self, tenant_id: UUID, *, plan_id: str | None, limit: int, cursor: str | None
    ) -> TaskContextPage:
        rows, next_cursor = self._page(tenant_id, {"plan_id": plan_id}, limit, cursor)
        return TaskContextPage(task_contexts=[TaskContext(**row) for row in rows], next_cursor=next_cursor)

    def by_sub_task(self, tenant_id: UUID, sub_task: str) -> TaskContext:
        with self.db.tenant(tenant_id) as cur:
            owner = repo.sub_task_owners(cur, [sub_task]).get(sub_task)
            row = repo.get(cur, self.table, tenant_id, owner) if owner is not None else None
        if row is None:
            raise NotFound(f"no task context lists sub-task {sub_task[:128]!r}")
        return TaskContext(**row)

    def _claim(self, cur: TenantTx, tenant_id: UUID, task_id: str, sub_tasks: Sequence[str]) -> None:
        """A sub-task belongs to one task: refuse ids another task of the tenant already lists."""
        if not sub_tasks:
            return
        repo.lock_sub_tasks(cur, tenant_id, sub_tasks)
        taken = {s: owner for s, owner in repo.sub_task_owners(cur, sub_tasks).items() if owner != task_id}
        if taken:
            sub_task, owner = next(iter(sorted(taken.items())))
            raise Conflict(
                f"sub-task {sub_task!r} already belongs to task {owner!r}"
                + (f" (and {len(taken) - 1} more sub-tasks to other tasks)" if len(taken) > 1 else ""),
                details={"field": "sub_tasks"},
            )
