"""How a document's ingestion fails. The class name is what Step Functions sees as the error name.

- `TransientError`: worth retrying (throttling, a provider or the database briefly unavailable). The
  state machine and the local runner retry it with backoff.
- `PipelineFailure` and its subclasses: the document cannot be ingested as it is. Not retried: the
  document ends `failed` with `code` and the message, which is written for the user.
"""

from __future__ import annotations

# One TransientError for the whole service (providers raise it too), so Step Functions' retry rule
# and the local runner match a single class name.
from engram.errors import TransientError as TransientError


class PipelineFailure(Exception):
    code = "ingest_failed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnsupportedType(PipelineFailure):
    code = "unsupported_type"


class UnsupportedHere(PipelineFailure):
    """The type is supported, but not by what this deployment has configured or installed."""

    code = "unsupported_here"


class OcrUnavailable(UnsupportedHere):
    """Text that only OCR can read (a scanned page, an image), and no OCR here."""

    code = "ocr_unavailable"


class EmptyContent(PipelineFailure):
    code = "empty_content"


class InvalidEncoding(PipelineFailure):
    code = "invalid_encoding"


class TooLarge(PipelineFailure):
    code = "too_large"


class DecompressionBomb(PipelineFailure):
    code = "decompression_bomb"


class EncryptedDocument(PipelineFailure):
    code = "encrypted"


class CorruptDocument(PipelineFailure):
    code = "corrupt"


class FetchFailed(PipelineFailure):
    code = "fetch_failed"


class SourceMissing(PipelineFailure):
    code = "source_missing"


class ExtractionUnusable(PipelineFailure):
    """The LLM's answer could not be used, even after one repair (engram.errors.ExtractionFailed)."""

    code = "extraction_failed"


class Superseded(PipelineFailure):
    """The document was deleted or queued again (a newer revision) while this run was working."""

    code = "superseded"


FAILURE_CODES: dict[str, str] = {
    cls.__name__: cls.code
    for cls in (
        PipelineFailure,
        UnsupportedType,
        UnsupportedHere,
        OcrUnavailable,
        EmptyContent,
        InvalidEncoding,
        TooLarge,
        DecompressionBomb,
        EncryptedDocument,
        CorruptDocument,
        FetchFailed,
        SourceMissing,
        ExtractionUnusable,
        Superseded,
    )
}
