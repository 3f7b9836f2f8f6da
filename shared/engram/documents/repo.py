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

from engram.db.database import TenantTx
from engram.memories.repo import RRF_K, ContainerScope, SearchPlan, ensure_container

DOCUMENT_COLUMNS = sql.SQL(
    "d.id, d.container, d.status, d.content_type, d.source_kind, d.source, d.filename, d.title, d.tags, "
    "d.metadata, d.checksum, d.size_bytes, d.custom_id, d.revision, d.error_code, d.error, d.blob_key, "
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
                   extract_mode, document_date)
               VALUES (coalesce(%s, gen_random_uuid()), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                       %s, %s, %s)
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


def find_by_checksum(cur: TenantTx, tenant_id: UUID, container: str, checksum: str) -> dict[str, Any] | None:
    """The document already holding this content in this container: one that is not failed first."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, {counts} FROM documents d "
            "WHERE d.tenant_id = %s AND d.container = %s AND d.checksum = %s "
            "ORDER BY (d.status = 'failed'), d.created_at DESC LIMIT 1 FOR UPDATE OF d"
        ).format(columns=DOCUMENT_COLUMNS, counts=COUNTS),
        (tenant_id, container, checksum),
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
    clauses: list[sql.Composable] = [sql.SQL("d.tenant_id = {}").format(sql.Literal(tenant_id))]
    if container is not None and container.include_children:
        clauses.append(
            sql.SQL("(d.container = {n} OR (d.container > {lo} AND d.container < {hi}))").format(
                n=sql.Literal(container.name),
                lo=sql.Literal(container.name + "."),
                hi=sql.Literal(container.name + "/"),
            )
        )
    elif container is not None:
        clauses.append(sql.SQL("d.container = {}").format(sql.Literal(container.name)))
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
    cur.execute("DELETE FROM chunks WHERE tenant_id = %s AND document_id = %s", (tenant_id, document["id"]))
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


def latest_memory_with_content(cur: TenantTx, tenant_id: UUID, container: str, content: str) -> UUID | None:
    row = cur.execute(
        """SELECT id FROM memories WHERE tenant_id = %s AND container = %s AND is_latest AND content = %s
           AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at LIMIT 1""",
        (tenant_id, container, content),
    ).fetchone()
    return row["id"] if row else None


def memories_of(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> list[dict[str, Any]]:
    return cur.execute(
        """SELECT m.id, m.container, m.content, m.memory_type, m.valid_from, m.metadata, m.embedding_model,
                  s.chunk_id
           FROM memory_sources s JOIN memories m ON m.id = s.memory_id
           WHERE s.tenant_id = %s AND s.document_id = %s ORDER BY m.created_at, m.id""",
        (tenant_id, document_id),
    ).fetchall()


def purge_outputs(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> None:
    """Undo everything the pipeline wrote for a document: memories that come only from it (and the
    supersessions they made), its memory sources, and its chunks. Used by mark-failed, by a new
    revision and by DELETE; in one transaction, so a failure leaves no partial rows."""
    purge_memories(cur, tenant_id, document_id)
    cur.execute("DELETE FROM chunks WHERE tenant_id = %s AND document_id = %s", (tenant_id, document_id))


def purge_memories(cur: TenantTx, tenant_id: UUID, document_id: UUID) -> None:
    """Remove the memories that come only from this document (restoring what they had superseded)
    and the document's memory sources."""
    own = [
        r["memory_id"]
        for r in cur.execute(
            """SELECT s.memory_id FROM memory_sources s
           WHERE s.tenant_id = %s AND s.document_id = %s
             AND NOT EXISTS (SELECT 1 FROM memory_sources o WHERE o.memory_id = s.memory_id
                             AND o.document_id <> s.document_id)""",
            (tenant_id, document_id),
        ).fetchall()
    ]
    if own:
        # Memories these had superseded are current again, unless something else still supersedes them.
        cur.execute(
            """UPDATE memories m SET is_latest = true, valid_to = NULL, updated_at = now()
               WHERE m.tenant_id = %(t)s AND NOT (m.id = ANY(%(own)s))
                 AND m.id IN (SELECT r.target_id FROM memory_relationships r
                              WHERE r.tenant_id = %(t)s AND r.relationship_type = 'updates'
                                AND r.source_id = ANY(%(own)s))
                 AND NOT EXISTS (SELECT 1 FROM memory_relationships r2
                                 WHERE r2.target_id = m.id AND r2.relationship_type = 'updates'
                                   AND NOT (r2.source_id = ANY(%(own)s)))""",
            {"t": tenant_id, "own": own},
        )
        cur.execute("DELETE FROM memories WHERE tenant_id = %s AND id = ANY(%s)", (tenant_id, own))
    cur.execute(
        "DELETE FROM memory_sources WHERE tenant_id = %s AND document_id = %s", (tenant_id, document_id)
    )


# --- chunk search -----------------------------------------------------------------------------


def count_chunks_up_to(
    cur: TenantTx, tenant_id: UUID, model: str, container: ContainerScope | None, cap: int
) -> int:
    row = cur.execute(
        sql.SQL(
            "SELECT count(*) AS n FROM (SELECT 1 FROM chunks c WHERE c.tenant_id = {t} "
            "AND c.embedding_model = {m} AND {c} LIMIT {cap}) s"
        ).format(
            t=sql.Literal(tenant_id),
            m=sql.Literal(model),
            c=_container_sql(container),
            cap=sql.Literal(cap + 1),
        )
    ).fetchone()
    assert row is not None
    return int(row["n"])


