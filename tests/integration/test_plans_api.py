"""Plans and task contexts over the API: ids are the caller's and unique per tenant, writes are
compare-and-swap with If-Match, a sub-task finds its parent task, and another tenant sees nothing."""

from __future__ import annotations

from engram.local.stack import LocalDatabase
from tests.conftest import Api


def _plan(api: Api, plan_id: str, **fields: object) -> dict[str, object]:
    response = api.post("/v1/plans", {"plan_id": plan_id, "goal_event": "trip.requested", **fields})
    assert response.status == 201, response.json
    body: dict[str, object] = response.json
    return body


def test_a_plan_is_created_read_and_its_version_is_the_etag(api: Api) -> None:
    created = api.post(
        "/v1/plans",
        {"plan_id": "trip-7", "goal_event": "trip.requested", "goal_data": {"to": "Oslo"}, "user_id": "ann"},
    )

    assert created.status == 201 and created.headers["ETag"] == '"1"'
    assert created.json["status"] == "pending" and created.json["state"] == {}
    read = api.get("/v1/plans/trip-7")
    assert read.status == 200 and read.json == created.json and read.headers["ETag"] == '"1"'


def test_a_plan_id_is_unique_in_the_tenant_but_not_across_tenants(api: Api, other_api: Api) -> None:
    _plan(api, "p-1")

    again = api.post("/v1/plans", {"plan_id": "p-1", "goal_event": "other"})

    assert again.status == 409 and again.json["error"]["code"] == "already_exists"
    assert again.json["error"]["field"] == "plan_id"
    assert other_api.post("/v1/plans", {"plan_id": "p-1", "goal_event": "x"}).status == 201
    assert api.get("/v1/plans/p-1").json["goal_event"] == "trip.requested"


def test_put_changes_only_the_fields_sent_and_if_match_guards_it(api: Api) -> None:
    _plan(api, "p-2", goal_data={"to": "Rome"})

    changed = api.put("/v1/plans/p-2", {"status": "running"}, headers={"If-Match": '"1"'})
    stale = api.put("/v1/plans/p-2", {"status": "done"}, headers={"If-Match": '"1"'})

    assert changed.status == 200 and changed.json["version"] == 2 and changed.headers["ETag"] == '"2"'
    assert changed.json["status"] == "running" and changed.json["goal_data"] == {"to": "Rome"}
    assert stale.status == 409 and stale.json["error"]["code"] == "version_conflict"
    assert stale.json["error"]["current_version"] == 2
    assert api.get("/v1/plans/p-2").json["status"] == "running"


def test_put_refuses_nothing_to_change_and_nulls_that_are_not_allowed(api: Api) -> None:
    _plan(api, "p-3")

    empty = api.put("/v1/plans/p-3", {})
    null_status = api.put("/v1/plans/p-3", {"status": None})
    null_state = api.put("/v1/plans/p-3", {"state": None})

    assert empty.status == 422 and "nothing to change" in empty.json["error"]["message"]
    assert null_status.status == 422 and "status cannot be null" in null_status.json["error"]["message"]
    assert null_state.status == 200 and null_state.json["state"] is None


def test_put_with_if_match_0_creates_an_absent_plan(api: Api) -> None:
    # Given: no plan "nope"
    assert api.get("/v1/plans/nope").status == 404

    # When: it is PUT with If-Match: 0 (write only if absent), as working memory takes it
    created = api.put("/v1/plans/nope", {"goal_event": "x"}, headers={"If-Match": "0"})

    # Then: the plan is created at version 1, with POST's defaults for the fields not sent
    assert created.status == 201, created.json
    assert created.headers["ETag"] == '"1"' and created.json["version"] == 1
    assert (created.json["plan_id"], created.json["goal_event"], created.json["status"]) == (
        "nope",
        "x",
        "pending",
    )
    assert api.get("/v1/plans/nope").json == created.json


def test_put_with_if_match_0_on_an_existing_plan_is_a_conflict_naming_its_version(api: Api) -> None:
    # Given: plan p-0 at version 2
    _plan(api, "p-0")
    api.put("/v1/plans/p-0", {"status": "running"})

    # When: it is PUT with If-Match: 0
    again = api.put("/v1/plans/p-0", {"goal_event": "x"}, headers={"If-Match": "0"})

    # Then: 409 version_conflict with its current version, and the plan is unchanged
    assert again.status == 409 and again.json["error"]["code"] == "version_conflict"
    assert again.json["error"]["current_version"] == 2
    assert "already exists at version 2" in again.json["error"]["message"]
    assert api.get("/v1/plans/p-0").json["goal_event"] == "trip.requested"


def test_put_with_if_match_0_without_what_a_plan_needs_is_a_422_naming_it(api: Api) -> None:
    # Given: no plan "bare"
    # When: it is PUT with If-Match: 0 but without a goal_event
    refused = api.put("/v1/plans/bare", {"status": "running"}, headers={"If-Match": "0"})

    # Then: 422 naming goal_event, and nothing is created
    assert refused.status == 422 and refused.json["error"]["field"] == "goal_event"
    assert api.get("/v1/plans/bare").status == 404


