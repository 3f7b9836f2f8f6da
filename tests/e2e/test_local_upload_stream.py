"""`POST /v1/documents/upload` on `engram local` reads the multipart body as it arrives, as the import does:
a file past the 6 MB limit of a request goes in (up to ENGRAM_MAX_FILE_BYTES, 50 MB by default), as a
presigned upload to S3 does in AWS. What the 6 MB refusal tells a client to use must take the file."""

from __future__ import annotations

import httpx

from engram.limits import MAX_REQUEST_BYTES
from engram.tenants.service import IssuedKey
from tests.e2e.conftest import wait_for
from tests.e2e.local_server import call

SENTENCE = b"The quarterly report covers revenue, churn and hiring plans across every region. "


def _upload(base_url: str, key: str, data: bytes, filename: str = "report.txt") -> httpx.Response:
    return httpx.post(
        f"{base_url}/v1/documents/upload",
        headers={"x-api-key": key},
        files={"file": (filename, data, "text/plain")},
        data={"container": "uploads", "tags": '["large"]'},
        timeout=60,
    )


def test_a_file_past_the_request_limit_is_taken_and_fails_on_its_chunk_count_not_its_upload(
    base_url: str, tenant: IssuedKey
) -> None:
    # Given: a text file of 8 MB, past the 6 MB a JSON request may carry
    data = SENTENCE * (8 * 1024 * 1024 // len(SENTENCE))
    assert len(data) > MAX_REQUEST_BYTES

    # When: it is uploaded
    response = _upload(base_url, tenant.plaintext, data)

    # Then: it is taken whole, and its run ends on the local chunk limit with a message saying so
    assert response.status_code == 202, response.text
    document_id = response.json()["id"]

    def final() -> dict[str, object] | None:
        body = call(base_url, "GET", f"/v1/documents/{document_id}", key=tenant.plaintext)[1]
        return body if body["status"] in ("done", "failed") else None

    assert wait_for(lambda: final() is not None, timeout=120)
    document = final()
    assert document is not None
    assert document["size_bytes"] == len(data) and document["tags"] == ["large"]
    assert document["status"] == "failed"
    error = document["error"]
    assert isinstance(error, dict) and error["code"] == "too_large"
    assert "ENGRAM_MAX_CHUNKS_PER_DOCUMENT" in error["message"]


def test_a_file_over_the_file_limit_is_refused_with_the_limit_named(base_url: str, tenant: IssuedKey) -> None:
    response = _upload(base_url, tenant.plaintext, b"x" * (50 * 1024 * 1024 + 1))

    assert response.status_code == 413, response.text
    assert "ENGRAM_MAX_FILE_BYTES" in response.json()["error"]["message"]
