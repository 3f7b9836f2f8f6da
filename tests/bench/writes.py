"""Write latency (`POST /v1/memories` until the memory is searchable, with and without extraction) and
ingestion throughput (one by one, and in batches)."""

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
SEARCHABLE_TARGET_MS = 50.0
BATCH = 100
EMBEDDING_P95_TARGET_MS = 15.0


def write_latency(
    handlers: Handlers,
    local: LocalDatabase,
    texts: Sequence[str],
    embed: Callable[[str], list[float]],
    log: Callable[[str], None],
) -> list[Figure]:
    """Each memory carries a unique marker word; it counts as searchable when a text search for
    that word returns it. The default write (`extract: light` without an LLM: entities, relations and
    graph-link in the write's transaction) and `extract: none` alternate, memory by memory, so both
    see the same machine. A fresh tenant, deleted afterwards, keeps the data set as it was."""
    tenant_id = tenants.ensure_tenant(local.admin, f"bench-writes-{uuid.uuid4().hex[:8]}")
    section = "write latency (POST /v1/memories through the handler; server-side embedding unless noted)"
    timed: dict[str, tuple[list[float], list[float]]] = {"light": ([], []), "none": ([], [])}
    post_client = []
    try:
        for i, text in enumerate([*texts[:10], *texts]):  # the first 10 only warm up
            for mode in ("light", "none") if i % 2 else ("none", "light"):
                post, searchable = _until_searchable(handlers, tenant_id, text, mode)
                if i >= 10:
                    timed[mode][0].append(post)
                    timed[mode][1].append(searchable)
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
        rates = _batch_against_singles(handlers, tenant_id, texts)
    finally:
        drop_tenant(local, tenant_id)
    log(f"  writes: {len(texts)} memories x 4 passes, and {len(texts)} in batches of {BATCH}")
    figures = []
    for mode, label, key in (("light", "", ""), ("none", ", extract none", "_extract_none")):
        p, s = percentiles(timed[mode][0]), percentiles(timed[mode][1])
        figures += [
            Figure(
                key=f"write.post{key}.p{k}", section=section, name=f"POST p{k}{label}", value=p[k], unit="ms"
            )
            for k in (50, 95)
        ]
        figures += [
            Figure(
                key=f"write.searchable{key}.p{k}",
                section=section,
                name=f"POST until searchable p{k}{label}",
                value=s[k],
                unit="ms",
                target=Target("<=", SEARCHABLE_TARGET_MS) if k == 95 else None,
            )
            for k in (50, 95)
        ]
    light, none = percentiles(timed["light"][1]), percentiles(timed["none"][1])
    figures.append(
        Figure(
            key="write.extract_light.cost.p50",
            section=section,
            name="extract light's cost: until searchable p50, light minus none (same run, interleaved)",
            value=light[50] - none[50],
            unit="ms",
        )
    )
    c = percentiles(post_client)
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
    ingest = "ingestion throughput"
    figures += [
        Figure(
            key="ingest.api.rate",
            section=ingest,
            value=rates["single"],
            unit="mem/s",
            name="POST /v1/memories, one client, sequential, server-side embedding",
        ),
        Figure(
            key="ingest.batch.rate",
            section=ingest,
            value=rates["batch"],
            unit="mem/s",
            name=f"POST /v1/memories/batch of {BATCH}, same memories, same run",
        ),
        Figure(
            key="ingest.batch.ratio",
            section=ingest,
            value=rates["batch"] / rates["single"],
            unit="x",
            name=f"batch of {BATCH} vs one by one: throughput ratio",
        ),
    ]
    return figures


def _until_searchable(handlers: Handlers, tenant_id: UUID, text: str, mode: str) -> tuple[float, float]:
    """(POST ms, until a text search finds it ms) for one memory written with `mode`."""
    marker = f"zq{uuid.uuid4().hex[:10]}"
    started = time.perf_counter()
    body = {"content": f"{text} {marker}", "container": "bench.writes", "extract": mode}
    reply = check(handlers.call("POST", "/v1/memories", tenant_id, body), 201)
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
            return reply.seconds * 1000, (time.perf_counter() - started) * 1000
        if time.perf_counter() - started > SEARCHABLE_WITHIN_S:
            raise RuntimeError(f"memory {reply.body['id']} not searchable after {SEARCHABLE_WITHIN_S}s")


def _batch_against_singles(handlers: Handlers, tenant_id: UUID, texts: Sequence[str]) -> dict[str, float]:
    """The same memories posted one by one and in batches, the two passes alternating batch by batch
    (each into its own container, so neither dedupes against the other)."""
    elapsed = {"single": 0.0, "batch": 0.0}
    for start in range(0, len(texts), BATCH):
        chunk = texts[start : start + BATCH]
        order = ("single", "batch") if (start // BATCH) % 2 == 0 else ("batch", "single")
        for how in order:
            begun = time.perf_counter()
            if how == "batch":
                memories = [{"content": t, "container": "bench.batch"} for t in chunk]
                check(handlers.call("POST", "/v1/memories/batch", tenant_id, {"memories": memories}), 201)
            else:
                for t in chunk:
                    body = {"content": t, "container": "bench.single"}
                    check(handlers.call("POST", "/v1/memories", tenant_id, body), 201)
            elapsed[how] += time.perf_counter() - begun
    return {how: len(texts) / seconds for how, seconds in elapsed.items()}


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
    section = "write latency (POST /v1/memories through the handler; server-side embedding unless noted)"
    return embedding_figures(
        lambda text: embed_documents([text]),
        texts,
        key="embed.document",
        section=section,
        name="a sentence's embedding as a document",
    )


def embedding_figures(
    embed_one: Callable[[str], object], texts: Sequence[str], *, key: str, section: str, name: str
) -> list[Figure]:
    """p50 and p95 of `embed_one` over `texts`, one at a time after five warm-up calls; the issue's
    target (EMBEDDING_P95_TARGET_MS) on the p95."""
    for text in texts[:5]:
        embed_one(text)
    samples = []
    for text in texts:
        t0 = time.perf_counter()
        embed_one(text)
        samples.append((time.perf_counter() - t0) * 1000)
    p = percentiles(samples)
    return [
        Figure(
            key=f"{key}.p{k}",
            section=section,
            name=f"{name}, p{k} (n={len(samples)})",
            value=p[k],
            unit="ms",
            target=Target("<=", EMBEDDING_P95_TARGET_MS) if k == 95 else None,
        )
        for k in (50, 95)
    ]
