"""Document logic: registration (API, uploads, S3 and local drops) with idempotency, reads, delete.
No SQL here (engram.documents.repo), no HTTP (functions/documents)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from engram.db.database import Database
from engram.documents import repo
from engram.documents.blobs import BlobStore, sha256_hex, work_key, work_prefix_of
from engram.documents.models import (
    Document,
    DocumentAccepted,
    DocumentCreate,
    DocumentListRequest,
    DocumentPage,
    ExtractMode,
    UploadForm,
    UploadTicket,
)
from engram.documents.outputs import fail_document, purge_outputs
from engram.documents.runs import DocumentRef, PipelineStarter, execution_name
from engram.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge, ServiceUnavailable
from engram.limits import file_too_large
from engram.memories.predicates import ContainerScope
from engram.observability import logger
from engram.pagination import decode_cursor, encode_cursor, listing

PRESIGN_SECONDS = 900


@dataclass(frozen=True)
class Registration:
    document: dict[str, Any]
    duplicate: bool
    start: bool  # a run must be started for the document's current revision

    @property
    def ref(self) -> DocumentRef:
        return DocumentRef(self.document_tenant, self.document["id"], self.document["revision"])

    @property
    def document_tenant(self) -> UUID:
        return UUID(str(self.document["tenant_id"]))


@dataclass(frozen=True)
class StoredObject:
    """An object already stored where the pipeline reads it (an S3 drop, a local drop or upload)."""

    container: str
    source_kind: str  # "s3", "drop" or "file"
    source: str
    filename: str
    blob_key: str
    blob_version: str | None
    checksum: str
    size_bytes: int
    content_type: str | None = None
    # What identifies this object for the execution name: (bucket, key, version or ETag) for S3.
    identity: tuple[str, ...] = ()

    def columns(self) -> dict[str, Any]:
        """The document's columns it gives, its checksum aside (a rejected object was never read)."""
        return {
            "container": self.container,
            "source_kind": self.source_kind,
            "source": self.source,
            "filename": self.filename,
            "blob_key": self.blob_key,
            "blob_version": self.blob_version,
            "size_bytes": self.size_bytes,
            "content_type": self.content_type,
        }


