"""The migration runner: forward-only, idempotent, recorded, and safe to run concurrently."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import psycopg
import pytest

from engram.db.embedded import start_embedded
from engram.db.migrate import discover, migrate
from engram.errors import MigrationError
from engram.local.stack import LocalDatabase
from engram.settings import Settings
from tests.integration.owned_database import owned_database


@pytest.fixture
def fresh_database(local_db: LocalDatabase) -> str:
    """A new, empty database on the session's server."""
    name = "migrations_" + str(threading.get_ident())
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(local_db.admin_conninfo, dbname=name)


def test_applies_every_migration_once_and_records_it(fresh_database: str, settings: Settings) -> None:
    first = migrate(fresh_database, settings.migrations_dir)
    second = migrate(fresh_database, settings.migrations_dir)

    assert first == [m.version for m in discover(settings.migrations_dir)]
    assert second == []
    with psycopg.connect(fresh_database) as conn:
        recorded = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert recorded == first


def test_concurrent_runners_apply_each_migration_exactly_once(
    fresh_database: str, settings: Settings
) -> None:
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(migrate(fresh_database, settings.migrations_dir))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    applied = sorted(v for r in results for v in r)
    assert applied == [m.version for m in discover(settings.migrations_dir)]


def test_a_changed_applied_migration_is_refused(
    fresh_database: str, settings: Settings, tmp_path: Path
) -> None:
    copy = tmp_path / "migrations"
    shutil.copytree(settings.migrations_dir, copy)
    migrate(fresh_database, copy)
    first = sorted(copy.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after the fact\n")

    with pytest.raises(MigrationError, match="forward-only"):
        migrate(fresh_database, copy)


def test_a_failing_migration_leaves_nothing_behind(
    fresh_database: str, settings: Settings, tmp_path: Path
) -> None:
    copy = tmp_path / "migrations"
    shutil.copytree(settings.migrations_dir, copy)
    (copy / "9999_broken.sql").write_text("CREATE TABLE half_done (id int); SELECT no_such_function();")

    with pytest.raises(psycopg.Error):
        migrate(fresh_database, copy)

    with psycopg.connect(fresh_database) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
        table = conn.execute("SELECT to_regclass('half_done')").fetchone()
    assert "9999" not in versions
    assert table == (None,)


def test_embedded_server_keeps_data_across_restarts(tmp_path: Path, settings: Settings) -> None:
    server = start_embedded(tmp_path / "pg", cleanup_mode="stop")
    migrate(server.admin_conninfo, settings.migrations_dir)
    with psycopg.connect(server.admin_conninfo) as conn:
        conn.execute("INSERT INTO tenants (name) VALUES ('survivor')")
    server.stop()

    again = start_embedded(tmp_path / "pg", cleanup_mode="delete")
    try:
        with psycopg.connect(again.admin_conninfo) as conn:
            names = [r[0] for r in conn.execute("SELECT name FROM tenants")]
    finally:
        again.stop()
    assert names == ["survivor"]


def test_a_database_owner_that_is_no_superuser_applies_every_migration(
    local_db: LocalDatabase, settings: Settings
) -> None:
    # Given a database owned by a role that is no superuser, as the RDS master user is not
    with owned_database(local_db, "owned") as database:
        # When it applies every migration, as the deploy's migrate function does
        applied = migrate(database.owner, settings.migrations_dir)

        # Then all of them apply, the functions handed to the app's roles keep their owners, and the
        # CREATE on `public` lent to every role for each migration's transaction was taken back
        assert applied == [m.version for m in discover(settings.migrations_dir)]
        with psycopg.connect(database.admin) as conn:
            owners = {
                row[0]
                for row in conn.execute(
                    "SELECT pg_get_userbyid(proowner) FROM pg_proc "
                    "WHERE pronamespace = 'public'::regnamespace"
                )
            }
            public_may_create = conn.execute(
                "SELECT count(*) FROM pg_namespace n, aclexplode(n.nspacl) a "
                "WHERE n.nspname = 'public' AND a.grantee = 0 AND a.privilege_type = 'CREATE'"
            ).fetchone()
        assert {"engram_auth", "engram_search"} <= owners
        assert public_may_create == (0,)
