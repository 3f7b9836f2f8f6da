"""Each extractor on real files the tests make: PDF (PyMuPDF), HTML, CSV/JSON/JSONL, code, text."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from engram.documents.failures import (
    CorruptDocument,
    DecompressionBomb,
    EmptyContent,
    EncryptedDocument,
    InvalidEncoding,
    TooLarge,
    UnsupportedType,
)
from engram.pipeline.extracted import Extracted
from engram.pipeline.readers import Limits, Services, Source, read
from engram.pipeline.readers.detect import detect
from tests import files


def _extract(
    data: bytes, filename: str | None = None, content_type: str | None = None, **limits: int
) -> Extracted:
    return read(Source(data, filename, content_type), Limits(**limits), Services())


def test_pdf_pages_come_with_page_markers_and_title() -> None:
    pdf = files.pdf(["Alpha page text about invoices.", "", "Gamma page text about refunds."])

    result = _extract(pdf, "report.pdf")

    assert result.content_type == "application/pdf"
    # the blank page has no text; each page says where its text came from
    assert [s.meta for s in result.segments] == [
        {"page": 1, "source": "text_layer"},
        {"page": 3, "source": "text_layer"},
    ]
    assert result.segments[0].text.startswith("[page 1]\nAlpha page text about invoices.")
    assert result.segments[1].text.startswith("[page 3]\n")
    assert result.meta == {"pages": 3}


def test_encrypted_broken_and_oversized_pdfs_are_refused() -> None:
    with pytest.raises(EncryptedDocument, match="password-protected"):
        _extract(files.pdf(["secret"], password="pw"), "s.pdf")
    with pytest.raises(CorruptDocument):
        _extract(b"%PDF-1.5\nthis is not really a pdf", "b.pdf")
    with pytest.raises(TooLarge, match="3 pages; the limit is 2"):
        _extract(files.pdf(["a", "b", "c"]), "l.pdf", max_pdf_pages=2)
    with pytest.raises(EmptyContent, match="no extractable text"):
        _extract(files.pdf(["", ""]), "scan.pdf")


def test_html_keeps_the_article_and_its_headings_and_drops_navigation() -> None:
    page = files.html(
        "Team page", "Our team", ["The platform team owns the deployment pipeline and its tooling."]
    )

    result = _extract(page, "team.html")

    text = result.segments[0].text
    assert result.content_type == "text/html"
    assert text.startswith("# Our team")
    assert "The platform team owns the deployment pipeline" in text
    assert "Home" not in text and "tracking" not in text


def test_csv_rows_become_records() -> None:
    result = _extract(files.csv_people(), "people.csv")

    assert result.kind == "records"
    assert [s.text for s in result.segments] == [
        "name: Alice Martin; city: Paris; team: Platform",
        "name: Bob Stone; city: Berlin; team: Data",
        "name: Chen Wei; city: Singapore; team: Search",
    ]
    assert result.segments[1].meta == {"record": 2, "line": 3}


def test_json_and_jsonl_records_are_flattened() -> None:
    doc = json.dumps({"items": [{"name": "a", "tags": ["x", "y"], "owner": {"team": "t1"}}, {"name": "b"}]})

    result = _extract(doc.encode(), "items.json")
    lines = _extract(b'{"id": 1, "ok": true}\n\n{"id": 2, "ok": false}\n', "rows.jsonl")

    assert [s.text for s in result.segments] == ["name: a; tags: x, y; owner.team: t1", "name: b"]
    assert [s.text for s in lines.segments] == ["id: 1; ok: True", "id: 2; ok: False"]
    assert lines.segments[1].meta["line"] == 3
    with pytest.raises(CorruptDocument, match="line 2 is not valid JSON"):
        _extract(b'{"a": 1}\nnot json\n', "bad.jsonl")
    with pytest.raises(CorruptDocument, match="not valid JSON"):
        _extract(b"{broken", "bad.json")


def test_python_is_cut_at_function_and_class_boundaries() -> None:
    result = _extract(files.PYTHON_SOURCE.encode(), "billing.py")

    units = [
        (s.meta["kind"], s.meta.get("symbol"), s.meta["start_line"], s.meta["end_line"])
        for s in result.segments
    ]
    assert result.content_type == "text/x-python" and result.language == "python"
    assert units == [("module", None, 1, 6), ("function", "add_tax", 7, 10), ("class", "Invoice", 13, 20)]
    add_tax = result.segments[1]
    assert add_tax.text.startswith("# Tax is charged on the net amount.\ndef add_tax(amount):")
    assert add_tax.meta["doc"] == "Return the amount with VAT added."
    assert add_tax.meta["signature"] == "add_tax(amount)"
    assert result.segments[2].meta["methods"] == ["__init__", "total"]


def test_other_languages_are_detected_and_cut_at_declarations() -> None:
    source = (
        b"import x from 'y';\n\n// adds\nexport function add(a, b) {\n  return a + b;\n}\n\nclass Cart {\n}\n"
    )
    script = b"#!/usr/bin/env python3\nprint('hi')\n"

    js = _extract(source, "cart.js")
    py = _extract(script, "run", "text/plain")

    assert js.language == "javascript"
    assert [(s.meta["kind"], s.meta.get("symbol")) for s in js.segments] == [
        ("module", None),
        ("function", "add"),
        ("class", "Cart"),
    ]
    assert js.segments[1].text.startswith("// adds\nexport function add")
    assert py.kind == "prose"  # declared text/plain without an extension stays text


def test_utf16_text_gets_the_checks_and_line_endings_utf8_text_gets() -> None:
    assert _extract("line one\r\nline two".encode("utf-16"), "a.txt").segments[0].text == "line one\nline two"
    with pytest.raises(InvalidEncoding, match="NUL"):
        _extract("bin\x00ary".encode("utf-16"), "a.txt")


def test_text_must_be_utf8_and_not_empty() -> None:
    assert _extract("héllo wörld".encode(), "a.txt").segments[0].text == "héllo wörld"
    assert _extract("\ufeffbom text".encode(), "a.txt").segments[0].text == "bom text"
    assert _extract("utf16 text".encode("utf-16"), "a.txt").segments[0].text == "utf16 text"
    with pytest.raises(InvalidEncoding, match=r"invalid byte 0xe9 at offset 3"):
        _extract(b"caf\xe9", "a.txt")
    with pytest.raises(EmptyContent, match="0 bytes"):
        _extract(b"", "a.txt")
    with pytest.raises(EmptyContent):
        _extract(b"   \n\t", "a.txt")


def test_markdown_title_is_its_first_heading() -> None:
    assert _extract(b"intro\n\n# Real Title\n\ntext", "n.md").title == "Real Title"


def test_unknown_types_archives_and_broken_office_files_are_refused() -> None:
    with pytest.raises(UnsupportedType, match="unknown file type"):
        _extract(bytes(range(256)), "data.bin")
    with pytest.raises(UnsupportedType, match="ZIP"):
        _extract(b"PK\x03\x04rest", "a.zip")
    with pytest.raises(CorruptDocument, match="Word document is not a readable ZIP package"):
        _extract(b"whatever", None, "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
    with pytest.raises(UnsupportedType, match="application/x-foo is not a supported type"):
        _extract(b"hello", "a.txt", "application/x-foo")


def test_gzip_is_read_and_bombs_are_refused() -> None:
    assert _extract(gzip.compress(b"compressed notes about things"), "n.txt.gz").segments[0].text == (
        "compressed notes about things"
    )
    bomb = gzip.compress(b"\0" * (5 * 1024 * 1024))
    assert len(bomb) < 10_000
    with pytest.raises(DecompressionBomb, match="decompression bomb"):
        _extract(bomb, "bomb.gz", max_file_bytes=1024 * 1024)


def test_a_gzip_file_cut_short_is_corrupt_not_read_as_far_as_it_goes() -> None:
    whole = gzip.compress(b"Sentence number 1 about Wanda Maximoff in Sokovia. " * 200)

    with pytest.raises(CorruptDocument, match="cut short"):
        _extract(whole[: len(whole) // 2], "trunc.txt.gz")


def test_a_gzip_header_with_no_stream_after_it_is_corrupt_not_empty() -> None:
    with pytest.raises(CorruptDocument, match="cut short"):
        _extract(b"\x1f\x8b\x08\x00garbage", "bad.gz")


def test_every_member_of_a_concatenated_gzip_is_read() -> None:
    joined = gzip.compress(b"first part of the notes. ") + gzip.compress(b"second part of the notes.")

    text = "".join(segment.text for segment in _extract(joined, "notes.txt.gz").segments)

    assert text == "first part of the notes. second part of the notes."


def test_bytes_after_a_gzip_stream_that_are_not_gzip_make_it_corrupt() -> None:
    with pytest.raises(CorruptDocument, match="5 bytes after its end that are not gzip"):
        _extract(gzip.compress(b"notes about things") + b"extra", "n.txt.gz")


def test_image_bombs_are_refused_before_any_ocr() -> None:
    from PIL import Image

    from engram.pipeline.readers.image import read_image

    buffer = io.BytesIO()
    Image.new("L", (400, 300)).save(buffer, format="PNG")

    class NeverCalled:
        name = "never"

        def image_text(self, data: bytes, content_type: str) -> str:
            raise AssertionError("OCR must not run on a refused image")

    with pytest.raises(DecompressionBomb, match="400x300"):
        read_image(buffer.getvalue(), "image/png", NeverCalled(), max_pixels=100_000)


def test_files_over_the_size_limit_are_refused() -> None:
    with pytest.raises(
        TooLarge, match=r"^the file is 11 bytes; the limit is 10 bytes \(ENGRAM_MAX_FILE_BYTES\)$"
    ):
        _extract(b"x" * 11, "a.txt", max_file_bytes=10)


@pytest.mark.parametrize(
    ("data", "name", "declared", "expected"),
    [
        (b"%PDF-1.7 ...", "noext", None, "application/pdf"),
        (b"plain words", "notes.md", None, "text/markdown"),
        (b"plain words", "notes.md", "text/plain", "text/markdown"),
        (b"<!doctype html><html></html>", None, None, "text/html"),
        (b"a,b\n1,2\n", "x.csv", None, "text/csv"),
        (b"fn main() {}", "main.rs", None, "text/x-rust"),
        (b"just text", None, None, "text/plain"),
        (b"\x89PNG\r\n\x1a\nxxxx", "photo", None, "image/png"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "a", None, "audio/wav"),
        (b"anything", "a.txt", "application/json; charset=utf-8", "application/json"),
    ],
)
def test_content_type_detection(data: bytes, name: str | None, declared: str | None, expected: str) -> None:
    assert detect(data, name, declared) == expected
