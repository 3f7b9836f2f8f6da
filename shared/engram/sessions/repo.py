"""The only code that runs SQL on sessions and their messages. Both tables are narrowed to the
request's user/agent pair by the party policy (0002); these queries add the tenant, and the party
again where that lets an index do the work."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db import restore
from engram.db.database import TenantTx
from engram.db.vectors import vector_literal, vector_sql
from engram.memories.search import fusion

SESSION_COLUMNS = sql.SQL(
    "s.id, s.user_id, s.agent_id, s.container, s.metadata, s.message_count, s.last_message_at, "
    "s.created_at, s.updated_at"
)
MESSAGE_COLUMNS = sql.SQL(
    "m.id, m.session_id, m.seq, m.role, m.content, m.metadata, m.extraction, m.extract_mode, "
    "m.extraction_error, coalesce(m.occurred_at, m.created_at) AS occurred_at, m.created_at"
)


def insert_session(cur: TenantTx, tenant_id: UUID, fields: dict[str, Any]) -> dict[str, Any]:
    row = cur.execute(
        sql.SQL(
            "INSERT INTO sessions AS s (tenant_id, user_id, agent_id, container, metadata) "
            "VALUES (%s, %s, %s, %s, %s) RETURNING {columns}"
        ).format(columns=SESSION_COLUMNS),
        (tenant_id, fields["user_id"], fields["agent_id"], fields["container"], Jsonb(fields["metadata"])),
    ).fetchone()
    assert row is not None
    return row


def get_session(cur: TenantTx, tenant_id: UUID, session_id: UUID) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL("SELECT {columns} FROM sessions s WHERE s.tenant_id = %s AND s.id = %s").format(
            columns=SESSION_COLUMNS
        ),
        (tenant_id, session_id),
    ).fetchone()


def delete_session(cur: TenantTx, tenant_id: UUID, session_id: UUID) -> bool:
    cur.execute("DELETE FROM sessions WHERE tenant_id = %s AND id = %s", (tenant_id, session_id))
    return cur.rowcount == 1


def list_sessions(
    cur: TenantTx,
    tenant_id: UUID,
    user_id: str | None,
    agent_id: str | None,
    limit: int,
    after: tuple[datetime, UUID] | None,
) -> list[dict[str, Any]]:
    """Newest first, each with its last message (role, first 200 characters, time)."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, last.role AS last_role, last.preview AS last_preview, "
            "last.created_at AS last_created_at FROM sessions s "
            "LEFT JOIN LATERAL (SELECT m.role, left(m.content, 200) AS preview, m.created_at "
            "  FROM session_messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.id "
            "  ORDER BY m.seq DESC LIMIT 1) last ON true "
            "WHERE s.tenant_id = %(tenant)s "
            "AND (%(user)s::text IS NULL OR s.user_id = %(user)s) "
            "AND (%(agent)s::text IS NULL OR s.agent_id = %(agent)s) "
            "AND (%(at)s::timestamptz IS NULL OR (s.created_at, s.id) < (%(at)s, %(id)s)) "
            "ORDER BY s.created_at DESC, s.id DESC LIMIT %(limit)s"
        ).format(columns=SESSION_COLUMNS),
        {
            "tenant": tenant_id,
            "user": user_id,
            "agent": agent_id,
            "at": after[0] if after else None,
            "id": after[1] if after else None,
            "limit": limit,
        },
    ).fetchall()


def reserve_seqs(cur: TenantTx, tenant_id: UUID, session_id: UUID, count: int) -> dict[str, Any] | None:
    """Take the next `count` sequence numbers. The row lock this takes orders concurrent appends
    to one session; None when the session is not there (or not the request's)."""
    return cur.execute(
        sql.SQL(
            "UPDATE sessions AS s SET message_count = s.message_count + %s, last_message_at = now(), "
            "updated_at = now() WHERE s.tenant_id = %s AND s.id = %s RETURNING {columns}"
        ).format(columns=SESSION_COLUMNS),
        (count, tenant_id, session_id),
    ).fetchone()


