"""The relevance floor: one function decides whether a search hit is related enough to the turn to take
room in the context. Today it reads the vector leg's cosine similarity (calibrated for the embedding model:
unrelated sentences score near 0, paraphrases 0.5 and more), or a strong full-text match; once hybrid
scores are calibrated to 0-1 it can read `score` instead, here and nowhere else."""

from __future__ import annotations

from engram.memories.models import SearchResult

# Chosen on the context tests' travel conversation (tests/integration/test_context_api.py): every fact
# an answer needs scores above it with all-MiniLM-L6-v2; the unrelated ones stay below.
VECTOR_FLOOR = 0.2
TEXT_FLOOR = 0.5


def is_relevant(result: SearchResult) -> bool:
    if result.scores.vector is not None:
        return result.scores.vector >= VECTOR_FLOOR
    return (result.scores.text or 0.0) >= TEXT_FLOOR
