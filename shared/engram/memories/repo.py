"""The only code that runs SQL on memories and containers (how memories relate to each other:
engram.graph.relationships).

Every function takes a cursor from `Database.tenant(...)`: RLS already limits it to one tenant. The
queries also name the tenant explicitly, which helps the planner and costs nothing.
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
from engram.db.vectors import vector_literal
from engram.memories import predicates
from engram.memories.models import MemoryPatch, SearchFilters
from engram.memories.new_memory import Embedding, NewMemory
from engram.memories.periods import Period
from engram.memories.predicates import ContainerScope

MEMORY_COLUMNS = sql.SQL(
    "m.id, m.content, m.container, m.memory_type, m.tags, m.metadata, m.agent_id, m.conversation_id, "
    "m.user_id, m.visibility, m.confidence, m.is_latest, m.valid_from, m.valid_to, m.expires_at, "
    "m.reverted_at, m.embedding_model, m.created_at, m.updated_at"
)
# A link to a memory (engram.memories.models.RelatedLink), and the time its lists are ordered by: a
# related-memories answer reads fifty of them, and the full row cost it a fifth of its time.
LINK_COLUMNS = sql.SQL("m.id, m.content, m.memory_type, m.is_latest, m.valid_from, m.valid_to, m.created_at")


# --- containers -------------------------------------------------------------------------------


def ensure_container(cur: TenantTx, tenant_id: UUID, name: str) -> None:
    """Create the container and its ancestors ('a', 'a.b', 'a.b.c') if missing."""
    parts = name.split(".")
    names = [".".join(parts[: i + 1]) for i in range(len(parts))]
    parents = [None, *names[:-1]]
    cur.execute(
        """INSERT INTO containers (tenant_id, name, parent)
           SELECT %s, n, p FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(n, p, i) ORDER BY i
           ON CONFLICT (tenant_id, name) DO NOTHING""",
        (tenant_id, names, parents),
    )


# --- memories ---------------------------------------------------------------------------------


def insert_memory(cur: TenantTx, tenant_id: UUID, memory: NewMemory, embedding: Embedding) -> dict[str, Any]:
    """One new current memory (its container and the container's ancestors are created if missing).
    Its times are the statement's, not the transaction's: memories written one after the other in one
    transaction (a batch) are older and newer, as graph-link and history need."""
    ensure_container(cur, tenant_id, memory.container)
    row = cur.execute(
        sql.SQL(
            """INSERT INTO memories AS m (tenant_id, container, content, memory_type, tags, metadata,
                   agent_id, conversation_id, user_id, visibility, confidence, valid_from, expires_at,
                   embedding, embedding_model, created_at, updated_at)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s, clock_timestamp()), %s,
                       %s::vector, %s, clock_timestamp(), clock_timestamp())
               RETURNING {columns}"""
        ).format(columns=MEMORY_COLUMNS),
        (
            tenant_id,
            memory.container,
            memory.content,
            memory.memory_type,
            list(memory.tags),
            Jsonb(dict(memory.metadata)),
            memory.agent_id,
            memory.conversation_id,
            memory.owner.user_id,
            memory.owner.visibility,
            memory.confidence,
            memory.valid_from,
            memory.expires_at,
            _vector_literal(embedding.vector),
            embedding.model,
        ),
    ).fetchone()
    assert row is not None
    return row


def add_periods(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, periods: Sequence[tuple[Period, bool]]
) -> None:
    """The periods a memory is about (migration 0021), for a memory that has none yet (most have none
    at all: then no statement is sent)."""
    cur.executemany(
        "INSERT INTO memory_periods (tenant_id, memory_id, during, stated) "
        "VALUES (%s, %s, daterange(%s, %s), %s) ON CONFLICT DO NOTHING",
        [(tenant_id, memory_id, p.start, p.end, stated) for p, stated in periods],
    )


def replace_periods(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, periods: Sequence[tuple[Period, bool]]
) -> None:
    """The periods a memory is about, replacing those it had."""
    cur.execute("DELETE FROM memory_periods WHERE tenant_id = %s AND memory_id = %s", (tenant_id, memory_id))
    add_periods(cur, tenant_id, memory_id, periods)


def get_memory(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL("SELECT {columns} FROM memories m WHERE m.tenant_id = %s AND m.id = %s AND {live}").format(
            columns=MEMORY_COLUMNS, live=predicates.live()
        ),
        (tenant_id, memory_id),
    ).fetchone()


def update_memory(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, patch: MemoryPatch, embedding: Embedding | None
) -> dict[str, Any] | None:
    """The fields the patch sets; with `embedding`, the new text's vector."""
    assignments: list[sql.Composable] = [sql.SQL("updated_at = now()")]
    params: list[Any] = []
    for column in ("content", "tags", "metadata", "memory_type", "expires_at", "visibility"):
        if column in patch.model_fields_set:
            assignments.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            value = getattr(patch, column)
            params.append(Jsonb(value) if column == "metadata" else value)
    if embedding is not None:
        assignments.append(sql.SQL("embedding = %s::vector, embedding_model = %s"))
        params.extend([_vector_literal(embedding.vector), embedding.model])
    return cur.execute(
        sql.SQL(
            "UPDATE memories AS m SET {assignments} WHERE m.tenant_id = %s AND m.id = %s AND {live} "
            "RETURNING {columns}"
        ).format(assignments=sql.SQL(", ").join(assignments), live=predicates.live(), columns=MEMORY_COLUMNS),
        (*params, tenant_id, memory_id),
    ).fetchone()


