"""An export that lasts longer than 30 s is not cut off. Hypercorn's read timeout (30 s by default) closes a
connection that sends nothing for that long, whatever the server is still sending it: it cut every export
longer than that (the client of an export sends nothing once its request is sent). Here two locks hold the
export in turn, each for less than the worker's 29 s limit between two pieces (sessions 20 s, before the
memories; procedures 15 s, after them), so that the export itself lasts past 30 s."""

from __future__ import annotations

import json
import random
import time

import httpx

from engram.local.stack import LocalDatabase
from engram.providers.local_embeddings import LOCAL_MODEL_NAME
from engram.tenants.service import IssuedKey
from tests import export_records as records
from tests.e2e.conftest import wait_for
from tests.e2e.local_server import LocalServer, blocked_backends, call, table_locked

MEMORIES = 300  # about 1.2 MB of JSON Lines (each with its vector, so the import embeds nothing)
# In the order an export reads them, with the memories' pieces between them (a piece goes at 256 KB).
HOLDS = (("sessions", 20.0), ("procedures", 15.0))


def test_an_export_that_lasts_longer_than_30_seconds_arrives_whole(
    server: LocalServer, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    # Given: a tenant of 300 memories, and its export held twice on its way
    rng = random.Random(7)
    memories = [
        records.memory(
            f"Long export fact {i}",
            embedding=[round(rng.uniform(-1, 1), 6) for _ in range(384)],
            embedding_model=LOCAL_MODEL_NAME,
        )
        for i in range(MEMORIES)
    ]
    body = records.jsonl([records.header(), records.container("default"), *memories]).encode()
    status, report = call(
        server.url, "POST", "/v1/import", raw=body, key=tenant.plaintext, content_type="application/x-ndjson"
    )
    assert status == 200 and report["inserted"]["memory"] == MEMORIES, report

    # When: the client asks for the export, which the locks hold for 35 s in all
    started = time.monotonic()
    (first_table, first_hold), (second_table, second_hold) = HOLDS
    with (
        table_locked(local_db.admin_conninfo, first_table) as first,
        table_locked(local_db.admin_conninfo, second_table) as second,
        httpx.Client(base_url=server.url, timeout=120) as client,
        client.stream("POST", "/v1/export", json={}, headers={"x-api-key": tenant.plaintext}) as response,
    ):
        assert wait_for(lambda: blocked_backends(first) != [], timeout=15)
        time.sleep(first_hold)
        first.execute("ROLLBACK")
        assert wait_for(lambda: blocked_backends(second) != [], timeout=15)
        time.sleep(second_hold)
        second.execute("ROLLBACK")
        exported = response.read()
        first.execute("BEGIN")  # for the context's own ROLLBACK
        second.execute("BEGIN")
    lasted = time.monotonic() - started

    # Then: the whole export arrived, its end record counting every memory
    assert response.status_code == 200
    assert lasted > 30
    lines = exported.decode().splitlines()
    assert json.loads(lines[-1]) == {"record": "end", "counts": {"container": 1, "memory": MEMORIES}}
    assert len(lines) == MEMORIES + 3
