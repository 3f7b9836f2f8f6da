"""Every entities / relations / observations endpoint, through the local gateway, with its errors."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from engram.graph import repo as graph_repo
from tests.conftest import Api, assert_invalid


def entity(api: Api, name: str, entity_type: str = "person", **extra: Any) -> dict[str, Any]:
    response = api.post("/v1/entities", {"name": name, "entity_type": entity_type, **extra})
    assert response.status in (200, 201), response.json
    return response.json


def memory(api: Api, content: str) -> str:
    # Extraction off: these tests make the graph themselves.
    response = api.post("/v1/memories", {"content": content, "extract": "none"})
    assert response.status == 201
    return str(response.json["id"])


# --- entities ---------------------------------------------------------------------------------


def test_creating_an_entity_twice_under_other_spellings_returns_the_first(api: Api) -> None:
    first = api.post("/v1/entities", {"name": "Dr. Alice Smith", "entity_type": "person", "aliases": ["Ali"]})
    again = api.post(
        "/v1/entities", {"name": "ALICE SMITH, PhD", "entity_type": "person", "aliases": ["A. Smith"]}
    )
    by_alias = api.post("/v1/entities", {"name": "ali", "entity_type": "person"})

    assert first.status == 201 and again.status == 200 and by_alias.status == 200
    assert first.json["entity_type"] == "person"
    assert again.json["id"] == by_alias.json["id"] == first.json["id"]
    assert again.json["aliases"] == ["Ali", "A. Smith"]
    assert len(api.get("/v1/entities").json["entities"]) == 1


def test_an_alias_that_names_another_entity_is_a_conflict(api: Api) -> None:
    entity(api, "Robert Jones", aliases=["Bob"])

    response = api.post("/v1/entities", {"name": "Bob Marley", "entity_type": "person", "aliases": ["bob"]})

    assert response.status == 409
    assert response.json["error"]["field"] == "aliases" and "'bob'" in response.json["error"]["message"]
    assert [e["name"] for e in api.get("/v1/entities").json["entities"]] == [
        "Robert Jones"
    ]  # nothing written


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "!!!"}, "name"),
        ({"name": "x" * 501}, "name"),
        ({"name": "Alice", "entity_type": "123"}, "entity_type"),
        ({"name": "Alice", "entity_type": ""}, "entity_type"),
        ({"name": "Alice", "aliases": "Ali"}, "aliases"),
        ({"name": "Alice", "aliases": ["a"] * 21}, "aliases"),
        ({"name": "Alice", "tenant_id": str(uuid.uuid4())}, "tenant_id"),
    ],
)
def test_invalid_entities_are_422_naming_the_field(api: Api, body: dict[str, Any], field: str) -> None:
    response = api.post("/v1/entities", body)

    assert_invalid(response, field)


@pytest.mark.parametrize(
    ("aliases", "field", "repeated"),
    [
        (["Dot"], "aliases[0]", "the name 'Dot'"),
        (["D. V.", "dot"], "aliases[1]", "the name 'Dot'"),
        (["Dotty", "DOTTY"], "aliases[1]", "aliases[0] 'Dotty'"),
    ],
)
def test_an_alias_that_repeats_the_name_or_another_alias_is_422_naming_it(
    api: Api, aliases: list[str], field: str, repeated: str
) -> None:
    # Given nothing stored

    # When an entity is sent with an alias that is the same key as its name or an earlier alias
    response = api.post("/v1/entities", {"name": "Dot", "entity_type": "person", "aliases": aliases})

    # Then it is refused, naming the alias and what it repeats, and nothing is stored
    assert_invalid(response, field)
    assert repeated in response.json["error"]["message"]
    assert api.get("/v1/entities").json["entities"] == []


def test_search_by_name_word_and_alias_with_type_filter_and_pages(api: Api) -> None:
    entity(api, "Alice Smith", aliases=["Ali"])
    entity(api, "Bob Smith")
    entity(api, "Smithsonian", "organization")
    entity(api, "Carol Jones")

    def names(query: str) -> list[str]:
        return [e["name"] for e in api.get(f"/v1/entities?{query}").json["entities"]]

    assert names("q=smith") == ["Alice Smith", "Bob Smith", "Smithsonian"]
    assert names("q=SMITH&type=person") == ["Alice Smith", "Bob Smith"]
    assert names("q=ali") == ["Alice Smith"]  # "ali" is an alias and a prefix of "alice"
    assert names("q=dr.%20carol%20jones") == ["Carol Jones"]
    assert names("q=nobody") == []
    seen, cursor = [], None
    while True:
        page = api.get("/v1/entities?limit=3" + (f"&cursor={cursor}" if cursor else "")).json
        seen += [e["name"] for e in page["entities"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == ["Alice Smith", "Bob Smith", "Carol Jones", "Smithsonian"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("q=%21%21", "q"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("cursor=bm9wZQ", "cursor"),
        ("q=", "q"),
        ("type=%3F%3F", "type"),
    ],
)
def test_bad_search_parameters_are_422(api: Api, query: str, field: str) -> None:
    response = api.get(f"/v1/entities?{query}")

    assert_invalid(response, field)


def test_an_entity_shows_its_observations_and_relations_with_pages(api: Api) -> None:
    alice = entity(api, "Alice")
    for i in range(3):
        assert (
            api.post(
                f"/v1/entities/{alice['id']}/observations", {"memory_id": memory(api, f"Alice fact {i}")}
            ).status
            == 201
        )
    for city in ("Paris", "Lyon", "Nice"):
        api.post(
            "/v1/relations",
            {
                "source": alice["id"],
                "relation_type": "visited",
                "target": {"name": city, "entity_type": "place"},
            },
        )

    first = api.get(f"/v1/entities/{alice['id']}?limit=2").json
    second = api.get(
        f"/v1/entities/{alice['id']}?limit=2&observations_cursor={first['observations_next_cursor']}"
        f"&relations_cursor={first['relations_next_cursor']}"
    ).json

    assert first["entity"]["id"] == alice["id"]
    assert [o["content"] for o in first["observations"] + second["observations"]] == [
        "Alice fact 2", "Alice fact 1", "Alice fact 0"
    ]  # fmt: skip
    assert [r["target"]["name"] for r in first["relations"] + second["relations"]] == [
        "Nice",
        "Lyon",
        "Paris",
    ]
    assert second["observations_next_cursor"] is None and second["relations_next_cursor"] is None


def test_unknown_and_malformed_entity_ids_are_404(api: Api) -> None:
    for path in (f"/v1/entities/{uuid.uuid4()}", "/v1/entities/not-a-uuid"):
        assert api.get(path).status == 404
        assert api.delete(path).status == 404
        assert api.post(f"{path}/observations", {"content": "x"}).status == 404


def test_deleting_an_entity_removes_its_relations_and_keeps_its_memories(api: Api) -> None:
    alice = entity(api, "Alice")
    bob = entity(api, "Bob")
    memory_id = memory(api, "Alice met Bob")
    api.post(f"/v1/entities/{alice['id']}/observations", {"memory_id": memory_id})
    api.post("/v1/relations", {"source": alice["id"], "relation_type": "knows", "target": bob["id"]})

    deleted = api.delete(f"/v1/entities/{alice['id']}")

    assert deleted.status == 204 and deleted.raw == b""
    assert api.get(f"/v1/entities/{alice['id']}").status == 404
    assert api.get(f"/v1/entities/{bob['id']}").json["relations"] == []
    assert api.get(f"/v1/memories/{memory_id}").status == 200
    assert api.delete(f"/v1/entities/{alice['id']}").status == 404


# --- observations -----------------------------------------------------------------------------


def test_an_observation_is_an_existing_memory_or_a_new_one(api: Api) -> None:
    alice = entity(api, "Alice")
    existing = memory(api, "Alice prefers tea")

    linked = api.post(
        f"/v1/entities/{alice['id']}/observations", {"memory_id": existing, "is_subject": False}
    )
    created = api.post(
        f"/v1/entities/{alice['id']}/observations",
        {"content": "Alice runs the Lisbon office", "container": "crm.people", "memory_type": "fact"},
    )

    assert (
        linked.status == 201 and linked.json["memory_id"] == existing and linked.json["is_subject"] is False
    )
    assert created.status == 201 and created.json["container"] == "crm.people" and created.json["is_subject"]
    stored = api.get(f"/v1/memories/{created.json['memory_id']}")
    assert stored.status == 200 and stored.json["content"] == "Alice runs the Lisbon office"
    found = api.post("/v1/search", {"query": "who runs the Lisbon office", "container": "crm.people"}).json
    assert found["results"][0]["id"] == created.json["memory_id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"memory_id": str(uuid.uuid4()), "content": "both"}, "body"),
        ({"content": ""}, "content"),
        ({"memory_id": "nope"}, "memory_id"),
        ({"content": "x", "extra": 1}, "extra"),
    ],
)
def test_an_observation_needs_exactly_one_of_memory_id_and_content(
    api: Api, body: dict[str, Any], field: str
) -> None:
    alice = entity(api, "Alice")

    response = api.post(f"/v1/entities/{alice['id']}/observations", body)

    assert_invalid(response, field)


def test_observing_an_unknown_memory_is_404_and_an_unknown_entity_stores_no_memory(api: Api) -> None:
    alice = entity(api, "Alice")

    unknown_memory = api.post(f"/v1/entities/{alice['id']}/observations", {"memory_id": str(uuid.uuid4())})
    unknown_entity = api.post(
        f"/v1/entities/{uuid.uuid4()}/observations", {"content": "orphan fact about nobody"}
    )

    assert unknown_memory.status == 404 and unknown_memory.json["error"]["field"] == "memory_id"
    assert unknown_entity.status == 404
    assert api.post("/v1/memories/list", {}).json["memories"] == []


def test_removing_an_observation_unlinks_but_keeps_the_memory(api: Api) -> None:
    alice = entity(api, "Alice")
    memory_id = memory(api, "Alice likes jazz")
    api.post(f"/v1/entities/{alice['id']}/observations", {"memory_id": memory_id})

    removed = api.delete(f"/v1/entities/{alice['id']}/observations/{memory_id}")

    assert removed.status == 204
    assert api.get(f"/v1/entities/{alice['id']}").json["observations"] == []
    assert api.get(f"/v1/memories/{memory_id}").status == 200
    assert api.delete(f"/v1/entities/{alice['id']}/observations/{memory_id}").status == 404
    assert api.delete(f"/v1/entities/{alice['id']}/observations/not-a-uuid").status == 404


# --- relations --------------------------------------------------------------------------------


def test_bring_your_own_triples_by_name_are_deduplicated_and_idempotent(api: Api) -> None:
    triple = {
        "source": {"name": "Dr. Alice Smith", "entity_type": "person"},
        "relation_type": "works_for",
        "target": {"name": "ACME Corp.", "entity_type": "organization"},
        "valid_from": "2024-01-01T00:00:00Z",
        "confidence": 0.8,
    }

    first = api.post("/v1/relations", triple)
    again = api.post("/v1/relations", {**triple, "source": {"name": "alice smith", "entity_type": "person"}})

    assert first.status == 201 and again.status == 200 and again.json["id"] == first.json["id"]
    assert first.json["relation_type"] == "works_for" and first.json["confidence"] == pytest.approx(0.8)
    assert first.json["valid_from"] == "2024-01-01T00:00:00Z" and first.json["current"] is True
    assert {e["name"] for e in api.get("/v1/entities").json["entities"]} == {"Dr. Alice Smith", "ACME Corp."}


WORKS_FOR_NASA = {
    "source": {"name": "Dorothy Vaughan", "entity_type": "person"},
    "relation_type": "works_for",
    "target": {"name": "NASA", "entity_type": "organization"},
    "valid_from": "2020-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"valid_from": "2021-01-01T00:00:00Z", "valid_to": "2022-01-01T00:00:00Z"}, "valid_from"),
        ({"valid_to": "2022-01-01T00:00:00Z"}, "valid_to"),
        ({"confidence": 0.5}, "confidence"),
    ],
)
def test_the_same_triple_sent_with_other_values_is_a_409_naming_the_relation(
    api: Api, change: dict[str, Any], field: str
) -> None:
    # Given the triple, stored
    first = api.post("/v1/relations", WORKS_FOR_NASA)
    assert first.status == 201, first.json

    # When the same triple is sent with another validity or confidence
    again = api.post("/v1/relations", {**WORKS_FOR_NASA, **change})

    # Then it is refused, naming the relation and the field that differs, and the relation is unchanged
    assert again.status == 409, again.json
    error = again.json["error"]
    assert (error["code"], error["field"]) == ("conflict", field)
    assert first.json["id"] in error["message"] and "DELETE /v1/relations/" in error["message"]
    (stored,) = api.get(f"/v1/entities/{first.json['source']['id']}").json["relations"]
    assert stored == first.json


def test_repeating_a_triple_without_valid_from_finds_the_one_stored(api: Api) -> None:
    # Given a triple sent without valid_from (it began when it was stored)
    triple = {key: value for key, value in WORKS_FOR_NASA.items() if key != "valid_from"}
    first = api.post("/v1/relations", triple)

    # When the same request is sent again, later
    again = api.post("/v1/relations", triple)

    # Then it is the stored relation (the default "now" is not a different start)
    assert first.status == 201 and again.status == 200, again.json
    assert again.json == first.json


def test_a_relation_can_cite_its_source_memory_and_ends_with_its_validity(api: Api) -> None:
    memory_id = memory(api, "Alice worked at Initech until 2020")
    body = {
        "source": {"name": "Alice", "entity_type": "person"},
        "relation_type": "works_for",
        "target": {"name": "Initech", "entity_type": "organization"},
        "valid_from": "2015-01-01T00:00:00Z",
        "valid_to": "2020-01-01T00:00:00Z",
        "source_memory_id": memory_id,
    }

    created = api.post("/v1/relations", body).json

    assert created["source_memory_id"] == memory_id and created["current"] is False
    assert created["valid_to"] == "2020-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"relation_type": "???"}, 422, "relation_type"),
        ({"target": "not-an-id"}, 422, "target"),
        ({"valid_to": "2000-01-01T00:00:00Z", "valid_from": "2001-01-01T00:00:00Z"}, 422, "body"),
        ({"confidence": 2}, 422, "confidence"),
        ({"target": str(uuid.uuid4())}, 404, "target"),
        ({"source_memory_id": str(uuid.uuid4())}, 404, "source_memory_id"),
        ({"tenant_id": str(uuid.uuid4())}, 422, "tenant_id"),
    ],
)
def test_bad_relations_are_refused(api: Api, change: dict[str, Any], status: int, field: str) -> None:
    alice = entity(api, "Alice")
    body = {"source": alice["id"], "relation_type": "knows", "target": {"name": "Bob"}, **change}

    response = api.post("/v1/relations", body)

    assert response.status == status, response.json
    assert response.json["error"]["code"] == ("validation_error" if status == 422 else "not_found")
    assert response.json["error"]["field"].startswith(field)


def test_a_relation_from_an_entity_to_itself_is_422(api: Api) -> None:
    alice = entity(api, "Alice Smith")

    response = api.post(
        "/v1/relations",
        {
            "source": alice["id"],
            "relation_type": "knows",
            "target": {"name": "alice smith", "entity_type": "person"},
        },
    )

    assert_invalid(response, "target")
    assert "two different entities" in response.json["error"]["message"]


def test_deleting_a_relation(api: Api) -> None:
    created = api.post(
        "/v1/relations", {"source": {"name": "A"}, "relation_type": "knows", "target": {"name": "B"}}
    ).json

    assert api.delete(f"/v1/relations/{created['id']}").status == 204
    assert api.delete(f"/v1/relations/{created['id']}").status == 404
    assert api.delete("/v1/relations/not-a-uuid").status == 404


# --- what a private memory gave the graph ---------------------------------------------------------


def alices_private_fact(api: Api) -> tuple[str, dict[str, Any]]:
    """Alice's private memory "Alice lives in Paris." and the lives_in relation extraction made of it."""
    created = api.post(
        "/v1/memories",
        {"content": "Alice lives in Paris.", "user_id": "alice", "visibility": "private", "extract": "light"},
    )
    assert created.status == 201, created.json
    (relation,) = api.get("/v1/graph?entity=Alice&user_id=alice").json["edges"]
    assert relation["source_memory_id"] == created.json["id"]
    return str(created.json["id"]), relation


