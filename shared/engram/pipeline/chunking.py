"""Cutting extracted text into chunks of about `target` tokens.

- prose: sections start at Markdown headings, paragraphs are kept whole where they fit; consecutive
  chunks of one section share `overlap` tokens of whole sentences;
- code: one chunk per function, class or module block; a unit too large is cut at blank lines;
- records: whole records packed together;
- transcripts: whole speaker turns packed together; a turn too long is cut at sentences.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engram.pipeline.extracted import Extracted, Segment
from engram.pipeline.tokens import count_tokens, sentences, split_words

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_PAGE = re.compile(r"^\[page (\d+)\]$")


@dataclass
class ChunkDraft:
    content: str
    token_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


# Where a segment is in its file, for the chunks' metadata: a PDF's page, a presentation's slide.
_PLACES = ("page", "slide")


@dataclass
class _Block:
    text: str
    tokens: int
    heading: tuple[str, ...]
    place: tuple[str, int] | None  # ("page", 3)
    is_heading: bool = False
    glue: bool = False  # continues the previous block's paragraph (joined by a space)
    source: str | None = None  # how the text was read: "text_layer", "ocr", "vision" (generated)


def chunk(extracted: Extracted, target: int = 500, overlap: int = 60) -> list[ChunkDraft]:
    overlap = min(overlap, target // 3)
    if extracted.kind == "code":
        drafts = chunk_code(extracted.segments, target)
    elif extracted.kind == "records":
        drafts = pack_units(extracted.segments, target, "records", "record", sep="\n")
    elif extracted.kind == "transcript":
        drafts = chunk_transcript(extracted.segments, target)
    else:
        drafts = chunk_prose(extracted.segments, target, overlap)
    return [d for d in drafts if d.content.strip()]


# --- prose ------------------------------------------------------------------------------------


def _blocks(segments: list[Segment]) -> list[_Block]:
    blocks: list[_Block] = []
    path: list[tuple[int, str]] = []

    def close(paragraph: list[str], place: tuple[str, int] | None, source: str | None) -> None:
        text = "\n".join(paragraph).strip()
        if text:
            blocks.append(_Block(text, count_tokens(text), tuple(t for _, t in path), place, source=source))
        paragraph.clear()

    for segment in segments:
        place = next(((key, segment.meta[key]) for key in _PLACES if segment.meta.get(key)), None)
        source = segment.meta.get("source")
        paragraph: list[str] = []

        for line in segment.text.split("\n"):
            heading = _HEADING.match(line)
            if heading or not line.strip() or _PAGE.match(line.strip()):
                close(paragraph, place, source)
            if heading:
                level = len(heading.group(1))
                path[:] = [(lvl, t) for lvl, t in path if lvl < level] + [(level, heading.group(2))]
                blocks.append(
                    _Block(line.strip(), count_tokens(line), tuple(t for _, t in path), place, True)
                )
            elif _PAGE.match(line.strip()):
                blocks.append(
                    _Block(line.strip(), count_tokens(line), tuple(t for _, t in path), place, True)
                )
            elif line.strip():
                paragraph.append(line)
        close(paragraph, place, source)
    return blocks


def chunk_prose(segments: list[Segment], target: int, overlap: int) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    current: list[_Block] = []

    def size() -> int:
        return sum(b.tokens for b in current)

    def flush(carry: bool) -> None:
        body = [b for b in current if not b.is_heading]
        if not body:
            return
        last = max(i for i, b in enumerate(current) if not b.is_heading)
        # Headings and page markers after the last paragraph open the next chunk instead.
        trailing = current[last + 1 :]
        drafts.append(_prose_draft(current[: last + 1]))
        tail = _overlap_tail(body, overlap) if carry else []
        current[:] = tail + trailing

    for block in blocks_with_pieces(_blocks(segments), target):
        if block.is_heading and _HEADING.match(block.text):
            # A new section: close the chunk unless it is still small (then small sections share one).
            if any(not b.is_heading for b in current) and size() >= target // 4:
                flush(carry=False)
            current.append(block)
            continue
        if current and size() + block.tokens > target:
            flush(carry=True)
        current.append(block)
    flush(carry=False)
    return drafts


def blocks_with_pieces(blocks: list[_Block], target: int) -> list[_Block]:
    """Paragraphs longer than a chunk become their sentences (a sentence longer than a chunk, runs of
    words), so the packer can fill a chunk up to the target and cut between sentences."""
    out: list[_Block] = []
    for block in blocks:
        if block.tokens <= target:
            out.append(block)
            continue
        first = True
        for sentence in sentences(block.text):
            for part in split_words(sentence, target) if count_tokens(sentence) > target else [sentence]:
                out.append(
                    _Block(
                        part,
                        count_tokens(part),
                        block.heading,
                        block.place,
                        glue=not first,
                        source=block.source,
                    )
                )
                first = False
    return out


def _fit(text: str, target: int) -> list[str]:
    """Sentence runs of at most `target` tokens (runs of words for a longer sentence)."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in sentences(text):
        parts = split_words(sentence, target) if count_tokens(sentence) > target else [sentence]
        for part in parts:
            tokens = count_tokens(part)
            if current and size + tokens > target:
                pieces.append(" ".join(current))
                current, size = [], 0
            current.append(part)
            size += tokens
    if current:
        pieces.append(" ".join(current))
    return pieces


