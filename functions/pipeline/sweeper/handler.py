"""Scheduled: fail documents left unfinished for longer than ENGRAM_STALE_DOCUMENT_MINUTES."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger
from engram.pipeline.sweep import sweep


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    failed = sweep(deps.database(), deps.current().settings.stale_document_minutes)
    logger.info("sweep", extra={"failed": failed})
    return {"failed": failed}
