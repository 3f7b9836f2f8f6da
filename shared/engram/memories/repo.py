"""The only code that runs SQL on memories, containers and their relationships.

Every function takes a cursor from `Database.tenant(...)`: RLS already limits it to one tenant. The
queries also name the tenant explicitly, which helps the planner and costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db.database import TenantTx
from engram.db.migrate import embedding_index_name
from engram.memories.models import ContainerQuery, SearchFilters

MEMORY_COLUMNS = sql.SQL(
    "m.id, m.content, m.container, m.memory_type, m.tags, m.metadata, m.agent_id, m.conversation_id, "
    "m.confidence, m.is_latest, m.valid_from, m.valid_to, m.expires_at, m.embedding_model, "
    "m.created_at, m.updated_at"
)
# Reciprocal-rank fusion constant. Tuned on SciFact's train claims (make bench --scifact-split train):
# nDCG@10 0.683 at the customary 60, 0.696 at 10, which weighs each leg's first few results more.
RRF_K = 10


@dataclass(frozen=True)
class ContainerScope:
    """`name` exactly, or with `include_children` also everything below it ('a.b.*')."""

    name: str
    include_children: bool

    @classmethod
    def parse(cls, query: ContainerQuery | None) -> ContainerScope | None:
        if query is None:
            return None
        if query.endswith(".*"):
            return cls(query[:-2], True)
        return cls(query, False)


@dataclass(frozen=True)
class VectorQuery:
    vector: Sequence[float]
    model: str
    exact: bool
    # With `exact`: the filtered population was counted at most this large.
    population_cap: int = 0


@dataclass(frozen=True)
class SearchPlan:
    tenant_id: UUID
    text: str | None
    vector: VectorQuery | None
    container: ContainerScope | None
    filters: SearchFilters
    candidates: int
    limit: int


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


def insert_memory(
    cur: TenantTx,
    tenant_id: UUID,
    fields: dict[str, Any],
    embedding: Sequence[float] | None,
    embedding_model: str | None,
) -> dict[str, Any]:
    ensure_container(cur, tenant_id, fields["container"])
    row = cur.execute(
        sql.SQL(
            """INSERT INTO memories AS m (tenant_id, container, content, memory_type, tags, metadata, agent_id,
                   conversation_id, confidence, valid_from, expires_at, embedding, embedding_model)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s, now()), %s, %s::vector, %s)
               RETURNING {columns}"""
        ).format(columns=MEMORY_COLUMNS),
        (
            tenant_id,
            fields["container"],
            fields["content"],
            fields["memory_type"],
            fields["tags"],
            Jsonb(fields["metadata"]),
            fields["agent_id"],
            fields["conversation_id"],
            fields["confidence"],
            fields["valid_from"],
            fields["expires_at"],
            _vector_literal(embedding),
            embedding_model,
        ),
    ).fetchone()
    assert row is not None
    return row


def get_memory(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> dict[str, Any] | None:
    return cur.execute(
        sql.SQL("SELECT {columns} FROM memories m WHERE m.tenant_id = %s AND m.id = %s AND {live}").format(
            columns=MEMORY_COLUMNS, live=_LIVE
        ),
        (tenant_id, memory_id),
    ).fetchone()


def update_memory(
    cur: TenantTx,
    tenant_id: UUID,
    memory_id: UUID,
    changes: dict[str, Any],
    embedding: Sequence[float] | None = None,
    embedding_model: str | None = None,
) -> dict[str, Any] | None:
    assignments = [sql.SQL("updated_at = now()")]
    params: list[Any] = []
    for column in ("content", "tags", "metadata", "memory_type", "expires_at"):
        if column in changes:
            assignments.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            value = changes[column]
            params.append(Jsonb(value) if column == "metadata" else value)
    if embedding is not None:
        assignments.append(sql.SQL("embedding = %s::vector, embedding_model = %s"))
        params.extend([_vector_literal(embedding), embedding_model])
    return cur.execute(
        sql.SQL(
            "UPDATE memories AS m SET {assignments} WHERE m.tenant_id = %s AND m.id = %s AND {live} "
            "RETURNING {columns}"
        ).format(assignments=sql.SQL(", ").join(assignments), live=_LIVE, columns=MEMORY_COLUMNS),
        (*params, tenant_id, memory_id),
    ).fetchone()


def delete_memory(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> bool:
    cur.execute("DELETE FROM memories WHERE tenant_id = %s AND id = %s", (tenant_id, memory_id))
    return cur.rowcount == 1


def list_memories(
    cur: TenantTx,
    tenant_id: UUID,
    container: ContainerScope | None,
    filters: SearchFilters,
    limit: int,
    after: tuple[datetime, UUID] | None,
) -> list[dict[str, Any]]:
    where = _where(tenant_id, container, filters)
    if after is not None:
        where = sql.SQL("{} AND (m.created_at, m.id) < ({}, {})").format(
            where, sql.Literal(after[0]), sql.Literal(after[1])
        )
    return cur.execute(
        sql.SQL("SELECT {columns} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.id DESC LIMIT {n}").format(
            columns=MEMORY_COLUMNS, where=where, n=sql.Literal(limit)
        )
    ).fetchall()


def stored_dimensions(cur: TenantTx, tenant_id: UUID, model: str) -> int | None:
    row = cur.execute(
        "SELECT vector_dims(embedding) AS dims FROM memories WHERE tenant_id = %s AND embedding_model = %s LIMIT 1",
        (tenant_id, model),
    ).fetchone()
    return row["dims"] if row else None


# --- search -----------------------------------------------------------------------------------


def count_vector_population(
    cur: TenantTx,
    tenant_id: UUID,
    model: str,
    container: ContainerScope | None,
    filters: SearchFilters,
    cap: int,
) -> int:
    """How many embedded rows pass the tenant, container and every filter: what an exact scan would
    read. Counted only up to `cap` + 1. Tag and metadata filters are counted through
    memory_filter_candidates, which can use their GIN indexes (RLS keeps the app from doing so)."""
    inner: sql.Composable
    if _needs_filter_function(filters):
        inner = sql.SQL("SELECT 1 FROM memory_filter_candidates({args})").format(
            args=_filter_function_args(model, cap + 1, container, filters)
        )
    else:
        rows = sql.SQL("SELECT 1 FROM memories m WHERE {where} AND m.embedding_model = {model} LIMIT {n}")
        inner = rows.format(
            where=_where(tenant_id, container, filters), model=sql.Literal(model), n=sql.Literal(cap + 1)
        )
    row = cur.execute(sql.SQL("SELECT count(*) AS n FROM ({}) s").format(inner)).fetchone()
    assert row is not None
    return int(row["n"])


def index_rows(cur: TenantTx, model: str, dimensions: int) -> float | None:
    """Rows in the model's HNSW index, from planner statistics (no scan); None if it has no index."""
    row = cur.execute(
        "SELECT greatest(reltuples, 0) AS n FROM pg_class WHERE oid = to_regclass(%s)",
        (embedding_index_name(model, dimensions),),
    ).fetchone()
    return None if row is None else float(row["n"])


