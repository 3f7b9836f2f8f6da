"""Conversations: sessions and ordered messages, recall, message search, extraction, scoping to the
user/agent pair, errors, and concurrent appends."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from engram import deps
from engram.db.database import Party
from engram.memories.search import fusion
from engram.sessions.models import MessageIn, MessagesAppend
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid

ALICE = "user_id=alice&agent_id=concierge"


def _session(api: Api, user: str | None = "alice", agent: str | None = "concierge", **extra: Any) -> str:
    body = {k: v for k, v in {"user_id": user, "agent_id": agent, **extra}.items() if v is not None}
    response = api.post("/v1/sessions", body)
    assert response.status == 201, response.json
    return str(response.json["id"])


def _say(
    api: Api, session_id: str, *turns: tuple[str, str], query: str = ALICE, extract: bool = False
) -> Any:
    body = {"messages": [{"role": r, "content": c} for r, c in turns], "extract": extract}
    response = api.post(f"/v1/sessions/{session_id}/messages?{query}", body)
    assert response.status == 201, response.json
    return response.json


def test_a_conversation_is_logged_in_order_and_recalled(api: Api) -> None:
    session_id = _session(api, metadata={"channel": "web"})
    _say(api, session_id, ("user", "Hi, can you book a table for two?"), ("assistant", "Sure, for when?"))
    appended = _say(api, session_id, ("user", "Friday at 8pm, please."))

    conversation = api.get(f"/v1/sessions/{session_id}?{ALICE}").json

    assert [m["seq"] for m in appended["messages"]] == [3]
    assert conversation["session"]["message_count"] == 3
    assert conversation["session"]["metadata"] == {"channel": "web"}
    assert [(m["seq"], m["role"], m["content"]) for m in conversation["messages"]] == [
        (1, "user", "Hi, can you book a table for two?"),
        (2, "assistant", "Sure, for when?"),
        (3, "user", "Friday at 8pm, please."),
    ]
    assert conversation["next_after"] is None


def test_conversation_pages_and_recent_returns_the_latest_oldest_first(api: Api) -> None:
    session_id = _session(api)
    _say(api, session_id, *[("user", f"message {i}") for i in range(1, 6)])

    page = api.get(f"/v1/sessions/{session_id}?{ALICE}&limit=2&after=1").json
    recent = api.post(f"/v1/sessions/{session_id}/recent?{ALICE}&limit=2").json

    assert [m["seq"] for m in page["messages"]] == [2, 3] and page["next_after"] == 3
    assert [m["content"] for m in recent["messages"]] == ["message 4", "message 5"]


def test_list_sessions_of_a_user_with_summaries_and_pages(api: Api) -> None:
    first = _session(api)
    second = _session(api, agent="planner")
    _session(api, user="bob")
    _say(api, first, ("user", "x" * 300))

    page = api.get("/v1/sessions?user_id=alice&limit=1").json
    rest = api.get(f"/v1/sessions?user_id=alice&limit=1&cursor={page['next_cursor']}").json
    only_planner = api.get("/v1/sessions?user_id=alice&agent_id=planner").json

    assert [s["id"] for s in page["sessions"]] == [second]
    assert page["sessions"][0]["last_message"] is None and page["sessions"][0]["message_count"] == 0
    assert [s["id"] for s in rest["sessions"]] == [first] and rest["next_cursor"] is None
    assert rest["sessions"][0]["message_count"] == 1
    assert rest["sessions"][0]["last_message"]["preview"] == "x" * 200
    assert [s["id"] for s in only_planner["sessions"]] == [second]


def test_delete_removes_the_session_and_its_messages(api: Api) -> None:
    session_id = _session(api)
    _say(api, session_id, ("user", "My badge number is 77812."))

    deleted = api.delete(f"/v1/sessions/{session_id}?{ALICE}")

    assert deleted.status == 204
    assert api.get(f"/v1/sessions/{session_id}?{ALICE}").status == 404
    assert api.delete(f"/v1/sessions/{session_id}?{ALICE}").status == 404
    found = api.post("/v1/search", {"query": "badge number", "scope": "messages", "user_id": "alice"}).json
    assert found["results"] == []


def test_messages_are_searchable_for_their_user_or_agent_only(api: Api) -> None:
    alices = _session(api)
    bobs = _session(api, user="bob")
    _say(api, alices, ("user", "My flight to Oslo leaves at 7am on Monday."), ("assistant", "Noted."))
    _say(api, bobs, ("user", "My flight to Oslo was cancelled."), query="user_id=bob&agent_id=concierge")

    def search(body: dict[str, Any]) -> list[dict[str, Any]]:
        response = api.post(
            "/v1/search", {"query": "when does the flight to Oslo leave", "scope": "messages", **body}
        )
        assert response.status == 200, response.json
        results: list[dict[str, Any]] = response.json["results"]
        return results

    for_alice = search({"user_id": "alice"})
    for_bob = search({"user_id": "bob"})
    other_agent = search({"user_id": "alice", "filters": {"agent_id": "planner"}})
    one_session = search({"user_id": "alice", "filters": {"conversation_id": alices}, "mode": "text"})

    assert for_alice[0]["content"] == "My flight to Oslo leaves at 7am on Monday."
    assert for_alice[0]["session_id"] == alices and for_alice[0]["seq"] == 1
    assert {r["session_id"] for r in for_alice} == {alices}
    assert {r["session_id"] for r in for_bob} == {bobs}
    assert other_agent == []
    assert {r["session_id"] for r in one_session} == {alices}
    assert for_alice[0]["scores"]["vector"] is not None and for_alice[0]["scores"]["text"] is not None


def _search_messages(api: Api, query: str, **body: Any) -> dict[str, Any]:
    response = api.post("/v1/search", {"query": query, "scope": "messages", "user_id": "alice", **body})
    assert response.status == 200, response.json
    return dict(response.json)


def _said_about_oslo_and_more(api: Api) -> None:
    _say(
        api,
        _session(api),
        ("user", "My flight to Oslo leaves at 7am on Monday."),
        ("assistant", "Noted: Oslo, Monday at 7am."),
        ("user", "My grandmother grows tomatoes in her garden."),
        ("user", "The printer on the third floor is jammed again."),
    )


def test_message_search_fuses_the_legs_scores_as_memory_search_does(api: Api) -> None:
    # Given a conversation with a message about the query and messages about other things
    _said_about_oslo_and_more(api)

    # When its messages are searched in hybrid mode
    found = _search_messages(api, "when does the flight to Oslo leave")

    # Then fused is the weighted sum of the legs' scores, with memory search's weights
    weights = {k: fusion.HYBRID_WEIGHTS[k] for k in ("vector", "text_relative", "coverage")}
    assert found["weights"] == weights
    results = found["results"]
    assert results[0]["content"] == "My flight to Oslo leaves at 7am on Monday."
    for result in results:
        rebuilt = sum(w * (result["scores"][name] or 0.0) for name, w in weights.items())
        assert result["scores"]["fused"] == pytest.approx(rebuilt, abs=1e-6)
    # and the score is memory search's calibrated one, so its floor keeps the match and drops the rest
    best = results[0]["scores"]["fused"]
    for result in results:
        assert result["score"] == pytest.approx(fusion.calibrated(result["scores"]["fused"], best), abs=1e-6)
    kept = _search_messages(api, "when does the flight to Oslo leave", score_threshold=fusion.SCIFACT_FLOOR)
    assert {r["content"] for r in kept["results"]} <= {
        "My flight to Oslo leaves at 7am on Monday.",
        "Noted: Oslo, Monday at 7am.",
    }
    assert "My flight to Oslo leaves at 7am on Monday." in {r["content"] for r in kept["results"]}


def test_message_search_in_one_leg_modes_ranks_by_that_legs_score(api: Api) -> None:
    _said_about_oslo_and_more(api)

    for mode in ("vector", "text"):
        found = _search_messages(api, "when does the flight to Oslo leave", mode=mode)

        assert found["weights"] == {mode: 1.0}
        assert found["results"]
        for result in found["results"]:
            assert result["scores"]["fused"] == result["score"] == result["scores"][mode]


@pytest.mark.parametrize(
    ("repeating", "covering", "query"),
    [
        ("Oslo, Oslo, Oslo! Oslo again.", "My flight to Oslo leaves on Monday.", "flight to Oslo"),
        (
            "Printer printer printer, the printer printer again.",
            "The printer on the third floor is jammed, said the office manager in an email this morning.",
            "jammed printer third floor",
        ),
    ],
)
def test_message_search_in_text_mode_ranks_more_of_the_querys_words_first(
    api: Api, repeating: str, covering: str, query: str
) -> None:
    # Given a message that repeats one of the query's words, and one that holds more of them
    _say(api, _session(api), ("user", repeating), ("user", covering))

    # When messages are searched in text mode
    found = _search_messages(api, query, mode="text")

    # Then the one holding more of the query's words comes first, its score still the text score
    assert [r["content"] for r in found["results"]] == [covering, repeating]
    first, second = found["results"]
    assert first["score"] > second["score"] > 0
    for result in found["results"]:
        assert result["scores"]["fused"] == result["score"] == result["scores"]["text"]


def test_message_search_in_text_mode_scores_a_message_holding_every_word_alike_whatever_the_querys_length(
    api: Api,
) -> None:
    # Given a message, and a threshold a message holding every word of a query should pass
    _say(api, _session(api), ("user", "My flight to Oslo leaves on Monday."))

    # When it is searched in text mode for one of its words, and for two
    one = _search_messages(api, "Oslo", mode="text", score_threshold=0.3)
    two = _search_messages(api, "flight Oslo", mode="text", score_threshold=0.3)

    # Then it passes the threshold either way: holding every word of a one-word query is a whole match too
    assert [r["content"] for r in one["results"]] == ["My flight to Oslo leaves on Monday."]
    assert [r["content"] for r in two["results"]] == ["My flight to Oslo leaves on Monday."]
    assert one["results"][0]["score"] >= 0.5 and two["results"][0]["score"] >= 0.5


def test_message_search_takes_a_callers_vector_of_the_configured_model(api: Api) -> None:
    # Given a conversation, and a vector of the configured model for one of its messages
    _said_about_oslo_and_more(api)
    tomatoes = deps.embedder().embed_query("who grows vegetables")

    # When messages are searched by that vector, with a query about something else
    found = _search_messages(
        api,
        "when does the flight to Oslo leave",
        mode="vector",
        embedding=tomatoes,
        embedding_model=deps.embedder().model_id,
    )

    # Then the vector is what was searched
    assert found["results"][0]["content"] == "My grandmother grows tomatoes in her garden."


def test_message_search_refuses_as_of(api: Api) -> None:
    _said_about_oslo_and_more(api)

    response = api.post(
        "/v1/search",
        {"query": "Oslo", "scope": "messages", "user_id": "alice", "as_of": "2030-01-01T00:00:00Z"},
    )

    assert_invalid(response, "body")
    assert "as_of applies to memories" in response.json["error"]["message"]


def test_a_request_made_for_another_user_or_agent_gets_404(api: Api) -> None:
    session_id = _session(api, user="bob", agent="concierge")
    _say(api, session_id, ("user", "My PIN is 1234."), query="user_id=bob")

    as_alice = "user_id=alice&agent_id=concierge"
    assert api.get(f"/v1/sessions/{session_id}?{as_alice}").status == 404
    assert api.get(f"/v1/sessions/{session_id}?user_id=alice").status == 404
    assert api.get(f"/v1/sessions/{session_id}?user_id=bob&agent_id=planner").status == 404
    assert api.get(f"/v1/sessions/{session_id}?agent_id=planner").status == 404
    assert api.post(f"/v1/sessions/{session_id}/recent?{as_alice}").status == 404
    assert (
        api.post(
            f"/v1/sessions/{session_id}/messages?{as_alice}",
            {"messages": [{"role": "user", "content": "injected"}]},
        ).status
        == 404
    )
    assert api.post(f"/v1/sessions/{session_id}/extract?{as_alice}").status == 404
    assert api.delete(f"/v1/sessions/{session_id}?{as_alice}").status == 404
    assert api.get("/v1/sessions?user_id=alice").json["sessions"] == []
    assert api.get("/v1/sessions?agent_id=planner").json["sessions"] == []
    assert api.get(f"/v1/sessions/{session_id}?user_id=bob").json["session"]["message_count"] == 1


def test_a_session_is_used_by_its_id_without_repeating_the_user(api: Api) -> None:
    session_id = _session(api, user="carol", agent="concierge", container="crm.carol")

    appended = _say(api, session_id, ("user", "I live in Lisbon."), query="", extract=True)
    conversation = api.get(f"/v1/sessions/{session_id}")
    recent = api.post(f"/v1/sessions/{session_id}/recent?limit=1")
    as_its_agent = api.get(f"/v1/sessions/{session_id}?agent_id=concierge")

    assert conversation.status == 200 and conversation.json["session"]["user_id"] == "carol"
    assert [m["content"] for m in recent.json["messages"]] == ["I live in Lisbon."]
    assert as_its_agent.status == 200
    # What it extracts is still the session's user's, private to them.
    (memory_id,) = appended["extracted_memory_ids"]
    memory = api.get(f"/v1/memories/{memory_id}?user_id=carol").json
    assert (memory["user_id"], memory["visibility"]) == ("carol", "private")
    assert api.get(f"/v1/memories/{memory_id}").status == 404
    assert api.delete(f"/v1/sessions/{session_id}").status == 204


def test_an_agent_lists_its_sessions_across_users(api: Api) -> None:
    alices = _session(api, user="alice", agent="concierge")
    bobs = _session(api, user="bob", agent="concierge")
    _session(api, user="bob", agent="planner")
    _say(api, bobs, ("user", "Book a taxi."), query="")

    listed = api.get("/v1/sessions?agent_id=concierge").json["sessions"]
    for_bob = api.get("/v1/sessions?agent_id=concierge&user_id=bob").json["sessions"]

    assert [(s["id"], s["user_id"]) for s in listed] == [(bobs, "bob"), (alices, "alice")]
    assert listed[0]["message_count"] == 1 and listed[0]["last_message"]["preview"] == "Book a taxi."
    assert [s["id"] for s in for_bob] == [bobs]


def test_an_agent_only_session_belongs_to_its_agent(api: Api) -> None:
    session_id = _session(api, user=None, agent="crawler")
    _say(api, session_id, ("tool", "fetched 12 pages"), query="agent_id=crawler")

    assert api.get(f"/v1/sessions/{session_id}?agent_id=crawler").status == 200
    assert api.get(f"/v1/sessions/{session_id}?agent_id=other").status == 404
    assert api.get(f"/v1/sessions/{session_id}?user_id=alice&agent_id=crawler").status == 404
    found = api.post(
        "/v1/search", {"query": "pages", "scope": "messages", "filters": {"agent_id": "crawler"}}
    )
    assert [r["content"] for r in found.json["results"]] == ["fetched 12 pages"]


def test_another_tenant_sees_nothing(api: Api, other_api: Api) -> None:
    session_id = _session(api)
    _say(api, session_id, ("user", "The vault code is 9911."))

    assert other_api.get(f"/v1/sessions/{session_id}?{ALICE}").status == 404
    assert other_api.get("/v1/sessions?user_id=alice").json["sessions"] == []
    found = other_api.post("/v1/search", {"query": "vault code", "scope": "messages", "user_id": "alice"})
    assert found.json["results"] == []


def test_extraction_turns_user_statements_into_private_memories_once(api: Api) -> None:
    session_id = _session(api, container="crm.alice")
    said = ("user", "I live in Lisbon. I prefer window seats on long flights. What time is it?")

    first = _say(api, session_id, said, ("assistant", "I love helping you travel."), extract=True)
    again = _say(api, session_id, said, extract=True)

    assert len(first["extracted_memory_ids"]) == 2
    assert sorted(again["extracted_memory_ids"]) == sorted(first["extracted_memory_ids"])
    assert {m["extraction"] for m in first["messages"]} == {"done"}
    memories = api.post("/v1/memories/list", {"user_id": "alice", "container": "crm.alice"}).json["memories"]
    assert sorted((m["content"], m["memory_type"]) for m in memories) == [
        ("I live in Lisbon.", "fact"),
        ("I prefer window seats on long flights.", "preference"),
    ]
    assert {m["visibility"] for m in memories} == {"private"}
    assert {m["metadata"]["extractor"] for m in memories} == {"heuristic"}
    assert {m["conversation_id"] for m in memories} == {session_id}
    assert api.post("/v1/memories/list", {"user_id": "bob", "container": "crm.alice"}).json["memories"] == []


def test_messages_without_extract_are_not_extracted(api: Api) -> None:
    session_id = _session(api)

    appended = _say(api, session_id, ("user", "I live in Porto."))

    assert appended["extracted_memory_ids"] == [] and appended["messages"][0]["extraction"] == "none"
    assert api.post("/v1/memories/list", {"user_id": "alice"}).json["memories"] == []


def test_session_errors(api: Api) -> None:
    session_id = _session(api)
    messages = f"/v1/sessions/{session_id}/messages?{ALICE}"

    assert_invalid(api.post("/v1/sessions", {"metadata": {}}), "body")
    assert (
        api.post("/v1/sessions", {"user_id": "a", "container": "bad name"}).json["error"]["field"]
        == "container"
    )
    assert_invalid(api.post("/v1/sessions", {"user_id": "a", "colour": "red"}), "colour")
    assert api.post(messages, {"messages": []}).json["error"]["field"] == "messages"
    assert_invalid(api.post(messages, {"messages": [{"role": "robot", "content": "x"}]}), "messages[0].role")
    assert_invalid(
        api.post(messages, {"messages": [{"role": "user", "content": " "}]}), "messages[0].content"
    )
    too_many = {"messages": [{"role": "user", "content": "x"}] * 101}
    assert api.post(messages, too_many).json["error"]["field"] == "messages"
    assert api.post(f"/v1/sessions/{session_id}/recent?{ALICE}&limit=0").json["error"]["field"] == "limit"
    assert api.get("/v1/sessions").json["error"]["field"] == "user_id"
    assert api.get("/v1/sessions?user_id=alice&cursor=nope").json["error"]["field"] == "cursor"
    assert api.get(f"/v1/sessions/{uuid.uuid4()}?{ALICE}").status == 404
    assert api.get(f"/v1/sessions/not-a-session?{ALICE}").status == 404
    no_party = api.post("/v1/search", {"query": "x", "scope": "messages"})
    wrong_filter = api.post(
        "/v1/search",
        {"query": "x", "scope": "messages", "user_id": "a", "filters": {"memory_type": ["fact"]}},
    )
    assert_invalid(no_party, "body")
    assert_invalid(wrong_filter, "body")


def test_concurrent_appends_get_distinct_consecutive_seqs(api: Api, tenant: IssuedKey) -> None:
    session_id = uuid.UUID(_session(api))
    service = deps.session_service()
    party = Party(user_id="alice", agent_id="concierge")
    barrier = threading.Barrier(10)

    def append(i: int) -> int:
        barrier.wait()
        result = service.append(
            tenant.tenant_id,
            session_id,
            party,
            MessagesAppend(messages=[MessageIn(role="user", content=f"turn {i}")]),
        )
        return result.messages[0].seq

    with ThreadPoolExecutor(10) as pool:
        seqs = list(pool.map(append, range(10)))

    assert sorted(seqs) == list(range(1, 11))
    conversation = api.get(f"/v1/sessions/{session_id}?{ALICE}").json
    assert conversation["session"]["message_count"] == 10
    assert sorted(m["content"] for m in conversation["messages"]) == sorted(f"turn {i}" for i in range(10))


@pytest.mark.parametrize("flag", ["include_history", "include_related"])
def test_message_search_refuses_what_only_memories_have(api: Api, flag: str) -> None:
    # Messages have no versions nor neighbours: the flag was silently ignored
    _said_about_oslo_and_more(api)

    response = api.post("/v1/search", {"query": "Oslo", "scope": "messages", "user_id": "alice", flag: True})

    assert_invalid(response, "body")
    assert f"{flag} applies to memories" in response.json["error"]["message"]
