"""Request and response models of the documents API."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from engram.fields import Integer, Label, NoNul, Timestamp, trimmed
from engram.lazymodel import LazyModel
from engram.limits import MAX_REQUEST_BYTES
from engram.memories.models import ContainerName, ContainerQuery, Cursor, Identifier, Metadata, Tag

ExtractMode = Literal["none", "light", "full"]
DocumentStatus = Literal["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"]
SourceKind = Literal["inline", "url", "file", "s3", "drop"]
MAX_INLINE_BYTES = MAX_REQUEST_BYTES  # what fits in one request (engram.limits)

# Labels are kept exactly as sent: whitespace at either end is refused, never trimmed.
Filename = Annotated[
    str,
    StringConstraints(min_length=1, max_length=255, pattern=r"^[^\x00/\\]+$"),
    AfterValidator(trimmed),
]
ContentType = Annotated[
    str,
    StringConstraints(
        min_length=3,
        max_length=200,
        pattern=r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(\s*;[^\x00]*[^\s\x00])?$",
    ),
]
Url = Annotated[
    str,
    StringConstraints(min_length=8, max_length=4096, pattern=r"^https?://[^\s\x00]+$"),
    AfterValidator(trimmed),
]
Title = Annotated[Label, StringConstraints(min_length=1, max_length=500)]
DocumentText = Annotated[str, *NoNul]


class _Strict(LazyModel):
    model_config = ConfigDict(extra="forbid")


class DocumentCreate(_Strict):
    content: DocumentText | None = Field(default=None, description="the document's text")
    url: Url | None = Field(default=None, description="an http(s) page or file to fetch")
    file_base64: DocumentText | None = Field(
        default=None, description="a file's bytes, base64; send filename too"
    )
    filename: Filename | None = None
    content_type: ContentType | None = Field(default=None, description="detected from the bytes when missing")
    title: Title | None = None
    container: ContainerName = "default"
    tags: list[Tag] = Field(default_factory=list, max_length=50)
    metadata: Metadata = Field(default_factory=dict)
    custom_id: Identifier | None = Field(
        default=None, description="your id: sending it again replaces the document (same content: no-op)"
    )
    user_id: Identifier | None = Field(
        default=None,
        description="the user who uploads it: the document and the memories extracted from it are theirs "
        "(user_id, visible to the tenant), erased with them (DELETE /v1/users/{user_id})",
    )
    extract: ExtractMode | None = Field(
        default=None,
        description="memories from the chunks: none (chunks only), light (offline heuristic) or full "
        "(the configured LLM); default: full when an LLM provider is configured, else light",
    )
    document_date: Timestamp | None = Field(
        default=None,
        description="when the content was written (ISO 8601); relative dates in the text are read "
        "against it, and it is a memory's valid_from when the text states none. Default: now",
    )

    @model_validator(mode="after")
    def _one_source(self) -> DocumentCreate:
        given = [name for name in ("content", "url", "file_base64") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("send exactly one of content, url or file_base64")
        if self.file_base64 is not None and not self.filename:
            raise ValueError("filename is required with file_base64")
        if self.content is not None and len(self.content.encode("utf-8")) > MAX_INLINE_BYTES:
            raise ValueError(f"content is larger than {MAX_INLINE_BYTES} bytes")
        if self.file_base64 is not None:
            self.decoded()  # refuse malformed base64 now, as a 422
        return self

    def decoded(self) -> bytes:
        assert self.file_base64 is not None
        try:
            return base64.b64decode(self.file_base64, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("file_base64 is not valid base64") from None


class UploadForm(_Strict):
    """A local multipart upload's file name and fields, checked as DocumentCreate checks them."""

    filename: Filename
    content_type: ContentType | None = None
    title: Title | None = None
    container: ContainerName = "default"
    tags: list[Tag] = Field(default_factory=list, max_length=50)
    metadata: Metadata = Field(default_factory=dict)
    custom_id: Identifier | None = None
    user_id: Identifier | None = None
    extract: ExtractMode | None = None
    document_date: Timestamp | None = None


class UploadRequest(_Strict):
    """AWS: ask for a presigned PUT; the object then goes through the S3 drop pipeline."""

    filename: Filename
    container: ContainerName = "default"
    content_type: ContentType | None = None


class UploadTicket(LazyModel):
    method: Literal["PUT"] = "PUT"
    url: str
    key: str
    headers: dict[str, str]
    expires_in: int = Field(description="seconds the URL stays valid")


class DocumentError(LazyModel):
    code: str
    message: str


class Document(LazyModel):
    id: UUID
    container: str
    status: DocumentStatus
    content_type: str | None
    source_kind: SourceKind
    source: str
    filename: str | None
    title: str | None
    tags: list[str]
    metadata: dict[str, Any]
    checksum: str | None
    size_bytes: int | None
    custom_id: str | None
    user_id: str | None
    extract: ExtractMode
    document_date: datetime | None
    extraction: dict[str, Any] = Field(
        description="what llm-extract used and spent: extractor, input_tokens, output_tokens, llm_calls"
    )
    revision: int
    chunk_count: int
    memory_count: int
    error: DocumentError | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Document:
        error = (
            DocumentError(code=row["error_code"] or "ingest_failed", message=row["error"])
            if row["error"]
            else None
        )
        fields = {k: v for k, v in row.items() if k in cls.model_fields and k != "error"}
        return cls(**fields, extract=row["extract_mode"], error=error)


class DocumentAccepted(LazyModel):
    id: UUID
    status: DocumentStatus
    duplicate: bool = Field(
        default=False, description="the same content was already ingested: nothing new to do"
    )


class DocumentListRequest(_Strict):
    container: ContainerQuery | None = None
    status: DocumentStatus | None = None
    limit: Integer = Field(default=20, ge=1, le=100)
    cursor: Cursor | None = None


class DocumentPage(LazyModel):
    documents: list[Document]
    next_cursor: str | None
