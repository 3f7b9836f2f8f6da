"""The local stack over real HTTP: `engram local` itself, on a free port (tests/e2e/conftest.py)."""

from __future__ import annotations

import threading

from engram.limits import MAX_REQUEST_BYTES
from engram.tenants.service import IssuedKey
from tests.e2e.local_server import call


def test_store_search_patch_delete_over_http(
    base_url: str, tenant: IssuedKey, other_tenant: IssuedKey
) -> None:
    key, other = tenant.plaintext, other_tenant.plaintext

    status, created = call(
        base_url, "POST", "/v1/memories", {"content": "Dana's birthday is on 4 May", "extract": "light"}, key
    )
    assert status == 201
    status, found = call(base_url, "POST", "/v1/search", {"query": "when is Dana's birthday"}, key)
    assert status == 200 and found["results"][0]["id"] == created["id"]
    status, leaked = call(base_url, "POST", "/v1/search", {"query": "when is Dana's birthday"}, other)
    assert status == 200 and created["id"] not in {r["id"] for r in leaked["results"]}
    status, patched = call(base_url, "PATCH", f"/v1/memories/{created['id']}", {"tags": ["family"]}, key)
    assert status == 200 and patched["tags"] == ["family"]
    assert call(base_url, "DELETE", f"/v1/memories/{created['id']}", key=other)[0] == 404
    assert call(base_url, "DELETE", f"/v1/memories/{created['id']}", key=key) == (204, None)
    assert call(base_url, "GET", f"/v1/memories/{created['id']}", key=key)[0] == 404


def test_curl_style_form_content_type_is_read_as_json(base_url: str, tenant: IssuedKey) -> None:
    status, created = call(
        base_url,
        "POST",
        "/v1/memories",
        {"content": "sent like curl -d", "extract": "light"},
        tenant.plaintext,
        content_type="application/x-www-form-urlencoded",
    )

    assert status == 201 and created["content"] == "sent like curl -d"


def test_errors_over_http(base_url: str, tenant: IssuedKey) -> None:
    key = tenant.plaintext
    assert call(base_url, "GET", "/v1/stats")[0] == 401
    assert call(base_url, "GET", "/v1/stats", key="engram_wrong")[0] == 403
    assert call(base_url, "POST", "/v1/memories", raw=b"{oops", key=key)[0] == 400
    assert call(base_url, "POST", "/v1/memories", raw=b"\xff\xfe\x00", key=key)[0] == 400
    status, body = call(base_url, "POST", "/v1/memories", {"content": "x", "limit": 3}, key)
    assert status == 422 and body["error"]["field"] == "limit"
    status, body = call(base_url, "POST", "/v1/memories", raw=b"x" * (MAX_REQUEST_BYTES + 1), key=key)
    assert status == 413 and body["error"]["code"] == "payload_too_large"


def test_health_and_openapi_over_http(base_url: str) -> None:
    assert call(base_url, "GET", "/health") == (200, {"status": "ok", "database": "ok"})
    status, document = call(base_url, "GET", "/openapi.json")
    assert status == 200 and "/v1/search" in document["paths"]


def test_concurrent_clients_are_served(base_url: str, tenant: IssuedKey) -> None:
    results: list[int] = []

    def client(i: int) -> None:
        results.append(
            call(
                base_url,
                "POST",
                "/v1/memories",
                {"content": f"parallel write {i}", "extract": "light"},
                tenant.plaintext,
            )[0]
        )

    threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert results == [201] * 12
    status, page = call(base_url, "POST", "/v1/memories/list", {"limit": 100}, tenant.plaintext)
    assert status == 200 and len(page["memories"]) == 12
