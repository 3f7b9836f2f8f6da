"""The tables a tenant grows are analyzed after a fixed number of changed rows (migration 0025), not
after 10 % of the table: a tenant the statistics have not seen is estimated at one row, and its
lookups by id scan every row it holds until the next ANALYZE."""

from __future__ import annotations

import psycopg

from engram.local.stack import LocalDatabase

TENANT_TABLES = {
    "memories": 500,
    "memory_relationships": 500,
    "memory_sources": 500,
    "memory_periods": 500,
    "chunks": 500,
    "entities": 500,
    "entity_keys": 500,
    "entity_mentions": 500,
    "entity_relations": 500,
    "session_messages": 500,
    "text_postings": 20000,
}


def test_tenant_tables_are_analyzed_after_a_fixed_number_of_changed_rows(local_db: LocalDatabase) -> None:
    with psycopg.connect(local_db.admin_conninfo) as conn:
        rows = conn.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relkind IN ('r', 'p') AND relname = ANY(%s)",
            (list(TENANT_TABLES),),
        ).fetchall()
    options = {name: dict(o.split("=", 1) for o in (reloptions or [])) for name, reloptions in rows}

    assert set(options) == set(TENANT_TABLES)
    assert {
        name: (o.get("autovacuum_analyze_scale_factor"), o.get("autovacuum_analyze_threshold"))
        for name, o in options.items()
    } == {name: ("0", str(threshold)) for name, threshold in TENANT_TABLES.items()}
