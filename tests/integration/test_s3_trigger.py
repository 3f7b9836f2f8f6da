"""S3 drops: the trigger turns objects under <tenant-id>/<container>/ into documents and starts one
execution per object version, named after bucket, key and version or ETag."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from engram.documents.runs import DocumentRef
from engram.local.stack import LocalDatabase
from engram.pipeline.start import StepFunctionsStarter
from engram.pipeline.trigger import handle_event, objects_in, parse_key
from engram.tenants.service import IssuedKey
from tests.integration.pipeline_helpers import RecordingStarter, service_with

BUCKET = "engram-drops"
PREFIX = "_engram/"


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1")
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        yield client


def _put(s3: Any, key: str, body: bytes) -> dict[str, Any]:
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    head = s3.head_object(Bucket=BUCKET, Key=key)
    return {
        "version": "0",
        "source": "aws.s3",
        "detail-type": "Object Created",
        "detail": {
            "bucket": {"name": BUCKET},
            "object": {"key": key, "size": head["ContentLength"], "etag": head["ETag"].strip('"')},
        },
    }


def _trigger(event: dict[str, Any], s3: Any, starter: RecordingStarter, max_bytes: int = 1024 * 1024) -> list:
    return handle_event(event, service_with(starter), s3, work_prefix=PREFIX, max_file_bytes=max_bytes)


def test_an_object_becomes_a_queued_document_and_one_execution(s3: Any, tenant: IssuedKey) -> None:
    starter = RecordingStarter()
    event = _put(s3, f"{tenant.tenant_id}/crm.notes/2024/call.txt", b"Alice prefers calls in the morning.")

    first = _trigger(event, s3, starter)
    duplicate_event = _trigger(event, s3, starter)  # EventBridge may deliver twice

    assert first[0]["outcome"] == "registered"
    assert duplicate_event[0] == {**first[0], "outcome": "duplicate"}
    names = [name for _, name in starter.started]
    assert len(names) == 2 and names[0] == names[1]  # queued twice at most, under one execution name
    assert len(names[0]) <= 80 and "-crm-notes-2024-call-txt-" in names[0]


def test_a_changed_object_under_the_same_key_is_a_new_document(s3: Any, tenant: IssuedKey) -> None:
    starter = RecordingStarter()
    key = f"{tenant.tenant_id}/crm/call.txt"
    first = _trigger(_put(s3, key, b"Version one of the call notes."), s3, starter)
    second = _trigger(_put(s3, key, b"Version two of the call notes."), s3, starter)

    assert first[0]["document_id"] != second[0]["document_id"]
    assert second[0]["outcome"] == "registered"
    assert starter.started[0][1] != starter.started[1][1]


def test_the_same_bytes_under_another_key_are_a_no_op(
    s3: Any, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    starter = RecordingStarter()
    first = _trigger(_put(s3, f"{tenant.tenant_id}/crm/a.txt", b"Same content."), s3, starter)
    with local_db.app.tenant(tenant.tenant_id) as cur:  # the first run finished
        cur.execute("UPDATE documents SET status = 'done'")

    again = _trigger(_put(s3, f"{tenant.tenant_id}/crm/b.txt", b"Same content."), s3, starter)

    assert again[0] == {
        "key": f"{tenant.tenant_id}/crm/b.txt",
        "document_id": first[0]["document_id"],
        "outcome": "duplicate",
    }
    assert len(starter.started) == 1


def test_an_object_over_the_limit_is_a_failed_document_at_once(
    s3: Any, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    starter = RecordingStarter()
    event = _put(s3, f"{tenant.tenant_id}/crm/big.txt", b"x" * 2000)

    result = _trigger(event, s3, starter, max_bytes=1000)
    _trigger(event, s3, starter, max_bytes=1000)

    with local_db.app.tenant(tenant.tenant_id) as cur:
        rows = cur.execute("SELECT status, error_code, error FROM documents").fetchall()
    assert result[0]["outcome"] == "registered"
    assert rows == [
        {
            "status": "failed",
            "error_code": "too_large",
            "error": "the file is 2000 bytes; the limit is 1000 bytes (ENGRAM_MAX_FILE_BYTES)",
        }
    ]
    assert starter.started == []


def test_work_files_folders_and_foreign_keys_are_ignored(s3: Any, tenant: IssuedKey) -> None:
    starter = RecordingStarter()
    for key in (
        f"{PREFIX}{tenant.tenant_id}/doc/r1/extracted.json",
        "not-a-tenant/crm/a.txt",
        f"{tenant.tenant_id}/crm/",
        f"{tenant.tenant_id}/a.txt",
        f"{tenant.tenant_id}/bad container!/a.txt",
    ):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
        result = _trigger(
            {"source": "aws.s3", "detail": {"bucket": {"name": BUCKET}, "object": {"key": key, "size": 1}}},
            s3,
            starter,
        )
        assert result == [{"key": key, "outcome": "ignored"}]
    assert starter.started == []


def test_an_unknown_tenant_is_skipped(s3: Any) -> None:
    starter = RecordingStarter()
    event = _put(s3, "00000000-0000-4000-8000-000000000000/crm/a.txt", b"Who owns this?")

    assert _trigger(event, s3, starter)[0]["outcome"] == "unknown_tenant"


def test_s3_notification_records_are_url_decoded() -> None:
    event = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": BUCKET},
                    "object": {
                        "key": "t/c/red+flower%281%29.txt",
                        "size": 3,
                        "eTag": "abc",
                        "versionId": "v1",
                    },
                },
            }
        ]
    }

    (obj,) = objects_in(event)

    assert (obj.key, obj.etag, obj.version) == ("t/c/red flower(1).txt", "abc", "v1")
    assert parse_key("_engram/x/y/z", PREFIX) is None


def test_step_functions_starter_names_the_execution_and_tolerates_a_repeat() -> None:
    client = boto3.client("stepfunctions", region_name="eu-west-1")
    arn = "arn:aws:states:eu-west-1:123456789012:stateMachine:engram-ingest"
    ref = DocumentRef.from_event(
        {
            "tenant_id": "00000000-0000-4000-8000-000000000001",
            "document_id": "00000000-0000-4000-8000-000000000002",
            "revision": 1,
        }
    )
    with Stubber(client) as stub:
        expected = {"stateMachineArn": arn, "name": "run-1", "input": json.dumps(ref.to_event())}
        stub.add_response(
            "start_execution", {"executionArn": arn + ":run-1", "startDate": "2024-01-01"}, expected
        )
        stub.add_client_error("start_execution", "ExecutionAlreadyExists", expected_params=expected)
        starter = StepFunctionsStarter(client, arn)
        starter.start(ref, "run-1")
        starter.start(ref, "run-1")  # a duplicated event: no error
        stub.assert_no_pending_responses()
