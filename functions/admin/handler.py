"""Tenant and API-key administration for `engram keys ... --stage`: invoked with boto3, not routed by
API Gateway. Connects as the database owner (master secret); the plaintext key never reaches it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.observability import logger
from engram.tenants.admin import handle


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(deps.admin_database(), event)
