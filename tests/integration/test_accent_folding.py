"""Text search folds accents (migrations/0034): "cafe" finds "café" and "café" finds "cafe", in memories,
document chunks and session messages, in text and hybrid modes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest

from engram.db.migrate import migrate
from engram.local.stack import LocalDatabase
from engram.settings import Settings
from tests.conftest import Api
from tests.integration.documents_helpers import ingest
from tests.integration.owned_database import OwnedDatabase
from tests.integration.owned_database import owned_database as owned

# (stored, query): each the accented or the plain spelling of the other.
SPELLINGS = [
    ("Meet at the café", "cafe"),
    ("Meet at the cafe", "café"),
    ("Her résumé lists Zürich", "resume zurich"),
    ("Uber-naive plans", "über naïve"),
]


@pytest.mark.parametrize(("stored", "query"), SPELLINGS)
def test_memory_search_finds_the_other_spelling(api: Api, stored: str, query: str) -> None:
    # Given a memory written with one spelling, among others
    response = api.post("/v1/memories", {"content": stored, "container": "accents"})
    assert response.status == 201, response.json
    wanted = response.json["id"]
    api.post("/v1/memories", {"content": "an unrelated note about the harbour", "container": "accents"})

    for mode in ("text", "hybrid"):
        # When it is searched for with the other
        found = api.post("/v1/search", {"query": query, "mode": mode, "container": "accents"})

        # Then its words match
        assert found.status == 200, found.json
        results = found.json["results"]
        assert results and results[0]["id"] == wanted, (mode, results)
        assert results[0]["scores"]["text"] > 0, mode


@pytest.mark.parametrize(("stored", "query"), SPELLINGS[:2])
def test_chunk_search_finds_the_other_spelling(api: Api, stored: str, query: str) -> None:
    document = ingest(api, {"content": stored, "container": "accents", "extract": "none"})

    for mode in ("text", "hybrid"):
        found = api.post(
            "/v1/search", {"query": query, "mode": mode, "scope": "chunks", "container": "accents"}
        )

        assert found.status == 200, found.json
        results = found.json["results"]
        assert [r["document_id"] for r in results] == [document["id"]], mode
        assert results[0]["scores"]["text"] > 0, mode


@pytest.mark.parametrize(("stored", "query"), SPELLINGS)
def test_message_search_finds_the_other_spelling(api: Api, stored: str, query: str) -> None:
    session = api.post("/v1/sessions", {"user_id": "alice"})
    assert session.status == 201, session.json
    said = api.post(
        f"/v1/sessions/{session.json['id']}/messages?user_id=alice",
        {
            "messages": [
                {"role": "user", "content": stored},
                {"role": "user", "content": "the harbour is calm"},
            ]
        },
    )
    assert said.status == 201, said.json

    for mode in ("text", "hybrid"):
        found = api.post(
            "/v1/search", {"query": query, "mode": mode, "scope": "messages", "user_id": "alice"}
        )

        assert found.status == 200, found.json
        results = found.json["results"]
        assert results and results[0]["content"] == stored, (mode, results)
        assert results[0]["scores"]["text"] > 0, mode
        assert results[0]["scores"]["fused"] > 0, mode


def test_a_word_whose_accents_fold_into_an_english_stop_word_is_still_found(api: Api) -> None:
    # Given a memory and a message in French, "thé" (tea) folding into the stop word "the"
    stored = "Elle boit du thé vert"
    memory = api.post("/v1/memories", {"content": stored, "container": "accents"})
    assert memory.status == 201, memory.json
    session = api.post("/v1/sessions", {"user_id": "alice"})
    said = api.post(
        f"/v1/sessions/{session.json['id']}/messages?user_id=alice",
        {"messages": [{"role": "user", "content": stored}]},
    )
    assert said.status == 201, said.json

    # When "thé" is searched in text mode, in memories and in messages
    memories = api.post("/v1/search", {"query": "thé", "mode": "text", "container": "accents"})
    messages = api.post(
        "/v1/search", {"query": "thé", "mode": "text", "scope": "messages", "user_id": "alice"}
    )

    # Then both find it; while "the", written in ASCII, is still an English stop word
    assert [r["id"] for r in memories.json["results"]] == [memory.json["id"]]
    assert [r["content"] for r in messages.json["results"]] == [stored]
    the = api.post("/v1/search", {"query": "the", "mode": "text", "container": "accents"})
    assert the.status == 200 and the.json["results"] == []


# --- the migration: what was stored before it ------------------------------------------------------

TEXT_TABLES = ("memories", "chunks", "text_postings", "text_stats", "text_stat_deltas")


@pytest.fixture
def owned_database(local_db: LocalDatabase) -> Iterator[OwnedDatabase]:
    with owned(local_db, "accent") as database:
        yield database


def _write_before(database: OwnedDatabase, tenant: str) -> UUID:
    """A new tenant (made by the superuser), and its memories, a document's chunk and a conversation's
    messages, some accented, written by the owner under the tenant's row-level security."""
    with psycopg.connect(database.admin, autocommit=True) as admin:
        row = admin.execute("INSERT INTO tenants (name) VALUES (%s) RETURNING id", (tenant,)).fetchone()
    assert row is not None
    tenant_id: UUID = row[0]
    with psycopg.connect(database.owner, autocommit=True) as conn:
        _write_rows(conn, tenant_id)
    return tenant_id


