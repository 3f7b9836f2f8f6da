"""Export a tenant to JSON Lines and import it into a fresh embedded PostgreSQL (a second server
in its own directory): the re-export is the same file but for its header, every API read answers the same,
a second import changes nothing, and ids of another tenant are refused unless they are renewed. Also the
API (locally and as AWS jobs on moto's S3), the SDK's transfer over HTTP and the CLI, local and remote."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import boto3
import pytest
from moto import mock_aws

from engram import cli, deps
from engram.db.database import Database
from engram.db.embedded import EmbeddedPostgres, start_embedded
from engram.db.migrate import migrate
from engram.documents.blobs import LocalBlobStore
from engram.errors import Conflict, InvalidInput
from engram.export.ids import IdMap
from engram.export.importer import ImportService
from engram.export.service import ExportService
from engram.graph.link_rules import RuleLinker
from engram.local.gateway import LocalGateway
from engram.local.stack import LocalDatabase
from engram.maintenance import repo as maintenance
from engram.memories.writer import MemoryWriter
from engram.sessions.summaries import SummaryService
from engram.settings import Settings
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from engram_client import Engram
from engram_client.transfer import TransferError, check_complete, export_to, import_from, record_kinds
from tests import export_records as records
from tests.conftest import REPO, Api, assert_invalid
from tests.integration.documents_helpers import ingest

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class FreshDatabase:
    def __init__(self, embedded: EmbeddedPostgres, migrations: Path, blobs: Path) -> None:
        self.embedded = embedded
        migrate(embedded.admin_conninfo, migrations)
        self.app = Database(embedded.app_conninfo("engram_app"), max_size=2)
        self.admin = Database(embedded.admin_conninfo, max_size=2)
        self.blobs = LocalBlobStore(blobs)

    def close(self) -> None:
        self.app.close()
        self.admin.close()
        self.embedded.stop()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Iterator[FreshDatabase]:
    """A second, empty embedded server with the migrations applied, in another directory."""
    where = tmp_path_factory.mktemp("fresh")
    db = FreshDatabase(
        start_embedded(where / "pg", cleanup_mode="delete"), settings.migrations_dir, where / "blobs"
    )
    yield db
    db.close()


def _importer(db: Database, blobs: Any = None) -> ImportService:
    writer = MemoryWriter(deps.embedder(), RuleLinker(0.9))
    return ImportService(db, writer, blobs or deps.blob_store(), deps.current().settings.work_prefix)


def _import(db: Any, tenant_id: UUID, name: str, lines: list[str], **kw: Any) -> Any:
    blobs = db.blobs if isinstance(db, FreshDatabase) else None
    database = db.app if isinstance(db, FreshDatabase) else db
    return _importer(database, blobs).import_jsonl(tenant_id, name, lines, **kw)


def _seed(api: Api, tenant: IssuedKey, local_db: LocalDatabase) -> None:
    """One of everything the export must carry."""
    api.post("/v1/containers", {"name": "crm", "description": "customers"})
    api.post(
        "/v1/memories",
        {
            "content": "Alice is the account owner",
            "container": "crm.accounts",
            "tags": ["people"],
            "metadata": {"tier": "gold", "n": [1, 2.5]},
            "agent_id": "sales",
            "conversation_id": "c-1",
            "confidence": 0.8,
            "valid_from": "2026-01-02T03:04:05.123456+00:00",
        },
    )
    api.post(
        "/v1/memories",
        {
            "content": "Alice likes green tea",
            "user_id": "alice",
            "visibility": "private",
            "memory_type": "preference",
            "container": "crm.accounts",
            "expires_at": (datetime.now(UTC) + timedelta(days=30)).isoformat(),
        },
    )
    api.post(
        "/v1/memories",
        {
            "content": "vector of my own model",
            "embedding": [0.125, -0.5, 0.3333333],
            "embedding_model": "my-model-3d",
        },
    )
    api.post(
        "/v1/memories",
        {
            "content": "already expired",
            "valid_from": "2019-01-01T00:00:00Z",
            "expires_at": "2020-01-01T00:00:00+00:00",
        },
    )
    api.post("/v1/memories/upsert", {"content": "The SLA is 99.9 percent."})
    api.post("/v1/memories/upsert", {"content": "The SLA is 99.9 percent!", "dedupe_threshold": 0.8})
    session = api.post(
        "/v1/sessions", {"user_id": "alice", "agent_id": "concierge", "metadata": {"ch": "web"}}
    )
    api.post(
        f"/v1/sessions/{session.json['id']}/messages?user_id=alice&agent_id=concierge",
        {
            "messages": [
                {"role": "user", "content": "I live in Lisbon.", "metadata": {"lang": "en"}},
                {"role": "assistant", "content": "Noted!"},
            ],
            "extract": True,
        },
    )
    crawler = api.post("/v1/sessions", {"agent_id": "crawler"}).json["id"]
    api.post(
        f"/v1/sessions/{crawler}/messages?agent_id=crawler", {"messages": [{"role": "tool", "content": "ok"}]}
    )
    api.put("/v1/working/plan-1/state", {"value": {"step": 2, "done": [1]}})
    api.put("/v1/working/plan-1/state", {"value": {"step": 3, "done": [1, 2]}, "ttl_seconds": 3600})
    api.put("/v1/working/agent-x/null-value", {"value": None})
    api.post(
        "/v1/procedures", {"trigger": "a refund is requested", "content": "check the date", "tags": ["s"]}
    )
    api.post(
        "/v1/procedures",
        {
            "kind": "example",
            "trigger": "sql per day",
            "content": "Q/A",
            "agent_id": "analyst",
            "visibility": "private",
        },
    )
    api.post("/v1/plans", {"plan_id": "trip-1", "goal_event": "trip.requested", "goal_data": {"to": "Oslo"}})
    api.put("/v1/plans/trip-1", {"status": "running", "state": ["booked"]})
    api.post(
        "/v1/task-context",
        {
            "task_id": "book-1",
            "plan_id": "trip-1",
            "event_type": "booking",
            "sub_tasks": ["flight-1", "hotel-1"],
        },
    )
    # documents with chunks and extracted memories, their entities, sources and mentions
    api.put("/v1/extraction-instructions", {"instructions": "Keep names in full."})
    api.put("/v1/extraction-instructions", {"container": "kb", "instructions": "Track deploy days."})
    ingest(
        api,
        {
            "content": "# Runbook\n\nDeploys happen on Mondays. Grace Hopper leads the release team.",
            "filename": "runbook.md",
            "container": "kb",
            "extract": "light",
            "tags": ["ops"],
        },
    )
    ingest(api, {"content": "Katherine Johnson works at NASA.", "filename": "kj.txt", "container": "kb"})
    # entities of its own, an alias, a manual relation
    kj = api.post("/v1/entities", {"name": "Katherine Johnson", "entity_type": "person", "aliases": ["KJ"]})
    api.post(
        "/v1/relations",
        {
            "source": kj.json["id"],
            "relation_type": "works_for",
            "target": {"name": "NASA", "entity_type": "org"},
        },
    )
    # a supersession undone (reverted_at), and a conversation's summary
    old = api.post("/v1/memories", {"content": "The office is in Porto", "container": "kb"}).json["id"]
    new = api.post(
        "/v1/memories", {"content": "The office is in Braga", "container": "kb", "supersedes": old}
    )
    api.post(f"/v1/memories/{old}/revert")
    assert new.status == 201
    SummaryService(local_db.app, lambda: None).refresh_queued(tenant.tenant_id)


def _export(
    db: Database, tenant_id: Any, name: str, container: str | None = None, blobs: Any = None, **kw: Any
) -> list[str]:
    out = io.StringIO()
    ExportService(db, blobs or deps.blob_store()).write_jsonl(tenant_id, name, container, out, **kw)
    return out.getvalue().splitlines()


def _records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def _kinds(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in _records(lines[1:]):
        if r["record"] != "end":
            counts[r["record"]] = counts.get(r["record"], 0) + 1
    return counts


@contextmanager
def serving(db: Database) -> Iterator[None]:
    """The API's handlers on another database (the fresh one), as a second deployment."""
    previous = deps.current()
    deps.install(
        deps.Deps(
            settings=previous.settings,
            database=db,
            embedder=previous.embedder,
            invoke_step=previous.invoke_step,
        )
    )
    try:
        yield
    finally:
        deps.install(previous)


