"""Reading files: raw bytes to text segments, one reader per kind of file, chosen by content type.

Each content type belongs to one family (`family_of`), and each family has its own extract function
with only its own libraries (engram.pipeline.steps.EXTRACT_FAMILIES); the detect step routes there."""

from __future__ import annotations

import posixpath
import zlib
from dataclasses import dataclass

from engram.documents.failures import (
    DecompressionBomb,
    EmptyContent,
    TooLarge,
    UnsupportedType,
)
from engram.limits import file_too_large
from engram.pipeline.extracted import Extracted
from engram.pipeline.readers.audio import AudioSource, Transcriber, read_audio
from engram.pipeline.readers.code import is_code, read_code
from engram.pipeline.readers.detect import GZIP_MAGIC, OCTET, detect
from engram.pipeline.readers.html import read_html
from engram.pipeline.readers.image import Describer, Ocr, read_image
from engram.pipeline.readers.office import OFFICE_TYPES, read_office
from engram.pipeline.readers.pdf import read_pdf
from engram.pipeline.readers.records import read_records
from engram.pipeline.readers.text import decode_utf8, read_text
from engram.settings import Settings

RECORD_TYPES = ("text/csv", "text/tab-separated-values", "application/json", "application/x-ndjson")
# The extract functions' families (engram.pipeline.steps.EXTRACT_FAMILIES names their functions).
DOCUMENTS, OFFICE, CODE, MEDIA = "documents", "office", "code", "media"


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 50 * 1024 * 1024
    max_pdf_pages: int = 2000
    max_extracted_chars: int = 20_000_000
    max_records: int = 200_000
    max_image_pixels: int = 100_000_000
    max_ocr_pages: int = 200

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            settings.max_file_bytes,
            settings.max_pdf_pages,
            settings.max_extracted_chars,
            settings.max_records,
            settings.max_image_pixels,
            settings.max_ocr_pages,
        )


@dataclass(frozen=True)
class Services:
    ocr: Ocr | None = None
    transcriber: Transcriber | None = None
    describer: Describer | None = None  # a vision model for images (ENGRAM_VISION)


@dataclass(frozen=True)
class Source:
    data: bytes
    filename: str | None
    declared_type: str | None
    job_name: str = "engram-local"
    s3_uri: str | None = None
    url: str | None = None
    # Where a service the reader calls leaves its output (Amazon Transcribe's transcript): the run's
    # work files, under the document's work prefix (engram.documents.blobs.revision_prefix_of).
    work_dir: str | None = None


@dataclass(frozen=True)
class Identified:
    data: bytes  # decompressed, for a gzip file
    filename: str | None
    content_type: str  # of `data`: what the reader is chosen by
    stored_type: str  # of the bytes as stored (application/gzip for a gzip file)

    @property
    def family(self) -> str:
        return family_of(self.content_type)


def identify(source: Source, limits: Limits) -> Identified:
    """The bytes to read and their type: sizes checked, a gzip file decompressed (bomb-guarded)."""
    return unpack(source, stored_type(source, limits), limits)


def stored_type(source: Source, limits: Limits) -> str:
    """The type of the bytes as stored (application/gzip for a gzip file), their size checked first:
    known before `unpack` decompresses, which can fail."""
    if len(source.data) == 0:
        raise EmptyContent("the file is empty (0 bytes)")
    if refusal := file_too_large(len(source.data), limits.max_file_bytes):
        raise TooLarge(refusal)
    return detect(source.data, source.filename, source.declared_type)


def unpack(source: Source, stored: str, limits: Limits) -> Identified:
    """The bytes to read and their type, given their `stored_type`: a gzip file decompressed
    (bomb-guarded)."""
    data, filename = source.data, source.filename
    content_type = stored
    if content_type == "application/gzip":
        data = gunzip(data, limits.max_file_bytes)
        if filename and filename.lower().endswith(".gz"):
            filename = filename[:-3]
        content_type = detect(data, filename, None)
        if len(data) == 0:
            raise EmptyContent("the compressed file is empty")
    return Identified(data, filename, content_type, stored)


def family_of(content_type: str) -> str:
    """Which extract function reads this type. Types no reader takes go to `documents`, which refuses
    them with the reason."""
    if content_type in OFFICE_TYPES:
        return OFFICE
    if is_code(content_type):
        return CODE
    if content_type.startswith(("image/", "audio/")):
        return MEDIA
    return DOCUMENTS


def read(source: Source, limits: Limits, services: Services) -> Extracted:
    found = identify(source, limits)
    data, filename, content_type = found.data, found.filename, found.content_type
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
        return read_pdf(
            data,
            max_pages=limits.max_pdf_pages,
            max_chars=limits.max_extracted_chars,
            ocr=services.ocr,
            max_ocr_pages=limits.max_ocr_pages,
        )
    if content_type in RECORD_TYPES:
        return read_records(data, content_type, max_records=limits.max_records)
    if is_code(content_type):
        return read_code(decode_utf8(data), content_type, filename)
    if content_type in OFFICE_TYPES:
        return read_office(
            data, content_type, max_bytes=limits.max_file_bytes, max_records=limits.max_records
        )
    if content_type.startswith("image/"):
        return read_image(
            data,
            content_type,
            services.ocr,
            max_pixels=limits.max_image_pixels,
            describer=services.describer,
        )
    if content_type.startswith("audio/"):
        name = filename or f"audio{posixpath.splitext(content_type)[1]}"
        return read_audio(
            AudioSource(data, content_type, name, source.job_name, source.s3_uri, source.work_dir),
            services.transcriber,
        )
    if content_type == "application/zip":
        raise UnsupportedType("ZIP archives are not supported: send the files inside one by one")
    if content_type == OCTET:
        raise UnsupportedType(
            "unknown file type: no known extension, no recognisable header, and not UTF-8 text"
        )
    raise UnsupportedType(f"{content_type} is not a supported type")


def gunzip(data: bytes, max_bytes: int) -> bytes:
    """Decompress a gzip file (every member of it, as `cat a.gz b.gz` makes), refusing to expand past
    `max_bytes` (a decompression bomb). A file cut short, or with bytes after its last member that are
    not another member, is corrupt: read as far as it goes, it would be indexed as if it were whole."""
    from engram.documents.failures import CorruptDocument

    out = bytearray()
    rest = data
    while True:
        inflater = zlib.decompressobj(wbits=47)
        try:
            out.extend(inflater.decompress(rest, max_bytes + 1 - len(out)))
            while inflater.unconsumed_tail and len(out) <= max_bytes:
                out.extend(inflater.decompress(inflater.unconsumed_tail, max_bytes + 1 - len(out)))
        except zlib.error as exc:
            raise CorruptDocument(f"the gzip file is corrupt: {exc}") from None
        if len(out) > max_bytes:
            raise DecompressionBomb(
                f"the gzip file expands past {max_bytes} bytes ({len(data)} bytes compressed): refused as "
                "a decompression bomb"
            )
        if not inflater.eof:
            raise CorruptDocument(
                "the gzip file is cut short: it ends before its end-of-stream marker "
                f"({len(data)} bytes compressed, {len(out)} read)"
            )
        rest = inflater.unused_data
        if not rest:
            return bytes(out)
        if not rest.startswith(GZIP_MAGIC):
            raise CorruptDocument(f"the gzip file has {len(rest)} bytes after its end that are not gzip")