def insert_messages(
    cur: TenantTx,
    tenant_id: UUID,
    session: dict[str, Any],
    first_seq: int,
    messages: Sequence[dict[str, Any]],
    vectors: Sequence[Sequence[float]],
    model: str,
    extract_mode: str | None,
) -> list[dict[str, Any]]:
    """With an extract mode, the messages are queued for extraction."""
    rows = []
    for offset, (message, vector) in enumerate(zip(messages, vectors, strict=True)):
        row = cur.execute(
            sql.SQL(
                "INSERT INTO session_messages AS m (tenant_id, session_id, seq, user_id, agent_id, role, "
                "content, metadata, embedding, embedding_model, extraction, extract_mode, occurred_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s, %s, %s, %s) RETURNING {columns}"
            ).format(columns=MESSAGE_COLUMNS),
            (
                tenant_id,
                session["id"],
                first_seq + offset,
                session["user_id"],
                session["agent_id"],
                message["role"],
                message["content"],
                Jsonb(message["metadata"]),
                vector_literal(vector),
                model,
                "queued" if extract_mode else "none",
                extract_mode,
                message.get("occurred_at"),
            ),
        ).fetchone()
        assert row is not None
        rows.append(row)
    return rows


def messages_after(
    cur: TenantTx, tenant_id: UUID, session_id: UUID, after_seq: int, limit: int
) -> list[dict[str, Any]]:
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM session_messages m WHERE m.tenant_id = %s AND m.session_id = %s "
            "AND m.seq > %s ORDER BY m.seq LIMIT %s"
        ).format(columns=MESSAGE_COLUMNS),
        (tenant_id, session_id, after_seq, limit),
    ).fetchall()


def latest_messages(cur: TenantTx, tenant_id: UUID, session_id: UUID, limit: int) -> list[dict[str, Any]]:
    rows = cur.execute(
        sql.SQL(
            "SELECT {columns} FROM session_messages m WHERE m.tenant_id = %s AND m.session_id = %s "
            "ORDER BY m.seq DESC LIMIT %s"
        ).format(columns=MESSAGE_COLUMNS),
        (tenant_id, session_id, limit),
    ).fetchall()
    return rows[::-1]


