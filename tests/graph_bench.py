"""Graph benchmark: link_memory, entity search and bounded walks on a synthetic graph.

    PYTHONPATH=shared python -m tests.graph_bench [--entities 10000] [--degree 3] [--memories 500]

Runs on a throw-away embedded PostgreSQL; prints median and p95 per operation. Memories are inserted
without embeddings (the graph never reads them). Figures depend on the machine: compare runs, not
machines.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from engram.graph.link_rules import RuleLinker
from engram.graph.linking import link_memory
from engram.graph.names import normalize_name
from engram.graph.service import GraphService
from engram.local.stack import open_database
from engram.memories.writer import MemoryWriter
from engram.memory_extraction import ExtractedEntity, ExtractedRelation, ExtractionContext, HeuristicExtractor
from engram.providers.local_embeddings import LocalEmbedder
from engram.settings import Settings
from engram.tenants import service as tenants

FIRST = "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil".split()  # noqa: SIM905
LAST = "Smith Jones Brown Garcia Miller Davis Lopez Wilson Moore Taylor Clark Lewis Young King Scott".split()  # noqa: SIM905


def timed(runs: int, call: Callable[[int], object]) -> tuple[float, float]:
    samples = []
    for i in range(runs):
        start = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--degree", type=int, default=3, help="relations per entity")
    parser.add_argument("--memories", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        local = open_database(Settings(data_dir=Path(tmp), database_url=None), cleanup_mode="delete")
        try:
            tenant = tenants.issue_key(local.admin, "bench").tenant_id
            graph = GraphService(local.app, MemoryWriter(LocalEmbedder(model_dir=Path(tmp)), RuleLinker()))
            ids = _seed(local.app, tenant, args.entities, args.degree, rng)
            print(f"graph: {args.entities} entities, {args.entities * args.degree} relations")
            memory_ids = _memories(local.app, tenant, args.memories)
            names = [f"{rng.choice(FIRST)} {rng.choice(LAST)} {i}" for i in range(args.memories // 2)]

            def link(i: int) -> object:
                people = [ExtractedEntity(name=rng.choice(names), type="person") for _ in range(3)]
                source, target = people[0].name, people[1].name
                relations = (
                    []
                    if normalize_name(source) == normalize_name(target)
                    else [ExtractedRelation(source=source, relation="knows", target=target)]
                )
                with local.app.tenant(tenant) as cur:
                    return link_memory(cur, tenant, memory_ids[i], people, relations, None)

            report("link_memory (3 entities, 1 relation)", timed(args.memories, link))
            report(
                "entity search q=<prefix>",
                timed(100, lambda i: graph.search_entities(tenant, "ent 1", None, 20, None)),
            )
            for depth in (1, 2, 3):
                report(
                    f"graph walk depth={depth} limit=50",
                    timed(
                        50, lambda i, d=depth: graph.graph(tenant, str(rng.choice(ids)), depth=d, limit=50)
                    ),  # type: ignore[misc]
                )
            text = " ".join(
                f"{rng.choice(FIRST)} {rng.choice(LAST)} lives in Paris with {rng.choice(FIRST)}."
                for _ in range(1000)
            )
            median, _ = timed(
                5, lambda i: HeuristicExtractor().extract(text, ExtractionContext(max_memories=1000))
            )
            print(f"{'heuristic extraction, 1000 sentences':45s} median {median:8.1f} ms")
        finally:
            local.close()
            if local.embedded is not None:
                local.embedded.stop()


def report(what: str, figures: tuple[float, float]) -> None:
    print(f"{what:45s} median {figures[0]:8.2f} ms   p95 {figures[1]:8.2f} ms")


def _seed(db: object, tenant: UUID, entities: int, degree: int, rng: random.Random) -> list[UUID]:
    with db.tenant(tenant) as cur:  # type: ignore[attr-defined]
        rows = cur.execute(
            """INSERT INTO entities (tenant_id, name, normalized_name, entity_type)
               SELECT %s, 'Ent ' || i, 'ent ' || i, 'thing' FROM generate_series(1, %s) i RETURNING id""",
            (tenant, entities),
        ).fetchall()
        ids = [r["id"] for r in rows]
        cur.execute(
            "INSERT INTO entity_keys (tenant_id, key, entity_type, entity_id) "
            "SELECT tenant_id, normalized_name, entity_type, id FROM entities WHERE tenant_id = %s",
            (tenant,),
        )
        pairs = {(rng.randrange(entities), rng.randrange(entities)) for _ in range(entities * degree)}
        sources = [ids[a] for a, b in pairs if a != b]
        targets = [ids[b] for a, b in pairs if a != b]
        cur.execute(
            """INSERT INTO entity_relations (tenant_id, source_entity, target_entity, relation_type)
               SELECT %s, s, t, 'related_to' FROM unnest(%s::uuid[], %s::uuid[]) AS p(s, t)""",
            (tenant, sources, targets),
        )
    return ids


def _memories(db: object, tenant: UUID, count: int) -> list[UUID]:
    with db.tenant(tenant) as cur:  # type: ignore[attr-defined]
        cur.execute("INSERT INTO containers (tenant_id, name) VALUES (%s, 'default')", (tenant,))
        rows = cur.execute(
            "INSERT INTO memories (tenant_id, container, content) "
            "SELECT %s, 'default', 'memory ' || i FROM generate_series(1, %s) i RETURNING id",
            (tenant, count),
        ).fetchall()
    return [r["id"] for r in rows]


if __name__ == "__main__":
    main()
