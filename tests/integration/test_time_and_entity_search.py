"""Hybrid search follows the time a query names and the people it is about: memories are dated when they
are written (memory_periods, migration 0021), a query's period is read against the searched memories'
latest day, "before the move" finds the move first, and memories of entities one relation away from the
query's are reached, with their part in scores.graph."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api

# (text, session date): one person's conversation over a year, and what else she talks about.
TURNS = [
    ("Ana: I live in a small flat in Porto, near the river.", "10 January 2023"),
    ("Ana: We finally moved to Lisbon this week!", "1 March 2023"),
    ("Ana: My new flat in Lisbon has a big balcony.", "12 April 2023"),
    ("Ana: I adopted a puppy named Rex.", "3 June 2023"),
    ("Ana: I painted a sunset over the lake.", "17 June 2023"),
    ("Ana: We went hiking in the Alps.", "20 August 2023"),
    ("Ana: I started a new job at the bakery.", "2 January 2024"),
    ("Ben: My sister plays the violin in an orchestra.", "3 June 2023"),
    ("Ana: The weather has been lovely, I walk every day.", "5 September 2023"),
    ("Ana: I read a novel about sailors.", "12 October 2023"),
]


def _write(api: Api, container: str = "chat") -> dict[str, str]:
    ids = {}
    for text, day in TURNS:
        reply = api.post(
            "/v1/memories",
            {
                "content": text,
                "container": container,
                "memory_type": "episode",
                "metadata": {"session_date": day},
            },
        )
        assert reply.status == 201, reply.json
        ids[text] = str(reply.json["id"])
    return ids


def _search(api: Api, query: str, **body: Any) -> list[dict[str, Any]]:
    reply = api.post("/v1/search", {"query": query, "container": "chat", "limit": 3} | body)
    assert reply.status == 200, reply.json
    return list(reply.json["results"])


def _texts(results: list[dict[str, Any]]) -> list[str]:
    return [r["content"] for r in results]


def test_a_query_that_names_a_month_finds_that_months_memories(api: Api) -> None:
    _write(api)

    named = _texts(_search(api, "What did Ana do in June 2023?"))
    relative = _texts(_search(api, "What did Ana do last June?"))  # read against January 2024
    plain = _texts(_search(api, "What did Ana do?"))

    june = {"Ana: I adopted a puppy named Rex.", "Ana: I painted a sunset over the lake."}
    assert set(named[:2]) == june
    assert set(relative[:2]) == june
    assert not june <= set(plain[:2])  # the month, not the words, brought them up


def test_before_an_event_is_before_the_day_of_the_memory_that_tells_it(api: Api) -> None:
    _write(api)

    found = _texts(_search(api, "Where did Ana live before the move?"))

    porto = "Ana: I live in a small flat in Porto, near the river."
    assert found[0] == porto
    assert "Ana: My new flat in Lisbon has a big balcony." not in found[:2]


def test_the_time_leg_obeys_containers_and_tenants(api: Api, other_api: Api) -> None:
    _write(api, container="chat")
    _write(api, container="elsewhere")

    results = _search(api, "What did Ana do in June 2023?", limit=10)

    assert {r["container"] for r in results} == {"chat"}
    assert _search(other_api, "What did Ana do in June 2023?") == []


def test_memories_of_an_entity_one_relation_away_are_reached_and_explained(api: Api) -> None:
    katherine = api.post("/v1/entities", {"name": "Katherine Johnson", "entity_type": "person"}).json
    lab = api.post("/v1/entities", {"name": "Langley Research Center", "entity_type": "organization"}).json
    assert (
        api.post(
            "/v1/relations",
            {"source": katherine["id"], "relation_type": "works_for", "target": lab["id"]},
        ).status
        == 201
    )
    observed = api.post(
        f"/v1/entities/{lab['id']}/observations",
        {"content": "They bought two new wind tunnels.", "container": "chat"},
    ).json
    for text, _ in TURNS:
        assert api.post("/v1/memories", {"content": text, "container": "chat"}).status == 201

    results = _search(api, "What changed at Katherine Johnson's workplace?", limit=10)
    by_id = {r["id"]: r for r in results}
    unrelated = _search(api, "What changed at the workplace?", limit=10)

    reached = by_id[str(observed["memory_id"])]
    assert reached["scores"]["graph"] == 0.5  # one relation away: half an entity the query names
    assert reached["scores"]["text"] is None  # none of the query's words is in it
    assert results.index(reached) < [r["id"] for r in unrelated].index(reached["id"])
    assert [r["scores"]["graph"] for r in results if r is not reached] == [None] * (len(results) - 1)


def test_a_memory_that_names_a_person_of_the_query_ranks_higher(api: Api) -> None:
    for text in (
        "Maria mentioned that the concert was loud.",
        "The concert hall was renovated last year.",
        "Tickets for the concert sold out quickly.",
        "A concert review praised the violinist.",
    ):
        assert api.post("/v1/memories", {"content": text, "container": "chat"}).status == 201

    results = _search(api, "What did Maria think of the concert?", limit=4)

    assert results[0]["content"] == "Maria mentioned that the concert was loud."
    assert results[0]["scores"]["graph"] == 1.0
    assert [r["scores"]["graph"] for r in results[1:]] == [None] * 3
