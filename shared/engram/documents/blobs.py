"""Where raw bytes and intermediate results live: S3 in AWS, a folder locally.

Keys are '/'-separated. Work files (extracted text) go under the work prefix, which the S3 trigger
ignores, so the pipeline never triggers itself.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from engram.documents.failures import SourceMissing, TooLarge, TransientError
from engram.limits import file_too_large


class BlobStore(Protocol):
    def put(self, key: str, data: bytes, content_type: str | None = None) -> None: ...

    def get(self, key: str, *, version: str | None = None, max_bytes: int | None = None) -> bytes: ...

    def delete_prefix(self, prefix: str) -> None: ...


def work_key(prefix: str, tenant_id: UUID, document_id: UUID, name: str) -> str:
    return f"{prefix}{tenant_id}/{document_id}/{name}"


def work_prefix_of(prefix: str, tenant_id: UUID, document_id: UUID) -> str:
    return f"{prefix}{tenant_id}/{document_id}/"


def revision_prefix_of(prefix: str, tenant_id: UUID, document_id: UUID, revision: int) -> str:
    """Where one revision's run keeps its work files (a fetched URL, the extracted text, a transcript):
    dropped when the run finishes, and with the rest of the document's work prefix when it is deleted."""
    return f"{work_prefix_of(prefix, tenant_id, document_id)}r{revision}/"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise ValueError(f"blob key escapes the store: {key!r}")
        return path

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)

    def get(self, key: str, *, version: str | None = None, max_bytes: int | None = None) -> bytes:
        path = self._path(key)
        try:
            size = path.stat().st_size
            if max_bytes is not None and (refusal := file_too_large(size, max_bytes)):
                raise TooLarge(refusal)
            return path.read_bytes()
        except FileNotFoundError:
            raise SourceMissing(f"the stored file {key!r} no longer exists") from None

    def delete_prefix(self, prefix: str) -> None:
        base = self._path(prefix.rstrip("/"))
        if base.is_dir():
            for child in sorted(base.rglob("*"), reverse=True):
                child.rmdir() if child.is_dir() else child.unlink()
            base.rmdir()
        elif base.is_file():
            base.unlink()


class S3BlobStore:
    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        extra = {"ContentType": content_type} if content_type else {}
        self._call(self.client.put_object, Bucket=self.bucket, Key=key, Body=data, **extra)

    def get(self, key: str, *, version: str | None = None, max_bytes: int | None = None) -> bytes:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if version:
            kwargs["VersionId"] = version
        response = self._call(self.client.get_object, **kwargs)
        size = int(response.get("ContentLength") or 0)
        if max_bytes is not None and (refusal := file_too_large(size, max_bytes)):
            response["Body"].close()
            raise TooLarge(refusal)
        data: bytes = response["Body"].read() if max_bytes is None else response["Body"].read(max_bytes + 1)
        if max_bytes is not None and (refusal := file_too_large(len(data), max_bytes, exact=False)):
            raise TooLarge(refusal)
        return data

    def delete_prefix(self, prefix: str) -> None:
        """Every object under the prefix, with each of its versions (and delete markers): the bucket is
        versioned, and a deleted document's bytes must not stay behind as an earlier version."""
        paginator = self.client.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            versions = [
                {"Key": item["Key"], "VersionId": item["VersionId"]}
                for item in (*page.get("Versions", []), *page.get("DeleteMarkers", []))
            ]
            if versions:  # a page holds at most 1000, as delete_objects takes
                self._call(
                    self.client.delete_objects,
                    Bucket=self.bucket,
                    Delete={"Objects": versions, "Quiet": True},
                )

    def presign_put(self, key: str, content_type: str | None, expires_in: int) -> str:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if content_type:
            params["ContentType"] = content_type
        url: str = self.client.generate_presigned_url("put_object", Params=params, ExpiresIn=expires_in)
        return url

    @staticmethod
    def _call(method: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return method(**kwargs)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NoSuchVersion"):
                raise SourceMissing(
                    f"s3://{kwargs.get('Bucket')}/{kwargs.get('Key')} no longer exists"
                ) from exc
            if code in ("SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "503", "500"):
                raise TransientError(f"S3 {code}") from exc
            raise
        except BotoCoreError as exc:
            raise TransientError(f"S3 unreachable: {exc}") from exc
