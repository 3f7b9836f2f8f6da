"""Every kind of bad input gets a clear 4xx with a message; nothing a client sends produces a 500."""

from __future__ import annotations

import json

import pytest

from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 42}, "content"),
        ({"content": "x", "memory_type": "opinion"}, "memory_type"),
        ({"content": "x", "container": "bad name!"}, "container"),
        ({"content": "x", "container": "a..b"}, "container"),
        ({"content": "x", "tags": "not-a-list"}, "tags"),
        ({"content": "x", "tags": [1, 2]}, "tags[0]"),
        ({"content": "x", "metadata": [1]}, "metadata"),
        ({"content": "x", "confidence": 2}, "confidence"),
        ({"content": "x", "expires_at": "tomorrow"}, "expires_at"),
        ({"content": "x", "unknown_field": 1}, "unknown_field"),
        ({"content": "x", "embedding": [0.1, 0.2]}, "body"),
        (
            {"content": "x", "embedding": [0.1], "embedding_model": "sentence-transformers/all-MiniLM-L6-v2"},
            "embedding",
        ),
        ({"content": "x", "embedding": ["a"], "embedding_model": "m"}, "embedding[0]"),
    ],
)
def test_invalid_memory_is_422_naming_the_field(api: Api, body: dict, field: str) -> None:
    response = api.post("/v1/memories", body)

    assert response.status == 422, response.json
    error = response.json["error"]
    assert error["code"] == "validation_error"
    assert error["message"]
    if field != "body":
        assert error["field"] == field


def test_content_over_100_kb_is_rejected_with_its_size(api: Api) -> None:
    response = api.post("/v1/memories", {"content": "é" * 60_000})  # 120,000 bytes of UTF-8

    assert_invalid(response, "content")
    assert "102400" in response.json["error"]["message"]
    assert response.json["error"]["field"] == "content"


def test_content_of_exactly_100_kb_is_accepted(api: Api) -> None:
    response = api.post("/v1/memories", {"content": "a" * 102_400})

    assert response.status == 201


@pytest.mark.parametrize(
    "path", ["/v1/memories", "/v1/search", "/v1/sessions", "/v1/documents", "/v1/documents/upload"]
)
@pytest.mark.parametrize("raw", [b"{bad", b"\xff\xfe", b'{"content": "x"', b"[1,"])
def test_malformed_json_is_400_malformed_json(api: Api, path: str, raw: bytes) -> None:
    response = api.post(path, raw=raw)

    assert response.status == 400, response.json
    assert response.json["error"]["code"] == "malformed_json" and response.json["error"]["message"]


@pytest.mark.parametrize("raw", [b"", b"  ", b'{"filename": "a.txt"}'])
def test_the_local_upload_says_it_takes_multipart_to_an_empty_or_a_ticket_request(
    api: Api, raw: bytes
) -> None:
    response = api.post("/v1/documents/upload", raw=raw)

    assert response.status == 422, response.json
    assert "multipart/form-data" in response.json["error"]["message"]


def test_an_empty_body_is_422_naming_the_body(api: Api) -> None:
    assert_invalid(api.post("/v1/memories", raw=b""), "body")


def test_a_json_body_of_the_wrong_shape_is_422(api: Api) -> None:
    for body in ([], "text", 3, None):
        assert_invalid(api.post("/v1/memories", raw=json.dumps(body).encode()), "body")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "limit": "ten"}, "limit"),
        ({"query": "x", "mode": "semantic"}, "mode"),
        ({"query": "x", "container": "a.*.b"}, "container"),
        ({"query": "x", "filters": {"memory_type": ["nope"]}}, "filters.memory_type[0]"),
        ({"query": "x", "filters": {"colour": "red"}}, "filters.colour"),
        ({"query": "x", "score_threshold": 5}, "score_threshold"),
    ],
)
def test_invalid_search_is_422_naming_the_field(api: Api, body: dict, field: str) -> None:
    response = api.post("/v1/search", body)

    assert response.status == 422, response.json
    assert response.json["error"]["field"] == field


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/search", {"query": "   "}, "query"),
        ("/v1/search", {"query": "\n", "user_id": "carol"}, "query"),
        ("/v1/search", {"query": "\u3000"}, "query"),
        ("/v1/procedures/match", {"situation": " \t "}, "situation"),
    ],
)
def test_a_query_of_only_whitespace_is_422_naming_the_field_not_the_body(
    api: Api, path: str, body: dict, field: str
) -> None:
    response = api.post(path, body)

    assert_invalid(response, field)
    assert response.json["error"]["message"] == f"{field}: must not be empty or only whitespace"


