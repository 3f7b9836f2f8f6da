"""The offline memory extractor for conversation messages: sentences in which the user states a
fact about themselves or a preference. It stands in until the pipeline's LLM extraction step lands;
its memories say so in metadata (`extractor: heuristic`).

Deliberately narrow: first-person statements only, no questions, no pronoun resolution. A sentence
is kept verbatim, so the memory reads exactly as the user said it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_PREFERENCE = re.compile(
    r"\b(i|we)\s+(really\s+|do\s+not\s+|don't\s+|never\s+|always\s+)?"
    r"(like|love|prefer|enjoy|hate|dislike|can't stand|cannot stand)\b|\bmy\s+favou?rite\b",
    re.IGNORECASE,
)
_FACT = re.compile(
    r"\b(i am|i'm|i was|i live|i lived|i work|i worked|i have|i've|i own|i moved|i studied|i use|i speak|"
    r"i was born|call me|remember that|my (\w+\s){0,2}(is|are|was|were))\b",
    re.IGNORECASE,
)
MIN_WORDS, MAX_WORDS = 3, 60


@dataclass(frozen=True)
class Candidate:
    content: str
    memory_type: Literal["preference", "fact"]


def extract(text: str) -> list[Candidate]:
    found: list[Candidate] = []
    seen: set[str] = set()
    for raw in _SENTENCES.split(text):
        sentence = raw.strip()
        words = len(sentence.split())
        if not (MIN_WORDS <= words <= MAX_WORDS) or sentence.endswith("?"):
            continue
        kind: Literal["preference", "fact"]
        if _PREFERENCE.search(sentence):
            kind = "preference"
        elif _FACT.search(sentence):
            kind = "fact"
        else:
            continue
        key = sentence.casefold()
        if key not in seen:
            seen.add(key)
            found.append(Candidate(sentence, kind))
    return found
