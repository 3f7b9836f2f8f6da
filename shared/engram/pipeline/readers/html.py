"""HTML pages, from a file or a URL: the main content via trafilatura, as Markdown so that headings
survive for the chunker."""

from __future__ import annotations

from functools import cache
from typing import Any

from engram.documents.failures import CorruptDocument, EmptyContent, UnsupportedHere
from engram.pipeline.extracted import Extracted, Segment


def read_html(data: bytes, *, url: str | None = None) -> Extracted:
    try:
        import trafilatura
    except ImportError:  # pragma: no cover - the extractors extra is not installed
        raise UnsupportedHere("HTML extraction needs the 'extractors' extra (trafilatura)") from None
    try:
        text = trafilatura.extract(
            data,
            url=url,
            output_format="markdown",
            include_tables=True,
            include_comments=False,
            include_links=False,
            favor_recall=True,
            with_metadata=False,
            config=_config(),
        )
        metadata = trafilatura.extract_metadata(data, default_url=url)
    except Exception as exc:  # trafilatura raises whatever lxml raises on broken input
        raise CorruptDocument(f"the HTML could not be parsed: {exc}") from None
    if not text or not text.strip():
        text = _all_text(data)
    if not text.strip():
        raise EmptyContent("no readable text was found in the HTML page")
    title = metadata.title if metadata is not None else None
    meta = {"url": url} if url else {}
    return Extracted(
        kind="prose", content_type="text/html", segments=[Segment(text, {})], title=title, meta=meta
    )


@cache
def _config() -> Any:
    from trafilatura.settings import use_config

    config = use_config()
    # Short pages are still pages: without this a two-paragraph article falls back to every text node,
    # navigation included. No signal-based timeout: the local runner works in a background thread.
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "10")
    config.set("DEFAULT", "MIN_OUTPUT_SIZE", "10")
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")
    return config


def _all_text(data: bytes) -> str:
    """For pages trafilatura finds no main content in (a bare list, a short note): every text node."""
    try:
        from lxml import html as lxml_html

        tree = lxml_html.fromstring(data)
        for bad in tree.xpath("//script|//style|//noscript|//template|//nav|//header|//footer|//aside"):
            bad.drop_tree()
        return "\n\n".join(" ".join(t.split()) for t in tree.itertext() if t.strip())
    except Exception:
        return ""
