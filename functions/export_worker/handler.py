"""The export worker: an S3 "Object Created" event for exports/<tenant>/<id>.request.json (written by
POST /v1/export) -> the tenant's JSON Lines file and a status next to it (engram.export.jobs)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.errors import ServiceUnavailable
from engram.export.jobs import request_key_of
from engram.observability import logger


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    jobs = deps.export_jobs()
    if jobs is None:
        raise ServiceUnavailable("ENGRAM_EXPORT_BUCKET is not set")
    return jobs.run(deps.export_service(), request_key_of(event))
