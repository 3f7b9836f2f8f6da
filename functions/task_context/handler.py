"""The task-context endpoint group: what an agent keeps while a task waits for its sub-tasks, and a
sub-task's parent task."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, principal_of, resolve, with_etag
from engram.observability import logger, tracer
from engram.pagination import MAX_CURSOR_CHARS
from engram.plans.models import ID_PATTERN, TaskContext, TaskContextCreate, TaskContextPage, TaskContextUpdate
from engram.versions import Expected

app = build_resolver()
TaskId = Annotated[str, Path(description="the task's id")]


def _expected() -> Expected:
    return Expected.parse(app.current_event.headers.get("If-Match"))


@app.post("/v1/task-context")
def create_task_context(body: TaskContextCreate) -> Response[TaskContext]:
    task = deps.task_context_service().create(principal_of(app).tenant_id, body)
    return with_etag(task, task.version, 201)


@app.get("/v1/task-context")
def list_task_contexts(
    plan_id: Annotated[str | None, Query(pattern=ID_PATTERN, description="only this plan's tasks")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
) -> TaskContextPage:
    return deps.task_context_service().list(
        principal_of(app).tenant_id, plan_id=plan_id, limit=limit, cursor=cursor
    )


@app.get("/v1/task-context/by-subtask/<subtask_id>")
def find_task_context_by_subtask(
    subtask_id: Annotated[str, Path(description="a sub-task's id")],
) -> Response[TaskContext]:
    task = deps.task_context_service().by_sub_task(principal_of(app).tenant_id, subtask_id)
    return with_etag(task, task.version)


@app.get("/v1/task-context/<task_id>")
def get_task_context(task_id: TaskId) -> Response[TaskContext]:
    task = deps.task_context_service().get(principal_of(app).tenant_id, task_id)
    return with_etag(task, task.version)


@app.put("/v1/task-context/<task_id>")
def update_task_context(task_id: TaskId, body: TaskContextUpdate) -> Response[TaskContext]:
    task, created = deps.task_context_service().update(
        principal_of(app).tenant_id, task_id, body, _expected()
    )
    return with_etag(task, task.version, 201 if created else 200)


@app.delete("/v1/task-context/<task_id>", responses={204: {"description": "deleted"}})
def delete_task_context(task_id: TaskId) -> None:
    deps.task_context_service().delete(principal_of(app).tenant_id, task_id, _expected())
    return Response(status_code=204, body="")  # type: ignore[return-value]


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
