"""The local front serves concurrent requests without mixing them up (Powertools keeps the current
event in a class attribute, so the gateway must invoke one handler at a time, as Lambda does)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.conftest import Api


def test_concurrent_requests_of_two_tenants_keep_their_own_body_and_tenant(api: Api, other_api: Api) -> None:
    # Given: two tenants writing at the same time from several threads
    jobs = [(api, f"alpha {i}") for i in range(60)] + [(other_api, f"beta {i}") for i in range(60)]

    def create(job: tuple[Api, str]) -> tuple[str, int, str | None]:
        client, text = job
        response = client.post("/v1/memories", {"content": text})
        return text, response.status, (response.json or {}).get("content")

    # When
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(create, jobs))

    # Then: every request stored its own body, in its own tenant
    assert [r for r in results if r[1] != 201 or r[0] != r[2]] == []
    mine = api.post("/v1/memories/list", {"limit": 100}).json["memories"]
    theirs = other_api.post("/v1/memories/list", {"limit": 100}).json["memories"]
    assert sorted(m["content"] for m in mine) == sorted(f"alpha {i}" for i in range(60))
    assert sorted(m["content"] for m in theirs) == sorted(f"beta {i}" for i in range(60))
