"""Request and response models of the plans and task-context APIs."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from engram.fields import JsonDocument as StorableJson
from engram.fields import JsonObject as StorableObject
from engram.fields import NoNul
from engram.lazymodel import LazyModel
from engram.memories.models import Identifier

ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
STATUS_PATTERN = r"^[a-z0-9_-]{1,32}$"
MAX_JSON_BYTES = 256 * 1024
MAX_SUB_TASKS = 1000

ItemId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Status = Annotated[str, StringConstraints(pattern=STATUS_PATTERN)]
EventName = Annotated[str, StringConstraints(min_length=1, max_length=256), *NoNul]
Topic = Annotated[str, StringConstraints(min_length=1, max_length=512), *NoNul]


def _json_fits(value: Any) -> Any:
    encoded = json.dumps(value, ensure_ascii=False)
    if len(encoded.encode("utf-8")) > MAX_JSON_BYTES:
        raise ValueError(f"is larger than {MAX_JSON_BYTES} bytes of JSON")
    return value


def _distinct(ids: list[str]) -> list[str]:
    if len(set(ids)) != len(ids):
        raise ValueError("must not name a sub-task twice")
    return ids


# What engram.fields checks (no NUL, finite numbers, bounded nesting), and a size bound.
JsonObject = Annotated[StorableObject, AfterValidator(_json_fits)]
JsonDocument = Annotated[StorableJson, AfterValidator(_json_fits)]
SubTasks = Annotated[list[ItemId], Field(max_length=MAX_SUB_TASKS), AfterValidator(_distinct)]


class _Strict(LazyModel):
    model_config = ConfigDict(extra="forbid")


class _Update(_Strict):
    """PUT changes the fields it carries; `nullable` are those that may be set to null."""

    nullable: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*")
    @classmethod
    def _null_only_where_allowed(cls, value: Any, info: ValidationInfo) -> Any:
        # A field validator (not the model's) so that the 422 names the field, not the body.
        if value is None and info.field_name not in cls.nullable:
            raise ValueError(f"{info.field_name} cannot be null")
        return value

    @model_validator(mode="after")
    def _something_to_change(self) -> _Update:
        if not self.model_fields_set:
            raise ValueError(f"nothing to change: send at least one of {', '.join(type(self).model_fields)}")
        return self

    def changes(self) -> dict[str, Any]:
        return self.model_dump(include=self.model_fields_set)


class PlanCreate(_Strict):
    plan_id: ItemId = Field(description="the caller's id for the plan, unique in the tenant")
    goal_event: EventName = Field(description="the event that set the goal, e.g. trip.requested")
    goal_data: JsonObject = Field(default_factory=dict, description="the goal's data")
    status: Status = Field(default="pending", description="lower-case, e.g. pending, running, done, failed")
    state: JsonDocument = Field(default_factory=dict, description="any JSON the agents keep with the plan")
    user_id: Identifier | None = Field(default=None, description="the user the plan is for")


class PlanUpdate(_Update):
    nullable: ClassVar[frozenset[str]] = frozenset({"state", "user_id"})
    goal_event: EventName | None = None
    goal_data: JsonObject | None = None
    status: Status | None = None
    state: JsonDocument = None
    user_id: Identifier | None = None


class Plan(LazyModel):
    plan_id: str
    goal_event: str
    goal_data: dict[str, Any]
    status: str
    state: Any
    user_id: str | None
    version: int = Field(description="send it back in If-Match to write only if nobody wrote in between")
    created_at: datetime
    updated_at: datetime


class PlanPage(LazyModel):
    plans: list[Plan]
    next_cursor: str | None


class TaskContextCreate(_Strict):
    task_id: ItemId = Field(description="the caller's id for the task, unique in the tenant")
    plan_id: ItemId | None = Field(default=None, description="the plan the task belongs to")
    event_type: EventName = Field(description="the event the task handles")
    response_event: EventName | None = Field(default=None, description="the event to answer with")
    response_topic: Topic | None = Field(default=None, description="where to send the answer")
    data: JsonObject = Field(default_factory=dict)
    sub_tasks: SubTasks = Field(
        default_factory=list, description="ids of the sub-tasks it waits for; each belongs to one task"
    )
    state: JsonDocument = Field(default_factory=dict)


class TaskContextUpdate(_Update):
    nullable: ClassVar[frozenset[str]] = frozenset({"plan_id", "response_event", "response_topic", "state"})
    plan_id: ItemId | None = None
    event_type: EventName | None = None
    response_event: EventName | None = None
    response_topic: Topic | None = None
    data: JsonObject | None = None
    sub_tasks: SubTasks | None = Field(default=None, description="replaces the list")
    state: JsonDocument = None


class TaskContext(LazyModel):
    task_id: str
    plan_id: str | None
    event_type: str
    response_event: str | None
    response_topic: str | None
    data: dict[str, Any]
    sub_tasks: list[str]
    state: Any
    version: int = Field(description="send it back in If-Match to write only if nobody wrote in between")
    created_at: datetime
    updated_at: datetime


class TaskContextPage(LazyModel):
    task_contexts: list[TaskContext]
    next_cursor: str | None
