"""The schema's guarantees for the scope tables, checked in the catalog and as the app role."""

from __future__ import annotations

import pytest

from engram.db.database import EVERYONE, Party
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api

SCOPE_TABLES = ("sessions", "session_messages", "working_memory", "procedures")
TENANT_POLICY = "(tenant_id = (NULLIF(current_setting('engram.tenant_id'::text, true), ''::text))::uuid)"


@pytest.mark.parametrize("table", SCOPE_TABLES)
def test_every_scope_table_has_forced_rls_the_tenant_policy_and_app_grants(
    local_db: LocalDatabase, table: str
) -> None:
    with local_db.admin.transaction() as cur:
        flags = cur.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass", (table,)
        ).fetchone()
        policy = cur.execute(
            "SELECT qual, with_check FROM pg_policies "
            "WHERE tablename = %s AND policyname = 'tenant_isolation'",
            (table,),
        ).fetchone()
        grants = cur.execute(
            "SELECT array_agg(privilege_type::text ORDER BY privilege_type) AS p "
            "FROM information_schema.table_privileges WHERE table_name = %s AND grantee = 'engram_app'",
            (table,),
        ).fetchone()
        column = cur.execute(
            "SELECT is_nullable FROM information_schema.columns "
            "WHERE table_name = %s AND column_name = 'tenant_id'",
            (table,),
        ).fetchone()

    assert flags == {"relrowsecurity": True, "relforcerowsecurity": True}
    assert policy == {"qual": TENANT_POLICY, "with_check": TENANT_POLICY}
    assert grants is not None and grants["p"] == ["DELETE", "INSERT", "SELECT", "UPDATE"]
    assert column == {"is_nullable": "NO"}


def test_the_database_itself_hides_other_parties_rows_from_the_app_role(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given: one conversation of alice and one private memory of alice
    session = api.post("/v1/sessions", {"user_id": "alice"}).json
    api.post(
        f"/v1/sessions/{session['id']}/messages?user_id=alice",
        {"messages": [{"role": "user", "content": "hi"}]},
    )
    api.post("/v1/memories", {"content": "alice's secret", "user_id": "alice", "visibility": "private"})

    def counts(party: Party) -> tuple[int, int, int]:
        with local_db.app.tenant(tenant.tenant_id, party) as cur:
            row = cur.execute(
                "SELECT (SELECT count(*) FROM sessions) AS s, (SELECT count(*) FROM session_messages) AS m, "
                "(SELECT count(*) FROM memories) AS mem"
            ).fetchone()
        assert row is not None
        return row["s"], row["m"], row["mem"]

    # Then: unfiltered SQL as engram_app sees only what the party may see: a request made for another
    # user sees neither; one made for nobody in particular reaches the session (by its id) but not the
    # private memory
    assert counts(Party(user_id="alice")) == (1, 1, 1)
    assert counts(Party(user_id="bob")) == (0, 0, 0)
    assert counts(Party(agent_id="planner")) == (0, 0, 0)
    assert counts(Party()) == (1, 1, 0)
    assert counts(EVERYONE) == (1, 1, 1)
