"""Reading files: raw bytes to text segments, one reader per kind of file, chosen by content type."""

from __future__ import annotations

import posixpath
import zlib
from dataclasses import dataclass

from engram.documents.failures import (
    DecompressionBomb,
    EmptyContent,
    TooLarge,
    UnsupportedHere,
    UnsupportedType,
)
from engram.pipeline.readers.audio import AudioSource, Transcriber, read_audio
from engram.pipeline.readers.code import is_code, read_code
from engram.pipeline.readers.detect import OCTET, detect
from engram.pipeline.readers.html import read_html
from engram.pipeline.readers.image import Ocr, read_image
from engram.pipeline.readers.pdf import read_pdf
from engram.pipeline.readers.records import read_records
from engram.pipeline.readers.result import Extracted
from engram.pipeline.readers.text import decode_utf8, read_text
from engram.settings import Settings

RECORD_TYPES = ("text/csv", "text/tab-separated-values", "application/json", "application/x-ndjson")
OFFICE_PREFIX = "application/vnd.openxmlformats-officedocument."


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 50 * 1024 * 1024
    max_pdf_pages: int = 2000
    max_extracted_chars: int = 20_000_000
    max_records: int = 200_000
    max_image_pixels: int = 100_000_000

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            settings.max_file_bytes,
            settings.max_pdf_pages,
            settings.max_extracted_chars,
            settings.max_records,
            settings.max_image_pixels,
        )


@dataclass(frozen=True)
class Services:
    ocr: Ocr | None = None
    transcriber: Transcriber | None = None


@dataclass(frozen=True)
class Source:
    data: bytes
    filename: str | None
    declared_type: str | None
    job_name: str = "engram-local"
    s3_uri: str | None = None
    url: str | None = None


def read(source: Source, limits: Limits, services: Services) -> Extracted:
    data, filename = source.data, source.filename
    if len(data) == 0:
        raise EmptyContent("the file is empty (0 bytes)")
    if len(data) > limits.max_file_bytes:
        raise TooLarge(f"the file is {len(data)} bytes; the limit is {limits.max_file_bytes}")
    content_type = detect(data, filename, source.declared_type)
    if content_type == "application/gzip":
        data = gunzip(data, limits.max_file_bytes)
        if filename and filename.lower().endswith(".gz"):
            filename = filename[:-3]
        content_type = detect(data, filename, None)
        if len(data) == 0:
            raise EmptyContent("the compressed file is empty")
    extracted = _dispatch(content_type, data, filename, source, limits, services)
    if extracted.chars > limits.max_extracted_chars:
        raise TooLarge(
            f"the extracted text has {extracted.chars} characters; the limit is {limits.max_extracted_chars}"
        )
    if not extracted.has_text():
        raise EmptyContent("the document contains no readable text (only whitespace or control characters)")
    return extracted


def _dispatch(
    content_type: str, data: bytes, filename: str | None, source: Source, limits: Limits, services: Services
) -> Extracted:
    if content_type in ("text/plain", "text/markdown"):
        return read_text(data, content_type)
    if content_type == "text/html":
        return read_html(data, url=source.url)
    if content_type == "application/pdf":
        return read_pdf(data, max_pages=limits.max_pdf_pages, max_chars=limits.max_extracted_chars)
    if content_type in RECORD_TYPES:
        return read_records(data, content_type, max_records=limits.max_records)
    if is_code(content_type):
        return read_code(decode_utf8(data), content_type, filename)
    if content_type.startswith("image/"):
        if services.ocr is None:
            raise UnsupportedHere(
                "images need OCR: Amazon Textract is used in AWS; locally install tesseract "
                "(e.g. `apt-get install tesseract-ocr`) and restart, or set ENGRAM_OCR_PROVIDER"
            )
        return read_image(data, content_type, services.ocr, max_pixels=limits.max_image_pixels)
    if content_type.startswith("audio/"):
        name = filename or f"audio{posixpath.splitext(content_type)[1]}"
        return read_audio(
            AudioSource(data, content_type, name, source.job_name, source.s3_uri), services.transcriber
        )
    if content_type == "application/zip":
        raise UnsupportedType("ZIP archives are not supported: send the files inside one by one")
    if content_type.startswith(OFFICE_PREFIX):
        raise UnsupportedType("Office documents are not supported yet: export them as PDF first")
    if content_type == OCTET:
        raise UnsupportedType(
            "unknown file type: no known extension, no recognisable header, and not UTF-8 text"
        )
    raise UnsupportedType(f"{content_type} is not a supported type")


def gunzip(data: bytes, max_bytes: int) -> bytes:
    """Decompress a gzip file, refusing to expand past `max_bytes` (a decompression bomb)."""
    inflater = zlib.decompressobj(wbits=47)
    out = bytearray()
    try:
        chunk = inflater.decompress(data, max_bytes + 1 - len(out))
        out.extend(chunk)
        while inflater.unconsumed_tail and len(out) <= max_bytes:
            out.extend(inflater.decompress(inflater.unconsumed_tail, max_bytes + 1 - len(out)))
    except zlib.error as exc:
        from engram.documents.failures import CorruptDocument

        raise CorruptDocument(f"the gzip file is corrupt: {exc}") from None
    if len(out) > max_bytes:
        raise DecompressionBomb(
            f"the gzip file expands past {max_bytes} bytes ({len(data)} bytes compressed): refused as a "
            "decompression bomb"
        )
    return bytes(out)
