"""POST /v1/export and GET /v1/export/{id}; POST /v1/import and GET /v1/import/{id}.

Export: locally the response to POST is the JSON Lines file itself, streamed as it is read (where the runtime
streams bodies: `engram local`'s workers; else whole). In AWS (ENGRAM_EXPORT_BUCKET set) an
export may outlast an API call, so POST answers 202 with a job and the export worker writes the file to S3;
GET answers the job's status and, when it is done, a presigned link (engram.export.jobs).

Import: the body (an export) is imported at once, in one unit of work, and the report answered: in AWS a body
up to the 6 MB request limit; locally a body of any size, read as it arrives (engram.deps.request_body()).
With `upload=true` (AWS) POST answers 202 with a presigned upload URL instead; the
uploaded file starts the import worker, and GET follows the job (engram.export.import_jobs)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from engram import deps
from engram.api import build_resolver, principal_of, resolve
from engram.api.streaming import lines_of
from engram.errors import InvalidInput, NotFound, UnsupportedHere
from engram.export.models import ExportRequest, ImportReport
from engram.fields import QueryFlag
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
        job = jobs.request(principal.tenant_id, principal.tenant_name, request.container, request.with_files)
        return _json(202, job.model_dump_json(exclude_none=True), location=job.status_url)
    service = deps.export_service()
    stream = deps.body_stream()
    if stream is not None:
        stream.offer(
            service.chunks(
                principal.tenant_id, principal.tenant_name, request.container, with_files=request.with_files
            )
        )
        content = ""
    else:
        out = io.StringIO()
        service.write_jsonl(
            principal.tenant_id, principal.tenant_name, request.container, out, with_files=request.with_files
        )
        content = out.getvalue()
    return Response(
        status_code=200,
        content_type="application/x-ndjson",
        body=content,
        headers={"Content-Disposition": f'attachment; filename="engram-{principal.tenant_name}.jsonl"'},
    )


@app.get("/v1/export/<id>")
def export_status(id: Annotated[str, Path(description="the id POST /v1/export answered")]) -> Response[Any]:
    jobs = deps.export_jobs()
    if jobs is None:
        raise NotFound("exports run at once here: POST /v1/export answers the file itself")
    job = jobs.status(principal_of(app).tenant_id, id)
    return _json(200, job.model_dump_json(exclude_none=True))


@app.post("/v1/import")
def import_tenant(
    new_ids: Annotated[
        QueryFlag,
        Query(description="give every row a new id (the same ones each time): copy into this tenant"),
    ] = False,
    upload: Annotated[
        QueryFlag, Query(description="AWS: no body; answer an upload URL and a job (for files over 6 MB)")
    ] = False,
) -> Response[Any]:
    principal = principal_of(app)
    if upload:
        jobs = deps.import_jobs()
        if jobs is None:
            raise UnsupportedHere(
                "imports are not uploaded here: send the export as the body, whatever its size (it is read "
                "as it arrives)"
            )
        job = jobs.request(principal.tenant_id, principal.tenant_name, new_ids)
        return _json(202, job.model_dump_json(exclude_none=True), location=job.status_url)
    pieces = deps.request_body()  # engram local: the body as it arrives; else whole in the event
    lines = lines_of(pieces) if pieces is not None else io.StringIO(app.current_event.body or "")
    report: ImportReport = deps.import_service().import_jsonl(
        principal.tenant_id, principal.tenant_name, _not_empty(lines), new_ids=new_ids
    )
    return _json(200, report.model_dump_json())


def _not_empty(lines: Iterable[str]) -> Iterator[str]:
    lines = iter(lines)
    first = next(lines, "")
    if not first.strip():
        raise InvalidInput("send an export (JSON Lines) as the body", details={"field": "body"})
    yield first
    yield from lines


@app.get("/v1/import/<id>")
def import_status(
    id: Annotated[str, Path(description="the id POST /v1/import?upload=true answered")],
) -> Response[Any]:
    jobs = deps.import_jobs()
    if jobs is None:
        raise NotFound("imports run at once here: POST /v1/import answers the report itself")
    job = jobs.status(principal_of(app).tenant_id, id)
    return _json(200, job.model_dump_json(exclude_none=True))


def _json(status: int, body: str, *, location: str | None = None) -> Response[Any]:
    headers = {"Location": location} if location else None
    return Response(status_code=status, content_type="application/json", body=body, headers=headers)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