def _write_rows(conn: psycopg.Connection[Any], tenant_id: UUID) -> None:
    conn.execute("SELECT set_config('engram.tenant_id', %s, false)", (str(tenant_id),))
    conn.execute("INSERT INTO containers (tenant_id, name) VALUES (%s, 'default')", (tenant_id,))
    for content in (
        "Meet at the café on Friday",
        "Her résumé lists Zürich twice: Zürich",
        "a plain cafe",
        "Rendez-vous à la gare",  # "à" folds to "a", a stop word: the document's length changes
        "and it is",  # stop words only: a document without terms
    ):
        conn.execute(
            "INSERT INTO memories (tenant_id, container, content) VALUES (%s, 'default', %s)",
            (tenant_id, content),
        )
    document = conn.execute(
        "INSERT INTO documents (tenant_id, container, source_kind, source) "
        "VALUES (%s, 'default', 'inline', 'x') RETURNING id",
        (tenant_id,),
    ).fetchone()
    assert document is not None
    conn.execute(
        "INSERT INTO chunks (tenant_id, document_id, container, ordinal, content, token_count) "
        "VALUES (%s, %s, 'default', 0, 'The crème brûlée at the café', 6)",
        (tenant_id, document[0]),
    )
    session = conn.execute(
        "INSERT INTO sessions (tenant_id, user_id) VALUES (%s, 'alice') RETURNING id", (tenant_id,)
    ).fetchone()
    assert session is not None
    conn.execute(
        "INSERT INTO session_messages (tenant_id, session_id, seq, user_id, role, content) "
        "VALUES (%s, %s, 1, 'alice', 'user', 'See you at the café')",
        (tenant_id, session[0]),
    )


def _stats(conn: psycopg.Connection[Any]) -> dict[tuple[UUID, str, str], tuple[int, int]]:
    """text_stats plus the pending deltas, as search reads them: (tenant, corpus, term) -> (docs, length)."""
    rows = conn.execute(
        "SELECT tenant_id, corpus::text, term, sum(docs)::bigint, sum(length)::bigint FROM ("
        "  SELECT tenant_id, corpus, term, docs, length FROM text_stats"
        "  UNION ALL SELECT tenant_id, corpus, term, docs, length FROM text_stat_deltas) x "
        "GROUP BY 1, 2, 3 HAVING sum(docs) <> 0 OR term = ''"
    ).fetchall()
    return {(t, c, term): (int(docs), int(length)) for t, c, term, docs, length in rows}