def queued_messages(cur: TenantTx, tenant_id: UUID, session_id: UUID) -> list[dict[str, Any]]:
    """Messages waiting for extraction, in conversation order."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM session_messages m WHERE m.tenant_id = %s AND m.session_id = %s "
            "AND m.extraction = 'queued' ORDER BY m.seq"
        ).format(columns=MESSAGE_COLUMNS),
        (tenant_id, session_id),
    ).fetchall()


def claim_queued(cur: TenantTx, tenant_id: UUID, message_ids: Sequence[UUID]) -> list[UUID]:
    """Those of the messages still queued, locked until the transaction ends: of two extraction runs
    over the same messages, the second finds them done and writes nothing."""
    rows = cur.execute(
        "SELECT id FROM session_messages WHERE tenant_id = %s AND id = ANY(%s) AND extraction = 'queued' "
        "ORDER BY seq FOR UPDATE",
        (tenant_id, list(message_ids)),
    ).fetchall()
    return [row["id"] for row in rows]


def mark_extracted(
    cur: TenantTx, tenant_id: UUID, message_ids: Sequence[UUID], *, error: str | None = None
) -> None:
    """Done, or failed for good with `error`."""
    cur.execute(
        "UPDATE session_messages SET extraction = %s, extraction_error = %s "
        "WHERE tenant_id = %s AND id = ANY(%s) AND extraction = 'queued'",
        ("failed" if error else "done", error, tenant_id, list(message_ids)),
    )


# --- search -----------------------------------------------------------------------------------

# The text search configuration the messages' `fts` column is computed with, and so every query
# against it: `english` with accents folded (migrations/0034, as the BM25 terms of memories and chunks).
TEXT_CONFIG = sql.SQL("{}::regconfig").format(sql.Literal("engram_english"))

_SEARCH_COLUMNS = sql.SQL(
    "m.id, m.session_id, m.seq, m.role, m.content, m.metadata, m.user_id, m.agent_id, m.created_at"
)


def _search_where(
    tenant_id: UUID,
    user_id: str | None,
    agent_id: str | None,
    session_id: str | None,
    metadata: dict[str, Any],
) -> sql.Composable:
    clauses: list[sql.Composable] = [sql.SQL("m.tenant_id = {}").format(sql.Literal(tenant_id))]
    if user_id is not None:
        clauses.append(sql.SQL("m.user_id = {}").format(sql.Literal(user_id)))
    if agent_id is not None:
        clauses.append(sql.SQL("m.agent_id = {}").format(sql.Literal(agent_id)))
    if session_id is not None:
        clauses.append(sql.SQL("m.session_id::text = {}").format(sql.Literal(session_id)))
    if metadata:
        clauses.append(sql.SQL("m.metadata @> {}::jsonb").format(sql.Literal(Jsonb(metadata))))
    return sql.SQL(" AND ").join(clauses)


def search(
    cur: TenantTx,
    tenant_id: UUID,
    filters: tuple[str | None, str | None, str | None, dict[str, Any]],
    *,
    text: str | None,
    vector: Sequence[float] | None,
    model: str,
    candidates: int,
    limit: int,
) -> list[dict[str, Any]]:
    """The party's messages that best match the query, scored and fused as memory search fuses its
    rows (engram.memories.search.fusion): the vector leg's nearest `candidates` (an exact scan of the
    party's messages, with `vector`) and the text leg's best `candidates` (with `text`: any of its
    words, by its score) are pooled, and every pooled message is scored by each leg that ran: its
    cosine similarity (`similarity`), its ts_rank_cd over 1 + log(length), as rank / (rank + 1)
    (`text_rank`, 0-1; the text leg alone: that as one word more beside the query's words it holds,
    _words_first), that over the pool's best (`text_relative`, when both legs run) and the share of
    the query's words it holds (`coverage`: messages keep no term statistics, so every word weighs
    alike). Best `fused` first, `limit` of them. One statement."""
    where = _search_where(tenant_id, *filters)
    ctes: list[sql.Composable] = []
    proposals: list[sql.Composable] = []
    shares: dict[str, sql.Composable] = {}
    similarity: sql.Composable = sql.SQL("NULL::float8")
    text_rank: sql.Composable = sql.SQL("NULL::float8")
    coverage: sql.Composable = sql.SQL("NULL::float8")
    if vector is not None:
        q = vector_sql(vector)
        ctes.append(
            sql.SQL(
                "vec AS MATERIALIZED (SELECT m.id FROM session_messages m WHERE {where} "
                "AND m.embedding_model = {model} ORDER BY m.embedding <=> {q}::vector, m.id LIMIT {k})"
            ).format(where=where, model=sql.Literal(model), q=q, k=sql.Literal(candidates))
        )
        proposals.append(sql.SQL("SELECT id FROM vec"))
        similarity = sql.SQL(
            "CASE WHEN m.embedding_model = {model} THEN 1 - (m.embedding <=> {q}::vector) END"
        ).format(model=sql.Literal(model), q=q)
        shares["vector"] = sql.SQL("similarity")
    if text is not None:
        query = sql.SQL("replace(plainto_tsquery({config}, {text})::text, ' & ', ' | ')::tsquery").format(
            config=TEXT_CONFIG, text=sql.Literal(text)
        )
        terms = sql.SQL("tsvector_to_array(to_tsvector({config}, {text}))").format(
            config=TEXT_CONFIG, text=sql.Literal(text)
        )
        coverage = sql.SQL(
            "nullif((SELECT count(*) FROM unnest({terms}) t(term) "
            "WHERE t.term = ANY(tsvector_to_array(m.fts)))::float8 / nullif(cardinality({terms}), 0), 0)"
        ).format(terms=terms)
        text_rank = sql.SQL("CASE WHEN m.fts @@ {query} THEN ts_rank_cd(m.fts, {query}, 33) END").format(
            query=query
        )
        if vector is None:  # the text leg alone: its score is all that ranks
            text_rank = _words_first(text_rank, coverage, terms)
        ctes.append(
            sql.SQL(
                "txt AS MATERIALIZED (SELECT m.id FROM session_messages m WHERE {where} AND m.fts @@ {query} "
                "ORDER BY {text_rank} DESC, m.id LIMIT {k})"
            ).format(where=where, query=query, text_rank=text_rank, k=sql.Literal(candidates))
        )
        proposals.append(sql.SQL("SELECT id FROM txt"))
        shares["text"], shares["text_relative"] = sql.SQL("text_rank"), sql.SQL("text_relative")
        shares["coverage"] = sql.SQL("coverage")
    statement = sql.SQL(
        """WITH {ctes},
           pool AS MATERIALIZED ({proposals}),
           scored AS (
               SELECT m.id, {similarity}::float8 AS similarity, {text_rank}::float8 AS text_rank,
                      {coverage}::float8 AS coverage
               FROM session_messages m
               WHERE m.tenant_id = {tenant} AND m.id = ANY(ARRAY(SELECT id FROM pool))),
           shares AS (
               SELECT id, similarity, text_rank, {text_relative}::float8 AS text_relative, coverage
               FROM scored),
           top AS MATERIALIZED (
               SELECT id, similarity, text_rank, text_relative, coverage, {fused} AS fused FROM shares
               ORDER BY fused DESC, similarity DESC NULLS LAST, text_rank DESC NULLS LAST, id
               LIMIT {limit})
           SELECT {columns}, t.similarity, t.text_rank, t.text_relative, t.coverage, t.fused
           FROM top t JOIN session_messages m ON m.id = t.id
           WHERE m.tenant_id = {tenant} AND m.id = ANY(ARRAY(SELECT id FROM top))
           ORDER BY t.fused DESC, t.similarity DESC NULLS LAST, t.text_rank DESC NULLS LAST, m.id"""
    ).format(
        ctes=sql.SQL(", ").join(ctes),
        proposals=sql.SQL(" UNION ").join(proposals),
        similarity=similarity,
        text_rank=text_rank,
        coverage=coverage,
        text_relative=fusion.text_relative(shares),
        fused=fusion.fused(shares),
        tenant=sql.Literal(tenant_id),
        limit=sql.Literal(limit),
        columns=_SEARCH_COLUMNS,
    )
    return cur.execute(statement).fetchall()


def _words_first(rank: sql.Composable, coverage: sql.Composable, terms: sql.Composable) -> sql.Composable:
    """A message's text score when the text leg ranks alone (text mode): the query's distinct words it
    holds, and its ts_rank_cd score (`rank`, 0-1: rank / (rank + 1)) as one word more, over the query's
    words and that one, i.e. (coverage * words + rank) / (words + 1). A message holding more of the
    query's words scores above one holding fewer however often it repeats them (ts_rank_cd alone ranks
    a word said five times above every word said once), ts_rank_cd orders messages holding as many, and
    one holding every word scores at least 1/2 whatever the query's length (as a memory holding every
    word scores about 1/2 of BM25's best), so one score_threshold serves every query; 0-1. Hybrid mode
    needs none of this: coverage is a share of its own there."""
    return sql.SQL("(({coverage} * cardinality({terms}) + {rank}) / (cardinality({terms}) + 1))").format(
        coverage=coverage, rank=rank, terms=terms
    )


def recent_embeddings(
    cur: TenantTx, tenant_id: UUID, session_id: UUID, role: str, model: str, limit: int
) -> list[str]:
    """The vectors (as text) of the session's latest messages of one role and model, newest first."""
    rows = cur.execute(
        "SELECT m.embedding::text AS embedding FROM session_messages m WHERE m.tenant_id = %s "
        "AND m.session_id = %s AND m.role = %s AND m.embedding_model = %s ORDER BY m.seq DESC LIMIT %s",
        (tenant_id, session_id, role, model, limit),
    ).fetchall()
    return [row["embedding"] for row in rows]


def restore_session(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "sessions", tenant_id, row, conflict="(id)", json=("metadata",))


def restore_message(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "session_messages", tenant_id, row, conflict="(id)", json=("metadata",))


def containers_of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> list[str]:
    """The containers the sessions of `user_id` extract into."""
    rows = cur.execute(
        "SELECT DISTINCT container FROM sessions WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id)
    ).fetchall()
    return [row["container"] for row in rows]


def delete_of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> tuple[int, int]:
    """Erasure: the sessions of `user_id` and their messages (which cascade). (sessions, messages)"""
    row = cur.execute(
        "SELECT count(*) AS n FROM session_messages WHERE tenant_id = %s AND user_id = %s",
        (tenant_id, user_id),
    ).fetchone()
    cur.execute("DELETE FROM sessions WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id))
    return cur.rowcount, int(row["n"]) if row else 0
