"""The pool hands out a sound connection without a round trip, and replaces one the server has ended,
through the cutting proxy (tests/integration/db_cut.py), which counts the statements clients send."""

from __future__ import annotations

import time
from uuid import uuid4

from engram.db.database import NOBODY
from engram.local.stack import LocalDatabase
from tests.integration.db_cut import proxied_database


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
    with proxied_database(_app_conninfo(local_db)) as (_, db):
        with db.transaction() as cur:
            first = cur.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert first is not None
        with local_db.admin.transaction() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", (first["pid"],))
        _wait_gone(local_db, first["pid"])

        with db.transaction() as cur:
            second = cur.execute("SELECT pg_backend_pid() AS pid").fetchone()

        assert second is not None and second["pid"] != first["pid"]


def _wait_gone(local_db: LocalDatabase, pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with local_db.admin.transaction() as cur:
            if cur.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is None:
                return
        time.sleep(0.02)
    raise AssertionError(f"backend {pid} still there")
