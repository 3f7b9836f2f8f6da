"""The SQL of search: one fused query over any corpus (memories here; chunks in engram.documents.repo),
the population count that chooses the vector leg's plan, and the memories' own legs.

A corpus supplies its legs (vector, text and, where its rows can name entities, graph) and the
columns of its result rows; the fused query is the same for all. Every function takes a cursor from
`Database.tenant(...)`: RLS limits it to one tenant and party.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db.database import TenantTx
from engram.db.migrate import embedding_index_name
from engram.memories import predicates
from engram.memories.models import SearchFilters
from engram.memories.predicates import ContainerScope, TimeScope
from engram.memories.repo import MEMORY_COLUMNS
from engram.memories.search.plan import TIME_LEG_WEIGHT, SearchPlan

# Reciprocal-rank fusion constant, tuned on SciFact's train claims (make bench --scifact-split train)
# with the pooled ranking below: hybrid nDCG@10 0.667 at k=40, 0.672 at 20, 0.692 at 10, 0.702 at 5.
# A small k weighs each leg's first few results more.
RRF_K = 5
# The longest period stored for a memory (engram.memories.periods: a year, "in 2023"), with a margin.
PERIOD_MAX_DAYS = 400

Leg = Callable[[SearchPlan], sql.Composable]


@dataclass(frozen=True)
class Corpus:
    """What one kind of searched row brings to the fused query. Rows are read as `alias` of `table`."""

    kind: str  # the results' kind: memory, chunk
    table: str  # the table (and the HNSW index's prefix)
    alias: str
    columns: sql.Composable  # the result row, shaped like a memory's, with kind and document_id
    vector_leg: Leg  # ids, nearest first
    text_leg: Leg  # ids with text_rank, best first
    population: Callable[[SearchPlan, int], sql.Composable]  # up to n rows an exact scan would read
    graph_leg: Leg | None = None  # ids of rows that name the most of the query's entities
    people_leg: Leg | None = None  # ids of rows whose text names the query's people, nearest first
    graph_hits: Leg | None = None  # how many of them (and of its people) the pooled row (`alias`) names
    time_leg: Leg | None = None  # ids of rows of the period the query names, nearest first
    time_hits: Leg | None = None  # 2: the pooled row states that period, 1: it is from it
    can_match: Callable[[SearchFilters], bool] = lambda filters: True


def search(cur: TenantTx, corpus: Corpus, plan: SearchPlan) -> list[dict[str, Any]]:
    """Hybrid retrieval in one statement.

    Each leg proposes its top candidates: vector, text, and graph (rows that name entities the query
    names); the pool is their union. Every pooled row is then ranked by each leg within the pool (its
    cosine similarity is computed even when only the text leg proposed it, its entity hits even when
    only the vector leg did), and reciprocal-rank fusion merges the ranks. So a row that is first for
    text but outside the vector top-k is not tied with one that only the vector leg found.
    """
    a = sql.Identifier(corpus.alias)
    legs: list[sql.Composable] = []
    proposals: list[sql.Composable] = []
    similarity: sql.Composable = sql.SQL("NULL::float8")
    text_rank: sql.Composable = sql.SQL("NULL::real")
    text_join: sql.Composable = sql.SQL("")
    graph_hits: sql.Composable = sql.SQL("NULL::float8")
    time_hits: sql.Composable = sql.SQL("NULL::integer")
    if plan.vector is not None:
        legs.append(sql.SQL("vec AS MATERIALIZED ({})").format(corpus.vector_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM vec"))
        similarity = sql.SQL(
            "CASE WHEN {a}.embedding_model = {model} THEN 1 - ({a}.embedding <=> {q}::vector) END"
        ).format(a=a, model=sql.Literal(plan.vector.model), q=sql.Literal(vector_literal(plan.vector.vector)))
    if plan.text is not None:
        legs.append(sql.SQL("txt AS MATERIALIZED ({})").format(corpus.text_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM txt"))
        text_rank, text_join = sql.SQL("x.text_rank"), sql.SQL("LEFT JOIN txt x ON x.id = {}.id").format(a)
    if plan.graph_entities and corpus.graph_leg is not None:
        legs.append(sql.SQL("gph AS MATERIALIZED ({})").format(corpus.graph_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM gph"))
    if plan.people and plan.vector is not None and plan.vector.exact and corpus.people_leg is not None:
        # Only where the vector leg scans the scope anyway: under RLS no index finds names in text.
        legs.append(sql.SQL("ppl AS MATERIALIZED ({})").format(corpus.people_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM ppl"))
    if (plan.graph_entities or plan.people) and corpus.graph_hits is not None:
        graph_hits = corpus.graph_hits(plan)
    if plan.period is not None and corpus.time_leg is not None and corpus.time_hits is not None:
        legs.append(sql.SQL("tim AS MATERIALIZED ({})").format(corpus.time_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM tim"))
        time_hits = corpus.time_hits(plan)
    query = sql.SQL(
        """WITH {legs},
           pool AS MATERIALIZED ({proposals}),
           scored AS (
               -- Pooled rows are fetched by primary key (= ANY(ARRAY(...))): a join here let the
               -- planner hash-join the whole tenant.
               SELECT {a}.id, {similarity} AS similarity, {text_rank} AS text_rank,
                      {graph_hits} AS graph_hits, {time_hits} AS time_hits
               FROM {table} {a} {text_join}
               WHERE {a}.tenant_id = {tenant} AND {a}.id = ANY(ARRAY(SELECT id FROM pool))),
           ranked AS (
               SELECT s.*,
                   CASE WHEN similarity IS NOT NULL
                        THEN rank() OVER (ORDER BY similarity DESC NULLS LAST) END AS vector_rank,
                   CASE WHEN text_rank IS NOT NULL
                        THEN rank() OVER (ORDER BY text_rank DESC NULLS LAST) END AS text_position,
                   CASE WHEN graph_hits IS NOT NULL
                        THEN rank() OVER (ORDER BY graph_hits DESC NULLS LAST, similarity DESC NULLS LAST)
                   END AS graph_position,
                   CASE WHEN time_hits IS NOT NULL
                        THEN rank() OVER (ORDER BY time_hits DESC NULLS LAST)
                   END AS time_position
               FROM scored s),
           top AS MATERIALIZED (
               SELECT id, similarity, text_rank, graph_hits, time_hits,
                   coalesce(1.0 / ({k} + vector_rank), 0) + coalesce(1.0 / ({k} + text_position), 0)
                   + coalesce(1.0 / ({k} + graph_position), 0)
                   + coalesce({time_weight} / ({k} + time_position), 0) AS rrf
               FROM ranked
               ORDER BY rrf DESC, similarity DESC NULLS LAST, text_rank DESC NULLS LAST, id
               LIMIT {limit})
           SELECT {columns}, t.similarity, t.text_rank, t.rrf, t.graph_hits, t.time_hits
           FROM top t JOIN {table} {a} ON {a}.id = t.id
           WHERE {a}.tenant_id = {tenant} AND {a}.id = ANY(ARRAY(SELECT id FROM top))
           ORDER BY t.rrf DESC, t.similarity DESC NULLS LAST, t.text_rank DESC NULLS LAST, {a}.id"""
    ).format(
        legs=sql.SQL(", ").join(legs),
        proposals=sql.SQL(" UNION ").join(proposals),
        a=a,
        table=sql.Identifier(corpus.table),
        columns=corpus.columns,
        similarity=similarity,
        text_rank=text_rank,
        text_join=text_join,
        graph_hits=graph_hits,
        time_hits=time_hits,
        tenant=sql.Literal(plan.tenant_id),
        k=sql.Literal(RRF_K),
        time_weight=sql.Literal(TIME_LEG_WEIGHT),
        limit=sql.Literal(plan.limit),
    )
    return cur.execute(query).fetchall()


def count_population(
    cur: TenantTx, corpus: Corpus, plan: SearchPlan, cap: int, *, scan: tuple[int, int] | None = None
) -> int:
    """How many embedded rows of the corpus an exact scan would read, counted only up to `cap` + 1.

    `scan` (ef_search, max_scan_tuples): the same statement also makes the HNSW scan settings,
    one round trip fewer. They are transaction-local and only read by an HNSW scan, so setting them
    before knowing whether the plan is HNSW costs nothing."""
    settings: sql.Composable = sql.SQL("")
    if scan is not None:
        settings = sql.SQL(", {}").format(_scan_settings(*scan))
    inner = corpus.population(plan, cap + 1)
    row = cur.execute(sql.SQL("SELECT count(*) AS n{} FROM ({}) s").format(settings, inner)).fetchone()
    assert row is not None
    return int(row["n"])


def latest_day(cur: TenantTx, plan: SearchPlan) -> date | None:
    """The latest day any memory in the plan's scope is from (its own day, migration 0021): the day a
    query's relative times ("last June") are read against."""
    row = cur.execute(
        sql.SQL(
            """SELECT lower(p.during) AS day FROM memory_periods p JOIN memories m ON m.id = p.memory_id
               WHERE p.tenant_id = {t} AND NOT p.stated AND {where}
               ORDER BY lower(p.during) DESC LIMIT 1"""
        ).format(
            t=sql.Literal(plan.tenant_id),
            where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        )
    ).fetchone()
    return None if row is None else row["day"]


