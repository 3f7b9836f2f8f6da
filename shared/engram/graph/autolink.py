"""Linking a new memory to the existing memories nearest to it: the graph-link step of the document
pipeline and of session message extraction.

The candidates are the container's current, older memories closest by vector and those sharing an
entity with it; the linker's rules (engram.pipeline.linking) decide `updates` (retires the older
memory, as an explicit `supersedes` does; only between memories about one subject), `extends`,
`derives` or nothing. Runs inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from engram.db.database import TenantTx
from engram.graph import repo as graphrepo
from engram.graph.models import MemoryFacts
from engram.memories import repo as memories
from engram.pipeline import repo as linkrepo
from engram.pipeline.linking import LinkCandidate, LinkSubject, RuleLinker

LINK_CANDIDATES = 5


def link_to_nearest(
    cur: TenantTx,
    tenant_id: UUID,
    linker: RuleLinker,
    memory: Mapping[str, Any],
    *,
    metadata: Mapping[str, Any],
    document_id: UUID | None = None,
    same_owner: bool = False,
) -> int:
    """Link `memory` (a row with id, content, memory_type, valid_from) to its nearest older memories.
    `document_id` leaves out memories of the same document; `same_owner` keeps to memories of the same
    user and visibility. Returns the number of links made."""
    scope: dict[str, Any] = {"document_id": document_id, "same_owner": same_owner}
    near = linkrepo.nearest_latest_memories(cur, tenant_id, memory["id"], LINK_CANDIDATES, **scope)
    sharing = graphrepo.memories_sharing_entities(cur, tenant_id, memory["id"], LINK_CANDIDATES, **scope)
    facts = facts_of(cur, tenant_id, memory["id"])
    subject = LinkSubject(
        memory["id"],
        memory["content"],
        memory["memory_type"],
        facts.entities,
        facts.subjects,
        facts.relations,
    )
    candidates: dict[UUID, LinkCandidate] = {}
    for row in [*near, *sharing]:
        if row["id"] in candidates:
            continue
        other = facts_of(cur, tenant_id, row["id"])
        candidates[row["id"]] = LinkCandidate(
            row["id"],
            row["content"],
            float(row["similarity"] or 0.0),
            other.entities,
            other.subjects,
            other.relations,
        )
    links = 0
    for link in linker.links(subject, list(candidates.values())):
        meta = {"linker": linker.name, **metadata, "reason": link.reason}
        if link.relationship == "updates":
            older = memories.lock_memory(cur, tenant_id, link.target_id)
            if older is None or not older["is_latest"]:
                continue
            memories.retire(
                cur,
                tenant_id,
                link.target_id,
                link.source_id,
                memory["valid_from"],
                confidence=link.confidence,
                metadata=meta,
            )
            links += 1
        else:
            links += linkrepo.relate(
                cur, tenant_id, link.source_id, link.target_id, link.relationship, link.confidence, meta
            )
    return links


def facts_of(cur: TenantTx, tenant_id: UUID, memory_id: UUID) -> MemoryFacts:
    """The entities a memory mentions, its subjects, and the relations it is the source of."""
    rows = graphrepo.mentions_of(cur, tenant_id, memory_id)
    relations = graphrepo.relations_from_memory(cur, tenant_id, memory_id)
    return MemoryFacts(
        entities=frozenset(r["entity_id"] for r in rows),
        subjects=frozenset(r["entity_id"] for r in rows if r["is_subject"]),
        relations=frozenset((r["source_entity"], r["relation_type"], r["target_entity"]) for r in relations),
    )
