"""GET /v1/memories/{id}/related (memory relationships up to a depth, and shared entities) and
include_related in search."""

from __future__ import annotations

from engram import deps
from engram.graph import relationships
from engram.graph.linking import link_memory
from engram.memory_extraction import ExtractedEntity
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid


def _store(api: Api, content: str, **body: object) -> dict:
    # Extraction off: these tests link memories to entities themselves.
    response = api.post(
        "/v1/memories", {"content": content, "container": "people", "extract": "none", **body}
    )
    assert response.status == 201, response.json
    return dict(response.json)


def test_related_walks_relationships_to_a_depth_and_shared_entities(api: Api, tenant: IssuedKey) -> None:
    first = _store(api, "Alice lives in Paris", valid_from="2026-01-05T09:00:00Z")
    second = _store(api, "Alice moved to Berlin", valid_from="2026-01-09T09:00:00Z", supersedes=first["id"])
    third = _store(api, "Alice moved to Rome", valid_from="2026-01-20T09:00:00Z", supersedes=second["id"])
    tea = _store(api, "Alice likes green tea")
    alice = ExtractedEntity(name="Alice", type="person")
    for memory in (third, tea):
        with deps.database().tenant(tenant.tenant_id) as cur:
            link_memory(cur, tenant.tenant_id, memory["id"], [alice], [], "Alice")

    one = api.get(f"/v1/memories/{third['id']}/related").json["related"]
    two = api.get(f"/v1/memories/{third['id']}/related?depth=2").json["related"]

    assert [(r["id"], r["relationship"], r["direction"], r["depth"]) for r in one] == [
        (second["id"], "updates", "outgoing", 1),
        (tea["id"], "shares_entity", "shared", 1),
    ]
    assert one[1]["shared_entities"] == ["Alice"]
    assert [(r["id"], r["depth"], r["via"]) for r in two if r["relationship"] == "updates"] == [
        (second["id"], 1, None),
        (first["id"], 2, second["id"]),
    ]
    back = api.get(f"/v1/memories/{first['id']}/related").json["related"]
    assert [(r["id"], r["direction"]) for r in back] == [(second["id"], "incoming")]
    assert_invalid(api.get(f"/v1/memories/{third['id']}/related?depth=9"), "depth")
    assert api.get("/v1/memories/00000000-0000-4000-8000-000000000000/related").status == 404

    found = api.post(
        "/v1/search", {"query": "where does Alice live", "container": "people", "include_related": True}
    ).json["results"]
    rome = next(r for r in found if r["id"] == third["id"])
    assert {(r["id"], r["relationship"]) for r in rome["related"]} == {
        (second["id"], "updates"),
        (tea["id"], "shares_entity"),
    }
    plain = api.post("/v1/search", {"query": "where does Alice live", "container": "people"}).json["results"]
    assert all(r["related"] is None for r in plain)


def test_memories_sharing_more_entities_come_first_with_every_shared_name(
    api: Api, tenant: IssuedKey
) -> None:
    trip = _store(api, "Alice and Bob flew to Lisbon")
    both = _store(api, "Bob and Alice booked the Lisbon hotel")
    one = _store(api, "Alice likes green tea")
    other = _store(api, "Carol runs the Porto office")
    alice, bob, lisbon, carol = (
        ExtractedEntity(name=n, type=t)
        for n, t in (("Alice", "person"), ("Bob", "person"), ("Lisbon", "place"), ("Carol", "person"))
    )
    for memory, entities in (
        (trip, [alice, bob, lisbon]),
        (both, [bob, alice, lisbon]),
        (one, [alice]),
        (other, [carol]),
    ):
        with deps.database().tenant(tenant.tenant_id) as cur:
            link_memory(cur, tenant.tenant_id, memory["id"], entities, [], memory["content"])

    related = api.get(f"/v1/memories/{trip['id']}/related").json["related"]

    assert [(r["id"], r["relationship"], r["shared_entities"]) for r in related] == [
        (both["id"], "shares_entity", ["Alice", "Bob", "Lisbon"]),
        (one["id"], "shares_entity", ["Alice"]),
    ]


def test_related_of_another_tenants_memory_is_not_found(api: Api, other_api: Api) -> None:
    memory = _store(api, "Alice lives in Paris")

    assert other_api.get(f"/v1/memories/{memory['id']}/related").status == 404


def test_a_memory_reached_by_paths_of_equal_length_names_one_of_them_every_time(
    api: Api, tenant: IssuedKey
) -> None:
    # Given: start -> a -> goal and start <- b -> goal, both `extends` (a diamond of equal paths)
    start, a, b, goal = (_store(api, text)["id"] for text in ("start", "left", "right", "goal"))
    with deps.database().tenant(tenant.tenant_id) as cur:
        for source, target in ((start, a), (b, start), (a, goal), (b, goal)):
            relationships.add(cur, tenant.tenant_id, source, target, "extends", 0.9, {})

    # When: the walk is read again and again
    answers = {
        tuple(
            (r["id"], r["via"], r["direction"])
            for r in api.get(f"/v1/memories/{start}/related?depth=2").json["related"]
        )
        for _ in range(8)  # past the five calls after which a session may keep one plan for the walk
    }

    # Then: one answer, by a rule rather than the plan's luck: of equal paths, the one whose last step
    # is outgoing, then the one through the smaller id
    assert len(answers) == 1
    reached = {memory_id: (via, direction) for memory_id, via, direction in answers.pop()}
    assert reached[goal] == (min(a, b), "outgoing")


def test_a_private_memory_on_the_way_is_walked_through_and_named_only_to_its_user(
    api: Api, tenant: IssuedKey
) -> None:
    # Given: start -> middle -> end, `extends`, and the middle memory private to Carol
    start, end = (_store(api, text)["id"] for text in ("start", "end"))
    middle = _store(api, "middle", user_id="carol", visibility="private")["id"]
    with deps.database().tenant(tenant.tenant_id) as cur:
        for source, target in ((start, middle), (middle, end)):
            relationships.add(cur, tenant.tenant_id, source, target, "extends", 0.9, {})

    # When / Then: read again and again, past the calls after which a session may keep one plan
    for _ in range(8):
        others = api.get(f"/v1/memories/{start}/related?depth=2").json["related"]
        carol = api.get(f"/v1/memories/{start}/related?depth=2&user_id=carol").json["related"]
        # the private memory is not named to others, not even as the way to `end`
        assert [(r["id"], r["depth"], r["via"]) for r in others] == [(end, 2, None)]
        assert [(r["id"], r["depth"], r["via"]) for r in carol] == [(middle, 1, None), (end, 2, middle)]
