"""Graph walks at scale: one tenant holding a large knowledge graph, walked three hops deep.

The data set (bench tooling, not app code) is COPYed in as the admin, in its own database
(`.bench/db-graph-<scale>`, kept between runs): entities, relations between them (sources uniform,
targets skewed so that some entities are hubs, as "the user" or a company is in a real graph, a fifth
of them extracted from a memory), memories that mention two entities each (also skewed), and
memory relationships linking each memory to up to three nearby older ones.

The walks are timed through the handlers in-process, warm, as the search latency is:
`GET /v1/graph?entity=<id>&depth=3` and `GET /v1/memories/{id}/related?depth=3`, from random roots.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

import numpy as np
import psycopg

from engram.db.database import Database, Party
from engram.local.stack import LocalDatabase
from engram.memories import repo as memories_repo
from engram.tenants import service as tenants
from tests.bench.harness import Handlers, Reply, check
from tests.bench.loader import MAINTENANCE_WORK_MEM, _loaded_under, _schema
from tests.bench.report import Figure, Target, percentiles

P95_TARGET_MS = 20.0
DEPTH = 3
CONTAINER = "graph"
MARKER = "graph-dataset.json"
TABLES = ("entities", "entity_keys", "entity_relations", "entity_mentions", "memory_relationships")
WARM_TABLES = ("memories", *TABLES)
RELATION_TYPES = ("knows", "works_at", "part_of", "located_in", "related_to", "mentions")
MEMORY_LINKS = ("updates", "extends", "derives")
HUB_SKEW = 0.6  # targets drawn with probability ~ 1 / rank^0.6: a few entities hold thousands of edges
# The anchor, timed beside the handlers on the same roots: the 3-hop walk a naive backend would run,
# one recursive CTE over both directions (each (entity, depth) once), capped at 10,000 rows, no
# visibility or validity rules. Its p95 against the handler's is the figure the machine's load
# cannot move much.
NAIVE_WALK = """WITH RECURSIVE walk(entity_id, depth) AS (
        SELECT %(root)s::uuid, 0
      UNION
        SELECT CASE WHEN r.source_entity = w.entity_id THEN r.target_entity ELSE r.source_entity END,
               w.depth + 1
        FROM walk w JOIN entity_relations r
          ON r.tenant_id = %(t)s AND (r.source_entity = w.entity_id OR r.target_entity = w.entity_id)
        WHERE w.depth < %(depth)s)
    SELECT entity_id, min(depth) FROM (SELECT * FROM walk LIMIT 10000) w GROUP BY 1 ORDER BY 2, 1 LIMIT 50"""


@dataclass(frozen=True)
class GraphSpec:
    entities: int
    relations: int
    memories: int
    seed: int = 17

    @property
    def name(self) -> str:
        return f"{self.entities // 1000}K entities, {self.relations / 1e6:g}M relations"


@dataclass
class GraphDataset:
    spec: GraphSpec
    tenant_id: UUID
    entity_ids: list[UUID]
    memory_ids: list[UUID]
    load: dict[str, Any]


def ensure_graph(local: LocalDatabase, spec: GraphSpec, log: Callable[[str], None]) -> GraphDataset:
    """The data set in `local`, loaded unless a matching one is there already."""
    marker = local.settings.data_dir / MARKER
    schema = _schema(local)
    tenant_id = tenants.ensure_tenant(local.admin, "bench-graph")
    world = _generate(spec)
    if marker.is_file():
        saved = json.loads(marker.read_text())
        if saved.get("spec") == asdict(spec) and _loaded_under(saved.get("schema"), schema):
            return GraphDataset(spec, tenant_id, world["entity_ids"], world["memory_ids"], saved["load"])
        marker.unlink()
    log(f"  graph: loading {spec.name}, {spec.memories:,} memories (kept in {local.settings.data_dir})")
    load = _load(local, tenant_id, world, log)
    marker.write_text(json.dumps({"spec": asdict(spec), "schema": schema, "load": load}, indent=2))
    return GraphDataset(spec, tenant_id, world["entity_ids"], world["memory_ids"], load)


def _uuids(rng: np.random.Generator, n: int) -> list[UUID]:
    raw = rng.bytes(16 * n)
    return [uuid.UUID(bytes=raw[i * 16 : i * 16 + 16], version=4) for i in range(n)]


def _skewed(rng: np.random.Generator, n_items: int, size: int, rank_of: np.ndarray) -> np.ndarray:
    weights = 1.0 / np.arange(1, n_items + 1) ** HUB_SKEW
    return rank_of[rng.choice(n_items, size=size, p=weights / weights.sum())]


def _generate(spec: GraphSpec) -> dict[str, Any]:
    """Deterministic for a spec: the roots are drawn from it without reading the database."""
    rng = np.random.default_rng(spec.seed)
    entity_ids = _uuids(rng, spec.entities)
    memory_ids = _uuids(rng, spec.memories)
    hubs = rng.permutation(spec.entities)  # which entities the skew favours
    pairs: set[tuple[int, int, int]] = set()
    while len(pairs) < spec.relations:
        n = spec.relations - len(pairs)
        src = rng.integers(0, spec.entities, size=n)
        dst = _skewed(rng, spec.entities, n, hubs)
        kind = rng.integers(0, len(RELATION_TYPES), size=n)
        pairs.update((int(s), int(d), int(k)) for s, d, k in zip(src, dst, kind, strict=True) if s != d)
    relations = sorted(pairs)[: spec.relations]
    order = rng.permutation(len(relations))
    relations = [relations[i] for i in order]
    from_memory = rng.random(len(relations)) < 0.2
    relation_memory = rng.integers(0, spec.memories, size=len(relations))
    mentions = _skewed(rng, spec.entities, spec.memories * 2, hubs).reshape(spec.memories, 2)
    links: set[tuple[int, int, int]] = set()
    for i in range(1, spec.memories):
        for back in rng.integers(1, min(i, 1000) + 1, size=min(i, 3)):
            links.add((i, i - int(back), int(rng.integers(0, len(MEMORY_LINKS)))))
    return {
        "entity_ids": entity_ids,
        "memory_ids": memory_ids,
        "relations": relations,
        "relation_memory": np.where(from_memory, relation_memory, -1),
        "mentions": mentions,
        "links": sorted(links),
    }


def _load(local: LocalDatabase, tenant_id: UUID, world: dict[str, Any], log: Callable[[str], None]) -> dict:
    entity_ids: list[UUID] = world["entity_ids"]
    memory_ids: list[UUID] = world["memory_ids"]
    started = time.perf_counter()
    with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
        conn.execute("DELETE FROM memories WHERE tenant_id = %s", (tenant_id,))  # cascades to the graph
        conn.execute("DELETE FROM entities WHERE tenant_id = %s", (tenant_id,))
        with local.admin.tenant(tenant_id) as cur:
            memories_repo.ensure_container(cur, tenant_id, CONTAINER)
        with conn.transaction():
            with conn.cursor().copy(
                "COPY memories (id, tenant_id, container, content, memory_type) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "text", "text", "text"])
                for i, mid in enumerate(memory_ids):
                    copy.write_row((mid, tenant_id, CONTAINER, f"graph bench memory {i}", "fact"))
            with conn.cursor().copy(
                "COPY entities (id, tenant_id, name, normalized_name, entity_type) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "text", "text", "text"])
                for i, eid in enumerate(entity_ids):
                    copy.write_row((eid, tenant_id, f"Entity {i}", f"entity {i}", "thing"))
            with conn.cursor().copy(
                "COPY entity_keys (tenant_id, key, entity_type, entity_id) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "text", "text", "uuid"])
                for i, eid in enumerate(entity_ids):
                    copy.write_row((tenant_id, f"entity {i}", "thing", eid))
            with conn.cursor().copy(
                "COPY entity_relations (tenant_id, source_entity, target_entity, relation_type, "
                "source_memory_id) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "uuid", "text", "uuid"])
                for (s, d, k), m in zip(world["relations"], world["relation_memory"], strict=True):
                    source = memory_ids[m] if m >= 0 else None
                    copy.write_row((tenant_id, entity_ids[s], entity_ids[d], RELATION_TYPES[k], source))
            with conn.cursor().copy(
                "COPY entity_mentions (tenant_id, entity_id, memory_id, is_subject) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "uuid", "bool"])
                for i, (a, b) in enumerate(world["mentions"]):
                    copy.write_row((tenant_id, entity_ids[a], memory_ids[i], True))
                    if b != a:
                        copy.write_row((tenant_id, entity_ids[b], memory_ids[i], False))
            with conn.cursor().copy(
                "COPY memory_relationships (tenant_id, source_id, target_id, relationship_type) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "uuid", "uuid", "text"])
                for s, t, k in world["links"]:
                    copy.write_row((tenant_id, memory_ids[s], memory_ids[t], MEMORY_LINKS[k]))
        copy_seconds = time.perf_counter() - started
        log(f"    copied in {copy_seconds:.0f}s")
        conn.execute(
            psycopg.sql.SQL("SET maintenance_work_mem = {}").format(psycopg.sql.Literal(MAINTENANCE_WORK_MEM))
        )
        t0 = time.perf_counter()
        for table in WARM_TABLES:
            conn.execute(psycopg.sql.SQL("VACUUM (ANALYZE) {}").format(psycopg.sql.Identifier(table)))
        vacuum = time.perf_counter() - t0
    return {
        "relations": len(world["relations"]),
        "memory_relationships": len(world["links"]),
        "copy_seconds": round(copy_seconds, 2),
        "vacuum_seconds": round(vacuum, 2),
        "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def graph_walks(
    handlers: Handlers, app: Database, dataset: GraphDataset, queries: int, log: Callable[[str], None]
) -> list[Figure]:
    """p50/p95 of both walks from random roots (30 warm-up calls each, not counted), and of the naive
    walk on the same roots (`app`: the app role, under RLS as the handlers are)."""
    rng = np.random.default_rng([dataset.spec.seed, 5])
    entity_roots = rng.integers(0, len(dataset.entity_ids), size=queries + 30)
    memory_roots = rng.integers(0, len(dataset.memory_ids), size=queries + 30)
    walks: dict[str, list[float]] = {"graph": [], "related": [], "naive": []}
    reached: dict[str, list[int]] = {"graph": [], "related": []}
    truncated = 0
    started = time.perf_counter()
    for i in range(queries + 30):
        calls = [
            (
                "graph",
                lambda i=i: handlers.call(
                    "GET",
                    "/v1/graph",
                    dataset.tenant_id,
                    None,
                    query=f"entity={dataset.entity_ids[entity_roots[i]]}&depth={DEPTH}",
                ),
            ),
            ("naive", lambda i=i: _naive(app, dataset, dataset.entity_ids[entity_roots[i]])),
            (
                "related",
                lambda i=i: handlers.call(
                    "GET",
                    "/v1/memories/{id}/related",
                    dataset.tenant_id,
                    None,
                    query=f"depth={DEPTH}",
                    params={"id": str(dataset.memory_ids[memory_roots[i]])},
                ),
            ),
        ]
        for name, call in calls if i % 2 else calls[::-1]:  # alternate, so none always runs first
            reply = check(call())
            if i < 30:
                continue
            walks[name].append(reply.seconds * 1000)
            if name == "naive":
                continue
            if name == "graph":
                reached[name].append(len(reply.body["nodes"]))
                truncated += bool(reply.body["truncated"])
            else:
                reached[name].append(len(reply.body["related"]))
    log(f"  graph: {queries} walks of each kind in {time.perf_counter() - started:.0f}s")
    section = (
        f"graph walks, depth {DEPTH} @ {dataset.spec.name}, {dataset.spec.memories // 1000}K memories "
        "(one tenant; handler, warm)"
    )
    scale = f"{dataset.spec.entities // 1000}k"
    figures: list[Figure] = []
    for name, label in (("graph", "GET /v1/graph"), ("related", "GET /v1/memories/{id}/related")):
        p = percentiles(walks[name])
        for point in (50, 95):
            figures.append(
                Figure(
                    key=f"graph.{name}.p{point}@{scale}",
                    section=section,
                    name=f"{label} p{point}",
                    value=p[point],
                    unit="ms",
                    target=Target("<=", P95_TARGET_MS) if point == 95 else None,
                )
            )
        figures.append(
            Figure(
                key=f"graph.{name}.results.median@{scale}",
                section=section,
                name=f"{label}: results per answer, median",
                value=float(np.median(reached[name])),
            )
        )
    naive = percentiles(walks["naive"])[95]
    figures.append(
        Figure(
            key=f"graph.naive.p95@{scale}",
            section=section,
            name="anchor: naive 3-hop recursive CTE, same roots (SQL only, first 50) p95",
            value=naive,
            unit="ms",
        )
    )
    figures.append(
        Figure(
            key=f"graph.graph.naive_ratio@{scale}",
            section=section,
            name="GET /v1/graph p95 / anchor p95",
            value=percentiles(walks["graph"])[95] / naive,
            unit="ratio",
        )
    )
    figures.append(
        Figure(
            key=f"graph.graph.truncated_share@{scale}",
            section=section,
            name="GET /v1/graph: answers marked truncated",
            value=truncated / queries,
            unit="ratio",
        )
    )
    return figures


def _naive(app: Database, dataset: GraphDataset, root: UUID) -> Any:
    started = time.perf_counter()
    with app.tenant(dataset.tenant_id, Party()) as cur:
        rows = cur.execute(NAIVE_WALK, {"root": root, "t": dataset.tenant_id, "depth": DEPTH}).fetchall()
    return Reply(200, rows, time.perf_counter() - started)