def tune_vector_scan(cur: TenantTx, ef_search: int, max_scan_tuples: int) -> None:
    """pgvector 0.8 iterative scans: keep walking the HNSW graph until enough rows pass the filters.
    Transaction-local, so it never leaks to another request (or pins an RDS Proxy connection)."""
    cur.execute(
        """SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
                  set_config('hnsw.ef_search', %s, true),
                  set_config('hnsw.max_scan_tuples', %s, true)""",
        (str(ef_search), str(max_scan_tuples)),
    )


def search(cur: TenantTx, plan: SearchPlan) -> list[dict[str, Any]]:
    """Hybrid retrieval in one statement: each leg ranks its candidates, reciprocal-rank fusion
    merges them, and the rows come back with every leg's score."""
    legs: list[sql.Composable] = []
    joins: list[sql.Composable] = []
    if plan.vector is not None:
        legs.append(sql.SQL("vec AS MATERIALIZED ({}), vec_ranked AS ({})").format(
            _vector_leg(plan), sql.SQL("SELECT id, 1 - distance AS similarity, "
                                       "row_number() OVER (ORDER BY distance, id) AS rank FROM vec")
        ))
        joins.append(sql.SQL("vec_ranked"))
    if plan.text is not None:
        legs.append(sql.SQL("txt AS ({})").format(_text_leg(plan)))
        joins.append(sql.SQL("txt"))
    if len(joins) == 2:
        fused = sql.SQL(
            "SELECT coalesce(v.id, t.id) AS id, v.similarity, t.text_rank, "
            "coalesce(1.0 / ({k} + v.rank), 0) + coalesce(1.0 / ({k} + t.rank), 0) AS rrf "
            "FROM vec_ranked v FULL JOIN txt t ON v.id = t.id"
        )
    elif plan.vector is not None:
        fused = sql.SQL("SELECT id, similarity, NULL::real AS text_rank, 1.0 / ({k} + rank) AS rrf FROM vec_ranked")
    else:
        fused = sql.SQL("SELECT id, NULL::float8 AS similarity, text_rank, 1.0 / ({k} + rank) AS rrf FROM txt")
    # The top `limit` are chosen before the rows are read: only they are fetched, by primary key.
    # (Joining the whole fused set let the planner hash-join every row of the tenant.)
    query = sql.SQL(
        """WITH {legs}, fused AS MATERIALIZED ({fused} ORDER BY rrf DESC, id LIMIT {limit})
           SELECT {columns}, f.similarity, f.text_rank, f.rrf
           FROM fused f JOIN memories m ON m.id = f.id
           WHERE m.tenant_id = {tenant}
           ORDER BY f.rrf DESC, m.id"""
    ).format(
        legs=sql.SQL(", ").join(legs),
        fused=fused.format(k=sql.Literal(RRF_K)),
        columns=MEMORY_COLUMNS,
        tenant=sql.Literal(plan.tenant_id),
        limit=sql.Literal(plan.limit),
    )
    return cur.execute(query).fetchall()


