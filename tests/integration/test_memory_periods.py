"""Memories are dated when they are written (memory_periods, migration 0021): the day their metadata
states (else their valid_from) and the times their text states, read against that day; again when they
change, and gone with them."""

from __future__ import annotations

from engram.db.database import EVERYONE
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from tests.conftest import Api


def periods(local_db: LocalDatabase, tenant: IssuedKey, memory_id: str) -> list[tuple[str, bool]]:
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        rows = cur.execute(
            "SELECT during::text AS during, stated FROM memory_periods WHERE memory_id = %s ORDER BY during",
            (memory_id,),
        ).fetchall()
    return [(row["during"], row["stated"]) for row in rows]


def test_a_memory_is_dated_by_its_metadata_and_its_text_and_again_when_it_changes(
    api: Api, local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    written = api.post(
        "/v1/memories",
        {"content": "Ana: yesterday I baked bread", "metadata": {"session_date": "1:56 pm on 8 May, 2023"}},
    ).json
    memory_id = written["id"]

    assert periods(local_db, tenant, memory_id) == [
        ("[2023-05-07,2023-05-08)", True),
        ("[2023-05-08,2023-05-09)", False),
    ]
    assert api.patch(f"/v1/memories/{memory_id}", {"metadata": {"session_date": "2023-06-01"}}).status == 200
    assert periods(local_db, tenant, memory_id) == [
        ("[2023-05-31,2023-06-01)", True),
        ("[2023-06-01,2023-06-02)", False),
    ]
    assert api.delete(f"/v1/memories/{memory_id}").status == 204
    assert periods(local_db, tenant, memory_id) == []


def test_without_a_date_in_its_metadata_a_memory_is_from_its_valid_from(
    local_db: LocalDatabase, tenant: IssuedKey, api: Api
) -> None:
    written = api.post(
        "/v1/memories", {"content": "in June 2022 we met", "valid_from": "2024-02-03T10:00:00Z"}
    )
    assert written.status == 201, written.json

    assert periods(local_db, tenant, written.json["id"]) == [
        ("[2022-06-01,2022-07-01)", True),
        ("[2024-02-03,2024-02-04)", False),
    ]
