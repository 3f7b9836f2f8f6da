"""mark-done / mark-failed (the state machine's last states), and EventBridge execution-status events
for executions that timed out or were aborted."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger
from engram.pipeline.finish import run_finish


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return run_finish(deps.pipeline_context(), event)
