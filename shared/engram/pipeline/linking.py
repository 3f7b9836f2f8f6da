"""Linking new memories into the graph. `MemoryLinker` is the interface the knowledge-graph work fills
with LLM judgements; `SimilarityLinker` is the offline baseline: a new memory nearly identical to an
older one (cosine similarity at or above the threshold, different text) `updates` it, and the older
one stops being the latest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol
from uuid import UUID

RelationshipType = Literal["updates", "extends", "derives"]


@dataclass(frozen=True)
class LinkSubject:
    id: UUID
    content: str


@dataclass(frozen=True)
class LinkCandidate:
    id: UUID
    content: str
    similarity: float


@dataclass(frozen=True)
class Link:
    source_id: UUID  # the newer memory
    target_id: UUID  # the older one
    relationship: RelationshipType
    confidence: float


class MemoryLinker(Protocol):
    name: str

    def links(self, memory: LinkSubject, candidates: Sequence[LinkCandidate]) -> list[Link]: ...


class SimilarityLinker:
    name = "similarity"

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold

    def links(self, memory: LinkSubject, candidates: Sequence[LinkCandidate]) -> list[Link]:
        best = max(candidates, key=lambda c: c.similarity, default=None)
        if best is None or best.similarity < self.threshold:
            return []
        if " ".join(best.content.split()).lower() == " ".join(memory.content.split()).lower():
            return []  # the same statement again is a second source, not an update
        return [Link(memory.id, best.id, "updates", round(min(1.0, max(0.0, best.similarity)), 4))]