def _recounted(conn: psycopg.Connection[Any]) -> dict[tuple[UUID, str, str], tuple[int, int]]:
    """The same statistics computed from scratch from every memory and chunk, under today's terms."""
    rows = conn.execute(
        "SELECT d.tenant_id, d.corpus, d.id, t.term, t.tf FROM ("
        "  SELECT tenant_id, 'm' AS corpus, id, content FROM memories"
        "  UNION ALL SELECT tenant_id, 'c', id, content FROM chunks) d "
        "LEFT JOIN LATERAL engram_text_terms(d.content) t ON true"
    ).fetchall()
    counted: dict[tuple[UUID, str, str], tuple[int, int]] = {}
    lengths: dict[tuple[UUID, str, UUID], int] = {}
    for tenant_id, corpus, doc_id, term, tf in rows:
        lengths[(tenant_id, corpus, doc_id)] = lengths.get((tenant_id, corpus, doc_id), 0) + (tf or 0)
        if term is not None:
            counted[(tenant_id, corpus, term)] = (counted.get((tenant_id, corpus, term), (0, 0))[0] + 1, 0)
    for (tenant_id, corpus, _), length in lengths.items():
        docs, total = counted.get((tenant_id, corpus, ""), (0, 0))
        counted[(tenant_id, corpus, "")] = (docs + 1, total + length)
    return counted


def _migrate_before(database: OwnedDatabase, settings: Settings, tmp_path: Path, version: str) -> None:
    """The database migrated by its owner up to, not including, migration `version`."""
    before = tmp_path / "migrations"
    before.mkdir()
    for path in settings.migrations_dir.glob("*.sql"):
        if path.name < version:
            (before / path.name).write_bytes(path.read_bytes())
    migrate(database.owner, before)


def _assert_statistics_exact_and_rls_forced(
    database: OwnedDatabase, *, write_to: UUID, delete_from: UUID, written: str
) -> None:
    """text_stats with its deltas equal a recount from scratch, and still do after a memory `written` to
    one tenant and 'a plain cafe' deleted from another; FORCE is back on every table a rebuild lifts it
    from."""
    with psycopg.connect(database.admin, autocommit=True) as admin:
        assert _stats(admin) == _recounted(admin)
        admin.execute(
            "INSERT INTO memories (tenant_id, container, content) VALUES (%s, 'default', %s)",
            (write_to, written),
        )
        admin.execute(
            "DELETE FROM memories WHERE tenant_id = %s AND content = 'a plain cafe'", (delete_from,)
        )
        assert _stats(admin) == _recounted(admin)
        forced = admin.execute(
            "SELECT relname, relforcerowsecurity FROM pg_class WHERE relname = ANY(%s) ORDER BY 1",
            (list(TEXT_TABLES),),
        ).fetchall()
        assert forced == sorted((name, True) for name in TEXT_TABLES)