def test_a_patch_that_sets_a_field_to_null_is_422_naming_the_field(api: Api) -> None:
    # Given: a memory and a procedure
    memory = api.post("/v1/memories", {"content": "Erin lives in Lisbon"}).json
    procedure = api.post("/v1/procedures", {"trigger": "a refund", "content": "check the date"}).json

    # When: a PATCH sends null for a field that cannot be null
    memory_patch = api.patch(f"/v1/memories/{memory['id']}", {"tags": None})
    procedure_patch = api.patch(f"/v1/procedures/{procedure['id']}", {"content": "x", "trigger": None})

    # Then: the 422 names that field, not the body
    assert_invalid(memory_patch, "tags")
    assert_invalid(procedure_patch, "trigger")
    assert "leave trigger out" in procedure_patch.json["error"]["message"]


def test_missing_key_is_401(anonymous_api: Api) -> None:
    response = anonymous_api.post("/v1/search", {"query": "x"})

    assert response.status == 401
    assert response.json["error"]["code"] == "unauthorized"


def test_unknown_key_is_403(gateway) -> None:  # type: ignore[no-untyped-def]
    response = Api(gateway, "engram_not-a-real-key").get("/v1/stats")

    assert response.status == 403
    assert response.json["error"]["message"] == "unknown or revoked API key"


def test_revoked_key_is_403(gateway, local_db: LocalDatabase, tenant: IssuedKey) -> None:  # type: ignore[no-untyped-def]
    assert Api(gateway, tenant.plaintext).get("/v1/stats").status == 200

    tenants.revoke_key(local_db.admin, tenant.tenant_name, prefix=tenant.prefix)

    response = Api(gateway, tenant.plaintext).get("/v1/stats")
    assert response.status == 403
    assert "revoked" in response.json["error"]["message"]


def test_unknown_route_and_wrong_method(api: Api) -> None:
    assert api.get("/v1/nothing-here").status == 404
    wrong = api.call("PUT", "/v1/search", {"query": "x"})
    assert wrong.status == 405
    assert "POST" in wrong.json["error"]["message"]


def test_hostile_strings_are_stored_verbatim_not_executed(api: Api) -> None:
    content = "Robert'); DROP TABLE memories;-- \u202e \U0001f600 <script>alert(1)</script>"
    created = api.post("/v1/memories", {"content": content, "tags": ["'; --"], "metadata": {"k": "' OR 1=1"}})

    assert created.status == 201
    assert api.get(f"/v1/memories/{created.json['id']}").json["content"] == content
    found = api.post(
        "/v1/search", {"query": content, "filters": {"tags": ["'; --"], "metadata": {"k": "' OR 1=1"}}}
    )
    assert found.status == 200 and found.json["results"][0]["id"] == created.json["id"]


def test_nul_characters_are_422_not_500(api: Api) -> None:
    assert_invalid(api.post("/v1/memories", {"content": "a\u0000b"}), "content")
    assert_invalid(api.post("/v1/memories", {"content": "ok", "metadata": {"k": "a\u0000b"}}), "metadata")
    assert_invalid(api.post("/v1/search", {"query": "a\u0000b"}), "query")


def test_revoking_by_prefix_touches_only_the_named_tenants_keys(
    gateway, local_db: LocalDatabase, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:  # type: ignore[no-untyped-def]
    # Given two tenants whose keys could share a visible prefix
    # When one tenant's key is revoked by that prefix, through the (superuser) admin connection
    revoked = tenants.revoke_key(local_db.admin, other_tenant.tenant_name, prefix=tenant.prefix)

    # Then nothing of the other tenant is touched
    assert revoked == 0
    assert Api(gateway, tenant.plaintext).get("/v1/stats").status == 200
