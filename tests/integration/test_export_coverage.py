"""Every tenant table of the catalogue is in the export, column for column, or engram.export.coverage says
why it is not: a table or column added later fails here until it is exported or excused."""

from __future__ import annotations

import psycopg
import pytest

from engram.export.coverage import COLUMNS_NOT_EXPORTED, NOT_EXPORTED, TABLE_OF
from engram.export.models import RECORD_MODELS
from engram.local.stack import LocalDatabase


def read_catalogue(conninfo: str) -> dict[str, set[str]]:
    """Tenant tables (a tenant_id column, or row-level security) -> their stored (not generated) columns."""
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            """SELECT c.relname, a.attname, a.attgenerated <> '' AS generated
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
               WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
                 AND (c.relrowsecurity OR EXISTS (
                     SELECT 1 FROM pg_attribute t WHERE t.attrelid = c.oid AND t.attname = 'tenant_id'))"""
        ).fetchall()
    tables: dict[str, set[str]] = {}
    for table, column, generated in rows:
        columns = tables.setdefault(table, set())
        if not generated:
            columns.add(column)
    return tables


def uncovered(catalogue: dict[str, set[str]]) -> set[str]:
    exported = {table for table in TABLE_OF.values() if table is not None}
    return set(catalogue) - exported - set(NOT_EXPORTED)


@pytest.fixture(scope="module")
def catalogue(local_db: LocalDatabase) -> dict[str, set[str]]:
    return read_catalogue(local_db.admin_conninfo)


def test_every_tenant_table_is_exported_or_excused(catalogue: dict[str, set[str]]) -> None:
    exported = {table for table in TABLE_OF.values() if table is not None}

    missing = uncovered(catalogue)

    assert not missing, f"tenant tables neither exported nor in NOT_EXPORTED: {sorted(missing)}"
    assert not exported & set(NOT_EXPORTED)
    assert set(NOT_EXPORTED) <= set(catalogue), "an excuse for a table that no longer exists"
    assert {"documents", "chunks", "entities", "entity_relations", "session_summaries"} <= exported


def test_every_column_of_an_exported_table_is_in_its_record(catalogue: dict[str, set[str]]) -> None:
    for kind, table in TABLE_OF.items():
        if table is None:
            continue
        fields = set(RECORD_MODELS[kind].model_fields) - {"record"}
        excused = set(COLUMNS_NOT_EXPORTED.get(table, {}))
        columns = catalogue[table] - {"tenant_id"}

        assert columns - excused == fields, (kind, sorted(columns - excused ^ fields))
        assert excused <= columns, f"an excuse for a column {table} no longer has"


def test_a_tenant_table_added_without_export_is_found(local_db: LocalDatabase) -> None:
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE term_statistics (tenant_id uuid NOT NULL, term text, df integer)")
        try:
            found = uncovered(read_catalogue(local_db.admin_conninfo))
        finally:
            conn.execute("DROP TABLE term_statistics")

    assert found == {"term_statistics"}
