"""A step of `engram local`'s start that finds PostgreSQL dead (it was killed just then) waits for the
watch to start it again, instead of ending the start (the flaky `test_a_crashed_postgresql_is_started_again`:
the kill fell between /health answering and the drop folder's first query)."""

from __future__ import annotations

import threading
from pathlib import Path

import psutil
import psycopg
import pytest

from engram.db.embedded import EmbeddedPostgres, start_embedded
from engram.local.run import through_restarts


def _killed(pg_dir: Path) -> EmbeddedPostgres:
    """A new embedded PostgreSQL whose postmaster has been killed outright."""
    pg = start_embedded(pg_dir, cleanup_mode="stop")
    postmaster = psutil.Process(int((pg_dir / "postmaster.pid").read_text().split()[0]))
    postmaster.kill()
    postmaster.wait(10)
    return pg


def _one(conninfo: str) -> int:
    with psycopg.connect(conninfo, connect_timeout=2) as conn:
        row = conn.execute("SELECT 1").fetchone()
        assert row is not None
        return int(row[0])


def test_a_step_waits_for_postgresql_to_be_started_again(tmp_path: Path) -> None:
    pg = _killed(tmp_path / "pg")
    restart = threading.Timer(1.0, pg.ensure_running)  # as PostgresWatch does, a moment later
    restart.start()
    try:
        assert through_restarts(lambda: _one(pg.admin_conninfo), wait_seconds=30) == 1
    finally:
        restart.join()  # before the stop, which it would otherwise undo
        pg.stop()


def test_a_database_that_stays_down_ends_the_start_after_the_wait(tmp_path: Path) -> None:
    pg = _killed(tmp_path / "pg")
    try:
        with pytest.raises(psycopg.OperationalError):
            through_restarts(lambda: _one(pg.admin_conninfo), wait_seconds=1)
    finally:
        pg.ensure_running()
        pg.stop()
