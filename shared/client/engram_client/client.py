"""`Engram` and `AsyncEngram`: every operation of the API as a method named after its operation id
(generated in _operations.py), plus the upload, which takes a file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Literal, overload

import httpx

from engram_client import models
from engram_client._base import NOT_GIVEN, NotGiven, Operation, Settings, given, settings_from
from engram_client._operations import AsyncOperations, SyncOperations

# Locally the file itself (multipart, 202); in AWS a presigned S3 PUT for it (JSON, 200).
_UPLOAD_DOCUMENT = Operation(
    "POST", "/v1/documents/upload", {202: models.DocumentAccepted, 200: models.UploadTicket}, False
)
FileSource = str | Path | bytes | IO[bytes]
# The export file as the body: the report (200); or, with upload=True in AWS, an upload URL and a job (202).
# An import changes nothing when repeated, but its report would: a lost answer is not repeated.
_IMPORT_TENANT = Operation("POST", "/v1/import", {200: models.ImportReport, 202: models.ImportJob}, False)
NDJSON = {"Content-Type": "application/x-ndjson"}


def _import_arguments(lines: str | bytes | None, new_ids: bool, upload: bool) -> dict[str, Any]:
    if (lines is None) != upload:
        raise TypeError("import_tenant takes the export's lines, or upload=True (AWS) and no lines")
    content = lines.encode() if isinstance(lines, str) else lines
    return {"query": {"new_ids": new_ids, "upload": upload}, "content": content, "headers": NDJSON}


def _settings(
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    headers: Mapping[str, str] | None,
) -> Settings:
    return settings_from(base_url, api_key, timeout=timeout, max_retries=max_retries, headers=headers)


def _upload_arguments(
    file: FileSource | None,
    filename: str | NotGiven,
    tags: list[str] | NotGiven,
    metadata: dict[str, Any] | NotGiven,
    **fields: str | datetime | NotGiven,
) -> dict[str, Any]:
    """The request: the file as multipart/form-data, with `fields` as text (a datetime in ISO 8601) and
    `tags` and `metadata` as JSON; or (no file, AWS) JSON asking for an upload URL."""
    if file is None:
        if not filename:
            raise TypeError("upload_document needs a file, or (AWS) a filename to ask an upload URL for")
        return {
            "body": given(
                filename=filename, container=fields["container"], content_type=fields["content_type"]
            )
        }
    if isinstance(file, (str, Path)):
        path = Path(file)
        name, payload = (filename or path.name), path.read_bytes()
    elif isinstance(file, bytes):
        name, payload = (filename or "upload.bin"), file
    else:
        name, payload = (filename or Path(getattr(file, "name", "upload.bin")).name), file.read()
    data = {
        key: value.isoformat() if isinstance(value, datetime) else str(value)
        for key, value in fields.items()
        if value is not NOT_GIVEN
    }
    data.update({key: json.dumps(value) for key, value in (("tags", tags), ("metadata", metadata)) if value})
    # The part declares no type of its own: the server tells it from the bytes (an Office file by its
    # parts, whatever its name), and a guess from the name would be taken as the caller's word.
    # `content_type`, when the caller gives it, goes as a field.
    return {"files": {"file": (str(name), payload, "application/octet-stream")}, "data": data}


def _upsert(custom_id: str | NotGiven) -> bool | None:
    """With a custom_id the upload is an upsert: repeating it is safe."""
    return True if custom_id not in (NOT_GIVEN, None) else None


class Engram(SyncOperations):
    """The synchronous client. `base_url` defaults to ENGRAM_URL (else http://127.0.0.1:8080) and
    `api_key` to ENGRAM_API_KEY. Use it as a context manager, or call close()."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(_settings(base_url, api_key, timeout, max_retries, headers), transport)

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @overload
    def upload_document(
        self,
        file: FileSource,
        *,
        filename: str | NotGiven = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        content_type: str | NotGiven = NOT_GIVEN,
        tags: list[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven = NOT_GIVEN,
        title: str | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven = NOT_GIVEN,
        document_date: str | datetime | NotGiven = NOT_GIVEN,
        wait: Literal[False] = False,
    ) -> models.DocumentAccepted | models.UploadTicket: ...

    @overload
    def upload_document(
        self,
        file: FileSource,
        *,
        filename: str | NotGiven = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        content_type: str | NotGiven = NOT_GIVEN,
        tags: list[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven = NOT_GIVEN,
        title: str | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven = NOT_GIVEN,
        document_date: str | datetime | NotGiven = NOT_GIVEN,
        wait: Literal[True],
    ) -> models.Document: ...

    def upload_document(
        self,
        file: FileSource | None = None,
        *,
        filename: str | NotGiven = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        content_type: str | NotGiven = NOT_GIVEN,
        tags: list[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven = NOT_GIVEN,
        title: str | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven = NOT_GIVEN,
        document_date: str | datetime | NotGiven = NOT_GIVEN,
        wait: bool = False,
        wait_timeout: float = 300.0,
    ) -> models.DocumentAccepted | models.UploadTicket | models.Document:
        """POST /v1/documents/upload. With `file` (a path, bytes or a binary file object): the local
        stack takes the file itself and answers the document (202; `wait=True` follows it until it is
        done). Without `file`, only `filename`: in AWS, a presigned S3 PUT to send the file to (200)."""
        arguments = _upload_arguments(
            file,
            filename,
            tags,
            metadata,
            container=container,
            content_type=content_type,
            title=title,
            custom_id=custom_id,
            user_id=user_id,
            extract=extract,
            document_date=document_date,
        )
        accepted = self._call(_UPLOAD_DOCUMENT, **arguments, retry=_upsert(custom_id))
        if wait and isinstance(accepted, models.DocumentAccepted):
            return self.wait_for_document(accepted.id, timeout=wait_timeout)
        return accepted

    def import_tenant(
        self, lines: str | bytes | None = None, *, new_ids: bool = False, upload: bool = False
    ) -> models.ImportReport | models.ImportJob:
        """POST /v1/import: `lines`, an export (up to the 6 MB request limit), imported at once; or, with
        upload=True and no lines (AWS), a job with a presigned `upload_url` for a file of any size.
        `new_ids` gives every row a new id (the same ones each time). engram_client.transfer sends a whole
        file either way."""
        return self._call(_IMPORT_TENANT, **_import_arguments(lines, new_ids, upload))


class AsyncEngram(AsyncOperations):
    """The asynchronous client: the same methods as `Engram`, to be awaited."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(_settings(base_url, api_key, timeout, max_retries, headers), transport)

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def upload_document(
        self,
        file: FileSource | None = None,
        *,
        filename: str | NotGiven = NOT_GIVEN,
        container: str | NotGiven = NOT_GIVEN,
        content_type: str | NotGiven = NOT_GIVEN,
        tags: list[str] | NotGiven = NOT_GIVEN,
        metadata: dict[str, Any] | NotGiven = NOT_GIVEN,
        custom_id: str | NotGiven = NOT_GIVEN,
        title: str | NotGiven = NOT_GIVEN,
        user_id: str | NotGiven = NOT_GIVEN,
        extract: Literal["none", "light", "full"] | NotGiven = NOT_GIVEN,
        document_date: str | datetime | NotGiven = NOT_GIVEN,
        wait: bool = False,
        wait_timeout: float = 300.0,
    ) -> models.DocumentAccepted | models.UploadTicket | models.Document:
        """As Engram.upload_document."""
        arguments = _upload_arguments(
            file,
            filename,
            tags,
            metadata,
            container=container,
            content_type=content_type,
            title=title,
            custom_id=custom_id,
            user_id=user_id,
            extract=extract,
            document_date=document_date,
        )
        accepted = await self._call(_UPLOAD_DOCUMENT, **arguments, retry=_upsert(custom_id))
        if wait and isinstance(accepted, models.DocumentAccepted):
            return await self.wait_for_document(accepted.id, timeout=wait_timeout)
        return accepted

    async def import_tenant(
        self, lines: str | bytes | None = None, *, new_ids: bool = False, upload: bool = False
    ) -> models.ImportReport | models.ImportJob:
        """As Engram.import_tenant."""
        return await self._call(_IMPORT_TENANT, **_import_arguments(lines, new_ids, upload))
