"""The only code that runs SQL on documents, chunks and memory sources.

Every function takes a cursor from `Database.tenant(...)` (RLS limits it to one tenant); queries also
name the tenant, which helps the planner. Pipeline status changes check the revision, so a run that
was superseded (the document queued again, or deleted) can never overwrite the newer state.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db import restore
from engram.db.database import TenantTx
from engram.memories import predicates
from engram.memories.models import SearchFilters
from engram.memories.predicates import ContainerScope
from engram.memories.repo import ensure_container
from engram.memories.search.plan import SearchPlan
from engram.memories.search.repo import Corpus, counted_scope, vector_distance

DOCUMENT_COLUMNS = sql.SQL(
    "d.id, d.container, d.status, d.content_type, d.source_kind, d.source, d.filename, d.title, d.tags, "
    "d.metadata, d.checksum, d.size_bytes, d.custom_id, d.user_id, d.revision, d.error_code, d.error, "
    "d.blob_key, "
    "d.blob_version, d.extract_mode, d.document_date, d.extraction, d.created_at, d.updated_at, d.finished_at"
)
COUNTS = sql.SQL(
    "(SELECT count(*) FROM chunks c WHERE c.document_id = d.id)::int AS chunk_count, "
    "(SELECT count(*) FROM memory_sources s WHERE s.document_id = d.id)::int AS memory_count"
)
FINAL = ("done", "failed")


# --- documents --------------------------------------------------------------------------------


def lock(cur: TenantTx, tenant_id: UUID, key: str) -> None:
    """Serialise registrations of the same content (or custom id) until the transaction ends."""
    cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{tenant_id}:{key}",))


def insert_document(cur: TenantTx, tenant_id: UUID, fields: dict[str, Any]) -> dict[str, Any]:
    ensure_container(cur, tenant_id, fields["container"])
    row = cur.execute(
        sql.SQL(
            """INSERT INTO documents AS d (id, tenant_id, container, content_type, source_kind, source,
                   filename, title, blob_key, blob_version, metadata, tags, checksum, size_bytes, custom_id,
                   extract_mode, document_date, user_id)
               VALUES (coalesce(%s, gen_random_uuid()), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                       %s, %s, %s, %s)
               RETURNING {columns}, 0 AS chunk_count, 0 AS memory_count"""
        ).format(columns=DOCUMENT_COLUMNS),
        (
            fields.get("id"),
            tenant_id,
            fields["container"],
            fields.get("content_type"),
            fields["source_kind"],
            fields["source"],
            fields.get("filename"),
            fields.get("title"),
            fields.get("blob_key"),
            fields.get("blob_version"),
            Jsonb(fields.get("metadata") or {}),
            fields.get("tags") or [],
            fields.get("checksum"),
            fields.get("size_bytes"),
            fields.get("custom_id"),
            fields.get("extract_mode", "light"),
            fields.get("document_date"),
            fields.get("user_id"),
        ),
    ).fetchone()
    assert row is not None
    return row


def requeue(cur: TenantTx, tenant_id: UUID, document_id: UUID, fields: dict[str, Any]) -> dict[str, Any]:
    """Queue the document again as a new revision, with new source fields (an upsert or a retry)."""
    assignments: list[sql.Composable] = [
        sql.SQL(
            "revision = d.revision + 1, status = 'queued', error = NULL, error_code = NULL, "
            "extraction = '{}', finished_at = NULL, updated_at = now()"
        )
    ]
    params: list[Any] = []
    for column in (
        "container",
        "content_type",
        "source_kind",
        "source",
        "filename",
        "title",
        "blob_key",
        "blob_version",
        "metadata",
        "tags",
        "checksum",
        "size_bytes",
        "extract_mode",
        "document_date",
        "user_id",
    ):
        if column in fields:
            assignments.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(Jsonb(fields[column]) if column == "metadata" else fields[column])
    if "container" in fields:
        ensure_container(cur, tenant_id, fields["container"])
    row = cur.execute(
        sql.SQL(
            "UPDATE documents AS d SET {a} WHERE d.tenant_id = %s AND d.id = %s "
            "RETURNING {columns}, 0 AS chunk_count, 0 AS memory_count"
        ).format(a=sql.SQL(", ").join(assignments), columns=DOCUMENT_COLUMNS),
        (*params, tenant_id, document_id),
    ).fetchone()
    assert row is not None
    return row


def set_custom_id(cur: TenantTx, tenant_id: UUID, document_id: UUID, custom_id: str) -> dict[str, Any]:
    """Give a document the custom_id it was sent again with (it had none)."""
    row = cur.execute(
        sql.SQL(
            "UPDATE documents AS d SET custom_id = %s, updated_at = now() "
            "WHERE d.tenant_id = %s AND d.id = %s AND d.custom_id IS NULL RETURNING {columns}, {counts}"
        ).format(columns=DOCUMENT_COLUMNS, counts=COUNTS),
        (custom_id, tenant_id, document_id),
    ).fetchone()
    assert row is not None
    return row


def get_document(
    cur: TenantTx, tenant_id: UUID, document_id: UUID, *, for_update: bool = False
) -> dict[str, Any] | None:
    query = sql.SQL(
        "SELECT {columns}, {counts} FROM documents d WHERE d.tenant_id = %s AND d.id = %s"
    ).format(columns=DOCUMENT_COLUMNS, counts=COUNTS)
    if for_update:
        query = sql.SQL("{} FOR UPDATE OF d").format(query)
    return cur.execute(query, (tenant_id, document_id)).fetchone()


def find_by_custom_id(cur: TenantTx, tenant_id: UUID, custom_id: str) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, {counts} FROM documents d WHERE d.tenant_id = %s AND d.custom_id = %s "
            "FOR UPDATE OF d"
        ).format(columns=DOCUMENT_COLUMNS, counts=COUNTS),
        (tenant_id, custom_id),
    ).fetchone()


def find_by_checksum(
    cur: TenantTx, tenant_id: UUID, container: str, checksum: str, user_id: str | None = None
) -> dict[str, Any] | None:
    """The document of the same user (or of none) already holding this content in this container: one
    that is not failed first. Another user's copy is theirs, erased with them, so it is not this one."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, {counts} FROM documents d "
            "WHERE d.tenant_id = %s AND d.container = %s AND d.checksum = %s "
            "AND d.user_id IS NOT DISTINCT FROM %s "
            "ORDER BY (d.status = 'failed'), d.created_at DESC LIMIT 1 FOR UPDATE OF d"
        ).format(columns=DOCUMENT_COLUMNS, counts=COUNTS),
        (tenant_id, container, checksum, user_id),
    ).fetchone()


