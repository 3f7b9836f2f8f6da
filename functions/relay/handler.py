"""The relay (every minute, on a schedule): conversation summaries brought up to date, then the change
events of the outbox put on the stack's EventBridge bus (engram.relay). It works until nothing is left or
its time is nearly up; what remains waits for the next run."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger
from engram.relay import PASS_MARGIN_S


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    relay = deps.relay()
    summarized = delivered = 0
    while context.get_remaining_time_in_millis() > PASS_MARGIN_S * 1000:
        report = relay.run_once()
        summarized, delivered = summarized + report.summarized, delivered + report.delivered
        if not (report.summarized or report.delivered):
            break
    return {"summarized": summarized, "delivered": delivered}
