"""What the extract step produces and the chunk step reads (stored as JSON in the blob store)."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# prose: text, markdown, HTML, PDF (segments are pages or the whole text; headings are '#' lines);
# code: one segment per function, class or module-level block; records: one segment per row/object;
# transcript: one segment per speaker turn.
Kind = Literal["prose", "code", "records", "transcript"]
# Quickly skips whitespace and C0/C1 controls; each character found is then checked by its category.
_CANDIDATE = re.compile(r"[^\s\x00-\x1f\x7f-\x9f]")


def is_readable(text: str) -> bool:
    """True when the text holds a character someone can read: not whitespace, not a control, format,
    surrogate, private-use or unassigned character (Unicode categories Z* and C*)."""
    return any(
        not unicodedata.category(found.group()).startswith(("C", "Z")) for found in _CANDIDATE.finditer(text)
    )


@dataclass
class Segment:
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Extracted:
    kind: Kind
    content_type: str
    segments: list[Segment]
    title: str | None = None
    language: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def chars(self) -> int:
        return sum(len(s.text) for s in self.segments)

    def has_text(self) -> bool:
        return any(is_readable(s.text) for s in self.segments)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, raw: bytes) -> Extracted:
        data = json.loads(raw)
        data["segments"] = [Segment(**s) for s in data["segments"]]
        return cls(**data)
