"""The documents endpoint group: ingest (JSON or upload), status, list, delete."""

from __future__ import annotations

import base64
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from engram import deps
from engram.api import build_resolver, no_content, resolve, tenant_of
from engram.api.app import body_error, read_body
from engram.api.ids import path_id
from engram.api.streaming import read_whole
from engram.documents.models import (
    Document,
    DocumentAccepted,
    DocumentCreate,
    DocumentListRequest,
    DocumentPage,
    UploadRequest,
    UploadTicket,
)
from engram.observability import logger, metrics, tracer

app = build_resolver()
DocumentId = Annotated[str, Path(description="the document's id")]
MULTIPART_ROUTES = frozenset({"/v1/documents/upload"})


@app.post(
    "/v1/documents", responses={202: {"description": "accepted: follow it with GET /v1/documents/{id}"}}
)
def create_document(body: DocumentCreate) -> tuple[DocumentAccepted, int]:
    accepted = deps.document_service().create(tenant_of(app), body)
    metrics.add_metric(name="DocumentsAccepted", unit="Count", value=1)
    return accepted, 202


@app.post("/v1/documents/upload")
def upload_document() -> tuple[UploadTicket | DocumentAccepted, int]:
    """AWS: JSON {filename, container?, content_type?} -> a presigned S3 PUT. Locally: the file itself as
    multipart/form-data (the file, and the fields of POST /v1/documents: engram.documents.models.UploadForm),
    read as it arrives: up to ENGRAM_MAX_FILE_BYTES, not the 6 MB of a request."""
    tenant = tenant_of(app)
    event = app.current_event
    content_type = (
        next((v for k, v in (event.headers or {}).items() if k.lower() == "content-type"), "") or ""
    )
    pieces = deps.request_body()  # engram local: the body as it arrives; else whole in the event
    if pieces is None:
        raw = event.body or ""
        pieces = [base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8")]
    service = deps.document_service()
    if "multipart/form-data" in content_type.lower():
        # Only the local stack uploads the file itself (in AWS the route hands out an S3 URL): the
        # parser it needs is imported here, not by every cold start.
        from engram.documents.multipart import read_multipart

        upload = read_multipart(content_type, pieces, service.max_file_bytes)
        try:
            form = upload.form()
        except ValidationError as exc:
            raise body_error(exc) from None
        return service.upload(tenant, form, upload.data), 202
    whole = read_whole(pieces)
    if not whole.strip():  # nothing sent: locally, say the route takes the file (not "filename: required")
        service.require_presigned_uploads()
    ticket_request = read_body(UploadRequest, whole)
    return service.presign_upload(
        tenant, ticket_request.filename, ticket_request.container, ticket_request.content_type
    ), 200


@app.post("/v1/documents/list")
def list_documents(body: DocumentListRequest) -> DocumentPage:
    return deps.document_service().list(tenant_of(app), body)


@app.get("/v1/documents/<id>")
def get_document(id: DocumentId) -> Document:
    return deps.document_service().get(tenant_of(app), path_id(id, "document"))


@app.delete(
    "/v1/documents/<id>", responses={204: {"description": "deleted, with its chunks and own memories"}}
)
def delete_document(id: DocumentId) -> None:
    deps.document_service().delete(tenant_of(app), path_id(id, "document"))
    return no_content()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context, multipart_routes=MULTIPART_ROUTES)
