"""Everything a step needs, built once per process and passed in (nothing reads the environment)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engram.db.database import Database
from engram.documents.blobs import BlobStore
from engram.graph.link_rules import RuleLinker
from engram.memories.writer import MemoryWriter
from engram.pipeline.readers import Limits, Services
from engram.pipeline.readers.audio import AwsTranscriber, OpenAITranscriber, Transcriber
from engram.pipeline.readers.image import Describer, LlmImageDescriber, Ocr, TesseractOcr, TextractOcr
from engram.pipeline.readers.url import UrlFetcher
from engram.providers.embeddings import Embedder
from engram.providers.llm import LLM
from engram.settings import Settings


@dataclass
class PipelineContext:
    settings: Settings
    db: Database
    blobs: BlobStore
    embedder: Embedder
    services: Services
    fetcher: UrlFetcher
    writer: MemoryWriter  # stores what llm-extract found, and runs graph-link
    llm: LLM | None = None  # for documents with extract=full
    sleep: Callable[[float], None] = field(default=time.sleep)

    @property
    def limits(self) -> Limits:
        return Limits.from_settings(self.settings)


def make_ocr(settings: Settings, boto_client: Callable[[str], Any]) -> Ocr | None:
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

        if not settings.openai_api_key:
            return None
        client = openai.OpenAI(
            api_key=settings.openai_api_key.get_secret_value(), base_url=settings.openai_base_url
        )
        return OpenAITranscriber(client, settings.transcription_model)
    if settings.transcription_provider == "transcribe" and settings.documents_bucket:
        prefix = settings.work_prefix
        return AwsTranscriber(
            boto_client("transcribe"),
            settings.documents_bucket,
            output_key=lambda job: f"{prefix}transcripts/{job}.json",
            read_output=lambda key: blobs.get(key),
        )
    return None


def build_context(
    settings: Settings,
    db: Database,
    blobs: BlobStore,
    embedder: Embedder,
    boto_client: Callable[[str], Any],
    *,
    llm: LLM | None = None,
) -> PipelineContext:
    return PipelineContext(
        settings=settings,
        db=db,
        blobs=blobs,
        embedder=embedder,
        services=Services(
            ocr=make_ocr(settings, boto_client),
            transcriber=make_transcriber(settings, blobs, boto_client),
            describer=make_describer(settings, llm),
        ),
        fetcher=UrlFetcher(
            max_bytes=settings.max_file_bytes,
            timeout=settings.url_fetch_timeout_seconds,
            allow_private=settings.allow_private_urls,
        ),
        writer=MemoryWriter(embedder, RuleLinker(settings.link_similarity)),
        llm=llm,
    )