class DocumentService:
    def __init__(
        self,
        db: Database,
        blobs: BlobStore,
        starter: PipelineStarter,
        *,
        work_prefix: str,
        max_file_bytes: int,
        presigner: Any = None,
        llm_available: bool = False,
        fetch_urls: bool,
    ) -> None:
        self.db = db
        self.blobs = blobs
        self.starter = starter
        self.work_prefix = work_prefix
        self.max_file_bytes = max_file_bytes
        self.presigner = presigner  # S3BlobStore in AWS: uploads go straight to S3
        self.llm_available = llm_available
        self.fetch_urls = fetch_urls  # false where the pipeline has no route to the internet
        # Documents that do not say (S3 and folder drops, requests without `extract`).
        self.default_extract: ExtractMode = "full" if llm_available else "light"

    # --- registration -------------------------------------------------------------------------

    def create(self, tenant_id: UUID, request: DocumentCreate) -> DocumentAccepted:
        """POST /v1/documents: store the bytes, register (idempotently), start the run."""
        fields = self._described(request)
        if request.url is not None:
            if not self.fetch_urls:
                raise InvalidInput(
                    "this deployment cannot fetch URLs: its functions have no route to the internet (in "
                    "AWS, deploy with -c nat_gateways=1); send the page's content or its file instead",
                    details={"field": "url"},
                )
            fields.update(source_kind="url", source=request.url, filename=request.filename)
            return self._accept(tenant_id, fields, None)
        if request.content is not None:
            fields.update(
                source_kind="inline",
                source="inline",
                filename=request.filename,
                content_type=request.content_type or "text/plain",
            )
            return self._accept(tenant_id, fields, request.content.encode("utf-8"))
        fields.update(source_kind="file", source=request.filename, filename=request.filename)
        return self._accept(tenant_id, fields, request.decoded())

    def upload(self, tenant_id: UUID, form: UploadForm, data: bytes) -> DocumentAccepted:
        """The local multipart upload: the file as received, with the form's fields."""
        fields = self._described(form)
        fields.update(source_kind="file", source=form.filename, filename=form.filename)
        return self._accept(tenant_id, fields, data)

    def _described(self, request: DocumentCreate | UploadForm) -> dict[str, Any]:
        """What a document request says of the document beside its source (a JSON body and an upload's
        form take the same fields)."""
        return {
            "extract_mode": self._extract_mode(request.extract),
            "document_date": request.document_date,
            "container": request.container,
            "title": request.title,
            "tags": request.tags,
            "metadata": request.metadata,
            "content_type": request.content_type,
            "custom_id": request.custom_id,
            "user_id": request.user_id,
        }

    def _extract_mode(self, requested: ExtractMode | None) -> ExtractMode:
        extract_mode = requested or self.default_extract
        if extract_mode == "full" and not self.llm_available:
            raise InvalidInput(
                "extract=full needs an LLM: set ENGRAM_LLM_PROVIDER (openai, anthropic or bedrock), "
                "or send extract=light for the offline heuristic",
                details={"field": "extract"},
            )
        return extract_mode

    def _accept(self, tenant_id: UUID, fields: dict[str, Any], data: bytes | None) -> DocumentAccepted:
        """Register the document (its bytes stored first, when it has them) and start its run."""
        if data is not None:
            if refusal := file_too_large(len(data), self.max_file_bytes):
                raise PayloadTooLarge(refusal)
            fields = {**fields, "checksum": sha256_hex(data), "size_bytes": len(data)}
        registration = self._register(tenant_id, fields, data)
        self._start(registration, ("api", str(registration.document["id"])), fail_on_error=True)
        return _accepted(registration)

    def register_stored(
        self, tenant_id: UUID, stored: StoredObject, data: bytes | None = None
    ) -> Registration:
        """An S3 object or a dropped file: same content in the same container is a no-op. With `data`
        (a local drop) the bytes are copied into the blob store, so later edits cannot change a run."""
        fields = {**stored.columns(), "checksum": stored.checksum, "extract_mode": self.default_extract}
        registration = self._register(tenant_id, fields, data)
        identity = stored.identity or (stored.source_kind, str(registration.document["id"]))
        self._start(registration, identity, fail_on_error=False)
        return registration

    def register_rejected(
        self, tenant_id: UUID, stored: StoredObject, code: str, message: str
    ) -> Registration:
        """An object refused before any step could read it (too large): recorded as failed at once,
        so the user sees why. The same object reported twice is recorded once."""
        with self.db.tenant(tenant_id) as cur:
            repo.lock(cur, tenant_id, f"source:{stored.source_kind}:{stored.source}")
            existing = repo.find_by_source(
                cur, tenant_id, stored.source_kind, stored.source, stored.blob_version
            )
            if existing is not None:
                return _registration(tenant_id, existing, duplicate=True, start=False)
            row = repo.insert_document(cur, tenant_id, stored.columns())
            repo.finish(cur, tenant_id, row["id"], row["revision"], "failed", code, message)
            row = repo.get_document(cur, tenant_id, row["id"]) or row
        return _registration(tenant_id, row, duplicate=False, start=False)

    def _register(self, tenant_id: UUID, fields: dict[str, Any], data: bytes | None) -> Registration:
        checksum, custom_id = fields.get("checksum"), fields.get("custom_id")
        with self.db.tenant(tenant_id) as cur:
            if custom_id is not None:
                repo.lock(cur, tenant_id, f"custom:{custom_id}")
                existing = repo.find_by_custom_id(cur, tenant_id, custom_id)
                if existing is not None:
                    return self._upsert(cur, tenant_id, existing, fields, data)
            if checksum is not None:
                repo.lock(
                    cur, tenant_id, f"checksum:{fields['container']}:{checksum}:{fields.get('user_id')}"
                )
                existing = repo.find_by_checksum(
                    cur, tenant_id, fields["container"], checksum, fields.get("user_id")
                )
                if existing is not None and existing["status"] != "failed":
                    if custom_id is not None:
                        existing = _named(cur, tenant_id, existing, custom_id)
                    return _registration(
                        tenant_id, existing, duplicate=True, start=existing["status"] == "queued"
                    )
                if existing is not None and existing["custom_id"] is None and custom_id is None:
                    # The same content failed before: try it again as a new revision of that document.
                    return self._upsert(cur, tenant_id, existing, fields, data)
            document_id = uuid.uuid4()
            if data is not None:
                fields["blob_key"] = self._store(tenant_id, document_id, data)
            row = repo.insert_document(cur, tenant_id, {**fields, "id": document_id})
            return _registration(tenant_id, row, duplicate=False, start=True)

    def _upsert(
        self, cur: Any, tenant_id: UUID, existing: dict[str, Any], fields: dict[str, Any], data: bytes | None
    ) -> Registration:
        if fields["container"] != existing["container"]:
            # A custom_id names one document of the tenant, in one container: sending it to another would
            # move the document, and its memories, out of the container that holds them.
            raise Conflict(
                f"custom_id {existing['custom_id']} is a document in container {existing['container']}: "
                f"send it to {existing['container']}, or delete it first",
                details={"field": "custom_id"},
            )
        if fields.get("user_id") != existing["user_id"]:
            # Nor does it change hands: sent for another user (or for none), it would give the document,
            # and the memories extracted from it, to that owner.
            raise Conflict(
                f"custom_id {existing['custom_id']} belongs to {_whose(existing['user_id'])}: send it "
                f"{_for(existing['user_id'])}, or delete the document first",
                details={"field": "user_id"},
            )
        unchanged = fields.get("checksum") is not None and fields.get("checksum") == existing["checksum"]
        if existing["status"] not in ("done", "failed") or (unchanged and existing["status"] == "done"):
            # Already being ingested, or this exact content is already in: nothing new to do.
            return _registration(tenant_id, existing, duplicate=True, start=existing["status"] == "queued")
        # The new revision's links may name the same entities: they keep their ids (cleanup takes
        # those it does not name).
        purge_outputs(cur, tenant_id, existing["id"], drop_orphaned_entities=False)
        changes = {k: v for k, v in fields.items() if k not in ("custom_id", "id")}
        if data is not None:
            changes["blob_key"] = self._store(tenant_id, existing["id"], data)
        elif "blob_key" not in changes and changes.get("source_kind") == "url":
            changes["blob_key"] = None
        row = repo.requeue(cur, tenant_id, existing["id"], changes)
        return _registration(tenant_id, row, duplicate=False, start=True)

    def _store(self, tenant_id: UUID, document_id: UUID, data: bytes) -> str:
        key = work_key(self.work_prefix, tenant_id, document_id, "source")
        self.blobs.put(key, data)
        return key

    def _start(self, registration: Registration, identity: tuple[str, ...], *, fail_on_error: bool) -> None:
        """Start the run for the document's current revision. The name is derived from what identifies
        the source plus the revision: a duplicated event or request names the same run."""
        if not registration.start:
            return
        name = execution_name(*identity, f"r{registration.document['revision']}")
        try:
            self.starter.start(registration.ref, name)
        except Exception as exc:
            logger.exception(
                "could not start the pipeline", extra={"document_id": str(registration.ref.document_id)}
            )
            if not fail_on_error:
                raise  # the trigger's event is retried; the sweeper fails whatever stays queued
            fail_document(self.db, registration.ref, "unavailable", f"could not start the pipeline: {exc}")
            raise ServiceUnavailable("the ingestion pipeline could not be started; try again") from exc

    # --- uploads ------------------------------------------------------------------------------

    def require_presigned_uploads(self) -> Any:
        """The presigner (AWS), or the refusal of a deployment that takes the file itself (engram local):
        asked before an empty request is read as a ticket's, whose missing fields would be the wrong
        ones to name."""
        if self.presigner is None:
            raise InvalidInput(
                "this deployment takes uploads as multipart/form-data on this route: the file as a part "
                "named 'file', with its filename",
                details={"field": "body"},
            )
        return self.presigner

    def presign_upload(
        self, tenant_id: UUID, filename: str, container: str, content_type: str | None
    ) -> UploadTicket:
        key = f"{tenant_id}/{container}/{filename}"
        url = self.require_presigned_uploads().presign_put(key, content_type, PRESIGN_SECONDS)
        headers = {"Content-Type": content_type} if content_type else {}
        return UploadTicket(url=url, key=key, headers=headers, expires_in=PRESIGN_SECONDS)

    # --- reads and delete ---------------------------------------------------------------------

    def get(self, tenant_id: UUID, document_id: UUID) -> Document:
        with self.db.tenant(tenant_id) as cur:
            row = repo.get_document(cur, tenant_id, document_id)
        if row is None:
            raise _not_found(document_id)
        return Document.from_row(row)

    def list(self, tenant_id: UUID, request: DocumentListRequest) -> DocumentPage:
        pages = listing("documents", container=request.container, status=request.status)
        after = decode_cursor(request.cursor, pages)
        with self.db.tenant(tenant_id) as cur:
            rows = repo.list_documents(
                cur,
                tenant_id,
                ContainerScope.parse(request.container),
                request.status,
                request.limit + 1,
                after,
            )
        documents = [Document.from_row(row) for row in rows[: request.limit]]
        more = len(rows) > request.limit
        cursor = encode_cursor(pages, documents[-1].created_at, documents[-1].id) if more else None
        return DocumentPage(documents=documents, next_cursor=cursor)

    def delete(self, tenant_id: UUID, document_id: UUID) -> None:
        """Remove the document, its chunks, the memories that come only from it, and the uncurated
        entities those leave unreferenced. A run still in progress finds the document gone at its next
        write and stops."""
        with self.db.tenant(tenant_id) as cur:
            if repo.get_document(cur, tenant_id, document_id, for_update=True) is None:
                raise _not_found(document_id)
            purge_outputs(cur, tenant_id, document_id, drop_orphaned_entities=True)
            repo.delete_document(cur, tenant_id, document_id)
        try:
            self.blobs.delete_prefix(work_prefix_of(self.work_prefix, tenant_id, document_id))
        except Exception:
            logger.exception(
                "could not delete the document's stored files", extra={"document_id": str(document_id)}
            )