USER = "user_id=alice"


def _reads(api: Api, lines: list[str]) -> dict[str, Any]:
    """What a client reads through the API about the tenant: memories with their history and
    neighbours, search (hits with document_id, as_of, history), the graph, documents, conversations,
    instructions, procedures, plans, state and a turn's context."""
    records = _records(lines[1:])
    ids = {
        kind: [r["id"] for r in records if r["record"] == kind] for kind in ("memory", "document", "entity")
    }
    sessions = [r for r in records if r["record"] == "session"]

    def get(path: str) -> Any:
        answer = api.get(path)
        assert answer.status == 200, (path, answer.json)
        return answer.json

    def post(path: str, body: Any) -> Any:
        answer = api.post(path, body)
        assert answer.status == 200, (path, answer.json)
        return answer.json

    reads: dict[str, Any] = {
        "memories": [post("/v1/memories/list", {"limit": 100, **u}) for u in ({}, {"user_id": "alice"})],
        "memory": {m: get(f"/v1/memories/{m}?{USER}") for m in ids["memory"]},
        "history": {m: get(f"/v1/memories/{m}/history?{USER}") for m in ids["memory"]},
        "related": {m: get(f"/v1/memories/{m}/related?{USER}&depth=2") for m in ids["memory"]},
        "search": [
            post("/v1/search", {"query": query, "user_id": "alice", "limit": 20, **extra})
            for query in ("When do deploys happen?", "Katherine Johnson NASA", "Where is the office?")
            for extra in ({}, {"include_history": True}, {"as_of": "2026-01-03T00:00:00Z"})
        ],
        "entities": get("/v1/entities?limit=100"),
        "entity": {e: get(f"/v1/entities/{e}?{USER}&limit=100") for e in ids["entity"]},
        "graph": {e: get(f"/v1/graph?entity={e}&include_history=true&{USER}") for e in ids["entity"]},
        "documents": post("/v1/documents/list", {"limit": 100}),
        "document": {d: get(f"/v1/documents/{d}") for d in ids["document"]},
        "sessions": {
            s["id"]: get(
                f"/v1/sessions/{s['id']}?"
                + "&".join(f"{k}={s[k]}" for k in ("user_id", "agent_id") if s[k] is not None)
            )
            for s in sessions
        },
        "instructions": get("/v1/extraction-instructions"),
        "containers": get("/v1/containers"),
        "stats": get("/v1/stats"),
        "procedures": get("/v1/procedures?limit=100"),
        "plans": get("/v1/plans"),
        "tasks": get("/v1/task-context"),
        "working": get("/v1/working/plan-1"),
        "context": post("/v1/context", {"query": "who leads the release team?", "user_id": "alice"}),
    }
    return reads


