"""Per-container HNSW indexes in large tenants: made for the containers that qualify, chosen by the planner
for a search of that container (run as the app role, under RLS), sized by the search planner, rebuilt when
invalid, and dropped once their container no longer qualifies."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

import psycopg

from engram.db.container_indexes import (
    MAX_CONTAINER_INDEXES,
    container_index_name,
    scope_rows,
    scopes_to_index,
)
from engram.db.database import EVERYONE
from engram.db.tenant_indexes import IndexPolicy, ensure_tenant_indexes, tenant_index_name
from engram.local.stack import LocalDatabase
from engram.memories import repo
from engram.memories.models import SearchFilters
from engram.memories.new_memory import Embedding, NewMemory
from engram.memories.predicates import ContainerScope
from engram.memories.search.plan import SearchPlan, VectorQuery
from engram.memories.search.planner import SearchPlanner, exact_scan_cap, walk_ef
from engram.memories.search.repo import MEMORIES
from engram.tenants.service import IssuedKey
from tests.integration.test_tenant_indexes import DIMS, MODEL, search_plan

NO_BOUND = 10**9
TENANT_MIN, CONTAINER_MIN = 50, 20


def _vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIMS)]


def _store(local_db: LocalDatabase, tenant: IssuedKey, count: int, container: str, seed: int) -> None:
    rng = random.Random(seed)
    with local_db.app.tenant(tenant.tenant_id, EVERYONE) as cur:
        for i in range(count):
            repo.insert_memory(
                cur, tenant.tenant_id, NewMemory(f"memory {i}", container), Embedding(_vector(rng), MODEL)
            )


def _ensure(local_db: LocalDatabase) -> list[str]:
    return ensure_tenant_indexes(
        local_db.admin_conninfo,
        IndexPolicy(
            MODEL,
            DIMS,
            tenant_min_rows=TENANT_MIN,
            shared_max_rows=NO_BOUND,
            container_min_rows=CONTAINER_MIN,
        ),
    )


def _valid(local_db: LocalDatabase, name: str) -> bool:
    with psycopg.connect(local_db.admin_conninfo) as conn:
        row = conn.execute(
            "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)", (name,)
        ).fetchone()
    return bool(row and row[0])


def _exact_cap(local_db: LocalDatabase, tenant: IssuedKey, container: ContainerScope) -> int | None:
    """The population above which the planner walks an index, for a search of `container`."""
    return _planned(local_db, tenant, container, ef_search=40).exact_cap


def _planned(
    local_db: LocalDatabase, tenant: IssuedKey, container: ContainerScope | None, ef_search: int | None
) -> SearchPlan:
    """The planner's plan for a vector search of `container`."""
    planner = SearchPlanner(local_db.app, exact_scan_threshold=1, ef_search=ef_search, max_scan_tuples=20_000)
    plan = SearchPlan(
        tenant_id=tenant.tenant_id,
        text=None,
        vector=VectorQuery.of(_vector(random.Random(4)), MODEL, exact=False),
        container=container,
        filters=SearchFilters(),
        candidates=40,
        limit=10,
    )
    return planner.for_corpus(MEMORIES, plan)


