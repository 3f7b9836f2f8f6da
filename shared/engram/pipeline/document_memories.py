"""A document's chunks through engram.memory_extraction: where the pipeline turns chunks into memories.

The document's `extract` mode picks the extractor (`make_extractor`): `none` makes no memories,
`light` the offline heuristic (`extractor: heuristic`), `full` the configured LLM. Chunks go to the
extractor in batches marked `<chunk n="ordinal">`; each memory's `source_chunk` ordinal is mapped back
to the chunk's id here, so an extractor never names a row. Tenant, container and ids come from the
document, never from extraction output.

For the heuristic, chunks are first put in words it can read: headings, page markers and list marks
are dropped, a code unit becomes one sentence about the symbol, records and speaker turns become one
line each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from engram.memories.models import MemoryType
from engram.memory_extraction import ExtractionContext, Extractor, HeuristicExtractor, chunk_text, content_key
from engram.memory_extraction.schema import ExtractedEntity, ExtractedRelation
from engram.providers.llm import TokenUsage

MAX_BATCH_CHARS = 12_000  # chunks per LLM call: enough context, answers well under the output limit
MAX_MEMORIES_PER_CALL = 50
MIN_TURN_WORDS = 3

_PAGE_MARKER = re.compile(r"^\[page \d+\]\s*", re.MULTILINE)
_HEADING_LINE = re.compile(r"^#{1,6}\s+.*$", re.MULTILINE)
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+", re.MULTILINE)


@dataclass(frozen=True)
class DocumentInfo:
    id: UUID
    container: str
    title: str | None
    content_type: str | None
    tags: list[str]
    reference_time: datetime | None = None  # the document's date, else when it was received
    instructions: tuple[str, ...] = ()  # custom instructions for the LLM: the tenant's, then the container's


@dataclass(frozen=True)
class ChunkInfo:
    id: UUID
    ordinal: int
    content: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class CandidateMemory:
    content: str
    memory_type: MemoryType
    confidence: float
    chunk_id: UUID | None
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_from: datetime | None = None
    expires_at: datetime | None = None
    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    subject: str | None = None


@dataclass(frozen=True)
class DocumentExtraction:
    memories: list[CandidateMemory]
    extractor: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    llm_calls: int = 0

    def record(self) -> dict[str, Any]:
        """For documents.extraction."""
        return {"extractor": self.extractor, **self.usage.as_dict(), "llm_calls": self.llm_calls}


def extract_memories(
    extractor: Extractor, document: DocumentInfo, chunks: Sequence[ChunkInfo], max_memories: int
) -> DocumentExtraction:
    """Memories of the document, at most `max_memories`, de-duplicated by text. Raises what the
    extractor raises (ExtractionFailed, TransientError, ProviderError): all or nothing."""
    heuristic = isinstance(extractor, HeuristicExtractor)
    prepared = [(c, heuristic_text(document, c) if heuristic else c.content) for c in chunks]
    by_ordinal = {c.ordinal: c for c in chunks}
    found: list[CandidateMemory] = []
    seen: set[str] = set()
    usage, calls = TokenUsage(), 0
    name = extractor.name
    for batch in _batches([(c.ordinal, text) for c, text in prepared if text and text.strip()]):
        if len(found) >= max_memories:
            break
        text, ordinals = chunk_text(batch)
        context = ExtractionContext(
            reference_time=document.reference_time,
            title=document.title,
            chunks=ordinals,
            instructions=document.instructions,
            max_memories=max(1, min(MAX_MEMORIES_PER_CALL, max_memories - len(found))),
        )
        result = extractor.extract(text, context)
        usage, calls, name = usage + result.usage, calls + result.attempts, result.extractor
        for memory in result.memories:
            key = content_key(memory.content)
            if key in seen:
                continue
            seen.add(key)
            chunk = by_ordinal.get(memory.source_chunk) if memory.source_chunk is not None else None
            meta: dict[str, Any] = {"extractor": result.extractor, "document_id": str(document.id)}
            if chunk is not None:
                meta.update(chunk_id=str(chunk.id), chunk_ordinal=chunk.ordinal, **_where(chunk))
            found.append(
                CandidateMemory(
                    content=memory.content,
                    memory_type=memory.memory_type,
                    confidence=memory.confidence,
                    chunk_id=chunk.id if chunk is not None else None,
                    metadata=meta,
                    valid_from=memory.valid_from or document.reference_time,
                    expires_at=memory.expires_at,
                    entities=tuple(memory.entities),
                    relations=tuple(memory.relations),
                    subject=memory.subject,
                )
            )
            if len(found) >= max_memories:
                break
    return DocumentExtraction(found, name, usage, calls)


def _batches(chunks: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    batches: list[list[tuple[int, str]]] = []
    size = 0
    for ordinal, text in chunks:
        if not batches or size + len(text) > MAX_BATCH_CHARS:
            batches.append([])
            size = 0
        batches[-1].append((ordinal, text))
        size += len(text)
    return batches


def _where(chunk: ChunkInfo) -> dict[str, Any]:
    return {
        k: chunk.metadata[k]
        for k in ("pages", "heading", "symbol", "records", "speakers")
        if k in chunk.metadata
    }


def heuristic_text(document: DocumentInfo, chunk: ChunkInfo) -> str | None:
    """The chunk as plain statements for the heuristic, or None when it holds none."""
    kind = chunk.metadata.get("kind")
    if kind in ("function", "class"):
        return _code_unit(document, chunk)
    if kind == "module":
        return None
    if kind == "records":
        lines = [line.strip() for line in chunk.content.split("\n") if line.count(": ") >= 2]
        return "\n\n".join(line if line.endswith(".") else line + "." for line in lines)
    text = _LIST_MARK.sub("", _PAGE_MARKER.sub("", _HEADING_LINE.sub("", chunk.content)))
    if kind == "transcript":
        turns = []
        for line in text.split("\n"):
            speaker, _, said = line.partition(": ") if ": " in line[:60] else ("", "", line)
            if len(said.split()) >= MIN_TURN_WORDS:  # "Ok." is no statement, with or without a speaker
                turns.append(f"{speaker} said: {said.strip()}" if speaker else said.strip())
        return "\n\n".join(turns)
    return text


def _code_unit(document: DocumentInfo, chunk: ChunkInfo) -> str | None:
    symbol = chunk.metadata.get("symbol")
    if not symbol or chunk.metadata.get("part", 1) != 1:
        return None
    language = chunk.metadata.get("language") or "code"
    name = chunk.metadata.get("signature") or symbol
    place = f" in {document.title}" if document.title else ""
    doc = chunk.metadata.get("doc")
    return f"The {language} {chunk.metadata.get('kind')} `{name}`{place}" + (
        f": {doc}" if doc else " is defined here."
    )
