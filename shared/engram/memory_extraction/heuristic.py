"""`HeuristicExtractor` (`extractor: heuristic`): offline rules, no model, no cost.

What it does: each sentence of a statement-like shape becomes a memory (type from a few keywords,
confidence 0.5); runs of capitalised words are guessed to be entities (type `unknown`); a handful of
verb phrases between two such names become relations (lives_in, works_for, ...).

What it cannot do (use an LLM for these): resolve pronouns ("She moved" stays as written), merge
"Alice" with "Alice Smith", type entities, find lowercase or non-Latin-script names, read dates in the
text (valid_from is the reference time, nothing ever expires), or understand negation ("Alice does not
live in Paris" still yields lives_in).
"""

from __future__ import annotations

import itertools
import re

from engram.graph.names import normalize_name
from engram.letters import CAPITAL
from engram.memories.models import MemoryType
from engram.memory_extraction.base import ExtractionContext
from engram.memory_extraction.schema import (
    MAX_ENTITIES_PER_MEMORY,
    MAX_MEMORY_CHARS,
    ExtractedEntity,
    ExtractedMemory,
    ExtractedRelation,
    ExtractionResult,
)

CONFIDENCE = 0.5
_NOT_PROSE = ("{", "}", "=>", "();", "http://", "https://")
MIN_WORDS, MAX_WORDS = 3, 80
_LINE_END = re.compile(r"[.!?…]['\")\]]*$")
# "is", "has", "prefers", "lives": a third-person present verb (not "-ss": "address", "boss").
_VERB_AFTER_NAME = re.compile(r"\s+(?:[a-z]*[a-rt-z]s|will|can|does|did|had)\b")
_CHUNK = re.compile(r'<chunk n="(\d+)">\n?(.*?)\n?</chunk>', re.DOTALL)
_BOUNDARY = re.compile(rf"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[{CAPITAL}0-9])")
_ABBREVIATIONS = frozenset(
    "dr mr mrs ms mx prof st jr sr vs no fig e.g i.e dept gen gov lt col capt".split()  # noqa: SIM905
)
_WORD = rf"(?:(?:Dr|Mrs?|Ms|Mx|Prof|Capt)\.|[{CAPITAL}][\w'\u2019&.-]*[\w&]|[{CAPITAL}])"
_CONNECTOR = r"(?:of|de|da|di|du|del|der|den|van|von|la|le|&)"
_NAME = re.compile(rf"{_WORD}(?:\.?\s+(?:{_CONNECTOR}\s+)?{_WORD})*")
# Capitalised words that are rarely names on their own.
_NOT_NAMES = frozenset(
    """a an the this that these those it its he she they we i you his her their our my your there here
    on in at by for from to of and or but if when while after before since until then so also however
    yes no not please thanks hello hi dear today tomorrow yesterday last next every each all some
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december""".split()  # noqa: SIM905
)
_RELATIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"^\s*(?:{phrase})\s*$", re.IGNORECASE), relation)
    for phrase, relation in (
        (r"(?:now\s+)?(?:lives|lived|is living|resides|resided|stays|settled)\s+in", "lives_in"),
        (r"(?:has\s+)?(?:moved|relocated)\s+(?:back\s+)?to", "lives_in"),
        (r"(?:works|worked|is working)\s+(?:at|for)|(?:is|was)\s+employed\s+by|joined", "works_for"),
        (r"(?:was\s+)?born\s+in|(?:is|comes)\s+from", "born_in"),
        (r"(?:co-?)?founded|started|created", "founded"),
        (r"(?:is\s+|got\s+)?married\s+(?:to)?", "married_to"),
        (r"knows|met|(?:is\s+)?friends\s+with", "knows"),
        (r"(?:is|are)\s+(?:a\s+)?part\s+of|belongs\s+to", "part_of"),
        (r"(?:is|are)\s+(?:located|based)\s+in|(?:is|are)\s+in", "located_in"),
        (r"manages|leads|runs|heads", "leads"),
    )
)
_TYPES: tuple[tuple[MemoryType, re.Pattern[str]], ...] = (
    ("preference", re.compile(r"\b(prefers?|likes?|loves?|dislikes?|hates?|favou?rite|enjoys?)\b", re.I)),
    ("task", re.compile(r"\b(todo|to-do|need to|needs to|must|deadline|due (?:by|on)|remind)\b", re.I)),
    ("procedure", re.compile(r"^(?:to \w+|first|then|next|finally|step \d+)\b", re.I)),
)