def test_a_large_containers_searches_use_an_index_of_its_own(
    local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    _store(local_db, tenant, 130, "inbox", seed=1)  # too large a share of the tenant's: its walk is fine
    _store(local_db, tenant, 30, "notes", seed=2)  # at least CONTAINER_MIN, at most a fifth of 192
    _store(local_db, tenant, 8, "tiny", seed=3)  # too few
    _store(local_db, tenant, 12, "crm.a", seed=4)  # too few each, but "crm.*" holds 24
    _store(local_db, tenant, 12, "crm.b", seed=5)
    notes = container_index_name(tenant.tenant_id, MODEL, DIMS, "notes")
    crm = container_index_name(tenant.tenant_id, MODEL, DIMS, "crm.*")
    own = tenant_index_name(tenant.tenant_id, MODEL, DIMS)

    created = _ensure(local_db)

    assert {own, notes, crm} <= set(created)
    assert _ensure(local_db) == []
    for other in ("inbox", "tiny", "crm.a", "notes.*", "inbox.*"):  # "notes.*" is no more than "notes"
        assert not _valid(local_db, container_index_name(tenant.tenant_id, MODEL, DIMS, other))
    in_notes = search_plan(local_db, tenant, ContainerScope("notes", include_children=False))
    assert notes in in_notes and own not in in_notes, in_notes
    in_inbox = search_plan(local_db, tenant, ContainerScope("inbox", include_children=False))
    assert own in in_inbox and notes not in in_inbox, in_inbox
    # The search's predicate for "crm.*" implies the range of that index's.
    in_crm = search_plan(local_db, tenant, ContainerScope("crm", include_children=True))
    assert crm in in_crm and own not in in_crm, in_crm
    # "notes.*" may hold rows outside the "notes" index: it cannot serve that search.
    with_children = search_plan(local_db, tenant, ContainerScope("notes", include_children=True))
    assert notes not in with_children, with_children
    # The search planner sizes the exact scan's cap by the index the search walks.
    caps = {
        scope: _exact_cap(local_db, tenant, scope)
        for scope in (
            ContainerScope("notes", False),
            ContainerScope("inbox", False),
            ContainerScope("notes", True),
            ContainerScope("crm", True),
        )
    }
    assert list(caps.values()) == [exact_scan_cap(1, rows, 40, 20_000) for rows in (30, 192, 192, 24)]


def test_the_walks_candidate_list_follows_the_index_walked(
    local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    _store(local_db, tenant, 130, "inbox", seed=8)
    _store(local_db, tenant, 30, "notes", seed=9)
    _ensure(local_db)
    planner = SearchPlanner(local_db.app, exact_scan_threshold=1, ef_search=None, max_scan_tuples=20_000)

    sized = [
        _planned(local_db, tenant, scope, ef_search=None) for scope in (None, ContainerScope("notes", False))
    ]
    pinned = _planned(local_db, tenant, None, ef_search=300)

    # The tenant's index (160 rows) and the container's (30) are small: the shortest list, 64.
    assert [plan.ef_search for plan in sized] == [walk_ef(160, 40), walk_ef(30, 40)] == [64, 64]
    assert planner.scan_settings(sized)["hnsw.ef_search"] == "64"  # type: ignore[index]
    assert pinned.ef_search == 300
    assert planner.scan_settings([*sized, pinned])["hnsw.ef_search"] == "300"  # type: ignore[index]
    # A search without a vector walks nothing: no scan settings for its statement.
    assert planner.scan_settings([replace(sized[0], vector=None, ef_search=None)]) is None


def test_a_container_index_goes_when_its_container_no_longer_qualifies(
    local_db: LocalDatabase, tenant: IssuedKey
) -> None:
    _store(local_db, tenant, 130, "inbox", seed=4)
    _store(local_db, tenant, 30, "notes", seed=5)
    notes = container_index_name(tenant.tenant_id, MODEL, DIMS, "notes")
    _ensure(local_db)
    assert _valid(local_db, notes)

    _move(local_db, tenant, "notes", "inbox", 15)  # 15 left: under CONTAINER_MIN, not under half of it
    assert _ensure(local_db) == [] and _valid(local_db, notes)
    _move(local_db, tenant, "notes", "inbox", 10)  # 5 left
    _ensure(local_db)
    assert not _valid(local_db, notes)


def test_a_container_index_left_invalid_is_built_again(local_db: LocalDatabase, tenant: IssuedKey) -> None:
    _store(local_db, tenant, 130, "inbox", seed=6)
    _store(local_db, tenant, 30, "notes", seed=7)
    notes = container_index_name(tenant.tenant_id, MODEL, DIMS, "notes")
    _ensure(local_db)
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        # What an interrupted CREATE INDEX CONCURRENTLY leaves behind.
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", (notes,))

    assert _ensure(local_db) == [notes]
    assert _valid(local_db, notes)


def test_the_scopes_of_a_tenants_containers() -> None:
    t = uuid.uuid4()
    rows = {(t, "a.b"): 5, (t, "a.c"): 3, (t, "a"): 2, (t, "x"): 4, (t, "p.q.r"): 7}
    # "x.*", "a.b.*" and "p.*" (all in "p.q.r") are no more than one of their parts.
    assert scope_rows(rows) == {
        (t, "a.b"): 5,
        (t, "a.c"): 3,
        (t, "a"): 2,
        (t, "x"): 4,
        (t, "p.q.r"): 7,
        (t, "a.*"): 10,
    }


def test_which_scopes_get_an_index() -> None:
    big, small = uuid.uuid4(), uuid.uuid4()
    rows = {(big, "inbox"): 1_000, (big, "notes"): 250, (big, "crm"): 100, (small, "notes"): 150}
    # `small` has no index of its own; "inbox" is most of `big`; "crm" is one too few.
    assert scopes_to_index(rows, {big}, set(), min_rows=101) == {(big, "notes")}
    # An index made stays while its scope keeps half of min_rows and twice the share.
    assert scopes_to_index(rows, {big}, {(big, "crm")}, min_rows=200) == {(big, "crm"), (big, "notes")}
    assert scopes_to_index(rows, {big}, {(big, "crm")}, min_rows=202) == {(big, "notes")}
    # A name with its children.
    grouped = {(big, "inbox"): 2_000, (big, "crm.a"): 150, (big, "crm.b"): 150}
    assert scopes_to_index(grouped, {big}, set(), min_rows=200) == {(big, "crm.*")}
    # At the cap, the ones made stay, even if a newcomer is larger.
    many = {(big, f"c{i}"): 1_000 + i for i in range(MAX_CONTAINER_INDEXES + 5)}
    many[(big, "rest")] = 10**7
    made = scopes_to_index(many, {big}, set(), min_rows=500)
    assert len(made) == MAX_CONTAINER_INDEXES and (big, "c0") not in made
    newcomer = {**many, (big, "new"): 5_000}
    assert scopes_to_index(newcomer, {big}, made, min_rows=500) == made


def _move(local_db: LocalDatabase, tenant: IssuedKey, source: str, target: str, count: int) -> None:
    with psycopg.connect(local_db.admin_conninfo, autocommit=True) as conn:
        conn.execute(
            "UPDATE memories SET container = %s WHERE id IN "
            "(SELECT id FROM memories WHERE tenant_id = %s AND container = %s LIMIT %s)",
            (target, tenant.tenant_id, source, count),
        )