def _overlap_tail(body: list[_Block], overlap: int) -> list[_Block]:
    """The chunk's last whole sentences, up to `overlap` tokens, to open the next chunk."""
    if overlap <= 0:
        return []
    last = body[-1]
    tail: list[str] = []
    size = 0
    for sentence in reversed(sentences(last.text)):
        tokens = count_tokens(sentence)
        if size + tokens > overlap:
            break
        tail.insert(0, sentence)
        size += tokens
    if not tail:
        return []
    text = " ".join(tail)
    # Overlap taken from within a paragraph stays glued to what follows in that paragraph.
    return [_Block(text, size, last.heading, last.place, source=last.source)]


def _join(blocks: list[_Block]) -> str:
    text = ""
    for block in blocks:
        text += (" " if block.glue else "\n\n") + block.text if text else block.text
    return text


def _prose_draft(blocks: list[_Block]) -> ChunkDraft:
    text = _join(blocks)
    meta: dict[str, Any] = {"kind": "prose"}
    body = [b for b in blocks if not b.is_heading] or blocks
    heading = body[-1].heading or body[0].heading
    if heading:
        meta["heading"] = " > ".join(heading)
    places = [b.place for b in blocks if b.place is not None]
    if places:
        key = places[0][0]
        numbers = sorted(number for k, number in places if k == key)
        meta[f"{key}s"] = [numbers[0], numbers[-1]]
    sources = sorted({b.source for b in blocks if b.source})
    if sources:
        meta["sources"] = sources
        if "vision" in sources:
            meta["generated"] = True  # a model's description of an image, not the file's own text
    return ChunkDraft(text, count_tokens(text), meta)


# --- code -------------------------------------------------------------------------------------


# What a code chunk keeps of its unit's metadata (a reader's `members` become the pieces' `symbols`).
_CODE_KEYS = ("kind", "symbol", "language", "start_line", "end_line", "signature", "doc", "parse_error")


def chunk_code(segments: list[Segment], target: int) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    pending: list[Segment] = []  # consecutive small module-level blocks (imports, constants)

    def flush_pending() -> None:
        if pending:
            text = "".join(s.text for s in pending)
            meta = {
                "kind": "module",
                "language": pending[0].meta.get("language"),
                "start_line": pending[0].meta.get("start_line"),
                "end_line": pending[-1].meta.get("end_line"),
            }
            if any(s.meta.get("parse_error") for s in pending):
                meta["parse_error"] = True
            drafts.extend(_code_pieces(text, meta, target))
            pending.clear()

    for segment in segments:
        if segment.meta.get("kind") == "module":
            if pending and count_tokens("".join(s.text for s in [*pending, segment])) > target:
                flush_pending()
            pending.append(segment)
            continue
        flush_pending()
        meta = {k: v for k, v in segment.meta.items() if k in _CODE_KEYS}
        drafts.extend(_code_pieces(segment.text, meta, target, segment.meta.get("members") or ()))
    flush_pending()
    return drafts


def _code_pieces(
    text: str, meta: dict[str, Any], target: int, members: Sequence[dict[str, Any]] = ()
) -> list[ChunkDraft]:
    tokens = count_tokens(text)
    if tokens <= target:
        return [ChunkDraft(text.rstrip() + "\n", tokens, dict(meta))]
    if members:
        return _member_pieces(text, meta, target, members)
    return _line_pieces(text, meta, target)


