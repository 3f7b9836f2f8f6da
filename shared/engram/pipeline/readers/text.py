"""Plain text and Markdown: strict UTF-8 (a BOM is fine), nothing guessed."""

from __future__ import annotations

import codecs
import re

from engram.documents.failures import InvalidEncoding
from engram.pipeline.extracted import Extracted, Segment

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def decode_utf8(data: bytes) -> str:
    """UTF-8 (a BOM allowed), or UTF-16 that says so with its BOM; either way the same checks and line
    endings after."""
    if data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InvalidEncoding(
                f"the file starts like UTF-16 but is not valid UTF-16: {exc.reason}"
            ) from None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidEncoding(
                f"the file is not valid UTF-8 (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                "save it as UTF-8 and send it again"
            ) from None
    if "\x00" in text:
        raise InvalidEncoding("the file contains NUL characters: it looks binary, not text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text(data: bytes, content_type: str) -> Extracted:
    text = decode_utf8(data)
    title = None
    if content_type == "text/markdown":
        heading = _HEADING.search(text)
        title = heading.group(1) if heading else None
    return Extracted(kind="prose", content_type=content_type, segments=[Segment(text, {})], title=title)
