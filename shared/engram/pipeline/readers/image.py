"""Images: text through OCR. Amazon Textract in AWS; tesseract locally when it is installed;
otherwise a clear "unsupported here" failure, never an empty document."""

from __future__ import annotations

import io
import shutil
import subprocess
from typing import Any, Protocol

from engram.documents.failures import (
    CorruptDocument,
    DecompressionBomb,
    EmptyContent,
    TooLarge,
    TransientError,
)
from engram.pipeline.readers.result import Extracted, Segment

TEXTRACT_MAX_BYTES = 10 * 1024 * 1024  # DetectDocumentText with inline bytes
TEXTRACT_TYPES = ("image/png", "image/jpeg", "image/tiff")


class Ocr(Protocol):
    name: str

    def image_text(self, data: bytes, content_type: str) -> str: ...


class TextractOcr:
    name = "textract"

    def __init__(self, client: Any) -> None:
        self.client = client

    def image_text(self, data: bytes, content_type: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        if content_type not in TEXTRACT_TYPES:
            raise CorruptDocument(f"Amazon Textract reads PNG, JPEG and TIFF images, not {content_type}")
        if len(data) > TEXTRACT_MAX_BYTES:
            raise TooLarge(f"images sent to Amazon Textract are limited to {TEXTRACT_MAX_BYTES} bytes")
        try:
            response = self.client.detect_document_text(Document={"Bytes": data})
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in (
                "ThrottlingException",
                "ProvisionedThroughputExceededException",
                "InternalServerError",
                "LimitExceededException",
            ):
                raise TransientError(f"Textract {code}") from exc
            raise CorruptDocument(f"Amazon Textract could not read the image: {code}") from exc
        except BotoCoreError as exc:
            raise TransientError(f"Textract unreachable: {exc}") from exc
        lines = [
            b["Text"] for b in response.get("Blocks", []) if b.get("BlockType") == "LINE" and b.get("Text")
        ]
        return "\n".join(lines)


class TesseractOcr:
    name = "tesseract"

    def __init__(self, binary: str) -> None:
        self.binary = binary

    @classmethod
    def find(cls) -> TesseractOcr | None:
        binary = shutil.which("tesseract")
        return cls(binary) if binary else None

    def image_text(self, data: bytes, content_type: str) -> str:
        try:
            done = subprocess.run(  # noqa: S603 - a fixed binary found on PATH, bytes on stdin
                [self.binary, "stdin", "stdout"], input=data, capture_output=True, timeout=300, check=False
            )
        except subprocess.TimeoutExpired:
            raise TooLarge("OCR took longer than 5 minutes") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise CorruptDocument(
                f"tesseract could not read the image: {message[-1] if message else 'failed'}"
            )
        return done.stdout.decode("utf-8", "replace")


def check_pixels(data: bytes, max_pixels: int) -> None:
    """Refuse decompression bombs before any decoder expands them: the header gives the size."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with the extractors extra
        return
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except Image.DecompressionBombError:
        raise DecompressionBomb("the image declares an absurd size: a decompression bomb") from None
    except Exception as exc:
        raise CorruptDocument(f"not a readable image: {exc}") from None
    if width * height > max_pixels:
        raise DecompressionBomb(
            f"the image is {width}x{height} pixels ({width * height}); the limit is {max_pixels}: "
            "refused as a "
            "possible decompression bomb"
        )


def read_image(data: bytes, content_type: str, ocr: Ocr, *, max_pixels: int) -> Extracted:
    check_pixels(data, max_pixels)
    text = ocr.image_text(data, content_type)
    if not text.strip():
        raise EmptyContent("no text was found in the image")
    return Extracted(
        kind="prose", content_type=content_type, segments=[Segment(text.strip(), {})], meta={"ocr": ocr.name}
    )