def find_by_source(
    cur: TenantTx, tenant_id: UUID, source_kind: str, source: str, version: str | None
) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, {counts} FROM documents d WHERE d.tenant_id = %s AND d.source_kind = %s "
            "AND d.source = %s AND d.blob_version IS NOT DISTINCT FROM %s "
            "ORDER BY d.created_at DESC LIMIT 1"
        ).format(columns=DOCUMENT_COLUMNS, counts=COUNTS),
        (tenant_id, source_kind, source, version),
    ).fetchone()


def list_documents(
    cur: TenantTx,
    tenant_id: UUID,
    container: ContainerScope | None,
    status: str | None,
    limit: int,
    after: tuple[datetime, UUID] | None,
) -> list[dict[str, Any]]:
    clauses: list[sql.Composable] = [
        sql.SQL("d.tenant_id = {}").format(sql.Literal(tenant_id)),
        predicates.in_container(container, "d"),
    ]
    if status is not None:
        clauses.append(sql.SQL("d.status = {}").format(sql.Literal(status)))
    if after is not None:
        clauses.append(
            sql.SQL("(d.created_at, d.id) < ({}, {})").format(sql.Literal(after[0]), sql.Literal(after[1]))
        )
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, {counts} FROM documents d WHERE {where} "
            "ORDER BY d.created_at DESC, d.id DESC LIMIT {n}"
        ).format(
            columns=DOCUMENT_COLUMNS,
            counts=COUNTS,
            where=sql.SQL(" AND ").join(clauses),
            n=sql.Literal(limit),
        )
    ).fetchall()


