"""Entities and relations are tenant-isolated by RLS: another tenant sees nothing through the API, and
even SQL with a wrong WHERE clause stays inside the transaction's tenant."""

from __future__ import annotations

import psycopg
import pytest

from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api

GRAPH_TABLES = ("entities", "entity_keys", "entity_mentions", "entity_relations")


def _seed(api: Api) -> dict[str, str]:
    alice = api.post(
        "/v1/entities", {"name": "Alice Secret", "entity_type": "person", "aliases": ["Agent A"]}
    ).json
    memory = api.post("/v1/memories", {"content": "Alice Secret holds the launch code"}).json
    api.post(f"/v1/entities/{alice['id']}/observations", {"memory_id": memory["id"]})
    relation = api.post(
        "/v1/relations",
        {
            "source": alice["id"],
            "relation_type": "works_for",
            "target": {"name": "Hidden Agency", "entity_type": "organization"},
        },
    ).json
    return {"entity": alice["id"], "memory": memory["id"], "relation": relation["id"]}


def test_graph_tables_have_rls_enabled_and_forced_and_explicit_grants(local_db: LocalDatabase) -> None:
    with psycopg.connect(local_db.admin_conninfo) as conn:
        flags = conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = ANY(%s)",
            (list(GRAPH_TABLES),),
        ).fetchall()
        policies = conn.execute(
            "SELECT tablename, qual, with_check FROM pg_policies WHERE tablename = ANY(%s)",
            (list(GRAPH_TABLES),),
        ).fetchall()
        grants = conn.execute(
            "SELECT table_name, array_agg(privilege_type::text ORDER BY privilege_type) "
            "FROM information_schema.role_table_grants "
            "WHERE grantee = 'engram_app' AND table_name = ANY(%s) GROUP BY 1",
            (list(GRAPH_TABLES),),
        ).fetchall()

    assert {row[0]: (row[1], row[2]) for row in flags} == dict.fromkeys(GRAPH_TABLES, (True, True))
    assert {p[0] for p in policies} == set(GRAPH_TABLES)
    for _, qual, check in policies:
        assert "current_setting('engram.tenant_id'::text, true)" in qual and qual == check
    assert {g[0]: g[1] for g in grants} == {t: ["DELETE", "INSERT", "SELECT", "UPDATE"] for t in GRAPH_TABLES}


def test_another_tenant_sees_nothing_through_the_api(api: Api, other_api: Api) -> None:
    ids = _seed(api)

    assert other_api.get("/v1/entities").json["entities"] == []
    assert other_api.get("/v1/entities?q=alice").json["entities"] == []
    assert other_api.get("/v1/entities?q=agent%20a").json["entities"] == []
    assert other_api.get(f"/v1/entities/{ids['entity']}").status == 404
    assert other_api.get("/v1/graph?entity=Alice%20Secret").status == 404
    assert other_api.get(f"/v1/graph?entity={ids['entity']}").status == 404
    assert other_api.delete(f"/v1/relations/{ids['relation']}").status == 404
    assert other_api.delete(f"/v1/entities/{ids['entity']}/observations/{ids['memory']}").status == 404
    assert other_api.delete(f"/v1/entities/{ids['entity']}").status == 404
    # ...and nothing of theirs was touched.
    mine = api.get(f"/v1/entities/{ids['entity']}").json
    assert len(mine["observations"]) == 1 and len(mine["relations"]) == 1


def test_another_tenants_ids_cannot_be_linked_to(api: Api, other_api: Api) -> None:
    ids = _seed(api)
    theirs = other_api.post("/v1/entities", {"name": "Eve", "entity_type": "person"}).json

    as_source = other_api.post(
        "/v1/relations", {"source": ids["entity"], "relation_type": "knows", "target": theirs["id"]}
    )
    with_memory = other_api.post(
        "/v1/relations",
        {
            "source": theirs["id"],
            "relation_type": "knows",
            "target": {"name": "Bob"},
            "source_memory_id": ids["memory"],
        },
    )
    observed = other_api.post(f"/v1/entities/{theirs['id']}/observations", {"memory_id": ids["memory"]})

    assert as_source.status == with_memory.status == observed.status == 404


