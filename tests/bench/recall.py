"""Filtered recall@10 of vector search against an exact scan of the same filtered set."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from engram.memories.models import SearchFilters, SearchRequest
from engram.memories.search.service import MemorySearch
from engram.settings import LOCAL_EMBEDDING_MODEL
from tests.bench.harness import Handlers, check
from tests.bench.latency import SCOPES, search_body
from tests.bench.loader import Dataset
from tests.bench.report import Figure, Target, percentiles
from tests.bench.synthetic import SELECTIVITY_TAGS, World, share_label

RECALL_TARGET = 0.95
K = 10


def recall_at_k(found: Sequence[UUID], truth: Sequence[UUID], k: int = K) -> float:
    """Share of the true top-k (or of all true rows, when fewer than k match) that was found."""
    expected = list(truth)[:k]
    if not expected:
        return 1.0
    return len(set(found[:k]) & set(expected)) / len(expected)


def exact_top_k(
    conn: psycopg.Connection[Any],
    tenant_id: UUID,
    vector: np.ndarray,
    tags: list[str],
    container: str | None = None,
    k: int = K,
) -> list[UUID]:
    """The true top-k, computed apart from the app: the admin connection, every row of the tenant that
    passes the filters (`container`: that one, or with 'a.*' a and everything below it), and the
    distance to each, sorted."""
    name = container.removesuffix(".*") if container else None
    below = f"{name}." if container and container.endswith(".*") else None
    rows = conn.execute(
        "SELECT id FROM memories WHERE tenant_id = %s AND embedding_model = %s AND is_latest "
        "AND (expires_at IS NULL OR expires_at > now()) AND tags @> %s::text[] "
        "AND (%s::text IS NULL OR container = %s OR starts_with(container, %s)) "
        "ORDER BY embedding <=> %s::vector, id LIMIT %s",
        (tenant_id, LOCAL_EMBEDDING_MODEL, tags, name, name, below, vector, k),
    ).fetchall()
    return [row[0] for row in rows]


def filtered_recall(
    handlers: Handlers,
    world: World,
    dataset: Dataset,
    admin_conninfo: str,
    index_only: MemorySearch,
    queries: int,
    log: Callable[[str], None],
) -> list[Figure]:
    """As configured (through the handler), and with the HNSW path forced (exact scans switched off),
    which is what every tenant larger than the exact-scan threshold gets."""
    scale = dataset.spec.name
    tenant_ids = list(dataset.tenants.values())
    section = (
        f"filtered recall@10 vs exact scan @ {scale}/tenant (vector mode; share of the tenant's memories)"
    )
    figures: list[Figure] = []
    started = time.perf_counter()
    conn = psycopg.connect(admin_conninfo, autocommit=True)
    register_vector(conn)
    for n, (selectivity, tag) in enumerate(SELECTIVITY_TAGS.items()):
        tags = [tag] if tag else []
        plan = world.queries(queries, stream=10 + n)
        configured, forced, latencies = [], [], []
        for i, query in enumerate(plan):
            tenant_id = tenant_ids[i % len(tenant_ids)]
            truth = exact_top_k(conn, tenant_id, query.vector, tags)
            reply = check(
                handlers.call(
                    "POST",
                    "/v1/search",
                    tenant_id,
                    search_body(query.text, query.vector, "vector", tags=tags),
                )
            )
            latencies.append(reply.seconds * 1000)
            configured.append(recall_at_k([UUID(r["id"]) for r in reply.body["results"]], truth))
            request = SearchRequest(
                query=query.text, mode="vector", limit=K, filters=SearchFilters(tags=tags)
            )
            hnsw = index_only.search_with_vector(
                tenant_id, request, [float(x) for x in query.vector], LOCAL_EMBEDDING_MODEL
            )
            forced.append(recall_at_k([r.id for r in hnsw.results], truth))
        label = share_label(selectivity)
        figures.append(
            Figure(
                key=f"recall.{label}@{scale}",
                section=section,
                name=f"{label} selectivity, as configured",
                value=float(np.mean(configured)),
                target=Target(">=", RECALL_TARGET),
            )
        )
        figures.append(
            Figure(
                key=f"recall.hnsw.{label}@{scale}",
                section=section,
                name=f"{label} selectivity, exact_scan_threshold=0 (diagnostic)",
                value=float(np.mean(forced)),
            )
        )
        figures.append(
            Figure(
                key=f"recall.latency.p95.{label}@{scale}",
                section=section,
                name=f"{label} selectivity, search p95",
                value=percentiles(latencies)[95],
                unit="ms",
            )
        )
    conn.close()
    log(
        f"  {scale}: recall over {queries} queries x {len(SELECTIVITY_TAGS)} selectivities "
        f"in {time.perf_counter() - started:.0f}s"
    )
    return figures


def container_recall(
    handlers: Handlers,
    world: World,
    dataset: Dataset,
    admin_conninfo: str,
    queries: int,
    log: Callable[[str], None],
) -> list[Figure]:
    """Recall@10 of a search of one container scope (each of the latency section's), as configured: the
    search walks the scope's own index where it has one (engram.db.container_indexes), else the tenant's,
    or scans the scope exactly."""
    scale = dataset.spec.name
    tenant_ids = list(dataset.tenants.values())
    section = f"container recall@10 vs exact scan @ {scale}/tenant (vector mode, as configured)"
    figures: list[Figure] = []
    started = time.perf_counter()
    conn = psycopg.connect(admin_conninfo, autocommit=True)
    register_vector(conn)
    containers = [scope for scope, _ in SCOPES if scope is not None]
    for n, container in enumerate(containers):
        found = []
        for i, query in enumerate(world.queries(queries, stream=20 + n)):
            tenant_id = tenant_ids[i % len(tenant_ids)]
            truth = exact_top_k(conn, tenant_id, query.vector, [], container)
            body = search_body(query.text, query.vector, "vector", container)
            reply = check(handlers.call("POST", "/v1/search", tenant_id, body))
            found.append(recall_at_k([UUID(r["id"]) for r in reply.body["results"]], truth))
        figures.append(
            Figure(
                key=f"recall.container.{container}@{scale}",
                section=section,
                name=f"container {container}",
                value=float(np.mean(found)),
                target=Target(">=", RECALL_TARGET),
            )
        )
    conn.close()
    seconds = time.perf_counter() - started
    log(f"  {scale}: recall over {queries} queries x {len(containers)} containers in {seconds:.0f}s")
    return figures
