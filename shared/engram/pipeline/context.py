"""Everything a step needs, built once per process and passed in (nothing reads the environment).

The settings, the database and the blob store, which every step uses, are built with the context.
Each other collaborator (the embedder, the readers' services, the URL fetcher, the memory writer,
the LLM) is built, and its module imported, when a step first asks for it: chunk's function loads
no LLM, reader or writer, and finish's no embedder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.db.database import Database
    from engram.documents.blobs import BlobStore
    from engram.memories.writer import MemoryWriter
    from engram.pipeline.readers import Limits, Services
    from engram.pipeline.readers.audio import Transcriber
    from engram.pipeline.readers.image import Describer, Ocr
    from engram.pipeline.readers.url import UrlFetcher
    from engram.providers.embeddings import Embedder
    from engram.providers.llm import LLM
    from engram.settings import Settings


def _no_llm() -> LLM | None:
    return None


@dataclass
class PipelineContext:
    settings: Settings
    db: Database
    blobs: BlobStore
    make_embedder: Callable[[], Embedder]
    boto_client: Callable[[str], Any]  # for the readers' AWS services (Textract, Transcribe)
    make_llm: Callable[[], LLM | None] = field(default=_no_llm)  # for documents with extract=full
    sleep: Callable[[float], None] = field(default=time.sleep)

    @cached_property
    def embedder(self) -> Embedder:
        return self.make_embedder()

    @cached_property
    def llm(self) -> LLM | None:
        return self.make_llm()

    @cached_property
    def services(self) -> Services:
        """OCR, transcription and the vision model, for the extract functions' readers."""
        from engram.pipeline.readers import Services

        return Services(
            ocr=make_ocr(self.settings, self.boto_client),
            transcriber=make_transcriber(self.settings, self.blobs, self.boto_client),
            describer=make_describer(self.settings, self.llm) if self.settings.vision else None,
        )

    @cached_property
    def fetcher(self) -> UrlFetcher:
        from engram.pipeline.readers.url import UrlFetcher

        return UrlFetcher(
            max_bytes=self.settings.max_file_bytes,
            timeout=self.settings.url_fetch_timeout_seconds,
            allow_private=self.settings.allow_private_urls,
        )

    @cached_property
    def writer(self) -> MemoryWriter:
        """Stores what llm-extract found, and runs graph-link."""
        from engram.graph.link_rules import RuleLinker
        from engram.memories.writer import MemoryWriter

        return MemoryWriter(self.embedder, RuleLinker(self.settings.link_similarity))

    @property
    def limits(self) -> Limits:
        from engram.pipeline.readers import Limits

        return Limits.from_settings(self.settings)


def make_ocr(settings: Settings, boto_client: Callable[[str], Any]) -> Ocr | None:
    from engram.pipeline.readers.image import TesseractOcr, TextractOcr

    provider = settings.ocr_provider
    if provider == "none":
        return None
    if provider == "textract" or (provider == "auto" and settings.documents_bucket):
        return TextractOcr(boto_client("textract"))
    return TesseractOcr.find()


def make_describer(settings: Settings, llm: LLM | None) -> Describer | None:
    """The vision model for images: the configured LLM (or ENGRAM_VISION_MODEL of its provider) when
    ENGRAM_VISION is on and there is an LLM; else None (images are read by OCR alone)."""
    if not settings.vision or llm is None:
        return None
    from engram.pipeline.readers.image import LlmImageDescriber

    if settings.vision_model and settings.vision_model != llm.model_id:
        from engram.providers.llm_factory import make_llm

        llm = make_llm(settings.model_copy(update={"llm_model": settings.vision_model}))
        if llm is None:  # pragma: no cover - llm_provider is not none here
            return None
    return LlmImageDescriber(llm)


def make_transcriber(
    settings: Settings, blobs: BlobStore, boto_client: Callable[[str], Any]
) -> Transcriber | None:
    if settings.transcription_provider == "openai":
        import openai

        from engram.pipeline.readers.audio import OpenAITranscriber

        if not settings.openai_api_key:
            return None
        client = openai.OpenAI(
            api_key=settings.openai_api_key.get_secret_value(), base_url=settings.openai_base_url
        )
        return OpenAITranscriber(client, settings.transcription_model)
    if settings.transcription_provider == "transcribe" and settings.documents_bucket:
        from engram.pipeline.readers.audio import AwsTranscriber

        return AwsTranscriber(
            boto_client("transcribe"), settings.documents_bucket, read_output=lambda key: blobs.get(key)
        )
    return None
