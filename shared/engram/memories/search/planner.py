"""How a plan's vector leg may run: an exact scan of the filtered rows, or a walk of the HNSW index,
depending on how many rows the filters leave (counted by the statement itself, repo.py, and kept here
for the next searches of the same population). Here: the population above which the index is walked,
and, for a plan without a vector, the largest filtered scope its text leg ranks within.
No SQL here (the lookups: repo.py)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any
from uuid import UUID

from engram.db.container_indexes import index_scope
from engram.db.database import Database, Party
from engram.memories.search import repo
from engram.memories.search.plan import SearchPlan
from engram.memories.search.repo import Corpus

# Pages an HNSW search reads per index entry it visits, relative to an exact scan's per row (measured).
HNSW_COST_RATIO = 8
# Index sizes change slowly: look each up at most this often per process.
INDEX_ROWS_TTL_S = 300.0
# Per (database, table, tenant, model, dimensions, container scope); at most POPULATIONS_MAX of them.
_INDEX_ROWS: dict[tuple[int, str, UUID | None, str, int, str | None], tuple[float | None, float]] = {}
# A population's count (what the statement's count found, and the limit it counted to), per tenant,
# party, corpus, model and scope: it only picks exact scan or index walk, and a population changes
# slowly, so a search whose population is known skips the count (~2 ms for 5K rows) and plans only
# the branch it runs (~1 ms). Kept as long as the index sizes; at most POPULATIONS_MAX of them.
POPULATION_TTL_S = INDEX_ROWS_TTL_S
POPULATIONS_MAX = 10_000
_POPULATIONS: dict[tuple[Any, ...], tuple[int, int, float]] = {}
# Tenants known to have rows of a corpus that many tenants have none of (Corpus.any_rows), or
# entities (the graph leg): rows once seen are assumed to stay (a tenant that deleted them all is
# searched for none, correctly).
_HAS_ROWS: set[tuple[int, str, UUID]] = set()
# A search without a vector, under a filter the corpus can list the rows of (repo.Corpus.scope_ids: for
# memories an owner, agent, conversation, tag or metadata filter): the most rows its text leg ranks its
# matches among, rather than checking the best matches one by one. Listing costs ~1 us a row, a check
# ~13 us, and a filter that passes a share p of the matches needs candidates / p checks: the two meet
# near sqrt(13 * 40 * N) rows for N rows in the tenant, ~7K at 100K and ~2.3K at 10K. Below this cap,
# a 1 % filter at 100K no longer checks ~4,000 rows (text mode p95 ~30 ms, 7 ms now); above it, the
# first search of a scope lists this many rows once (~3 ms) and its count is kept like the vector leg's.
TEXT_SCOPE_CAP = 3000
# hnsw.ef_search by the rows of the index a search walks (walk_ef): the smallest candidate list that found
# 99 % of the true top 10 on real vectors, with a margin. `make bench BENCH_ARGS="--only hnsw"`: the local
# model's vectors of SciFact's corpus sentences, an index of a sample of each size, SciFact train's claims
# as queries, 40 candidates ranked exactly as search ranks them. Recall@10 at 40 / 64 / 100 / 160: 0.986 /
# 0.994 / 0.997 / 0.999 at 5K vectors, 0.982 / 0.990 / 0.996 / 0.998 at 10K, 0.979 / 0.991 / 0.995 / 0.998
# at 20K, 0.973 / 0.986 / 0.993 / 0.997 at 47K. A larger index keeps LARGE_INDEX_EF_SEARCH (make bench's
# synthetic 100K memories per tenant: 0.944 at 100, 0.964 at 160 and 200). A shorter list is a shorter
# walk: 160 -> 64 took the vector leg at 10K from ~1.3 to ~0.5 ms (EXPLAIN ANALYZE, make bench's data).
WALK_EF_SEARCH = ((12_000, 64), (60_000, 100))
LARGE_INDEX_EF_SEARCH = 160


def walk_ef(index_rows: float, candidates: int, configured: int | None = None) -> int:
    """hnsw.ef_search for a walk of an index of `index_rows` entries: `configured` when set (the operator's
    ENGRAM_HNSW_EF_SEARCH), else sized to the index (WALK_EF_SEARCH); never below the candidates wanted,
    which a walk cannot return more of than its list holds."""
    if configured is None:
        configured = next((ef for most, ef in WALK_EF_SEARCH if index_rows <= most), LARGE_INDEX_EF_SEARCH)
    return max(configured, candidates)


def exact_scan_cap(threshold: int, index_rows: float | None, candidates: int, max_scan_tuples: int) -> int:
    """The largest filtered population that is scanned exactly rather than through HNSW.

    An exact scan reads about one page per row of the population P. The HNSW index the search walks
    (the tenant's own, or the model's shared one) holds N rows; walking it until `candidates` rows
    pass the filters visits about candidates * N / P entries, each several pages. The two costs meet
    at P = sqrt(HNSW_COST_RATIO * candidates * N): ~18K rows at N = 1M for the default 40 candidates,
    ~5.7K at N = 100K, which is where `make bench` measured them to meet (buffers read per search).
    The iterative scan also stops after `max_scan_tuples`, so a population below
    2 * candidates * N / max_scan_tuples could not fill the top-k through it: that is scanned exactly
    as well. `threshold` is the floor (default 2000). It binds only for small indexes (a tenant's own
    of 10K-80K rows): at 10K the crossover is ~1.8K, and a floor of 5000 scanned 4K-row containers
    exactly in ~7 ms where the walk took ~1.5 ms, with the same top 10 (make bench's 10K data).
    A model without an HNSW index is always scanned exactly."""
    if index_rows is None:
        return 2**31 - 2
    crossover = math.isqrt(int(HNSW_COST_RATIO * candidates * index_rows))
    needed_for_recall = math.ceil(2 * candidates * index_rows / max_scan_tuples)
    return max(threshold, crossover, needed_for_recall)


class SearchPlanner:
    """Sets, per corpus (memories, chunks), the population above which the vector leg walks the HNSW
    index, and the walk's candidate list (walk_ef; `ef_search` None: sized to the index). `db` answers
    the index-size lookups (cached per process)."""

    def __init__(
        self,
        db: Database,
        *,
        exact_scan_threshold: int,
        ef_search: int | None,
        max_scan_tuples: int,
    ) -> None:
        # No defaults here: MemorySearch, its one maker, passes its own (engram.settings' in the app).
        self.db = db
        self.exact_scan_threshold = exact_scan_threshold
        self.ef_search = ef_search
        self.max_scan_tuples = max_scan_tuples

    def for_corpus(self, corpus: Corpus, plan: SearchPlan, party: Party | None = None) -> SearchPlan:
        """The plan with its vector leg's way: exact or a walk, when the population is known (counted
        by an earlier search of it, within POPULATION_TTL_S), else both, with the count to pick one
        (exact_cap). `party`: whom the search is for (RLS: who sees which rows); None for a plan whose
        count is not kept."""
        if plan.vector is None:
            return self._text_scope(corpus, plan, party)
        indexed = self._index_rows(corpus, plan)
        if indexed is None:
            return replace(plan, vector=replace(plan.vector, exact=True), exact_cap=None)
        cap = exact_scan_cap(self.exact_scan_threshold, indexed, plan.candidates, self.max_scan_tuples)
        ef = walk_ef(indexed, plan.candidates, self.ef_search)
        exact = None if party is None else self._known_exact(corpus, plan, party, cap)
        if exact is not None:
            return replace(plan, vector=replace(plan.vector, exact=exact), exact_cap=None, ef_search=ef)
        return replace(plan, exact_cap=cap, ef_search=ef)

    def _text_scope(self, corpus: Corpus, plan: SearchPlan, party: Party | None) -> SearchPlan:
        """A plan without a vector: its text leg lists its scope's rows up to TEXT_SCOPE_CAP + 1 and
        ranks within them when they are no more (scope_cap), unless an earlier search of the same
        scope, within POPULATION_TTL_S, found more: then it checks one by one without listing."""
        if not repo.lists_scope(corpus, plan):
            return plan
        known = None if party is None else self._known_population(corpus, plan, party)
        if known is not None and known[0] > TEXT_SCOPE_CAP:
            return plan
        return replace(plan, scope_cap=TEXT_SCOPE_CAP)

    def counted(
        self, corpus: Corpus, plan: SearchPlan, party: Party, rows: Iterable[Mapping[str, Any]]
    ) -> None:
        """Keep the population the statement of `plan` counted (its rows' `population`, up to
        exact_cap + 1, or without a vector the rows of its scope, up to scope_cap + 1), for the next
        searches of it."""
        if plan.vector is not None and plan.exact_cap is not None:
            limit = plan.exact_cap + 1
        elif plan.vector is None and plan.scope_cap is not None:
            limit = plan.scope_cap + 1
        else:
            return
        n = next((row.get("population") for row in rows), None)
        if n is None:
            return
        if len(_POPULATIONS) >= POPULATIONS_MAX:
            _POPULATIONS.clear()
        _POPULATIONS[_population_key(self.db, corpus, plan, party)] = (int(n), limit, time.monotonic())

    def _known_population(self, corpus: Corpus, plan: SearchPlan, party: Party) -> tuple[int, int] | None:
        """The population of this plan's scope and the limit it was counted to, when counted within
        POPULATION_TTL_S."""
        known = _POPULATIONS.get(_population_key(self.db, corpus, plan, party))
        if known is None or time.monotonic() - known[2] > POPULATION_TTL_S:
            return None
        return known[0], known[1]

    def _known_exact(self, corpus: Corpus, plan: SearchPlan, party: Party, cap: int) -> bool | None:
        """Whether a population of this plan's, counted within POPULATION_TTL_S, is at most `cap`
        (scanned exactly); None when it is not known (or was counted only up to `cap` or below)."""
        known = self._known_population(corpus, plan, party)
        if known is None:
            return None
        n, limit = known
        if n < limit:  # the whole population was counted
            return n <= cap
        return False if limit > cap else None  # more than `limit` rows: above a cap below it

    def needs_probe(self, corpus: Corpus, tenant_id: UUID) -> bool:
        """Whether the corpus's statement waits for a check that the tenant has any of its rows
        (Corpus.any_rows): until the tenant is seen to have some."""
        return corpus.any_rows is not None and not self.seen_rows(corpus.table, tenant_id)

    def seen_rows(self, table: str, tenant_id: UUID) -> bool:
        """Whether the tenant was seen to have rows in `table` (has_rows)."""
        return (id(self.db), table, tenant_id) in _HAS_ROWS

    def has_rows(self, table: str, tenant_id: UUID) -> None:
        if len(_HAS_ROWS) >= POPULATIONS_MAX:
            _HAS_ROWS.clear()
        _HAS_ROWS.add((id(self.db), table, tenant_id))

    def scan_settings(self, plans: Iterable[SearchPlan]) -> dict[str, str] | None:
        """The HNSW scan's settings for the statements of these plans, run in one transaction (the
        settings are transaction-local, and read only by an index walk): the longest candidate list any
        of their walks asks for. None when none of them can walk an index."""
        lists = [plan.ef_search for plan in plans if plan.ef_search is not None]
        return repo.scan_settings(max(lists), self.max_scan_tuples) if lists else None

    def _index_rows(self, corpus: Corpus, plan: SearchPlan) -> float | None:
        """Rows of the index this search walks: its container scope's own ('a' or 'a.*'), when it has
        one (engram.db.container_indexes); else its tenant's own, when it has one; else the model's."""
        assert plan.vector is not None
        model, dimensions = plan.vector.model, len(plan.vector.vector)
        own = self._cached(corpus, plan.tenant_id, model, dimensions, None) if corpus.tenant_indexes else None
        if own is None:
            return self._cached(corpus, None, model, dimensions, None)
        container = plan.container  # only tenants with an index of their own have container indexes
        if container is not None:
            scope = index_scope(container.name, container.include_children)
            in_scope = self._cached(corpus, plan.tenant_id, model, dimensions, scope)
            if in_scope is not None:
                return in_scope
        return own

    def _cached(
        self, corpus: Corpus, tenant_id: UUID | None, model: str, dimensions: int, scope: str | None
    ) -> float | None:
        key = (id(self.db), corpus.table, tenant_id, model, dimensions, scope)
        cached = _INDEX_ROWS.get(key)
        now = time.monotonic()
        if cached is None or now - cached[1] > INDEX_ROWS_TTL_S:
            with self.db.transaction() as cur:
                cached = (repo.index_rows(cur, corpus.table, tenant_id, model, dimensions, scope), now)
            if len(_INDEX_ROWS) >= POPULATIONS_MAX:
                _INDEX_ROWS.clear()
            _INDEX_ROWS[key] = cached
        return cached[0]


def _population_key(db: Database, corpus: Corpus, plan: SearchPlan, party: Party) -> tuple[Any, ...]:
    """What the count of the population depends on: the rows the party sees in the tenant, of the
    model (with a vector: the vector leg counts that model's rows; without one, the text leg lists
    any model's), in the scope and filters (and the time scope, which tag and metadata filters count
    in)."""
    container = plan.container
    return (
        id(db),
        corpus.table,
        plan.tenant_id,
        party,
        None if plan.vector is None else plan.vector.model,
        None if container is None else (container.name, container.include_children),
        plan.filters.model_dump_json(),
        plan.time,
    )
