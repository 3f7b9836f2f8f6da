"""CSV, JSON and JSON Lines: one text record per row or object ("name: Alice; city: Paris")."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from engram.documents.failures import CorruptDocument, EmptyContent, TooLarge
from engram.pipeline.extracted import Extracted, Segment
from engram.pipeline.readers.text import decode_utf8

MAX_FIELD_CHARS = 2000


def read_records(data: bytes, content_type: str, *, max_records: int) -> Extracted:
    text = decode_utf8(data)
    if not text.strip():
        raise EmptyContent("the file has no records")
    if content_type in ("text/csv", "text/tab-separated-values"):
        records = _csv_records(text, "\t" if content_type == "text/tab-separated-values" else None)
    elif content_type == "application/x-ndjson":
        records = _jsonl_records(text)
    else:
        records = _json_records(text)
    segments: list[Segment] = []
    for number, (line, record) in enumerate(records, start=1):
        if number > max_records:
            raise TooLarge(f"the file has more than {max_records} records")
        rendered = render(record)
        if rendered.strip():
            segments.append(Segment(rendered, {"record": number, "line": line}))
    if not segments:
        raise EmptyContent("the file has no records with any content")
    return Extracted(
        kind="records", content_type=content_type, segments=segments, meta={"records": len(segments)}
    )


def _csv_records(text: str, delimiter: str | None) -> Iterable[tuple[int, Any]]:
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter, restkey="_extra")
    try:
        if not reader.fieldnames or not any(f and f.strip() for f in reader.fieldnames):
            raise EmptyContent("the CSV has no header row")
        count = 0
        for row in reader:
            count += 1
            yield reader.line_num, {k: v for k, v in row.items() if k is not None}
    except csv.Error as exc:
        raise CorruptDocument(f"the CSV is malformed near line {reader.line_num}: {exc}") from None
    if count == 0:
        raise EmptyContent("the CSV has a header but no rows")


def _jsonl_records(text: str) -> Iterable[tuple[int, Any]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorruptDocument(f"line {number} is not valid JSON: {exc.msg}") from None


def _json_records(text: str) -> Iterable[tuple[int, Any]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptDocument(f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from None
    # {"items": [...]} is a list of records under one key; other objects are one record each.
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), list):
        value = next(iter(value.values()))
    if isinstance(value, list):
        for item in value:
            yield 0, item
    else:
        yield 0, value


def render(record: Any) -> str:
    if isinstance(record, dict | list):
        pairs = list(_flatten(record, ""))
        return "; ".join(f"{k}: {v}" if k else v for k, v in pairs if v != "")
    return _scalar(record)


def _flatten(value: Any, prefix: str, depth: int = 0) -> Iterable[tuple[str, str]]:
    if depth > 8:
        yield prefix, _scalar(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key), depth + 1)
    elif isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        yield prefix, ", ".join(_scalar(v) for v in value)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _flatten(item, f"{prefix}[{index}]", depth + 1)
    else:
        yield prefix, _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return ""
    text = str(value).strip().replace("\n", " ")
    return text[:MAX_FIELD_CHARS]
