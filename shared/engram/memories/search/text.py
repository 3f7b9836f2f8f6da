"""The text leg of search: BM25 over a corpus's postings (migrations/0014; scored by engram_bm25,
0036), as SQL fragments of the fused query (repo.py).

Terms, document frequencies and lengths live in `text_postings`, `text_stats` and
`text_stat_deltas`, kept in step with the rows by triggers in the writing transaction; the app reads
them under RLS with their B-tree indexes. A search scores the postings of its terms in the
container scope (one index range per term), sorts them, and keeps the best rows that pass every
other filter (time, owner, type, tags, ...): checking rows in score order until it has enough (leg), or,
when a filter leaves few rows that the corpus can list (an owner, agent, conversation, tag or metadata
filter: repo.Corpus.scope_ids), taking the best of the matches among those rows (leg_within).
"""

from __future__ import annotations

from uuid import UUID

from psycopg import sql

from engram.db.database import TenantTx
from engram.memories.predicates import ContainerScope

# BM25's term-frequency saturation and length normalisation, chosen on SciFact's train split (the
# `make bench` scifact section prints the split next to each setting): nDCG@10 of the text leg was
# flat within 0.003 for k1 in [0.9, 1.5], b in [0.3, 0.75].
K1 = 1.2
B = 0.5
# Rows checked against the filters, best text score first, before the leg gives up: a filter that
# rejects nearly every text match in the container scope yields fewer text candidates rather than an
# unbounded scan (the vector and graph legs are not affected).
MAX_CHECKED = 4000
# The first rows checked come from a sort bounded by this many times the candidates wanted; the rest
# of the MAX_CHECKED from a second sort that runs only when filters reject most of the first. A
# top-N sort's cost grows with its bound: at 100K memories a query's 9K scored documents cost ~4 ms
# to sort into the best 4000, against a fraction of that for the best 480. 12 keeps a filter that
# passes a tenth of the matches within the first run (~48 of 480); narrower filters mostly have their
# scope listed instead (leg_within). make bench's 10 % tag filter at 100K, hybrid, p95 ms, two
# alternating rounds (/tmp/tags_first.py): 16.2, 15.5 with 5; 14.4, 14.7 with 12.
FIRST_CHECKED_PER_CANDIDATE = 12
# The most rows a filtered scope may hold for the text leg to score them together (leg_within) rather
# than check its best rows one by one (leg), in a search whose vector leg scans its scope exactly: the
# scope is then at most the exact-scan cap (engram.memories.search.planner: ~18K rows for a
# million-row index), and this bound holds when rows with no vector of the search's model swell it.
# (Without a vector, the plan's scope_cap bounds it.)
MAX_SCOPED = 20_000


def bm25_cte(
    tenant: sql.Composable, corpus: str, query: str, container: ContainerScope | None
) -> sql.Composable:
    """`bm25`: every document of the container scope that has a query term, with
    - score: its BM25 score over the best score the query allows (every term, saturated), 0-1;
    - coverage: the share of the query's idf its terms carry, 0-1 (length and frequency aside: a long
      document that holds every rare word of the query covers it whole).
    From engram_bm25 (migrations/0036), whose plans each connection keeps: the idf of each term (from
    the folded statistics and the deltas not yet folded), then one index range of postings per term in
    the container scope (for 'a.b.*', [a.b, a.b/): siblings like 'a.b-c' are dropped by the row check)."""
    low, high = container_bounds(container)
    return sql.SQL(
        "bm25 AS MATERIALIZED (SELECT id, score, coverage "
        "FROM engram_bm25({tenant}, {corpus}, {query}, {low}, {high}, {k1}, {b}))"
    ).format(
        tenant=tenant,
        corpus=sql.Literal(corpus),
        query=sql.Literal(query),
        low=sql.Literal(low),
        high=sql.Literal(high),
        k1=_float8(K1),
        b=_float8(B),
    )


def container_bounds(scope: ContainerScope | None) -> tuple[str | None, str | None]:
    """The container scope as one range [low, high) of container names in C order (no scope: none). A
    container alone is [name, name + U+0001): no other name lies in it, since a name that continues
    `name` does so with a character after U+0001 (and text holds no U+0000)."""
    if scope is None:
        return None, None
    return scope.name, scope.name + ("/" if scope.include_children else "\x01")


def _float8(value: float) -> sql.Composable:
    return sql.SQL("{}::float8").format(sql.Literal(value))


def leg(table: str, alias: str, accepts: sql.Composable, candidates: int) -> sql.Composable:
    """The text leg: the best-scoring documents that pass `accepts` (a predicate on `alias` of
    `table`: the search's tenant, time, owner and filters), checked one by one in score order. A
    LATERAL with LIMIT 1 cannot be flattened into a join: it runs as a nested loop, which keeps the
    sorted order of its outer side, so the LIMIT stops the checks at `candidates` (an ORDER BY here
    would check every row first). The rows to check are the best MAX_CHECKED in two sorted runs, one
    after the other (ties broken by id, so the second starts where the first ended): an Append
    starts its second child only once the first is exhausted, so the larger sort runs only for a
    search whose filters reject most of the first run."""
    a = sql.Identifier(alias)
    first = min(MAX_CHECKED, FIRST_CHECKED_PER_CANDIDATE * candidates)
    return sql.SQL(
        """SELECT b.id, b.score AS text_rank
           FROM ((SELECT id, score FROM bm25 ORDER BY score DESC, id LIMIT {first})
                 UNION ALL
                 (SELECT id, score FROM bm25 ORDER BY score DESC, id OFFSET {first} LIMIT {rest})) b
           CROSS JOIN LATERAL (SELECT 1 FROM {table} {a} WHERE {a}.id = b.id AND {accepts} LIMIT 1) ok
           LIMIT {k}"""
    ).format(
        first=sql.Literal(first),
        rest=sql.Literal(MAX_CHECKED - first),
        table=sql.Identifier(table),
        a=a,
        accepts=accepts,
        k=sql.Literal(candidates),
    )


def leg_within(scoped: str, candidates: int) -> sql.Composable:
    """The text leg over a small filtered scope: the best-scoring documents among the ids of the CTE
    `scoped` (every row the search may return, engram.memories.search.repo). A filter that keeps 1 %
    of a tenant passes about one text match in a hundred: checked one by one (leg), 40 candidates
    cost ~4,000 row lookups (50 ms at 100K memories); here, one scan of the scope's ~1,000 rows,
    through the filters' own indexes. Every match in the scope is ranked, not only the MAX_CHECKED
    best of the container."""
    return sql.SQL(
        """SELECT b.id, b.score AS text_rank FROM bm25 b
           WHERE b.id IN (SELECT id FROM {scoped})
           ORDER BY b.score DESC, b.id LIMIT {k}"""
    ).format(scoped=sql.Identifier(scoped), k=sql.Literal(candidates))


def container_range(scope: ContainerScope | None) -> sql.Composable:
    """The postings (alias p) of the container scope (container_bounds), as one index range."""
    low, high = container_bounds(scope)
    if low is None:
        return sql.SQL("true")
    return sql.SQL("p.container >= {} AND p.container < {}").format(sql.Literal(low), sql.Literal(high))


def fold_statistics(cur: TenantTx, tenant_id: UUID) -> None:
    """Fold the tenant's pending statistics deltas in now (an erasure: no delta, and no statistic of a
    term no document holds any more, keeps a word of what went)."""
    cur.execute("SELECT text_stats_fold(%s)", (tenant_id,))
