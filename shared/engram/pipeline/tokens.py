"""Token counts for chunk sizes: words and punctuation marks, close to what sub-word tokenizers give
for English prose (within ~20%), with no model to download."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")
# A sentence ends at . ! ? (optionally closed by quotes or brackets) followed by whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def split_words(text: str, max_tokens: int) -> list[str]:
    """The last resort for a 'sentence' longer than a chunk: cut at whitespace."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for word in text.split():
        tokens = count_tokens(word)
        if current and size + tokens > max_tokens:
            pieces.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += tokens
    if current:
        pieces.append(" ".join(current))
    return pieces
