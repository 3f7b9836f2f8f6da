"""The SQL of search: one fused query over any corpus (memories here; chunks in engram.documents.repo),
the population count that chooses the vector leg's plan, and the memories' own legs.

A corpus supplies its legs (vector, text and, where its rows can name entities, graph; memories also
people and time) and the columns of its result rows; the fused query is the same for all. The
statement is run by `Database.run(...)` (one round trip): RLS limits it to one tenant and party.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db.container_indexes import container_index_name
from engram.db.database import TenantTx
from engram.db.migrate import embedding_index_name
from engram.db.tenant_indexes import tenant_index_name
from engram.graph.repo import any_entities_query, entities_named_query, neighbours_query
from engram.memories import predicates
from engram.memories.models import SearchFilters
from engram.memories.predicates import ContainerScope, TimeScope
from engram.memories.repo import MEMORY_COLUMNS
from engram.memories.search import fusion, text
from engram.memories.search.plan import SearchPlan

# The longest period stored for a memory (engram.memories.periods: a year, "in 2023"), with a margin.
PERIOD_MAX_DAYS = 400
# Entities one relation away from the query's that the graph leg reaches (the most related first).
MAX_NEIGHBOURS = 50
_ALWAYS = sql.SQL("true")

Leg = Callable[[SearchPlan], sql.Composable]


@dataclass(frozen=True)
class Corpus:
    """What one kind of searched row brings to the fused query. Rows are read as `alias` of `table`;
    their terms are `postings` in text_postings (migrations/0014)."""

    kind: str  # the results' kind: memory, chunk
    table: str  # the table (and the HNSW index's prefix)
    alias: str
    postings: str  # the corpus's key in text_postings: 'm', 'c'
    columns: sql.Composable  # the result row, shaped like a memory's, with kind and document_id
    vector_leg: Leg  # ids, nearest first (exact or through the index, as plan.vector.exact says)
    accepts: Leg  # the rows (as `alias`) the search may return: tenant, time, owner, filters
    population: Callable[[SearchPlan, sql.Composable], sql.Composable]  # up to n rows an exact scan reads
    # (plan, n): up to n ids of every row `accepts` takes, for the text leg to score together when its
    # filters make them few (text.leg_within); None where no filter narrows the container scope (the
    # postings' own: the rows the text leg checks then nearly all pass).
    scope_ids: Callable[[SearchPlan, sql.Composable], sql.Composable | None] = lambda plan, n: None
    graph_leg: Leg | None = None  # ids of rows that name the most of the query's entities (CTE `ents`)
    graph_hits: Leg | None = None  # how many of them the pooled row (`alias`) names (1 each; 0.5 `nbrs`)
    # The people leg: rows whose terms hold a name the query writes (CTE `people`, from the postings).
    names_people: bool = False
    time_leg: Leg | None = None  # ids of rows of the period the query names, nearest first
    time_match: Leg | None = None  # 0-1: the pooled row's text states that period (1), it is from it
    can_match: Callable[[SearchFilters], bool] = lambda filters: True
    # (any): whether the tenant has any row of the corpus at all. Set for a corpus many tenants have
    # none of (chunks): its fused statement is then planned (~3 ms) only once the tenant has rows.
    any_rows: Callable[[UUID], sql.Composable] | None = None
    tenant_indexes: bool = False  # large tenants have an HNSW index of their own (engram.db.tenant_indexes)


def statement(corpus: Corpus, plan: SearchPlan) -> sql.Composed:
    """Hybrid retrieval in one statement.

    Each leg proposes its top candidates: vector, text (BM25, engram.memories.search.text), graph
    (rows that name entities the query names, or entities one relation away from them), people (rows
    whose text names a person the query names) and time (rows of the period the query names); the
    pool is their union. Every pooled row is then scored by each leg that ran (its cosine similarity
    even when only the text leg proposed it, its BM25 score even when only the vector leg did, its
    entity, people and time matches), and the fused score (engram.memories.search.fusion) orders
    them. So a row that is first for text but outside the vector top-k is not tied with one that only
    the vector leg found.

    The vector leg scans the filtered rows exactly when they are few, and walks the HNSW index when
    they are many (plan.exact_cap): the statement counts them first, up to the cap, and runs only the
    branch the count picks (a false one-time filter skips the other); the count is returned in each
    row (`population`). When the planner already knows which side of the cap the population is on
    (exact_cap None), only that branch is written. The graph leg looks up the
    entities the query names itself. One statement, one round trip.
    """
    a = sql.Identifier(corpus.alias)
    tenant = sql.Literal(plan.tenant_id)
    legs: list[sql.Composable] = []
    proposals: list[sql.Composable] = []
    similarity: sql.Composable = sql.SQL("NULL::float8")
    text_rank: sql.Composable = sql.SQL("NULL::float8")
    coverage: sql.Composable = sql.SQL("NULL::float8")
    text_join: sql.Composable = sql.SQL("")
    graph_hits: sql.Composable = sql.SQL("NULL::float8")
    people_hits: sql.Composable = sql.SQL("NULL::float8")
    time_match: sql.Composable = sql.SQL("NULL::float8")
    # The shares each leg that runs scores (columns of `shares`), by their names in fusion.weights.
    shares: dict[str, sql.Composable] = {}
    graph_share: sql.Composable = sql.SQL("NULL::float8")
    people_share: sql.Composable = sql.SQL("NULL::float8")
    scope_listed = False
    if plan.vector is not None:
        legs.append(sql.SQL("vec AS MATERIALIZED ({})").format(_vector_leg(corpus, plan, legs)))
        proposals.append(sql.SQL("SELECT id FROM vec"))
        similarity = sql.SQL(
            "CASE WHEN {a}.embedding_model = {model} THEN 1 - ({a}.embedding <=> {q}::vector) END"
        ).format(a=a, model=sql.Literal(plan.vector.model), q=plan.vector.value)
        shares["vector"] = sql.SQL("similarity")
    if plan.text is not None:
        legs.append(text.bm25_cte(tenant, corpus.postings, plan.text, plan.container))
        leg, scope_listed = _text_leg(corpus, plan, legs)
        legs.append(sql.SQL("txt AS MATERIALIZED ({})").format(leg))
        proposals.append(sql.SQL("SELECT id FROM txt"))
        text_rank, coverage = sql.SQL("b.score"), sql.SQL("b.coverage")
        text_join = sql.SQL("LEFT JOIN bm25 b ON b.id = {}.id").format(a)
        shares["text"], shares["text_relative"] = sql.SQL("text_rank"), sql.SQL("text_relative")
        shares["coverage"] = sql.SQL("coverage")
    if plan.graph is not None and corpus.graph_leg is not None and corpus.graph_hits is not None:
        ents = entities_named_query(plan.tenant_id, plan.graph.keys, plan.graph.named)
        legs.append(sql.SQL("ents AS MATERIALIZED ({})").format(ents))
        legs.append(
            sql.SQL("nbrs AS MATERIALIZED ({})").format(
                neighbours_query(plan.tenant_id, plan.time.as_of, MAX_NEIGHBOURS)
            )
        )
        legs.append(sql.SQL("gph AS MATERIALIZED ({})").format(corpus.graph_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM gph"))
        # Without entities (the usual case) the per-row count is skipped: a one-time CASE.
        graph_hits = sql.SQL("CASE WHEN EXISTS (SELECT 1 FROM ents) THEN {}::float8 END").format(
            corpus.graph_hits(plan)
        )
        # NULL (none) when the row reaches none of the query's entities, or the query names no known one.
        graph_share = sql.SQL(
            "nullif(least(1.0, coalesce(graph_hits / nullif((SELECT count(*) FROM ents), 0), 0)), 0)"
        )
        shares["graph"] = sql.SQL("graph")
    if plan.people and corpus.names_people:
        legs.append(sql.SQL("people AS MATERIALIZED ({})").format(_people(plan)))
        legs.append(sql.SQL("ppl AS MATERIALIZED ({})").format(_people_leg(corpus, plan)))
        proposals.append(sql.SQL("SELECT id FROM ppl"))
        people_hits = _people_hits(corpus, plan)
        people_share = sql.SQL("nullif(people_hits / nullif((SELECT count(*) FROM people), 0), 0)")
        shares["people"] = sql.SQL("people")
    if plan.period is not None and corpus.time_leg is not None and corpus.time_match is not None:
        legs.append(sql.SQL("tim AS MATERIALIZED ({})").format(corpus.time_leg(plan)))
        proposals.append(sql.SQL("SELECT id FROM tim"))
        time_match = corpus.time_match(plan)
        shares["time"] = sql.SQL("time_match")
    query = sql.SQL(
        """WITH {legs},
           pool AS MATERIALIZED ({proposals}),
           scored AS (
               -- Pooled rows are fetched by primary key (= ANY(ARRAY(...))): a join here let the
               -- planner hash-join the whole tenant.
               SELECT {a}.id, {similarity} AS similarity, {text_rank}::float8 AS text_rank,
                      {coverage}::float8 AS coverage, {graph_hits} AS graph_hits,
                      {people_hits} AS people_hits, {time_match} AS time_match
               FROM {table} {a} {text_join}
               WHERE {a}.tenant_id = {tenant} AND {a}.id = ANY(ARRAY(SELECT id FROM pool))),
           -- Every share the fused score adds up, each its own column (a result's `scores`).
           shares AS (
               SELECT id, similarity, text_rank, {text_relative}::float8 AS text_relative, coverage,
                      {graph_share}::float8 AS graph, {people_share}::float8 AS people, time_match
               FROM scored),
           top AS MATERIALIZED (
               SELECT id, similarity, text_rank, text_relative, coverage, graph, people, time_match,
                      {fused} AS fused
               FROM shares
               ORDER BY fused DESC, similarity DESC NULLS LAST, text_rank DESC NULLS LAST, id
               LIMIT {limit})
           SELECT {columns}, t.similarity, t.text_rank, t.text_relative, t.coverage, t.graph, t.people,
                  t.time_match, t.fused{population}
           FROM top t JOIN {table} {a} ON {a}.id = t.id
           WHERE {a}.tenant_id = {tenant} AND {a}.id = ANY(ARRAY(SELECT id FROM top))
           ORDER BY t.fused DESC, t.similarity DESC NULLS LAST, t.text_rank DESC NULLS LAST, {a}.id"""
    ).format(
        legs=sql.SQL(", ").join(legs),
        proposals=sql.SQL(" UNION ").join(proposals),
        a=a,
        table=sql.Identifier(corpus.table),
        columns=corpus.columns,
        similarity=similarity,
        text_rank=text_rank,
        coverage=coverage,
        text_join=text_join,
        graph_hits=graph_hits,
        people_hits=people_hits,
        time_match=time_match,
        text_relative=fusion.text_relative(shares),
        graph_share=graph_share,
        people_share=people_share,
        fused=fusion.fused(shares),
        tenant=tenant,
        limit=sql.Literal(plan.limit),
        # What the count found (up to exact_cap + 1), or, without a vector, the size of the listed
        # scope (up to scope_cap + 1): the planner keeps it for the next searches of the same
        # population (planner.SearchPlanner.counted).
        population=_population_column(plan, scope_listed),
    )
    return query


def any_entities(tenant_id: UUID) -> sql.Composable:
    """(any): whether the tenant has any entity the graph leg could find (engram.graph.repo). Without
    one, the graph leg finds nothing and adds nothing to any row's score."""
    return any_entities_query(tenant_id)


def latest_day(plan: SearchPlan) -> sql.Composable:
    """(day): the latest day any memory in the plan's scope is from (its own day, migration 0021): the
    day a query's relative times ("last June") are read against."""
    return sql.SQL(
        """SELECT lower(p.during) AS day FROM memory_periods p JOIN memories m ON m.id = p.memory_id
           WHERE p.tenant_id = {t} AND NOT p.stated AND {where}
           ORDER BY lower(p.during) DESC LIMIT 1"""
    ).format(
        t=sql.Literal(plan.tenant_id),
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
    )


def event_day(corpus: Corpus, plan: SearchPlan) -> sql.Composable:
    """(day): the day the best match of `plan` (a text search for an event: "the move") is from."""
    return sql.SQL(
        """SELECT lower(p.during) AS day FROM memory_periods p
           WHERE p.tenant_id = {t} AND NOT p.stated
             AND p.memory_id = (SELECT f.id FROM ({found}) f LIMIT 1)"""
    ).format(t=sql.Literal(plan.tenant_id), found=statement(corpus, plan))


def _text_leg(corpus: Corpus, plan: SearchPlan, ctes: list[sql.Composable]) -> tuple[sql.Composable, bool]:
    """The text leg's query, and whether it lists the search's scope (the CTE `scoped`, added to
    `ctes`): its best rows checked one by one against the filters (text.leg), or, where the filters
    leave few rows and the corpus can list them (`scope_ids`), the best among those rows
    (text.leg_within). With a vector, "few" is where the vector leg scans them exactly: with an
    exact_cap the population count picks one at run time (the list is read only under the cap).
    Without one, the list is taken up to the plan's scope_cap + 1 rows, and its size picks."""
    checked = text.leg(corpus.table, corpus.alias, corpus.accepts(plan), plan.candidates)
    most: int | None
    runs: sql.Composable
    if plan.vector is None:
        most, runs = plan.scope_cap, _ALWAYS
    elif plan.exact_cap is not None or plan.vector.exact:
        most, runs = text.MAX_SCOPED, _scans_exactly(plan)
    else:
        most, runs = None, _ALWAYS
    scope = None if most is None else corpus.scope_ids(plan, sql.Literal(most + 1))
    if scope is None:
        return checked, False
    ctes.append(sql.SQL("scoped AS MATERIALIZED ({})").format(scope))
    # Counted once, and only if read: behind a false `runs`, neither the list nor its count is made.
    ctes.append(sql.SQL("scoped_count AS MATERIALIZED (SELECT count(*) AS n FROM scoped)"))
    within = sql.SQL("{runs} AND (SELECT n FROM scoped_count) <= {most}").format(
        runs=runs, most=sql.Literal(most)
    )
    leg = sql.SQL(
        "SELECT w.id, w.text_rank FROM ({within_leg}) w WHERE {within} "
        "UNION ALL "
        "SELECT c.id, c.text_rank FROM ({checked}) c WHERE NOT ({within})"
    ).format(within_leg=text.leg_within("scoped", plan.candidates), within=within, checked=checked)
    return leg, True


def _population_column(plan: SearchPlan, scope_listed: bool) -> sql.Composable:
    if plan.vector is not None and plan.exact_cap is not None:
        return sql.SQL(", (SELECT n FROM population) AS population")
    if plan.vector is None and scope_listed:
        return sql.SQL(", (SELECT n FROM scoped_count) AS population")
    return sql.SQL("")


def lists_scope(corpus: Corpus, plan: SearchPlan) -> bool:
    """Whether the corpus can list the rows of the plan's scope for the text leg (Corpus.scope_ids)."""
    return corpus.scope_ids(plan, sql.Literal(1)) is not None


def _scans_exactly(plan: SearchPlan) -> sql.Composable:
    """Whether the vector leg scans its filtered rows exactly (they are few): known when the plan was
    made (true, false), else the statement's population count under the cap (_vector_leg)."""
    assert plan.vector is not None
    if plan.exact_cap is not None:
        return sql.SQL("(SELECT n FROM population) <= {}").format(sql.Literal(plan.exact_cap))
    return _ALWAYS if plan.vector.exact else sql.SQL("false")


def _people(plan: SearchPlan) -> sql.Composable:
    """(terms): each name the query writes, as the text index's terms (engram_query_terms)."""
    return sql.SQL(
        "SELECT u.terms FROM (SELECT engram_query_terms(n) AS terms FROM unnest({names}::text[]) n) u "
        "WHERE cardinality(u.terms) > 0"
    ).format(names=sql.Literal(list(plan.people)))


def _people_leg(corpus: Corpus, plan: SearchPlan) -> sql.Composable:
    """The rows whose postings hold every term of one of the query's names (`people`), in the search's
    scope, nearest to the query first. Only where the vector leg scans its scope exactly anyway (a
    common name can be in most of a large tenant's rows)."""
    a = sql.Identifier(corpus.alias)
    order: sql.Composable = sql.SQL("{}.created_at DESC").format(a)
    runs: sql.Composable = _ALWAYS
    if plan.vector is not None:
        order = sql.SQL("{} NULLS LAST").format(_exact_distance(corpus.alias, plan))
        runs = _scans_exactly(plan)
    named = sql.SQL(
        """SELECT p.doc_id FROM people pp CROSS JOIN LATERAL unnest(pp.terms) t(term)
           JOIN text_postings p ON p.tenant_id = {t} AND p.corpus = {corpus} AND p.term = t.term
           WHERE {scope}
           GROUP BY pp.terms, p.doc_id HAVING count(*) = cardinality(pp.terms)"""
    ).format(
        t=sql.Literal(plan.tenant_id),
        corpus=sql.Literal(corpus.postings),
        scope=text.container_range(plan.container),
    )
    return sql.SQL(
        """SELECT {a}.id FROM {table} {a}
           WHERE {runs} AND {a}.tenant_id = {t} AND {a}.id = ANY(ARRAY({named})) AND {accepts}
           ORDER BY {order}, {a}.id LIMIT {k}"""
    ).format(
        a=a,
        table=sql.Identifier(corpus.table),
        runs=runs,
        t=sql.Literal(plan.tenant_id),
        named=named,
        accepts=corpus.accepts(plan),
        order=order,
        k=sql.Literal(plan.candidates),
    )


def _people_hits(corpus: Corpus, plan: SearchPlan) -> sql.Composable:
    """How many of the query's names (`people`) the pooled row's terms hold whole (postings lookups
    by primary key)."""
    a = sql.Identifier(corpus.alias)
    return sql.SQL(
        """(SELECT count(*) FROM people pp WHERE NOT EXISTS (
               SELECT 1 FROM unnest(pp.terms) t(term) WHERE NOT EXISTS (
                   SELECT 1 FROM text_postings p
                   WHERE p.tenant_id = {t} AND p.corpus = {corpus} AND p.term = t.term
                     AND p.container = {a}.container AND p.doc_id = {a}.id)))::float8"""
    ).format(t=sql.Literal(plan.tenant_id), corpus=sql.Literal(corpus.postings), a=a)


def _vector_leg(corpus: Corpus, plan: SearchPlan, ctes: list[sql.Composable]) -> sql.Composable:
    """The vector leg's query. With an exact_cap, both ways are planned and the population count (a
    CTE added to `ctes`) picks one at run time."""
    assert plan.vector is not None
    if plan.exact_cap is None:
        return corpus.vector_leg(plan)
    cap = sql.Literal(plan.exact_cap)
    ctes.append(
        sql.SQL("population AS MATERIALIZED (SELECT count(*) AS n FROM ({}) p)").format(
            corpus.population(plan, sql.Literal(plan.exact_cap + 1))
        )
    )
    exact = replace(plan, vector=replace(plan.vector, exact=True))
    walk = replace(plan, vector=replace(plan.vector, exact=False))
    return sql.SQL(
        "SELECT e.id FROM ({exact}) e WHERE (SELECT n FROM population) <= {cap} "
        "UNION ALL "
        "SELECT w.id FROM ({walk}) w WHERE (SELECT n FROM population) > {cap}"
    ).format(exact=corpus.vector_leg(exact), walk=corpus.vector_leg(walk), cap=cap)


def index_rows(
    cur: TenantTx, table: str, tenant_id: UUID | None, model: str, dimensions: int, scope: str | None
) -> float | None:
    """Rows in an HNSW index on `table`, from planner statistics (no scan): a container scope's own (with
    `tenant_id` and `scope`, engram.db.container_indexes), the tenant's own (with `tenant_id`) or the
    model's shared one; None if there is no such index."""
    if tenant_id is None:
        name = embedding_index_name(model, dimensions, table)
    elif scope is None:
        name = tenant_index_name(tenant_id, model, dimensions)
    else:
        name = container_index_name(tenant_id, model, dimensions, scope)
    row = cur.execute(
        "SELECT greatest(reltuples, 0) AS n FROM pg_class WHERE oid = to_regclass(%s)", (name,)
    ).fetchone()
    return None if row is None else float(row["n"])


def model_dimensions(
    cur: TenantTx, tenant_id: UUID, model: str, tables: Sequence[str]
) -> dict[str, int | None]:
    """Per searched table (memories, chunks): the dimensions of a vector of `model` among the rows the
    transaction's party sees, None where there is none. One statement (each table's model index)."""
    columns = sql.SQL(", ").join(
        sql.SQL(
            "(SELECT vector_dims(t.embedding) FROM {table} t WHERE t.tenant_id = {t} "
            "AND t.embedding_model = {model} LIMIT 1) AS {name}"
        ).format(
            table=sql.Identifier(table),
            t=sql.Literal(tenant_id),
            model=sql.Literal(model),
            name=sql.Identifier(table),
        )
        for table in tables
    )
    row = cur.execute(sql.SQL("SELECT {}").format(columns)).fetchone()
    assert row is not None
    return {table: row[table] for table in tables}


def stored_models(cur: TenantTx, tenant_id: UUID, tables: Sequence[str]) -> list[str]:
    """The embedding models the rows of `tables` (memories, chunks) the transaction's party sees have
    vectors of. Read only to explain a refused embedding_model (it scans the tenant's model index)."""
    selects = sql.SQL(" UNION ").join(
        sql.SQL(
            "SELECT embedding_model AS model FROM {table} "
            "WHERE tenant_id = {t} AND embedding_model IS NOT NULL"
        ).format(table=sql.Identifier(table), t=sql.Literal(tenant_id))
        for table in tables
    )
    rows = cur.execute(sql.SQL("{} ORDER BY 1").format(selects)).fetchall()
    return [str(row["model"]) for row in rows]


def scan_settings(ef_search: int, max_scan_tuples: int) -> dict[str, str]:
    """pgvector 0.8 iterative scans: keep walking the HNSW graph until enough rows pass the filters.
    Set transaction-local (Database.run), so they never leak to another request (or pin an RDS Proxy
    connection); only an index walk reads them."""
    return {
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.ef_search": str(int(ef_search)),
        "hnsw.max_scan_tuples": str(int(max_scan_tuples)),
    }


def vector_distance(alias: str, plan: SearchPlan) -> sql.Composable:
    """The cosine distance the vector leg orders by. Exact: the uncast column, which does not match the
    HNSW index expression, so the (small) filtered set is scanned and always yields its true top-k.
    Otherwise the index's own expression, so the planner walks the index."""
    assert plan.vector is not None
    column, q = sql.Identifier(alias, "embedding"), plan.vector.value
    if plan.vector.exact:
        return sql.SQL("{} <=> {}::vector").format(column, q)
    dims = sql.Literal(len(plan.vector.vector))
    return sql.SQL("{col}::vector({dims}) <=> {q}::vector({dims})").format(col=column, dims=dims, q=q)


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
            q=plan.vector.value,
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


def _memory_accepts(plan: SearchPlan) -> sql.Composable:
    return predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time)


