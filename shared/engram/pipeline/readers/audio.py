"""Audio: transcripts through Amazon Transcribe (AWS) or OpenAI transcription (when configured), one
segment per speaker turn."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from engram.documents.failures import CorruptDocument, EmptyContent, TooLarge, TransientError, UnsupportedHere
from engram.pipeline.extracted import Extracted, Segment

OPENAI_MAX_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class Turn:
    speaker: str | None
    text: str
    start: float | None = None


@dataclass(frozen=True)
class AudioSource:
    data: bytes
    content_type: str
    filename: str
    job_name: str  # unique per document revision: a retry finds the same job again
    s3_uri: str | None  # where the bytes are, for services that read S3 themselves
    work_dir: str | None = None  # the run's work files' key prefix, for services that write S3 themselves


class Transcriber(Protocol):
    name: str

    def transcribe(self, source: AudioSource) -> list[Turn]: ...


def merge_turns(turns: list[Turn]) -> list[Turn]:
    merged: list[Turn] = []
    for turn in turns:
        if merged and merged[-1].speaker == turn.speaker:
            last = merged[-1]
            merged[-1] = Turn(last.speaker, f"{last.text} {turn.text}".strip(), last.start)
        elif turn.text.strip():
            merged.append(turn)
    return merged


class OpenAITranscriber:
    name = "openai"

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.model = model

    def transcribe(self, source: AudioSource) -> list[Turn]:
        import openai

        if len(source.data) > OPENAI_MAX_BYTES:
            raise TooLarge(f"OpenAI transcription takes files up to {OPENAI_MAX_BYTES} bytes")
        diarize = "diarize" in self.model
        try:
            response = self.client.audio.transcriptions.create(
                model=self.model,
                file=(source.filename, source.data, source.content_type),
                response_format="diarized_json"
                if diarize
                else ("verbose_json" if self.model == "whisper-1" else "json"),
            )
        except (openai.RateLimitError, openai.APIConnectionError, openai.InternalServerError) as exc:
            raise TransientError(f"openai transcription unavailable: {exc}") from exc
        except openai.APIError as exc:
            raise CorruptDocument(f"openai could not transcribe the audio: {exc}") from exc
        data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
        segments = data.get("segments") or []
        if segments:
            return merge_turns(
                [Turn(s.get("speaker"), str(s.get("text", "")).strip(), s.get("start")) for s in segments]
            )
        return [Turn(None, str(data.get("text", "")).strip(), 0.0)]


def transcript_key(source: AudioSource) -> str:
    """Where Amazon Transcribe writes the transcript: among the run's work files, under the document's
    work prefix, so that deleting the document (its container, its user's or tenant's data) deletes
    it, and the end of the run (engram.pipeline.finish) too. OutputKey takes [a-zA-Z0-9-_.!*'()/]:
    the work prefix (_engram/), two UUIDs, r<revision>/ and the job's name are all in it."""
    if not source.work_dir:
        raise UnsupportedHere("Amazon Transcribe needs a place for the transcript in S3")
    return f"{source.work_dir}transcript-{source.job_name}.json"


class AwsTranscriber:
    """Amazon Transcribe reads the audio from S3 and writes the transcript back to S3. The job is
    named after the document revision, so a retried step finds and waits for the same job.

    The transcript is read once, but it stays until the run finishes rather than going as soon as it
    is read: a job's name cannot be used twice, so an extract step retried after the read (its text
    not yet stored) finds the finished job and reads the transcript again. Until then the extracted
    text, which holds the same words, is among the run's work files too, and both go together."""

    name = "transcribe"

    def __init__(
        self,
        client: Any,
        output_bucket: str,
        read_output: Callable[[str], bytes],
        *,
        deadline_seconds: float = 480,
        poll_seconds: float = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.output_bucket = output_bucket
        self.read_output = read_output
        self.deadline_seconds = deadline_seconds
        self.poll_seconds = poll_seconds
        self.sleep = sleep

    def transcribe(self, source: AudioSource) -> list[Turn]:
        from botocore.exceptions import ClientError

        if not source.s3_uri:
            raise UnsupportedHere("Amazon Transcribe needs the audio in S3")
        key = transcript_key(source)
        try:
            self.client.start_transcription_job(
                TranscriptionJobName=source.job_name,
                Media={"MediaFileUri": source.s3_uri},
                IdentifyLanguage=True,
                OutputBucketName=self.output_bucket,
                OutputKey=key,
                Settings={"ShowSpeakerLabels": True, "MaxSpeakerLabels": 10},
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConflictException":
                pass  # started by an earlier attempt: wait for it
            elif code in ("LimitExceededException", "InternalFailureException"):
                raise TransientError(f"Transcribe {code}") from exc
            else:
                raise CorruptDocument(f"Amazon Transcribe refused the audio: {code}") from exc
        waited = 0.0
        while True:
            job = self.client.get_transcription_job(TranscriptionJobName=source.job_name)["TranscriptionJob"]
            status = job["TranscriptionJobStatus"]
            if status == "COMPLETED":
                return parse_transcribe_output(self.read_output(key))
            if status == "FAILED":
                raise CorruptDocument(
                    f"Amazon Transcribe failed: {job.get('FailureReason', 'unknown reason')}"
                )
            if waited >= self.deadline_seconds:
                # Step Functions retries TransientError with backoff; the next attempt resumes waiting.
                raise TransientError(f"transcription job {source.job_name} is still {status}")
            self.sleep(self.poll_seconds)
            waited += self.poll_seconds


def parse_transcribe_output(raw: bytes) -> list[Turn]:
    results = json.loads(raw)["results"]
    segments = results.get("audio_segments") or []
    if segments:
        return merge_turns(
            [
                Turn(
                    s.get("speaker_label"),
                    s.get("transcript", "").strip(),
                    float(s["start_time"]) if s.get("start_time") else None,
                )
                for s in segments
            ]
        )
    text = " ".join(t.get("transcript", "") for t in results.get("transcripts", []))
    return [Turn(None, text.strip(), 0.0)]


def read_audio(source: AudioSource, transcriber: Transcriber | None) -> Extracted:
    if transcriber is None:
        raise UnsupportedHere(
            "audio needs a transcription service: Amazon Transcribe in AWS "
            "(ENGRAM_TRANSCRIPTION_PROVIDER=transcribe) or OpenAI (ENGRAM_TRANSCRIPTION_PROVIDER=openai with "
            "OPENAI_API_KEY); none is configured here"
        )
    turns = transcriber.transcribe(source)
    segments = [
        Segment(
            f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text,
            {"speaker": turn.speaker, "start": turn.start},
        )
        for turn in turns
        if turn.text.strip()
    ]
    if not segments:
        raise EmptyContent("the transcript is empty: no speech was recognised")
    return Extracted(
        kind="transcript",
        content_type=source.content_type,
        segments=segments,
        meta={"transcriber": transcriber.name},
    )
