"""The Lambda REQUEST authorizer: maps the x-api-key header to a tenant.

API Gateway caches the result per key. The key also goes back as `usageIdentifierKey`, so usage
plans meter and throttle each key (API key source: AUTHORIZER). The local front calls this same
handler for every request.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.auth import authorize_request
from engram.observability import logger


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize_request(deps.database(), event)
