"""Content-type detection: the declared type when it is specific, else magic bytes, else the file
name's extension, else "is it UTF-8 text?". The result is one canonical type per extractor."""

from __future__ import annotations

import codecs
import posixpath

from engram.pipeline.readers.code import LANGUAGE_BY_EXTENSION, code_content_type, language_from_content
from engram.pipeline.readers.packages import DOCX, LEGACY_OFFICE, OLE, OLE_MAGIC, PPTX, XLSX, ooxml_type

OCTET = "application/octet-stream"
GZIP_MAGIC = b"\x1f\x8b"

ALIASES = {
    "text/x-markdown": "text/markdown",
    "application/xhtml+xml": "text/html",
    "application/jsonl": "application/x-ndjson",
    "application/json-lines": "application/x-ndjson",
    "application/jsonlines": "application/x-ndjson",
    "text/x-csv": "text/csv",
    "application/csv": "text/csv",
    "audio/mp3": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/x-m4a": "audio/mp4",
    "image/jpg": "image/jpeg",
    "application/x-gzip": "application/gzip",
    "text/x-script.python": "text/x-python",
    "application/x-python-code": "text/x-python",
    "application/javascript": "text/javascript",
}

EXTENSIONS = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".log": "text/plain",
    ".rst": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdx": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "text/html",
    ".pdf": "application/pdf",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".m4a": "audio/mp4",
    ".mp4": "audio/mp4",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".flac": "audio/flac",
    ".webm": "audio/webm",
    ".gz": "application/gzip",
    ".zip": "application/zip",
    ".docx": DOCX,
    ".xlsx": XLSX,
    ".pptx": PPTX,
    ".doc": LEGACY_OFFICE[0],
    ".xls": LEGACY_OFFICE[1],
    ".ppt": LEGACY_OFFICE[2],
}

_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"%PDF-", 0, "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"II*\x00", 0, "image/tiff"),
    (b"MM\x00*", 0, "image/tiff"),
    (b"BM", 0, "image/bmp"),
    (b"ID3", 0, "audio/mpeg"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
    (b"\x1a\x45\xdf\xa3", 0, "audio/webm"),
    (GZIP_MAGIC, 0, "application/gzip"),
    (b"PK\x03\x04", 0, "application/zip"),
    (OLE_MAGIC, 0, OLE),
)


def normalise(content_type: str | None) -> str | None:
    if not content_type:
        return None
    base = content_type.split(";", 1)[0].strip().lower()
    return ALIASES.get(base, base) or None


def extension_of(filename: str | None) -> str:
    if not filename:
        return ""
    return posixpath.splitext(filename.lower())[1]


def sniff(data: bytes) -> str | None:
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None  # text with a byte-order mark (FF FE would otherwise look like an MPEG frame)
    for magic, offset, content_type in _MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return content_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[4:8] == b"ftyp":
        return "audio/mp4"
    if len(data) > 1 and data[0] == 0xFF and data[1] in (0xFB, 0xFA, 0xF3, 0xF2, 0xE3, 0xE2):
        return "audio/mpeg"  # an MPEG-1/2/2.5 layer III frame header without ID3
    head = data[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head[:200]:
        return "text/html"
    return None


def by_extension(filename: str | None) -> str | None:
    ext = extension_of(filename)
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    if ext in LANGUAGE_BY_EXTENSION:
        return code_content_type(LANGUAGE_BY_EXTENSION[ext])
    return None


def detect(data: bytes, filename: str | None, declared: str | None) -> str:
    """One canonical content type; OCTET when nothing fits (the extractor then refuses it)."""
    declared = normalise(declared)
    if declared and declared not in (OCTET, "binary/octet-stream", "text/plain"):
        return declared
    magic = sniff(data)
    named = by_extension(filename)
    if magic == "application/zip":  # an Office document is a ZIP package (a damaged one: its name tells)
        return ooxml_type(data) or (named if named in (DOCX, XLSX, PPTX) else magic)
    if magic == OLE:
        # An encrypted .docx/.xlsx/.pptx, or a legacy .doc/.xls/.ppt: its name tells which family.
        return named if named in (DOCX, XLSX, PPTX, *LEGACY_OFFICE) else magic
    if magic:
        return magic
    if named:
        return named
    if declared == "text/plain":
        return "text/plain"  # declared text stays text, whatever it looks like
    if looks_like_text(data):
        language = language_from_content(data[:8192].decode("utf-8", "ignore"))
        return code_content_type(language) if language else "text/plain"
    return OCTET


def looks_like_text(data: bytes) -> bool:
    sample = data[:4096]
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the sample's end is still text.
        return exc.start >= len(sample) - 3 and len(sample) == 4096
    return True
