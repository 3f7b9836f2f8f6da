"""PDF via PyMuPDF: one segment per page, each starting with a `[page N]` marker."""

from __future__ import annotations

from typing import Any

from engram.documents.failures import (
    CorruptDocument,
    EmptyContent,
    EncryptedDocument,
    TooLarge,
    UnsupportedHere,
)
from engram.pipeline.readers.result import Extracted, Segment

TEXT_BLOCK = 0


def page_text(page: Any) -> str:
    """The page's text blocks in reading order (top to bottom, then left to right), a blank line
    between blocks so paragraphs stay apart. Sorting the few blocks here is ~25x faster than
    `get_text("text", sort=True)`, which sorts every line in Python (9 s vs 0.3 s for 100 pages)."""
    blocks = [b for b in page.get_text("blocks") if b[6] == TEXT_BLOCK and b[4].strip()]
    blocks.sort(key=lambda b: (round(b[1], 1), b[0]))
    return "\n".join(b[4] for b in blocks)


def read_pdf(data: bytes, *, max_pages: int, max_chars: int) -> Extracted:
    try:
        import pymupdf
    except ImportError:  # pragma: no cover - the extractors extra is not installed
        raise UnsupportedHere("PDF extraction needs the 'extractors' extra (pymupdf)") from None
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise CorruptDocument(f"not a readable PDF: {exc}") from None
    with doc:
        if doc.needs_pass:
            raise EncryptedDocument("the PDF is password-protected; send an unprotected copy")
        if doc.page_count == 0:
            raise CorruptDocument("the PDF has no pages")
        if doc.page_count > max_pages:
            raise TooLarge(f"the PDF has {doc.page_count} pages; the limit is {max_pages}")
        segments: list[Segment] = []
        total = 0
        for number in range(1, doc.page_count + 1):
            page = doc[number - 1]
            try:
                text = page_text(page)
            except Exception as exc:
                raise CorruptDocument(f"page {number} of the PDF could not be read: {exc}") from None
            total += len(text)
            if total > max_chars:
                raise TooLarge(
                    f"the PDF's text passes {max_chars} characters by page {number}: too large, or a "
                    "decompression bomb"
                )
            if text.strip():
                segments.append(Segment(f"[page {number}]\n{text.strip()}\n", {"page": number}))
        if not segments:
            raise EmptyContent(
                f"the PDF's {doc.page_count} page(s) have no extractable text (scanned pages are images: "
                "send them as PNG or JPEG for OCR)"
            )
        title = (doc.metadata or {}).get("title") or None
        return Extracted(
            kind="prose",
            content_type="application/pdf",
            segments=segments,
            title=title,
            meta={"pages": doc.page_count},
        )
