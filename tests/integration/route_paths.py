"""A value for each path parameter of the routes: tests that call every route fill its path with these."""

from __future__ import annotations

import uuid

PATH_VALUES = {
    "id": str(uuid.UUID(int=1)),
    "memory_id": str(uuid.UUID(int=2)),
    "scope": "s",
    "key": "k",
    "name": "c",
    "plan_id": "p",
    "task_id": "t",
    "subtask_id": "st",
    "user_id": "u",
}
