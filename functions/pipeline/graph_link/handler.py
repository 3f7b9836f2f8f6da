"""Pipeline step 'graph-link': a thin wrapper around engram.pipeline.run (see engram.pipeline.steps)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger
from engram.pipeline.handlers import load_step, run_step

load_step("graph-link")  # the step's own code, imported in the init phase, not by the first document


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return run_step(deps.pipeline_context(), "graph-link", event)
