"""DELETE /v1/users/{user_id}: everything owned by or about a user in the tenant goes, in one
transaction; without ?confirm=true a 409 lists what would go and nothing does. Afterwards no table of
the catalogue (read from PostgreSQL, so a future table cannot be missed) holds a trace of the user,
and other users' data is untouched."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from engram.local.stack import LocalDatabase
from engram.observability import logger
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

MARK = "zq4c1x"  # in every text of the erased user, and in their id
ERIN = f"erin-{MARK}"


def _ok(response: Any, *statuses: int) -> Any:
    assert response.status in (statuses or (200, 201)), response.json
    return response.json


def _supersede_as_stored_before_the_owner_rule(local_db: LocalDatabase, older: str, newer: str) -> None:
    """`newer` (a user's) retires `older` (a shared memory), as an explicit supersedes did before only a
    memory of the same owner could (the API now refuses it; databases may still hold such rows)."""
    with psycopg.connect(local_db.admin_conninfo) as conn:
        conn.execute(
            "UPDATE memories SET is_latest = false, "
            "valid_to = (SELECT valid_from FROM memories WHERE id = %s) WHERE id = %s",
            (newer, older),
        )
        conn.execute(
            "INSERT INTO memory_relationships (tenant_id, source_id, target_id, relationship_type) "
            "SELECT tenant_id, id, %s, 'updates' FROM memories WHERE id = %s",
            (older, newer),
        )


def _seed(api: Api, local_db: LocalDatabase, user: str, mark: str) -> dict[str, Any]:
    """One of everything a user can own, each naming `mark`."""
    made: dict[str, Any] = {}
    made["shared"] = _ok(api.post("/v1/memories", {"content": f"The team office is in Oslo {mark}."}))
    made["memory"] = _ok(
        api.post(
            "/v1/memories",
            {
                "content": f"Vale Korsgaard{mark} lives in Paris.",
                "user_id": user,
                "container": f"people.{user}",
                "tags": [mark],
                "metadata": {"note": mark},
            },
        )
    )
    made["moved"] = _ok(
        api.post(
            "/v1/memories/upsert",
            {
                "content": f"Vale Korsgaard{mark} lives in Berlin.",
                "user_id": user,
                "container": f"people.{user}",
            },
        )
    )
    made["private"] = _ok(
        api.post("/v1/memories", {"content": f"My PIN is {mark}.", "user_id": user, "visibility": "private"})
    )
    made["supersedes_shared"] = _ok(
        api.post("/v1/memories", {"content": f"The team office moved to Bergen {mark}.", "user_id": user})
    )
    _supersede_as_stored_before_the_owner_rule(
        local_db, made["shared"]["id"], made["supersedes_shared"]["id"]
    )
    session = _ok(
        api.post("/v1/sessions", {"user_id": user, "agent_id": "concierge", "container": f"chat.{user}"})
    )
    _ok(
        api.post(
            f"/v1/sessions/{session['id']}/messages",
            {"messages": [{"role": "user", "content": f"I love {mark} tea."}], "extract": "light"},
        )
    )
    made["session"] = session
    _ok(api.put(f"/v1/working/state-{user}/step", {"value": {"mark": mark}, "user_id": user}))
    made["procedure"] = _ok(
        api.post(
            "/v1/procedures", {"trigger": f"asks about {mark}", "content": f"answer {mark}", "user_id": user}
        )
    )
    made["document"] = ingest(
        api,
        {
            "content": f"# Notes {mark}\n\nKorsgaard{mark} Industries makes blue widgets in Aarhus.",
            "filename": f"{mark}.md",
            "container": f"docs.{user}",
            "user_id": user,
        },
    )
    _ok(
        api.post(
            "/v1/plans",
            {"plan_id": f"trip-{user}", "goal_event": "trip", "user_id": user, "state": {"m": mark}},
        )
    )
    _ok(
        api.post(
            "/v1/task-context", {"task_id": f"task-{user}", "plan_id": f"trip-{user}", "event_type": mark}
        )
    )
    return made


def _traces(local_db: LocalDatabase, tenant: IssuedKey, needle: str) -> dict[str, int]:
    """Rows of the tenant, in every table of the catalogue with a tenant_id, whose text holds `needle`."""
    found = {}
    with psycopg.connect(local_db.admin_conninfo) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT c.table_name FROM information_schema.columns c "
                "JOIN information_schema.tables t USING (table_schema, table_name) "
                "WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id' "
                "AND t.table_type = 'BASE TABLE' "
                "ORDER BY 1"
            ).fetchall()
        ]
        assert {"memories", "sessions", "working_memory", "documents", "entities", "plans"} <= set(tables)
        for table in tables:
            query = psycopg.sql.SQL(
                "SELECT count(*) FROM {} t WHERE t.tenant_id = %s AND t::text ILIKE %s"
            ).format(psycopg.sql.Identifier(table))
            row = conn.execute(query, (tenant.tenant_id, f"%{needle}%")).fetchone()
            found[table] = int(row[0]) if row else 0
    return found


def _index_of_kept_memories(local_db: LocalDatabase, tenant: IssuedKey, needle: str) -> dict[str, int]:
    """Rows of the text index (migrations/0014) holding `needle` that belong to memories still there:
    their postings, and the statistics of the terms those postings hold (no other: no delta)."""
    with psycopg.connect(local_db.admin_conninfo) as conn:
        row = conn.execute(
            "WITH kept AS (SELECT p.* FROM text_postings p WHERE p.tenant_id = %(t)s AND p::text ILIKE %(n)s "
            "              AND p.doc_id IN (SELECT id FROM memories WHERE tenant_id = %(t)s)) "
            "SELECT (SELECT count(*) FROM kept) AS postings, "
            "       (SELECT count(*) FROM text_stats s WHERE s.tenant_id = %(t)s AND s::text ILIKE %(n)s "
            "        AND s.term IN (SELECT term FROM kept)) AS stats",
            {"t": tenant.tenant_id, "n": f"%{needle}%"},
        ).fetchone()
    assert row is not None
    return {"text_postings": int(row[0]), "text_stats": int(row[1])}


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(logger.registered_formatter.format(record))


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    capture = Capture()
    logger.addHandler(capture)
    level = logger.log_level
    logger.setLevel("INFO")
    try:
        yield capture.lines
    finally:
        logger.setLevel(level)
        logger.removeHandler(capture)


def test_erasure_leaves_no_trace_of_the_user_in_any_table(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase, log_lines: list[str]
) -> None:
    erin = _seed(api, local_db, ERIN, MARK)
    bob = _seed(api, local_db, "bob", "bobmark")
    before = _traces(local_db, tenant, MARK)
    assert sum(before.values()) > 20 and before["entities"] and before["chunks"] and before["task_contexts"]

    preview = api.delete(f"/v1/users/{ERIN}")
    unchanged = _traces(local_db, tenant, MARK)
    erased = api.delete(f"/v1/users/{ERIN}?confirm=true")
    after = _traces(local_db, tenant, MARK)
    again = api.delete(f"/v1/users/{ERIN}?confirm=true")

    assert preview.status == 409 and preview.json["error"]["code"] == "confirmation_required"
    assert unchanged == before
    assert erased.status == 200, erased.json
    counts = erased.json
    assert counts["erased"] is True
    assert {k: v for k, v in counts.items() if k not in ("user_id", "erased")} == preview.json["error"][
        "would_erase"
    ]
    assert counts["memories"] >= 5 and counts["sessions"] == 1 and counts["messages"] == 1
    assert (counts["working_keys"], counts["procedures"], counts["documents"], counts["plans"]) == (
        1,
        1,
        1,
        1,
    )
    assert counts["task_contexts"] == 1 and counts["chunks"] >= 1 and counts["entities"] >= 1
    assert counts["containers"] >= 3
    # Rows the erased user's data touched are gone, wherever they were: the catalogue says so.
    # The one memory that stays (not theirs) keeps its postings in the text index (migrations/0014).
    kept = _index_of_kept_memories(local_db, tenant, MARK)
    assert kept["text_postings"] > 0
    assert {table: after.pop(table) for table in kept} == kept
    assert {table: n for table, n in after.items() if n} == {"memories": 1}, after
    assert again.status == 200 and not any(
        v for k, v in again.json.items() if isinstance(v, int) and k != "erased"
    )

    # The one row left is the tenant's shared memory (not Erin's), current again: her memory that had
    # superseded it is gone.
    shared = api.get(f"/v1/memories/{erin['shared']['id']}").json
    assert shared["user_id"] is None and shared["is_latest"] is True
    # Bob's data is whole.
    assert api.get(f"/v1/memories/{bob['moved']['id']}").json["content"].endswith("lives in Berlin.")
    assert api.get(f"/v1/memories/{bob['private']['id']}?user_id=bob").status == 200
    assert api.get(f"/v1/sessions/{bob['session']['id']}").json["session"]["message_count"] == 1
    assert api.get("/v1/working/state-bob/step").status == 200
    assert api.get(f"/v1/documents/{bob['document']['id']}").json["status"] == "done"
    assert api.get("/v1/plans/trip-bob").status == 200 and api.get("/v1/task-context/task-bob").status == 200
    assert api.get(f"/v1/procedures/{bob['procedure']['id']}").status == 200
    # Audited without content: counts and a hash of the id, never the id or a text.
    audit, repeated = [json.loads(line) for line in log_lines if "user_erasure" in line]
    assert audit["counts"] == preview.json["error"]["would_erase"] and len(audit["user_sha256"]) == 64
    assert repeated["user_sha256"] == audit["user_sha256"] and not any(repeated["counts"].values())
    assert not any(MARK in line for line in log_lines)


def test_without_confirm_a_user_with_nothing_is_still_a_409_with_zero_counts(api: Api) -> None:
    # Given: a user with nothing in the tenant
    # When: they are erased without confirm
    response = api.delete("/v1/users/nobody-here")

    # Then: the answer is the preview, as for any user: 409 confirmation_required, every count 0
    assert response.status == 409 and response.json["error"]["code"] == "confirmation_required"
    would_erase = response.json["error"]["would_erase"]
    assert would_erase and not any(would_erase.values())
    assert "nothing" in response.json["error"]["message"]


def test_with_confirm_a_user_with_nothing_is_erased_with_zero_counts(api: Api) -> None:
    # Given: a user with nothing in the tenant
    # When: they are erased with confirm
    response = api.delete("/v1/users/nobody-here?confirm=true")

    # Then: 200, erased, every count 0
    assert response.status == 200 and response.json["erased"] is True
    assert not any(v for k, v in response.json.items() if isinstance(v, int) and k != "erased")


def test_erasure_stays_in_its_tenant(
    api: Api, other_api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    _ok(api.post("/v1/memories", {"content": f"Kept {MARK}", "user_id": ERIN}))

    other = other_api.delete(f"/v1/users/{ERIN}?confirm=true")

    assert other.status == 200 and other.json["memories"] == 0
    assert _traces(local_db, tenant, MARK)["memories"] == 1


def test_the_same_file_from_two_users_is_two_documents_each_erased_with_its_user(api: Api) -> None:
    body = {"content": "Widgets ship on Tuesdays.", "filename": "w.md", "container": "docs"}
    anns = ingest(api, {**body, "user_id": "ann"})
    again = _ok(api.post("/v1/documents", {**body, "user_id": "ann"}), 202)
    bens = ingest(api, {**body, "user_id": "ben"})

    erased = _ok(api.delete("/v1/users/ann?confirm=true"))

    assert (anns["user_id"], bens["user_id"]) == ("ann", "ben") and anns["id"] != bens["id"]
    assert again["duplicate"] is True and again["id"] == anns["id"]
    assert erased["documents"] == 1
    assert api.get(f"/v1/documents/{anns['id']}").status == 404
    assert api.get(f"/v1/documents/{bens['id']}").json["status"] == "done"


def test_an_email_as_user_id_is_erased(api: Api) -> None:
    _ok(api.post("/v1/memories", {"content": "Ann's memory", "user_id": "ann@example.com"}))

    erased = _ok(api.delete("/v1/users/ann@example.com?confirm=true"))

    assert (erased["user_id"], erased["memories"]) == ("ann@example.com", 1)
