"""`POST /v1/import` on `engram local` streams: the front sends the body on to an API worker piece by piece as
it arrives, and the worker imports each record as its line comes, all in one transaction. So a file of any
size (past the 6 MB limit of every other route) imports in one request, all or nothing: a bad record near the
end, or a client that goes away mid-upload, leaves nothing of the records before it; and a single record
larger than the parts the client used to send imports too."""

from __future__ import annotations

import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from engram.limits import MAX_REQUEST_BYTES, MAX_STREAMED_REQUEST_BYTES
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from engram_client import APIError, Engram
from engram_client.transfer import import_from
from tests import export_records as records
from tests.e2e.conftest import wait_for
from tests.e2e.local_server import LocalServer, call, raw_exchange

DIMS = 384
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
VECTOR = [round((i % 17) / 100 - 0.08, 4) for i in range(DIMS)]


def _memories(count: int, start: int = 0) -> Iterator[dict[str, Any]]:
    """Memories as an export holds them, with their vectors: about 3 KB a line."""
    for i in range(start, start + count):
        content = f"Imported fact {i}: the quarterly report covers revenue, churn and hiring."
        yield records.memory(
            content, container="bulk", metadata={"i": i}, embedding=VECTOR, embedding_model=MODEL
        )


def _file(memories: int, *, bad_at: int | None = None) -> bytes:
    """A version 2 export of `memories` memories; with `bad_at`, the memory at that position is malformed."""
    lines = [records.jsonl([records.header(), records.container("bulk")])]
    for i, memory in enumerate(_memories(memories)):
        lines.append(records.jsonl([{**memory, "confidence": "very"} if i == bad_at else memory]))
    return "".join(lines).encode()


def _memory_count(local_db: LocalDatabase, tenant: IssuedKey) -> int:
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM memories WHERE tenant_id = %s", (tenant.tenant_id,)
        ).fetchone()
        assert row is not None
        return int(row[0])


def _imports_open(local_db: LocalDatabase) -> int:
    """Transactions that have written and wait, open, for more: an import waiting for the rest of its body."""
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL"
        ).fetchone()
        assert row is not None
        return int(row[0])


def _in_pieces(body: bytes, size: int = 256 * 1024) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_an_import_larger_than_six_mb_lands_whole_in_one_request(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given: an export of 2,500 memories with their vectors, over 7 MB
    body = _file(2500)
    assert len(body) > MAX_REQUEST_BYTES + 1024 * 1024

    # When: it is sent as the body of one request, chunked (no Content-Length to go by)
    response = httpx.post(
        f"{server.url}/v1/import",
        content=_in_pieces(body),
        headers={"x-api-key": tenant.plaintext, "Content-Type": "application/x-ndjson"},
        timeout=120,
    )

    # Then: every record is in, from that one request
    assert response.status_code == 200, response.text
    assert response.json()["inserted"] == {"container": 1, "memory": 2500}
    assert _memory_count(local_db, tenant) == 2500


def test_a_bad_record_near_the_end_leaves_nothing_of_the_records_before_it(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey, tmp_path: Path
) -> None:
    # Given: a 7.6 MB export whose last memory but one is malformed (line 2,501 of the file)
    file = tmp_path / "bad.jsonl"
    file.write_bytes(_file(2500, bad_at=2498))
    before = _memory_count(local_db, tenant)

    # When: the SDK imports it (what `engram import --url` does)
    with Engram(server.url, tenant.plaintext, timeout=120) as client, pytest.raises(APIError) as refused:
        import_from(client, file)

    # Then: a 4xx that names the line, and not one of the 2,498 memories before it was kept
    assert refused.value.status == 422 and "line 2501" in str(refused.value), refused.value
    assert _memory_count(local_db, tenant) == before == 0


def test_a_client_that_leaves_mid_upload_leaves_nothing_and_the_worker_serves_on(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given: an import whose client has sent half its body, which the worker is importing already
    body = _file(2500)
    assert wait_for(lambda: len(server.api_worker_pids()) == 2, 60)
    workers = server.api_worker_pids()
    head = (
        f"POST /v1/import HTTP/1.1\r\nHost: x\r\nx-api-key: {tenant.plaintext}\r\n"
        f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + body[: len(body) // 2])
        assert wait_for(lambda: _imports_open(local_db) == 1, timeout=20)

        # When: the client goes away
    # Then: the import's transaction ends, and nothing of it is kept
    assert wait_for(lambda: _imports_open(local_db) == 0, timeout=20)
    time.sleep(0.5)
    assert _memory_count(local_db, tenant) == 0

    # ... and the worker was not killed: it serves on, the whole file too
    assert server.api_worker_pids() == workers
    status, report = call(
        server.url,
        "POST",
        "/v1/import",
        raw=body,
        key=tenant.plaintext,
        content_type="application/x-ndjson",
        timeout=120,
    )
    assert status == 200 and report["inserted"] == {"container": 1, "memory": 2500}, report
    assert server.api_worker_pids() == workers


def test_a_record_larger_than_a_megabyte_imports(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey, tmp_path: Path
) -> None:
    # Given: an export (version 3, with its end record) holding a memory of 1.5 MB, among small ones
    large = records.memory("a large attachment", container="bulk", metadata={"attachment": "x" * 1_500_000})
    small = list(_memories(3))
    end = {"record": "end", "counts": {"container": 1, "memory": 4}}
    file = tmp_path / "large.jsonl"
    lines = [records.header(version=3), records.container("bulk"), small[0], large, *small[1:], end]
    file.write_text(records.jsonl(lines))
    assert len(file.read_bytes().splitlines()[3]) > 1024 * 1024

    # When: the SDK imports it (its parts of 1 MB refused such a record, whatever the server took)
    progress: list[dict[str, int]] = []
    with Engram(server.url, tenant.plaintext, timeout=120) as client:
        summary = import_from(client, file, on_records=progress.append)

    # Then: all four memories are in, the large one whole, and the progress heard each record as it went
    assert dict(summary.inserted) == {"container": 1, "memory": 4}
    assert len(progress) > 1 and sum(map(Counter, progress), Counter()) == {"container": 1, "memory": 4}
    got = call(server.url, "GET", f"/v1/memories/{large['id']}", key=tenant.plaintext)
    assert got[0] == 200 and len(got[1]["metadata"]["attachment"]) == 1_500_000
    assert _memory_count(local_db, tenant) == 4


def test_an_import_past_its_limit_or_with_bad_framing_is_refused(
    server: LocalServer, tenant: IssuedKey
) -> None:
    post = (
        f"POST /v1/import HTTP/1.1\r\nHost: x\r\nx-api-key: {tenant.plaintext}\r\n"
        "Content-Type: application/x-ndjson\r\n"
    )
    body = records.jsonl([records.header(), records.container("bulk")]).encode()
    # a declared size past the limit: refused before any of it is read
    status, _, answer = raw_exchange(
        server.port, f"{post}Content-Length: {MAX_STREAMED_REQUEST_BYTES + 1}\r\n\r\n".encode()
    )
    assert status == 413 and b"payload_too_large" in answer
    # Content-Length: -1, and two Content-Lengths that disagree
    assert raw_exchange(server.port, f"{post}Content-Length: -1\r\n\r\n".encode() + body)[0] == 400
    twice = f"{post}Content-Length: {len(body)}\r\nContent-Length: 3\r\n\r\n".encode()
    assert raw_exchange(server.port, twice + body)[0] == 400
