"""Import an export into a tenant. No SQL: memories and their links go through the memory writer, every
other row through its own area's repository, all in one unit of work (all or nothing).

A record whose key is already in the tenant is skipped, so importing twice changes nothing. An id that
belongs to another tenant is refused, unless `new_ids` gives every row a new id (engram.export.ids): a
clone into another tenant, or into the same database. An entity whose id, or name and type, the tenant
already has joins that entity, which is curated from then on if the file's was (the report counts it
under skipped, as every record not inserted, and under entities_curated). The import records no change
event and queues no summary: it restores rows, it does not change them."""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from uuid import UUID

from pydantic import TypeAdapter, ValidationError

from engram.changes import repo as changes
from engram.containers import repo as containers
from engram.db import restore
from engram.db.database import EVERYONE, Database, UnitOfWork
from engram.documents import repo as documents
from engram.documents.blobs import BlobStore, work_key
from engram.errors import Conflict, InvalidInput
from engram.export.coverage import TABLE_OF
from engram.export.ids import IdMap, as_uuid
from engram.export.models import RECORD_ORDER, V1_RECORD_ORDER, End, Header, ImportReport, Record
from engram.fields import error_message
from engram.graph import repo as graph
from engram.instructions import repo as instructions
from engram.memories.writer import MemoryWriter
from engram.plans import repo as plans
from engram.procedures import repo as procedures
from engram.sessions import repo as sessions
from engram.sessions import summary_repo
from engram.working import repo as working

_RECORD: TypeAdapter[Any] = TypeAdapter(Record)
# For a skipped row with an id of its own: the natural key under which the tenant may already hold it
# (then it stands for the imported one); otherwise the id is another tenant's.
NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "relationship": ("source_id", "target_id", "relationship_type"),
    "relation": ("source_entity", "relation_type", "target_entity", "source_memory_id"),
}