def delete_document(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> bool:
    cur.execute("DELETE FROM documents WHERE tenant_id = %s AND id = %s", (tenant_id, document_id))
    return cur.rowcount == 1


# --- pipeline state ---------------------------------------------------------------------------


def current_for_run(
    cur: TenantTx, tenant_id: UUID, document_id: UUID, revision: int
) -> dict[str, Any] | None:
    """The document row locked for this run, or None if the run is superseded or already finished."""
    row = cur.execute(
        sql.SQL(
            "SELECT {columns} FROM documents d WHERE d.tenant_id = %s AND d.id = %s FOR UPDATE OF d"
        ).format(columns=DOCUMENT_COLUMNS),
        (tenant_id, document_id),
    ).fetchone()
    if row is None or row["revision"] != revision or row["status"] in FINAL:
        return None
    return row


def set_status(cur: TenantTx, tenant_id: UUID, document_id: UUID, status: str) -> None:
    cur.execute(
        "UPDATE documents SET status = %s, updated_at = now() WHERE tenant_id = %s AND id = %s",
        (status, tenant_id, document_id),
    )


def record_extraction(
    cur: TenantTx,
    tenant_id: UUID,
    document_id: UUID,
    *,
    content_type: str,
    title: str | None,
    checksum: str,
    size_bytes: int,
) -> None:
    cur.execute(
        """UPDATE documents SET content_type = %s, title = coalesce(title, %s), checksum = %s,
               size_bytes = %s,
               updated_at = now()
           WHERE tenant_id = %s AND id = %s""",
        (content_type, title, checksum, size_bytes, tenant_id, document_id),
    )


def record_content_type(cur: TenantTx, tenant_id: UUID, document_id: UUID, content_type: str | None) -> None:
    """The type the detect step found (and a URL's server gave, when the document declared none): read
    by the extract step as the declared type, and shown for a document that fails before extract ends."""
    cur.execute(
        "UPDATE documents SET content_type = %s, updated_at = now() WHERE tenant_id = %s AND id = %s",
        (content_type, tenant_id, document_id),
    )


def finish(
    cur: TenantTx,
    tenant_id: UUID,
    document_id: UUID,
    revision: int,
    status: str,
    error_code: str | None = None,
    error: str | None = None,
) -> bool:
    """Move an unfinished document of this revision to done or failed; False if it was not."""
    cur.execute(
        """UPDATE documents SET status = %s, error_code = %s, error = %s, finished_at = now(),
               updated_at = now()
           WHERE tenant_id = %s AND id = %s AND revision = %s AND status NOT IN ('done', 'failed')""",
        (status, error_code, error, tenant_id, document_id, revision),
    )
    return cur.rowcount == 1


def stale_documents(cur: TenantTx, older_than_minutes: int, limit: int) -> list[dict[str, Any]]:
    return cur.execute(
        "SELECT tenant_id, id, revision FROM stale_documents(make_interval(mins => %s), %s)",
        (older_than_minutes, limit),
    ).fetchall()


# --- chunks -----------------------------------------------------------------------------------


def replace_chunks(
    cur: TenantTx,
    tenant_id: UUID,
    document: dict[str, Any],
    drafts: Sequence[tuple[str, int, dict[str, Any]]],
) -> int:
    """All of a document's chunks in one go: the old ones (from an earlier attempt) go first."""
    delete_chunks(cur, tenant_id, document["id"])
    rows = [
        (
            tenant_id,
            document["id"],
            document["container"],
            document["tags"],
            ordinal,
            content,
            tokens,
            Jsonb(meta),
        )
        for ordinal, (content, tokens, meta) in enumerate(drafts)
    ]
    cur.executemany(
        """INSERT INTO chunks (tenant_id, document_id, container, tags, ordinal, content, token_count,
               metadata)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
        rows,
    )
    return len(rows)


def chunks_of(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> list[dict[str, Any]]:
    return cur.execute(
        """SELECT id, ordinal, content, token_count, metadata, embedding_model FROM chunks
           WHERE tenant_id = %s AND document_id = %s ORDER BY ordinal""",
        (tenant_id, document_id),
    ).fetchall()


def chunks_to_embed(
    cur: TenantTx, tenant_id: UUID, document_id: UUID, model: str, *, after_ordinal: int, limit: int
) -> list[dict[str, Any]]:
    """The next `limit` chunks (by ordinal, after `after_ordinal`) without an embedding of `model`."""
    return cur.execute(
        """SELECT id, ordinal, content FROM chunks
           WHERE tenant_id = %s AND document_id = %s AND ordinal > %s
             AND embedding_model IS DISTINCT FROM %s
           ORDER BY ordinal LIMIT %s""",
        (tenant_id, document_id, after_ordinal, model, limit),
    ).fetchall()


def set_chunk_embeddings(
    cur: TenantTx, tenant_id: UUID, vectors: Sequence[tuple[UUID, str]], model: str
) -> None:
    cur.executemany(
        "UPDATE chunks SET embedding = %s::vector, embedding_model = %s WHERE tenant_id = %s AND id = %s",
        [(literal, model, tenant_id, chunk_id) for chunk_id, literal in vectors],
    )


def record_usage(cur: TenantTx, tenant_id: UUID, document_id: UUID, extraction: dict[str, Any]) -> None:
    """What the llm-extract step used and spent (replaces an earlier attempt's record)."""
    cur.execute(
        "UPDATE documents SET extraction = %s, updated_at = now() WHERE tenant_id = %s AND id = %s",
        (Jsonb(extraction), tenant_id, document_id),
    )


# --- memories that came from documents --------------------------------------------------------


def add_memory_source(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, document_id: UUID, chunk_id: UUID | None
) -> None:
    cur.execute(
        """INSERT INTO memory_sources (tenant_id, memory_id, document_id, chunk_id) VALUES (%s, %s, %s, %s)
           ON CONFLICT (memory_id, document_id) DO NOTHING""",
        (tenant_id, memory_id, document_id, chunk_id),
    )


def memories_of(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> list[dict[str, Any]]:
    return cur.execute(
        """SELECT m.id, m.container, m.content, m.memory_type, m.valid_from, m.metadata, m.embedding_model,
                  s.chunk_id
           FROM memory_sources s JOIN memories m ON m.id = s.memory_id
           WHERE s.tenant_id = %s AND s.document_id = %s ORDER BY m.created_at, m.id""",
        (tenant_id, document_id),
    ).fetchall()


def memories_only_from(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> list[UUID]:
    """The memories this document is the only source of."""
    rows = cur.execute(
        """SELECT s.memory_id FROM memory_sources s
           WHERE s.tenant_id = %s AND s.document_id = %s
             AND NOT EXISTS (SELECT 1 FROM memory_sources o WHERE o.memory_id = s.memory_id
                             AND o.document_id <> s.document_id)""",
        (tenant_id, document_id),
    ).fetchall()
    return [row["memory_id"] for row in rows]


def delete_sources(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> None:
    cur.execute(
        "DELETE FROM memory_sources WHERE tenant_id = %s AND document_id = %s", (tenant_id, document_id)
    )


def delete_chunks(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> None:
    cur.execute("DELETE FROM chunks WHERE tenant_id = %s AND document_id = %s", (tenant_id, document_id))


# --- chunk search: the chunks' legs of the fused query (engram.memories.search) --------------------


def _chunk_where(plan: SearchPlan, container: ContainerScope | None) -> sql.Composable:
    """Chunks have a container, tags and metadata; they are never superseded or private. A chunk is
    valid from its creation on (its results' valid_from), never ended: a search as_of a time takes the
    chunks created by then, whatever their document's document_date (the content's own time, not when
    the service held the text). They have no versions, so include_history changes nothing here."""
    clauses: list[sql.Composable] = [
        sql.SQL("c.tenant_id = {}").format(sql.Literal(plan.tenant_id)),
        predicates.in_container(container, "c"),
    ]
    if plan.time.as_of is not None:
        clauses.append(sql.SQL("c.created_at <= {}").format(sql.Literal(plan.time.as_of)))
    if plan.filters.tags:
        clauses.append(sql.SQL("c.tags @> {}::text[]").format(sql.Literal(list(plan.filters.tags))))
    if plan.filters.metadata:
        clauses.append(sql.SQL("c.metadata @> {}::jsonb").format(sql.Literal(Jsonb(plan.filters.metadata))))
    return sql.SQL(" AND ").join(clauses)


def _chunk_vector_leg(plan: SearchPlan) -> sql.Composable:
    assert plan.vector is not None
    return sql.SQL(
        "SELECT c.id FROM chunks c WHERE {where} AND c.embedding_model = {model} "
        "ORDER BY {distance} LIMIT {k}"
    ).format(
        where=_chunk_where(plan, plan.container),
        model=sql.Literal(plan.vector.model),
        distance=vector_distance("c", plan),
        k=sql.Literal(plan.candidates),
    )


def _chunk_accepts(plan: SearchPlan) -> sql.Composable:
    return _chunk_where(plan, plan.container)


def _chunk_graph_leg(plan: SearchPlan) -> sql.Composable:
    """The chunks whose extracted memories mention the most of the query's entities."""
    return sql.SQL(
        """SELECT s.chunk_id AS id FROM entity_mentions em
           JOIN memory_sources s ON s.memory_id = em.memory_id
           JOIN chunks c ON c.id = s.chunk_id
           WHERE em.tenant_id = {t} AND em.entity_id = ANY(ARRAY(SELECT entity_id FROM ents)) AND {where}
           GROUP BY s.chunk_id
           ORDER BY count(DISTINCT em.entity_id) DESC, max(c.created_at) DESC, s.chunk_id
           LIMIT {k}"""
    ).format(
        t=sql.Literal(plan.tenant_id),
        where=_chunk_where(plan, plan.container),
        k=sql.Literal(plan.candidates),
    )


def _chunk_graph_hits(plan: SearchPlan) -> sql.Composable:
    # Through the document's sources (indexed by document): memory_sources has no chunk index.
    return sql.SQL(
        "NULLIF((SELECT count(DISTINCT em.entity_id) FROM memory_sources s "
        "JOIN entity_mentions em ON em.memory_id = s.memory_id "
        "WHERE s.document_id = c.document_id AND s.chunk_id = c.id AND em.tenant_id = {t} "
        "AND em.entity_id = ANY(ARRAY(SELECT entity_id FROM ents))), 0)"
    ).format(t=sql.Literal(plan.tenant_id))


def _chunk_population(plan: SearchPlan, n: sql.Composable) -> sql.Composable:
    """Every embedded chunk of the container scope, tags and metadata aside: an upper bound."""
    assert plan.vector is not None
    return sql.SQL("SELECT 1 FROM chunks c WHERE {where} AND c.embedding_model = {model} LIMIT {n}").format(
        where=sql.SQL("c.tenant_id = {} AND {}").format(
            sql.Literal(plan.tenant_id), predicates.in_container(counted_scope(plan.container), "c")
        ),
        model=sql.Literal(plan.vector.model),
        n=n,
    )


def _any_chunks(tenant_id: UUID) -> sql.Composable:
    return sql.SQL("SELECT EXISTS (SELECT 1 FROM chunks c WHERE c.tenant_id = {}) AS any").format(
        sql.Literal(tenant_id)
    )


def _chunks_can_match(filters: SearchFilters) -> bool:
    """Chunks have no memory type, agent, conversation or owner: a filter on one matches none."""
    return not (
        filters.memory_type
        or filters.agent_id is not None
        or filters.conversation_id is not None
        or filters.user_id is not None
    )


CHUNKS = Corpus(
    kind="chunk",
    table="chunks",
    alias="c",
    columns=sql.SQL(
        "c.id, c.content, NULL::text AS memory_type, c.container, c.tags, c.metadata, "
        "NULL::text AS agent_id, NULL::text AS conversation_id, c.created_at, true AS is_latest, "
        "c.created_at AS valid_from, "
        "NULL::timestamptz AS valid_to, NULL::text AS user_id, 'tenant' AS visibility, 'chunk' AS kind, "
        "c.document_id"
    ),
    postings="c",
    vector_leg=_chunk_vector_leg,
    accepts=_chunk_accepts,
    population=_chunk_population,
    graph_leg=_chunk_graph_leg,
    graph_hits=_chunk_graph_hits,
    can_match=_chunks_can_match,
    any_rows=_any_chunks,
)


# --- restoring an export ------------------------------------------------------------------------


def restore_document(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(
        cur, "documents", tenant_id, row, conflict="(id)", json=("metadata", "extraction")
    )


def restore_chunk(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "chunks", tenant_id, row, conflict="(id)", json=("metadata",))


def restore_memory_source(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    return restore.insert_as_is(cur, "memory_sources", tenant_id, row, conflict="(memory_id, document_id)")


def set_blob_key(cur: TenantTx, tenant_id: UUID, document_id: UUID, blob_key: str) -> None:
    """Where a restored document's original bytes now are (blob_version: none, a key of our own)."""
    cur.execute(
        "UPDATE documents SET blob_key = %s, blob_version = NULL WHERE tenant_id = %s AND id = %s",
        (blob_key, tenant_id, document_id),
    )


def ids_of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> list[UUID]:
    """Erasure: the documents `user_id` uploaded."""
    rows = cur.execute(
        "SELECT id FROM documents WHERE tenant_id = %s AND user_id = %s ORDER BY id", (tenant_id, user_id)
    ).fetchall()
    return [row["id"] for row in rows]


def count_chunks(cur: TenantTx, tenant_id: UUID, document_ids: Sequence[UUID]) -> int:
    row = cur.execute(
        "SELECT count(*) AS n FROM chunks WHERE tenant_id = %s AND document_id = ANY(%s)",
        (tenant_id, list(document_ids)),
    ).fetchone()
    return int(row["n"]) if row else 0


def containers_of(cur: TenantTx, tenant_id: UUID, document_ids: Sequence[UUID]) -> list[dict[str, Any]]:
    return cur.execute(
        "SELECT DISTINCT container FROM documents WHERE tenant_id = %s AND id = ANY(%s)",
        (tenant_id, list(document_ids)),
    ).fetchall()
