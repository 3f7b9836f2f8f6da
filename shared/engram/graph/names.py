"""Normalized keys for entity names, aliases, types and relation types.

Deduplication is deterministic: two names are the same entity name when their keys are equal, and the
key is enforced by a unique constraint in the database. (Graphiti #1734: dedup that only compared
name embeddings let exact-name duplicates such as short acronyms through, one per ingestion run.)

    "Dr. Alice Smith", "alice smith", "ALICE  SMITH", "Alice Smith, PhD"  ->  "alice smith"
    "J.R.R. Tolkien", "J. R. R. Tolkien", "JRR Tolkien"                    ->  "jrr tolkien"
    "Jean-Luc Picard"                                                      ->  "jean luc picard"
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

MAX_NAME_CHARS = 200
# Titles before a name, dropped while something else remains ("Dr." alone stays "dr").
HONORIFICS = frozenset(
    {
        "dr", "doctor", "mr", "mrs", "ms", "miss", "mx", "prof", "professor", "sir", "dame", "madam",
        "madame", "mme", "mlle", "lord", "lady", "rev", "reverend", "herr", "frau", "capt", "captain",
    }
)  # fmt: skip
# Post-nominal letters after a name. Jr/Sr are kept: they tell two people apart.
POST_NOMINALS = frozenset({"phd", "md", "dds", "esq", "mba", "msc", "bsc"})
# Apostrophes and quotes vanish ("O'Brien" -> "obrien"); other punctuation separates words.
_VANISH = dict.fromkeys(map(ord, "'\u2019\u2018`\u00b4\"\u201c\u201d\u201e\u00ab\u00bb"), None)
# Punctuation that carries meaning in names: AT&T, C#, @handles.
_KEEP = frozenset("&#@")
_TYPE_SYNONYMS = {
    "organisation": "organization",
    "org": "organization",
    "location": "place",
    "human": "person",
    "people": "person",
}
_SLUG = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=8192)  # pure, and called for the same few names again and again
def normalize_name(name: str) -> str:
    """The key two spellings of one name share: NFKC, casefolded, punctuation and extra whitespace
    removed, initials joined, leading honorifics and trailing post-nominals dropped."""
    text = unicodedata.normalize("NFKC", name).casefold().translate(_VANISH)
    text = "".join(
        " " if unicodedata.category(ch).startswith(("P", "C", "Z")) and ch not in _KEEP else ch for ch in text
    )
    tokens = _join_initials(text.split())
    while len(tokens) > 1 and tokens[0] in HONORIFICS:
        tokens.pop(0)
    while len(tokens) > 1 and tokens[-1] in POST_NOMINALS:
        tokens.pop()
    return " ".join(tokens)[:MAX_NAME_CHARS].strip()


def _join_initials(tokens: list[str]) -> list[str]:
    """Runs of two or more single letters are one initialism: "j r r tolkien" -> "jrr tolkien"."""
    out: list[str] = []
    run: list[str] = []
    for token in [*tokens, ""]:
        if len(token) == 1 and token.isalpha():
            run.append(token)
            continue
        out.extend(["".join(run)] if len(run) >= 2 else run)
        run = []
        if token:
            out.append(token)
    return out


MAX_QUERY_WORDS, MAX_NAME_WORDS, MAX_QUERY_KEYS = 40, 4, 64
# A possessive names its owner: "Katherine Johnson's job" is about "Katherine Johnson".
_POSSESSIVE = re.compile(r"['\u2019]s(?=\W*$)", re.IGNORECASE)


def query_keys(query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """For the graph leg of search: the keys of every run of up to four words of a query, the entity
    names it may contain ("where does alice smith live" -> ..., "alice", "alice smith", ...), and those
    of runs written as names (every word capitalised, not just the query's first word). Entities the
    offline heuristic guessed (type `unknown`: any capitalised word, "New" of "New engineers get...")
    match only the latter, so "who helps new hires" does not find them."""
    words = [_POSSESSIVE.sub("", t) for t in query.split()[:MAX_QUERY_WORDS]]
    tokens = [(normalize_name(t), t[:1].isupper()) for t in words]
    tokens = [(word, capital) for word, capital in tokens if word]
    keys: dict[str, bool] = {}
    for size in range(MAX_NAME_WORDS, 0, -1):
        for start in range(len(tokens) - size + 1):
            run = tokens[start : start + size]
            key = normalize_name(" ".join(word for word, _ in run))
            named = all(capital for _, capital in run) and (start > 0 or size > 1)
            if key:
                keys[key] = keys.get(key, False) or named
    kept = list(keys)[:MAX_QUERY_KEYS]
    return tuple(kept), tuple(k for k in kept if keys[k])


def display_name(name: str) -> str:
    """A name as shown: NFKC, whitespace collapsed, control characters removed."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(" " if unicodedata.category(ch).startswith(("C", "Z")) else ch for ch in text)
    return " ".join(text.split())[:MAX_NAME_CHARS]


def normalize_type(value: str, *, max_length: int = 40) -> str:
    """Entity and relation types are lowercase words joined by underscores: "Lives In" -> "lives_in"."""
    slug = _SLUG.sub("_", unicodedata.normalize("NFKC", value).casefold()).strip("_")[:max_length].strip("_")
    return _TYPE_SYNONYMS.get(slug, slug)
