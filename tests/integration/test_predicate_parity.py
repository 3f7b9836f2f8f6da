"""The memory predicates exist twice: in Python (engram.memories.predicates, under RLS; the text leg
checks its rows with them too) and in PL/pgSQL (memory_scope_sql, migrations/0010 and 0012, inside
memory_filter_candidates and memory_scope_ids, which run beside RLS). Over a generated set of
memories, both select the same rows for every time scope, container scope, filter (the owner filter
among them) and party."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from engram.db.database import EVERYONE, NOBODY, Party
from engram.local.stack import LocalDatabase
from engram.memories import predicates, repo
from engram.memories.models import SearchFilters
from engram.memories.new_memory import Embedding, NewMemory, Owner
from engram.memories.predicates import ContainerScope, TimeScope
from engram.tenants.service import IssuedKey

MODEL = "parity-model-4"
OTHER_MODEL = "parity-model-other-4"  # every 7th memory's: memory_scope_ids takes any model's
NOW = datetime.now(UTC)
CONTAINERS = ["a", "a.b", "a.b.c", "a-b", "ab", "b"]
OWNERS = [Owner(None, "tenant"), Owner("u1", "tenant"), Owner("u1", "private"), Owner("u2", "private")]
TIMES = {
    "current": TimeScope(),
    "history": TimeScope(include_history=True),
    "two days ago": TimeScope(as_of=NOW - timedelta(days=2)),
    "twelve days ago": TimeScope(as_of=NOW - timedelta(days=12)),
}
SCOPES = [None, ContainerScope.parse("a"), ContainerScope.parse("a.*"), ContainerScope.parse("a.b.*")]
FILTERS = [
    SearchFilters(),
    SearchFilters(memory_type=["fact"]),
    SearchFilters(tags=["x"]),
    SearchFilters(agent_id="ag1"),
    SearchFilters(conversation_id="c1"),
    SearchFilters(metadata={"k": "v"}),
    SearchFilters(memory_type=["fact", "episode"], tags=["x"], metadata={"k": "v"}),
    SearchFilters(user_id="u1"),
    SearchFilters(user_id="u2", memory_type=["fact"]),
    SearchFilters(user_id="nobody-owns-this"),
]
PARTIES = {"nobody": NOBODY, "u1": Party(user_id="u1"), "u2": Party(user_id="u2"), "everyone": EVERYONE}


@pytest.fixture
def generated(local_db: LocalDatabase, tenant: IssuedKey) -> int:
    """~300 memories over every combination that matters, with their times set afterwards."""
    rng = random.Random(20)
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        for i in range(300):
            memory = NewMemory(
                f"parity note {i}",
                rng.choice(CONTAINERS),
                rng.choice(["fact", "preference", "episode"]),
                owner=rng.choice(OWNERS),
                agent_id=rng.choice([None, "ag1", "ag2"]),
                conversation_id=rng.choice([None, "c1"]),
                tags=rng.choice([[], ["x"], ["x", "y"], ["y"]]),
                metadata=rng.choice([{}, {"k": "v"}, {"k": "w", "n": 1}]),
            )
            row = repo.insert_memory(
                cur,
                tenant.tenant_id,
                memory,
                Embedding([rng.random() for _ in range(4)], OTHER_MODEL if i % 7 == 0 else MODEL),
            )
            _set_times(cur, row["id"], rng)
    return 300


def _set_times(cur: Any, memory_id: Any, rng: random.Random) -> None:
    valid_from = NOW - timedelta(days=rng.choice([20, 10, 1, -5]))
    state = rng.choice(["current", "current", "superseded", "reverted"])
    valid_to = None if state == "current" else valid_from + timedelta(days=rng.choice([3, 9]))
    expires_at = rng.choice([None, None, NOW - timedelta(days=4), NOW + timedelta(days=4)])
    cur.execute(
        "UPDATE memories SET valid_from = %s, valid_to = %s, is_latest = %s, reverted_at = %s, "
        "expires_at = %s WHERE id = %s",
        (
            valid_from,
            valid_to,
            state == "current",
            valid_to if state == "reverted" else None,
            expires_at,
            memory_id,
        ),
    )


def _arguments(scope: ContainerScope | None, filters: SearchFilters, time: TimeScope) -> tuple[Any, ...]:
    return (
        scope.name if scope else None,
        bool(scope and scope.include_children),
        list(filters.memory_type) or None,
        list(filters.tags) or None,
        filters.agent_id,
        filters.conversation_id,
        Jsonb(filters.metadata) if filters.metadata else None,
        time.as_of,
        time.include_history,
        filters.user_id,
    )


def test_python_and_sql_predicates_select_the_same_memories(
    local_db: LocalDatabase, tenant: IssuedKey, generated: int
) -> None:
    sizes = set()
    widened = 0  # cases where memory_scope_ids also took the other model's memories
    for (party_name, party), (time_name, time), scope, filters in itertools.product(
        PARTIES.items(), TIMES.items(), SCOPES, FILTERS
    ):
        with local_db.app.tenant(tenant.tenant_id, party) as cur:
            python = {
                r["id"]
                for r in cur.execute(
                    sql.SQL("SELECT m.id FROM memories m WHERE {} AND m.embedding_model = {}").format(
                        predicates.where(tenant.tenant_id, scope, filters, time), sql.Literal(MODEL)
                    )
                ).fetchall()
            }
            args = _arguments(scope, filters, time)
            by_filter = {
                r["id"]
                for r in cur.execute(
                    "SELECT id FROM memory_filter_candidates(%s, 100000, %s, %s, %s::text[], %s::text[], "
                    "%s, %s, %s::jsonb, %s::timestamptz, %s, NULL, %s)",
                    (MODEL, *args),
                ).fetchall()
            }
            python_any_model = {
                r["id"]
                for r in cur.execute(
                    sql.SQL("SELECT m.id FROM memories m WHERE {}").format(
                        predicates.where(tenant.tenant_id, scope, filters, time)
                    )
                ).fetchall()
            }
            by_scope = {
                r["id"]
                for r in cur.execute(
                    "SELECT id FROM memory_scope_ids(100000, %s, %s, %s::text[], %s::text[], "
                    "%s, %s, %s::jsonb, %s::timestamptz, %s, %s)",
                    args,
                ).fetchall()
            }
        where = f"party={party_name} time={time_name} container={scope} filters={filters}"
        assert python == by_filter, where
        assert python_any_model == by_scope, where
        assert python <= python_any_model, where
        widened += python != python_any_model
        sizes.add(len(python))

    # The grid is not trivially empty or all-equal: scopes and parties really select different rows.
    assert len(sizes) > 20 and max(sizes) < generated
    assert widened > 20
