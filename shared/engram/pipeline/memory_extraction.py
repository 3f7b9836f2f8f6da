"""Turning chunks into memories. `MemoryExtractor` is the interface the knowledge-graph work fills
with LLM extractors; `HeuristicExtractor` is the offline baseline: sentence-level, no model, and every
memory it makes says `extractor: heuristic` in its metadata."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from engram.memories.models import MemoryType
from engram.pipeline.tokens import sentences


@dataclass(frozen=True)
class DocumentInfo:
    id: UUID
    container: str
    title: str | None
    content_type: str | None
    tags: list[str]


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
    chunk_id: UUID
    metadata: dict[str, Any] = field(default_factory=dict)


class MemoryExtractor(Protocol):
    name: str

    def extract(self, document: DocumentInfo, chunks: Sequence[ChunkInfo]) -> list[CandidateMemory]: ...


_PAGE_MARKER = re.compile(r"^\[page \d+\]\s*", re.MULTILINE)
_HEADING_LINE = re.compile(r"^#{1,6}\s+.*$", re.MULTILINE)
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+", re.MULTILINE)
_TYPES: tuple[tuple[MemoryType, re.Pattern[str]], ...] = (
    (
        "preference",
        re.compile(r"\b(prefers?|preferred|likes?|loves?|dislikes?|hates?|favou?rite|rather)\b", re.I),
    ),
    (
        "task",
        re.compile(
            r"\b(todo|to-do|need to|needs to|must be done|deadline|due (?:by|on)|action item)\b", re.I
        ),
    ),
    (
        "procedure",
        re.compile(
            r"^(?:to \w+|first|then|next|finally|run|install|open|click|set|use)\b|"
            r"\b(step \d+|in order to)\b",
            re.I,
        ),
    ),
)
MIN_WORDS, MAX_WORDS = 5, 60


def memory_type_of(sentence: str) -> MemoryType:
    for memory_type, pattern in _TYPES:
        if pattern.search(sentence):
            return memory_type
    return "fact"


def is_statement(sentence: str) -> bool:
    """A sentence worth remembering on its own: a complete statement of moderate length, mostly words."""
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return False
    if not (sentence[0].isupper() or sentence[0].isdigit()) or sentence[-1] not in ".!":
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    if letters < 0.6 * len(sentence.replace(" ", "")):
        return False
    return not any(mark in sentence for mark in ("{", "}", "=>", "();", "http://", "https://"))


class HeuristicExtractor:
    name = "heuristic"
    confidence = 0.5

    def __init__(self, max_memories: int = 500) -> None:
        self.max_memories = max_memories

    def extract(self, document: DocumentInfo, chunks: Sequence[ChunkInfo]) -> list[CandidateMemory]:
        found: list[CandidateMemory] = []
        seen: set[str] = set()
        for chunk in chunks:
            for content, memory_type, where in self._candidates(document, chunk):
                key = " ".join(content.lower().split())
                if key in seen:
                    continue
                seen.add(key)
                meta = {
                    "extractor": self.name,
                    "document_id": str(document.id),
                    "chunk_id": str(chunk.id),
                    "chunk_ordinal": chunk.ordinal,
                    **where,
                }
                found.append(CandidateMemory(content, memory_type, self.confidence, chunk.id, meta))
                if len(found) >= self.max_memories:
                    return found
        return found

    def _candidates(
        self, document: DocumentInfo, chunk: ChunkInfo
    ) -> list[tuple[str, MemoryType, dict[str, Any]]]:
        kind = chunk.metadata.get("kind")
        where: dict[str, Any] = {
            k: chunk.metadata[k]
            for k in ("pages", "heading", "symbol", "records", "speakers")
            if k in chunk.metadata
        }
        if kind in ("function", "class"):
            return self._code_unit(document, chunk, where)
        if kind == "module":
            return []
        if kind == "records":
            lines = [line.strip() for line in chunk.content.split("\n") if line.count(": ") >= 2]
            return [(line[:1000], "fact", where) for line in lines]
        text = _PAGE_MARKER.sub("", _HEADING_LINE.sub("", chunk.content))
        text = _LIST_MARK.sub("", text)
        out: list[tuple[str, MemoryType, dict[str, Any]]] = []
        for paragraph in re.split(r"\n\s*\n", text):
            speaker = None
            if kind == "transcript":
                for line in paragraph.split("\n"):
                    speaker, _, said = line.partition(": ") if ": " in line[:60] else (None, "", line)
                    for sentence in sentences(said):
                        if is_statement(sentence):
                            content = f"{speaker} said: {sentence}" if speaker else sentence
                            out.append((content, memory_type_of(sentence), where))
                continue
            for sentence in sentences(" ".join(paragraph.split())):
                if is_statement(sentence):
                    out.append((sentence, memory_type_of(sentence), where))
        return out

    @staticmethod
    def _code_unit(
        document: DocumentInfo, chunk: ChunkInfo, where: dict[str, Any]
    ) -> list[tuple[str, MemoryType, dict[str, Any]]]:
        symbol = chunk.metadata.get("symbol")
        if not symbol or chunk.metadata.get("part", 1) != 1:
            return []
        kind = chunk.metadata.get("kind")
        language = chunk.metadata.get("language") or "code"
        name = chunk.metadata.get("signature") or symbol
        place = f" in {document.title}" if document.title else ""
        doc = chunk.metadata.get("doc")
        content = f"The {language} {kind} `{name}`{place}" + (f": {doc}" if doc else " is defined here.")
        return [(content[:1000], "fact", where)]