def _clean_up_expired(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    """The export leaves expired memories out, while the source's BM25 statistics count them until the
    cleanup schedule deletes them: deleted here, as the schedule would, so text scores compare exactly."""
    with local_db.app.tenant(tenant.tenant_id) as cur:
        assert maintenance.delete_expired_memories(cur, tenant.tenant_id, 1000) == 1


def test_round_trip_into_a_fresh_database_is_the_same_tenant(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase, gateway: LocalGateway
) -> None:
    # Given: a tenant with documents, a graph, conversations, instructions, state and procedures
    _seed(api, tenant, local_db)
    exported = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    _clean_up_expired(local_db, tenant)
    before = _reads(api, exported)

    # When: it is imported into a fresh server, then exported from there and read through its API
    new_id = tenants.ensure_tenant(fresh.admin, tenant.tenant_name)
    report = _import(fresh, new_id, tenant.tenant_name, exported)
    again = _export(fresh.app, new_id, tenant.tenant_name)
    key = tenants.issue_key(fresh.admin, tenant.tenant_name).plaintext
    with serving(fresh.app):
        after = _reads(Api(gateway, key), exported)

    # Then: the same file but for its header, and every read answers the same
    assert again[1:] == exported[1:]
    assert report.inserted == _kinds(exported) and report.skipped == {}
    assert json.loads(exported[-1]) == {"record": "end", "counts": _kinds(exported)}
    assert after == before
    kinds = _kinds(exported)
    for kind in ("instruction", "document", "chunk", "summary", "memory_source", "entity", "entity_key"):
        assert kinds.get(kind), kind
    for kind in ("mention", "relation", "relationship", "session", "message", "working", "plan"):
        assert kinds.get(kind), kind
    hits = [h for result in before["search"] for h in result["results"] if h["kind"] == "memory"]
    assert any(h["document_id"] for h in hits), "search hits keep the document they came from"
    memories = {r["content"]: r for r in _records(exported[1:]) if r["record"] == "memory"}
    assert "already expired" not in memories
    assert memories["The office is in Braga"]["reverted_at"] is not None
    own = memories["vector of my own model"]
    assert own["embedding_model"] == "my-model-3d" and own["embedding"] == [0.125, -0.5, 0.3333333]
    # the periods each exported memory is about (search's time leg), derived again by the import
    source_periods = [p for p in _periods(local_db.admin, tenant.tenant_id) if p[0] in memories]
    assert _periods(fresh.admin, new_id) == source_periods != []


def _periods(admin: Database, tenant_id: UUID) -> list[tuple[str, str, bool]]:
    with admin.tenant(tenant_id) as cur:
        rows = cur.execute(
            "SELECT m.content, p.during::text AS during, p.stated FROM memory_periods p "
            "JOIN memories m ON m.id = p.memory_id WHERE p.tenant_id = %s",
            (tenant_id,),
        ).fetchall()
    return sorted((r["content"], r["during"], r["stated"]) for r in rows)


def test_importing_twice_changes_nothing(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    _seed(api, tenant, local_db)
    lines = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    new_id = tenants.ensure_tenant(fresh.admin, tenant.tenant_name)
    first = _import(fresh, new_id, tenant.tenant_name, lines)
    before = _export(fresh.app, new_id, tenant.tenant_name)

    second = _import(fresh, new_id, tenant.tenant_name, lines)

    assert second.inserted == {} and second.skipped == first.inserted
    assert _export(fresh.app, new_id, tenant.tenant_name)[1:] == before[1:]


def test_ids_of_another_tenant_are_refused_unless_renewed(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    _seed(api, tenant, local_db)
    lines = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    owner = tenants.ensure_tenant(fresh.admin, tenant.tenant_name)
    _import(fresh, owner, tenant.tenant_name, lines)
    intruder = tenants.ensure_tenant(fresh.admin, tenant.tenant_name + "-copy")

    with pytest.raises(Conflict, match="already exists in another tenant: import with new ids"):
        _import(fresh, intruder, "copy", lines)
    assert _export(fresh.app, intruder, "copy")[1:] == [NOTHING]

    copied = _import(fresh, intruder, "copy", lines, new_ids=True)
    again = _import(fresh, intruder, "copy", lines, new_ids=True)
    assert copied.inserted == _kinds(lines) and again.inserted == {}
    # the same records, each id renewed (rows that tie on time are ordered by id, so by new ids now)
    renewed = IdMap(intruder, new_ids=True)
    expected = UUID_RE.sub(lambda m: str(renewed(UUID(m.group()))), "\n".join(lines[1:]))
    assert sorted(_export(fresh.app, intruder, "copy")[1:]) == sorted(expected.splitlines())


def test_a_clone_over_the_api_into_a_second_tenant_answers_the_same(
    api: Api,
    tenant: IssuedKey,
    other_tenant: IssuedKey,
    other_api: Api,
    local_db: LocalDatabase,
    live_url: str,
    tmp_path: Path,
) -> None:
    # Given: a tenant, exported over HTTP with the SDK (what `engram export --url` does)
    _seed(api, tenant, local_db)
    file = tmp_path / "tenant.jsonl"
    with Engram(live_url, tenant.plaintext) as source:
        exported = export_to(source, file)
    lines = file.read_text().splitlines()
    _clean_up_expired(local_db, tenant)

    # When: imported over HTTP into a second tenant of the same database, with new ids
    progress: list[dict[str, int]] = []
    with Engram(live_url, other_tenant.plaintext) as target:
        summary = import_from(target, file, new_ids=True, on_records=progress.append)
        again = import_from(target, file, new_ids=True)

    # Then: every record arrived, the second import changed nothing, and every read answers the same
    assert dict(exported) == _kinds(lines) == dict(record_kinds(file))
    assert dict(summary.inserted) == _kinds(lines)
    assert sum(sum(p.values()) for p in progress) == len(lines) - 2  # no header, no end record
    assert dict(again.inserted) == {} and dict(again.skipped) == _kinds(lines)
    renewed = IdMap(other_tenant.tenant_id, new_ids=True)
    ours = UUID_RE.sub(lambda m: str(renewed(UUID(m.group()))), json.dumps(_reads(api, lines)))
    clone_lines = _export(local_db.app, other_tenant.tenant_id, other_tenant.tenant_name)
    assert _canonical(json.loads(ours)) == _canonical(_reads(other_api, clone_lines))


def _canonical(value: Any) -> Any:
    """Lists in a stable order: rows that tie (same time, same score) are ordered by id, and new ids
    order them otherwise."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items() if k not in ("next_cursor",)}
    if isinstance(value, list):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def test_a_streamed_export_comes_in_bounded_pieces_that_make_the_whole_file(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given: a tenant of every kind, exported whole
    _seed(api, tenant, local_db)
    whole = "\n".join(_export(local_db.app, tenant.tenant_id, tenant.tenant_name)[1:]) + "\n"

    # When: it is exported in pieces of at most 1000 bytes (what a worker of engram local streams)
    exporter = ExportService(local_db.app, deps.blob_store())
    pieces = list(exporter.chunks(tenant.tenant_id, tenant.tenant_name, None, size=1000))

    # Then: none is larger, all but the last are full, and together they are the same file
    assert max(len(p) for p in pieces) == 1000 and all(len(p) == 1000 for p in pieces[:-1])
    streamed = b"".join(pieces).decode()
    assert streamed.split("\n", 1)[1] == whole


def test_a_file_cut_short_is_told_from_a_whole_one(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, tmp_path: Path
) -> None:
    _seed(api, tenant, local_db)
    lines = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    whole, cut, altered = tmp_path / "whole.jsonl", tmp_path / "cut.jsonl", tmp_path / "altered.jsonl"
    whole.write_text("\n".join(lines) + "\n")
    cut.write_text("\n".join(lines[:-5]) + "\n")
    altered.write_text("\n".join(lines[:-3] + lines[-2:]) + "\n")

    check_complete(whole)
    with pytest.raises(TransferError, match="lacks its end record"):
        check_complete(cut)
    with pytest.raises(TransferError, match="incomplete or altered"):
        check_complete(altered)
    with pytest.raises(InvalidInput, match="the end record counts"):
        _import(local_db.app, tenant.tenant_id, tenant.tenant_name, lines[:-3] + lines[-2:])


def test_files_travel_with_the_export_when_asked(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    document = ingest(api, {"content": "Plain words to keep.", "filename": "keep.txt", "container": "kb"})
    without = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    lines = _export(local_db.app, tenant.tenant_id, tenant.tenant_name, with_files=True)
    new_id = tenants.ensure_tenant(fresh.admin, "files-" + tenant.tenant_name[-12:])

    report = _import(fresh, new_id, "files", lines)

    assert "document_file" not in _kinds(without) and _kinds(lines)["document_file"] == 1
    (file,) = [r for r in _records(lines[1:]) if r["record"] == "document_file"]
    assert file["document_id"] == document["id"] and file["data"] == "UGxhaW4gd29yZHMgdG8ga2VlcC4="
    assert report.inserted["document_file"] == 1
    stored = fresh.blobs.get(f"_engram/{new_id}/{document['id']}/source")
    assert stored == b"Plain words to keep."
    assert _export(fresh.app, new_id, "files", blobs=fresh.blobs, with_files=True)[1:] == lines[1:]
    assert _import(fresh, new_id, "files", lines).skipped["document_file"] == 1


def test_export_of_one_container_imports_on_its_own(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase
) -> None:
    _seed(api, tenant, local_db)
    part = _export(local_db.app, tenant.tenant_id, tenant.tenant_name, "crm.*")
    new_id = tenants.ensure_tenant(fresh.admin, "crm-only-" + tenant.tenant_name[-12:])

    _import(fresh, new_id, "x", part)

    kinds = _kinds(part)
    # the tenant-wide instructions too, and the entities the memories mention (direct writes extract)
    assert {k: kinds[k] for k in ("container", "instruction", "memory")} == {
        "container": 2,
        "instruction": 1,
        "memory": 2,
    }
    assert set(kinds) <= {"container", "instruction", "memory", "entity", "entity_key", "mention"}
    assert json.loads(part[0])["container"] == "crm.*"
    assert _export(fresh.app, new_id, "x")[1:] == part[1:]
    kb = _export(local_db.app, tenant.tenant_id, tenant.tenant_name, "kb")
    kinds = _kinds(kb)
    assert kinds["document"] == 2 and kinds["chunk"] >= 2 and kinds["memory_source"] >= 1
    assert kinds["instruction"] == 2 and "session" not in kinds and "procedure" not in kinds
    kb_id = tenants.ensure_tenant(fresh.admin, "kb-only-" + tenant.tenant_name[-12:])
    _import(fresh, kb_id, "kb", kb)
    assert _export(fresh.app, kb_id, "kb", "kb")[1:] == kb[1:]


def test_a_version_1_file_still_imports(fresh: FreshDatabase) -> None:
    tenant_id = tenants.ensure_tenant(fresh.admin, "version-one")
    lines = [
        json.dumps(HEADER_V1),
        json.dumps(CONTAINER),
        json.dumps({**MEMORY, "container": "a", "id": "6f1c1f4e-0000-4000-8000-000000000002"}),
        json.dumps(WORKING),
    ]

    report = _import(fresh, tenant_id, "version-one", lines)

    assert report.inserted == {"container": 1, "memory": 1, "working": 1}
    (memory,) = [r for r in _records(_export(fresh.app, tenant_id, "v")[1:]) if r["record"] == "memory"]
    assert memory["reverted_at"] is None and memory["content"] == "x"


NOTHING = '{"record":"end","counts":{}}'  # the end record of an empty export
HEADER_V1 = {
    "record": "header",
    "format": "engram-export",
    "version": 1,
    "tenant": "errors",
    "container": None,
    "exported_at": "2026-01-01T00:00:00Z",
}
WORKING = {
    "record": "working",
    "scope": "s",
    "key": "k",
    "value": 1,
    "version": 1,
    "expires_at": None,
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}
CONTAINER = {
    "record": "container",
    "name": "a",
    "parent": None,
    "description": "",
    "created_at": "2026-01-01T00:00:00Z",
}
MEMORY = records.memory(container="nowhere", id="6f1c1f4e-0000-4000-8000-000000000001")


def test_import_errors_name_the_line(fresh: FreshDatabase) -> None:
    tenant_id = tenants.ensure_tenant(fresh.admin, "errors")
    header = json.dumps({**HEADER_V1, "version": 2})

    def load(*lines: str) -> Any:
        return _import(fresh, tenant_id, "errors", list(lines))

    with pytest.raises(InvalidInput, match="line 1"):
        load('{"record": "memory"}')
    with pytest.raises(InvalidInput, match="line 2"):
        load(header, '{"record": "memory", "id": "nope"}')
    with pytest.raises(InvalidInput, match="line 3: a container record after working records"):
        load(header, json.dumps(WORKING), json.dumps(CONTAINER))
    with pytest.raises(InvalidInput, match=r"line 2: .*colour"):
        load(header, json.dumps({**CONTAINER, "colour": "red"}))
    with pytest.raises(InvalidInput, match="line 2: memories refused it"):
        load(header, json.dumps(MEMORY))
    with pytest.raises(InvalidInput, match="line 3: memory record: memory_type: Input should be 'fact'"):
        load(header, json.dumps(CONTAINER), json.dumps({**MEMORY, "container": "a", "memory_type": "gossip"}))
    with pytest.raises(InvalidInput, match="line 2: document_file: data is not base64"):
        load(header, json.dumps({"record": "document_file", "document_id": MEMORY["id"], "data": "%%%"}))
    v3 = json.dumps({**HEADER_V1, "version": 3})
    with pytest.raises(InvalidInput, match="line 3: the end record counts 2 container but the file holds 1"):
        load(v3, json.dumps(CONTAINER), json.dumps({"record": "end", "counts": {"container": 2}}))
    with pytest.raises(InvalidInput, match="line 3: a record after the end record"):
        load(v3, json.dumps({"record": "end", "counts": {}}), json.dumps(CONTAINER))
    with pytest.raises(InvalidInput, match="ends after 1 container without its end record: it was cut short"):
        load(v3, json.dumps(CONTAINER))
    with pytest.raises(InvalidInput, match="line 2: "):  # no end record before version 3
        load(header, json.dumps({"record": "end", "counts": {}}))
    assert _export(fresh.app, tenant_id, "errors")[1:] == [NOTHING]


def test_an_import_of_a_custom_id_the_tenant_has_is_a_409_naming_it_and_imports_nothing(
    api: Api, other_api: Api
) -> None:
    # Given: a tenant's export holding a document under custom_id doc-1, and a second tenant with a document
    # of its own under doc-1
    ingest(api, {"content": "Mallory Stone lives in Oslo.", "custom_id": "doc-1", "container": "cid"})
    exported = api.post("/v1/export").raw
    theirs = ingest(
        other_api, {"content": "Peggy Sue lives in Lima.", "custom_id": "doc-1", "container": "p"}
    )
    before = other_api.post("/v1/export").raw.decode().splitlines()[1:]

    # When: the second tenant imports the export with new ids
    refused = other_api.post("/v1/import?new_ids=true", raw=exported)

    # Then: a 409 names the line and the custom_id, and the second tenant holds what it held
    line = next(
        n
        for n, text in enumerate(exported.decode().splitlines(), 1)
        if json.loads(text)["record"] == "document"
    )
    assert refused.status == 409, refused.json
    assert refused.json["error"]["message"].startswith(
        f"line {line}: the document's custom_id doc-1 is document {theirs['id']} of this tenant "
        "(container p):"
    )
    assert other_api.post("/v1/export").raw.decode().splitlines()[1:] == before


def test_importing_a_tenants_own_export_with_new_ids_is_a_409_on_its_custom_ids(api: Api) -> None:
    # Given: a tenant's export holding a document under custom_id doc-1
    mine = ingest(api, {"content": "Mallory Stone lives in Oslo.", "custom_id": "doc-1", "container": "cid"})
    exported = api.post("/v1/export").raw

    # When: it imports its own export back with new ids
    refused = api.post("/v1/import?new_ids=true", raw=exported)

    # Then: a 409 names the custom_id and the document holding it, and nothing was imported
    assert refused.status == 409, refused.json
    assert f"custom_id doc-1 is document {mine['id']} of this tenant" in refused.json["error"]["message"]
    assert api.post("/v1/export").raw.decode().splitlines()[1:] == exported.decode().splitlines()[1:]


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"content": "x\u0000y"}, "content", "must not contain NUL characters"),
        ({"memory_type": "gossip"}, "memory_type", "Input should be 'fact', 'preference'"),
        ({"confidence": 5}, "confidence", "Input should be less than or equal to 1"),
        ({"container": "no such/name"}, "container", "String should match pattern"),
        ({"tags": [" x "]}, "tags[0]", "must not start or end with whitespace"),
    ],
)
def test_a_memory_record_the_api_would_refuse_is_refused_naming_line_kind_and_field(
    fresh: FreshDatabase, fields: dict[str, Any], field: str, problem: str
) -> None:
    # Given: a file whose second record is a memory with a value the API refuses
    tenant_id = tenants.ensure_tenant(fresh.admin, f"refused-{uuid4().hex[:12]}")
    lines = [json.dumps({**HEADER_V1, "version": 2}), json.dumps(CONTAINER), json.dumps({**MEMORY, **fields})]

    # When: it is imported
    with pytest.raises(InvalidInput) as refused:
        _import(fresh, tenant_id, "refused", lines)

    # Then: the refusal names the line, the record kind and the field, and nothing was imported
    assert refused.value.message.startswith(f"line 3: memory record: {field}: "), refused.value.message
    assert problem in refused.value.message
    assert refused.value.details["field"] == field
    assert _export(fresh.app, tenant_id, "refused")[1:] == [NOTHING]


def test_a_backup_holding_a_vector_of_zeros_still_restores(fresh: FreshDatabase) -> None:
    # Given: an export from before the API refused vectors with no direction
    tenant_id = tenants.ensure_tenant(fresh.admin, f"zeros-{uuid4().hex[:12]}")
    zeros = {"embedding": [0.0, 0.0, 0.0], "embedding_model": "my-model-3d"}
    memory = records.memory("kept as it was", container="a", **zeros)
    lines = [json.dumps({**HEADER_V1, "version": 2}), json.dumps(records.container("a")), json.dumps(memory)]

    # When: it is imported
    report = _import(fresh, tenant_id, "zeros", lines)

    # Then: the memory is restored as it was
    assert report.inserted["memory"] == 1


def test_a_backup_holding_an_id_with_whitespace_at_an_end_still_restores(fresh: FreshDatabase) -> None:
    # Given: an export from before the API refused ids with whitespace at either end
    tenant_id = tenants.ensure_tenant(fresh.admin, f"spaced-{uuid4().hex[:12]}")
    memory = records.memory("kept as it was", container="a", user_id=" alice", visibility="private")
    lines = [json.dumps({**HEADER_V1, "version": 2}), json.dumps(records.container("a")), json.dumps(memory)]

    # When: it is imported
    report = _import(fresh, tenant_id, "spaced", lines)

    # Then: the memory is restored as it was
    assert report.inserted["memory"] == 1


def test_a_value_refused_before_it_reaches_the_database_is_named_in_its_own_words(
    fresh: FreshDatabase,
) -> None:
    # Given: a container record whose description holds a NUL character (not checked by its record)
    tenant_id = tenants.ensure_tenant(fresh.admin, f"nul-{uuid4().hex[:12]}")
    lines = [json.dumps({**HEADER_V1, "version": 2}), json.dumps({**CONTAINER, "description": "a\u0000b"})]

    # When: it is imported
    with pytest.raises(InvalidInput) as refused:
        _import(fresh, tenant_id, "nul", lines)

    # Then: the refusal says why (psycopg's words), not "None"
    assert refused.value.message == (
        "line 2: containers refused it: PostgreSQL text fields cannot contain NUL (0x00) bytes"
    )


def test_the_api_answers_a_refused_import_record_as_a_422_naming_the_field(api: Api) -> None:
    # Given: a file holding a memory whose content has a NUL character
    body = records.jsonl(
        [records.header(), records.container("a"), records.memory("x\u0000y", container="a")]
    )

    # When: it is imported over the API
    refused = api.post("/v1/import?new_ids=true", raw=body.encode())

    # Then: a 422 names the line, the record kind and the field
    assert_invalid(refused, "content")
    assert refused.json["error"]["message"].startswith("line 3: memory record: content: must not contain NUL")


def test_the_api_exports_and_imports_locally(
    api: Api, tenant: IssuedKey, other_api: Api, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    _seed(api, tenant, local_db)

    response = api.post("/v1/export")
    scoped = api.post("/v1/export", {"container": "crm.accounts"})
    theirs = other_api.post("/v1/export")
    body = response.raw.decode()
    imported = other_api.post(
        "/v1/import?new_ids=true", raw=response.raw, headers={"Content-Type": "application/x-ndjson"}
    )
    repeated = other_api.post("/v1/import?new_ids=true", raw=response.raw)
    refused = other_api.post("/v1/import", raw=response.raw)

    assert response.status == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    lines = body.splitlines()
    assert json.loads(lines[0])["tenant"] == tenant.tenant_name
    assert lines[1:] == _export(local_db.app, tenant.tenant_id, tenant.tenant_name)[1:]
    scoped_kinds = set(_kinds(scoped.raw.decode().splitlines()))
    assert {"container", "instruction", "memory"} <= scoped_kinds
    assert scoped_kinds <= {"container", "instruction", "memory", "entity", "entity_key", "mention"}
    assert theirs.raw.decode().splitlines()[1:] == [NOTHING]
    assert imported.status == 200 and imported.json["inserted"] == _kinds(lines) and imported.json["new_ids"]
    assert repeated.json["inserted"] == {} and repeated.json["skipped"] == _kinds(lines)
    assert refused.status == 409 and "another tenant" in refused.json["error"]["message"]
    assert_invalid(api.post("/v1/export", {"container": "bad name"}), "container")
    assert_invalid(api.post("/v1/import", raw=b""), "body")
    bad = api.post("/v1/import", raw=b'{"record":"header"}\n')
    assert bad.status == 422 and "line 1" in bad.json["error"]["message"]
    upload = api.post("/v1/import?upload=true")
    assert upload.status == 409 and upload.json["error"]["code"] == "unsupported_here"
    assert api.get("/v1/import/" + "0" * 32).status == 404


@contextmanager
def aws_exports(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="engram-exports")
        monkeypatch.setattr(deps.current().settings, "export_bucket", "engram-exports")
        monkeypatch.setattr(deps.current().settings, "aws_region", "us-east-1")
        monkeypatch.setattr(deps.current(), "s3", s3)
        yield s3


def test_post_export_in_aws_is_a_job_that_the_worker_writes_to_s3(
    api: Api, tenant: IssuedKey, other_api: Api, local_db: LocalDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(api, tenant, local_db)
    with aws_exports(monkeypatch) as s3:
        # When the API is asked for an export, it answers at once with a job that is running
        accepted = api.post("/v1/export")
        job_id = accepted.json["id"]
        running = api.get(f"/v1/export/{job_id}")
        # Then the worker (EventBridge hands it the request object) writes the file and a status
        jobs = deps.export_jobs()
        assert jobs is not None
        jobs.run(deps.export_service(), f"exports/{tenant.tenant_id}/{job_id}.request.json")
        done = api.get(f"/v1/export/{job_id}")
        stored = s3.get_object(Bucket="engram-exports", Key=f"exports/{tenant.tenant_id}/{job_id}.jsonl")
        theirs = other_api.get(f"/v1/export/{job_id}")
        malformed = api.get("/v1/export/not-a-job")

    assert accepted.status == 202 and accepted.json["status"] == "running"
    assert accepted.headers["Location"] == accepted.json["status_url"] == f"/v1/export/{job_id}"
    assert running.status == 200 and running.json["status"] == "running" and "url" not in running.json
    assert done.status == 200 and done.json["status"] == "done" and done.json["expires_in"] == 3600
    assert "Signature=" in done.json["url"] and f"{tenant.tenant_id}/{job_id}.jsonl" in done.json["url"]
    body = stored["Body"].read().decode().splitlines()
    assert json.loads(body[0])["tenant"] == tenant.tenant_name
    assert len(body) - 2 == sum(done.json["counts"].values())
    assert json.loads(body[-1]) == {"record": "end", "counts": done.json["counts"]}
    assert theirs.status == 404, "a job id is looked up under the caller's own tenant only"
    assert malformed.status == 422


def test_an_export_job_that_fails_says_why_and_one_that_never_ran_turns_failed(
    api: Api, tenant: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    with aws_exports(monkeypatch) as s3:
        jobs = deps.export_jobs()
        assert jobs is not None
        broken = jobs.request(tenant.tenant_id, tenant.tenant_name, None)

        class LostDatabase(ExportService):
            def write_jsonl(self, *args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("the database connection was lost")

        with pytest.raises(RuntimeError):  # raised again, so Lambda retries and then keeps the event
            jobs.run(LostDatabase(deps.database()), f"exports/{tenant.tenant_id}/{broken.id}.request.json")
        failed = api.get(f"/v1/export/{broken.id}")
        stale = jobs.request(tenant.tenant_id, tenant.tenant_name, None)
        key = f"exports/{tenant.tenant_id}/{stale.id}.request.json"
        old = json.loads(s3.get_object(Bucket="engram-exports", Key=key)["Body"].read())
        old["requested_at"] = "2020-01-01T00:00:00+00:00"
        s3.put_object(Bucket="engram-exports", Key=key, Body=json.dumps(old).encode())
        never_ran = api.get(f"/v1/export/{stale.id}")

    assert failed.json["status"] == "failed" and "connection was lost" in failed.json["error"]
    assert never_ran.json["status"] == "failed" and "async-failures queue" in never_ran.json["error"]


def test_an_import_in_aws_is_uploaded_then_run_by_the_worker(
    api: Api,
    tenant: IssuedKey,
    other_api: Api,
    other_tenant: IssuedKey,
    local_db: LocalDatabase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _seed(api, tenant, local_db)
    lines = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    with aws_exports(monkeypatch) as s3:
        # When: the target asks for an upload, PUTs the file to the presigned URL, and the worker runs
        accepted = other_api.post("/v1/import?upload=true&new_ids=true")
        job_id = accepted.json["id"]
        waiting = other_api.get(f"/v1/import/{job_id}")
        key = f"imports/{other_tenant.tenant_id}/{job_id}.jsonl"
        s3.put_object(Bucket="engram-exports", Key=key, Body="\n".join(lines).encode())
        uploaded = other_api.get(f"/v1/import/{job_id}")  # until the worker has it
        jobs = deps.import_jobs()
        assert jobs is not None
        jobs.run(deps.import_service(), key)
        done = other_api.get(f"/v1/import/{job_id}")
        theirs = api.get(f"/v1/import/{job_id}")
        # a file that is not an export fails the job, saying why
        bad = other_api.post("/v1/import?upload=true").json["id"]
        bad_key = f"imports/{other_tenant.tenant_id}/{bad}.jsonl"
        s3.put_object(Bucket="engram-exports", Key=bad_key, Body=b"not an export\n")
        jobs.run(deps.import_service(), bad_key)
        failed = other_api.get(f"/v1/import/{bad}")

    assert accepted.status == 202 and accepted.json["status"] == "awaiting_upload"
    assert accepted.headers["Location"] == f"/v1/import/{job_id}"
    assert "Signature=" in accepted.json["upload_url"] and key in accepted.json["upload_url"]
    assert waiting.json["status"] == uploaded.json["status"] == "awaiting_upload"
    assert done.json["status"] == "done" and done.json["report"]["inserted"] == _kinds(lines)
    assert theirs.status == 404
    assert failed.json["status"] == "failed" and "line 1" in failed.json["error"]
    assert len(_export(local_db.app, other_tenant.tenant_id, "o")) == len(lines)


def _engram_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engram.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "shared"), **env},
        timeout=300,
        check=False,
    )


def test_cli_export_then_import_into_a_fresh_database(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, fresh: FreshDatabase, tmp_path: Path
) -> None:
    _seed(api, tenant, local_db)
    file = tmp_path / "tenant.jsonl"
    here = {"DATABASE_URL": local_db.admin_conninfo, "ENGRAM_DATA_DIR": str(local_db.settings.data_dir)}
    there = {"DATABASE_URL": fresh.embedded.admin_conninfo, "ENGRAM_DATA_DIR": str(tmp_path)}

    exported = _engram_cli("export", "--tenant", tenant.tenant_name, env=here)
    file.write_text(exported.stdout)
    imported = _engram_cli("import", str(file), "--tenant", "cli-copy", env=there)

    assert exported.returncode == 0, exported.stderr
    assert imported.returncode == 0, imported.stderr
    assert (
        json.loads(imported.stdout.splitlines()[-1])["inserted"]["memory"]
        == _kinds(exported.stdout.splitlines())["memory"]
    )
    assert "imported" in imported.stderr and "memory" in imported.stderr
    copy_id = tenants.ensure_existing_tenant(fresh.admin, "cli-copy")
    assert _export(fresh.app, copy_id, "cli-copy")[1:] == exported.stdout.splitlines()[1:]


def _cli_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tenant_name: str, lines: list[dict[str, Any]]
) -> int:
    """`engram import` in this process (on the session's database: cli_on_test_db); the collaborators it
    installs are the session's again after the test."""
    monkeypatch.setattr(deps, "_current", deps.current())
    file = tmp_path / "import.jsonl"
    file.write_text(records.jsonl(lines))
    return cli.main(["import", str(file), "--tenant", tenant_name])


def test_cli_import_into_a_new_tenant_creates_it_with_the_records(
    local_db: LocalDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cli_on_test_db: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a tenant that does not exist, and a complete file
    name = f"new-{uuid4().hex[:12]}"
    end = {"record": "end", "counts": {"entity": 1}}

    # When the file is imported into it
    code = _cli_import(
        tmp_path, monkeypatch, name, [records.header(version=4), records.entity("Zorana"), end]
    )

    # Then the tenant is there, holding the file's records, and its rows are seen through RLS as ever
    assert code == 0, capsys.readouterr().err
    tenant_id = tenants.ensure_existing_tenant(local_db.admin, name)
    assert _curated_by_name(local_db, tenant_id) == {"Zorana": True}
    with local_db.app.tenant(tenant_id) as cur:
        assert cur.execute("SELECT name FROM tenants").fetchall() == [{"name": name}]


def test_a_refused_cli_import_into_a_new_tenant_leaves_no_tenant(
    local_db: LocalDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cli_on_test_db: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a tenant that does not exist, and a file cut short after its first record (no end record)
    name = f"refused-{uuid4().hex[:12]}"

    # When the file is imported into it (found by QA: the tenant was created before the import, and stayed)
    code = _cli_import(tmp_path, monkeypatch, name, [records.header(version=4), records.entity("Zorana")])

    # Then the import is refused, and leaves nothing: no records, and no tenant
    assert code == 2 and "cut short" in capsys.readouterr().err
    with pytest.raises(InvalidInput, match="no tenant named"):
        tenants.ensure_existing_tenant(local_db.admin, name)


def test_a_cli_import_into_a_new_tenant_sees_no_other_tenants_rows(
    api: Api,
    local_db: LocalDatabase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cli_on_test_db: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an entity of another tenant, and a file holding its id, for a tenant that does not exist yet
    made = api.post("/v1/entities", {"name": "Zorana Petrovic"})
    name = f"new-{uuid4().hex[:12]}"
    end = {"record": "end", "counts": {"entity": 1}}
    entity = records.entity("Zorana Petrovic", id=made.json["id"])

    # When the file is imported into it (the tenant made by the administrator, the records as the app)
    code = _cli_import(tmp_path, monkeypatch, name, [records.header(version=4), entity, end])

    # Then the id is another tenant's, as RLS tells the app role: refused, and nothing is left
    assert code == 2 and "already exists in another tenant" in capsys.readouterr().err
    with pytest.raises(InvalidInput, match="no tenant named"):
        tenants.ensure_existing_tenant(local_db.admin, name)


def test_cli_moves_a_tenant_between_deployments_over_the_api(
    api: Api,
    tenant: IssuedKey,
    other_tenant: IssuedKey,
    local_db: LocalDatabase,
    live_url: str,
    tmp_path: Path,
) -> None:
    _seed(api, tenant, local_db)
    file = tmp_path / "moved.jsonl"

    exported = _engram_cli("export", "--url", live_url, "--key", tenant.plaintext, "-o", str(file), env={})
    imported = _engram_cli(
        "import", str(file), "--url", live_url, "--key", other_tenant.plaintext, "--new-ids", env={}
    )
    wrong_key = _engram_cli("import", str(file), "--url", live_url, "--key", "engram_nope", env={})

    assert exported.returncode == 0, exported.stderr
    assert imported.returncode == 0, imported.stderr
    lines = file.read_text().splitlines()
    assert "exported to" in exported.stderr and "imported" in imported.stderr
    assert len(_export(local_db.app, other_tenant.tenant_id, "o")) == len(lines)
    assert wrong_key.returncode == 2 and "forbidden" in wrong_key.stderr


# --- whether an entity is curated ------------------------------------------------------------------


def _curated_by_name(local_db: LocalDatabase, tenant_id: UUID) -> dict[str, bool]:
    with local_db.admin.transaction() as cur:
        rows = cur.execute("SELECT name, curated FROM entities WHERE tenant_id = %s", (tenant_id,)).fetchall()
    return {row["name"]: bool(row["curated"]) for row in rows}


def test_an_export_and_its_import_keep_whether_each_entity_is_curated(
    api: Api, tenant: IssuedKey, other_tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given an entity made on purpose and one extraction made, both named by a memory
    assert api.post("/v1/entities", {"name": "Zorana Petrovic"}).status == 201
    api.post("/v1/memories", {"content": "Zorana Petrovic works at Acme.", "extract": "light"})

    # When the tenant is exported and imported into another one
    lines = _export(local_db.app, tenant.tenant_id, tenant.tenant_name)
    _import(local_db.app, other_tenant.tenant_id, other_tenant.tenant_name, lines, new_ids=True)

    # Then the file says which is which, and so does the copy; and it says it is of version 4, so that
    # an importer of version 3, which has no such field, refuses it by its header (found by QA)
    assert _records(lines)[0]["version"] == 4
    exported = {r["name"]: r["curated"] for r in _records(lines) if r["record"] == "entity"}
    assert exported == {"Zorana Petrovic": True, "Acme": False}
    assert _curated_by_name(local_db, other_tenant.tenant_id) == exported


def test_an_entity_record_of_an_older_export_without_curated_imports_curated(local_db: LocalDatabase) -> None:
    # Given a file written before entities said whether they were curated
    tenant_id = tenants.ensure_tenant(local_db.admin, f"older-{uuid4().hex[:12]}")
    entity = records.entity("Zorana")
    del entity["curated"]
    end = {"record": "end", "counts": {"entity": 1}}
    lines = [json.dumps(records.header(version=3)), json.dumps(entity), json.dumps(end)]

    # When it is imported
    report = _import(local_db.app, tenant_id, "older", lines)

    # Then the entity is kept as every entity was then: curated
    assert report.inserted == {"entity": 1}
    assert _curated_by_name(local_db, tenant_id) == {"Zorana": True}


def test_a_curated_entity_imported_onto_one_extraction_made_curates_it(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given an entity extraction made, and a file holding a curated entity of the same name and type
    api.post("/v1/memories", {"content": "Zorana Petrovic works at Acme.", "extract": "light"})
    entity = records.entity("Zorana Petrovic", entity_type="unknown", normalized_name="zorana petrovic")
    lines = [json.dumps(records.header()), json.dumps(entity)]

    # When it is imported
    report = _import(local_db.app, tenant.tenant_id, tenant.tenant_name, lines)

    # Then the tenant's entity stands for it, and is curated from then on
    assert report.skipped == {"entity": 1}
    assert _curated_by_name(local_db, tenant.tenant_id)["Zorana Petrovic"] is True


@pytest.mark.parametrize("curated", [True, False])
def test_an_entity_imported_under_the_id_it_has_is_kept_as_the_file_says_as_one_of_its_name_is(
    curated: bool, api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given an entity extraction made, and a file holding the same entity (its id), curated or not: a later
    # export imported where an earlier one was, say (found by QA: only an entity met by name was curated)
    memory = api.post("/v1/memories", {"content": "Zorana Petrovic works at Acme.", "extract": "light"})
    with local_db.admin.transaction() as cur:
        made = cur.execute(
            "SELECT id FROM entities WHERE tenant_id = %s AND name = 'Zorana Petrovic' AND NOT curated",
            (tenant.tenant_id,),
        ).fetchone()
    assert made is not None
    entity = records.entity(
        "Zorana Petrovic",
        id=str(made["id"]),
        entity_type="unknown",
        normalized_name="zorana petrovic",
        curated=curated,
    )
    lines = [json.dumps(records.header()), json.dumps(entity)]

    # When it is imported, and then the only memory that named it is deleted
    report = _import(local_db.app, tenant.tenant_id, tenant.tenant_name, lines)
    assert api.delete(f"/v1/memories/{memory.json['id']}").status == 204

    # Then it was the same entity, and stays if the file's was curated; if not, it went with its memory
    assert report.skipped == {"entity": 1}
    assert _curated_by_name(local_db, tenant.tenant_id).get("Zorana Petrovic") is (True if curated else None)


@pytest.mark.parametrize("same", ["id", "name and type"])
def test_the_import_report_counts_the_entities_it_curated_among_those_it_skipped(
    same: str, api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given an entity extraction made, and a file holding a curated entity that is the same (by id, or by
    # name and type)
    api.post("/v1/memories", {"content": "Zorana Petrovic works at Acme.", "extract": "light"})
    with local_db.admin.transaction() as cur:
        made = cur.execute(
            "SELECT id FROM entities WHERE tenant_id = %s AND name = 'Zorana Petrovic' AND NOT curated",
            (tenant.tenant_id,),
        ).fetchone()
    assert made is not None
    same_id = {"id": str(made["id"])} if same == "id" else {}
    entity = records.entity(
        "Zorana Petrovic", entity_type="unknown", normalized_name="zorana petrovic", curated=True, **same_id
    )
    body = "\n".join([json.dumps(records.header()), json.dumps(entity)]).encode()

    # When it is imported over the API, and then again (found by QA: the report said only "skipped",
    # though the first import changed the entity)
    first = api.post("/v1/import", raw=body)
    again = api.post("/v1/import", raw=body)

    # Then the first report says the entity was curated (and, not inserted, it is still counted as
    # skipped: inserted and skipped count the file's records); the second changes nothing and says so
    assert first.status == 200, first.json
    assert first.json["skipped"] == {"entity": 1} and first.json["entities_curated"] == 1
    assert again.json["skipped"] == {"entity": 1} and again.json["entities_curated"] == 0
    assert _curated_by_name(local_db, tenant.tenant_id)["Zorana Petrovic"] is True
