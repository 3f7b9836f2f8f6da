"""The containers endpoint group: the tree with counts, create, delete (confirmed), archive."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, principal_of, resolve
from engram.containers.models import (
    Container,
    ContainerArchived,
    ContainerCreate,
    ContainerDeleted,
    ContainerTree,
)
from engram.memories.models import CONTAINER_PATTERN
from engram.observability import logger, tracer

app = build_resolver()
Name = Annotated[
    str, Path(pattern=CONTAINER_PATTERN, description="the container's full name, e.g. crm.contacts")
]


@app.get("/v1/containers")
def container_tree() -> ContainerTree:
    return deps.container_service().tree(principal_of(app).tenant_id)


@app.post("/v1/containers")
def create_container(body: ContainerCreate) -> tuple[Container, int]:
    container, created = deps.container_service().create(principal_of(app).tenant_id, body)
    return container, 201 if created else 200


@app.delete("/v1/containers/<name>")
def delete_container(
    name: Name,
    confirm: Annotated[bool, Query(description="required when the container is not empty")] = False,
) -> ContainerDeleted:
    return deps.container_service().delete(principal_of(app).tenant_id, name, confirm=confirm)


@app.post("/v1/containers/<name>/archive")
def archive_container(name: Name) -> ContainerArchived:
    return deps.container_service().archive(principal_of(app).tenant_id, name)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
