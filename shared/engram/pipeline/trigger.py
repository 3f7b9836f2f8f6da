"""The S3 trigger: objects under s3://<bucket>/<tenant-id>/<container>/... become documents and start
the state machine. Fed by EventBridge ("Object Created") or classic S3 notifications.

Idempotent twice over: the execution is named after (bucket, key, version or ETag, revision), so a
duplicated event cannot start a second execution; and the content's SHA-256 finds a document that
already holds the same bytes in the same container, which makes a re-upload a no-op. A changed file
under the same key has another ETag and checksum: a new document, never a duplicate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus
from uuid import UUID

import psycopg

from engram.documents.failures import SourceMissing, TransientError
from engram.documents.service import DocumentService, StoredObject
from engram.limits import file_too_large
from engram.memories.models import CONTAINER_PATTERN
from engram.observability import logger

_CONTAINER = re.compile(CONTAINER_PATTERN)


@dataclass(frozen=True)
class S3Object:
    bucket: str
    key: str
    size: int
    etag: str | None
    version: str | None


@dataclass(frozen=True)
class DropKey:
    tenant_id: UUID
    container: str
    path: str  # below the container
    filename: str


def objects_in(event: dict[str, Any]) -> list[S3Object]:
    if event.get("source") == "aws.s3" and "detail" in event:
        detail = event["detail"]
        obj = detail.get("object", {})
        return [
            S3Object(
                detail["bucket"]["name"],
                obj["key"],
                int(obj.get("size") or 0),
                (obj.get("etag") or "").strip('"') or None,
                obj.get("version-id"),
            )
        ]
    found = []
    for record in event.get("Records", []):
        if not str(record.get("eventName", "")).startswith("ObjectCreated"):
            continue
        s3 = record["s3"]
        obj = s3["object"]
        # Classic notifications URL-encode the key ("a b.pdf" arrives as "a+b.pdf").
        found.append(
            S3Object(
                s3["bucket"]["name"],
                unquote_plus(obj["key"]),
                int(obj.get("size") or 0),
                (obj.get("eTag") or "").strip('"') or None,
                obj.get("versionId"),
            )
        )
    return found


def parse_key(key: str, work_prefix: str) -> DropKey | None:
    """'<tenant-id>/<container>/<path>' or None for anything else (work files, folder markers)."""
    if key.startswith(work_prefix) or key.endswith("/"):
        return None
    parts = key.split("/")
    if len(parts) < 3:
        return None
    try:
        tenant_id = UUID(parts[0])
    except ValueError:
        return None
    if not _CONTAINER.match(parts[1]) or not parts[-1]:
        return None
    return DropKey(tenant_id, parts[1], "/".join(parts[2:]), parts[-1])


def sha256_of_object(client: Any, obj: S3Object, max_bytes: int) -> str:
    """Stream the object through SHA-256 (the exact version the event names)."""
    from botocore.exceptions import BotoCoreError, ClientError

    kwargs: dict[str, Any] = {"Bucket": obj.bucket, "Key": obj.key}
    if obj.version:
        kwargs["VersionId"] = obj.version
    elif obj.etag:
        kwargs["IfMatch"] = obj.etag
    try:
        body = client.get_object(**kwargs)["Body"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchKey", "NoSuchVersion", "PreconditionFailed", "404", "412"):
            raise SourceMissing(
                f"s3://{obj.bucket}/{obj.key} changed or vanished before it was read"
            ) from exc
        raise TransientError(f"S3 {code}") from exc
    except BotoCoreError as exc:
        raise TransientError(f"S3 unreachable: {exc}") from exc
    digest = hashlib.sha256()
    read = 0
    for part in body.iter_chunks(1024 * 1024):
        read += len(part)
        if read > max_bytes:
            break
        digest.update(part)
    return digest.hexdigest()


def handle_event(
    event: dict[str, Any], service: DocumentService, s3_client: Any, *, work_prefix: str, max_file_bytes: int
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for obj in objects_in(event):
        where = parse_key(obj.key, work_prefix)
        if where is None:
            logger.info("ignored object", extra={"bucket": obj.bucket, "key": obj.key})
            results.append({"key": obj.key, "outcome": "ignored"})
            continue
        stored = StoredObject(
            container=where.container,
            source_kind="s3",
            source=obj.key,
            filename=where.filename,
            blob_key=obj.key,
            blob_version=obj.version or obj.etag,
            checksum="",
            size_bytes=obj.size,
            identity=(obj.bucket, obj.key, obj.version or obj.etag or ""),
        )
        try:
            if refusal := file_too_large(obj.size, max_file_bytes):
                registration = service.register_rejected(where.tenant_id, stored, "too_large", refusal)
            else:
                try:
                    checksum = sha256_of_object(s3_client, obj, max_file_bytes)
                except SourceMissing as exc:
                    logger.warning(
                        "object gone before it was read", extra={"key": obj.key, "reason": str(exc)}
                    )
                    results.append({"key": obj.key, "outcome": "gone"})
                    continue
                stored = dataclasses.replace(stored, checksum=checksum, blob_version=obj.version)
                registration = service.register_stored(where.tenant_id, stored)
        except psycopg.errors.ForeignKeyViolation:
            logger.warning("object for an unknown tenant", extra={"key": obj.key})
            results.append({"key": obj.key, "outcome": "unknown_tenant"})
            continue
        results.append(
            {
                "key": obj.key,
                "document_id": str(registration.document["id"]),
                "outcome": "duplicate" if registration.duplicate else "registered",
            }
        )
    return results
