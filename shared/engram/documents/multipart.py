"""Reading a multipart/form-data upload (the local `POST /v1/documents/upload`) piece by piece, as
`engram local` streams it: python-multipart splits the parts, and the file is refused the moment it
passes the file limit, before the rest is read. Only the file's bytes and the small fields are held."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from engram.documents.models import UploadForm
from engram.errors import InvalidInput, PayloadTooLarge
from engram.limits import file_too_large

# The form's other fields together (container, tags, metadata as JSON, ...).
MAX_FIELDS_BYTES = 1024 * 1024


@dataclass
class Upload:
    filename: str
    data: bytes
    content_type: str | None
    fields: dict[str, str] = field(default_factory=dict)

    def form(self) -> UploadForm:
        """The file's name and the form's fields, checked as a JSON document's are (pydantic's
        ValidationError, a 422 naming the field): a field the form does not take is refused, not
        dropped, and an empty field is refused as an empty JSON string is (`-F container=$UNSET` must
        not land in `default`)."""
        if "filename" in self.fields:
            raise InvalidInput("the file's name is the filename of its part", details={"field": "filename"})
        given: dict[str, Any] = dict(self.fields)
        given.update(
            filename=self.filename, tags=self.json_field("tags", []), metadata=self.json_field("metadata", {})
        )
        if "content_type" not in given and self.content_type is not None:
            given["content_type"] = self.content_type
        return UploadForm.model_validate(given)

    def json_field(self, name: str, default: Any) -> Any:
        raw = self.fields.get(name)
        if raw is None:
            return default
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise InvalidInput(f"{name} must be JSON", details={"field": name}) from None
        except RecursionError:
            raise InvalidInput(f"{name} is nested too deeply", details={"field": name}) from None


def read_multipart(content_type: str, pieces: Iterable[bytes], max_file_bytes: int) -> Upload:
    """The upload in `pieces` (the body as it arrives, or whole as one piece): one part named `file`
    (with a filename), and text fields. PayloadTooLarge once the file passes `max_file_bytes`."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise InvalidInput("send the file as multipart/form-data with a boundary", details={"field": "body"})
    form = _Form(max_file_bytes)
    try:
        parser = MultipartParser(boundary, callbacks=form.callbacks())  # type: ignore[arg-type]
        for piece in pieces:
            parser.write(piece)
    except FormParserError as exc:
        raise InvalidInput(
            f"the multipart/form-data body is malformed: {exc}", details={"field": "body"}
        ) from None
    if not form.ended:
        raise InvalidInput(
            "the multipart/form-data body ended before its closing boundary", details={"field": "body"}
        )
    return form.upload()


class _Form:
    """What the parser's callbacks report, part by part."""

    def __init__(self, max_file_bytes: int) -> None:
        self.max_file_bytes = max_file_bytes
        self.ended = False
        self._header_name = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._part: _Part | None = None
        self._file: _Part | None = None
        self._fields: dict[str, bytes] = {}
        self._fields_bytes = 0

    def callbacks(self) -> dict[str, Any]:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value_piece,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        }

    def _part_begin(self) -> None:
        self._headers, self._part = {}, None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_piece(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name, self._header_value = b"", b""

    def _headers_finished(self) -> None:
        _, disposition = parse_options_header(self._headers.get(b"content-disposition"))
        name = disposition.get(b"name", b"").decode("latin-1")
        filename = disposition.get(b"filename")
        declared, _ = parse_options_header(self._headers.get(b"content-type"))
        if name == "file":
            if self._file is not None:
                raise InvalidInput("send one part named 'file'", details={"field": "file"})
            if not filename:
                raise InvalidInput("the file part needs a filename", details={"field": "file"})
            try:
                decoded = filename.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput("the file's name is not UTF-8", details={"field": "file"}) from None
            self._part = self._file = _Part(name, decoded, declared.decode("latin-1"))
        elif name:
            self._part = _Part(name, None, None)
        else:
            raise InvalidInput(
                "every part of the form needs a name (Content-Disposition)", details={"field": "body"}
            )

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._part
        if part is None:
            return
        part.data += data[start:end]
        if part is self._file:
            if refusal := file_too_large(len(part.data), self.max_file_bytes, exact=False):
                raise PayloadTooLarge(refusal)
        else:
            self._fields_bytes += end - start
            if self._fields_bytes > MAX_FIELDS_BYTES:
                raise PayloadTooLarge(f"the form's fields are limited to {MAX_FIELDS_BYTES} bytes together")

    def _part_end(self) -> None:
        if self._part is not None and self._part is not self._file:
            if self._part.name in self._fields:  # which one would be meant? Neither is taken.
                raise InvalidInput(
                    f"{self._part.name} is sent twice: send each field once",
                    details={"field": self._part.name},
                )
            self._fields[self._part.name] = bytes(self._part.data)
        self._part = None

    def _end(self) -> None:
        self.ended = True

    def upload(self) -> Upload:
        if self._file is None:
            raise InvalidInput("a part named 'file' is required", details={"field": "file"})
        fields: dict[str, str] = {}
        for name, value in self._fields.items():
            try:
                fields[name] = value.decode("utf-8")
            except UnicodeDecodeError:
                # Never stored with replacement characters: refused as sent.
                raise InvalidInput(f"{name} is not UTF-8 text", details={"field": name}) from None
        declared = self._file.content_type
        return Upload(
            filename=(self._file.filename or "").replace("\\", "/").rsplit("/", 1)[-1],
            data=bytes(self._file.data),
            content_type=None if declared in ("", "application/octet-stream", "text/plain") else declared,
            fields=fields,
        )


@dataclass
class _Part:
    name: str
    filename: str | None
    content_type: str | None
    data: bytearray = field(default_factory=bytearray)