def _member_pieces(
    text: str, meta: dict[str, Any], target: int, members: Sequence[dict[str, Any]]
) -> list[ChunkDraft]:
    """A class (impl, namespace, ...) larger than a chunk, cut between its members: its head, then its
    methods, consecutive ones packed while they fit; a member still too large is cut at blank lines."""
    lines = text.splitlines(keepends=True)
    first = int(meta.get("start_line") or 1)
    starts = [max(0, int(m["start_line"]) - first) for m in members]
    spans: list[tuple[int, int, dict[str, Any] | None]] = []  # (first line, end line excl., member)
    if starts[0] > 0:
        spans.append((0, starts[0], None))
    for index, member in enumerate(members):
        end = starts[index + 1] if index + 1 < len(members) else len(lines)
        if end > starts[index]:
            spans.append((starts[index], end, member))
    pieces: list[ChunkDraft] = []
    group: list[tuple[int, int, dict[str, Any] | None]] = []

    def flush() -> None:
        if not group:
            return
        begin, end = group[0][0], group[-1][1]
        body = "".join(lines[begin:end])
        named = [m for _, _, m in group if m is not None]
        piece = {**meta, "start_line": first + begin, "end_line": first + end - 1}
        if len(named) == 1 and len(group) == 1:
            piece.update(kind=named[0]["kind"], symbol=named[0]["symbol"])
            piece.pop("signature", None)
            piece.pop("doc", None)
        elif named:
            piece["symbols"] = [m["symbol"] for m in named]
        if body.strip():
            for draft in _code_pieces(body, piece, target):
                pieces.append(draft)
        group.clear()

    size = 0
    for span in spans:
        tokens = count_tokens("".join(lines[span[0] : span[1]]))
        if group and size + tokens > target:
            flush()
            size = 0
        group.append(span)
        size += tokens
    flush()
    for number, draft in enumerate(pieces, start=1):
        draft.metadata["part"] = number
    return pieces


def _line_pieces(text: str, meta: dict[str, Any], target: int) -> list[ChunkDraft]:
    # Cut at blank lines where possible, else at any line; each piece remembers its line range.
    lines = text.splitlines(keepends=True)
    first = int(meta.get("start_line") or 1)
    pieces: list[ChunkDraft] = []
    start = 0
    while start < len(lines):
        end, size, last_blank = start, 0, None
        while end < len(lines) and size + count_tokens(lines[end]) <= target:
            size += count_tokens(lines[end])
            if not lines[end].strip() and end > start:
                last_blank = end
            end += 1
        if end == start:  # one line longer than a chunk
            end = start + 1
        elif end < len(lines) and last_blank is not None and last_blank - start > (end - start) // 2:
            end = last_blank
        body = "".join(lines[start:end])
        if body.strip():
            piece_meta = {
                **meta,
                "part": len(pieces) + 1,
                "start_line": first + start,
                "end_line": first + end - 1,
            }
            for part in [body] if count_tokens(body) <= target else split_words(body, target):
                pieces.append(ChunkDraft(part, count_tokens(part), dict(piece_meta)))
        start = end
    return pieces


# --- records and transcripts ------------------------------------------------------------------


def pack_units(segments: list[Segment], target: int, kind: str, key: str, sep: str) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    current: list[Segment] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if current:
            text = sep.join(s.text for s in current)
            meta: dict[str, Any] = {
                "kind": kind,
                f"{key}s": [current[0].meta.get(key), current[-1].meta.get(key)],
            }
            sheets = list(dict.fromkeys(s.meta["sheet"] for s in current if s.meta.get("sheet")))
            if sheets:
                meta["sheets"] = sheets  # a workbook's records name their sheets
            drafts.append(ChunkDraft(text, count_tokens(text), meta))
        current.clear()
        size = 0

    for segment in segments:
        tokens = count_tokens(segment.text)
        if tokens > target:
            flush()
            for piece in _fit(segment.text, target):
                drafts.append(
                    ChunkDraft(
                        piece, count_tokens(piece), {"kind": kind, f"{key}s": [segment.meta.get(key)] * 2}
                    )
                )
            continue
        if current and size + tokens > target:
            flush()
        current.append(segment)
        size += tokens
    flush()
    return drafts


def chunk_transcript(segments: list[Segment], target: int) -> list[ChunkDraft]:
    turns: list[Segment] = []
    for segment in segments:
        speaker = segment.meta.get("speaker")
        if count_tokens(segment.text) <= target:
            turns.append(segment)
            continue
        # A monologue longer than a chunk: cut at sentences, each piece still names its speaker.
        body = (
            segment.text.split(": ", 1)[1]
            if speaker and segment.text.startswith(f"{speaker}: ")
            else segment.text
        )
        budget = target - (count_tokens(f"{speaker}: ") if speaker else 0)
        for piece in _fit(body, max(budget, 10)):
            turns.append(Segment(f"{speaker}: {piece}" if speaker else piece, dict(segment.meta)))
    drafts: list[ChunkDraft] = []
    current: list[Segment] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if current:
            text = "\n".join(s.text for s in current)
            speakers = sorted({str(s.meta["speaker"]) for s in current if s.meta.get("speaker")})
            meta: dict[str, Any] = {"kind": "transcript", "speakers": speakers}
            if current[0].meta.get("start") is not None:
                meta["start"] = current[0].meta["start"]
            drafts.append(ChunkDraft(text, count_tokens(text), meta))
        current.clear()
        size = 0

    for turn in turns:
        tokens = count_tokens(turn.text)
        if current and size + tokens > target:
            flush()
        current.append(turn)
        size += tokens
    flush()
    return drafts
