"""Export a tenant to JSON Lines and import it back, without loss and idempotent by id. No SQL.

Everything visible is exported: every user's private rows (the party EVERYONE), but nothing
expired. With a container, only that container's memories (and its ancestors, so the file imports
on its own) and the relationships between them are exported."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Any
from uuid import UUID

from pydantic import BaseModel, TypeAdapter, ValidationError

from engram.db.database import EVERYONE, Database
from engram.errors import Conflict, InvalidInput
from engram.export import repo
from engram.export.models import (
    RECORD_ORDER,
    ContainerRecord,
    Header,
    ImportReport,
    MemoryRecord,
    MessageRecord,
    PlanRecord,
    ProcedureRecord,
    Record,
    RelationshipRecord,
    SessionRecord,
    TaskContextRecord,
    WorkingRecord,
    dump,
)
from engram.memories.predicates import ContainerScope

_RECORD: TypeAdapter[Any] = TypeAdapter(Record)
_WITH_EMBEDDING = ("memory", "message", "procedure")


class ExportService:
    def __init__(self, db: Database) -> None:
        self.db = db

    def records(self, tenant_id: UUID, tenant_name: str, container: str | None) -> Iterator[dict[str, Any]]:
        """The header, then every record, in dependency order, from one snapshot."""
        scope = ContainerScope.parse(container)
        yield dump(Header(tenant=tenant_name, container=container, exported_at=datetime.now(UTC)))
        with self.db.tenant(tenant_id, EVERYONE, snapshot=True) as cur:
            sources: list[tuple[type[BaseModel], Callable[[], Iterator[dict[str, Any]]]]] = [
                (ContainerRecord, lambda: repo.containers(cur, tenant_id, scope)),
                (MemoryRecord, lambda: repo.memories(cur, tenant_id, scope)),
                (RelationshipRecord, lambda: repo.relationships(cur, tenant_id, scope)),
            ]
            if scope is None:
                sources += [
                    (SessionRecord, lambda: repo.sessions(cur, tenant_id)),
                    (MessageRecord, lambda: repo.messages(cur, tenant_id)),
                    (WorkingRecord, lambda: repo.working(cur, tenant_id)),
                    (ProcedureRecord, lambda: repo.procedures(cur, tenant_id)),
                    (PlanRecord, lambda: repo.plans(cur, tenant_id)),
                    (TaskContextRecord, lambda: repo.task_contexts(cur, tenant_id)),
                ]
            for model, rows in sources:
                for row in rows():
                    if "embedding" in row and row["embedding"] is not None:
                        row["embedding"] = json.loads(row["embedding"])  # pgvector text is a JSON array
                    yield dump(model(**row))

    def write_jsonl(
        self, tenant_id: UUID, tenant_name: str, container: str | None, out: IO[str]
    ) -> Counter[str]:
        counts: Counter[str] = Counter()
        for record in self.records(tenant_id, tenant_name, container):
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            counts[record["record"]] += 1
        counts.pop("header", None)
        return counts

    def import_jsonl(self, tenant_id: UUID, tenant_name: str, lines: Iterable[str]) -> ImportReport:
        """Insert every record in one transaction: all or nothing. A record whose id (or key) is
        already in this tenant is skipped, so importing twice changes nothing; an id that belongs
        to another tenant is an error."""
        inserted: Counter[str] = Counter()
        skipped: Counter[str] = Counter()
        with self.db.tenant(tenant_id, EVERYONE) as cur:
            last_order = -1
            for number, record in _parse(lines):
                kind = record.record
                order = RECORD_ORDER.index(kind)
                if order < last_order:
                    raise InvalidInput(
                        f"line {number}: a {kind} record after {RECORD_ORDER[last_order]} records; "
                        f"records must come in the order {', '.join(RECORD_ORDER)}"
                    )
                last_order = order
                try:
                    added = repo.insert(cur, tenant_id, kind, record.model_dump())
                except InvalidInput as exc:
                    raise InvalidInput(f"line {number}: {exc.message}") from exc
                if added:
                    inserted[kind] += 1
                    continue
                row_id = getattr(record, "id", None)
                if row_id is not None and not repo.owns(cur, kind, row_id):
                    raise Conflict(f"line {number}: {kind} {row_id} already exists in another tenant")
                skipped[kind] += 1
        return ImportReport(tenant=tenant_name, inserted=dict(inserted), skipped=dict(skipped))


def read_header(first_line: str) -> Header:
    try:
        return Header.model_validate_json(first_line)
    except ValidationError as exc:
        raise InvalidInput(f"line 1 is not an engram export header: {_first_error(exc)}") from exc


def _parse(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if number == 1:
            read_header(line)
            continue
        try:
            yield number, _RECORD.validate_json(line)
        except ValidationError as exc:
            raise InvalidInput(f"line {number}: {_first_error(exc)}") from exc


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg')}" if where else str(error.get("msg"))
