"""Imports in AWS: a presigned upload, then an asynchronous job.

A request body is limited to 6 MB (Lambda's limit) and an API call to 29 s, so `POST /v1/import?upload=true`
records the request and answers 202 with a presigned PUT URL for the file; uploading it starts the import
worker (an EventBridge rule on the bucket), which imports it in one unit of work and writes a status;
`GET /v1/import/{id}` answers it. Everything lives under the tenant's own prefix of the exports bucket, and
the tenant is the one the API wrote into the request object, never the uploader's.

    imports/<tenant-id>/<job-id>.request.json   written by POST /v1/import?upload=true
    imports/<tenant-id>/<job-id>.jsonl          the upload; its creation starts the worker
    imports/<tenant-id>/<job-id>.status.json    {"status": "running", "started_at"}, then {"status": "done",
                                                "report"} or {"status": "failed", "error"}
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from engram.errors import EngramError, InvalidInput, NotFound
from engram.export.importer import ImportService
from engram.export.jobs import get_json, put_json
from engram.export.models import ImportReport
from engram.lazymodel import LazyModel

IMPORT_PREFIX = "imports/"
UPLOAD_SUFFIX = ".jsonl"
STALE_AFTER = timedelta(hours=1)  # the worker's timeout and retries: a job still running then has failed
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
_UPLOAD_KEY = re.compile(rf"^{IMPORT_PREFIX}([0-9a-f-]{{36}})/([0-9a-f]{{32}}){re.escape(UPLOAD_SUFFIX)}$")


class ImportJob(LazyModel):
    id: str
    status: Literal["awaiting_upload", "running", "done", "failed"]
    status_url: str = Field(description="GET it until the status is done or failed")
    upload_url: str | None = Field(
        default=None,
        description="awaiting_upload: PUT the export file here (Content-Type: application/x-ndjson)",
    )
    expires_in: int | None = Field(default=None, description="seconds the upload URL stays valid")
    report: ImportReport | None = None
    error: str | None = None


@dataclass(frozen=True)
class ImportJobs:
    s3: Any
    bucket: str
    url_ttl_seconds: int

    def request(self, tenant_id: UUID, tenant_name: str, new_ids: bool) -> ImportJob:
        job_id = uuid.uuid4().hex
        body = {
            "tenant_id": str(tenant_id),
            "tenant_name": tenant_name,
            "new_ids": new_ids,
            "requested_at": datetime.now(UTC).isoformat(),
        }
        self._put_json(_key(tenant_id, job_id, ".request.json"), body)
        return ImportJob(
            id=job_id,
            status="awaiting_upload",
            status_url=status_url(job_id),
            upload_url=self._upload_url(tenant_id, job_id),
            expires_in=self.url_ttl_seconds,
        )

    def status(self, tenant_id: UUID, job_id: str) -> ImportJob:
        if not _JOB_ID.match(job_id):
            raise InvalidInput("an import id is 32 hexadecimal characters")
        request = self._get_json(_key(tenant_id, job_id, ".request.json"))
        if request is None:
            raise NotFound(f"no import {job_id}")
        status = self._get_json(_key(tenant_id, job_id, ".status.json"))
        url = status_url(job_id)
        if status is not None and status["status"] == "done":
            return ImportJob(
                id=job_id, status="done", status_url=url, report=ImportReport(**status["report"])
            )
        if status is not None and status["status"] == "failed":
            return ImportJob(id=job_id, status="failed", status_url=url, error=status["error"])
        if status is not None:  # running: the worker has the upload
            started = datetime.fromisoformat(status["started_at"])
            if datetime.now(UTC) - started > STALE_AFTER:
                error = "the import did not finish; its event is in the async-failures queue"
                return ImportJob(id=job_id, status="failed", status_url=url, error=error)
            return ImportJob(id=job_id, status="running", status_url=url)
        requested = datetime.fromisoformat(request["requested_at"])
        if datetime.now(UTC) - requested > timedelta(seconds=self.url_ttl_seconds) + STALE_AFTER:
            error = (
                "no upload reached the import worker: none was sent before the URL expired, or its event "
                "is in the async-failures queue"
            )
            return ImportJob(id=job_id, status="failed", status_url=url, error=error)
        return ImportJob(
            id=job_id,
            status="awaiting_upload",
            status_url=url,
            upload_url=self._upload_url(tenant_id, job_id),
            expires_in=self.url_ttl_seconds,
        )

    def run(self, service: ImportService, upload_key: str) -> dict[str, Any]:
        """The worker: import the uploaded file into the tenant its request names, then record the outcome.
        A bad file is a `failed` status (trying again cannot help); anything else is recorded and raised
        again, so Lambda retries it (the import is idempotent)."""
        match = _UPLOAD_KEY.match(upload_key)
        if match is None:
            raise InvalidInput(f"not an import upload: {upload_key}")
        tenant_id, job_id = UUID(match.group(1)), match.group(2)
        request = self._get_json(_key(tenant_id, job_id, ".request.json"))
        if request is None:
            raise NotFound(f"{upload_key} was uploaded without an import request")
        if UUID(request["tenant_id"]) != tenant_id:  # the key's tenant is the one the API wrote
            raise InvalidInput(f"{upload_key} names another tenant")
        status = _key(tenant_id, job_id, ".status.json")
        self._put_json(status, {"status": "running", "started_at": datetime.now(UTC).isoformat()})
        try:
            report = service.import_jsonl(
                tenant_id, request["tenant_name"], self._lines(upload_key), new_ids=bool(request["new_ids"])
            )
        except EngramError as exc:
            self._put_json(status, {"status": "failed", "error": exc.message[:1000]})
            if exc.status_code < 500:
                return {"id": job_id, "status": "failed", "error": exc.message}
            raise
        except Exception as exc:
            self._put_json(status, {"status": "failed", "error": str(exc)[:1000]})
            raise
        self._put_json(status, {"status": "done", "report": report.model_dump(mode="json")})
        return {"id": job_id, "status": "done", "report": report.model_dump(mode="json")}

    def _lines(self, key: str) -> Iterator[str]:
        body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"]
        for line in body.iter_lines():
            yield line.decode("utf-8")

    def _upload_url(self, tenant_id: UUID, job_id: str) -> str:
        url: str = self.s3.generate_presigned_url(
            "put_object",
            Params={
                "Bucket": self.bucket,
                "Key": _key(tenant_id, job_id, UPLOAD_SUFFIX),
                "ContentType": "application/x-ndjson",
            },
            ExpiresIn=self.url_ttl_seconds,
        )
        return url

    def _put_json(self, key: str, body: dict[str, Any]) -> None:
        put_json(self.s3, self.bucket, key, body)

    def _get_json(self, key: str) -> dict[str, Any] | None:
        return get_json(self.s3, self.bucket, key)


def status_url(job_id: str) -> str:
    return f"/v1/import/{job_id}"


def _key(tenant_id: UUID, job_id: str, suffix: str) -> str:
    return f"{IMPORT_PREFIX}{tenant_id}/{job_id}{suffix}"
