"""The export worker, for exports and imports in AWS: an S3 "Object Created" event for
exports/<tenant>/<id>.request.json (written by POST /v1/export) -> the tenant's JSON Lines file and a
status next to it (engram.export.jobs); for imports/<tenant>/<id>.jsonl (uploaded to the URL POST
/v1/import?upload=true answered) -> the file imported into that tenant, and a status
(engram.export.import_jobs)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.errors import ServiceUnavailable
from engram.export.import_jobs import IMPORT_PREFIX
from engram.export.jobs import request_key_of
from engram.observability import logger


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    key = request_key_of(event)
    if key.startswith(IMPORT_PREFIX):
        imports = deps.import_jobs()
        if imports is None:
            raise ServiceUnavailable("ENGRAM_EXPORT_BUCKET is not set")
        return imports.run(deps.import_service(), key)
    exports = deps.export_jobs()
    if exports is None:
        raise ServiceUnavailable("ENGRAM_EXPORT_BUCKET is not set")
    return exports.run(deps.export_service(), key)
