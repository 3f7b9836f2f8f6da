"""Which relations a graph walk follows and a page shows: one rule (relation_counts, migrations/0026)
for the walk, a function whose plans a database session keeps, and for the page's edges, a statement
sent each time. Both must hold in every mode (current, as of a time, with history), for every user,
on every call of a session, whatever plan the session has kept."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from engram import deps
from engram.db.database import Party
from engram.graph.models import EntityRef, RelationCreate
from engram.local.stack import LocalDatabase
from engram.memories.models import MemoryCreate
from engram.tenants.service import IssuedKey

MOVED = datetime(2025, 3, 7, 9, tzinfo=UTC)
BEFORE_THE_MOVE = datetime(2025, 3, 4, 9, tzinfo=UTC)


def _memory(tenant: IssuedKey, content: str) -> UUID:
    return deps.memory_service().create(tenant.tenant_id, MemoryCreate(content=content, extract="none")).id


def _relate(tenant: IssuedKey, target: str, **fields: object) -> None:
    deps.graph_service().create_relation(
        tenant.tenant_id,
        RelationCreate.model_validate(
            {"source": EntityRef(name="Alice"), "relation_type": "knows", "target": EntityRef(name=target)}
            | fields
        ),
    )


def test_the_walk_and_its_edges_follow_one_rule_in_every_mode_on_every_call(
    local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    paris = _memory(tenant, "Alice lives in Paris")
    secret = _memory(tenant, "Alice knows Bob")
    _relate(tenant, "Paris", valid_from=datetime(2025, 1, 1, tzinfo=UTC), source_memory_id=paris)
    _relate(tenant, "Berlin", valid_from=MOVED)
    _relate(tenant, "Bob", source_memory_id=secret)
    # The Paris memory is superseded at the move; the Bob memory becomes Carol's alone.
    with local_db.app.tenant(tenant.tenant_id, Party(user_id="carol")) as cur:
        cur.execute("UPDATE memories SET is_latest = false, valid_to = %s WHERE id = %s", (MOVED, paris))
        cur.execute("UPDATE memories SET user_id = 'carol', visibility = 'private' WHERE id = %s", (secret,))
    cases = [
        ({}, {"Alice", "Berlin"}),
        ({"user_id": "carol"}, {"Alice", "Berlin", "Bob"}),
        ({"include_history": True}, {"Alice", "Berlin", "Paris"}),
        ({"include_history": True, "user_id": "carol"}, {"Alice", "Berlin", "Paris", "Bob"}),
        ({"as_of": BEFORE_THE_MOVE}, {"Alice", "Paris"}),
        ({"as_of": BEFORE_THE_MOVE, "user_id": "dave"}, {"Alice", "Paris"}),
    ]

    # Interleaved, and more times than PostgreSQL plans a kept statement afresh (5) before it may
    # keep one plan for all arguments.
    for _ in range(8):
        for options, expected in cases:
            graph = deps.graph_service().graph(tenant.tenant_id, "Alice", depth=2, **options)  # type: ignore[arg-type]

            names = {node.name for node in graph.nodes}
            edges = {(edge.source.name, edge.target.name) for edge in graph.edges}
            assert names == expected, options
            assert edges == {("Alice", name) for name in expected - {"Alice"}}, options
