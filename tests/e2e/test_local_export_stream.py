"""`POST /v1/export` on `engram local` streams: the worker reads the tenant in batches from one snapshot and
sends each piece as it is made, the front sends it on as a chunk. A lock on a table the export reads late
(procedures) holds the export half way, so that what the client has by then was sent before the export was
done; and, held there, the export can be cut short on purpose."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from engram.export.service import CHUNK_BYTES
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests import export_records as records
from tests.e2e.conftest import wait_for
from tests.e2e.local_server import LocalServer, blocked_backends, call, table_locked

MEMORIES = 1500  # about 0.8 MB of JSON Lines: several pieces before the procedures


def _memory(i: int) -> dict[str, Any]:
    content = f"Streamed fact number {i}: " + "lorem ipsum dolor sit amet " * 12
    return records.memory(content, container="bulk", tags=["bulk"], metadata={"i": i})


def _seed(base_url: str, key: str, memories: int = MEMORIES) -> None:
    lines = [records.header(), records.container("bulk"), *(_memory(i) for i in range(memories))]
    body = records.jsonl(lines).encode()
    status, report = call(
        base_url, "POST", "/v1/import", raw=body, key=key, content_type="application/x-ndjson", timeout=120
    )
    assert status == 200 and report["inserted"]["memory"] == memories, report


def _exports_open(local_db: LocalDatabase) -> int:
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' "
            "AND query ILIKE '%export\\_%'"
        ).fetchone()
        assert row is not None
        return int(row[0])


def _read_at_least(pieces: Iterator[bytes], size: int) -> bytes:
    received = b""
    while len(received) < size:
        received += next(pieces)
    return received


def test_an_export_reaches_the_client_in_pieces_before_it_is_done(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    # Given: a tenant of 1500 memories, and the export held before its procedures
    key = tenant.plaintext
    _seed(server.url, key)
    headers = {"x-api-key": key}
    # When
    with (
        table_locked(local_db.admin_conninfo, "procedures") as admin,
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("POST", "/v1/export", json={}, headers=headers) as response,
    ):
        pieces = response.iter_raw()
        first = _read_at_least(pieces, CHUNK_BYTES)

        # Then: the client holds the memories while the export still waits to read the procedures
        assert response.status_code == 200
        assert response.headers["transfer-encoding"] == "chunked"
        assert "content-length" not in response.headers
        assert wait_for(lambda: blocked_backends(admin) != [], timeout=10)
        assert first.startswith(b'{"record":"header"') and b'"record":"end"' not in first
        admin.execute("ROLLBACK")  # the lock goes: the export ends
        admin.execute("BEGIN")
        body = first + b"".join(pieces)

    # ... and the whole file is there, as the server's own export writes it, and imports elsewhere
    lines = body.decode().splitlines()
    assert json.loads(lines[-1]) == {"record": "end", "counts": {"container": 1, "memory": MEMORIES}}
    status, report = call(
        server.url,
        "POST",
        "/v1/import?new_ids=true",
        raw=body,
        key=other_tenant.plaintext,
        content_type="application/x-ndjson",
        timeout=120,
    )
    assert status == 200 and report["inserted"] == {"container": 1, "memory": MEMORIES}, report
    again = httpx.post(f"{server.url}/v1/export", json={}, headers=headers, timeout=60).text.splitlines()
    assert again[1:] == lines[1:]


def test_an_export_whose_worker_dies_is_cut_short_detectably_and_the_pool_recovers(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given: an export held half way, its first pieces with the client
    key = tenant.plaintext
    _seed(server.url, key)
    assert wait_for(lambda: len(server.worker_pids()) == 4, 30)
    workers = server.api_worker_pids()
    with (
        table_locked(local_db.admin_conninfo, "procedures") as admin,
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("POST", "/v1/export", json={}, headers={"x-api-key": key}) as response,
    ):
        pieces = response.iter_raw()
        first = _read_at_least(pieces, CHUNK_BYTES)
        assert wait_for(lambda: blocked_backends(admin) != [], timeout=10)

        # When: the API workers (the exporting one among them) are killed outright
        for pid in workers:
            os.kill(pid, signal.SIGKILL)

        # Then: the body breaks off (no final chunk): the client knows it is incomplete
        with pytest.raises(httpx.RemoteProtocolError):
            for piece in pieces:
                first += piece
        assert b'"record":"end"' not in first

    # ... and new workers take their place, and serve a whole export
    assert wait_for(
        lambda: len(server.api_worker_pids()) == 2 and not set(workers) & set(server.worker_pids()), 60
    )
    assert wait_for(lambda: call(server.url, "GET", "/health")[0] == 200, 60)
    whole = httpx.post(f"{server.url}/v1/export", json={}, headers={"x-api-key": key}, timeout=60)
    assert json.loads(whole.text.splitlines()[-1])["counts"] == {"container": 1, "memory": MEMORIES}


def test_an_export_that_fails_half_way_is_cut_short_and_its_worker_serves_on(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given: an export held half way
    key = tenant.plaintext
    _seed(server.url, key)
    assert wait_for(lambda: len(server.api_worker_pids()) == 2, 60)
    workers = server.api_worker_pids()
    with (
        table_locked(local_db.admin_conninfo, "procedures") as admin,
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("POST", "/v1/export", json={}, headers={"x-api-key": key}) as response,
    ):
        pieces = response.iter_raw()
        _read_at_least(pieces, CHUNK_BYTES)
        assert wait_for(lambda: blocked_backends(admin) != [], timeout=10)

        # When: its database session ends under it
        for pid in blocked_backends(admin):
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

        # Then: the body breaks off, and the worker stays
        with pytest.raises(httpx.RemoteProtocolError):
            for _ in pieces:
                pass
    assert server.api_worker_pids() == workers
    for _ in range(4):  # both workers serve (the pool reconnects the terminated session)
        assert call(server.url, "POST", "/v1/search", {"query": "fact"}, key)[0] == 200


def test_a_client_that_leaves_mid_export_frees_the_worker(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given: an export held half way, whose client reads its first pieces
    key = tenant.plaintext
    _seed(server.url, key)
    assert wait_for(lambda: len(server.api_worker_pids()) == 2, 60)
    workers = server.api_worker_pids()
    with (
        table_locked(local_db.admin_conninfo, "procedures") as admin,
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("POST", "/v1/export", json={}, headers={"x-api-key": key}) as response,
    ):
        pieces = response.iter_raw()
        _read_at_least(pieces, CHUNK_BYTES)
        assert wait_for(lambda: blocked_backends(admin) != [], timeout=10)
    # When: the client goes away, then the lock

    # Then: the worker stops the export (its transaction ends) and serves again; none was killed
    assert wait_for(lambda: _exports_open(local_db) == 0, 20)
    assert server.api_worker_pids() == workers
    for _ in range(4):
        status, body = call(server.url, "POST", "/v1/search", {"query": "fact"}, key)
        assert status == 200, body
