"""Erasing a user (the right to erasure): everything owned by or about one user in a tenant, in one
transaction. Each table's SQL is in its own repository; this service only orchestrates them.

What goes: the user's memories (every version; a shared memory one of them had retired is current
again), the entity mentions and relations extracted from them, and the entities nothing else names;
their sessions and messages, working keys, procedures, plans (with their task contexts), the
documents they uploaded (with their chunks, the memories only those documents gave, and their stored
files), and containers left empty that only held what went.

Without confirmation the same work runs in a transaction that is rolled back, so the counts shown
are exactly what a confirmed erasure removes. The audit log line carries counts and a hash of the
user id, never content."""

from __future__ import annotations

import hashlib
from uuid import UUID

from engram.containers import repo as containers
from engram.db.database import EVERYONE, Database, TenantTx, UnitOfWork
from engram.documents import repo as documents
from engram.documents.blobs import BlobStore, work_prefix_of
from engram.documents.outputs import purge_outputs
from engram.errors import Conflict
from engram.graph import repo as graph
from engram.memories import repo as memories
from engram.memories.search import text as text_index
from engram.memories.writer import remove as remove_memories
from engram.observability import logger
from engram.plans import repo as plans
from engram.procedures import repo as procedures
from engram.sessions import repo as sessions
from engram.users.models import UserErasure
from engram.working import repo as working


class ConfirmationRequired(Conflict):
    code = "confirmation_required"


class _DryRun(Exception):
    """Rolls the preview's transaction back, carrying what it counted."""

    def __init__(self, counts: UserErasure) -> None:
        self.counts = counts


class UserErasureService:
    def __init__(self, db: Database, blobs: BlobStore, *, work_prefix: str) -> None:
        self.db = db
        self.blobs = blobs  # the erased documents' stored files
        self.work_prefix = work_prefix

    def erase(self, tenant_id: UUID, user_id: str, *, confirm: bool) -> UserErasure:
        """Without `confirm`, always a 409 `confirmation_required` listing what would go (all zeros for
        a user with nothing left), and nothing goes; with it, the counts of what went."""
        try:
            with self.db.tenant(tenant_id, EVERYONE) as cur:
                counts, document_ids = self._erase(cur, tenant_id, user_id)
                if not confirm:
                    raise _DryRun(counts)
        except _DryRun as preview:
            held = _summary(preview.counts)
            raise ConfirmationRequired(
                f"user {user_id!r} has {held} in this tenant; repeat with ?confirm=true to erase them all"
                if held
                else f"user {user_id!r} has nothing in this tenant: ?confirm=true would erase nothing",
                details={"would_erase": preview.counts.model_dump(exclude={"user_id", "erased"})},
            ) from None
        for document_id in document_ids:
            try:
                self.blobs.delete_prefix(work_prefix_of(self.work_prefix, tenant_id, document_id))
            except Exception:  # the rows are gone; files left behind are logged, as for one document
                logger.exception(
                    "could not delete an erased document's stored files",
                    extra={"document_id": str(document_id)},
                )
        logger.info(
            "user erased",
            extra={
                "audit": "user_erasure",
                "tenant_id": str(tenant_id),
                # An auditor holding the user id can match it; the log itself names nobody.
                "user_sha256": hashlib.sha256(f"{tenant_id}:{user_id}".encode()).hexdigest(),
                "counts": counts.model_dump(exclude={"user_id", "erased"}),
            },
        )
        return counts.model_copy(update={"erased": True})

    @staticmethod
    def _erase(cur: TenantTx, tenant_id: UUID, user_id: str) -> tuple[UserErasure, list[UUID]]:
        document_ids = documents.ids_of_user(cur, tenant_id, user_id)
        chunks = documents.count_chunks(cur, tenant_id, document_ids)
        held = [row["container"] for row in documents.containers_of(cur, tenant_id, document_ids)]
        own = memories.of_user(cur, tenant_id, user_id)
        ids = [row["id"] for row in own]
        given = {m for d in document_ids for m in documents.memories_only_from(cur, tenant_id, d)} - set(ids)
        # Counted (and their entities noted) before the documents take the memories only they gave.
        extracted = graph.extracted_from(cur, tenant_id, [*ids, *given])
        for document_id in document_ids:
            purge_outputs(cur, tenant_id, document_id, drop_orphaned_entities=False)
            documents.delete_document(cur, tenant_id, document_id)
        remove_memories(UnitOfWork(cur, tenant_id), ids, drop_orphaned_entities=False)
        # The entities they named go when nothing else refers to them, curated or not: the user's data.
        entities = graph.delete_unreferenced(
            cur, tenant_id, extracted["entities"], curated_too=True, limit=None
        )
        session_containers = sessions.containers_of_user(cur, tenant_id, user_id)
        session_count, messages = sessions.delete_of_user(cur, tenant_id, user_id)
        plan_count, tasks = plans.delete_of_user(cur, tenant_id, user_id)
        text_index.fold_statistics(cur, tenant_id)
        counts = UserErasure(
            user_id=user_id,
            erased=False,
            memories=len(ids) + len(given),
            entity_mentions=int(extracted["mentions"]),
            entity_relations=int(extracted["relations"]),
            entities=entities,
            sessions=session_count,
            messages=messages,
            working_keys=working.delete_of_user(cur, tenant_id, user_id),
            procedures=procedures.delete_of_user(cur, tenant_id, user_id),
            documents=len(document_ids),
            chunks=chunks,
            plans=plan_count,
            task_contexts=tasks,
            containers=containers.delete_emptied(
                cur, tenant_id, [*held, *(row["container"] for row in own), *session_containers]
            ),
        )
        return counts, document_ids


def _summary(counts: UserErasure) -> str:
    parts = [
        f"{value} {key.replace('_', ' ')}"
        for key, value in counts.model_dump(exclude={"user_id", "erased"}).items()
        if value
    ]
    return ", ".join(parts)
