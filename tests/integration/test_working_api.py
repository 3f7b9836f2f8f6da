"""Working memory: versioned writes with If-Match compare-and-swap, expiry, listing, deletion,
tenant isolation, and twenty concurrent CAS writers on real threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from engram import deps
from engram.errors import Conflict
from engram.local.stack import LocalDatabase
from engram.tenants.service import IssuedKey
from engram.versions import Expected
from engram.working.models import WorkingPut
from tests.conftest import Api, assert_invalid


def _expire(local_db: LocalDatabase, scope: str, key: str) -> None:
    with local_db.admin.transaction() as cur:
        cur.execute(
            "UPDATE working_memory SET expires_at = now() - interval '1 s' WHERE scope = %s AND key = %s",
            (scope, key),
        )


def test_put_creates_then_replaces_with_growing_versions(api: Api) -> None:
    created = api.put("/v1/working/plan-1/status", {"value": {"step": 1}})
    replaced = api.put("/v1/working/plan-1/status", {"value": {"step": 2}})
    read = api.get("/v1/working/plan-1/status")

    assert created.status == 201 and created.json["version"] == 1
    assert created.headers["ETag"] == '"1"'
    assert replaced.status == 200 and replaced.json["version"] == 2
    assert read.status == 200
    assert read.json["value"] == {"step": 2} and read.json["version"] == 2
    assert read.json["scope"] == "plan-1" and read.json["key"] == "status"


def test_if_match_with_the_current_version_writes_and_a_stale_one_gets_409(api: Api) -> None:
    api.put("/v1/working/plan-2/owner", {"value": "agent-a"})

    ok = api.put("/v1/working/plan-2/owner", {"value": "agent-b"}, headers={"If-Match": "1"})
    stale = api.put("/v1/working/plan-2/owner", {"value": "agent-c"}, headers={"if-match": '"1"'})

    assert ok.status == 200 and ok.json["version"] == 2
    assert stale.status == 409
    assert stale.json["error"]["code"] == "version_conflict"
    assert stale.json["error"]["current_version"] == 2
    assert api.get("/v1/working/plan-2/owner").json["value"] == "agent-b"


def test_two_agents_racing_on_one_key_one_wins_and_the_other_learns_the_version(api: Api) -> None:
    api.put("/v1/working/plan-3/tasks", {"value": []})
    seen_by_a = api.get("/v1/working/plan-3/tasks").json
    seen_by_b = api.get("/v1/working/plan-3/tasks").json

    a = api.put(
        "/v1/working/plan-3/tasks",
        {"value": [*seen_by_a["value"], "a"]},
        headers={"If-Match": str(seen_by_a["version"])},
    )
    b = api.put(
        "/v1/working/plan-3/tasks",
        {"value": [*seen_by_b["value"], "b"]},
        headers={"If-Match": str(seen_by_b["version"])},
    )
    retry = api.put(
        "/v1/working/plan-3/tasks",
        {"value": [*a.json["value"], "b"]},
        headers={"If-Match": str(b.json["error"]["current_version"])},
    )

    assert a.status == 200 and b.status == 409 and retry.status == 200
    assert api.get("/v1/working/plan-3/tasks").json["value"] == ["a", "b"]


def test_if_match_zero_creates_only_and_star_replaces_only(api: Api) -> None:
    missing = api.put("/v1/working/plan-4/lock", {"value": 1}, headers={"If-Match": "*"})
    created = api.put("/v1/working/plan-4/lock", {"value": 1}, headers={"If-Match": "0"})
    again = api.put("/v1/working/plan-4/lock", {"value": 2}, headers={"If-Match": "0"})
    replaced = api.put("/v1/working/plan-4/lock", {"value": 3}, headers={"If-Match": "*"})

    assert missing.status == 409 and missing.json["error"]["current_version"] is None
    assert created.status == 201
    assert again.status == 409 and again.json["error"]["current_version"] == 1
    assert replaced.status == 200 and replaced.json["value"] == 3


def test_expired_keys_are_invisible_at_once_and_count_as_absent(api: Api, local_db: LocalDatabase) -> None:
    api.put("/v1/working/plan-5/temp", {"value": "soon gone", "ttl_seconds": 60})
    api.put("/v1/working/plan-5/kept", {"value": "stays"})
    assert api.get("/v1/working/plan-5/temp").json["expires_at"] is not None

    _expire(local_db, "plan-5", "temp")

    assert api.get("/v1/working/plan-5/temp").status == 404
    assert [i["key"] for i in api.get("/v1/working/plan-5").json["items"]] == ["kept"]
    assert api.put("/v1/working/plan-5/temp", {"value": "x"}, headers={"If-Match": "1"}).status == 409
    reborn = api.put("/v1/working/plan-5/temp", {"value": "back"}, headers={"If-Match": "0"})
    assert reborn.status == 201 and reborn.json["version"] == 2 and reborn.json["expires_at"] is None


def test_list_pages_through_a_scope_in_key_order(api: Api) -> None:
    for key in ("c", "a", "b"):
        api.put(f"/v1/working/plan-6/{key}", {"value": key})
    api.put("/v1/working/plan-other/z", {"value": "z"})

    first = api.get("/v1/working/plan-6?limit=2").json
    second = api.get(f"/v1/working/plan-6?limit=2&after={first['next_after']}").json

    assert [i["key"] for i in first["items"]] == ["a", "b"] and first["next_after"] == "b"
    assert [i["key"] for i in second["items"]] == ["c"] and second["next_after"] is None


def test_delete_a_key_and_a_whole_scope(api: Api) -> None:
    for key in ("x", "y", "z"):
        api.put(f"/v1/working/plan-7/{key}", {"value": None})

    stale = api.delete("/v1/working/plan-7/x", headers={"If-Match": "5"})
    deleted = api.delete("/v1/working/plan-7/x", headers={"If-Match": "1"})
    gone = api.delete("/v1/working/plan-7/x")
    cleared = api.delete("/v1/working/plan-7")

    assert stale.status == 409 and stale.json["error"]["current_version"] == 1
    assert deleted.status == 204
    assert gone.status == 404
    assert cleared.json == {"scope": "plan-7", "deleted": 2}
    assert api.get("/v1/working/plan-7").json["items"] == []


def test_a_version_condition_on_clearing_a_whole_scope_is_refused_not_ignored(api: Api) -> None:
    api.put("/v1/working/plan-8/x", {"value": 1})

    refused = api.delete("/v1/working/plan-8", headers={"If-Match": "7"})

    assert refused.status == 422 and refused.json["error"]["field"] == "If-Match"
    assert [i["key"] for i in api.get("/v1/working/plan-8").json["items"]] == ["x"]


def test_another_tenant_sees_and_touches_nothing(api: Api, other_api: Api) -> None:
    api.put("/v1/working/shared-name/k", {"value": "mine"})

    assert other_api.get("/v1/working/shared-name/k").status == 404
    assert other_api.get("/v1/working/shared-name").json["items"] == []
    assert other_api.delete("/v1/working/shared-name").json["deleted"] == 0
    assert (
        other_api.put("/v1/working/shared-name/k", {"value": "theirs"}, headers={"If-Match": "1"}).status
        == 409
    )
    assert api.get("/v1/working/shared-name/k").json["value"] == "mine"


def test_working_memory_errors(api: Api) -> None:
    no_value = api.put("/v1/working/plan-8/k", {"ttl_seconds": 5})
    bad_ttl = api.put("/v1/working/plan-8/k", {"value": 1, "ttl_seconds": 0})
    bad_match = api.put("/v1/working/plan-8/k", {"value": 1}, headers={"If-Match": "yesterday"})
    bad_key = api.put("/v1/working/plan-8/sp%20ace", {"value": 1})
    too_big = api.put("/v1/working/plan-8/k", {"value": "x" * (300 * 1024)})
    unknown = api.put("/v1/working/plan-8/k", {"value": 1, "colour": "red"})
    missing = api.get("/v1/working/plan-8/nothing")

    assert no_value.status == 422 and no_value.json["error"]["field"] == "value"
    assert bad_ttl.status == 422 and bad_ttl.json["error"]["field"] == "ttl_seconds"
    assert bad_match.status == 422 and bad_match.json["error"]["field"] == "If-Match"
    assert bad_key.status == 422 and bad_key.json["error"]["field"] == "key"
    assert too_big.status == 422 and too_big.json["error"]["field"] == "value"
    assert_invalid(unknown, "colour")
    assert missing.status == 404 and missing.json["error"]["code"] == "not_found"


def test_an_if_match_sent_empty_is_refused_not_read_as_absent(api: Api) -> None:
    # Given: a key at version 1 (found by the fuzz gate: `If-Match: ""` wrote unconditionally)
    assert api.put("/v1/working/plan-9/k", {"value": 1}).status == 201
    for blank in ("", " "):
        # When: a write and a delete send If-Match with nothing in it
        put = api.put("/v1/working/plan-9/k", {"value": 2}, headers={"If-Match": blank})
        delete = api.delete("/v1/working/plan-9/k", headers={"If-Match": blank})
        # Then: both are refused, naming the header, and the key is untouched
        assert_invalid(put, "If-Match")
        assert_invalid(delete, "If-Match")
    assert api.get("/v1/working/plan-9/k").json["value"] == 1


def test_twenty_concurrent_cas_writers_lose_no_update(tenant: IssuedKey) -> None:
    # Given: one counter key, twenty writers, each with its own connection, released together
    service = deps.working_service()
    service.put(tenant.tenant_id, "plan-race", "log", WorkingPut(value=[]), Expected.ANY)
    barrier = threading.Barrier(20)

    def append(writer: int) -> None:
        barrier.wait()
        while True:
            current = service.get(tenant.tenant_id, "plan-race", "log")
            value = [*current.value, writer]
            try:
                service.put(
                    tenant.tenant_id,
                    "plan-race",
                    "log",
                    WorkingPut(value=value),
                    Expected.parse(str(current.version)),
                )
                return
            except Conflict:
                continue

    # When: every writer reads, appends its number and writes back with If-Match, retrying on 409
    with ThreadPoolExecutor(20) as pool:
        list(pool.map(append, range(20)))

    # Then: all twenty appends are there, each exactly once, one version per successful write
    final = service.get(tenant.tenant_id, "plan-race", "log")
    assert sorted(final.value) == list(range(20))
    assert final.version == 21


def test_an_update_keeps_the_ttl_unless_it_sets_or_clears_it(api: Api) -> None:
    first = api.put("/v1/working/plan-ttl/k", {"value": 1, "ttl_seconds": 600}).json

    kept = api.put("/v1/working/plan-ttl/k", {"value": 2}).json
    kept_cas = api.put("/v1/working/plan-ttl/k", {"value": 3}, headers={"If-Match": "2"}).json
    kept_present = api.put("/v1/working/plan-ttl/k", {"value": 4}, headers={"If-Match": "*"}).json
    renewed = api.put("/v1/working/plan-ttl/k", {"value": 5, "ttl_seconds": 3600}).json
    cleared = api.put("/v1/working/plan-ttl/k", {"value": 6, "ttl_seconds": None}).json

    assert first["expires_at"] is not None
    assert kept["expires_at"] == kept_cas["expires_at"] == kept_present["expires_at"] == first["expires_at"]
    assert renewed["expires_at"] > first["expires_at"]
    assert cleared["expires_at"] is None and cleared["value"] == 6


def test_a_delete_on_condition_that_the_key_is_absent_keeps_an_existing_key(api: Api) -> None:
    # Given: a key at version 1 (If-Match: 0 asks that the key not exist)
    api.put("/v1/working/plan-10/k", {"value": "kept"})

    # When: it is deleted on that condition, and then a key that does not exist is too
    refused = api.delete("/v1/working/plan-10/k", headers={"If-Match": "0"})
    missing = api.delete("/v1/working/plan-10/none", headers={"If-Match": "0"})

    # Then: the existing key stays, and the caller learns its version; the absent one is not there
    assert refused.status == 409 and refused.json["error"]["current_version"] == 1
    assert "already exists" in refused.json["error"]["message"]
    assert api.get("/v1/working/plan-10/k").json["value"] == "kept"
    assert missing.status == 404


def test_a_request_made_for_a_user_reads_writes_and_deletes_no_key_of_another_user(api: Api) -> None:
    # Given a key of bob's and a key of no user
    api.put("/v1/working/state-bob/secrets", {"value": "bob's", "user_id": "bob"})
    api.put("/v1/working/plan-u/step", {"value": 1})

    # When alice reads, writes and deletes them (made for her)
    read = api.get("/v1/working/state-bob/secrets?user_id=alice")
    written = api.put("/v1/working/state-bob/secrets", {"value": "tampered", "user_id": "alice"})
    deleted = api.delete("/v1/working/state-bob/secrets?user_id=alice")
    shared = api.get("/v1/working/plan-u/step?user_id=alice")
    taken = api.put("/v1/working/plan-u/step", {"value": 2, "user_id": "alice"})

    # Then bob's key is not found for her and not written, and stays bob's; a key of no user is hers to use
    assert read.status == 404 and read.json["error"]["code"] == "not_found"
    assert written.status == 409 and written.json["error"]["field"] == "user_id"
    assert deleted.status == 404
    bobs = api.get("/v1/working/state-bob/secrets?user_id=bob").json
    assert bobs["value"] == "bob's" and bobs["user_id"] == "bob"
    assert shared.status == 200 and taken.status == 200 and taken.json["user_id"] == "alice"
    assert api.delete("/v1/working/state-bob/secrets?user_id=bob").status == 204


def test_a_scope_listed_or_cleared_for_a_user_holds_only_their_keys_and_keys_of_no_user(api: Api) -> None:
    # Found by QA: GET /v1/working/{scope} listed every user's keys (values included), which
    # GET .../{key}?user_id= hides, and DELETE /v1/working/{scope} cleared them all
    api.put("/v1/working/shared-plan/alice-note", {"value": "a", "user_id": "alice"})
    api.put("/v1/working/shared-plan/bob-note", {"value": "b", "user_id": "bob"})
    api.put("/v1/working/shared-plan/team-note", {"value": "t"})

    for_bob = api.get("/v1/working/shared-plan?user_id=bob")
    cleared = api.delete("/v1/working/shared-plan?user_id=bob")
    left = api.get("/v1/working/shared-plan")

    assert [i["key"] for i in for_bob.json["items"]] == ["bob-note", "team-note"]
    assert cleared.json == {"scope": "shared-plan", "deleted": 2}
    assert [i["key"] for i in left.json["items"]] == ["alice-note"]
