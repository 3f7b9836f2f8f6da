"""The knowledge-graph endpoint group: entities, their observations, relations, and subgraphs."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.api.ids import path_id
from engram.fields import Filled, QueryFlag, Text, Timestamp
from engram.graph.models import (
    MAX_DEPTH,
    Entity,
    EntityCreate,
    EntityDetail,
    EntityPage,
    Observation,
    ObservationCreate,
    Relation,
    RelationCreate,
    Subgraph,
)
from engram.memories.models import Identifier
from engram.observability import logger, metrics, tracer
from engram.pagination import MAX_CURSOR_CHARS

app = build_resolver()
EntityId = Annotated[str, Path(description="the entity's id")]
Limit = Annotated[int, Query(ge=1, le=100, description="items per page")]
Cursor = Annotated[
    Text | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")
]
UserId = Annotated[
    Identifier | None,
    Query(description="the user the request is made for: their private memories' observations and relations"),
]


@app.get("/v1/entities")
def search_entities(
    q: Annotated[Text | None, Query(min_length=1, max_length=200, description="name or alias")] = None,
    type: Annotated[Text | None, Query(min_length=1, max_length=40, description="entity type")] = None,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> EntityPage:
    return deps.graph_service().search_entities(tenant_of(app), q, type, limit, cursor)


@app.post("/v1/entities")
def create_entity(body: EntityCreate) -> tuple[Entity, int]:
    entity, created = deps.graph_service().create_entity(tenant_of(app), body)
    return entity, 201 if created else 200


@app.get("/v1/entities/<id>")
def get_entity(
    id: EntityId,
    limit: Limit = 20,
    observations_cursor: Cursor = None,
    relations_cursor: Cursor = None,
    user_id: UserId = None,
) -> EntityDetail:
    return deps.graph_service().get_entity(
        tenant_of(app), path_id(id, "entity"), limit, observations_cursor, relations_cursor, user_id=user_id
    )


@app.delete("/v1/entities/<id>", responses={204: {"description": "deleted"}})
def delete_entity(id: EntityId) -> None:
    deps.graph_service().delete_entity(tenant_of(app), path_id(id, "entity"))
    return no_content()


@app.post("/v1/entities/<id>/observations")
def add_observation(id: EntityId, body: ObservationCreate) -> tuple[Observation, int]:
    return deps.graph_service().add_observation(tenant_of(app), path_id(id, "entity"), body), 201


@app.delete("/v1/entities/<id>/observations/<memory_id>", responses={204: {"description": "unlinked"}})
def delete_observation(
    id: EntityId, memory_id: Annotated[str, Path(description="the memory's id")], user_id: UserId = None
) -> None:
    deps.graph_service().delete_observation(
        tenant_of(app), path_id(id, "entity"), path_id(memory_id, "memory"), user_id=user_id
    )
    return no_content()


@app.post("/v1/relations")
def create_relation(body: RelationCreate) -> tuple[Relation, int]:
    relation, created = deps.graph_service().create_relation(tenant_of(app), body)
    return relation, 201 if created else 200


@app.delete("/v1/relations/<id>", responses={204: {"description": "deleted"}})
def delete_relation(
    id: Annotated[str, Path(description="the relation's id")], user_id: UserId = None
) -> None:
    deps.graph_service().delete_relation(tenant_of(app), path_id(id, "relation"), user_id=user_id)
    return no_content()


@app.get("/v1/graph")
def graph(
    entity: Annotated[Filled, Query(min_length=1, max_length=200, description="an entity id, or its name")],
    depth: Annotated[int, Query(ge=1, le=MAX_DEPTH, description="hops from the entity")] = 2,
    limit: Annotated[int, Query(ge=1, le=200, description="entities per page")] = 50,
    cursor: Cursor = None,
    as_of: Annotated[Timestamp | None, Query(description="relations valid at this time")] = None,
    include_history: Annotated[QueryFlag, Query(description="also relations no longer current")] = False,
    user_id: UserId = None,
) -> Subgraph:
    subgraph = deps.graph_service().graph(
        tenant_of(app),
        entity,
        depth=depth,
        limit=limit,
        cursor=cursor,
        as_of=as_of,
        include_history=include_history,
        user_id=user_id,
    )
    metrics.add_metric(name="GraphWalks", unit="Count", value=1)
    return subgraph


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
