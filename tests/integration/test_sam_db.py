"""`make sam-db`: a TCP port that forwards to the embedded PostgreSQL's unix socket, so that `sam local`'s
containers reach the local database (here on the loopback, against the test database)."""

from __future__ import annotations

import asyncio
import socket
import threading

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from engram.local.stack import LocalDatabase
from infra.sam_db import serve, socket_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_tcp_connection_reaches_the_embedded_database_through_the_forwarder(
    local_db: LocalDatabase,
) -> None:
    port, ready, stop = _free_port(), threading.Event(), threading.Event()

    async def forward() -> None:
        server = await serve("127.0.0.1", port, socket_path(local_db.admin_conninfo))
        ready.set()
        async with server:
            while not stop.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(forward(),), daemon=True)
    thread.start()
    try:
        assert ready.wait(10)
        user = conninfo_to_dict(local_db.admin_conninfo)["user"]
        tcp = make_conninfo(host="127.0.0.1", port=port, dbname="engram", user=user, sslmode="disable")
        with psycopg.connect(tcp) as conn:
            applied = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
        assert applied is not None and applied[0] > 0  # the migrated database, over TCP
    finally:
        stop.set()
        thread.join(timeout=5)
