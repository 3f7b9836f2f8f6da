"""Cutting the database connection at a chosen statement: a proxy on a unix socket in front of the
embedded PostgreSQL, and what a tenant's tables hold, to compare before and after.

The proxy reads the PostgreSQL protocol the clients send: each simple query ('Q') and each extended-
protocol Sync ('S', one per statement psycopg sends) is one statement. Armed with `cut_at(n)`, it
forwards the n-th statement from then on and drops both sockets at once: the server sees its client
vanish (and rolls back what it had not committed: a COMMIT already forwarded still commits, while its
client never hears so), the client sees the connection die mid-statement."""

from __future__ import annotations

import dataclasses
import os
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from uuid import UUID

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from engram import deps
from engram.db.database import Database
from engram.local.stack import LocalDatabase

STATEMENT_MESSAGES = (b"Q", b"S")


class CuttingProxy:
    def __init__(self, server_conninfo: str) -> None:
        params = conninfo_to_dict(server_conninfo)
        self._target = str(Path(str(params["host"])) / f".s.PGSQL.{params.get('port') or 5432}")
        self._folder = tempfile.mkdtemp(prefix="pgcut-")
        self._port = int(params.get("port") or 5432)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(os.path.join(self._folder, f".s.PGSQL.{self._port}"))
        self._listener.listen(32)
        self._lock = threading.Lock()
        self.statements = 0  # statements forwarded so far, on every connection
        self.cuts = 0
        self._cut_at: int | None = None
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def conninfo(self, server_conninfo: str) -> str:
        """The server's connection string, through the proxy."""
        return make_conninfo(server_conninfo, host=self._folder, port=str(self._port))

    def cut_at(self, statement: int | None) -> None:
        """Drop the connection that sends the `statement`-th statement from now (1: the next one),
        once; None: forward everything."""
        with self._lock:
            self._cut_at = None if statement is None else self.statements + statement

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for sock in list(self._open):
                _close(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self._target)
            with self._lock:
                self._open |= {client, server}
            threading.Thread(target=self._client_to_server, args=(client, server), daemon=True).start()
            threading.Thread(target=_pump, args=(server, client), daemon=True).start()

    def _client_to_server(self, client: socket.socket, server: socket.socket) -> None:
        try:
            (length,) = struct.unpack("!i", _read(client, 4))
            server.sendall(struct.pack("!i", length) + _read(client, length - 4))  # the startup message
            while True:
                kind = _read(client, 1)
                (length,) = struct.unpack("!i", _read(client, 4))
                server.sendall(kind + struct.pack("!i", length) + _read(client, length - 4))
                if kind in STATEMENT_MESSAGES and self._counted_and_cut():
                    break
        except OSError:
            pass
        _close(client)
        _close(server)

    def _counted_and_cut(self) -> bool:
        with self._lock:
            self.statements += 1
            if self._cut_at is not None and self.statements >= self._cut_at:
                self._cut_at = None
                self.cuts += 1
                return True
        return False


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("closed")
        data += chunk
    return data


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    _close(source)
    _close(sink)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextmanager
def proxied_database(app_conninfo: str) -> Iterator[tuple[CuttingProxy, Database]]:
    """The app role's pool, through a cutting proxy."""
    proxy = CuttingProxy(app_conninfo)
    database = Database(proxy.conninfo(app_conninfo), max_size=2, open_timeout=10).open()
    try:
        yield proxy, database
    finally:
        database.close()
        proxy.close()


@contextmanager
def handlers_through_cuts(local_db: LocalDatabase) -> Iterator[tuple[CuttingProxy, Database]]:
    """The handlers (the authorizer too) and pipeline steps use the app pool through a cutting proxy,
    until the block ends."""
    assert local_db.embedded is not None
    conninfo = local_db.embedded.app_conninfo(local_db.settings.app_role)
    with proxied_database(conninfo) as (proxy, db):
        previous = deps.current()
        deps.install(
            dataclasses.replace(previous, database=db, pipeline=None, starter=None, _lock=previous._lock)
        )
        try:
            yield proxy, db
        finally:
            deps.install(previous)


# Not what a tenant holds: change_events is the outbox, which the relay drains after each commit, on
# its own time (its rows are written in the writing transaction, so they are all or nothing too).
OUTBOX = "change_events"


def tenant_tables(admin: Database) -> list[str]:
    with admin.transaction() as cur:
        rows = cur.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'tenant_id' "
            "AND table_schema = 'public' AND table_name IN "
            "(SELECT tablename FROM pg_tables WHERE schemaname = 'public') ORDER BY table_name"
        ).fetchall()
    return [row["table_name"] for row in rows if row["table_name"] not in ("tenants", OUTBOX)]


def holdings(admin: Database, tenant_id: UUID, tables: list[str]) -> dict[str, Any]:
    """What the tenant holds: rows per table, and which of its memories are current."""
    with admin.tenant(tenant_id) as cur:
        # tenant_id named too: the admin may be a superuser, whom RLS does not hold
        counts: dict[str, Any] = {
            table: _count(cur, f"SELECT count(*) AS n FROM {table} WHERE tenant_id = %s", tenant_id)  # noqa: S608
            for table in tables
            if table not in TEXT_STATISTICS
        }
        counts["text statistics"] = _text_statistics(cur, tenant_id)
        rows = cur.execute("SELECT content FROM memories WHERE is_latest AND tenant_id = %s", (tenant_id,))
        counts["current memories"] = sorted(r["content"] for r in rows.fetchall())
    return counts


# The text index's statistics (migrations/0014) are folded statistics plus a log of deltas, folded now
# and then: what they hold is their per-term sums, not how many rows carry them.
TEXT_STATISTICS = ("text_stats", "text_stat_deltas")


def _text_statistics(cur: Any, tenant_id: UUID) -> list[tuple[str, str, int, int]]:
    rows = cur.execute(
        "SELECT corpus::text AS corpus, term, sum(docs)::bigint AS docs, sum(length)::bigint AS length FROM ("
        "  SELECT corpus, term, docs, length FROM text_stats WHERE tenant_id = %(t)s"
        "  UNION ALL SELECT corpus, term, docs, length FROM text_stat_deltas WHERE tenant_id = %(t)s) x "
        "GROUP BY corpus, term HAVING sum(docs) <> 0 OR sum(length) <> 0 ORDER BY corpus, term",
        {"t": tenant_id},
    ).fetchall()
    return [(r["corpus"], r["term"], int(r["docs"]), int(r["length"])) for r in rows]


def _count(cur: Any, query: str, tenant_id: UUID) -> int:
    row = cur.execute(query, (tenant_id,)).fetchone()
    return int(row["n"])


def settled(admin: Database, role: str, timeout: float = 10.0) -> None:
    """Wait until no session of `role` is still working: a COMMIT forwarded just before its cut is
    committed by the server a moment later, after its client has already seen the error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with admin.transaction() as cur:
            row = cur.execute(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE usename = %s AND state <> 'idle'", (role,)
            ).fetchone()
        if row is not None and row["n"] == 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"sessions of {role} still busy after {timeout} s")