def list_memories(
    cur: TenantTx,
    tenant_id: UUID,
    container: ContainerScope | None,
    filters: SearchFilters,
    limit: int,
    after: tuple[datetime, UUID] | None,
) -> list[dict[str, Any]]:
    where = predicates.where(tenant_id, container, filters)
    if after is not None:
        where = sql.SQL("{} AND (m.created_at, m.id) < ({}, {})").format(
            where, sql.Literal(after[0]), sql.Literal(after[1])
        )
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.id DESC LIMIT {n}"
        ).format(columns=MEMORY_COLUMNS, where=where, n=sql.Literal(limit))
    ).fetchall()


def clock(cur: TenantTx) -> datetime:
    """The database's time now, as insert_memory stamps a new memory (clock_timestamp())."""
    row = cur.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]


def lock_container_writes(cur: TenantTx, tenant_id: UUID, container: str) -> None:
    """Serialise deduplicating writes (upserts) to one container of one tenant until this
    transaction ends: the second writer then sees what the first one committed."""
    cur.execute(
        "SELECT pg_advisory_xact_lock(('x' || left(md5(%s), 16))::bit(64)::bigint)",
        (f"engram.upsert:{tenant_id}:{container}",),
    )


def nearest_same_owner(
    cur: TenantTx,
    tenant_id: UUID,
    container: str,
    model: str,
    vector: Sequence[float],
    user_id: str | None,
    visibility: str,
) -> dict[str, Any] | None:
    """The current memory of the container most similar to `vector` (cosine), among those with the
    same embedding model, owner and visibility. An exact scan: dedupe must not miss the twin."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns}, 1 - (m.embedding <=> %s::vector) AS similarity FROM memories m "
            "WHERE m.tenant_id = %s AND m.container = %s AND m.embedding_model = %s AND {current} "
            "AND {owned} ORDER BY m.embedding <=> %s::vector, m.created_at, m.id LIMIT 1"
        ).format(
            columns=MEMORY_COLUMNS,
            current=predicates.current(),
            owned=predicates.same_owner(sql.Placeholder(), sql.Placeholder()),
        ),
        (_vector_literal(vector), tenant_id, container, model, user_id, visibility, _vector_literal(vector)),
    ).fetchone()


def current_with_content(
    cur: TenantTx, tenant_id: UUID, container: str, content: str, owner: tuple[str | None, str] | None
) -> UUID | None:
    """The oldest current memory of the container with exactly this text: among those of `owner`
    (user_id, visibility), or with None among every memory the transaction's party sees."""
    owned = sql.SQL("true") if owner is None else predicates.same_owner(*owner)
    row = cur.execute(
        sql.SQL(
            "SELECT m.id FROM memories m WHERE m.tenant_id = %s AND m.container = %s AND {current} "
            "AND m.content = %s AND {owned} ORDER BY m.created_at, m.id LIMIT 1"
        ).format(current=predicates.current(), owned=owned),
        (tenant_id, container, content),
    ).fetchone()
    return row["id"] if row else None


def stored_dimensions(cur: TenantTx, tenant_id: UUID, model: str) -> int | None:
    row = cur.execute(
        "SELECT vector_dims(embedding) AS dims FROM memories "
        "WHERE tenant_id = %s AND embedding_model = %s LIMIT 1",
        (tenant_id, model),
    ).fetchone()
    return row["dims"] if row else None


# --- versions: supersession, history, revert ---------------------------------------------------


def lock_memory(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, *, live: bool = False
) -> dict[str, Any] | None:
    """The memory's row, locked until the transaction ends (two supersessions cannot interleave); with
    `live`, only if it has not expired (as get_memory reads it)."""
    return cur.execute(
        sql.SQL(
            "SELECT {columns} FROM memories m WHERE m.tenant_id = %s AND m.id = %s AND {live} FOR UPDATE"
        ).format(columns=MEMORY_COLUMNS, live=predicates.live() if live else sql.SQL("true")),
        (tenant_id, memory_id),
    ).fetchone()


