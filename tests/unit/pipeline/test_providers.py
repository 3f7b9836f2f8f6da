"""The services extractors call, without the network: Textract and Transcribe through botocore's
Stubber, OpenAI transcription and URL fetching through httpx.MockTransport."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import httpx
import openai
import pytest
from botocore.stub import Stubber
from PIL import Image

from engram.documents.failures import FetchFailed, TooLarge, TransientError, UnsupportedHere
from engram.errors import ProviderError
from engram.pipeline.embedding import ProviderRefused, embed_batched
from engram.pipeline.readers import Limits, Services, Source, read
from engram.pipeline.readers.audio import AudioSource, AwsTranscriber, OpenAITranscriber
from engram.pipeline.readers.image import TextractOcr
from engram.pipeline.readers.url import UrlFetcher


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (64, 32), color=255).save(buffer, format="PNG")
    return buffer.getvalue()


def test_textract_lines_become_the_image_text() -> None:
    client = boto3.client("textract", region_name="eu-west-1")
    image = _png()
    with Stubber(client) as stub:
        stub.add_response(
            "detect_document_text",
            {
                "Blocks": [
                    {"BlockType": "PAGE"},
                    {"BlockType": "LINE", "Text": "Invoice 42"},
                    {"BlockType": "WORD", "Text": "Invoice"},
                    {"BlockType": "LINE", "Text": "Total: 99 EUR"},
                ]
            },
            {"Document": {"Bytes": image}},
        )
        result = read(Source(image, "scan.png", None), Limits(), Services(ocr=TextractOcr(client)))

    assert result.segments[0].text == "Invoice 42\nTotal: 99 EUR"
    assert result.meta == {"ocr": "textract"}


def test_textract_throttling_is_transient() -> None:
    client = boto3.client("textract", region_name="eu-west-1")
    with Stubber(client) as stub:
        stub.add_client_error("detect_document_text", "ThrottlingException")
        with pytest.raises(TransientError):
            TextractOcr(client).image_text(_png(), "image/png")


def test_images_without_ocr_are_unsupported_here() -> None:
    with pytest.raises(UnsupportedHere, match="tesseract"):
        read(Source(_png(), "scan.png", None), Limits(), Services(ocr=None))


def test_audio_without_a_transcriber_is_unsupported_here() -> None:
    with pytest.raises(UnsupportedHere, match="ENGRAM_TRANSCRIPTION_PROVIDER"):
        read(Source(b"ID3\x03\x00rest-of-mp3", "call.mp3", None), Limits(), Services())


def test_openai_transcription_turns_segments_into_speaker_turns() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "text": "all",
                "segments": [
                    {"speaker": "A", "text": "Hello there.", "start": 0.0},
                    {"speaker": "A", "text": "How are you?", "start": 1.0},
                    {"speaker": "B", "text": "Fine, thanks.", "start": 2.5},
                ],
            },
        )

    client = openai.OpenAI(
        api_key="test",
        base_url="https://openai.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(answer)),
    )
    transcriber = OpenAITranscriber(client, "gpt-4o-transcribe-diarize")

    result = read(
        Source(b"RIFF\x00\x00\x00\x00WAVEfmt data", "call.wav", None),
        Limits(),
        Services(transcriber=transcriber),
    )

    assert seen[0].url.path == "/v1/audio/transcriptions"
    assert b"diarized_json" in seen[0].content
    assert [s.text for s in result.segments] == ["A: Hello there. How are you?", "B: Fine, thanks."]
    assert result.kind == "transcript" and result.segments[1].meta == {"speaker": "B", "start": 2.5}


def test_amazon_transcribe_is_started_once_and_waited_for() -> None:
    client = boto3.client("transcribe", region_name="eu-west-1")
    output = {
        "results": {
            "transcripts": [{"transcript": "x"}],
            "audio_segments": [
                {"speaker_label": "spk_0", "transcript": "We ship on Monday.", "start_time": "0.5"},
                {"speaker_label": "spk_1", "transcript": "Agreed.", "start_time": "2.0"},
            ],
        }
    }
    sleeps: list[float] = []
    read: list[str] = []

    def read_output(key: str) -> bytes:
        read.append(key)
        return json.dumps(output).encode()

    transcriber = AwsTranscriber(
        client,
        "bucket",
        read_output=read_output,
        poll_seconds=5,
        sleep=sleeps.append,
    )
    with Stubber(client) as stub:
        stub.add_client_error("start_transcription_job", "ConflictException")  # a retry: the job exists
        stub.add_response(
            "get_transcription_job", {"TranscriptionJob": {"TranscriptionJobStatus": "IN_PROGRESS"}}
        )
        stub.add_response(
            "get_transcription_job", {"TranscriptionJob": {"TranscriptionJobStatus": "COMPLETED"}}
        )
        turns = transcriber.transcribe(
            AudioSource(b"...", "audio/mpeg", "a.mp3", "engram-doc-r1", "s3://bucket/t/c/a.mp3", "w/t/d/r1/")
        )

    assert [(t.speaker, t.text, t.start) for t in turns] == [
        ("spk_0", "We ship on Monday.", 0.5),
        ("spk_1", "Agreed.", 2.0),
    ]
    assert sleeps == [5]
    assert read == ["w/t/d/r1/transcript-engram-doc-r1.json"]  # where the job was told to write it


def test_amazon_transcribe_still_running_at_the_deadline_is_transient() -> None:
    client = boto3.client("transcribe", region_name="eu-west-1")
    transcriber = AwsTranscriber(
        client,
        "bucket",
        read_output=lambda k: b"",
        deadline_seconds=5,
        poll_seconds=5,
        sleep=lambda s: None,
    )
    with Stubber(client) as stub:
        stub.add_response("start_transcription_job", {"TranscriptionJob": {"TranscriptionJobName": "j"}})
        stub.add_response(
            "get_transcription_job", {"TranscriptionJob": {"TranscriptionJobStatus": "IN_PROGRESS"}}
        )
        stub.add_response(
            "get_transcription_job", {"TranscriptionJob": {"TranscriptionJobStatus": "IN_PROGRESS"}}
        )
        with pytest.raises(TransientError, match="still IN_PROGRESS"):
            transcriber.transcribe(
                AudioSource(b"...", "audio/mpeg", "a.mp3", "j", "s3://bucket/a.mp3", "w/t/d/r1/")
            )


def _fetcher(handler: Any, *, address: str = "93.184.216.34", max_bytes: int = 1000) -> UrlFetcher:
    return UrlFetcher(
        max_bytes=max_bytes,
        timeout=5,
        client=httpx.Client(transport=httpx.MockTransport(handler)),
        resolver=lambda host: [address],
    )


def test_urls_are_fetched_following_redirects() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            return httpx.Response(301, headers={"location": "/new"})
        return httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>ok</html>")

    fetched = _fetcher(handler).fetch("https://example.org/old")

    assert (fetched.url, fetched.content_type, fetched.data) == (
        "https://example.org/new",
        "text/html",
        b"<html>ok</html>",
    )


def test_private_addresses_errors_and_oversized_bodies_are_refused() -> None:
    ok = _fetcher(lambda r: httpx.Response(200, content=b"x" * 2000))
    private = _fetcher(lambda r: httpx.Response(200, content=b"secret"), address="169.254.169.254")
    missing = _fetcher(lambda r: httpx.Response(404))
    busy = _fetcher(lambda r: httpx.Response(503))

    unsized = _fetcher(lambda r: httpx.Response(200, content=iter([b"x" * 600, b"x" * 600])))

    with pytest.raises(
        TooLarge,
        match=r"^https://example.org/big is 2000 bytes; the limit is 1000 bytes \(ENGRAM_MAX_FILE_BYTES\)$",
    ):
        ok.fetch("https://example.org/big")
    with pytest.raises(
        TooLarge, match=r"^https://example.org/big is over 1000 bytes; the limit is 1000 bytes"
    ):
        unsized.fetch("https://example.org/big")
    with pytest.raises(FetchFailed, match="private or reserved address"):
        private.fetch("http://metadata.internal/latest")
    with pytest.raises(FetchFailed, match="HTTP 404"):
        missing.fetch("https://example.org/gone")
    with pytest.raises(TransientError):
        busy.fetch("https://example.org/busy")
    with pytest.raises(FetchFailed, match="only http and https"):
        ok.fetch("file:///etc/passwd")


class _Throttled:
    model_id = "m"
    dimensions = 2
    max_batch = 3

    def __init__(self, failures: int, *, transient: bool = True) -> None:
        self.failures = failures
        self.transient = transient
        self.batches: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.failures:
            self.failures -= 1
            raise ProviderError("slow down", transient=self.transient)
        self.batches.append(len(texts))
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def test_embedding_is_batched_within_the_provider_limit_and_backs_off() -> None:
    embedder = _Throttled(failures=2)
    sleeps: list[float] = []

    vectors = embed_batched(embedder, [f"t{i}" for i in range(8)], batch_size=64, sleep=sleeps.append)

    assert len(vectors) == 8
    assert embedder.batches == [3, 3, 2]  # the provider's max_batch wins over the setting
    assert len(sleeps) == 2 and sleeps[0] <= 1.0 and sleeps[1] <= 2.0


def test_embedding_gives_up_as_transient_or_refuses_for_good() -> None:
    with pytest.raises(TransientError):
        embed_batched(_Throttled(failures=10), ["a"], batch_size=8, max_attempts=3, sleep=lambda s: None)
    with pytest.raises(ProviderRefused, match="refused"):
        embed_batched(_Throttled(failures=1, transient=False), ["a"], batch_size=8, sleep=lambda s: None)
