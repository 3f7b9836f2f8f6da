"""Memory extraction: from a text to memories, the entities they mention, and relations between them.

`make_extractor(mode, llm)` is what the pipeline calls for a document's `extract` mode:
`none` (chunks only, no memories), `light` (the offline heuristic) or `full` (the configured LLM).
"""

from __future__ import annotations

from typing import Literal

from engram.errors import InvalidInput
from engram.memory_extraction.base import ExtractionContext, Extractor, chunk_text, content_key
from engram.memory_extraction.heuristic import HeuristicExtractor, as_statements
from engram.memory_extraction.llm import LLMExtractor
from engram.memory_extraction.schema import (
    ExtractedEntity,
    ExtractedMemory,
    ExtractedRelation,
    ExtractionPayload,
    ExtractionResult,
)
from engram.providers.llm import LLM

ExtractMode = Literal["none", "light", "full"]

__all__ = [
    "ExtractMode",
    "ExtractedEntity",
    "ExtractedMemory",
    "ExtractedRelation",
    "ExtractionContext",
    "ExtractionPayload",
    "ExtractionResult",
    "Extractor",
    "HeuristicExtractor",
    "LLMExtractor",
    "as_statements",
    "chunk_text",
    "content_key",
    "make_extractor",
]


def make_extractor(mode: ExtractMode, llm: LLM | None) -> Extractor | None:
    if mode == "none":
        return None
    if mode == "light":
        return HeuristicExtractor()
    if llm is None:
        raise InvalidInput(
            "extract=full needs an LLM: set ENGRAM_LLM_PROVIDER (openai, anthropic or bedrock), "
            "or use extract=light for the offline heuristic",
            details={"field": "extract"},
        )
    return LLMExtractor(llm)
