"""Procedural memory: CRUD, matching a situation to triggers, agent-private procedures, errors and
tenant isolation."""

from __future__ import annotations

import uuid

from tests.conftest import Api, assert_invalid

REFUND_RULE = {
    "kind": "rule",
    "trigger": "a customer asks for a refund",
    "content": "Check the order date first; refunds are allowed within 30 days of delivery.",
    "tags": ["support"],
}
SQL_EXAMPLE = {
    "kind": "example",
    "trigger": "the user wants a SQL query that counts rows per day",
    "content": "Q: orders per day? A: SELECT date_trunc('day', created_at), count(*) FROM orders GROUP BY 1",
}


def test_create_get_patch_delete(api: Api) -> None:
    created = api.post("/v1/procedures", REFUND_RULE)
    assert created.status == 201
    procedure = created.json
    assert procedure["kind"] == "rule" and procedure["visibility"] == "tenant"
    assert procedure["trigger"] == REFUND_RULE["trigger"] and procedure["embedding_model"]

    read = api.get(f"/v1/procedures/{procedure['id']}")
    patched = api.patch(f"/v1/procedures/{procedure['id']}", {"content": "Refunds within 14 days only."})
    deleted = api.delete(f"/v1/procedures/{procedure['id']}")

    assert read.json == procedure
    assert patched.status == 200 and patched.json["content"] == "Refunds within 14 days only."
    assert deleted.status == 204
    assert api.get(f"/v1/procedures/{procedure['id']}").status == 404


def test_match_ranks_by_trigger_similarity_and_leaves_out_unrelated(api: Api) -> None:
    refund = api.post("/v1/procedures", REFUND_RULE).json
    sql = api.post("/v1/procedures", SQL_EXAMPLE).json
    api.post("/v1/procedures", {"trigger": "the weather is discussed", "content": "Never forecast."})

    found = api.post("/v1/procedures/match", {"situation": "I want my money back for this order", "limit": 5})
    examples = api.post(
        "/v1/procedures/match", {"situation": "count signups per day in SQL", "kind": "example"}
    )

    assert found.status == 200
    ids = [m["id"] for m in found.json["matches"]]
    assert ids[0] == refund["id"]
    assert sql["id"] not in ids
    similarities = [m["similarity"] for m in found.json["matches"]]
    assert similarities == sorted(similarities, reverse=True) and similarities[-1] >= 0.3
    assert [m["id"] for m in examples.json["matches"]] == [sql["id"]]


def test_patching_the_trigger_changes_what_it_matches(api: Api) -> None:
    procedure = api.post("/v1/procedures", REFUND_RULE).json
    api.patch(f"/v1/procedures/{procedure['id']}", {"trigger": "deploying to production on a Friday"})

    refund = api.post("/v1/procedures/match", {"situation": "a customer wants a refund"}).json
    deploy = api.post("/v1/procedures/match", {"situation": "can I deploy to prod this Friday?"}).json

    assert refund["matches"] == []
    assert [m["id"] for m in deploy["matches"]] == [procedure["id"]]


def test_private_procedures_are_seen_only_by_their_agent(api: Api) -> None:
    private = api.post(
        "/v1/procedures", {**REFUND_RULE, "agent_id": "support-bot", "visibility": "private"}
    ).json
    shared = api.post("/v1/procedures", {**REFUND_RULE, "content": "Be polite."}).json

    def matched(agent: str | None) -> set[str]:
        body = {"situation": "customer asks for a refund", **({"agent_id": agent} if agent else {})}
        return {m["id"] for m in api.post("/v1/procedures/match", body).json["matches"]}

    assert matched("support-bot") == {private["id"], shared["id"]}
    assert matched("sales-bot") == matched(None) == {shared["id"]}
    assert api.get(f"/v1/procedures/{private['id']}?agent_id=support-bot").status == 200
    assert api.get(f"/v1/procedures/{private['id']}?agent_id=sales-bot").status == 404
    assert api.delete(f"/v1/procedures/{private['id']}").status == 404
    listed = {p["id"] for p in api.get("/v1/procedures?agent_id=sales-bot").json["procedures"]}
    assert listed == {shared["id"]}


def test_only_its_agent_can_make_a_shared_procedure_private(api: Api) -> None:
    shared = api.post("/v1/procedures", {**REFUND_RULE, "agent_id": "support-bot"}).json

    by_other = api.patch(f"/v1/procedures/{shared['id']}?agent_id=sales-bot", {"visibility": "private"})
    by_owner = api.patch(f"/v1/procedures/{shared['id']}?agent_id=support-bot", {"visibility": "private"})

    assert by_other.status == 422 and by_other.json["error"]["field"] == "visibility"
    assert by_owner.status == 200 and by_owner.json["visibility"] == "private"
    assert api.get(f"/v1/procedures/{shared['id']}?agent_id=sales-bot").status == 404


def test_list_filters_by_kind_and_pages(api: Api) -> None:
    for i in range(3):
        api.post("/v1/procedures", {**REFUND_RULE, "content": f"rule {i}"})
    api.post("/v1/procedures", SQL_EXAMPLE)

    first = api.get("/v1/procedures?kind=rule&limit=2").json
    second = api.get(f"/v1/procedures?kind=rule&limit=2&cursor={first['next_cursor']}").json

    assert [p["content"] for p in first["procedures"]] == ["rule 2", "rule 1"]
    assert [p["content"] for p in second["procedures"]] == ["rule 0"] and second["next_cursor"] is None


def test_another_tenant_sees_nothing(api: Api, other_api: Api) -> None:
    procedure = api.post("/v1/procedures", REFUND_RULE).json

    assert other_api.get(f"/v1/procedures/{procedure['id']}").status == 404
    assert other_api.get("/v1/procedures").json["procedures"] == []
    assert other_api.post("/v1/procedures/match", {"situation": "customer refund"}).json["matches"] == []
    assert other_api.patch(f"/v1/procedures/{procedure['id']}", {"content": "x"}).status == 404


def test_procedure_errors(api: Api) -> None:
    procedure = api.post("/v1/procedures", REFUND_RULE).json

    assert api.post("/v1/procedures", {"content": "no trigger"}).json["error"]["field"] == "trigger"
    assert api.post("/v1/procedures", {**REFUND_RULE, "kind": "law"}).json["error"]["field"] == "kind"
    assert_invalid(api.post("/v1/procedures", {**REFUND_RULE, "visibility": "private"}), "body")
    assert_invalid(api.patch(f"/v1/procedures/{procedure['id']}", {}), "body")
    assert_invalid(api.patch(f"/v1/procedures/{procedure['id']}", {"trigger": None}), "trigger")
    assert_invalid(api.patch(f"/v1/procedures/{procedure['id']}", {"visibility": "private"}), "visibility")
    assert_invalid(api.post("/v1/procedures/match", {"situation": "  "}), "situation")
    assert api.post("/v1/procedures/match", {"situation": "x", "limit": 0}).json["error"]["field"] == "limit"
    assert api.get("/v1/procedures?cursor=garbage").json["error"]["field"] == "cursor"
    assert_invalid(api.get("/v1/procedures?kind=law"), "kind")
    assert api.get(f"/v1/procedures/{uuid.uuid4()}").status == 404
    assert api.get("/v1/procedures/not-an-id").status == 404
