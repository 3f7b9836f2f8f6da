"""S3 object created (EventBridge or S3 notification) -> document -> Step Functions execution."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger
from engram.pipeline.trigger import handle_event


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = deps.current().settings
    results = handle_event(
        event,
        deps.document_service(),
        deps.boto_client("s3"),
        work_prefix=settings.work_prefix,
        max_file_bytes=settings.max_file_bytes,
    )
    return {"objects": results}
