"""engram.documents.multipart: an upload read piece by piece gives what the whole body gives, and a file past
the limit is refused before the rest of the body is read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from engram.documents.multipart import MAX_FIELDS_BYTES, read_multipart
from engram.errors import InvalidInput, PayloadTooLarge

BOUNDARY = "b0undary"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def form(*parts: tuple[str, bytes, str | bytes | None, str | None], end: bool = True) -> bytes:
    """(name, value, filename, content type) parts, in order."""
    body = b""
    for name, value, filename, content_type in parts:
        disposition = f'form-data; name="{name}"'.encode()
        if filename:
            disposition += (
                b'; filename="' + (filename if isinstance(filename, bytes) else filename.encode()) + b'"'
            )
        body += f"--{BOUNDARY}\r\nContent-Disposition: ".encode() + disposition + b"\r\n"
        if content_type:
            body += f"Content-Type: {content_type}\r\n".encode()
        body += b"\r\n" + value + b"\r\n"
    return body + (f"--{BOUNDARY}--\r\n".encode() if end else b"")


FILE = ("file", b"id,name\n1,Bob Stone\n" * 100, "C:\\exports\\people.csv", "text/csv")
BODY = form(("container", b"crm", None, None), ("tags", b'["people"]', None, None), FILE)


def pieces_of(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


@pytest.mark.parametrize("size", [1, 7, 64, len(BODY)])
def test_the_body_in_pieces_of_any_size_reads_as_the_whole_body(size: int) -> None:
    upload = read_multipart(CONTENT_TYPE, pieces_of(BODY, size), max_file_bytes=10_000)

    assert upload.filename == "people.csv"  # the client's path is not kept
    assert upload.data == FILE[1]
    assert upload.content_type == "text/csv"
    assert upload.fields == {"container": "crm", "tags": '["people"]'}
    assert upload.json_field("tags", []) == ["people"]


def test_a_file_over_the_limit_is_refused_before_the_rest_is_read() -> None:
    taken: list[int] = []

    def pieces() -> Iterator[bytes]:
        for i, piece in enumerate(pieces_of(form(("file", b"x" * 100_000, "big.txt", None)), 1000)):
            taken.append(i)
            yield piece

    with pytest.raises(
        PayloadTooLarge,
        match=r"^the file is over 10000 bytes; the limit is 10000 bytes \(ENGRAM_MAX_FILE_BYTES\)$",
    ):
        read_multipart(CONTENT_TYPE, pieces(), max_file_bytes=10_000)
    assert len(taken) < 20  # of ~100 pieces


def test_a_file_of_exactly_the_limit_is_taken() -> None:
    upload = read_multipart(
        CONTENT_TYPE, [form(("file", b"x" * 10_000, "a.txt", None))], max_file_bytes=10_000
    )

    assert len(upload.data) == 10_000 and upload.content_type is None


def test_fields_past_their_limit_are_refused() -> None:
    body = form(("metadata", b"x" * (MAX_FIELDS_BYTES + 1), None, None), FILE)

    with pytest.raises(PayloadTooLarge, match="fields"):
        read_multipart(CONTENT_TYPE, pieces_of(body, 64 * 1024), max_file_bytes=10_000)


@pytest.mark.parametrize(
    ("content_type", "body", "message"),
    [
        ("multipart/form-data", BODY, "boundary"),
        (CONTENT_TYPE, form(FILE, end=False), "closing boundary"),
        (CONTENT_TYPE, b"--other\r\n\r\nx", "malformed"),
        (CONTENT_TYPE, form(("container", b"crm", None, None)), "'file' is required"),
        (CONTENT_TYPE, form(FILE, FILE), "one part named 'file'"),
        (CONTENT_TYPE, form(("", b"x", None, None), FILE), "needs a name"),
        (CONTENT_TYPE, form(("file", b"x", None, None)), "needs a filename"),
        (CONTENT_TYPE, form(("file", b"x", b"\xff.txt", None)), "UTF-8"),
        (CONTENT_TYPE, form(("container", b"\xff", None, None), FILE), "container is not UTF-8"),
        (
            CONTENT_TYPE,
            form(("container", b"a", None, None), ("container", b"b", None, None), FILE),
            "container is sent twice",
        ),
    ],
    ids=[
        "no boundary",
        "cut short",
        "not this boundary",
        "no file",
        "two files",
        "a part without a name",
        "no filename",
        "filename not UTF-8",
        "field not UTF-8",
        "a field twice",
    ],
)
def test_a_malformed_upload_is_refused_with_its_reason(content_type: str, body: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        read_multipart(content_type, [body], max_file_bytes=10_000)


@pytest.mark.parametrize(
    "name", ["container", "custom_id", "title", "user_id", "extract", "tags", "metadata"]
)
def test_an_empty_field_is_refused_not_taken_as_one_not_sent(name: str) -> None:
    upload = read_multipart(CONTENT_TYPE, [form((name, b"", None, None), FILE)], max_file_bytes=10_000)

    with pytest.raises((ValidationError, InvalidInput)) as refused:
        upload.form()

    named = refused.value.errors()[0]["loc"][0] if isinstance(refused.value, ValidationError) else None
    assert named == name or (
        isinstance(refused.value, InvalidInput) and refused.value.details["field"] == name
    )
