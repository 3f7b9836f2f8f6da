"""What engram-client sends, against a scripted transport: arguments not given are not sent (None is),
path values are quoted, and the upload is multipart with a file or JSON asking for an upload URL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx

from engram_client import Engram, models
from tests.unit.test_client_retries import MEMORY


def _recording(answer: httpx.Response) -> tuple[Engram, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        request.read()
        sent.append(request)
        return answer

    return Engram("http://engram.test", "k", transport=httpx.MockTransport(handle)), sent


def test_not_given_arguments_are_not_sent_and_none_is() -> None:
    client, sent = _recording(httpx.Response(200, json=MEMORY))

    client.update_memory(MEMORY["id"], expires_at=None)

    assert sent[0].content == b'{"expires_at":null}' and sent[0].url.params == httpx.QueryParams()


def test_path_values_are_quoted_but_colons_kept() -> None:
    item = {"scope": "a:b", "key": "x y", "value": 1, "version": 1, "expires_at": None, "user_id": None}
    stamps = {"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
    client, sent = _recording(httpx.Response(200, json={**item, **stamps}))

    client.get_working("a:b", "x y")

    assert sent[0].url.raw_path == b"/v1/working/a:b/x%20y"


def test_an_upload_without_a_file_asks_for_an_upload_url() -> None:
    ticket = {"url": "https://s3.test/put", "key": "t/default/a.pdf", "headers": {}, "expires_in": 900}
    client, sent = _recording(httpx.Response(200, json=ticket))

    answer = client.upload_document(filename="a.pdf")

    assert isinstance(answer, models.UploadTicket) and json.loads(sent[0].content) == {"filename": "a.pdf"}


def test_an_upload_with_a_file_is_multipart_with_its_fields() -> None:
    accepted: dict[str, Any] = {"id": MEMORY["id"], "status": "queued", "duplicate": False}
    client, sent = _recording(httpx.Response(202, json=accepted))

    client.upload_document(b"name,city\nAnn,Oslo\n", filename="people.csv", container="crm", tags=["x"])

    body = sent[0].content
    assert sent[0].headers["content-type"].startswith("multipart/form-data")
    assert b'filename="people.csv"' in body and b"Ann,Oslo" in body
    assert b'name="container"\r\n\r\ncrm' in body and b'name="tags"\r\n\r\n["x"]' in body


def test_an_upload_declares_no_type_of_its_own_from_the_files_name() -> None:
    accepted: dict[str, Any] = {"id": MEMORY["id"], "status": "queued", "duplicate": False}
    client, sent = _recording(httpx.Response(202, json=accepted))

    client.upload_document(b"%PDF-1.7 or not", filename="report.pdf")

    part_headers = sent[0].content.split(b"\r\n\r\n", 1)[0]
    assert b'filename="report.pdf"' in part_headers
    assert b"Content-Type: application/octet-stream" in part_headers
    assert b"application/pdf" not in sent[0].content


def test_an_upload_sends_the_fields_of_a_document_as_text() -> None:
    accepted: dict[str, Any] = {"id": MEMORY["id"], "status": "queued", "duplicate": False}
    client, sent = _recording(httpx.Response(202, json=accepted))

    client.upload_document(
        b"text",
        filename="a.txt",
        title="Notes",
        user_id="u-1",
        extract="none",
        document_date=datetime(2024, 3, 1, 9, 30, tzinfo=UTC),
    )

    body = sent[0].content
    assert b'name="title"\r\n\r\nNotes' in body and b'name="user_id"\r\n\r\nu-1' in body
    assert b'name="extract"\r\n\r\nnone' in body
    assert b'name="document_date"\r\n\r\n2024-03-01T09:30:00+00:00' in body
    assert b'name="container"' not in body  # not given, not sent