def test_the_same_name_in_two_tenants_is_two_entities(api: Api, other_api: Api) -> None:
    mine = api.post("/v1/entities", {"name": "Alice", "entity_type": "person"})
    theirs = other_api.post("/v1/entities", {"name": "alice", "entity_type": "person"})

    assert mine.status == theirs.status == 201 and mine.json["id"] != theirs.json["id"]


def test_a_wrong_where_clause_stays_inside_the_tenant(
    local_db: LocalDatabase, api: Api, other_api: Api, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    _seed(other_api)

    with local_db.app.tenant(tenant.tenant_id) as cur:
        for table in GRAPH_TABLES:
            select = f"SELECT * FROM {table} WHERE tenant_id = %s"  # noqa: S608
            delete = f"DELETE FROM {table} WHERE tenant_id = %s"  # noqa: S608
            rows = cur.execute(select, (other_tenant.tenant_id,)).fetchall()
            deleted = cur.execute(delete, (other_tenant.tenant_id,)).rowcount
            assert rows == [] and deleted == 0, table
        renamed = cur.execute("UPDATE entities SET name = 'pwned' WHERE true").rowcount
        assert renamed == 0
    with local_db.app.tenant(other_tenant.tenant_id) as cur:
        counts = {t: cur.execute(f"SELECT count(*) AS n FROM {t}").fetchone()["n"] for t in GRAPH_TABLES}  # noqa: S608
        names = {r["name"] for r in cur.execute("SELECT name FROM entities").fetchall()}
    assert counts == {"entities": 2, "entity_keys": 3, "entity_mentions": 1, "entity_relations": 1}
    assert names == {"Alice Secret", "Hidden Agency"}


def test_no_tenant_set_means_no_graph_rows(local_db: LocalDatabase, api: Api) -> None:
    _seed(api)

    with local_db.app.transaction() as cur:
        counts = {t: cur.execute(f"SELECT count(*) AS n FROM {t}").fetchone()["n"] for t in GRAPH_TABLES}  # noqa: S608

    assert counts == dict.fromkeys(GRAPH_TABLES, 0)


def test_rows_cannot_be_written_for_or_pointed_at_another_tenant(
    local_db: LocalDatabase, api: Api, other_api: Api, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    theirs = _seed(other_api)
    mine = api.post("/v1/entities", {"name": "Mallory", "entity_type": "person"}).json
    my_memory = api.post("/v1/memories", {"content": "Mallory was here"}).json

    with pytest.raises(psycopg.errors.InsufficientPrivilege), local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "INSERT INTO entities (tenant_id, name, normalized_name, entity_type) "
            "VALUES (%s, 'x', 'x', 'person')",
            (other_tenant.tenant_id,),
        )
    # A row of my own that names their entity: the (tenant_id, entity) foreign keys refuse it.
    with pytest.raises(psycopg.errors.ForeignKeyViolation), local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "INSERT INTO entity_relations (tenant_id, source_entity, target_entity, relation_type) "
            "VALUES (%s, %s, %s, 'knows')",
            (tenant.tenant_id, mine["id"], theirs["entity"]),
        )
    with pytest.raises(psycopg.errors.ForeignKeyViolation), local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "INSERT INTO entity_mentions (tenant_id, entity_id, memory_id) VALUES (%s, %s, %s)",
            (tenant.tenant_id, theirs["entity"], my_memory["id"]),
        )


def test_a_smuggled_reference_to_another_tenants_memory_reveals_nothing(
    local_db: LocalDatabase, api: Api, other_api: Api, tenant: IssuedKey
) -> None:
    """Memory references are plain foreign keys (memories has no (tenant_id, id) key): the service
    checks them, and even a row written around it cannot read the memory through RLS."""
    theirs = _seed(other_api)
    mine = api.post("/v1/entities", {"name": "Mallory", "entity_type": "person"}).json
    with local_db.app.tenant(tenant.tenant_id) as cur:
        cur.execute(
            "INSERT INTO entity_mentions (tenant_id, entity_id, memory_id) VALUES (%s, %s, %s)",
            (tenant.tenant_id, mine["id"], theirs["memory"]),
        )

    detail = api.get(f"/v1/entities/{mine['id']}").json

    assert detail["observations"] == []