def search_chunks(cur: TenantTx, plan: SearchPlan) -> list[dict[str, Any]]:
    """Hybrid retrieval over chunks, shaped like memory search rows (see MemoryService.ChunkSearch)."""
    legs: list[sql.Composable] = []
    if plan.vector is not None:
        legs.append(
            sql.SQL("vec AS MATERIALIZED ({}), vec_ranked AS ({})").format(
                _chunk_vector_leg(plan),
                sql.SQL(
                    "SELECT id, 1 - distance AS similarity, "
                    "row_number() OVER (ORDER BY distance, id) AS rank FROM vec"
                ),
            )
        )
    if plan.text is not None:
        legs.append(
            sql.SQL(
                "txt AS (SELECT c.id, c.rank AS text_rank, "
                "row_number() OVER (ORDER BY c.rank DESC, c.id) AS rank FROM chunk_text_candidates("
                "replace(plainto_tsquery('english', {q})::text, ' & ', ' | ')::tsquery, "
                "{k}, {container}, {children}, {tags}::text[], {metadata}::jsonb) c)"
            ).format(
                q=sql.Literal(plan.text),
                k=sql.Literal(plan.candidates),
                container=sql.Literal(plan.container.name if plan.container else None),
                children=sql.Literal(bool(plan.container and plan.container.include_children)),
                tags=sql.Literal(list(plan.filters.tags) or None),
                metadata=sql.Literal(Jsonb(plan.filters.metadata) if plan.filters.metadata else None),
            )
        )
    if plan.vector is not None and plan.text is not None:
        fused = sql.SQL(
            "SELECT coalesce(v.id, t.id) AS id, v.similarity, t.text_rank, "
            "coalesce(1.0 / ({k} + v.rank), 0) + coalesce(1.0 / ({k} + t.rank), 0) AS rrf "
            "FROM vec_ranked v FULL JOIN txt t ON v.id = t.id"
        )
    elif plan.vector is not None:
        fused = sql.SQL(
            "SELECT id, similarity, NULL::real AS text_rank, 1.0 / ({k} + rank) AS rrf FROM vec_ranked"
        )
    else:
        fused = sql.SQL(
            "SELECT id, NULL::float8 AS similarity, text_rank, 1.0 / ({k} + rank) AS rrf FROM txt"
        )
    return cur.execute(
        sql.SQL(
            """WITH {legs}, fused AS ({fused})
           SELECT c.id, c.content, NULL::text AS memory_type, c.container, c.tags, c.metadata,
                  NULL::text AS agent_id, NULL::text AS conversation_id, c.created_at,
                  true AS is_latest, c.created_at AS valid_from, NULL::timestamptz AS valid_to,
                  NULL::text AS user_id, 'tenant' AS visibility,
                  f.similarity, f.text_rank, f.rrf, 'chunk' AS kind, c.document_id
           FROM fused f JOIN chunks c ON c.id = f.id
           WHERE c.tenant_id = {tenant}
           ORDER BY f.rrf DESC, c.id
           LIMIT {limit}"""
        ).format(
            legs=sql.SQL(", ").join(legs),
            fused=fused.format(k=sql.Literal(RRF_K)),
            tenant=sql.Literal(plan.tenant_id),
            limit=sql.Literal(plan.limit),
        )
    ).fetchall()


def _chunk_vector_leg(plan: SearchPlan) -> sql.Composable:
    assert plan.vector is not None
    dims = len(plan.vector.vector)
    literal = sql.Literal("[" + ",".join(repr(float(x)) for x in plan.vector.vector) + "]")
    if plan.vector.exact:
        distance = sql.SQL("c.embedding <=> {}::vector").format(literal)
    else:
        distance = sql.SQL("c.embedding::vector({d}) <=> {q}::vector({d})").format(
            d=sql.Literal(dims), q=literal
        )
    clauses: list[sql.Composable] = [
        sql.SQL("c.tenant_id = {}").format(sql.Literal(plan.tenant_id)),
        sql.SQL("c.embedding_model = {}").format(sql.Literal(plan.vector.model)),
        _container_sql(plan.container),
    ]
    if plan.filters.tags:
        clauses.append(sql.SQL("c.tags @> {}::text[]").format(sql.Literal(list(plan.filters.tags))))
    if plan.filters.metadata:
        clauses.append(sql.SQL("c.metadata @> {}::jsonb").format(sql.Literal(Jsonb(plan.filters.metadata))))
    return sql.SQL("SELECT c.id, {d} AS distance FROM chunks c WHERE {w} ORDER BY {d} LIMIT {k}").format(
        d=distance, w=sql.SQL(" AND ").join(clauses), k=sql.Literal(plan.candidates)
    )


def _container_sql(container: ContainerScope | None) -> sql.Composable:
    if container is None:
        return sql.SQL("true")
    if not container.include_children:
        return sql.SQL("c.container = {}").format(sql.Literal(container.name))
    return sql.SQL("(c.container = {n} OR (c.container > {lo} AND c.container < {hi}))").format(
        n=sql.Literal(container.name),
        lo=sql.Literal(container.name + "."),
        hi=sql.Literal(container.name + "/"),
    )
