"""Scanned PDF pages (no text layer, an image) go to OCR, each page recording where its text came from;
without OCR the document fails `ocr_unavailable`. The OCR path runs with a scripted OCR and Textract's
recorded answers always, and with the real tesseract where it is installed (the test says which ran)."""

from __future__ import annotations

import shutil

import boto3
import pymupdf
import pytest
from botocore.stub import ANY, Stubber

from engram.documents.failures import EmptyContent, OcrUnavailable, TooLarge
from engram.pipeline.chunking import chunk
from engram.pipeline.extracted import Extracted
from engram.pipeline.readers import Limits, Services, Source, read
from engram.pipeline.readers.image import TesseractOcr, TextractOcr
from tests import ingest_files as files


class ScriptedOcr:
    name = "scripted"

    def __init__(self, text: str = "INVOICE 4471\nTotal due 950 EUR") -> None:
        self.text = text
        self.images: list[bytes] = []

    def image_text(self, data: bytes, content_type: str) -> str:
        assert content_type == "image/png"
        self.images.append(data)
        return self.text


def _read(data: bytes, ocr: object | None, **limits: int) -> Extracted:
    return read(Source(data, "scan.pdf", None), Limits(**limits), Services(ocr=ocr))  # type: ignore[arg-type]


def test_scanned_pages_are_rendered_for_ocr_and_each_page_says_where_its_text_came_from() -> None:
    pdf = files.scanned_pdf(
        text_pages=["Cover letter about the March invoice."], scanned_pages=2, blank_pages=1
    )
    ocr = ScriptedOcr()

    extracted = _read(pdf, ocr)

    assert [s.meta for s in extracted.segments] == [
        {"page": 1, "source": "text_layer"},
        {"page": 2, "source": "ocr"},
        {"page": 3, "source": "ocr"},
    ]  # the blank page (no text, no image) is not sent to OCR
    assert extracted.segments[1].text == "[page 2]\nINVOICE 4471\nTotal due 950 EUR\n"
    assert extracted.meta == {"pages": 4, "ocr": "scripted", "ocr_pages": [2, 3]}
    assert len(ocr.images) == 2
    with pymupdf.open(stream=ocr.images[0], filetype="png") as rendered:
        assert max(rendered[0].rect.width, rendered[0].rect.height) <= 4000  # a page, at most 4000 px a side
    chunks = chunk(extracted, target=500)
    assert chunks[0].metadata["sources"] == ["ocr", "text_layer"] and chunks[0].metadata["pages"] == [1, 3]


def test_without_ocr_scanned_pages_fail_ocr_unavailable_naming_them() -> None:
    pdf = files.scanned_pdf(text_pages=["A page with text."], scanned_pages=2)

    with pytest.raises(OcrUnavailable, match=r"2 page\(s\) of the PDF \(2, 3\) have no text layer") as failed:
        _read(pdf, None)

    assert failed.value.code == "ocr_unavailable" and "tesseract" in failed.value.message


def test_too_many_scanned_pages_and_pages_ocr_cannot_read() -> None:
    with pytest.raises(TooLarge, match="3 scanned pages to OCR; the limit is 2"):
        _read(files.scanned_pdf(scanned_pages=3), ScriptedOcr(), max_ocr_pages=2)
    with pytest.raises(EmptyContent, match="OCR found no text on the 1 scanned page"):
        _read(files.scanned_pdf(scanned_pages=1), ScriptedOcr(text="  \n"))


def test_textract_reads_a_rendered_page() -> None:
    client = boto3.client(
        "textract", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    with Stubber(client) as stub:
        stub.add_response(
            "detect_document_text",
            {
                "Blocks": [
                    {"BlockType": "LINE", "Text": "INVOICE 4471"},
                    {"BlockType": "LINE", "Text": "950 EUR"},
                ]
            },
            {"Document": {"Bytes": ANY}},
        )
        extracted = _read(files.scanned_pdf(scanned_pages=1), TextractOcr(client))

    assert extracted.segments[0].text == "[page 1]\nINVOICE 4471\n950 EUR\n"
    assert extracted.meta["ocr"] == "textract"


@pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract is not installed: scanned pages were read by the scripted OCR and Textract above only",
)
def test_with_tesseract_installed_a_scanned_page_is_really_read() -> None:
    ocr = TesseractOcr.find()
    assert ocr is not None

    extracted = _read(files.scanned_pdf(scanned_pages=1), ocr)

    text = extracted.segments[0].text
    assert extracted.segments[0].meta == {"page": 1, "source": "ocr"}
    assert "INVOICE 4471" in text and "950 EUR" in text
