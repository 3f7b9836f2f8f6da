"""graph-link: how a new memory relates to the existing memories nearest to it, for the document
pipeline's graph-link step and for session message extraction (engram.memories.writer applies what
it decides).

The candidates are the container's current, older memories closest by vector and those sharing an
entity with it; the rules (engram.graph.link_rules) decide `updates` (retires the older memory, as an
explicit `supersedes` does; only between memories about one subject), `extends`, `derives` or
nothing. Reads inside the caller's transaction, so it sees what the caller has just written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from engram.db.database import TenantTx
from engram.graph import repo
from engram.graph.link_rules import Link, LinkCandidate, LinkSubject, RuleLinker
from engram.graph.models import MemoryFacts

LINK_CANDIDATES = 5


def nearest_links(
    cur: TenantTx,
    tenant_id: UUID,
    linker: RuleLinker,
    memory: Mapping[str, Any],
    *,
    same_owner: bool,
    document_id: UUID | None = None,
) -> list[Link]:
    """The links from `memory` (a row with id, content, memory_type) to its nearest older memories.
    `document_id` leaves out memories of that document; `same_owner` keeps to memories of the same
    user and visibility."""
    scope: dict[str, Any] = {"document_id": document_id, "same_owner": same_owner}
    near = repo.nearest_older_memories(cur, tenant_id, memory["id"], LINK_CANDIDATES, **scope)
    sharing = repo.memories_sharing_entities(cur, tenant_id, memory["id"], LINK_CANDIDATES, **scope)
    known = facts_of(cur, tenant_id, [memory["id"], *(row["id"] for row in [*near, *sharing])])
    facts = known[memory["id"]]
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
        other = known[row["id"]]
        candidates[row["id"]] = LinkCandidate(
            row["id"],
            row["content"],
            float(row["similarity"] or 0.0),
            other.entities,
            other.subjects,
            other.relations,
        )
    return linker.links(subject, list(candidates.values()))


def facts_of(cur: TenantTx, tenant_id: UUID, memory_ids: Sequence[UUID]) -> dict[UUID, MemoryFacts]:
    """For each memory: the entities it mentions, its subjects, and the relations it is the source
    of. Two queries whatever the number of memories (graph-link runs on every extracting write)."""
    mentions = repo.mentions_of(cur, tenant_id, memory_ids)
    relations = repo.relations_from_memories(cur, tenant_id, memory_ids)
    return {
        memory_id: MemoryFacts(
            entities=frozenset(r["entity_id"] for r in mentions if r["memory_id"] == memory_id),
            subjects=frozenset(
                r["entity_id"] for r in mentions if r["memory_id"] == memory_id and r["is_subject"]
            ),
            relations=frozenset(
                (r["source_entity"], r["relation_type"], r["target_entity"])
                for r in relations
                if r["source_memory_id"] == memory_id
            ),
        )
        for memory_id in dict.fromkeys(memory_ids)
    }
