"""Scheduled cleanup (an EventBridge schedule in AWS; `engram cleanup` locally): delete expired
memories and working-memory keys, superseded versions past the retention period, and the entities
extraction made that nothing refers to any more. Not an API
route: it takes the scheduler's event and returns the counts."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.maintenance.service import cleanup
from engram.observability import logger, metrics, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = cleanup(deps.database(), retention_days=deps.current().settings.superseded_retention_days)
    metrics.add_metric(name="ExpiredMemoriesDeleted", unit="Count", value=report.expired_memories)
    metrics.add_metric(name="SupersededMemoriesDeleted", unit="Count", value=report.superseded_memories)
    metrics.add_metric(name="OrphanedEntitiesDeleted", unit="Count", value=report.orphaned_entities)
    logger.info("cleanup done", extra=report.model_dump())
    return report.model_dump()