def test_what_was_stored_before_0034_is_found_accent_folded_after_it(
    owned_database: OwnedDatabase, settings: Settings, tmp_path: Path
) -> None:
    # Given a database at 0033, migrated by an owner that is no superuser, where two tenants wrote
    # memories, a document's chunk and a message, some accented
    _migrate_before(owned_database, settings, tmp_path, "0034")
    tenants = [_write_before(owned_database, name) for name in ("first", "second")]
    with psycopg.connect(owned_database.owner, autocommit=True) as conn:
        assert conn.execute("SELECT engram_query_terms('café')").fetchone() == (["café"],)

    # When 0034 runs, by the same owner
    applied = migrate(owned_database.owner, settings.migrations_dir)

    # Then every tenant's memories, chunks and messages are indexed accent-folded
    assert applied[0] == "0034"
    with psycopg.connect(owned_database.owner, autocommit=True) as conn:
        assert conn.execute("SELECT engram_query_terms('Café résumé')").fetchone() == (["cafe", "resum"],)
        for tenant_id in tenants:
            conn.execute("SELECT set_config('engram.tenant_id', %s, false)", (str(tenant_id),))
            found = conn.execute(
                "SELECT corpus::text, count(DISTINCT doc_id) FROM text_postings "
                "WHERE term = ANY(engram_query_terms('cafe')) GROUP BY 1 ORDER BY 1"
            ).fetchall()
            assert found == [("c", 1), ("m", 2)]
            assert conn.execute("SELECT count(*) FROM text_postings WHERE term = 'café'").fetchone() == (0,)
            zurich = conn.execute("SELECT tf FROM text_postings WHERE term = 'zurich'").fetchone()
            assert zurich == (2,)
            message = conn.execute(
                "SELECT count(*) FROM session_messages WHERE fts @@ plainto_tsquery('engram_english', 'cafe')"
            ).fetchone()
            assert message == (1,)
    # and the statistics are those a rebuild from scratch gives, the same as the triggers keep: writes
    # after the migration go on from them exactly; and row-level security is forced again
    _assert_statistics_exact_and_rls_forced(
        owned_database, write_to=tenants[0], delete_from=tenants[1], written="Café au lait"
    )


def test_what_was_stored_before_0035_keeps_its_accented_stop_words_after_it(
    owned_database: OwnedDatabase, settings: Settings, tmp_path: Path
) -> None:
    # Given a database at 0034, migrated by an owner that is no superuser, where two tenants wrote rows,
    # one of them "thé", which 0034 folded into the stop word "the" and so dropped
    _migrate_before(owned_database, settings, tmp_path, "0035")
    tenants = [_write_before(owned_database, name) for name in ("first", "second")]
    with psycopg.connect(owned_database.owner, autocommit=True) as conn:
        conn.execute("SELECT set_config('engram.tenant_id', %s, false)", (str(tenants[0]),))
        conn.execute(
            "INSERT INTO memories (tenant_id, container, content) VALUES (%s, 'default', %s)",
            (tenants[0], "Du thé, só às vezes"),
        )
        conn.execute(
            "INSERT INTO session_messages (tenant_id, session_id, seq, user_id, role, content) "
            "SELECT tenant_id, session_id, 2, user_id, role, 'Un thé, merci' FROM session_messages"
        )
        assert conn.execute("SELECT engram_query_terms('thé')").fetchone() == ([],)

    # When 0035 runs, by the same owner
    applied = migrate(owned_database.owner, settings.migrations_dir)

    # Then the accented stop words are terms, and the ASCII ones are still dropped
    assert applied[0] == "0035"
    with psycopg.connect(owned_database.owner, autocommit=True) as conn:
        terms = conn.execute("SELECT engram_query_terms('thé só às the a')").fetchone()
        assert terms == (["as", "so", "the"],)
        conn.execute("SELECT set_config('engram.tenant_id', %s, false)", (str(tenants[0]),))
        held = conn.execute(
            "SELECT m.content FROM text_postings p JOIN memories m ON m.id = p.doc_id WHERE p.term = 'the'"
        ).fetchall()
        assert held == [("Du thé, só às vezes",)]
        cafe = conn.execute("SELECT count(DISTINCT doc_id) FROM text_postings WHERE term = 'cafe'").fetchone()
        assert cafe == (3,)  # still accent-folded: two memories and the chunk
        message = conn.execute(
            "SELECT count(*) FROM session_messages WHERE fts @@ plainto_tsquery('engram_english', 'cafe')"
        ).fetchone()
        assert message == (1,)
        tea = conn.execute(
            "SELECT content FROM session_messages WHERE fts @@ plainto_tsquery('engram_english', 'thé')"
        ).fetchall()
        assert tea == [("Un thé, merci",)]
    # and the statistics are those a rebuild from scratch gives, before and after further writes; and
    # row-level security is forced again
    _assert_statistics_exact_and_rls_forced(
        owned_database, write_to=tenants[1], delete_from=tenants[0], written="Un thé à Genève"
    )
