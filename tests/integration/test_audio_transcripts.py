"""Amazon Transcribe's transcripts (a user's spoken words) are among the run's work files, under the
document's work prefix: the end of the run deletes them, and so does deleting the document.

S3 through moto (a versioned bucket, as deployed); Transcribe's API through botocore's Stubber, with
the transcript written where the job was told to write it once the job completes, as the service does.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from engram import deps
from engram.documents.blobs import S3BlobStore, work_prefix_of
from engram.documents.failures import Superseded
from engram.documents.models import UploadForm
from engram.documents.runs import DocumentRef
from engram.documents.service import DocumentService
from engram.pipeline import finish
from engram.pipeline.context import PipelineContext
from engram.pipeline.stages.extract import extract_step
from engram.tenants.service import IssuedKey
from tests.integration.pipeline_helpers import RecordingStarter

BUCKET = "engram-documents"
REGION = "eu-west-1"
MP3 = b"ID3\x03\x00rest-of-mp3"
TRANSCRIPT = {
    "results": {
        "transcripts": [{"transcript": "We ship on Monday."}],
        "audio_segments": [
            {"speaker_label": "spk_0", "transcript": "We ship on Monday.", "start_time": "0.5"}
        ],
    }
}


class Transcribe:
    """The transcribe client the media reader gets: answers from `stub`, and when a job is reported
    COMPLETED its transcript is in S3 at the job's OutputBucketName/OutputKey. `while_running` is
    called once the job has started, before it completes."""

    def __init__(self, s3: Any, while_running: Callable[[], object] = lambda: None) -> None:
        self.client = boto3.client("transcribe", region_name=REGION)
        self.stub = Stubber(self.client)
        self.s3 = s3
        self.while_running = while_running
        self.started: dict[str, Any] = {}

    def start_transcription_job(self, **params: Any) -> Any:
        self.started = params
        answer = self.client.start_transcription_job(**params)
        self.while_running()
        return answer

    def get_transcription_job(self, **params: Any) -> Any:
        answer = self.client.get_transcription_job(**params)
        if answer["TranscriptionJob"]["TranscriptionJobStatus"] == "COMPLETED":
            body = json.dumps(TRANSCRIPT).encode()
            self.s3.put_object(
                Bucket=self.started["OutputBucketName"], Key=self.started["OutputKey"], Body=body
            )
        return answer

    def answers(self, *statuses: str) -> Stubber:
        self.stub.add_response("start_transcription_job", {"TranscriptionJob": {"TranscriptionJobName": "j"}})
        for status in statuses:
            self.stub.add_response(
                "get_transcription_job", {"TranscriptionJob": {"TranscriptionJobStatus": status}}
            )
        return self.stub


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        yield client


def _service(s3: Any, starter: RecordingStarter) -> DocumentService:
    settings = deps.current().settings
    return DocumentService(
        deps.database(),
        S3BlobStore(s3, BUCKET),
        starter,
        work_prefix=settings.work_prefix,
        max_file_bytes=settings.max_file_bytes,
        fetch_urls=False,
    )


def _context(s3: Any, transcribe: Transcribe) -> PipelineContext:
    """The pipeline as deployed with Transcribe: the documents bucket, and its transcribe client."""
    ctx = deps.pipeline_context()
    settings = ctx.settings.model_copy(
        update={"documents_bucket": BUCKET, "transcription_provider": "transcribe"}
    )
    return dataclasses.replace(
        ctx, settings=settings, blobs=S3BlobStore(s3, BUCKET), boto_client=lambda service: transcribe
    )


def _upload(service: DocumentService, starter: RecordingStarter, tenant: IssuedKey) -> DocumentRef:
    service.upload(tenant.tenant_id, UploadForm(filename="call.mp3"), MP3)
    return starter.started[-1][0]


def _versions(s3: Any, prefix: str) -> list[str]:
    """Every object version and delete marker under the prefix (the bucket is versioned)."""
    page = s3.list_object_versions(Bucket=BUCKET, Prefix=prefix)
    return [item["Key"] for item in (*page.get("Versions", []), *page.get("DeleteMarkers", []))]


def _rule(transcribe: Transcribe, member: str) -> str:
    """A StartTranscriptionJob parameter's pattern, from the API's model."""
    shape = transcribe.client.meta.service_model.operation_model("StartTranscriptionJob").input_shape
    return str(shape.members[member].metadata["pattern"])


def test_the_transcript_is_written_under_the_documents_work_prefix_and_deleted_with_the_document(
    s3: Any, tenant: IssuedKey
) -> None:
    # Given an audio document transcribed by Amazon Transcribe
    starter = RecordingStarter()
    service = _service(s3, starter)
    ref = _upload(service, starter, tenant)
    transcribe = Transcribe(s3)
    ctx = _context(s3, transcribe)
    document_prefix = work_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id)
    with transcribe.answers("COMPLETED"):
        extract_step(ctx, ref)
    key = transcribe.started["OutputKey"]
    assert key == f"{document_prefix}r{ref.revision}/transcript-engram-{ref.document_id}-r{ref.revision}.json"
    assert re.fullmatch(_rule(transcribe, "OutputKey"), key)
    assert re.match(_rule(transcribe, "TranscriptionJobName"), transcribe.started["TranscriptionJobName"])
    assert key in _versions(s3, key)  # Transcribe wrote it there, and the step read it
    assert "We ship on Monday." in ctx.blobs.get(f"{document_prefix}r{ref.revision}/extracted.json").decode()

    # When the document is deleted
    service.delete(tenant.tenant_id, ref.document_id)

    # Then no version of the transcript is left, nor any other file of the document
    assert _versions(s3, key) == []
    assert _versions(s3, document_prefix) == []


def test_a_finished_run_deletes_its_transcript(s3: Any, tenant: IssuedKey) -> None:
    # Given an audio document whose extract step has read its transcript
    starter = RecordingStarter()
    service = _service(s3, starter)
    ref = _upload(service, starter, tenant)
    transcribe = Transcribe(s3)
    ctx = _context(s3, transcribe)
    with transcribe.answers("COMPLETED"):
        extract_step(ctx, ref)
    key = transcribe.started["OutputKey"]
    assert key in _versions(s3, key)

    # When the run ends (mark-done)
    assert finish.mark_done(ctx, ref)

    # Then the transcript is gone, every version of it; the document's own file stays
    assert _versions(s3, key) == []
    assert _versions(s3, work_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id)) == [
        f"{ctx.settings.work_prefix}{ref.tenant_id}/{ref.document_id}/source"
    ]


def test_a_document_deleted_while_its_audio_is_transcribed_leaves_no_transcript(
    s3: Any, tenant: IssuedKey
) -> None:
    # Given an audio document deleted after its transcription job started, before the job completed
    starter = RecordingStarter()
    service = _service(s3, starter)
    ref = _upload(service, starter, tenant)
    transcribe = Transcribe(s3, while_running=lambda: service.delete(tenant.tenant_id, ref.document_id))
    ctx = _context(s3, transcribe)
    with transcribe.answers("COMPLETED"), pytest.raises(Superseded):
        extract_step(ctx, ref)  # the step reads the transcript, then finds the document gone
    key = transcribe.started["OutputKey"]
    assert key in _versions(s3, key)  # written after the document's files were deleted

    # When the run ends as the state machine ends it: MarkFailed with the step's error
    error = {"Error": "Superseded", "Cause": json.dumps({"errorMessage": "deleted"})}
    finish.run_finish(ctx, {**ref.to_event(), "outcome": "failed", "step": "extract", "error": error})

    # Then nothing of the document is left in the bucket
    assert _versions(s3, work_prefix_of(ctx.settings.work_prefix, ref.tenant_id, ref.document_id)) == []
