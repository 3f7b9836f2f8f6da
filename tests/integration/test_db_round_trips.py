"""Round trips to the database, counted by the cutting proxy (tests/integration/db_cut.py), which sees
each message clients send: the pool hands out a sound connection without one and replaces a connection
the server has ended; a tenant transaction begins in the message that sets its tenant."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from typing import Any
from uuid import uuid4

import psycopg
import pytest

from engram.db.database import NOBODY, Database, TenantTx
from engram.local.stack import LocalDatabase
from tests.conftest import Api
from tests.integration.db_cut import handlers_through_cuts, proxied_database


def _app_conninfo(local_db: LocalDatabase) -> str:
    assert local_db.embedded is not None
    return local_db.embedded.app_conninfo(local_db.settings.app_role)


def test_a_sound_connection_is_handed_out_without_a_round_trip(local_db: LocalDatabase) -> None:
    with proxied_database(_app_conninfo(local_db)) as (proxy, db):
        db.run(uuid4(), NOBODY, [])  # the pool's connection is made and used once
        before = proxy.statements

        db.run(uuid4(), NOBODY, [])

        assert proxy.statements - before == 1  # the run's one message, no check before it


def test_a_connection_the_server_ended_is_replaced_before_use(local_db: LocalDatabase) -> None:
    # Straight to the server, not through the proxy: a backend that is gone from pg_stat_activity has
    # sent its goodbye by then, where the proxy's threads might still be passing it on.
    db = Database(_app_conninfo(local_db), max_size=1).open()
    try:
        with db.transaction() as cur:
            first = cur.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert first is not None
        with local_db.admin.transaction() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", (first["pid"],))
        _wait_gone(local_db, first["pid"])

        with db.transaction() as cur:
            second = cur.execute("SELECT pg_backend_pid() AS pid").fetchone()

        assert second is not None and second["pid"] != first["pid"]
    finally:
        db.close()


def _wait_gone(local_db: LocalDatabase, pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with local_db.admin.transaction() as cur:
            if cur.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is None:
                return
        time.sleep(0.02)
    raise AssertionError(f"backend {pid} still there")


def test_a_tenant_transaction_begins_with_its_tenant_in_one_message(local_db: LocalDatabase) -> None:
    tenant = uuid4()
    with proxied_database(_app_conninfo(local_db)) as (proxy, db):
        with db.tenant(tenant) as cur:
            cur.execute("SELECT 1")
        before = proxy.statements

        with db.tenant(tenant) as cur:
            row = cur.execute(
                "SELECT current_setting('engram.tenant_id') AS tenant, "
                "now() = statement_timestamp() AS first_statement_of_its_transaction"
            ).fetchone()

        assert proxy.statements - before == 3  # BEGIN with the tenant, the SELECT, COMMIT
        assert row == {"tenant": str(tenant), "first_statement_of_its_transaction": False}


def test_a_tenant_transaction_that_raises_keeps_nothing_and_leaves_no_tenant(local_db: LocalDatabase) -> None:
    with proxied_database(_app_conninfo(local_db)) as (_, db):
        with pytest.raises(RuntimeError), db.tenant(uuid4()) as cur:
            cur.execute("SELECT set_config('engram.probe', 'kept?', false)")
            raise RuntimeError("the caller's work failed")

        with db.transaction() as cur:
            row = cur.execute(
                "SELECT current_setting('engram.probe', true) AS probe, "
                "current_setting('engram.tenant_id', true) AS tenant"
            ).fetchone()

        assert row is not None and row["probe"] in (None, "") and row["tenant"] in (None, "")
        # A failing statement's own error reaches the caller (the ROLLBACK after it does not hide it).
        with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant(uuid4()) as cur:
            cur.execute("CREATE TABLE not_for_the_app (x int)")


# A tenant's transaction, and one with no tenant (the admin side: tenants, keys, sweeps), end alike.
BEGINS: dict[str, Callable[[Database], AbstractContextManager[TenantTx]]] = {
    "tenant": lambda db: db.tenant(uuid4()),
    "no tenant": lambda db: db.transaction(),
}


@pytest.mark.parametrize("begin", BEGINS.values(), ids=BEGINS.keys())
def test_a_transaction_whose_statement_failed_raises_instead_of_committing(
    local_db: LocalDatabase, begin: Callable[[Database], AbstractContextManager[TenantTx]]
) -> None:
    with proxied_database(_app_conninfo(local_db)) as (_, db):
        with pytest.raises(psycopg.errors.InFailedSqlTransaction), begin(db) as cur:
            cur.execute("SELECT set_config('engram.probe', 'kept?', false)")
            with suppress(psycopg.errors.UndefinedTable):
                cur.execute("SELECT * FROM no_such_table")  # the caller swallows the error and ends the block

        with db.transaction() as cur:
            row = cur.execute("SELECT current_setting('engram.probe', true) AS probe").fetchone()

        assert row is not None and row["probe"] in (None, "")  # the block's setting was rolled back


def _isolation(cur: TenantTx) -> dict[str, Any] | None:
    return cur.execute(
        "SELECT current_setting('transaction_isolation') AS isolation, "
        "current_setting('transaction_read_only') AS read_only"
    ).fetchone()


def test_a_snapshot_transaction_is_read_only_and_repeatable(local_db: LocalDatabase) -> None:
    # One connection each, so that the plain transaction after the snapshot runs on the same connection.
    admin = Database(local_db.admin_conninfo, max_size=1).open()
    app = Database(_app_conninfo(local_db), max_size=1).open()
    try:
        for snapshot, plain in (
            (lambda: admin.transaction(snapshot=True), admin.transaction),
            (lambda: app.tenant(uuid4(), snapshot=True), lambda: app.tenant(uuid4())),
        ):
            with snapshot() as cur:
                assert _isolation(cur) == {"isolation": "repeatable read", "read_only": "on"}
            with plain() as cur:
                assert _isolation(cur) == {"isolation": "read committed", "read_only": "off"}
    finally:
        admin.close()
        app.close()


def test_a_read_with_no_tenant_is_one_message(local_db: LocalDatabase) -> None:
    with proxied_database(_app_conninfo(local_db)) as (proxy, db):
        db.read("SELECT 1 AS one")  # the pool's connection is made and used once
        before = proxy.statements

        rows = db.read("SELECT %s::int AS n", (7,))

        assert proxy.statements - before == 1  # no BEGIN, no COMMIT: the statement is its own transaction
        assert rows == [{"n": 7}]


def test_a_search_that_embeds_its_query_costs_one_round_trip_for_the_key_one_for_the_model_one_to_search(
    local_db: LocalDatabase, api: Api
) -> None:
    assert api.post("/v1/memories", {"content": "Alice lives in Paris", "container": "crm"}).status == 201
    with handlers_through_cuts(local_db) as (proxy, _):
        api.post("/v1/search", {"query": "where does Alice live?"})  # the planner learns the tenant's indexes
        before = proxy.statements

        found = api.post("/v1/search", {"query": "where does Alice live?"})

        assert found.status == 200 and found.json["results"][0]["content"] == "Alice lives in Paris"
        # The authorizer's key lookup, the tenant's embedding model (engram reembed), then the search; each
        # had been a transaction of three: BEGIN, the statement, COMMIT.
        assert proxy.statements - before == 3