def test_a_relation_from_a_private_memory_is_not_found_to_a_delete_made_for_nobody(api: Api) -> None:
    # Given a relation extracted from Alice's private memory (hidden from requests not made for her)
    _, relation = alices_private_fact(api)

    # When a request made for nobody, and one made for Bob, delete it
    anonymous = api.delete(f"/v1/relations/{relation['id']}")
    bob = api.delete(f"/v1/relations/{relation['id']}?user_id=bob")

    # Then both are a 404, as reading it is, and Alice still has it
    assert anonymous.status == 404 and bob.status == 404, (anonymous.json, bob.json)
    edges = api.get("/v1/graph?entity=Alice&user_id=alice").json["edges"]
    assert [e["id"] for e in edges] == [relation["id"]]


def test_the_owner_deletes_a_relation_from_her_private_memory_with_user_id(api: Api) -> None:
    # Given a relation extracted from Alice's private memory
    _, relation = alices_private_fact(api)

    # When a request made for Alice deletes it
    deleted = api.delete(f"/v1/relations/{relation['id']}?user_id=alice")

    # Then it is gone for her too
    assert deleted.status == 204, deleted.json
    assert api.get("/v1/graph?entity=Alice&user_id=alice").json["edges"] == []


def test_an_observation_from_a_private_memory_is_not_found_to_a_delete_made_for_nobody(api: Api) -> None:
    # Given Alice's private memory, an observation of the entity Paris
    memory_id, relation = alices_private_fact(api)
    paris = relation["target"]["id"]

    # When a request made for nobody, and one made for Bob, unlink it
    anonymous = api.delete(f"/v1/entities/{paris}/observations/{memory_id}")
    bob = api.delete(f"/v1/entities/{paris}/observations/{memory_id}?user_id=bob")

    # Then both are a 404, and the observation is still there for Alice
    assert anonymous.status == 404 and bob.status == 404, (anonymous.json, bob.json)
    observations = api.get(f"/v1/entities/{paris}?user_id=alice").json["observations"]
    assert [o["memory_id"] for o in observations] == [memory_id]


