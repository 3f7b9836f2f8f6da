"""POST /v1/export and GET /v1/export/{id}. Locally the response to POST is the JSON Lines file itself.
In AWS (ENGRAM_EXPORT_BUCKET set) an export may outlast an API call, so POST answers 202 with a job and
the export worker (functions/export_worker) writes the file to S3; GET answers the job's status and,
when it is done, a presigned link (engram.export.jobs)."""

from __future__ import annotations

import io
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, principal_of, resolve
from engram.errors import NotFound
from engram.export.models import ExportRequest
from engram.observability import logger, tracer

app = build_resolver()


@app.post(
    "/v1/export",
    responses={
        200: {"description": "locally: the tenant as application/x-ndjson"},
        202: {"description": "in AWS: the export job; GET its status_url"},
    },
)
def export(body: ExportRequest | None = None) -> Response[Any]:
    principal = principal_of(app)
    request = body or ExportRequest()
    jobs = deps.export_jobs()
    if jobs is not None:
        job = jobs.request(principal.tenant_id, principal.tenant_name, request.container)
        return Response(
            status_code=202,
            content_type="application/json",
            body=job.model_dump_json(exclude_none=True),
            headers={"Location": job.status_url},
        )
    out = io.StringIO()
    deps.export_service().write_jsonl(principal.tenant_id, principal.tenant_name, request.container, out)
    return Response(
        status_code=200,
        content_type="application/x-ndjson",
        body=out.getvalue(),
        headers={"Content-Disposition": f'attachment; filename="engram-{principal.tenant_name}.jsonl"'},
    )


@app.get("/v1/export/<id>")
def export_status(id: Annotated[str, Path(description="the id POST /v1/export answered")]) -> Response[Any]:
    jobs = deps.export_jobs()
    if jobs is None:
        raise NotFound("exports run at once here: POST /v1/export answers the file itself")
    job = jobs.status(principal_of(app).tenant_id, id)
    return Response(
        status_code=200, content_type="application/json", body=job.model_dump_json(exclude_none=True)
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