def _vector_leg(plan: SearchPlan) -> sql.Composable:
    assert plan.vector is not None
    dims = len(plan.vector.vector)
    literal = sql.Literal(_vector_literal(plan.vector.vector))
    where = _where(plan.tenant_id, plan.container, plan.filters)
    if plan.vector.exact:
        # The uncast column does not match the HNSW index expression: an exact scan of the
        # (small) filtered set, so a small tenant or container always gets its true top-k.
        distance = sql.SQL("m.embedding <=> {}::vector").format(literal)
        if _needs_filter_function(plan.filters):
            # Reach the few rows that pass tag or metadata filters by their ids, not by reading the tenant.
            ids = _filter_function_args(
                plan.vector.model, plan.vector.population_cap + 1, plan.container, plan.filters
            )
            where = sql.SQL("{} AND m.id IN (SELECT c.id FROM memory_filter_candidates({}) c)").format(where, ids)
    else:
        distance = sql.SQL("m.embedding::vector({dims}) <=> {q}::vector({dims})").format(
            dims=sql.Literal(dims), q=literal
        )
    return sql.SQL(
        "SELECT m.id, {distance} AS distance FROM memories m "
        "WHERE {where} AND m.embedding_model = {model} ORDER BY {distance} LIMIT {k}"
    ).format(
        distance=distance,
        where=where,
        model=sql.Literal(plan.vector.model),
        k=sql.Literal(plan.candidates),
    )


def _text_leg(plan: SearchPlan) -> sql.Composable:
    f = plan.filters
    return sql.SQL(
        "SELECT c.id, c.rank AS text_rank, row_number() OVER (ORDER BY c.rank DESC, c.id) AS rank "
        "FROM memory_text_candidates(replace(plainto_tsquery('english', {q})::text, ' & ', ' | ')::tsquery, "
        "{k}, {container}, {children}, {types}::text[], {tags}::text[], {agent}, {conversation}, {metadata}::jsonb) c"
    ).format(
        q=sql.Literal(plan.text),
        k=sql.Literal(plan.candidates),
        container=sql.Literal(plan.container.name if plan.container else None),
        children=sql.Literal(bool(plan.container and plan.container.include_children)),
        types=sql.Literal(list(f.memory_type) or None),
        tags=sql.Literal(list(f.tags) or None),
        agent=sql.Literal(f.agent_id),
        conversation=sql.Literal(f.conversation_id),
        metadata=sql.Literal(Jsonb(f.metadata) if f.metadata else None),
    )


