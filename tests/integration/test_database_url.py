"""DATABASE_URL points Engram at an existing PostgreSQL; the app still runs as the RLS-bound role."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import make_conninfo

from engram.graph.link_rules import RuleLinker
from engram.local.stack import LocalDatabase, open_database
from engram.memories.models import MemoryCreate
from engram.memories.service import MemoryService
from engram.memories.write_extraction import WriteExtraction
from engram.memories.writer import MemoryWriter
from engram.providers.local_embeddings import LocalEmbedder
from engram.settings import Settings
from engram.tenants import service as tenants


def test_an_existing_postgres_via_database_url(
    local_db: LocalDatabase, embedder: LocalEmbedder, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    # Given an empty database on some PostgreSQL server, named only by a URL
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS external_pg")
        conn.execute("CREATE DATABASE external_pg")
    url = make_conninfo(local_db.admin_conninfo, dbname="external_pg")

    # When Engram opens it
    external = open_database(Settings(database_url=url, data_dir=tmp_path, local_model_dir=tmp_path))
    try:
        issued = tenants.issue_key(external.admin, "external")
        extraction = WriteExtraction(external.app, lambda: None, llm_available=False)
        service = MemoryService(external.app, MemoryWriter(embedder, RuleLinker()), extraction)
        service.create(issued.tenant_id, MemoryCreate(content="stored through DATABASE_URL"))

        # Then it is migrated, and the app connection is the RLS-bound app role
        with external.app.transaction() as cur:
            who = cur.execute("SELECT current_user AS role, count(*) AS visible FROM memories").fetchone()
        with external.app.tenant(issued.tenant_id) as cur:
            mine = cur.execute("SELECT content FROM memories").fetchall()
    finally:
        external.close()
    assert who == {"role": "engram_app", "visible": 0}
    assert [r["content"] for r in mine] == ["stored through DATABASE_URL"]
    assert external.embedded is None
