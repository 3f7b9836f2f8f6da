"""Write latency (`POST /v1/memories` until the memory is searchable) and ingestion throughput."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from uuid import UUID

import psycopg

from engram.local.stack import LocalDatabase
from engram.settings import LOCAL_EMBEDDING_MODEL
from engram.tenants import service as tenants
from tests.bench.harness import Handlers, check
from tests.bench.loader import Dataset
from tests.bench.report import Figure, Target, percentiles

SEARCHABLE_WITHIN_S = 5.0
SEARCHABLE_P95_TARGET_MS = 50.0
EMBEDDING_P95_TARGET_MS = 15.0


def write_latency(
    handlers: Handlers,
    local: LocalDatabase,
    texts: Sequence[str],
    embed: Callable[[str], list[float]],
    log: Callable[[str], None],
) -> list[Figure]:
    """Each memory carries a unique marker word; it counts as searchable when a text search for
    that word returns it. A fresh tenant, deleted afterwards, keeps the data set as it was."""
    tenant_id = tenants.ensure_tenant(local.admin, f"bench-writes-{uuid.uuid4().hex[:8]}")
    section = "write latency (POST /v1/memories through the handler; server-side embedding unless noted)"
    post, searchable, post_client = [], [], []
    try:
        for i, text in enumerate([*texts[:10], *texts]):  # the first 10 only warm up
            marker = f"zq{uuid.uuid4().hex[:10]}"
            started = time.perf_counter()
            reply = check(
                handlers.call(
                    "POST",
                    "/v1/memories",
                    tenant_id,
                    {"content": f"{text} {marker}", "container": "bench.writes"},
                ),
                201,
            )
            while True:
                found = check(
                    handlers.call(
                        "POST",
                        "/v1/search",
                        tenant_id,
                        {"query": marker, "mode": "text", "container": "bench.writes"},
                    )
                )
                if any(r["id"] == reply.body["id"] for r in found.body["results"]):
                    break
                if time.perf_counter() - started > SEARCHABLE_WITHIN_S:
                    raise RuntimeError(
                        f"memory {reply.body['id']} not searchable after {SEARCHABLE_WITHIN_S}s"
                    )
            if i >= 10:
                post.append(reply.seconds * 1000)
                searchable.append((time.perf_counter() - started) * 1000)
        vectors = [embed(t) for t in texts]
        for vector, text in zip(vectors, texts, strict=True):
            body = {
                "content": text,
                "container": "bench.writes",
                "embedding": vector,
                "embedding_model": LOCAL_EMBEDDING_MODEL,
            }
            post_client.append(
                check(handlers.call("POST", "/v1/memories", tenant_id, body), 201).seconds * 1000
            )
        started = time.perf_counter()
        for text in texts:
            check(
                handlers.call(
                    "POST", "/v1/memories", tenant_id, {"content": text, "container": "bench.bulk"}
                ),
                201,
            )
        api_rate = len(texts) / (time.perf_counter() - started)
    finally:
        drop_tenant(local, tenant_id)
    log(f"  writes: {len(texts)} memories x 3 passes")
    p, s, c = percentiles(post), percentiles(searchable), percentiles(post_client)
    figures = [
        Figure(key=f"write.post.p{k}", section=section, name=f"POST p{k}", value=p[k], unit="ms")
        for k in (50, 95)
    ]
    figures += [
        Figure(
            key=f"write.searchable.p{k}",
            section=section,
            name=f"POST until searchable p{k}",
            value=s[k],
            unit="ms",
            target=Target("<=", SEARCHABLE_P95_TARGET_MS) if k == 95 else None,
        )
        for k in (50, 95)
    ]
    figures += [
        Figure(
            key=f"write.post_client_embedding.p{k}",
            section=section,
            name=f"POST p{k}, embedding sent by the client",
            value=c[k],
            unit="ms",
        )
        for k in (50, 95)
    ]
    figures.append(
        Figure(
            key="ingest.api.rate",
            section="ingestion throughput",
            value=api_rate,
            unit="mem/s",
            name="POST /v1/memories, one client, sequential, server-side embedding",
        )
    )
    return figures


def bulk_load_figures(dataset: Dataset) -> list[Figure]:
    load = dataset.load
    if not load:
        return []
    scale = dataset.spec.name
    when = f"loaded {load['loaded_at']}" + (", reused" if dataset.reused else "")
    rows = load["rows"]
    section = "ingestion throughput"
    return [
        Figure(
            key=f"ingest.copy.rate@{scale}",
            section=section,
            value=load["copy_rows_per_second"],
            unit="mem/s",
            name=f"bulk COPY of {rows:,} pre-embedded memories, indexes off",
            note=when,
        ),
        Figure(
            key=f"ingest.hnsw.seconds@{scale}",
            section=section,
            value=load["hnsw_build_seconds"],
            unit="s",
            name=f"HNSW build over {rows:,} vectors (maintenance_work_mem 4GB, 2 workers)",
        ),
        Figure(
            key=f"ingest.indexes.rate@{scale}",
            section=section,
            unit="mem/s",
            value=rows
            / (load["copy_seconds"] + sum(load["index_seconds"].values()) + load["vacuum_seconds"]),
            name="bulk load end to end (COPY + every index + VACUUM ANALYZE)",
        ),
    ]


def drop_tenant(local: LocalDatabase, tenant_id: UUID) -> None:
    """Everything the tenant owns goes with it (ON DELETE CASCADE)."""
    with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
        conn.execute("DELETE FROM tenants WHERE id = %s", (tenant_id,))


def sentence_embedding(embed_documents: Callable[[list[str]], object], texts: Sequence[str]) -> list[Figure]:
    """One sentence embedded as a document (the write path's embedding) with the local model."""
    for text in texts[:5]:
        embed_documents([text])
    samples = []
    for text in texts:
        t0 = time.perf_counter()
        embed_documents([text])
        samples.append((time.perf_counter() - t0) * 1000)
    p = percentiles(samples)
    section = "write latency (POST /v1/memories through the handler; server-side embedding unless noted)"
    return [
        Figure(
            key=f"embed.document.p{k}",
            section=section,
            name=f"a sentence's embedding as a document, p{k} (n={len(samples)})",
            value=p[k],
            unit="ms",
            target=Target("<=", EMBEDDING_P95_TARGET_MS) if k == 95 else None,
        )
        for k in (50, 95)
    ]