def _memory_graph_leg(plan: SearchPlan) -> sql.Composable:
    """The memories that mention the query's entities (`ents`), or entities one relation away from them
    (`nbrs`), under the search's filters: those naming the most of the query's first, then (with a
    query vector) the nearest, else subjects and recent ones."""
    order: sql.Composable = sql.SQL("bool_or(em.is_subject) DESC, max(m.created_at) DESC")
    if plan.vector is not None:
        order = sql.SQL("min({})").format(_exact_distance("m", plan))
    return sql.SQL(
        """SELECT em.memory_id AS id FROM entity_mentions em JOIN memories m ON m.id = em.memory_id
           WHERE em.tenant_id = {t}
             AND em.entity_id = ANY(ARRAY(SELECT entity_id FROM ents UNION ALL SELECT entity_id FROM nbrs))
             AND {where}
           GROUP BY em.memory_id
           ORDER BY count(*) FILTER (WHERE em.entity_id = ANY(ARRAY(SELECT entity_id FROM ents))) DESC,
                    count(*) DESC, {order}, em.memory_id
           LIMIT {k}"""
    ).format(
        t=sql.Literal(plan.tenant_id),
        where=predicates.where(plan.tenant_id, plan.container, plan.filters, plan.time),
        order=order,
        k=sql.Literal(plan.candidates),
    )


