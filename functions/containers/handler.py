"""The containers endpoint group: the tenant's data as a whole. The container tree with counts, create,
delete (confirmed), archive; the custom extraction instructions of the tenant and of each container;
and erasing one user's data (confirmed)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.containers.models import (
    Container,
    ContainerArchived,
    ContainerCreate,
    ContainerDeleted,
    ContainerTree,
)
from engram.fields import QueryFlag
from engram.instructions.models import Instructions, InstructionsList, InstructionsSet
from engram.memories.models import CONTAINER_PATTERN, Identifier
from engram.observability import logger, tracer
from engram.users.models import UserErasure

app = build_resolver()
Name = Annotated[
    str, Path(pattern=CONTAINER_PATTERN, description="the container's full name, e.g. crm.contacts")
]


@app.get("/v1/containers")
def container_tree() -> ContainerTree:
    return deps.container_service().tree(tenant_of(app))


@app.post("/v1/containers")
def create_container(body: ContainerCreate) -> tuple[Container, int]:
    container, created = deps.container_service().create(tenant_of(app), body)
    return container, 201 if created else 200


@app.delete("/v1/containers/<name>")
def delete_container(
    name: Name,
    confirm: Annotated[QueryFlag, Query(description="required when the container is not empty")] = False,
) -> ContainerDeleted:
    return deps.container_service().delete(tenant_of(app), name, confirm=confirm)


@app.post("/v1/containers/<name>/archive")
def archive_container(name: Name) -> ContainerArchived:
    return deps.container_service().archive(tenant_of(app), name)


@app.delete("/v1/users/<user_id>")
def erase_user(
    user_id: Annotated[Identifier, Path(description="the user whose data goes: every row of theirs")],
    confirm: Annotated[
        QueryFlag, Query(description="required to erase; without it, a 409 lists what would go")
    ] = False,
) -> UserErasure:
    return deps.user_erasure().erase(tenant_of(app), user_id, confirm=confirm)


ScopeQuery = Annotated[
    str | None,
    Query(pattern=CONTAINER_PATTERN, description="a container; omit for the whole tenant's instructions"),
]


@app.get("/v1/extraction-instructions")
def list_instructions(container: ScopeQuery = None) -> InstructionsList:
    return deps.instructions_service().list(tenant_of(app), container)


@app.put("/v1/extraction-instructions")
def put_instructions(body: InstructionsSet) -> tuple[Instructions, int]:
    instructions, created = deps.instructions_service().put(tenant_of(app), body)
    return instructions, 201 if created else 200


@app.delete("/v1/extraction-instructions", responses={204: {"description": "removed"}})
def delete_instructions(container: ScopeQuery = None) -> None:
    deps.instructions_service().delete(tenant_of(app), container)
    return no_content()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