def own_day(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> date | None:
    """The day a memory is from (not the periods its text states)."""
    row = cur.execute(
        "SELECT lower(during) AS day FROM memory_periods "
        "WHERE tenant_id = %s AND memory_id = %s AND NOT stated",
        (tenant_id, memory_id),
    ).fetchone()
    return None if row is None else row["day"]


def index_rows(cur: TenantTx, table: str, model: str, dimensions: int) -> float | None:
    """Rows in the model's HNSW index on `table`, from planner statistics (no scan); None if it has
    no index."""
    row = cur.execute(
        "SELECT greatest(reltuples, 0) AS n FROM pg_class WHERE oid = to_regclass(%s)",
        (embedding_index_name(model, dimensions, table),),
    ).fetchone()
    return None if row is None else float(row["n"])


def _scan_settings(ef_search: int, max_scan_tuples: int) -> sql.Composable:
    """pgvector 0.8 iterative scans: keep walking the HNSW graph until enough rows pass the filters.
    Transaction-local, so it never leaks to another request (or pins an RDS Proxy connection)."""
    return sql.SQL(
        "set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative_scan, "
        "set_config('hnsw.ef_search', {ef}, true) AS ef_search, "
        "set_config('hnsw.max_scan_tuples', {tuples}, true) AS max_scan_tuples"
    ).format(ef=sql.Literal(str(int(ef_search))), tuples=sql.Literal(str(int(max_scan_tuples))))


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def vector_distance(alias: str, plan: SearchPlan) -> sql.Composable:
    """The cosine distance the vector leg orders by. Exact: the uncast column, which does not match the
    HNSW index expression, so the (small) filtered set is scanned and always yields its true top-k.
    Otherwise the index's own expression, so the planner walks the index."""
    assert plan.vector is not None
    column, q = sql.Identifier(alias, "embedding"), sql.Literal(vector_literal(plan.vector.vector))
    if plan.vector.exact:
        return sql.SQL("{} <=> {}::vector").format(column, q)
    dims = sql.Literal(len(plan.vector.vector))
    return sql.SQL("{col}::vector({dims}) <=> {q}::vector({dims})").format(col=column, dims=dims, q=q)


def text_query(plan: SearchPlan) -> sql.Composable:
    """The query's words, any of them (OR): the text leg ranks by how well each row matches."""
    return sql.SQL("replace(plainto_tsquery('english', {})::text, ' & ', ' | ')::tsquery").format(
        sql.Literal(plan.text)
    )


# --- memories ---------------------------------------------------------------------------------


def _memory_vector_leg(plan: SearchPlan) -> sql.Composable:
    assert plan.vector is not None
    if plan.vector.exact and _needs_filter_function(plan.filters):
        # Tag or metadata filters: the exact scan runs in memory_filter_candidates, which reaches the
        # filtered rows through their GIN index in the search's time scope (under RLS they could only
        # be looked up id by id, ~10x the cost per row). It returns ids only; `scored` reads the rows.
        args = _filter_function_args(
            plan.vector.model, plan.candidates, plan.container, plan.filters, plan.time
        )
        return sql.SQL(
            "SELECT c.id FROM memory_filter_candidates({args}, {q}::vector, p_user_id => {owner}) c"
        ).format(
            args=args,
            q=sql.Literal(vector_literal(plan.vector.vector)),
            owner=sql.Literal(plan.filters.user_id),
        )
    return sql.SQL(
        "SELECT m.id FROM memories m WHERE {where} AND m.embedding_model = {model} "
        "ORDER BY {distance} LIMIT {k}"
    ).format(
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        model=sql.Literal(plan.vector.model),
        distance=vector_distance("m", plan),
        k=sql.Literal(plan.candidates),
    )


def _memory_text_leg(plan: SearchPlan) -> sql.Composable:
    f = plan.filters
    return sql.SQL(
        "SELECT c.id, c.rank AS text_rank FROM memory_text_candidates({q}, {k}, {container}, {children}, "
        "{types}::text[], {tags}::text[], {agent}, {conversation}, {metadata}::jsonb, {as_of}::timestamptz, "
        "{history}, p_user_id => {owner}) c"
    ).format(
        q=text_query(plan), k=sql.Literal(plan.candidates), **scope_arguments(plan.container, f, plan.time)
    )


def _memory_graph_leg(plan: SearchPlan) -> sql.Composable:
    """The memories that mention the query's entities, or entities one relation away from them, under
    the search's filters: those naming the most of them first, then (with a query vector) the nearest,
    else subjects and recent ones."""
    entities = [*plan.graph_entities, *plan.graph_neighbours]
    order: sql.Composable = sql.SQL("bool_or(em.is_subject) DESC, max(m.created_at) DESC")
    if plan.vector is not None:
        order = sql.SQL("min({}) ").format(_exact_distance("m", plan))
    return sql.SQL(
        """SELECT em.memory_id AS id FROM entity_mentions em JOIN memories m ON m.id = em.memory_id
           WHERE em.tenant_id = {t} AND em.entity_id = ANY({entities}::uuid[]) AND {where}
           GROUP BY em.memory_id
           ORDER BY count(*) FILTER (WHERE em.entity_id = ANY({named}::uuid[])) DESC, count(*) DESC,
                    {order}, em.memory_id
           LIMIT {k}"""
    ).format(
        t=sql.Literal(plan.tenant_id),
        entities=sql.Literal(entities),
        named=sql.Literal(list(plan.graph_entities)),
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        order=order,
        k=sql.Literal(plan.candidates),
    )


def _memory_people_leg(plan: SearchPlan) -> sql.Composable:
    """The memories whose text names any of the query's people, nearest to the query first."""
    assert plan.vector is not None
    return sql.SQL(
        "SELECT m.id FROM memories m WHERE {where} AND m.embedding_model = {model} AND m.fts @@ ({names}) "
        "ORDER BY {distance} LIMIT {k}"
    ).format(
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        model=sql.Literal(plan.vector.model),
        names=sql.SQL(" || ").join(
            sql.SQL("plainto_tsquery('english', {})").format(sql.Literal(name)) for name in plan.people
        ),
        distance=vector_distance("m", plan),
        k=sql.Literal(plan.candidates),
    )


def _memory_graph_hits(plan: SearchPlan) -> sql.Composable:
    """How much of the query's graph the pooled memory `m` reaches: one for each entity it names,
    half for each entity one relation away, one for each of the query's people its text names."""
    parts: list[sql.Composable] = []
    if plan.graph_entities or plan.graph_neighbours:
        parts.append(
            sql.SQL(
                "(SELECT coalesce(sum(CASE WHEN em.entity_id = ANY({named}::uuid[]) THEN 1.0 ELSE 0.5 END),"
                " 0) FROM entity_mentions em WHERE em.tenant_id = {t} AND em.memory_id = m.id "
                "AND em.entity_id = ANY({entities}::uuid[]))"
            ).format(
                t=sql.Literal(plan.tenant_id),
                named=sql.Literal(list(plan.graph_entities)),
                entities=sql.Literal([*plan.graph_entities, *plan.graph_neighbours]),
            )
        )
    if plan.people:
        parts.append(
            sql.SQL(
                "(SELECT count(*) FROM unnest({people}::text[]) p(name) "
                "WHERE m.fts @@ plainto_tsquery('english', p.name))"
            ).format(people=sql.Literal(list(plan.people)))
        )
    return sql.SQL("NULLIF({}, 0)::float8").format(sql.SQL(" + ").join(parts))


def _memory_time_leg(plan: SearchPlan) -> sql.Composable:
    """The memories of the period the query names (migration 0021's memory_periods), under the search's
    filters: those whose text states it first, then with a query vector the nearest, else the latest."""
    order: sql.Composable = sql.SQL("max(m.valid_from) DESC")
    if plan.vector is not None:
        order = sql.SQL("min({})").format(_exact_distance("m", plan))
    return sql.SQL(
        """SELECT p.memory_id AS id FROM memory_periods p JOIN memories m ON m.id = p.memory_id
           WHERE {periods} AND {where}
           GROUP BY p.memory_id ORDER BY bool_or(p.stated) DESC, {order}, p.memory_id LIMIT {k}"""
    ).format(
        periods=_periods(plan),
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        order=order,
        k=sql.Literal(plan.candidates),
    )


def _memory_time_hits(plan: SearchPlan) -> sql.Composable:
    return sql.SQL(
        "(SELECT max(CASE WHEN p.stated THEN 2 ELSE 1 END) FROM memory_periods p "
        "WHERE {periods} AND p.memory_id = m.id)"
    ).format(periods=_periods(plan))


def _periods(plan: SearchPlan) -> sql.Composable:
    """The periods (alias p) overlapping the plan's period, through one range of the
    (tenant_id, lower(during)) index, as none is longer than PERIOD_MAX_DAYS."""
    assert plan.period is not None
    start, end = plan.period.start, plan.period.end
    return sql.SQL(
        "p.tenant_id = {t} AND lower(p.during) < {end} AND lower(p.during) > {floor} "
        "AND p.during && daterange({start}, {end})"
    ).format(
        t=sql.Literal(plan.tenant_id),
        start=sql.Literal(start),
        end=sql.Literal(end),
        floor=sql.Literal(start - timedelta(days=PERIOD_MAX_DAYS)),
    )


def _exact_distance(alias: str, plan: SearchPlan) -> sql.Composable:
    assert plan.vector is not None
    return sql.SQL("CASE WHEN {a}.embedding_model = {model} THEN {a}.embedding <=> {q}::vector END").format(
        a=sql.Identifier(alias),
        model=sql.Literal(plan.vector.model),
        q=sql.Literal(vector_literal(plan.vector.vector)),
    )


def _memory_population(plan: SearchPlan, n: int) -> sql.Composable:
    """Tag and metadata filters are counted through memory_filter_candidates, which can use their GIN
    indexes (RLS keeps the app from doing so), in the time scope of the search. Without them, versions
    of every time (superseded, expired) are counted too: an upper bound, enough to choose a plan,
    which the (tenant_id, embedding_model, container) index of 0009 answers by an index-only scan
    instead of reading each row."""
    assert plan.vector is not None
    if _needs_filter_function(plan.filters):
        return sql.SQL("SELECT 1 FROM memory_filter_candidates({args}, p_user_id => {owner})").format(
            args=_filter_function_args(plan.vector.model, n, plan.container, plan.filters, plan.time),
            owner=sql.Literal(plan.filters.user_id),
        )
    return sql.SQL("SELECT 1 FROM memories m WHERE {where} AND m.embedding_model = {model} LIMIT {n}").format(
        where=predicates.where(plan.tenant_id, counted_scope(plan.container), plan.filters, None),
        model=sql.Literal(plan.vector.model),
        n=sql.Literal(n),
    )


def counted_scope(container: ContainerScope | None) -> ContainerScope | None:
    """The container scope as one range, [a.b, a.b/), not the OR of an equality and a range: an OR
    becomes a BitmapOr, and a bitmap heap scan reads every row (27 ms for crm.* at 100K per tenant,
    not ~2). It also takes siblings named 'a.b-...': an upper bound all the same."""
    if container is not None and container.include_children:
        return ContainerScope(container.name, include_children=True, as_one_range=True)
    return container


def _needs_filter_function(filters: SearchFilters) -> bool:
    """Filters whose operators are not leakproof, so that RLS keeps their indexes from the app."""
    return bool(filters.tags or filters.metadata)


def _filter_function_args(
    model: str, limit: int, container: ContainerScope | None, filters: SearchFilters, time: TimeScope
) -> sql.Composable:
    return sql.SQL(
        "{model}, {limit}, {container}, {children}, {types}::text[], {tags}::text[], {agent}, "
        "{conversation}, {metadata}::jsonb, {as_of}::timestamptz, {history}"
    ).format(model=sql.Literal(model), limit=sql.Literal(limit), **scope_arguments(container, filters, time))


def scope_arguments(
    container: ContainerScope | None, filters: SearchFilters, time: TimeScope
) -> dict[str, sql.Composable]:
    """The candidate functions' scope arguments (migrations/0010, 0012), as SQL literals by name."""
    return {
        "container": sql.Literal(container.name if container else None),
        "children": sql.Literal(bool(container and container.include_children)),
        "types": sql.Literal(list(filters.memory_type) or None),
        "tags": sql.Literal(list(filters.tags) or None),
        "agent": sql.Literal(filters.agent_id),
        "conversation": sql.Literal(filters.conversation_id),
        "metadata": sql.Literal(Jsonb(filters.metadata) if filters.metadata else None),
        "as_of": sql.Literal(time.as_of),
        "history": sql.Literal(time.include_history),
        "owner": sql.Literal(filters.user_id),
    }


MEMORIES = Corpus(
    kind="memory",
    table="memories",
    alias="m",
    columns=sql.SQL(
        "{columns}, 'memory' AS kind, (SELECT s.document_id FROM memory_sources s WHERE s.memory_id = m.id "
        "ORDER BY s.created_at, s.document_id LIMIT 1) AS document_id"
    ).format(columns=MEMORY_COLUMNS),
    vector_leg=_memory_vector_leg,
    text_leg=_memory_text_leg,
    population=_memory_population,
    graph_leg=_memory_graph_leg,
    people_leg=_memory_people_leg,
    graph_hits=_memory_graph_hits,
    time_leg=_memory_time_leg,
    time_hits=_memory_time_hits,
)
