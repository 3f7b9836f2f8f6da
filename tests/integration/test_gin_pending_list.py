"""The memories' tag and metadata indexes keep no pending list (migration 0030): every tag- or
metadata-filtered lookup would read the whole list, up to 4 MB, until a vacuum merged it."""

from __future__ import annotations

import psycopg

from engram.local.stack import LocalDatabase
from tests.conftest import Api

FILTER_INDEXES = ("memories_tenant_tags_idx", "memories_metadata_idx")


def test_tagged_writes_leave_nothing_pending_in_the_filter_indexes(api: Api, local_db: LocalDatabase) -> None:
    batch = [{"content": f"note {i}", "tags": [f"t{i % 7}"], "metadata": {"k": f"v{i}"}} for i in range(100)]
    assert api.post("/v1/memories/batch", {"memories": batch}).status == 201

    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        pending = {
            name: conn.execute("SELECT pending_tuples FROM pgstatginindex(%s::regclass)", (name,)).fetchone()
            for name in FILTER_INDEXES
        }

    assert pending == {name: (0,) for name in FILTER_INDEXES}
