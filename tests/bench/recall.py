"""Filtered recall@10 of vector search against an exact scan of the same filtered set."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from uuid import UUID

import numpy as np

from engram.db.database import Database
from engram.memories import repo
from engram.memories.models import SearchFilters, SearchRequest
from engram.memories.service import MemoryService
from engram.settings import LOCAL_EMBEDDING_MODEL
from tests.bench.harness import Handlers, check
from tests.bench.latency import search_body
from tests.bench.loader import Dataset
from tests.bench.report import Figure, Target, percentiles
from tests.bench.synthetic import SELECTIVITY_TAGS, World

RECALL_TARGET = 0.95
K = 10


def recall_at_k(found: Sequence[UUID], truth: Sequence[UUID], k: int = K) -> float:
    """Share of the true top-k (or of all true rows, when fewer than k match) that was found."""
    expected = list(truth)[:k]
    if not expected:
        return 1.0
    return len(set(found[:k]) & set(expected)) / len(expected)


def exact_top_k(db: Database, tenant_id: UUID, vector: np.ndarray, tags: list[str], k: int = K) -> list[UUID]:
    """The true top-k: the repository's own exact scan, with the same filters, under RLS."""
    plan = repo.SearchPlan(
        tenant_id=tenant_id, text=None,
        vector=repo.VectorQuery(vector=[float(x) for x in vector], model=LOCAL_EMBEDDING_MODEL, exact=True),
        container=None, filters=SearchFilters(tags=tags), candidates=k, limit=k,
    )
    with db.tenant(tenant_id) as cur:
        return [row["id"] for row in repo.search(cur, plan)]


def filtered_recall(handlers: Handlers, world: World, dataset: Dataset, db: Database, index_only: MemoryService,
                    queries: int, log: Callable[[str], None]) -> list[Figure]:
    """As configured (through the handler), and with the HNSW path forced (exact scans switched off),
    which is what every tenant larger than the exact-scan threshold gets."""
    scale = dataset.spec.name
    tenant_ids = list(dataset.tenants.values())
    section = f"filtered recall@10 vs exact scan @ {scale}/tenant (vector mode; share of the tenant's memories)"
    figures: list[Figure] = []
    started = time.perf_counter()
    for n, (selectivity, tag) in enumerate(SELECTIVITY_TAGS.items()):
        tags = [tag] if tag else []
        plan = world.queries(queries, stream=10 + n)
        configured, forced, latencies = [], [], []
        for i, query in enumerate(plan):
            tenant_id = tenant_ids[i % len(tenant_ids)]
            truth = exact_top_k(db, tenant_id, query.vector, tags)
            reply = check(handlers.call("POST", "/v1/search", tenant_id,
                                        search_body(query.text, query.vector, "vector", tags=tags)))
            latencies.append(reply.seconds * 1000)
            configured.append(recall_at_k([UUID(r["id"]) for r in reply.body["results"]], truth))
            request = SearchRequest(query=query.text, mode="vector", limit=K, filters=SearchFilters(tags=tags))
            hnsw = index_only.search_with_vector(tenant_id, request, [float(x) for x in query.vector],
                                                 LOCAL_EMBEDDING_MODEL)
            forced.append(recall_at_k([r.id for r in hnsw.results], truth))
        label = f"{selectivity:.1%}".replace(".0%", "%")
        figures.append(Figure(key=f"recall.{label}@{scale}", section=section,
                              name=f"{label} selectivity, as configured", value=float(np.mean(configured)),
                              target=Target(">=", RECALL_TARGET)))
        figures.append(Figure(key=f"recall.hnsw.{label}@{scale}", section=section,
                              name=f"{label} selectivity, HNSW path forced (diagnostic)",
                              value=float(np.mean(forced))))
        figures.append(Figure(key=f"recall.latency.p95.{label}@{scale}", section=section,
                              name=f"{label} selectivity, search p95", value=percentiles(latencies)[95], unit="ms"))
    log(f"  {scale}: recall over {queries} queries x {len(SELECTIVITY_TAGS)} selectivities "
        f"in {time.perf_counter() - started:.0f}s")
    return figures
