"""`WorkflowState`: the shared state of a multi-agent plan, in Engram's working memory.

Values by key (`set`, `get`, `delete`, and `update`, a read-modify-write that retries when another
agent wrote in between), and an append-only history of actions (`record_action`,
`get_action_history`) that agents writing at the same time never lose: each action is created at the
next free position with If-Match "0" (only if absent), and a 409 means another agent took that
position, so the write moves on to the next. `cleanup` removes the whole plan's state.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from engram_client.client import Engram
from engram_client.errors import ConflictError, NotFoundError

_SCOPE_PART = re.compile(r"^[A-Za-z0-9_.:-]{1,118}$")
_KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,250}$")
_VALUE, _ACTION = "v.", "a."


class WorkflowState:
    def __init__(self, client: Engram, plan_id: str, *, max_attempts: int = 100) -> None:
        self.client = client
        self.plan_id = plan_id
        self.max_attempts = max_attempts
        if _SCOPE_PART.match(plan_id):
            self.scope = f"workflow:{plan_id}"
        else:
            self.scope = f"workflow-h:{hashlib.sha256(plan_id.encode()).hexdigest()[:48]}"
        self._next_position: int | None = None

    @staticmethod
    def _value_key(key: str) -> str:
        if not _KEY.match(key):
            raise ValueError(f"key {key!r}: 1-250 letters, digits, '_', '.', ':' or '-'")
        return _VALUE + key

    # --- values -----------------------------------------------------------------------------------

    def set(self, key: str, value: Any, *, ttl_seconds: int | None = None) -> None:
        """Store a JSON value under `key` (optionally expiring), whatever was there: without
        `ttl_seconds` it never expires, even if the value it replaces would have (null clears it)."""
        self.client.set_working(self.scope, self._value_key(key), value=value, ttl_seconds=ttl_seconds)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self.client.get_working(self.scope, self._value_key(key)).value
        except NotFoundError:
            return default

    def delete(self, key: str) -> bool:
        """True if the key was there."""
        try:
            self.client.delete_working(self.scope, self._value_key(key))
        except NotFoundError:
            return False
        return True

    def update(self, key: str, change: Callable[[Any], Any], default: Any = None) -> Any:
        """Set `key` to change(its value, or `default`), retrying if another agent writes in between;
        returns the new value."""
        name = self._value_key(key)
        for attempt in range(self.max_attempts):
            try:
                item = self.client.get_working(self.scope, name)
                current, version = item.value, item.version
            except NotFoundError:
                current, version = default, 0  # If-Match 0: only if it still does not exist
            new = change(current)
            try:
                self.client.set_working(self.scope, name, value=new, if_match=version)
                return new
            except ConflictError:
                _pause(attempt)
        raise ConflictError(
            f"{key!r} of plan {self.plan_id!r} kept changing: gave up after {self.max_attempts} attempts",
            code="too_much_contention",
            status=409,
        )

    # --- the action history -----------------------------------------------------------------------

    def record_action(self, action: str, data: Any = None, *, agent_id: str | None = None) -> dict[str, Any]:
        """Append an action to the plan's history; returns the entry, with its position."""
        position = self._next_position or self._last_position() + 1
        for attempt in range(self.max_attempts):
            entry = {
                "position": position,
                "action": action,
                "data": data,
                "agent_id": agent_id,
                "recorded_at": datetime.now(UTC).isoformat(),
            }
            try:
                self.client.set_working(self.scope, f"{_ACTION}{position:012d}", value=entry, if_match=0)
            except ConflictError:
                position += 1  # another agent recorded at this position: take the next
                if attempt >= 3:
                    _pause(attempt)
                continue
            self._next_position = position + 1
            return entry
        raise ConflictError(
            f"could not record an action for plan {self.plan_id!r} in {self.max_attempts} attempts",
            code="too_much_contention",
            status=409,
        )

    def _actions(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = _ACTION
        while True:
            page = self.client.list_working(self.scope, after=after, limit=1000)
            for item in page.items:
                if not item.key.startswith(_ACTION):
                    return found
                found.append(item.value)
            if page.next_after is None:
                return found
            after = page.next_after

    def _last_position(self) -> int:
        actions = self._actions()
        return int(actions[-1]["position"]) if actions else 0

    def get_action_history(self) -> list[dict[str, Any]]:
        """Every recorded action, oldest first."""
        return self._actions()

    def cleanup(self) -> int:
        """Delete the plan's values and history; returns how many keys were removed."""
        self._next_position = None
        return self.client.clear_working(self.scope).deleted


def _pause(attempt: int) -> None:
    """Spread retrying agents out a little (at most 50 ms)."""
    time.sleep(random.uniform(0, min(0.05, 0.002 * (attempt + 1))))
