"""`engram cleanup` and its scheduled Lambda: for every tenant, delete expired memories and
working-memory keys, superseded memory versions older than the retention period, and then the
entities extraction made that nothing mentions or relates to any more (engram.graph.repo
delete_unreferenced; entities made through the API stay).

Expired rows are already invisible to every read the moment they expire; this reclaims the space,
and takes the names extraction found in them out of the entity list and the graph. It runs as the app
role, one tenant at a time through RLS (with the party EVERYONE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from uuid import UUID

from pydantic import BaseModel

from engram.db.party import EVERYONE
from engram.graph import repo as graph_repo
from engram.maintenance import repo

if TYPE_CHECKING:
    from engram.db.database import Database, TenantTx

BATCH = 5000


class CleanupReport(BaseModel):
    tenants: int
    expired_memories: int
    superseded_memories: int
    expired_working_keys: int
    orphaned_entities: int  # uncurated entities nothing referred to any more
    retention_days: int | None


def cleanup(db: Database, *, retention_days: int | None, batch: int = BATCH) -> CleanupReport:
    """`retention_days=None` keeps superseded versions forever."""
    with db.transaction() as cur:
        tenants = repo.tenant_ids(cur)

    def expired_memories(cur: TenantTx, tenant_id: UUID) -> int:
        return repo.delete_expired_memories(cur, tenant_id, batch)

    def expired_working(cur: TenantTx, tenant_id: UUID) -> int:
        return repo.delete_expired_working(cur, tenant_id, batch)

    def superseded_memories(cur: TenantTx, tenant_id: UUID) -> int:
        assert retention_days is not None
        return repo.delete_superseded_memories(cur, tenant_id, retention_days, batch)

    def orphaned_entities(cur: TenantTx, tenant_id: UUID) -> int:
        return graph_repo.delete_unreferenced(cur, tenant_id, None, curated_too=False, limit=batch)

    expired = superseded = working = orphaned = 0
    for tenant_id in tenants:
        expired += _drain(db, tenant_id, expired_memories, batch)
        working += _drain(db, tenant_id, expired_working, batch)
        if retention_days is not None:
            superseded += _drain(db, tenant_id, superseded_memories, batch)
        # After the memories: those deleted above no longer refer to their entities.
        orphaned += _drain(db, tenant_id, orphaned_entities, batch)
    return CleanupReport(
        tenants=len(tenants),
        expired_memories=expired,
        superseded_memories=superseded,
        expired_working_keys=working,
        orphaned_entities=orphaned,
        retention_days=retention_days,
    )


def _drain(db: Database, tenant_id: UUID, delete: Callable[[TenantTx, UUID], int], batch: int) -> int:
    total = 0
    while True:
        with db.tenant(tenant_id, EVERYONE) as cur:
            deleted = delete(cur, tenant_id)
        total += deleted
        if deleted < batch:
            return total
