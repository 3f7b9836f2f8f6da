"""Write throughput of 8 concurrent writers to one tenant, with the text index's statistics kept as
migrations/0014 keeps them (writers append deltas, folded in by try-lock) and, side by side in the
same run, kept as counters updated in place (each writer upserts the tenant's document count and its
terms' document frequencies, holding those rows until it commits).

The in-place variant swaps the insert trigger's function for the duration of its slices and puts the
original back afterwards. The writers insert through the app role, under RLS, one memory per
transaction, texts sharing a vocabulary (so their terms' counters are shared, as in real use).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence

import psycopg

from engram.local.stack import LocalDatabase
from engram.memories.repo import ensure_container
from engram.tenants import service as tenants
from tests.bench.report import Figure
from tests.bench.writes import drop_tenant

WRITERS = 8
CONTAINER = "bench.textwriters"

# The same postings, and the statistics upserted in place, in term order (so writers lock shared rows
# in one order and do not deadlock).
IN_PLACE = """
CREATE OR REPLACE FUNCTION text_index_added() RETURNS trigger
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    v_corpus "char" := TG_ARGV[0];
BEGIN
    WITH terms AS MATERIALIZED (
        SELECT a.tenant_id, a.container, a.id, t.term, t.tf,
               sum(t.tf) OVER (PARTITION BY a.id) AS doc_length
        FROM added a CROSS JOIN LATERAL engram_text_terms(a.content) t
    ), posted AS (
        INSERT INTO text_postings (tenant_id, corpus, term, container, doc_id, tf, doc_length)
        SELECT tenant_id, v_corpus, term, container, id, least(tf, 32767), doc_length FROM terms
    )
    INSERT INTO text_stats AS s (tenant_id, corpus, term, docs, length)
    SELECT * FROM (
        SELECT tenant_id, v_corpus, term, count(*), 0::bigint FROM terms GROUP BY tenant_id, term
        UNION ALL
        SELECT a.tenant_id, v_corpus, '', count(*), coalesce(sum(l.doc_length), 0)
        FROM added a LEFT JOIN (SELECT DISTINCT id, doc_length FROM terms) l ON l.id = a.id
        GROUP BY a.tenant_id) x
    ORDER BY 3
    ON CONFLICT (tenant_id, corpus, term)
    DO UPDATE SET docs = s.docs + excluded.docs, length = s.length + excluded.length;
    RETURN NULL;
END
$$
"""


def concurrent_writers(
    local: LocalDatabase, texts: Sequence[str], seconds: float, log: Callable[[str], None]
) -> list[Figure]:
    """Memories written per second by WRITERS threads to one tenant, for each way of keeping the
    statistics, in alternating slices (the machine's other load falls on both alike)."""
    tenant_id = tenants.ensure_tenant(local.admin, f"bench-textwriters-{uuid.uuid4().hex[:8]}")
    with local.admin.tenant(tenant_id) as cur:
        ensure_container(cur, tenant_id, CONTAINER)
    with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT pg_get_functiondef('text_index_added'::regproc)").fetchone()
        assert row is not None
        deltas_definition = row[0]
    written = {"deltas": 0, "in_place": 0}
    failed = {"deltas": 0, "in_place": 0}
    spent = {"deltas": 0.0, "in_place": 0.0}
    slices = 4
    try:
        for _ in range(slices):
            for variant in ("deltas", "in_place"):
                with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
                    conn.execute(IN_PLACE if variant == "in_place" else deltas_definition)
                n, errors, elapsed = _slice(local, tenant_id, texts, seconds / slices)
                written[variant] += n
                failed[variant] += errors
                spent[variant] += elapsed
    finally:
        with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
            conn.execute(deltas_definition)
        drop_tenant(local, tenant_id)
    rates = {v: written[v] / spent[v] for v in written}
    log(
        f"  text index, {WRITERS} writers: deltas {rates['deltas']:.0f}/s, in place {rates['in_place']:.0f}/s"
    )
    section = (
        f"text index statistics: {WRITERS} concurrent writers to one tenant (one memory per transaction)"
    )
    figures = [
        Figure(
            key=f"write.text_stats.{variant}.rate",
            section=section,
            name=name,
            value=rates[variant],
            unit="mem/s",
            note=f"{failed[variant]} failed transactions",
        )
        for variant, name in (
            ("deltas", "deltas appended, folded by try-lock (in use)"),
            ("in_place", "counters updated in place (alternative)"),
        )
    ]
    figures.append(
        Figure(
            key="write.text_stats.deltas_over_in_place_ratio",
            section=section,
            name="throughput ratio, deltas / in place",
            value=rates["deltas"] / max(rates["in_place"], 1e-9),
        )
    )
    return figures


def _slice(
    local: LocalDatabase, tenant_id: uuid.UUID, texts: Sequence[str], seconds: float
) -> tuple[int, int, float]:
    counts = [0] * WRITERS
    errors = [0] * WRITERS
    deadline = time.perf_counter() + seconds

    def write(worker: int) -> None:
        i = worker
        while time.perf_counter() < deadline:
            try:
                with local.app.tenant(tenant_id) as cur:
                    cur.execute(
                        "INSERT INTO memories (tenant_id, container, content) VALUES (%s, %s, %s)",
                        (tenant_id, CONTAINER, texts[i % len(texts)]),
                    )
                counts[worker] += 1
            except psycopg.errors.DeadlockDetected:
                errors[worker] += 1
            i += WRITERS

    started = time.perf_counter()
    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts), sum(errors), time.perf_counter() - started
