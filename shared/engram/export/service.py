"""Export a tenant to JSON Lines, without loss. No SQL.

Everything visible is exported: every user's private rows (the party EVERYONE), but nothing expired, from
one snapshot. With a container, only that subtree's share (engram.export.repo says what goes with it).
With `with_files`, each document's original bytes follow it as a document_file record."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any
from uuid import UUID

from engram.db.database import EVERYONE, Database
from engram.documents.blobs import BlobStore
from engram.documents.failures import SourceMissing
from engram.export import repo
from engram.export.models import RECORD_MODELS, DocumentFileRecord, End, Header, dump
from engram.memories.predicates import ContainerScope
from engram.observability import logger

MISSING_FILES = "document_file_missing"  # counted, not a record: documents whose stored file is gone
# The pieces of a streamed export: whole lines gathered up to this size (a longer line is cut in pieces).
CHUNK_BYTES = 256 * 1024


class ExportService:
    def __init__(self, db: Database, blobs: BlobStore | None = None) -> None:
        self.db = db
        self.blobs = blobs

    def records(
        self, tenant_id: UUID, tenant_name: str, container: str | None, *, with_files: bool = False
    ) -> Iterator[dict[str, Any]]:
        """The header, then every record, in RECORD_ORDER, from one snapshot, then the end record."""
        header = Header(tenant=tenant_name, container=container, with_files=with_files, exported_at=_now())
        yield dump(header)
        counts: Counter[str] = Counter()
        for record in self._body(tenant_id, ContainerScope.parse(container), with_files):
            if record["record"] != MISSING_FILES:
                counts[record["record"]] += 1
            yield record
        yield dump(End(counts=dict(counts)))

    def _body(
        self, tenant_id: UUID, scope: ContainerScope | None, with_files: bool
    ) -> Iterator[dict[str, Any]]:
        with self.db.tenant(tenant_id, EVERYONE, snapshot=True) as cur:
            for kind in repo.exported_kinds(scoped=scope is not None):
                model = RECORD_MODELS[kind]
                for row in repo.rows(cur, tenant_id, kind, scope):
                    if row.get("embedding") is not None:
                        row["embedding"] = json.loads(row["embedding"])  # pgvector's text is a JSON array
                    yield dump(model(**row))
                if kind == "document" and with_files:
                    yield from self._files(repo.document_files(cur, tenant_id, scope))

    def _files(self, documents: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if self.blobs is None:
            raise RuntimeError("an export with files needs the blob store")
        for document in documents:
            try:
                data = self.blobs.get(document["blob_key"], version=document["blob_version"])
            except SourceMissing:
                logger.warning("a document's stored file is gone", extra={"document_id": str(document["id"])})
                yield {"record": MISSING_FILES}
                continue
            yield dump(DocumentFileRecord(document_id=document["id"], data=base64.b64encode(data).decode()))

    def chunks(
        self,
        tenant_id: UUID,
        tenant_name: str,
        container: str | None,
        *,
        with_files: bool = False,
        size: int = CHUNK_BYTES,
    ) -> Iterator[bytes]:
        """The JSON Lines file in pieces of at most `size` bytes, each made as it is needed: the rows are
        read in batches from one snapshot, so the export is never whole in memory (a document's file, with
        `with_files`, is: one record)."""
        pending: list[bytes] = []
        pending_bytes = 0
        for record in self.records(tenant_id, tenant_name, container, with_files=with_files):
            if record["record"] == MISSING_FILES:
                continue
            line = _line(record).encode()
            pending.append(line)
            pending_bytes += len(line)
            if pending_bytes >= size:
                data = b"".join(pending)
                whole = len(data) - len(data) % size
                yield from _pieces(data, whole, size)
                pending = [data[whole:]]
                pending_bytes = len(data) - whole
        if pending_bytes:
            yield b"".join(pending)

    def write_jsonl(
        self,
        tenant_id: UUID,
        tenant_name: str,
        container: str | None,
        out: IO[str],
        *,
        with_files: bool = False,
    ) -> Counter[str]:
        counts: Counter[str] = Counter()
        for record in self.records(tenant_id, tenant_name, container, with_files=with_files):
            counts[record["record"]] += 1
            if record["record"] != MISSING_FILES:
                out.write(_line(record))
        counts.pop("header", None)
        counts.pop("end", None)
        return counts


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _pieces(data: bytes, end: int, size: int) -> Iterator[bytes]:
    """`data[:end]` (a multiple of `size`) in pieces of `size` bytes."""
    view = memoryview(data)
    for start in range(0, end, size):
        yield bytes(view[start : start + size])


def _now() -> datetime:
    return datetime.now(UTC)
