"""The graph leg of hybrid search: memories that mention an entity the query names join the pool,
ranked by how many of the query's entities they mention, with their part in scores.graph."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api

DISTRACTORS = [
    "Katherine Jones presented the quarterly budget.",
    "Johnson and Partners did the audit last spring.",
    "The orbital team reviewed the trajectory numbers twice.",
    "Mission control approved the revised flight plan.",
    "What did the committee decide about the launch?",
    "Dorothy Vaughan led the computing group.",
    "Mary Jackson became the first black female engineer there.",
]


def _katherine(api: Api, container: str = "nasa") -> str:
    entity = api.post(
        "/v1/entities", {"name": "Katherine Johnson", "entity_type": "person", "aliases": ["KJ"]}
    )
    assert entity.status == 201, entity.json
    observed = api.post(
        f"/v1/entities/{entity.json['id']}/observations",
        {"content": "KJ checked the numbers by hand.", "container": container},
    )
    assert observed.status == 201, observed.json
    for text in DISTRACTORS:
        body = {"content": text, "container": container, "extract": "none"}
        assert api.post("/v1/memories", body).status == 201
    return str(observed.json["memory_id"])


def _search(api: Api, **body: Any) -> list[dict[str, Any]]:
    response = api.post("/v1/search", {"query": "what did Katherine Johnson do", "limit": 3} | body)
    assert response.status == 200, response.json
    return list(response.json["results"])


def test_a_memory_that_names_an_entity_only_by_alias_is_found_through_it(api: Api) -> None:
    kat = _katherine(api)

    hybrid = _search(api, limit=10)
    vector = _search(api, mode="vector")
    text = _search(api, mode="text")

    found = {r["id"]: r for r in hybrid}
    assert found[kat]["scores"]["graph"] == 1.0 and found[kat]["scores"]["text"] is None
    assert [r["scores"]["graph"] for r in hybrid if r["id"] != kat] == [None] * (len(hybrid) - 1)
    assert kat not in [r["id"] for r in text]  # no word of the query is in it
    # The graph leg lifts it above memories closer to the query by vector.
    position = [r["id"] for r in hybrid].index(kat)
    closer = [r for r in hybrid if (r["scores"]["vector"] or 0) > found[kat]["scores"]["vector"]]
    assert any([r["id"] for r in hybrid].index(r["id"]) > position for r in closer)
    assert [r["scores"]["graph"] for r in vector] == [None] * len(vector)


def test_the_graph_leg_obeys_filters_and_tenants(api: Api, other_api: Api) -> None:
    kat = _katherine(api, container="nasa.flight")

    assert kat not in [r["id"] for r in _search(api, container="other")]
    assert kat in [r["id"] for r in _search(api, container="nasa.*")]
    assert kat not in [r["id"] for r in _search(api, filters={"memory_type": ["task"]})]
    assert _search(other_api) == []


def test_a_tenants_first_entity_is_searched_through_by_the_next_search(api: Api) -> None:
    # Given a tenant with memories and no entity, searched once (its graph leg is only checked)
    for text in DISTRACTORS:
        assert (
            api.post("/v1/memories", {"content": text, "container": "nasa", "extract": "none"}).status == 201
        )
    before = _search(api, limit=10)

    # When its first entity is added, with a memory that names it only by alias
    entity = api.post(
        "/v1/entities", {"name": "Katherine Johnson", "entity_type": "person", "aliases": ["KJ"]}
    )
    kat = api.post(
        f"/v1/entities/{entity.json['id']}/observations",
        {"content": "KJ checked the numbers by hand.", "container": "nasa"},
    ).json["memory_id"]

    # Then the next search finds that memory through the graph leg
    after = {r["id"]: r for r in _search(api, limit=10)}
    assert [r["scores"]["graph"] for r in before] == [None] * len(before)
    assert after[str(kat)]["scores"]["graph"] == 1.0
