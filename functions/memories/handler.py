"""The memories endpoint group: create (one, or a batch), upsert, read, update, delete and list."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.api.ids import path_id
from engram.memories.models import (
    CreatedMemory,
    Identifier,
    ListRequest,
    Memory,
    MemoryBatch,
    MemoryBatchResult,
    MemoryCreate,
    MemoryHistory,
    MemoryPage,
    MemoryPatch,
    MemoryUpsert,
    RelatedMemories,
    UpsertResult,
)
from engram.observability import logger, metrics, tracer

app = build_resolver()
MemoryId = Annotated[str, Path(description="the memory's id")]
UserId = Annotated[Identifier | None, Query(description="the user the request is made for")]


@app.post("/v1/memories")
def create_memory(body: MemoryCreate) -> tuple[CreatedMemory, int]:
    memory = deps.memory_service().create(tenant_of(app), body)
    metrics.add_metric(name="MemoriesCreated", unit="Count", value=1)
    return memory, 201


@app.post("/v1/memories/batch")
def create_memories(body: MemoryBatch) -> tuple[MemoryBatchResult, int]:
    """1 to 100 memories, each as POST /v1/memories takes it: all stored, in order, or none."""
    memories = deps.memory_service().create_batch(tenant_of(app), body)
    metrics.add_metric(name="MemoriesCreated", unit="Count", value=len(memories))
    return MemoryBatchResult(memories=memories), 201


@app.post("/v1/memories/upsert")
def upsert_memory(body: MemoryUpsert) -> tuple[UpsertResult, int]:
    result = deps.memory_service().upsert(tenant_of(app), body)
    metrics.add_metric(name=f"MemoriesUpsert{result.status.title()}", unit="Count", value=1)
    return result, 201 if result.status == "created" else 200


@app.post("/v1/memories/list")
def list_memories(body: ListRequest) -> MemoryPage:
    return deps.memory_service().list_memories(tenant_of(app), body)


@app.get("/v1/memories/<id>")
def get_memory(id: MemoryId, user_id: UserId = None) -> Memory:
    return deps.memory_service().get(tenant_of(app), path_id(id, "memory"), user_id=user_id)


@app.patch("/v1/memories/<id>")
def patch_memory(id: MemoryId, body: MemoryPatch, user_id: UserId = None) -> CreatedMemory:
    return deps.memory_service().patch(tenant_of(app), path_id(id, "memory"), body, user_id=user_id)


@app.delete("/v1/memories/<id>", responses={204: {"description": "deleted"}})
def delete_memory(id: MemoryId, user_id: UserId = None) -> None:
    deps.memory_service().delete(tenant_of(app), path_id(id, "memory"), user_id=user_id)
    return no_content()


@app.get("/v1/memories/<id>/history")
def memory_history(id: MemoryId, user_id: UserId = None) -> MemoryHistory:
    return deps.memory_service().history(tenant_of(app), path_id(id, "memory"), user_id=user_id)


@app.get("/v1/memories/<id>/related")
def related_memories(
    id: MemoryId,
    depth: Annotated[int, Query(ge=1, le=4, description="steps over memory relationships")] = 1,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    user_id: UserId = None,
) -> RelatedMemories:
    return deps.graph_service().related(tenant_of(app), path_id(id, "memory"), depth, limit, user_id=user_id)


@app.post("/v1/memories/<id>/revert")
def revert_memory(id: MemoryId, user_id: UserId = None) -> Memory:
    return deps.memory_service().revert(tenant_of(app), path_id(id, "memory"), user_id=user_id)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
