"""POST /v1/documents through the local runner, and what it produces: status, chunks, memories,
search over both, list, delete, idempotency and tenant isolation."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import uuid

import pytest

from engram import deps
from tests import files
from tests.conftest import Api, ApiResponse, assert_invalid
from tests.integration.documents_helpers import ingest, wait_final

NOTES = """# Deployment notes

The staging cluster runs in the Frankfurt region and serves the internal dashboards.

## Database

The primary database listens on port 6543 behind the connection pooler.
Backups are taken every night at two o'clock.
"""


def test_text_document_is_accepted_then_done_with_chunks_and_memories(api: Api) -> None:
    response = api.post("/v1/documents", {"content": NOTES, "filename": "notes.md", "container": "ops.notes"})

    assert response.status == 202
    assert response.json["status"] == "queued"
    done = wait_final(api, response.json["id"])
    assert done["status"] == "done", done["error"]
    assert done["error"] is None
    assert done["content_type"] == "text/markdown"
    assert done["title"] == "Deployment notes"
    assert done["chunk_count"] >= 1
    assert done["memory_count"] >= 3
    assert len(done["checksum"]) == 64


def test_search_finds_a_documents_chunks_and_memories_with_their_document(api: Api) -> None:
    doc = ingest(api, {"content": NOTES, "filename": "notes.md", "container": "ops.notes"})

    both = api.post("/v1/search", {"query": "which port does the primary database use"}).json["results"]
    chunks = api.post(
        "/v1/search", {"query": "which port does the primary database use", "scope": "chunks"}
    ).json
    memories = api.post(
        "/v1/search", {"query": "which port does the primary database use", "scope": "memories"}
    )

    assert {r["kind"] for r in both} == {"memory", "chunk"}
    assert all(r["document_id"] == doc["id"] for r in both)
    assert chunks["results"] and all(
        r["kind"] == "chunk" and r["memory_type"] is None for r in chunks["results"]
    )
    top = memories.json["results"][0]
    assert top["kind"] == "memory"
    assert "6543" in top["content"]
    assert top["metadata"]["extractor"] == "heuristic"
    assert top["metadata"]["document_id"] == doc["id"]
    assert top["metadata"]["chunk_id"]


def test_a_pdf_sent_as_a_file_is_extracted_with_page_markers(api: Api) -> None:
    pdf = files.pdf(
        ["The invoice service is owned by the payments team.", "Refunds are processed within five days."]
    )

    doc = ingest(api, {"file_base64": base64.b64encode(pdf).decode(), "filename": "handbook.pdf"})
    chunks = api.post("/v1/search", {"query": "how long do refunds take", "scope": "chunks"}).json["results"]

    assert doc["status"] == "done", doc["error"]
    assert doc["content_type"] == "application/pdf"
    assert any("[page 2]" in c["content"] and c["metadata"]["pages"][1] == 2 for c in chunks)


def test_a_file_that_fails_to_extract_shows_the_type_detect_found(api: Api) -> None:
    # Given a file that declares no type, whose first bytes say PDF, but that no PDF reader can open
    broken = b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage"

    # When it fails in the extract step
    doc = ingest(api, {"file_base64": base64.b64encode(broken).decode(), "filename": "report"})

    # Then its type is the one the detect step found before
    assert doc["status"] == "failed"
    assert doc["error"]["message"].startswith("extract: "), doc["error"]
    assert doc["content_type"] == "application/pdf"


def test_a_gzip_file_is_recorded_as_gzip_until_extract_reads_what_it_holds(api: Api) -> None:
    # Given a gzip file, whose type detect records: the extract step reads it as the declared type
    broken = gzip.compress(b'{"a": 1}\n{"a": \n')
    good = gzip.compress(files.csv_people())

    # When one fails in extract and the other is read
    failed = ingest(api, {"file_base64": base64.b64encode(broken).decode(), "filename": "bad.jsonl.gz"})
    done = ingest(api, {"file_base64": base64.b64encode(good).decode(), "filename": "people.csv.gz"})

    # Then the failed one shows the type of its bytes, and the other, still decompressed, what it held
    assert failed["status"] == "failed" and failed["error"]["code"] == "corrupt", failed["error"]
    assert failed["content_type"] == "application/gzip"
    assert done["status"] == "done", done["error"]
    assert done["content_type"] == "text/csv"


def test_a_gzip_file_that_fails_to_decompress_shows_gzip_as_its_type(api: Api) -> None:
    # Given a gzip file cut short, which fails in the detect step itself, as it decompresses
    truncated = gzip.compress(files.csv_people())[:-12]

    # When it is ingested
    doc = ingest(api, {"file_base64": base64.b64encode(truncated).decode(), "filename": "people.csv.gz"})

    # Then it fails in detect, and shows the type of its bytes as stored, known before the failure
    assert doc["status"] == "failed"
    assert doc["error"]["code"] == "corrupt", doc["error"]
    assert doc["error"]["message"].startswith("detect: "), doc["error"]
    assert doc["content_type"] == "application/gzip"


def test_the_same_content_twice_is_one_document(api: Api) -> None:
    first = ingest(api, {"content": NOTES, "container": "ops"})

    again = api.post("/v1/documents", {"content": NOTES, "container": "ops"})
    listed = api.post("/v1/documents/list", {"container": "ops"}).json["documents"]

    assert again.status == 202
    assert again.json == {"id": first["id"], "status": "done", "duplicate": True}
    assert [d["id"] for d in listed] == [first["id"]]


def test_custom_id_replaces_the_document_when_its_content_changes(api: Api) -> None:
    v1 = ingest(
        api, {"content": "The office opens at eight in the morning every weekday.", "custom_id": "hours"}
    )

    same = api.post(
        "/v1/documents",
        {"content": "The office opens at eight in the morning every weekday.", "custom_id": "hours"},
    ).json
    v2 = ingest(
        api, {"content": "The office opens at nine in the morning every weekday.", "custom_id": "hours"}
    )
    found = api.post("/v1/search", {"query": "when does the office open", "scope": "memories"}).json[
        "results"
    ]

    assert same["duplicate"] is True and same["id"] == v1["id"]
    assert v2["id"] == v1["id"] and v2["revision"] == v1["revision"] + 1 and v2["status"] == "done"
    assert [r["content"] for r in found] == ["The office opens at nine in the morning every weekday."]


def test_a_custom_id_sent_to_another_container_is_a_409_and_moves_nothing(api: Api) -> None:
    # Given: a document under custom_id doc-1 in container cid
    first = ingest(api, {"content": "Mallory Stone lives in Oslo.", "custom_id": "doc-1", "container": "cid"})

    # When: the same custom_id is sent with other content to container cid2
    moved = api.post(
        "/v1/documents",
        {
            "content": "Peggy Sue lives in Lima.",
            "custom_id": "doc-1",
            "container": "cid2",
            "filename": "p.txt",
        },
    )

    # Then: a 409 says where doc-1 is, and the document, its container and its memories are as they were
    assert moved.status == 409, moved.json
    assert moved.json["error"]["message"] == (
        "custom_id doc-1 is a document in container cid: send it to cid, or delete it first"
    )
    assert moved.json["error"]["field"] == "custom_id"
    assert api.get(f"/v1/documents/{first['id']}").json == first
    assert api.post("/v1/documents/list", {"container": "cid2"}).json["documents"] == []


def test_a_custom_id_sent_for_another_user_is_a_409_and_changes_no_owner(api: Api) -> None:
    # Given: a document of user ann under custom_id doc-u, and a document of no user under doc-s
    anns = ingest(
        api,
        {
            "content": "Mallory Stone lives in Oslo.",
            "custom_id": "doc-u",
            "container": "cu",
            "user_id": "ann",
        },
    )
    shared = ingest(api, {"content": "Trent Page lives in Rome.", "custom_id": "doc-s", "container": "cu"})

    # When: each custom_id is sent for another owner, with other content and with the same
    refused = [
        api.post(
            "/v1/documents",
            {
                "content": "Peggy Sue lives in Lima.",
                "custom_id": "doc-u",
                "container": "cu",
                "user_id": "ben",
            },
        ),
        api.post(
            "/v1/documents", {"content": "Peggy Sue lives in Lima.", "custom_id": "doc-u", "container": "cu"}
        ),
        api.post(
            "/v1/documents",
            {
                "content": "Mallory Stone lives in Oslo.",
                "custom_id": "doc-u",
                "container": "cu",
                "user_id": "ben",
            },
        ),
        api.post(
            "/v1/documents",
            {
                "content": "Trent Page lives in Rome.",
                "custom_id": "doc-s",
                "container": "cu",
                "user_id": "ben",
            },
        ),
    ]

    # Then: each is a 409 naming user_id and whose the custom_id is, and both documents are as they were
    assert [(r.status, r.json["error"].get("field")) for r in refused] == [(409, "user_id")] * 4
    assert refused[0].json["error"]["message"] == (
        "custom_id doc-u belongs to user 'ann': send it with user_id 'ann', or delete the document first"
    )
    assert refused[3].json["error"]["message"] == (
        "custom_id doc-s belongs to no user (a document sent without user_id): send it without user_id, or "
        "delete the document first"
    )
    assert api.get(f"/v1/documents/{anns['id']}").json == anns
    assert api.get(f"/v1/documents/{shared['id']}").json == shared
    # And: sent for its own user, the custom_id still replaces the document
    again = ingest(
        api,
        {"content": "Peggy Sue lives in Lima.", "custom_id": "doc-u", "container": "cu", "user_id": "ann"},
    )
    assert (again["id"], again["revision"], again["user_id"]) == (anns["id"], anns["revision"] + 1, "ann")


def test_a_duplicate_sent_with_a_custom_id_takes_that_custom_id(api: Api) -> None:
    # Given: a document sent without a custom_id
    first = ingest(api, {"content": "The ferry to Hel leaves at nine.", "container": "cidx"})

    # When: the same content is sent again with custom_id k1
    again = api.post(
        "/v1/documents",
        {"content": "The ferry to Hel leaves at nine.", "container": "cidx", "custom_id": "k1"},
    )

    # Then: it is the same document, which now has custom_id k1
    assert again.status == 202
    assert again.json == {"id": first["id"], "status": "done", "duplicate": True}
    assert api.get(f"/v1/documents/{first['id']}").json["custom_id"] == "k1"


def test_new_content_under_a_custom_id_a_duplicate_gave_replaces_that_document(api: Api) -> None:
    # Given: a document that took custom_id k1 when its content was sent again with it
    first = ingest(api, {"content": "The ferry to Hel leaves at nine.", "container": "cidx"})
    api.post(
        "/v1/documents",
        {"content": "The ferry to Hel leaves at nine.", "container": "cidx", "custom_id": "k1"},
    )

    # When: new content is sent under k1
    replaced = ingest(
        api, {"content": "The ferry to Hel leaves at ten.", "container": "cidx", "custom_id": "k1"}
    )

    # Then: it replaced that document: one document in the container, a new revision of the first
    listed = api.post("/v1/documents/list", {"container": "cidx"}).json["documents"]
    assert replaced["id"] == first["id"] and replaced["revision"] == first["revision"] + 1
    assert [d["id"] for d in listed] == [first["id"]]


def test_a_duplicate_sent_with_another_custom_id_is_a_409_and_changes_nothing(api: Api) -> None:
    # Given: a document under custom_id k1
    first = ingest(
        api, {"content": "The ferry to Hel leaves at nine.", "container": "cidx", "custom_id": "k1"}
    )

    # When: the same content is sent to the same container under custom_id k2
    other = api.post(
        "/v1/documents",
        {"content": "The ferry to Hel leaves at nine.", "container": "cidx", "custom_id": "k2"},
    )

    # Then: a 409 names both custom_ids, and the document keeps k1 (no second document)
    assert other.status == 409, other.json
    assert other.json["error"]["message"] == (
        f"this content is already document {first['id']} in container cidx, under custom_id k1: send it "
        "with custom_id k1, or delete that document first (k2 names no document)"
    )
    assert other.json["error"]["field"] == "custom_id"
    assert api.get(f"/v1/documents/{first['id']}").json == first
    assert [d["id"] for d in api.post("/v1/documents/list", {"container": "cidx"}).json["documents"]] == [
        first["id"]
    ]


def test_list_pages_with_a_cursor_and_filters_by_status(api: Api) -> None:
    for n in range(3):
        ingest(
            api,
            {"content": f"Document number {n} talks about the number {n} in detail here.", "container": "pg"},
        )
    ingest(api, {"content": "", "filename": "empty.txt", "container": "pg"})

    first = api.post("/v1/documents/list", {"container": "pg", "limit": 2}).json
    second = api.post(
        "/v1/documents/list", {"container": "pg", "limit": 2, "cursor": first["next_cursor"]}
    ).json
    failed = api.post("/v1/documents/list", {"container": "pg", "status": "failed"}).json

    assert len(first["documents"]) == 2 and first["next_cursor"]
    assert len(second["documents"]) == 2 and second["next_cursor"] is None
    ids = {d["id"] for d in first["documents"] + second["documents"]}
    assert len(ids) == 4
    assert [d["error"]["code"] for d in failed["documents"]] == ["empty_content"]


def test_delete_removes_chunks_and_the_memories_only_it_produced(api: Api) -> None:
    shared_fact = "The release train leaves every second Tuesday of the month."
    keep = ingest(
        api, {"content": shared_fact + " Hotfixes go out whenever they are ready.", "container": "rel"}
    )
    gone = ingest(
        api, {"content": shared_fact + " The freeze starts two days before each release.", "container": "rel"}
    )

    deleted = api.delete(f"/v1/documents/{gone['id']}")
    after = api.post(
        "/v1/search", {"query": "release train freeze hotfixes", "container": "rel", "limit": 50}
    ).json

    assert deleted.status == 204
    assert api.get(f"/v1/documents/{gone['id']}").status == 404
    contents = [r["content"] for r in after["results"] if r["kind"] == "memory"]
    assert shared_fact in contents  # it also came from the document we kept
    assert "The freeze starts two days before each release." not in contents
    assert all(r["document_id"] != gone["id"] for r in after["results"])
    assert api.get(f"/v1/documents/{keep['id']}").json["memory_count"] == 2


def test_bad_requests_are_422_with_the_field(api: Api) -> None:
    none = api.post("/v1/documents", {"container": "x"})
    two = api.post("/v1/documents", {"content": "a", "url": "https://example.com/a"})
    no_name = api.post("/v1/documents", {"file_base64": "aGVsbG8="})
    bad_b64 = api.post("/v1/documents", {"file_base64": "***", "filename": "a.txt"})
    bad_url = api.post("/v1/documents", {"url": "ftp://example.com/file"})

    for response in (none, two, no_name, bad_b64):
        assert_invalid(response, "body")
    assert_invalid(bad_url, "url")
    assert "exactly one of content, url or file_base64" in none.json["error"]["message"]
    assert "filename is required" in no_name.json["error"]["message"]
    assert "not valid base64" in bad_b64.json["error"]["message"]
    assert bad_url.json["error"]["field"] == "url"


def test_another_tenants_document_is_invisible(api: Api, other_api: Api) -> None:
    mine = ingest(api, {"content": "The vault combination is kept by the facilities manager only."})

    assert other_api.get(f"/v1/documents/{mine['id']}").status == 404
    assert other_api.delete(f"/v1/documents/{mine['id']}").status == 404
    assert other_api.post("/v1/documents/list", {}).json["documents"] == []
    found = other_api.post("/v1/search", {"query": "vault combination facilities manager"}).json["results"]
    assert found == []
    assert api.get(f"/v1/documents/{uuid.uuid4()}").status == 404
    assert api.get("/v1/documents/not-a-uuid").status == 404


def _upload(api: Api, fields: dict[str, str], filename: str, content: str) -> ApiResponse:
    """POST /v1/documents/upload: `fields`, then the file, as multipart/form-data."""
    boundary = "engram-test-boundary"
    parts = [
        f'Content-Disposition: form-data; name="{name}"\r\n\r\n{value}' for name, value in fields.items()
    ]
    parts.append(f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n\r\n{content}')
    body = "".join(f"--{boundary}\r\n{part}\r\n" for part in parts) + f"--{boundary}--\r\n"
    return api.post(
        "/v1/documents/upload",
        raw=body.encode(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )


def test_a_multipart_upload_takes_the_fields_a_json_document_takes(api: Api) -> None:
    fields = {
        "title": "Lighthouse log",
        "extract": "none",
        "document_date": "2024-03-01T09:30:00+00:00",
        "user_id": "keeper-1",
    }

    response = _upload(api, fields, "log.txt", "Mallory keeps the lighthouse logbook in Brest.")
    done = wait_final(api, response.json["id"])

    assert response.status == 202, response.json
    assert done["status"] == "done" and done["title"] == "Lighthouse log" and done["user_id"] == "keeper-1"
    assert done["extract"] == "none" and done["memory_count"] == 0 and done["chunk_count"] == 1
    assert done["document_date"].startswith("2024-03-01T09:30:00")


def test_a_multipart_upload_with_an_unknown_extract_mode_is_a_422(api: Api) -> None:
    response = _upload(api, {"extract": "some"}, "a.txt", "x")

    assert response.status == 422 and response.json["error"]["field"] == "extract", response.json


@pytest.mark.parametrize("field", ["contianer", "filename"])
def test_a_multipart_upload_with_a_field_it_does_not_take_is_a_422_naming_it(api: Api, field: str) -> None:
    response = _upload(api, {field: "crm"}, "a.txt", "x")

    assert response.status == 422 and response.json["error"]["field"] == field, response.json


def test_a_multipart_upload_naming_a_custom_id_of_another_container_is_a_409(api: Api) -> None:
    # Given: a document under custom_id doc-1 in container cid
    first = ingest(api, {"content": "Mallory Stone lives in Oslo.", "custom_id": "doc-1", "container": "cid"})

    # When: a file is uploaded under the same custom_id to container cid2
    moved = _upload(api, {"custom_id": "doc-1", "container": "cid2"}, "p.txt", "Peggy Sue lives in Lima.")

    # Then: the same 409 as the JSON route, and nothing changed
    assert moved.status == 409, moved.json
    assert "custom_id doc-1 is a document in container cid" in moved.json["error"]["message"]
    assert api.get(f"/v1/documents/{first['id']}").json == first


def test_local_upload_takes_multipart(api: Api) -> None:
    boundary = "engram-test-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="container"\r\n\r\nuploads\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\n["people"]\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="people.csv"\r\n'
            f"Content-Type: text/csv\r\n\r\n"
        ).encode()
        + files.csv_people()
        + f"\r\n--{boundary}--\r\n".encode()
    )

    response = api.post(
        "/v1/documents/upload",
        raw=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    done = wait_final(api, response.json["id"])
    found = api.post("/v1/search", {"query": "who works in Berlin", "container": "uploads"}).json["results"]

    assert response.status == 202
    assert done["status"] == "done" and done["content_type"] == "text/csv" and done["tags"] == ["people"]
    assert any("Bob Stone" in r["content"] for r in found)


def test_a_deployment_without_a_route_to_the_internet_refuses_urls_at_once(api: Api) -> None:
    # Found by an audit: in AWS without a NAT gateway the detect step could not reach any URL, so a URL
    # document was accepted (202) and failed minutes later as "timed out", after four retries
    previous = deps.current()
    settings = previous.settings.model_copy(update={"fetch_urls": False})
    deps.install(dataclasses.replace(previous, settings=settings, _lock=previous._lock))
    try:
        refused = api.post("/v1/documents", {"url": "https://example.com/a"})
        inline = api.post("/v1/documents", {"content": "Notes of the day", "filename": "n.txt"})
    finally:
        deps.install(previous)

    assert_invalid(refused, "url")
    assert "cannot fetch URLs" in refused.json["error"]["message"]
    assert inline.status == 202, inline.json
    listed = api.post("/v1/documents/list", {}).json["documents"]
    assert [d["source_kind"] for d in listed] == ["inline"]


class UnstartableStarter:
    """A pipeline starter whose service is down (Step Functions throttling, unreachable)."""

    def start(self, ref: object, name: str) -> None:
        raise RuntimeError("Step Functions unreachable")


def test_a_pipeline_that_cannot_start_is_a_503_with_retry_after_after_the_document_was_registered(
    api: Api,
) -> None:
    previous = deps.current()
    deps.install(dataclasses.replace(previous, starter=UnstartableStarter(), _lock=previous._lock))
    try:
        refused = api.post("/v1/documents", {"content": "Notes of the day", "filename": "n.txt"})
    finally:
        deps.install(previous)

    # Then: a 503 to retry later, which is not `not_handled`: the document was registered (and failed)
    assert refused.status == 503, refused.json
    assert refused.headers["Retry-After"] == "5"
    assert refused.json["error"]["code"] == "service_unavailable"
    listed = api.post("/v1/documents/list", {}).json["documents"]
    assert [d["status"] for d in listed] == ["failed"]
