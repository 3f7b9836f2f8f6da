"""The `Extractor` interface, the context an extraction runs in, and the chunk markers of its text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from engram.memory_extraction.schema import ExtractedMemory, ExtractionResult

_CHUNK_MARK = re.compile(r"</?chunk\b", re.IGNORECASE)


@dataclass(frozen=True)
class ExtractionContext:
    """Where a text comes from. Nothing here says where memories are written: the caller knows."""

    reference_time: datetime | None = None  # the document's date or the message's time
    source: Literal["document", "message", "memory"] = "document"
    title: str | None = None
    chunks: tuple[int, ...] = ()  # ordinals of the <chunk n=...> sections of the text (see chunk_text)
    instructions: tuple[str, ...] = ()  # custom instructions: the tenant's, then the container's
    max_memories: int = 50


class Extractor(Protocol):
    name: str

    def extract(self, text: str, context: ExtractionContext) -> ExtractionResult:
        """Memories, entities and relations in `text`. Raises ExtractionFailed when an LLM's answer
        is unusable after one repair, TransientError when the provider stays unavailable."""
        ...


def content_key(content: str) -> str:
    """Two extracted memories with this key say the same thing: the text, casefolded, spacing ignored."""
    return " ".join(content.casefold().split())


def chunk_text(chunks: Sequence[tuple[int, str]]) -> tuple[str, tuple[int, ...]]:
    """Several chunks as one text with <chunk n="..."> sections, and their ordinals for the context.
    Chunk markers inside the chunks' own text are defused, so a document cannot forge a section."""
    parts = [
        f'<chunk n="{ordinal}">\n{_CHUNK_MARK.sub("<_chunk", text)}\n</chunk>' for ordinal, text in chunks
    ]
    return "\n".join(parts), tuple(ordinal for ordinal, _ in chunks)


def resolve(memory: ExtractedMemory, context: ExtractionContext) -> ExtractedMemory:
    """Fill what the context knows: the source chunk when the text is one chunk, and valid_from
    (the reference time) when the text stated none."""
    update: dict[str, object] = {}
    if memory.source_chunk is None and len(context.chunks) == 1:
        update["source_chunk"] = context.chunks[0]
    if not context.chunks and memory.source_chunk is not None:
        update["source_chunk"] = None
    reference = context.reference_time
    ends_later = memory.expires_at is None or (reference is not None and memory.expires_at > reference)
    if memory.valid_from is None and reference is not None and ends_later:
        update["valid_from"] = reference
    return memory.model_copy(update=update) if update else memory
