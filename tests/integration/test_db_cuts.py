"""The database connection cut at each statement of a memory write, of a document's pipeline step and
of an import (tests/integration/db_cut.py: a proxy that drops the socket at the n-th statement). Each
time, the tenant holds either nothing of the work or all of it, never a part; the client gets a 503
it may retry (or the work's own result, when the cut came after it committed); and a retry completes
the work exactly once."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from engram import deps
from engram.db.database import Database
from engram.local.gateway import LocalGateway
from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.db_cut import CuttingProxy, holdings, proxied_database, settled, tenant_tables


@pytest.fixture
def cut(local_db: LocalDatabase) -> Iterator[tuple[CuttingProxy, Database]]:
    """The handlers and pipeline steps use the app pool through a cutting proxy for the test."""
    assert local_db.embedded is not None
    conninfo = local_db.embedded.app_conninfo(local_db.settings.app_role)
    with proxied_database(conninfo) as (proxy, db), _installed(db):
        yield proxy, db


@contextmanager
def _installed(db: Database) -> Iterator[None]:
    previous = deps.current()
    deps.install(
        dataclasses.replace(previous, database=db, pipeline=None, starter=None, _lock=previous._lock)
    )
    try:
        yield
    finally:
        deps.install(previous)


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
        # Then: all or nothing; a cut write is a 503 to retry, never a 500
        assert held in (nothing, complete), (n, held)
        assert answer.status in (201, 503), (n, answer.json)
        if answer.status == 503:
            assert answer.json["error"]["code"] == "service_unavailable", answer.json
        if held == nothing:
            retried = api.post("/v1/memories", body)
            assert retried.status == 201, (n, retried.json)
            assert holdings(local_db.admin, key.tenant_id, tables) == complete, n
        outcomes.append((answer.status, "nothing" if held == nothing else "complete"))
    assert proxy.cuts == statements
    assert (503, "nothing") in outcomes  # the cut did fail writes, which the retry completed
