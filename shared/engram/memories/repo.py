"""The only code that runs SQL on memories and containers (how memories relate to each other:
engram.graph.relationships).

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
from engram.memories import predicates
from engram.memories.models import MemoryPatch, SearchFilters
from engram.memories.new_memory import Embedding, NewMemory
from engram.memories.predicates import CURRENT, ContainerScope, TimeScope

MEMORY_COLUMNS = sql.SQL(
    "m.id, m.content, m.container, m.memory_type, m.tags, m.metadata, m.agent_id, m.conversation_id, "
    "m.user_id, m.visibility, m.confidence, m.is_latest, m.valid_from, m.valid_to, m.expires_at, "
    "m.reverted_at, m.embedding_model, m.created_at, m.updated_at"
)
# Reciprocal-rank fusion constant, tuned on SciFact's train claims (make bench --scifact-split train)
# with the pooled ranking below: hybrid nDCG@10 0.667 at k=40, 0.672 at 20, 0.692 at 10, 0.702 at 5.
# A small k weighs each leg's first few results more.
RRF_K = 5


@dataclass(frozen=True)
class VectorQuery:
    vector: Sequence[float]
    model: str
    exact: bool


@dataclass(frozen=True)
class SearchPlan:
    tenant_id: UUID
    text: str | None
    vector: VectorQuery | None
    container: ContainerScope | None
    filters: SearchFilters
    candidates: int
    limit: int
    time: TimeScope = CURRENT
    # The entities the query names (query_entities): the graph leg, when there are any.
    graph_entities: tuple[UUID, ...] = ()


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
    """One new current memory (its container and the container's ancestors are created if missing)."""
    ensure_container(cur, tenant_id, memory.container)
    row = cur.execute(
        sql.SQL(
            """INSERT INTO memories AS m (tenant_id, container, content, memory_type, tags, metadata,
                   agent_id, conversation_id, user_id, visibility, confidence, valid_from, expires_at,
                   embedding, embedding_model)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s, now()), %s, %s::vector, %s)
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
            "AND m.user_id IS NOT DISTINCT FROM %s AND m.visibility = %s "
            "ORDER BY m.embedding <=> %s::vector, m.created_at, m.id LIMIT 1"
        ).format(columns=MEMORY_COLUMNS, current=predicates.current()),
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


def lock_memory(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> dict[str, Any] | None:
    """The memory's row, locked until the transaction ends (two supersessions cannot interleave)."""
    return cur.execute(
        sql.SQL("SELECT {columns} FROM memories m WHERE m.tenant_id = %s AND m.id = %s FOR UPDATE").format(
            columns=MEMORY_COLUMNS
        ),
        (tenant_id, memory_id),
    ).fetchone()


def end_version(cur: TenantTx, tenant_id: UUID, memory_id: UUID, valid_to: datetime | None) -> None:
    """The memory stops being current (it stays, as history), valid until `valid_to` (never before it
    began) or, with None, until now."""
    cur.execute(
        "UPDATE memories SET is_latest = false, updated_at = now(), "
        "valid_to = CASE WHEN %s::timestamptz IS NULL THEN now() ELSE greatest(valid_from, %s) END "
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


# --- search -----------------------------------------------------------------------------------


def count_vector_population(
    cur: TenantTx,
    tenant_id: UUID,
    model: str,
    container: ContainerScope | None,
    filters: SearchFilters,
    cap: int,
    time: TimeScope = CURRENT,
    *,
    scan: tuple[int, int] | None = None,
) -> int:
    """How many embedded rows pass the tenant, container and every filter: what an exact scan would
    read. Counted only up to `cap` + 1. Tag and metadata filters are counted through
    memory_filter_candidates, which can use their GIN indexes (RLS keeps the app from doing so), in
    the time scope of the search. Without them, versions of every time (superseded, expired) are
    counted too: an upper bound, enough to choose a plan, which the (tenant_id, embedding_model,
    container) index of 0009 answers by an index-only scan instead of reading each row.

    `scan` (ef_search, max_scan_tuples): the same statement also makes tune_vector_scan's settings,
    one round trip fewer. They are transaction-local and only read by an HNSW scan, so setting them
    before knowing whether the plan is HNSW costs nothing."""
    inner: sql.Composable
    if _needs_filter_function(filters):
        inner = sql.SQL("SELECT 1 FROM memory_filter_candidates({args})").format(
            args=_filter_function_args(model, cap + 1, container, filters, time)
        )
    else:
        rows = sql.SQL("SELECT 1 FROM memories m WHERE {where} AND m.embedding_model = {model} LIMIT {n}")
        counted = container
        if container is not None and container.include_children:
            # One range, [a.b, a.b/), not the OR of an equality and a range: an OR becomes a BitmapOr,
            # and a bitmap heap scan reads every row (27 ms for crm.* at 100K per tenant, not ~2).
            # It also takes siblings named 'a.b-...': an upper bound all the same.
            counted = ContainerScope(container.name, include_children=True, as_one_range=True)
        inner = rows.format(
            where=predicates.where(tenant_id, counted, filters, None),
            model=sql.Literal(model),
            n=sql.Literal(cap + 1),
        )
    settings: sql.Composable = sql.SQL("")
    if scan is not None:
        settings = sql.SQL(", {}").format(_scan_settings(*scan))
    row = cur.execute(sql.SQL("SELECT count(*) AS n{} FROM ({}) s").format(settings, inner)).fetchone()
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
    cur.execute(sql.SQL("SELECT {}").format(_scan_settings(ef_search, max_scan_tuples)))


def _scan_settings(ef_search: int, max_scan_tuples: int) -> sql.Composable:
    return sql.SQL(
        "set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative_scan, "
        "set_config('hnsw.ef_search', {ef}, true) AS ef_search, "
        "set_config('hnsw.max_scan_tuples', {tuples}, true) AS max_scan_tuples"
    ).format(ef=sql.Literal(str(int(ef_search))), tuples=sql.Literal(str(int(max_scan_tuples))))


def search(cur: TenantTx, plan: SearchPlan) -> list[dict[str, Any]]:
    """Hybrid retrieval in one statement.

    Each leg proposes its top candidates: vector, text, and graph (memories that mention entities
    the query names); the pool is their union. Every pooled memory is then ranked by each leg within
    the pool (its cosine similarity is computed even when only the text leg proposed it, its entity
    hits even when only the vector leg did), and reciprocal-rank fusion merges the ranks. So a memory
    that is first for text but outside the vector top-k is not tied with one that only the vector leg
    found.
    """
    legs: list[sql.Composable] = []
    proposals: list[sql.Composable] = []
    similarity: sql.Composable
    text_rank: sql.Composable
    text_join: sql.Composable
    graph_hits: sql.Composable = sql.SQL("NULL::bigint")
    if plan.vector is not None:
        legs.append(sql.SQL("vec AS MATERIALIZED ({})").format(_vector_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM vec"))
        similarity = sql.SQL(
            "CASE WHEN m.embedding_model = {model} THEN 1 - (m.embedding <=> {q}::vector) END"
        ).format(model=sql.Literal(plan.vector.model), q=sql.Literal(_vector_literal(plan.vector.vector)))
    else:
        similarity = sql.SQL("NULL::float8")
    if plan.text is not None:
        legs.append(sql.SQL("txt AS MATERIALIZED ({})").format(_text_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM txt"))
        text_rank, text_join = sql.SQL("x.text_rank"), sql.SQL("LEFT JOIN txt x ON x.id = m.id")
    else:
        text_rank, text_join = sql.SQL("NULL::real"), sql.SQL("")
    if plan.graph_entities:
        legs.append(sql.SQL("gph AS MATERIALIZED ({})").format(_graph_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM gph"))
        graph_hits = sql.SQL(
            "NULLIF((SELECT count(*) FROM entity_mentions em WHERE em.tenant_id = {t} "
            "AND em.memory_id = m.id AND em.entity_id = ANY({entities}::uuid[])), 0)"
        ).format(t=sql.Literal(plan.tenant_id), entities=sql.Literal(list(plan.graph_entities)))
    query = sql.SQL(
        """WITH {legs},
           pool AS MATERIALIZED ({proposals}),
           scored AS (
               -- Pooled rows are fetched by primary key (= ANY(ARRAY(...))): a join here let the
               -- planner hash-join the whole tenant.
               SELECT m.id, {similarity} AS similarity, {text_rank} AS text_rank,
                      {graph_hits} AS graph_hits
               FROM memories m {text_join}
               WHERE m.tenant_id = {tenant} AND m.id = ANY(ARRAY(SELECT id FROM pool))),
           ranked AS (
               SELECT s.*,
                   CASE WHEN similarity IS NOT NULL
                        THEN rank() OVER (ORDER BY similarity DESC NULLS LAST) END AS vector_rank,
                   CASE WHEN text_rank IS NOT NULL
                        THEN rank() OVER (ORDER BY text_rank DESC NULLS LAST) END AS text_position,
                   CASE WHEN graph_hits IS NOT NULL
                        THEN rank() OVER (ORDER BY graph_hits DESC NULLS LAST) END AS graph_position
               FROM scored s),
           top AS MATERIALIZED (
               SELECT id, similarity, text_rank, graph_hits,
                   coalesce(1.0 / ({k} + vector_rank), 0) + coalesce(1.0 / ({k} + text_position), 0)
                   + coalesce(1.0 / ({k} + graph_position), 0) AS rrf
               FROM ranked
               ORDER BY rrf DESC, similarity DESC NULLS LAST, text_rank DESC NULLS LAST, id
               LIMIT {limit})
           SELECT {columns}, t.similarity, t.text_rank, t.rrf, 'memory' AS kind,
                  t.graph_hits,
                  (SELECT s.document_id FROM memory_sources s WHERE s.memory_id = m.id
                   ORDER BY s.created_at, s.document_id LIMIT 1) AS document_id
           FROM top t JOIN memories m ON m.id = t.id
           WHERE m.tenant_id = {tenant} AND m.id = ANY(ARRAY(SELECT id FROM top))
           ORDER BY t.rrf DESC, t.similarity DESC NULLS LAST, t.text_rank DESC NULLS LAST, m.id"""
    ).format(
        legs=sql.SQL(", ").join(legs),
        proposals=sql.SQL(" UNION ").join(proposals),
        columns=MEMORY_COLUMNS,
        similarity=similarity,
        text_rank=text_rank,
        text_join=text_join,
        graph_hits=graph_hits,
        tenant=sql.Literal(plan.tenant_id),
        k=sql.Literal(RRF_K),
        limit=sql.Literal(plan.limit),
    )
    return cur.execute(query).fetchall()


def query_entities(
    cur: TenantTx, tenant_id: UUID, keys: Sequence[str], named_keys: Sequence[str]
) -> tuple[UUID, ...]:
    """The entities a query names, by key (names and aliases, engram.graph.names.query_keys); those the
    offline heuristic guessed (type `unknown`) only when the query writes them as names. Usually none:
    then search runs without a graph leg."""
    if not keys:
        return ()
    rows = cur.execute(
        "SELECT DISTINCT k.entity_id FROM entity_keys k WHERE k.tenant_id = %s AND k.key = ANY(%s) "
        "AND (k.entity_type <> 'unknown' OR k.key = ANY(%s)) ORDER BY k.entity_id",
        (tenant_id, list(keys), list(named_keys)),
    ).fetchall()
    return tuple(row["entity_id"] for row in rows)


def _graph_leg(plan: SearchPlan) -> sql.Composable:
    """The memories that mention the most of the query's entities, subjects and recent ones first,
    under the search's filters."""
    return sql.SQL(
        """SELECT em.memory_id AS id FROM entity_mentions em JOIN memories m ON m.id = em.memory_id
           WHERE em.tenant_id = {t} AND em.entity_id = ANY({entities}::uuid[]) AND {where}
           GROUP BY em.memory_id
           ORDER BY count(*) DESC, bool_or(em.is_subject) DESC, max(m.created_at) DESC, em.memory_id
           LIMIT {k}"""
    ).format(
        t=sql.Literal(plan.tenant_id),
        entities=sql.Literal(list(plan.graph_entities)),
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        k=sql.Literal(plan.candidates),
    )


def _vector_leg(plan: SearchPlan) -> sql.Composable:
    assert plan.vector is not None
    dims = len(plan.vector.vector)
    literal = sql.Literal(_vector_literal(plan.vector.vector))
    if plan.vector.exact and _needs_filter_function(plan.filters):
        # Tag or metadata filters: the exact scan runs in memory_filter_candidates, which reaches the
        # filtered rows through their GIN index in the search's time scope (under RLS they could only
        # be looked up id by id, ~10x the cost per row). It returns ids only; `scored` reads the rows.
        args = _filter_function_args(
            plan.vector.model, plan.candidates, plan.container, plan.filters, plan.time
        )
        return sql.SQL("SELECT c.id FROM memory_filter_candidates({args}, {q}::vector) c").format(
            args=args, q=literal
        )
    where = predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time)
    if plan.vector.exact:
        # The uncast column does not match the HNSW index expression: an exact scan of the
        # (small) filtered set, so a small tenant or container always gets its true top-k.
        distance = sql.SQL("m.embedding <=> {}::vector").format(literal)
    else:
        distance = sql.SQL("m.embedding::vector({dims}) <=> {q}::vector({dims})").format(
            dims=sql.Literal(dims), q=literal
        )
    return sql.SQL(
        "SELECT m.id FROM memories m "
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
        "SELECT c.id, c.rank AS text_rank "
        "FROM memory_text_candidates(replace(plainto_tsquery('english', {q})::text, ' & ', ' | ')::tsquery, "
        "{k}, {container}, {children}, {types}::text[], {tags}::text[], {agent}, {conversation}, "
        "{metadata}::jsonb, {as_of}::timestamptz, {history}) c"
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
        as_of=sql.Literal(plan.time.as_of),
        history=sql.Literal(plan.time.include_history),
    )


def _needs_filter_function(filters: SearchFilters) -> bool:
    """Filters whose operators are not leakproof, so that RLS keeps their indexes from the app."""
    return bool(filters.tags or filters.metadata)


def _filter_function_args(
    model: str, limit: int, container: ContainerScope | None, filters: SearchFilters, time: TimeScope
) -> sql.Composable:
    return sql.SQL(
        "{model}, {limit}, {container}, {children}, {types}::text[], {tags}::text[], {agent}, "
        "{conversation}, {metadata}::jsonb, {as_of}::timestamptz, {history}"
    ).format(
        model=sql.Literal(model),
        limit=sql.Literal(limit),
        container=sql.Literal(container.name if container else None),
        children=sql.Literal(bool(container and container.include_children)),
        types=sql.Literal(list(filters.memory_type) or None),
        tags=sql.Literal(list(filters.tags) or None),
        agent=sql.Literal(filters.agent_id),
        conversation=sql.Literal(filters.conversation_id),
        metadata=sql.Literal(Jsonb(filters.metadata) if filters.metadata else None),
        as_of=sql.Literal(time.as_of),
        history=sql.Literal(time.include_history),
    )


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
        ).format(live=predicates.live()),
        (tenant_id,),
    ).fetchall()
    models = cur.execute(
        sql.SQL(
            "SELECT coalesce(m.embedding_model, '') AS model, count(*) AS count FROM memories m "
            "WHERE m.tenant_id = %s AND {live} GROUP BY 1"
        ).format(live=predicates.live()),
        (tenant_id,),
    ).fetchall()
    return {"by_container_type": by_container_type, "models": models}
