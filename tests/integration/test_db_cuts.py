"""The database connection cut at each statement of a memory write, of a document's pipeline step and
of an import (tests/integration/db_cut.py: a proxy that drops the socket at the n-th statement). Each
time, the tenant holds either nothing of the work or all of it, never a part; the client gets a 503
it may retry after its Retry-After (or the work's own result, when the cut came after it committed);
and a retry completes the work exactly once."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from engram import deps
from engram.db.database import Database
from engram.export.importer import ImportService
from engram.export.service import ExportService
from engram.local.functions import invoke_pipeline_step
from engram.local.gateway import LocalGateway
from engram.local.stack import LocalDatabase
from engram.pipeline.runner import LocalRunner
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.db_cut import (
    CuttingProxy,
    handlers_through_cuts,
    holdings,
    settled,
    tenant_tables,
)
from tests.integration.pipeline_helpers import document, register


@pytest.fixture
def cut(local_db: LocalDatabase) -> Iterator[tuple[CuttingProxy, Database]]:
    """The handlers and pipeline steps use the app pool through a cutting proxy for the test."""
    with handlers_through_cuts(local_db) as (proxy, db):
        yield proxy, db


def _tenant(local_db: LocalDatabase) -> IssuedKey:
    return tenants.issue_key(local_db.admin, f"cut-{uuid.uuid4().hex[:12]}")


def test_a_memory_write_cut_at_each_statement_is_all_or_nothing_and_completes_on_retry(
    cut: tuple[CuttingProxy, Database], local_db: LocalDatabase, gateway: LocalGateway
) -> None:
    proxy, _ = cut
    tables = tenant_tables(local_db.admin)

    def given() -> tuple[IssuedKey, Api, dict[str, Any]]:
        # A tenant with a memory the write supersedes: the write inserts, retires and links, in one unit
        key = _tenant(local_db)
        api = Api(gateway, key.plaintext)
        old = api.post("/v1/memories", {"content": "Alice lives in Paris", "tags": ["home"]})
        assert old.status == 201, old.json
        body = {"content": "Alice lives in Lyon", "tags": ["home"], "supersedes": old.json["id"]}
        return key, api, body

    key, api, body = given()
    nothing = holdings(local_db.admin, key.tenant_id, tables)
    start = proxy.statements
    assert api.post("/v1/memories", body).status == 201
    statements = proxy.statements - start
    complete = holdings(local_db.admin, key.tenant_id, tables)
    assert complete != nothing and statements >= 5

    outcomes = []
    for n in range(1, statements + 1):
        key, api, body = given()
        # When: the connection drops at the n-th statement of the write
        proxy.cut_at(n)
        answer = api.post("/v1/memories", body)
        proxy.cut_at(None)
        settled(local_db.admin, local_db.settings.app_role)
        held = holdings(local_db.admin, key.tenant_id, tables)
        # Then: all or nothing; a cut write is a 503 to retry after Retry-After, never a 500; only a
        # cut before the handler ran (the authorizer's) says not_handled, and then nothing was applied
        assert held in (nothing, complete), (n, held)
        assert answer.status in (201, 503), (n, answer.json)
        if answer.status == 503:
            code = answer.json["error"]["code"]
            assert code in ("service_unavailable", "not_handled"), answer.json
            assert answer.headers["Retry-After"] == "2", (n, answer.headers)
            assert code != "not_handled" or held == nothing, n
        if held == nothing:
            retried = api.post("/v1/memories", body)
            assert retried.status == 201, (n, retried.json)
            assert holdings(local_db.admin, key.tenant_id, tables) == complete, n
        code = answer.json["error"]["code"] if answer.status == 503 else None
        outcomes.append((answer.status, code, "nothing" if held == nothing else "complete"))
    assert proxy.cuts == statements
    # the cut did fail writes (in the authorizer and in the handler), which the retry completed
    assert {(503, "not_handled", "nothing"), (503, "service_unavailable", "nothing")} <= set(outcomes)


NOTES = (
    b"Alice lives in Paris and works at Acme as an engineer. Bob moved to Berlin in 2021.\n\n"
    b"Carol prefers tea over coffee. The quarterly review is due on Friday.\n"
)
STEP = "llm_extract"  # the step that stores the document's memories


def _run_document(
    local_db: LocalDatabase, proxy: CuttingProxy, cut_at: int | None, *, every: bool = False
) -> tuple[IssuedKey, str, int]:
    """A small document through the pipeline, the connection cut at the `cut_at`-th statement of the
    step's first attempt (or of `every` attempt); its tenant, its end and the step's statements."""
    key = _tenant(local_db)
    ref = register(key.tenant_id, NOTES, "notes.txt")
    seen: dict[str, int] = {}

    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        if function == STEP and (every or "start" not in seen):
            seen.setdefault("start", proxy.statements)
            proxy.cut_at(cut_at)
        result = invoke_pipeline_step(function, event)
        if function == STEP:
            seen.setdefault("end", proxy.statements)
        return result

    status = LocalRunner(invoke, sleep=lambda _: None).run(ref)
    proxy.cut_at(None)
    settled(local_db.admin, local_db.settings.app_role)
    assert document(local_db.app, ref)["status"] == status
    return key, status, seen.get("end", 0) - seen["start"]


def test_a_pipeline_step_cut_at_each_statement_is_retried_to_the_same_end(
    cut: tuple[CuttingProxy, Database], local_db: LocalDatabase
) -> None:
    proxy, _ = cut
    # The change-events outbox is left out: a step whose commit went through but whose answer was cut
    # runs again, and what that rerun really changes (its earlier rows cleared, written again) is
    # reported; the tenant's data ends the same.
    tables = tenant_tables(local_db.admin)
    key, status, statements = _run_document(local_db, proxy, None)
    complete = holdings(local_db.admin, key.tenant_id, tables)
    assert status == "done" and complete["current memories"] and statements >= 3

    for n in range(1, statements + 1):
        # When: the step's connection drops at its n-th statement
        key, status, _ = _run_document(local_db, proxy, n)
        # Then: the step is retried (a lost connection is transient) and ends as a clean run does
        assert status == "done", n
        assert holdings(local_db.admin, key.tenant_id, tables) == complete, n


def test_a_step_whose_connection_keeps_dropping_fails_with_nothing_of_its_run(
    cut: tuple[CuttingProxy, Database], local_db: LocalDatabase
) -> None:
    proxy, _ = cut
    key, status, _ = _run_document(local_db, proxy, 3, every=True)

    assert status == "failed"
    with local_db.admin.tenant(key.tenant_id) as cur:
        row = cur.execute(
            "SELECT d.error_code, (SELECT count(*) FROM memories m WHERE m.tenant_id = d.tenant_id) "
            "AS memories FROM documents d WHERE d.tenant_id = %s",
            (key.tenant_id,),
        ).fetchone()
    assert row is not None and (row["error_code"], row["memories"]) == ("unavailable", 0)


def _fresh_ids(lines: list[str]) -> list[str]:
    """The export with every id replaced (consistently): ids are global, so each import gets its own."""
    mapping: dict[str, str] = {}
    pattern = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return [pattern.sub(lambda m: mapping.setdefault(m.group(), str(uuid.uuid4())), line) for line in lines]


def test_an_import_cut_at_each_statement_is_all_or_nothing_and_completes_on_retry(
    cut: tuple[CuttingProxy, Database], local_db: LocalDatabase, gateway: LocalGateway
) -> None:
    proxy, db = cut
    tables = tenant_tables(local_db.admin)
    source = _tenant(local_db)
    api = Api(gateway, source.plaintext)
    old = api.post("/v1/memories", {"content": "Alice lives in Paris", "tags": ["home"]}).json["id"]
    assert api.post("/v1/memories", {"content": "Alice lives in Lyon", "supersedes": old}).status == 201
    assert api.put("/v1/working/plan/step", {"value": {"n": 1}}).status == 201
    session = api.post("/v1/sessions", {"user_id": "u1"}).json["id"]
    assert (
        api.post(
            f"/v1/sessions/{session}/messages?user_id=u1", {"messages": [{"role": "user", "content": "hi"}]}
        ).status
        == 201
    )
    exporter = ExportService(db)
    lines = [json.dumps(r) for r in exporter.records(source.tenant_id, source.tenant_name, None)]
    importer = ImportService(db, deps.memory_writer(), deps.blob_store(), local_db.settings.work_prefix)

    def importing(lines: list[str], cut_at: int | None) -> tuple[IssuedKey, bool]:
        key = _tenant(local_db)
        proxy.cut_at(cut_at)
        try:
            importer.import_jsonl(key.tenant_id, key.tenant_name, lines)
            failed = False
        except psycopg.OperationalError:
            failed = True
        proxy.cut_at(None)
        settled(local_db.admin, local_db.settings.app_role)
        return key, failed

    start = proxy.statements
    key, failed = importing(_fresh_ids(lines), None)
    statements = proxy.statements - start
    complete = holdings(local_db.admin, key.tenant_id, tables)
    assert not failed and statements >= 8
    nothing = holdings(local_db.admin, _tenant(local_db).tenant_id, tables)

    failures = 0
    for n in range(1, statements + 1):
        fresh = _fresh_ids(lines)
        key, failed = importing(fresh, n)
        held = holdings(local_db.admin, key.tenant_id, tables)
        # (a cut in the pool's check of an idle connection is no failure: the pool takes another)
        assert held in (nothing, complete) and (failed or held == complete), (n, held)
        failures += failed
        importer.import_jsonl(key.tenant_id, key.tenant_name, fresh)  # the retry: idempotent by id
        assert holdings(local_db.admin, key.tenant_id, tables) == complete, n
    assert failures >= statements - 2