_LIVE = sql.SQL("(m.expires_at IS NULL OR m.expires_at > now())")


def _needs_filter_function(filters: SearchFilters) -> bool:
    """Filters whose operators are not leakproof, so that RLS keeps their indexes from the app."""
    return bool(filters.tags or filters.metadata)


def _filter_function_args(
    model: str, limit: int, container: ContainerScope | None, filters: SearchFilters
) -> sql.Composable:
    return sql.SQL("{model}, {limit}, {container}, {children}, {types}::text[], {tags}::text[], {agent}, "
                   "{conversation}, {metadata}::jsonb").format(
        model=sql.Literal(model),
        limit=sql.Literal(limit),
        container=sql.Literal(container.name if container else None),
        children=sql.Literal(bool(container and container.include_children)),
        types=sql.Literal(list(filters.memory_type) or None),
        tags=sql.Literal(list(filters.tags) or None),
        agent=sql.Literal(filters.agent_id),
        conversation=sql.Literal(filters.conversation_id),
        metadata=sql.Literal(Jsonb(filters.metadata) if filters.metadata else None),
    )


def _container_sql(container: ContainerScope | None) -> sql.Composable:
    if container is None:
        return sql.SQL("true")
    if not container.include_children:
        return sql.SQL("m.container = {}").format(sql.Literal(container.name))
    # A range on the "C"-collated name: unlike LIKE, these operators are leakproof, so the B-tree
    # index stays usable under RLS. '.' + 1 = '/'.
    return sql.SQL("(m.container = {name} OR (m.container > {lo} AND m.container < {hi}))").format(
        name=sql.Literal(container.name),
        lo=sql.Literal(container.name + "."),
        hi=sql.Literal(container.name + "/"),
    )


def _where(tenant_id: UUID, container: ContainerScope | None, filters: SearchFilters) -> sql.Composable:
    clauses: list[sql.Composable] = [
        sql.SQL("m.tenant_id = {}").format(sql.Literal(tenant_id)),
        sql.SQL("m.is_latest"),
        _LIVE,
        _container_sql(container),
    ]
    if filters.memory_type:
        clauses.append(sql.SQL("m.memory_type = ANY({}::text[])").format(sql.Literal(list(filters.memory_type))))
    if filters.tags:
        clauses.append(sql.SQL("m.tags @> {}::text[]").format(sql.Literal(list(filters.tags))))
    if filters.agent_id is not None:
        clauses.append(sql.SQL("m.agent_id = {}").format(sql.Literal(filters.agent_id)))
    if filters.conversation_id is not None:
        clauses.append(sql.SQL("m.conversation_id = {}").format(sql.Literal(filters.conversation_id)))
    if filters.metadata:
        clauses.append(sql.SQL("m.metadata @> {}::jsonb").format(sql.Literal(Jsonb(filters.metadata))))
    return sql.SQL(" AND ").join(clauses)


def _vector_literal(vector: Sequence[float] | None) -> str | None:
    if vector is None:
        return None
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


# --- stats ------------------------------------------------------------------------------------


def stats(cur: TenantTx, tenant_id: UUID) -> dict[str, Any]:
    by_container_type = cur.execute(
        sql.SQL(
            "SELECT m.container, m.memory_type, count(*) AS count FROM memories m "
            "WHERE m.tenant_id = %s AND {live} GROUP BY 1, 2 ORDER BY 1, 2"
        ).format(live=_LIVE),
        (tenant_id,),
    ).fetchall()
    models = cur.execute(
        sql.SQL(
            "SELECT coalesce(m.embedding_model, '') AS model, count(*) AS count FROM memories m "
            "WHERE m.tenant_id = %s AND {live} GROUP BY 1"
        ).format(live=_LIVE),
        (tenant_id,),
    ).fetchall()
    return {"by_container_type": by_container_type, "models": models}