def _memory_graph_hits(plan: SearchPlan) -> sql.Composable:
    """One for each of the query's entities the pooled memory `m` names, half for each entity one
    relation away."""
    return sql.SQL(
        "NULLIF((SELECT coalesce(sum(CASE WHEN em.entity_id = ANY(ARRAY(SELECT entity_id FROM ents)) "
        "THEN 1.0 ELSE 0.5 END), 0) FROM entity_mentions em WHERE em.tenant_id = {t} AND em.memory_id = m.id "
        "AND em.entity_id = ANY(ARRAY(SELECT entity_id FROM ents UNION ALL SELECT entity_id FROM nbrs))), 0)"
    ).format(t=sql.Literal(plan.tenant_id))


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


def _memory_time_match(plan: SearchPlan) -> sql.Composable:
    """1 when the pooled memory `m`'s text states the query's period, fusion.OWN_DAY_MATCH when it is
    only from it, else NULL."""
    return sql.SQL(
        "(SELECT max(CASE WHEN p.stated THEN 1.0 ELSE {own} END) FROM memory_periods p "
        "WHERE {periods} AND p.memory_id = m.id)::float8"
    ).format(own=sql.Literal(fusion.OWN_DAY_MATCH), periods=_periods(plan))


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
        q=plan.vector.value,
    )