def test_the_owner_unlinks_an_observation_of_her_private_memory_with_user_id(api: Api) -> None:
    # Given Alice's private memory, an observation of the entity Paris
    memory_id, relation = alices_private_fact(api)
    paris = relation["target"]["id"]

    # When a request made for Alice unlinks it
    unlinked = api.delete(f"/v1/entities/{paris}/observations/{memory_id}?user_id=alice")

    # Then the observation is gone and the memory stays
    assert unlinked.status == 204, unlinked.json
    assert api.get(f"/v1/entities/{paris}?user_id=alice").json["observations"] == []
    assert api.get(f"/v1/memories/{memory_id}?user_id=alice").status == 200


# --- graph parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ("", 422, "entity"),
        ("entity=Alice&depth=0", 422, "depth"),
        ("entity=Alice&depth=5", 422, "depth"),
        ("entity=Alice&limit=201", 422, "limit"),
        ("entity=Alice&as_of=yesterday", 422, "as_of"),
        ("entity=Alice&cursor=%5B%5D", 422, "cursor"),
        ("entity=Nobody", 404, "entity"),
        (f"entity={uuid.uuid4()}", 404, None),
    ],
)
def test_bad_graph_requests(api: Api, query: str, status: int, field: str | None) -> None:
    entity(api, "Alice")

    response = api.get(f"/v1/graph?{query}")

    assert response.status == status, response.json
    if field:
        assert response.json["error"]["field"] == field


