"""Exports in AWS: asynchronous, through the exports bucket.

An export can take longer than an API call may (API Gateway gives up at 29 s), so in AWS
`POST /v1/export` only records the request and answers 202 with the job's id; the export worker (an
EventBridge rule on the bucket runs it) writes the JSON Lines file, then a status; `GET /v1/export/{id}`
answers the status and, when done, a presigned link to the file. Everything lives under the tenant's
own prefix, and the tenant comes from the authorizer (the request object is written by the API, never
by the caller), so a job id of another tenant is simply not found.

    exports/<tenant-id>/<job-id>.request.json   written by POST /v1/export; it starts the worker
    exports/<tenant-id>/<job-id>.jsonl          the export
    exports/<tenant-id>/<job-id>.status.json    {"status": "done", "counts"} or {"status": "failed", "error"}

Locally (no bucket) POST /v1/export still answers the file itself.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from engram.errors import InvalidInput, NotFound
from engram.export.service import ExportService
from engram.lazymodel import LazyModel

EXPORT_PREFIX = "exports/"
REQUEST_SUFFIX = ".request.json"
# The worker's timeout, its retries and EventBridge's: past this, a job without a status has failed.
STALE_AFTER = timedelta(hours=1)
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
_REQUEST_KEY = re.compile(rf"^{EXPORT_PREFIX}([0-9a-f-]{{36}})/([0-9a-f]{{32}}){re.escape(REQUEST_SUFFIX)}$")


class ExportJob(LazyModel):
    id: str
    status: Literal["running", "done", "failed"]
    status_url: str = Field(description="GET it until the status is done or failed")
    url: str | None = Field(default=None, description="done: a presigned GET URL for the JSON Lines file")
    expires_in: int | None = None
    counts: dict[str, int] | None = None
    error: str | None = None


@dataclass(frozen=True)
class ExportJobs:
    s3: Any
    bucket: str
    url_ttl_seconds: int

    def request(
        self, tenant_id: UUID, tenant_name: str, container: str | None, with_files: bool = False
    ) -> ExportJob:
        job_id = uuid.uuid4().hex
        body = {
            "tenant_id": str(tenant_id),
            "tenant_name": tenant_name,
            "container": container,
            "with_files": with_files,
            "requested_at": datetime.now(UTC).isoformat(),
        }
        self._put_json(_key(tenant_id, job_id, REQUEST_SUFFIX), body)
        return ExportJob(id=job_id, status="running", status_url=status_url(job_id))

    def status(self, tenant_id: UUID, job_id: str) -> ExportJob:
        if not _JOB_ID.match(job_id):
            raise InvalidInput("an export id is 32 hexadecimal characters")
        status = self._get_json(_key(tenant_id, job_id, ".status.json"))
        if status is None:
            request = self._get_json(_key(tenant_id, job_id, REQUEST_SUFFIX))
            if request is None:
                raise NotFound(f"no export {job_id}")
            requested = datetime.fromisoformat(request["requested_at"])
            if datetime.now(UTC) - requested > STALE_AFTER:
                return ExportJob(
                    id=job_id,
                    status="failed",
                    status_url=status_url(job_id),
                    error="the export did not finish; its event is in the async-failures queue",
                )
            return ExportJob(id=job_id, status="running", status_url=status_url(job_id))
        if status["status"] == "failed":
            return ExportJob(id=job_id, status="failed", status_url=status_url(job_id), error=status["error"])
        url = self.s3.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": _key(tenant_id, job_id, ".jsonl")},
            ExpiresIn=self.url_ttl_seconds,
        )
        return ExportJob(
            id=job_id,
            status="done",
            status_url=status_url(job_id),
            url=url,
            expires_in=self.url_ttl_seconds,
            counts=status["counts"],
        )

    def run(self, service: ExportService, request_key: str) -> dict[str, Any]:
        """The worker: export the tenant the request names, then record the outcome. A failure is recorded
        and raised again, so Lambda retries it and, in the end, keeps the event in the failures queue."""
        match = _REQUEST_KEY.match(request_key)
        if match is None:
            raise InvalidInput(f"not an export request: {request_key}")
        request = self._get_json(request_key)
        if request is None:
            raise NotFound(f"the export request {request_key} is gone")
        tenant_id = UUID(match.group(1))
        if UUID(request["tenant_id"]) != tenant_id:  # the key's tenant is the one the API wrote
            raise InvalidInput(f"{request_key} names another tenant")
        job_id = match.group(2)
        try:
            with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024, mode="w+b") as spool:
                text = io.TextIOWrapper(spool, encoding="utf-8", newline="\n")
                counts = service.write_jsonl(
                    tenant_id,
                    request["tenant_name"],
                    request["container"],
                    text,
                    with_files=bool(request.get("with_files")),
                )
                text.flush()
                spool.seek(0)
                self.s3.upload_fileobj(
                    spool,
                    self.bucket,
                    _key(tenant_id, job_id, ".jsonl"),
                    ExtraArgs={"ContentType": "application/x-ndjson"},
                )
        except Exception as exc:
            failed = {"status": "failed", "error": str(exc)[:500]}
            self._put_json(_key(tenant_id, job_id, ".status.json"), failed)
            raise
        outcome = {"status": "done", "counts": dict(counts)}
        self._put_json(_key(tenant_id, job_id, ".status.json"), outcome)
        return {"id": job_id, **outcome}

    def _put_json(self, key: str, body: dict[str, Any]) -> None:
        put_json(self.s3, self.bucket, key, body)

    def _get_json(self, key: str) -> dict[str, Any] | None:
        return get_json(self.s3, self.bucket, key)


def put_json(s3: Any, bucket: str, key: str, body: dict[str, Any]) -> None:
    """A job's request or status object (exports and imports alike)."""
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(body).encode(), ContentType="application/json")


def get_json(s3: Any, bucket: str, key: str) -> dict[str, Any] | None:
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None
    loaded: dict[str, Any] = json.loads(body)
    return loaded


def status_url(job_id: str) -> str:
    return f"/v1/export/{job_id}"


def _key(tenant_id: UUID, job_id: str, suffix: str) -> str:
    return f"{EXPORT_PREFIX}{tenant_id}/{job_id}{suffix}"


def request_key_of(event: dict[str, Any]) -> str:
    """The object key of an S3 "Object Created" event from EventBridge."""
    try:
        return str(event["detail"]["object"]["key"])
    except (KeyError, TypeError):
        raise InvalidInput("not an S3 Object Created event") from None