def _memory_population(plan: SearchPlan, n: sql.Composable) -> sql.Composable:
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
        n=n,
    )


def _memory_scope_ids(plan: SearchPlan, n: sql.Composable) -> sql.Composable | None:
    """The memories a filter narrows the search to, beyond its container and time scopes (an owner, an
    agent, a conversation, tags, metadata): tag and metadata filters through memory_scope_ids
    (migrations/0029), which reaches them by the GIN indexes RLS keeps from the app; the others by
    their B-tree indexes, under RLS. Any embedding model's, in the search's time scope. None without
    such a filter: the container scope is the postings' own. Memory types alone are left to the row
    checks: there are six, each usually a large share of a scope, and listing a type's 1/6 of a
    10K-memory tenant cost more than checking (make bench data, p50 +1.8 ms)."""
    filters = plan.filters
    if _needs_filter_function(filters):
        return sql.SQL("SELECT id FROM memory_scope_ids({n}, {scope}, p_user_id => {owner})").format(
            n=n,
            scope=_scope_function_args(plan.container, filters, plan.time),
            owner=sql.Literal(filters.user_id),
        )
    if not (filters.user_id or filters.agent_id or filters.conversation_id):
        return None
    return sql.SQL("SELECT m.id FROM memories m WHERE {where} LIMIT {n}").format(
        where=_memory_accepts(plan), n=n
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
    model: str,
    limit: int | sql.Composable,
    container: ContainerScope | None,
    filters: SearchFilters,
    time: TimeScope,
) -> sql.Composable:
    return sql.SQL("{model}, {limit}, {scope}").format(
        model=sql.Literal(model),
        limit=limit if isinstance(limit, sql.Composable) else sql.Literal(limit),
        scope=_scope_function_args(container, filters, time),
    )


def _scope_function_args(
    container: ContainerScope | None, filters: SearchFilters, time: TimeScope
) -> sql.Composable:
    """The scope arguments the candidate functions share, in their order (the owner aside: named)."""
    return sql.SQL(
        "{container}, {children}, {types}::text[], {tags}::text[], {agent}, {conversation}, "
        "{metadata}::jsonb, {as_of}::timestamptz, {history}"
    ).format(**scope_arguments(container, filters, time))


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
    postings="m",
    vector_leg=_memory_vector_leg,
    accepts=_memory_accepts,
    population=_memory_population,
    scope_ids=_memory_scope_ids,
    graph_leg=_memory_graph_leg,
    graph_hits=_memory_graph_hits,
    names_people=True,
    time_leg=_memory_time_leg,
    time_match=_memory_time_match,
    tenant_indexes=True,
)
