"""Blob stores (S3 through moto, and the local folder) and the presigned upload of the AWS API."""

from __future__ import annotations

import io
import re
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws

from engram.documents.blobs import LocalBlobStore, S3BlobStore
from engram.documents.failures import SourceMissing, TooLarge
from engram.documents.service import DocumentService
from engram.errors import InvalidInput

# Every way in refuses a file over the limit in the same words (engram.limits.file_too_large).
TEN_OVER_FIVE = "the file is 10 bytes; the limit is 5 bytes (ENGRAM_MAX_FILE_BYTES)"


def test_s3_store_round_trip_limits_and_prefix_delete() -> None:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="docs")
        store = S3BlobStore(client, "docs")
        store.put("_engram/t/d/r1/extracted.json", b"{}")
        store.put("_engram/t/d/source", b"0123456789")
        store.put("_engram/t/other/source", b"keep")

        assert store.get("_engram/t/d/source") == b"0123456789"
        with pytest.raises(TooLarge, match=re.escape(TEN_OVER_FIVE)):
            store.get("_engram/t/d/source", max_bytes=5)
        store.delete_prefix("_engram/t/d/")
        with pytest.raises(SourceMissing):
            store.get("_engram/t/d/source")
        assert store.get("_engram/t/other/source") == b"keep"


def test_s3_store_reads_no_further_than_the_limit_when_the_size_is_not_given() -> None:
    class NoLength:
        body = io.BytesIO(b"x" * 100)

        def get_object(self, **kwargs: object) -> dict[str, object]:
            return {"Body": self.body}

    client = NoLength()

    with pytest.raises(TooLarge, match=re.escape("the file is over 5 bytes; the limit is 5 bytes (")):
        S3BlobStore(client, "docs").get("k", max_bytes=5)
    assert client.body.tell() == 6


def test_local_store_keeps_keys_inside_its_folder(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    store.put("a/b/c.txt", b"hello")

    assert store.get("a/b/c.txt") == b"hello"
    store.put("ten", b"0123456789")
    with pytest.raises(TooLarge, match=re.escape(TEN_OVER_FIVE)):
        store.get("ten", max_bytes=5)
    assert store.get("ten", max_bytes=10) == b"0123456789"
    with pytest.raises(ValueError, match="escapes"):
        store.put("../outside.txt", b"x")
    store.delete_prefix("a/")
    with pytest.raises(SourceMissing):
        store.get("a/b/c.txt")


def test_aws_upload_is_a_presigned_put_under_the_callers_tenant() -> None:
    tenant = uuid.uuid4()
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1", config=Config(signature_version="s3v4"))
        store = S3BlobStore(client, "docs")
        service = DocumentService(
            None,
            store,
            None,
            work_prefix="_engram/",
            max_file_bytes=100,  # type: ignore[arg-type]
            presigner=store,
            fetch_urls=True,
        )

        ticket = service.presign_upload(tenant, "report.pdf", "kb.reports", "application/pdf")

    url = urlsplit(ticket.url)
    assert ticket.method == "PUT" and ticket.key == f"{tenant}/kb.reports/report.pdf"
    assert url.path.endswith(f"/{tenant}/kb.reports/report.pdf")
    assert "X-Amz-Signature" in parse_qs(url.query)
    assert ticket.headers == {"Content-Type": "application/pdf"} and ticket.expires_in == 900


def test_local_upload_is_multipart_not_a_ticket(tmp_path: Path) -> None:
    service = DocumentService(
        None,
        LocalBlobStore(tmp_path),
        None,
        work_prefix="_engram/",  # type: ignore[arg-type]
        max_file_bytes=100,
        fetch_urls=True,
    )

    with pytest.raises(InvalidInput, match="multipart/form-data"):
        service.presign_upload(uuid.uuid4(), "a.txt", "default", None)


def test_s3_prefix_delete_leaves_no_earlier_version_behind() -> None:
    # Found by an audit: the bucket is versioned, so deleting a document (or erasing its user) left its
    # bytes as noncurrent versions, readable for 30 days
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="docs")
        client.put_bucket_versioning(Bucket="docs", VersioningConfiguration={"Status": "Enabled"})
        store = S3BlobStore(client, "docs")
        store.put("_engram/t/d/source", b"first")
        store.put("_engram/t/d/source", b"second")
        store.put("_engram/t/other/source", b"keep")

        store.delete_prefix("_engram/t/d/")

        listed = client.list_object_versions(Bucket="docs", Prefix="_engram/t/")
        left = [(v["Key"]) for v in (*listed.get("Versions", []), *listed.get("DeleteMarkers", []))]
        assert left == ["_engram/t/other/source"]