def test_put_with_if_match_0_creates_an_absent_task_context_and_claims_its_sub_tasks(api: Api) -> None:
    # Given: no task context "t-new"
    # When: it is PUT with If-Match: 0
    created = api.put(
        "/v1/task-context/t-new", {"event_type": "e", "sub_tasks": ["s-new"]}, headers={"If-Match": "0"}
    )

    # Then: it is created at version 1, and its sub-task finds it
    assert created.status == 201, created.json
    assert created.headers["ETag"] == '"1"' and created.json["task_id"] == "t-new"
    assert api.get("/v1/task-context/by-subtask/s-new").json == created.json


def test_a_null_event_type_in_a_task_context_put_is_a_422_naming_it(api: Api) -> None:
    # Given: task context t4
    api.post("/v1/task-context", {"task_id": "t4", "event_type": "e"})

    # When: a PUT sets event_type to null
    refused = api.put("/v1/task-context/t4", {"event_type": None})

    # Then: 422 naming event_type, and the task context is unchanged
    assert refused.status == 422 and refused.json["error"]["field"] == "event_type"
    assert "event_type cannot be null" in refused.json["error"]["message"]
    assert api.get("/v1/task-context/t4").json["event_type"] == "e"


def test_plans_are_listed_by_status_newest_first_in_pages(api: Api) -> None:
    for n in range(5):
        _plan(api, f"l-{n}", status="running" if n % 2 == 0 else "done")

    first = api.get("/v1/plans?status=running&limit=2")
    second = api.get(f"/v1/plans?status=running&limit=2&cursor={first.json['next_cursor']}")

    assert [p["plan_id"] for p in first.json["plans"]] == ["l-4", "l-2"]
    assert [p["plan_id"] for p in second.json["plans"]] == ["l-0"] and second.json["next_cursor"] is None
    assert api.get("/v1/plans?status=Bad Status").status == 422


def test_deleting_a_plan_honours_if_match_and_is_then_not_found(api: Api, other_api: Api) -> None:
    _plan(api, "p-4")

    assert other_api.delete("/v1/plans/p-4").status == 404
    assert api.delete("/v1/plans/p-4", headers={"If-Match": '"7"'}).status == 409
    assert api.delete("/v1/plans/p-4", headers={"If-Match": '"1"'}).status == 204
    assert api.get("/v1/plans/p-4").status == 404
    assert api.delete("/v1/plans/p-4").status == 404


def test_a_sub_task_finds_its_parent_task(api: Api, other_api: Api) -> None:
    created = api.post(
        "/v1/task-context",
        {
            "task_id": "book-9",
            "plan_id": "trip-9",
            "event_type": "booking.requested",
            "response_event": "booking.done",
            "response_topic": "agents/planner",
            "data": {"city": "Oslo"},
            "sub_tasks": ["flight-9", "hotel-9"],
        },
    )

    found = api.get("/v1/task-context/by-subtask/hotel-9")

    assert created.status == 201
    assert found.status == 200 and found.json == created.json and found.headers["ETag"] == '"1"'
    assert api.get("/v1/task-context/by-subtask/car-9").status == 404
    assert other_api.get("/v1/task-context/by-subtask/hotel-9").status == 404


def test_a_sub_task_belongs_to_one_task_until_it_is_released(api: Api) -> None:
    api.post("/v1/task-context", {"task_id": "a", "event_type": "e", "sub_tasks": ["s-1", "s-2"]})

    taken = api.post("/v1/task-context", {"task_id": "b", "event_type": "e", "sub_tasks": ["s-2"]})
    released = api.put("/v1/task-context/a", {"sub_tasks": ["s-1"]})
    claimed = api.post("/v1/task-context", {"task_id": "b", "event_type": "e", "sub_tasks": ["s-2"]})

    assert taken.status == 409 and taken.json["error"]["field"] == "sub_tasks"
    assert "'s-2' already belongs to task 'a'" in taken.json["error"]["message"]
    assert released.status == 200 and released.json["sub_tasks"] == ["s-1"]
    assert claimed.status == 201
    assert api.get("/v1/task-context/by-subtask/s-2").json["task_id"] == "b"


def test_task_contexts_are_listed_by_plan_and_deleted(api: Api) -> None:
    for n in range(3):
        api.post("/v1/task-context", {"task_id": f"t-{n}", "plan_id": "p" if n else "q", "event_type": "e"})

    listed = api.get("/v1/task-context?plan_id=p")

    assert [t["task_id"] for t in listed.json["task_contexts"]] == ["t-2", "t-1"]
    assert api.delete("/v1/task-context/t-1").status == 204
    assert api.get("/v1/task-context/t-1").status == 404
    assert (
        api.post("/v1/task-context", {"task_id": "x", "event_type": "e", "sub_tasks": ["d", "d"]}).status
        == 422
    )


def test_the_sub_task_lookup_can_use_its_gin_index(local_db: LocalDatabase, api: Api) -> None:
    # The lookup function runs as engram_search, which reads the table without RLS's security barrier.
    api.post("/v1/task-context", {"task_id": "gin", "event_type": "e", "sub_tasks": ["g-1"]})
    with local_db.admin.transaction() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL ROLE engram_search")
        plan = cur.execute(
            "EXPLAIN SELECT task_id FROM task_contexts WHERE tenant_id = gen_random_uuid() "
            "AND sub_tasks && ARRAY['g-1']::text[]"
        ).fetchall()

    assert "task_contexts_tenant_sub_tasks_idx" in "\n".join(row["QUERY PLAN"] for row in plan)