def owned_by(
    cur: TenantTx, tenant_id: UUID, memory_id: UUID, user_id: str | None, visibility: str | None = None
) -> bool:
    """Whether the memory belongs to this owner: this user (or none) and visibility (the rule of
    predicates.same_owner); with no `visibility`, this user's whatever its visibility (predicates.of_user)."""
    owned = (
        predicates.of_user(sql.Placeholder("u"))
        if visibility is None
        else predicates.same_owner(sql.Placeholder("u"), sql.Placeholder("v"))
    )
    row = cur.execute(
        sql.SQL("SELECT {owned} AS owned FROM memories m WHERE m.tenant_id = %(t)s AND m.id = %(m)s").format(
            owned=owned
        ),
        {"t": tenant_id, "m": memory_id, "u": user_id, "v": visibility},
    ).fetchone()
    return bool(row and row["owned"])


def end_version(cur: TenantTx, tenant_id: UUID, memory_id: UUID, valid_to: datetime | None) -> None:
    """The memory stops being current (it stays, as history), valid until `valid_to` (never before it
    began) or, with None, until now. Updated now: the statement's time, as insert_memory's, so that a
    row retired by a memory written later in the transaction was not updated before that memory was made."""
    cur.execute(
        "UPDATE memories SET is_latest = false, updated_at = clock_timestamp(), "
        "valid_to = CASE WHEN %s::timestamptz IS NULL THEN clock_timestamp() "
        "ELSE greatest(valid_from, %s) END "
        "WHERE tenant_id = %s AND id = %s",
        (valid_to, valid_to, tenant_id, memory_id),
    )


def mark_reverted(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> None:
    """A version undone by a revert: kept, never current again."""
    cur.execute(
        "UPDATE memories SET is_latest = false, reverted_at = now(), valid_to = now(), updated_at = now() "
        "WHERE tenant_id = %s AND id = %s",
        (tenant_id, memory_id),
    )


def make_current(cur: TenantTx, tenant_id: UUID, memory_ids: Sequence[UUID]) -> list[dict[str, Any]]:
    """These versions are current again (their replacements were reverted or removed)."""
    if not memory_ids:
        return []
    return cur.execute(
        sql.SQL(
            "UPDATE memories AS m SET is_latest = true, valid_to = NULL, updated_at = now() "
            "WHERE m.tenant_id = %s AND m.id = ANY(%s) RETURNING {columns}"
        ).format(columns=MEMORY_COLUMNS),
        (tenant_id, list(memory_ids)),
    ).fetchall()


def delete_memories(cur: TenantTx, tenant_id: UUID, memory_ids: Sequence[UUID]) -> int:
    if not memory_ids:
        return 0
    cur.execute("DELETE FROM memories WHERE tenant_id = %s AND id = ANY(%s)", (tenant_id, list(memory_ids)))
    return cur.rowcount


def _vector_literal(vector: Sequence[float] | None) -> str | None:
    return None if vector is None else vector_literal(vector)


# --- stats ------------------------------------------------------------------------------------


def stats(cur: TenantTx, tenant_id: UUID, owner: str | None = None) -> dict[str, Any]:
    """Counts of live memories; with `owner`, only that user's."""
    where = sql.SQL(" AND ").join(
        [
            sql.SQL("m.tenant_id = {}").format(sql.Literal(tenant_id)),
            predicates.live(),
            *predicates.matching(SearchFilters(user_id=owner)),
        ]
    )
    by_container_type = cur.execute(
        sql.SQL(
            "SELECT m.container, m.memory_type, count(*) AS count FROM memories m "
            "WHERE {where} GROUP BY 1, 2 ORDER BY 1, 2"
        ).format(where=where)
    ).fetchall()
    models = cur.execute(
        sql.SQL(
            "SELECT coalesce(m.embedding_model, '') AS model, count(*) AS count FROM memories m "
            "WHERE {where} GROUP BY 1"
        ).format(where=where)
    ).fetchall()
    return {"by_container_type": by_container_type, "models": models}


def restore_memory(cur: TenantTx, tenant_id: UUID, row: dict[str, Any]) -> bool:
    """A memory exactly as exported: its id, versions, validity and vector."""
    return restore.insert_as_is(cur, "memories", tenant_id, row, conflict="(id)", json=("metadata",))


# --- erasure ----------------------------------------------------------------------------------


def of_user(cur: TenantTx, tenant_id: UUID, user_id: str) -> list[dict[str, Any]]:
    """Erasure: every memory of `user_id` (id, container), every version, expired ones included."""
    return cur.execute(
        "SELECT id, container FROM memories WHERE tenant_id = %s AND user_id = %s ORDER BY id",
        (tenant_id, user_id),
    ).fetchall()
