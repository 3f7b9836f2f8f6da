"""graph-link's decisions: how a new memory relates to an existing one near it (by vector or by shared
entities). Pure rules over what the graph knows about both memories:

- `updates` (the older memory is retired, exactly like an explicit `supersedes`) ONLY when both are
  about the same subject entity, and either they state conflicting values of a single-valued relation
  of that subject (Alice lives_in Paris / Alice lives_in Berlin), or they are near-duplicates (cosine
  similarity >= `threshold`) with different text. Memories without a shared subject never update each
  other, however similar: this guards against over-invalidation (Graphiti #1728).
- `derives`: the new memory is an `insight` that mentions an entity of the older one.
- `extends`: the new memory adds to the older one: same subject, or a near-duplicate without one.
- otherwise no link. The same text again is a second source, never a link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

RelationshipType = Literal["updates", "extends", "derives"]

# Relations a subject holds with one target at a time: a new target contradicts the old one.
SINGLE_VALUED = frozenset(
    {"lives_in", "works_for", "married_to", "located_in", "based_in", "reports_to", "employed_by"}
)


@dataclass(frozen=True)
class LinkSubject:
    id: UUID
    content: str
    memory_type: str = "fact"
    entities: frozenset[UUID] = frozenset()
    subjects: frozenset[UUID] = frozenset()
    relations: frozenset[tuple[UUID, str, UUID]] = frozenset()


@dataclass(frozen=True)
class LinkCandidate:
    id: UUID
    content: str
    similarity: float
    entities: frozenset[UUID] = frozenset()
    subjects: frozenset[UUID] = frozenset()
    relations: frozenset[tuple[UUID, str, UUID]] = frozenset()


@dataclass(frozen=True)
class Link:
    source_id: UUID  # the newer memory
    target_id: UUID  # the older one
    relationship: RelationshipType
    confidence: float
    reason: str


class RuleLinker:
    name = "rules"

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold

    def links(self, memory: LinkSubject, candidates: Sequence[LinkCandidate]) -> list[Link]:
        out: list[Link] = []
        for candidate in candidates:
            link = self.decide(memory, candidate)
            if link is not None:
                out.append(link)
        return out

    def decide(self, memory: LinkSubject, candidate: LinkCandidate) -> Link | None:
        if _same_text(memory.content, candidate.content):
            return None
        confidence = round(min(1.0, max(0.0, candidate.similarity)), 4)
        shared_subjects = memory.subjects & candidate.subjects
        near = candidate.similarity >= self.threshold
        if shared_subjects:
            if _conflict(memory.relations, candidate.relations, shared_subjects):
                return Link(memory.id, candidate.id, "updates", max(confidence, 0.5), "conflicting relation")
            if near:
                return Link(memory.id, candidate.id, "updates", confidence, "near-duplicate, same subject")
        if memory.memory_type == "insight" and memory.entities & candidate.entities:
            return Link(memory.id, candidate.id, "derives", confidence, "insight on shared entities")
        if shared_subjects or near:
            return Link(
                memory.id,
                candidate.id,
                "extends",
                confidence,
                "same subject" if shared_subjects else "near-duplicate",
            )
        return None


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _conflict(
    new: frozenset[tuple[UUID, str, UUID]], old: frozenset[tuple[UUID, str, UUID]], subjects: frozenset[UUID]
) -> bool:
    """The two state different targets for one single-valued relation of a shared subject."""
    old_targets = {(s, r): t for s, r, t in old if s in subjects and r in SINGLE_VALUED}
    return any((s, r) in old_targets and old_targets[(s, r)] != t for s, r, t in new if s in subjects)
