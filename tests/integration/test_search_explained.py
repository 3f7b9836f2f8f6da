"""A search result explains itself: every share its fused score adds up is a field of `scores` under
its own name, and the response's `weights` say how much each counts, so a caller rebuilds `fused`
from them (the time leg, the people the query names, the query's idf coverage and the entity graph
each under their own name)."""

from __future__ import annotations

from typing import Any

import pytest

from engram.memories.search import fusion
from tests.conftest import Api
from tests.integration.documents_helpers import ingest

# (text, session date): the time leg dates them.
TURNS = [
    ("Ana: I adopted a puppy named Rex.", "3 June 2023"),
    ("Ana: I painted a sunset over the lake.", "17 June 2023"),
    ("Ana: In June 2023 the bakery closed for a week.", "2 January 2024"),
    ("Ana: We went hiking in the Alps.", "20 August 2023"),
    ("Ben: My sister plays the violin in an orchestra.", "3 June 2023"),
]
TOBIAS = "Tobias repaired the old tractor"
# Queries that bring in each leg: time (and the people it names), the entity graph, people without an
# entity, plain words; one of them through a document's chunk as well.
QUERIES = [
    "What did Ana do in June 2023?",
    "what did Katherine Johnson do",
    "What did Tobias fix?",
    "which tractor was repaired",
    "wind tunnel maintenance schedule",
]


def _given_memories_of_every_kind(api: Api) -> dict[str, str]:
    ids = {}
    for text, day in TURNS:
        body = {"content": text, "container": "chat", "metadata": {"session_date": day}, "extract": "none"}
        reply = api.post("/v1/memories", body)
        assert reply.status == 201, reply.json
        ids[text] = str(reply.json["id"])
    katherine = api.post(
        "/v1/entities", {"name": "Katherine Johnson", "entity_type": "person", "aliases": ["KJ"]}
    ).json
    observed = api.post(
        f"/v1/entities/{katherine['id']}/observations",
        {"content": "KJ checked the numbers by hand.", "container": "chat"},
    ).json
    ids["KJ"] = str(observed["memory_id"])
    reply = api.post("/v1/memories", {"content": TOBIAS, "container": "chat", "extract": "none"})
    ids[TOBIAS] = str(reply.json["id"])
    ingest(api, {"content": "The wind tunnel maintenance schedule moves to Thursdays.", "container": "chat"})
    return ids


def _search(api: Api, query: str, **body: Any) -> dict[str, Any]:
    reply = api.post("/v1/search", {"query": query, "container": "chat", "limit": 20} | body)
    assert reply.status == 200, reply.json
    return dict(reply.json)


def _rebuilt(result: dict[str, Any], weights: dict[str, float]) -> float:
    return sum(weight * (result["scores"][name] or 0.0) for name, weight in weights.items())


def test_the_weighted_shares_rebuild_every_hybrid_results_fused_score(api: Api) -> None:
    # Given memories the time, graph, people and text legs each find, and a document's chunk
    _given_memories_of_every_kind(api)

    # When each query is searched in hybrid mode
    answers = [_search(api, query) for query in QUERIES]

    # Then the response names the weight of every share, under the names of `scores`
    assert all(answer["weights"] == fusion.HYBRID_WEIGHTS for answer in answers)
    results = [r for answer in answers for r in answer["results"]]
    # and every result's fused score is the weighted sum of its shares
    for result in results:
        assert _rebuilt(result, fusion.HYBRID_WEIGHTS) == pytest.approx(result["scores"]["fused"], abs=1e-6)
    # and each share was at work in some result (time and people, graph, BM25, idf coverage, chunks)
    for name in fusion.HYBRID_WEIGHTS:
        assert any(r["scores"][name] for r in results), name
    assert {r["kind"] for r in results} == {"memory", "chunk"}


def test_single_leg_modes_weigh_their_own_leg_whole(api: Api) -> None:
    _given_memories_of_every_kind(api)

    for mode, name in (("vector", "vector"), ("text", "text")):
        answer = _search(api, "which tractor was repaired", mode=mode)

        assert answer["weights"] == {name: 1.0}
        for result in answer["results"]:
            assert result["scores"]["fused"] == result["score"] == result["scores"][name]
            assert _rebuilt(result, answer["weights"]) == pytest.approx(result["scores"]["fused"], abs=1e-6)


def test_the_time_leg_shows_its_share_under_time(api: Api) -> None:
    ids = _given_memories_of_every_kind(api)

    found = {r["id"]: r for r in _search(api, "What did Ana do in June 2023?")["results"]}

    stated = found[ids["Ana: In June 2023 the bakery closed for a week."]]
    of_june = found[ids["Ana: I adopted a puppy named Rex."]]
    august = found.get(ids["Ana: We went hiking in the Alps."])
    assert stated["scores"]["time"] == 1.0  # its text states the period
    assert of_june["scores"]["time"] == fusion.OWN_DAY_MATCH  # it is only from the period
    assert august is None or august["scores"]["time"] is None


def test_a_name_no_entity_has_is_a_people_share_not_a_graph_one(api: Api) -> None:
    # Given a memory naming Tobias, and no entity of that name
    ids = _given_memories_of_every_kind(api)
    assert api.get("/v1/entities?q=Tobias").json["entities"] == []

    # When a query names him
    found = {r["id"]: r for r in _search(api, "What did Tobias fix?")["results"]}

    # Then the memory's share is under people (weight 0.1), and the entity graph adds nothing
    tobias = found[ids[TOBIAS]]
    assert tobias["scores"]["people"] == 1.0
    assert tobias["scores"]["graph"] is None
    assert all(r["scores"]["graph"] is None for r in found.values())
