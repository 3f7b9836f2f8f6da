"""Row-level security is the tenant boundary: these tests go around the application on purpose."""

from __future__ import annotations

import psycopg
import pytest

from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api

TENANT_TABLES_QUERY = """
    SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner) AS owner
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
      AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                  AND a.attname IN ('tenant_id') AND NOT a.attisdropped)
"""


def _seed(api: Api, other_api: Api) -> None:
    assert api.post("/v1/memories", {"content": "mine: the launch code is 1234"}).status == 201
    assert other_api.post("/v1/memories", {"content": "theirs: the launch code is 9999"}).status == 201


def test_every_tenant_table_has_rls_enabled_and_forced(local_db: LocalDatabase) -> None:
    with psycopg.connect(local_db.admin_conninfo) as conn:
        rows = conn.execute(TENANT_TABLES_QUERY).fetchall()
        tenants = conn.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = 'tenants'"
        ).fetchone()
    assert {r[0] for r in rows} >= {"api_keys", "containers", "memories", "memory_relationships"}
    for name, enabled, forced, _owner in rows:
        assert enabled and forced, f"{name} must have RLS enabled and forced"
    assert tenants == (True, True)


def test_app_role_owns_nothing_and_cannot_bypass_rls(local_db: LocalDatabase) -> None:
    with local_db.app.transaction() as cur:
        role = cur.execute(
            "SELECT current_user AS name, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        owned = cur.execute(
            "SELECT count(*) AS n FROM pg_class "
            "WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
    assert role == {"name": "engram_app", "rolsuper": False, "rolbypassrls": False}
    assert owned == {"n": 0}


def test_a_query_without_where_clause_sees_only_its_own_tenant(
    local_db: LocalDatabase, api: Api, other_api: Api, tenant: IssuedKey
) -> None:
    _seed(api, other_api)

    with local_db.app.tenant(tenant.tenant_id) as cur:
        rows = cur.execute("SELECT tenant_id, content FROM memories").fetchall()

    assert rows, "the tenant's own rows are visible"
    assert {r["tenant_id"] for r in rows} == {tenant.tenant_id}
    assert not any("theirs" in r["content"] for r in rows)


def test_a_wrong_where_clause_cannot_reach_another_tenant(
    local_db: LocalDatabase, api: Api, other_api: Api, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    _seed(api, other_api)

    with local_db.app.tenant(tenant.tenant_id) as cur:
        rows = cur.execute(
            "SELECT * FROM memories WHERE tenant_id = %s", (other_tenant.tenant_id,)
        ).fetchall()
        updated = cur.execute(
            "UPDATE memories SET content = 'pwned' WHERE tenant_id = %s", (other_tenant.tenant_id,)
        ).rowcount
        deleted = cur.execute("DELETE FROM memories WHERE tenant_id = %s", (other_tenant.tenant_id,)).rowcount

    assert rows == []
    assert updated == 0 and deleted == 0
    with local_db.app.tenant(other_tenant.tenant_id) as cur:
        theirs = cur.execute("SELECT content FROM memories").fetchall()
    assert [r["content"] for r in theirs] == ["theirs: the launch code is 9999"]


# The search index's tables (migrations/0014) too: the app reads them under RLS, with no definer function.
TENANT_TABLES = (
    "memories",
    "containers",
    "tenants",
    "memory_relationships",
    "text_postings",
    "text_stats",
    "text_stat_deltas",
)


def test_no_tenant_set_means_no_rows_at_all(local_db: LocalDatabase, api: Api, other_api: Api) -> None:
    _seed(api, other_api)

    with local_db.app.transaction() as cur:
        counts = {
            table: cur.execute(f"SELECT count(*) AS n FROM {table}").fetchone()["n"]  # noqa: S608
            for table in TENANT_TABLES
        }

    assert counts == dict.fromkeys(TENANT_TABLES, 0)


def test_writing_a_row_for_another_tenant_fails(
    local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege), local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "INSERT INTO containers (tenant_id, name) VALUES (%s, 'smuggled')", (other_tenant.tenant_id,)
        )


def test_the_tenant_setting_ends_with_the_transaction(
    local_db: LocalDatabase, api: Api, tenant: IssuedKey
) -> None:
    api.post("/v1/memories", {"content": "kept inside its transaction"})

    with local_db.app.tenant(tenant.tenant_id) as cur:
        assert cur.execute("SELECT count(*) AS n FROM memories").fetchone()["n"] >= 1
    with local_db.app.transaction() as cur:
        assert cur.execute("SELECT count(*) AS n FROM memories").fetchone()["n"] == 0


def test_the_app_role_cannot_read_api_keys_directly(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege), local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute("SELECT key_hash FROM api_keys")


def test_search_never_returns_another_tenants_memory(api: Api, other_api: Api) -> None:
    _seed(api, other_api)

    for mode in ("hybrid", "vector", "text"):
        found = api.post("/v1/search", {"query": "launch code", "mode": mode}).json
        assert found["results"], mode
        assert all("theirs" not in r["content"] for r in found["results"]), mode