def test_a_name_that_names_several_entities_asks_for_an_id(api: Api) -> None:
    entity(api, "Paris", "person")
    entity(api, "Paris", "place")

    response = api.get("/v1/graph?entity=paris")

    assert response.status == 409 and "pass an id" in response.json["error"]["message"]


def test_every_graph_route_needs_a_key(anonymous_api: Api) -> None:
    some = uuid.uuid4()
    calls = [
        ("GET", "/v1/entities", None),
        ("POST", "/v1/entities", {"name": "x"}),
        ("GET", f"/v1/entities/{some}", None),
        ("DELETE", f"/v1/entities/{some}", None),
        ("POST", f"/v1/entities/{some}/observations", {"content": "x"}),
        ("DELETE", f"/v1/entities/{some}/observations/{some}", None),
        ("POST", "/v1/relations", {}),
        ("DELETE", f"/v1/relations/{some}", None),
        ("GET", "/v1/graph?entity=x", None),
    ]
    for method, path, body in calls:
        assert anonymous_api.call(method, path, body).status == 401, (method, path)


def test_a_new_observation_memory_is_stored_with_its_link_or_not_at_all(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given linking the new memory to the entity fails (the database refuses the mention)
    alice = entity(api, "Alice")

    def refuse(*args: Any) -> None:
        raise RuntimeError("the mention could not be written")

    monkeypatch.setattr(graph_repo, "add_mention", refuse)

    # When an observation with a new memory is added
    response = api.post(f"/v1/entities/{alice['id']}/observations", {"content": "Alice moved to Porto"})

    # Then the request fails and the memory it would have stored is not there either
    assert response.status == 500
    assert api.post("/v1/memories/list", {}).json["memories"] == []


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/entities?q=%20%20", "q"),
        ("/v1/entities?type=%20", "type"),
        ("/v1/graph?entity=%20%20", "entity"),
    ],
)
def test_a_name_of_only_whitespace_is_refused_not_read_as_none(api: Api, path: str, field: str) -> None:
    # ?entity=%20%20 was looked up as a name (a 404, no entity named '  '), while ?entity= was a 422
    api.post("/v1/entities", {"name": "Ada Lovelace", "entity_type": "person"})

    assert_invalid(api.get(path), field)