class ImportService:
    def __init__(self, db: Database, writer: MemoryWriter, blobs: BlobStore, work_prefix: str) -> None:
        self.db = db
        self.writer = writer
        self.blobs = blobs
        self.work_prefix = work_prefix

    def import_jsonl(
        self,
        tenant_id: UUID,
        tenant_name: str,
        lines: Iterable[str],
        *,
        new_ids: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> ImportReport:
        """Every record in one unit of work of its own (import_in)."""
        with self.db.unit_of_work(tenant_id, EVERYONE) as uow:
            return self.import_in(uow, tenant_name, lines, new_ids=new_ids, progress=progress)

    def import_in(
        self,
        uow: UnitOfWork,
        tenant_name: str,
        lines: Iterable[str],
        *,
        new_ids: bool,
        progress: Callable[[str], None] | None,
    ) -> ImportReport:
        """Every record in the caller's unit of work, which sees the tenant's rows of every user
        (EVERYONE). `progress` is told each record's kind as it is stored."""
        changes.suppress_change_events(uow.cur)
        run = _Import(uow, self.writer, self.blobs, self.work_prefix, IdMap(uow.tenant_id, new_ids))
        for number, record in _records(lines):
            try:
                run.add(record)
            except (InvalidInput, Conflict) as exc:
                raise type(exc)(f"line {number}: {exc.message}", details=exc.details) from exc
            if progress is not None:
                progress(record.record)
        return ImportReport(
            tenant=tenant_name,
            inserted=dict(run.inserted),
            skipped=dict(run.skipped),
            entities_curated=run.curated,
            new_ids=new_ids,
        )


class _Import:
    def __init__(
        self, uow: UnitOfWork, writer: MemoryWriter, blobs: BlobStore, prefix: str, ids: IdMap
    ) -> None:
        self.uow, self.writer, self.blobs, self.prefix, self.ids = uow, writer, blobs, prefix, ids
        self.inserted: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.curated = 0  # entities the tenant held, curated from now on because the file's were
        self.sessions: set[UUID] = set()  # old ids of the sessions of this file
        cur = uow.cur
        tenant = uow.tenant_id
        self.restorers: dict[str, Callable[[dict[str, Any]], bool]] = {
            "container": lambda row: containers.restore_container(cur, tenant, row),
            "instruction": lambda row: instructions.restore_instructions(cur, tenant, row),
            "document": lambda row: documents.restore_document(cur, tenant, row),
            "document_file": self._file,
            "chunk": lambda row: documents.restore_chunk(cur, tenant, row),
            "session": lambda row: sessions.restore_session(cur, tenant, row),
            "message": lambda row: sessions.restore_message(cur, tenant, row),
            "summary": lambda row: summary_repo.restore_summary(cur, tenant, row),
            "memory": lambda row: writer.restore(uow, "memory", row),
            "memory_source": lambda row: documents.restore_memory_source(cur, tenant, row),
            "relationship": lambda row: writer.restore(uow, "relationship", row),
            "entity": lambda row: graph.restore_entity(cur, tenant, row),
            "entity_key": lambda row: graph.restore_entity_key(cur, tenant, row),
            "mention": lambda row: writer.restore(uow, "mention", row),
            "relation": lambda row: writer.restore(uow, "relation", row),
            "working": lambda row: working.restore_working(cur, tenant, row),
            "procedure": lambda row: procedures.restore_procedure(cur, tenant, row),
            "plan": lambda row: plans.restore_row(cur, plans.PLANS, tenant, row),
            "task_context": lambda row: plans.restore_row(cur, plans.TASKS, tenant, row),
        }

    def add(self, record: Any) -> None:
        kind: str = record.record
        fields = record.model_dump(exclude={"record"})
        if kind == "session":
            self.sessions.add(fields["id"])
        row = self.ids.row(kind, fields)
        if kind == "memory" and self.ids.renews:
            row["conversation_id"] = self._conversation(row["conversation_id"])
        if kind == "document" and row["custom_id"] is not None:
            self._custom_id_free(row)
        if self.restorers[kind](row):
            self.inserted[kind] += 1
            return
        if "id" in row and not restore.present(self.uow.cur, _table(kind), {"id": row["id"]}):
            self._already_there_otherwise(kind, fields["id"], row)
        elif kind == "entity":
            self._curated_if_the_files_was(row["id"], row)
        self.skipped[kind] += 1

    def _already_there_otherwise(self, kind: str, old_id: UUID, row: dict[str, Any]) -> None:
        """A row not inserted, whose id the tenant does not hold: the tenant holds it under its natural key,
        or the id is another tenant's."""
        if kind == "entity":
            existing = graph.entity_by_key(
                self.uow.cur, self.uow.tenant_id, row["normalized_name"], row["entity_type"]
            )
            if existing is not None:
                self.ids.merged[old_id] = existing  # the tenant's entity stands for it from here on
                self._curated_if_the_files_was(existing, row)
                return
        natural = NATURAL_KEYS.get(kind)
        if natural and restore.present(
            self.uow.cur, _table(kind), {k: row[k] for k in natural if row[k] is not None}
        ):
            return
        raise Conflict(
            f"{kind} {old_id} already exists in another tenant: import with new ids (engram import "
            "--new-ids, POST /v1/import?new_ids=true) to copy it"
        )

    def _curated_if_the_files_was(self, entity_id: UUID, row: dict[str, Any]) -> None:
        """The tenant's entity that stands for the file's (the same id, or the same name and type) is
        curated from then on if the file's was; one the file says extraction made stays as it is."""
        if row["curated"] and graph.mark_curated(self.uow.cur, self.uow.tenant_id, entity_id):
            self.curated += 1

    def _custom_id_free(self, row: dict[str, Any]) -> None:
        """A custom_id names one document of the tenant: the one this row restores, or none yet."""
        holder = documents.find_by_custom_id(self.uow.cur, self.uow.tenant_id, row["custom_id"])
        if holder is not None and holder["id"] != row["id"]:
            raise Conflict(
                f"the document's custom_id {row['custom_id']} is document {holder['id']} of this tenant "
                f"(container {holder['container']}): delete that document, or take the custom_id out of "
                "the file, to import it; nothing was imported",
                details={"field": "custom_id"},
            )

    def _conversation(self, value: str | None) -> str | None:
        """A conversation_id that names a session of the tenant follows the session's new id."""
        old = as_uuid(value)
        if old is None:
            return value
        if old in self.sessions or restore.present(self.uow.cur, "sessions", {"id": self.ids(old)}):
            return str(self.ids(old))
        return value

    def _file(self, row: dict[str, Any]) -> bool:
        """The document's original bytes, into this deployment's store; its blob_key then points there."""
        try:
            data = base64.b64decode(row["data"], validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("document_file: data is not base64", details={"field": "data"}) from None
        document = documents.get_document(self.uow.cur, self.uow.tenant_id, row["document_id"])
        if document is None:
            raise InvalidInput(f"document_file: no document {row['document_id']} before it")
        key = work_key(self.prefix, self.uow.tenant_id, row["document_id"], "source")
        if document["blob_key"] == key:
            return False
        self.blobs.put(key, data, document["content_type"])
        documents.set_blob_key(self.uow.cur, self.uow.tenant_id, row["document_id"], key)
        return True


def _table(kind: str) -> str:
    table = TABLE_OF[kind]
    assert table is not None
    return table


def read_header(first_line: str) -> Header:
    try:
        return Header.model_validate_json(first_line)
    except ValidationError as exc:
        raise InvalidInput(f"line 1 is not an engram export header: {_first_error(exc)}") from exc


def _records(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, record), checked against the header's version and its order of kinds; and a version 3
    file against its end record's counts: one without its end record was cut short, and is refused whole."""
    order: tuple[str, ...] = RECORD_ORDER
    version = 0
    last = -1
    seen: Counter[str] = Counter()
    ended = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if number == 1:
            version = read_header(line).version
            order = V1_RECORD_ORDER if version == 1 else RECORD_ORDER
            continue
        if ended:
            raise InvalidInput(f"line {number}: a record after the end record")
        end = _end(line) if version >= 3 else None
        if end is not None:
            if end.counts != dict(seen):
                raise InvalidInput(
                    f"line {number}: the end record counts {_listed(end.counts)} but the file holds "
                    f"{_listed(seen)}: it is incomplete, or was altered"
                )
            ended = True
            continue
        try:
            record = _RECORD.validate_json(line)
        except ValidationError as exc:
            raise _refused(number, exc) from exc
        if record.record not in order:
            raise InvalidInput(f"line {number}: a {record.record} record has no place in this version")
        position = order.index(record.record)
        if position < last:
            raise InvalidInput(
                f"line {number}: a {record.record} record after {order[last]} records; "
                f"records must come in the order {', '.join(order)}"
            )
        last = position
        seen[record.record] += 1
        yield number, record
    if version >= 3 and not ended:
        raise InvalidInput(
            f"the file ends after {_listed(seen)} without its end record: it was cut short (an export of "
            "version 3 ends with one); nothing was imported"
        )


def _end(line: str) -> End | None:
    if '"end"' not in line[:40]:  # not the end record: spare the second parse
        return None
    try:
        return End.model_validate_json(line)
    except ValidationError:
        return None


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no records"


def _refused(number: int, exc: ValidationError) -> InvalidInput:
    """A record that is not what its kind holds: the line, the kind and the field, in the API's words."""
    error = exc.errors()[0]
    loc = tuple(error.get("loc", ()))
    if len(loc) < 2 or loc[0] not in RECORD_ORDER:  # no kind, or not one: the record field itself
        return InvalidInput(f"line {number}: {_first_error(exc)}")
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc[1:]).lstrip(".")
    problem = error_message(error)
    return InvalidInput(f"line {number}: {loc[0]} record: {field}: {problem}", details={"field": field})


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg')}" if where else str(error.get("msg"))