def _named(cur: Any, tenant_id: UUID, existing: dict[str, Any], custom_id: str) -> dict[str, Any]:
    """The document already holding the content, found again under a custom_id no document has (the
    caller holds both locks): it takes the custom_id, so that later sends of it replace this document.
    One that has another custom_id is a 409: a document has one."""
    if existing["custom_id"] is not None:
        raise Conflict(
            f"this content is already document {existing['id']} in container {existing['container']}, "
            f"under custom_id {existing['custom_id']}: send it with custom_id {existing['custom_id']}, or "
            f"delete that document first ({custom_id} names no document)",
            details={"field": "custom_id"},
        )
    return repo.set_custom_id(cur, tenant_id, existing["id"], custom_id)


def _whose(user_id: str | None) -> str:
    return "no user (a document sent without user_id)" if user_id is None else f"user {user_id!r}"


def _for(user_id: str | None) -> str:
    return "without user_id" if user_id is None else f"with user_id {user_id!r}"


def _registration(tenant_id: UUID, row: dict[str, Any], *, duplicate: bool, start: bool) -> Registration:
    return Registration({**row, "tenant_id": tenant_id}, duplicate=duplicate, start=start)


def _accepted(registration: Registration) -> DocumentAccepted:
    return DocumentAccepted(
        id=registration.document["id"],
        status=registration.document["status"],
        duplicate=registration.duplicate,
    )


def _not_found(document_id: UUID) -> NotFound:
    return NotFound(f"document {document_id} not found")
