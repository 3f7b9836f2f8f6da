"""POST /v1/export: the tenant as JSON Lines. Locally the response body is the file (200); in AWS
(ENGRAM_EXPORT_BUCKET set) the file is created in S3 and the response is a presigned URL to it (201)."""

from __future__ import annotations

import io
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, principal_of, resolve
from engram.export.models import ExportLink, ExportRequest
from engram.observability import logger, tracer

app = build_resolver()


@app.post("/v1/export")
def export(body: ExportRequest | None = None) -> Response[Any]:
    principal = principal_of(app)
    request = body or ExportRequest()
    settings = deps.current().settings
    service = deps.export_service()
    if settings.export_bucket:
        from engram.export.service import upload  # only with a bucket (AWS): the S3 path

        link: ExportLink = upload(
            service,
            principal.tenant_id,
            principal.tenant_name,
            request.container,
            s3=deps.boto_client("s3"),
            bucket=settings.export_bucket,
            expires_in=settings.export_url_ttl_seconds,
        )
        return Response(
            status_code=201,
            content_type="application/json",
            body=link.model_dump_json(),
            headers={"Location": link.url},
        )
    out = io.StringIO()
    service.write_jsonl(principal.tenant_id, principal.tenant_name, request.container, out)
    return Response(
        status_code=200,
        content_type="application/x-ndjson",
        body=out.getvalue(),
        headers={"Content-Disposition": f'attachment; filename="engram-{principal.tenant_name}.jsonl"'},
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