class HeuristicExtractor:
    name = "heuristic"

    def extract(self, text: str, context: ExtractionContext) -> ExtractionResult:
        sections: list[tuple[int | None, str]] = [(int(n), body) for n, body in _CHUNK.findall(text)]
        memories: list[ExtractedMemory] = []
        seen: set[str] = set()
        for ordinal, body in sections or [(None, text)]:
            chunk = (
                ordinal
                if ordinal in context.chunks
                else (context.chunks[0] if len(context.chunks) == 1 else None)
            )
            for sentence in (s for part in re.split(r"\n\s*\n", body) for s in sentences(part)):
                key = sentence.casefold()
                if key in seen or not _statement(sentence):
                    continue
                seen.add(key)
                memories.append(self._memory(sentence, chunk, context))
                if len(memories) >= context.max_memories:
                    return ExtractionResult(memories=memories, extractor=self.name)
        return ExtractionResult(memories=memories, extractor=self.name)

    def _memory(self, sentence: str, chunk: int | None, context: ExtractionContext) -> ExtractedMemory:
        spans = entity_spans(sentence)[:MAX_ENTITIES_PER_MEMORY]
        entities = list({normalize_name(name): ExtractedEntity(name=name) for _, _, name in spans}.values())
        relations = []
        for (_, end, source), (start, _, target) in itertools.pairwise(spans):
            between = sentence[end:start]
            for pattern, relation in _RELATIONS:
                if pattern.match(between) and normalize_name(source) != normalize_name(target):
                    relations.append(ExtractedRelation(source=source, relation=relation, target=target))
                    break
        subject = _subject(sentence, spans, relations)
        memory_type: MemoryType = next((t for t, pattern in _TYPES if pattern.search(sentence)), "fact")
        return ExtractedMemory(
            content=sentence[:MAX_MEMORY_CHARS],
            memory_type=memory_type,
            confidence=CONFIDENCE,
            entities=entities,
            subject=subject,
            relations=relations,
            valid_from=context.reference_time,
            source_chunk=chunk,
        )


def _subject(
    sentence: str, spans: list[tuple[int, int, str]], relations: list[ExtractedRelation]
) -> str | None:
    """The name the sentence opens with, when it is plausibly about someone: a name of several words
    ("Alice Smith ..."), a possessive ("Alice's phone ..."), the source of a relation found ("Alice
    lives in ..."), or a name a present-tense verb follows ("Alice prefers ...", "Bob is ..."). A lone
    capitalised first word is otherwise as often a common noun ("Fact number 3 ...", "Test memory
    ..."), and graph-link retires near-duplicates about one subject: such a word must not make two
    memories about the same thing."""
    if not spans or spans[0][0] != 0:
        return None
    _, end, name = spans[0]
    possessive = sentence[:end].endswith(("'s", "\u2019s"))
    verb = _VERB_AFTER_NAME.match(sentence, end) is not None
    if " " in name or possessive or verb or any(r.source == name for r in relations):
        return name
    return None


def as_statements(content: str) -> str:
    """Short lines (a chat message, a memory sent as it is) as sentences the heuristic reads: one
    paragraph per line, a full stop where the writer left none ("I live in Porto" is a statement; a
    question stays a question)."""
    lines = (" ".join(line.split()) for line in content.splitlines())
    return "\n\n".join(line if _LINE_END.search(line) else line + "." for line in lines if line)


def sentences(text: str) -> list[str]:
    """Split on sentence ends, but not after abbreviations and initials ("Dr. Smith", "J. Doe")."""
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        before = text[start : match.start()].rstrip(".!?\"')]")
        last = before.rsplit(None, 1)[-1].casefold() if before.split() else ""
        initials = all(len(part) == 1 and part.isalpha() for part in last.split("."))
        if text[match.start() - 1] == "." and (last in _ABBREVIATIONS or initials):
            continue
        out.append(" ".join(text[start : match.start()].split()))
        start = match.end()
    out.append(" ".join(text[start:].split()))
    return [s for s in out if s]


def entity_spans(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each run of capitalised words that looks like a name."""
    spans = []
    for match in _NAME.finditer(sentence):
        words = match.group().split()
        start = match.start()
        while words and (words[0].casefold().strip(".") in _NOT_NAMES or words[0] in ("&",)):
            start = sentence.index(words[1], start + len(words[0])) if len(words) > 1 else match.end()
            words.pop(0)
        while words and words[-1].casefold() in _NOT_NAMES:
            words.pop()
        if not words:
            continue
        name = re.sub("['\u2019]s$", "", " ".join(words)).rstrip(".")
        if normalize_name(name):
            spans.append((start, start + len(" ".join(words)), name))
    return spans


def _statement(sentence: str) -> bool:
    """A sentence worth remembering on its own: a complete statement of moderate length, mostly
    words, not code or a link."""
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or sentence.endswith("?"):
        return False
    if sentence.rstrip("\"')]")[-1:] not in (
        ".",
        "!",
    ):
        return False
    if any(mark in sentence for mark in _NOT_PROSE):
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence.replace(" ", ""))
