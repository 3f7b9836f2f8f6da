"""POST /v1/context: one call for an agent's turn, read for relevance and budget, on a travel agent's
conversation: the facts the turn needs first, nothing unrelated, a superseded fact never beside the one
that replaced it, the matched procedures, the conversation's summary and last messages, the plan's state."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engram.local.stack import LocalDatabase
from engram.sessions.summaries import SummaryService
from engram.tenants.service import IssuedKey
from tests.conftest import Api, assert_invalid
from tests.integration.travel import AGENT, USER, converse

FACTS = [
    ("preference", "Maria prefers aisle seats"),  # superseded below
    ("fact", "Maria lives in Lisbon"),
    ("fact", "Maria works at Acme Corp as a product manager"),
    ("preference", "Maria is vegetarian"),
    ("fact", "Maria's dog is called Bruno"),
    ("fact", "Maria has a frequent flyer card with SAS"),
    ("preference", "Maria dislikes early morning flights"),
]
UNRELATED = [
    "Tomatoes need six hours of sun a day",
    "The quarterly report is due on Friday",
    "Python 3.12 removed distutils from the standard library",
    "The office wifi password changes every month",
    "Basil should be watered in the morning",
] * 4


def _remember(api: Api, content: str, memory_type: str = "fact", **extra: Any) -> str:
    body = {"content": content, "memory_type": memory_type, "container": "travel", **extra}
    created = api.post("/v1/memories", body)
    assert created.status == 201, created.json
    return str(created.json["id"])


def _seed(api: Api, tenant: IssuedKey, local_db: LocalDatabase) -> dict[str, str]:
    ids = {content: _remember(api, content, kind, user_id=USER) for kind, content in FACTS}
    ids["window"] = _remember(
        api,
        "Maria prefers window seats",
        "preference",
        user_id=USER,
        supersedes=ids["Maria prefers aisle seats"],
    )
    for n, text in enumerate(UNRELATED):
        _remember(api, f"{text} (note {n})")
    ids["oslo"] = _remember(api, "Flights to Oslo land at Gardermoen airport, 50 km north of the city")
    ids["rule"] = api.post(
        "/v1/procedures", {"trigger": "booking a flight", "content": "always confirm the baggage allowance"}
    ).json["id"]
    api.post("/v1/procedures", {"trigger": "a refund is requested", "content": "check the purchase date"})
    api.post(
        "/v1/plans", {"plan_id": "oslo-trip", "goal_event": "trip.requested", "state": {"flight": "open"}}
    )
    ids["session"] = converse(api)
    SummaryService(local_db.app, lambda: None).refresh_queued(tenant.tenant_id)
    return ids


def _context(api: Api, **body: Any) -> dict[str, Any]:
    answered = api.post("/v1/context", {"user_id": USER, "agent_id": AGENT, **body})
    assert answered.status == 200, answered.json
    return dict(answered.json)


def test_a_travel_agents_turn_gets_what_it_needs_within_budget(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    ids = _seed(api, tenant, local_db)

    found = _context(
        api,
        query="Book the flight to Oslo now",
        session_id=ids["session"],
        plan_id="oslo-trip",
        max_tokens=600,
    )

    context, items = found["context"], found["items"]
    # within the budget, every line citing where it came from
    assert found["token_estimate"] <= 600 and len(context) / 4 <= 600
    lines = [line for line in context.splitlines() if not line.startswith("## ")]
    assert len(lines) == len(items)
    assert all(
        re.search(r" \[(memory|fact|procedure|summary|message|plan|working):[^\]]+\]$", x) for x in lines
    )
    # the facts the turn needs, and the current one only
    assert "Maria prefers window seats" in context and "aisle" not in context
    assert "baggage allowance" in context and "refund" not in context
    assert "Gardermoen" in context
    # nothing unrelated fills the budget
    for text in ("Tomatoes", "quarterly report", "distutils", "wifi password", "Basil"):
        assert text not in context
    # the conversation: its summary and its last messages, the latest last
    sources = [i["source"] for i in items]
    assert "summary" in sources and sources.count("message") >= 2
    messages = [i["text"] for i in items if i["source"] == "message"]
    assert messages[-1].startswith("#30 assistant:")
    assert any(i["source"] == "plan" and i["id"] == "oslo-trip" and "open" in i["text"] for i in items)
    # the sections come in priority order: relevant memories and facts before the conversation
    order = [h for h in context.splitlines() if h.startswith("## ")]
    assert order.index("## About the user") < order.index("## The conversation so far")


def test_a_small_budget_still_keeps_the_facts_the_question_needs(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    ids = _seed(api, tenant, local_db)

    found = _context(api, query="Book me a flight", session_id=ids["session"], max_tokens=120)

    assert found["token_estimate"] <= 120 and found["omitted"] > 0
    assert "Maria prefers window seats" in found["context"]
    window = next(i for i in found["items"] if "window seats" in i["text"])
    assert window["id"] == ids["window"]


def test_without_a_session_or_user_only_relevant_memories_and_procedures(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    _seed(api, tenant, local_db)

    found = api.post("/v1/context", {"query": "which airport do flights to Oslo land at?"}).json

    first = found["items"][0]
    assert first["source"] == "memory" and "Gardermoen" in first["text"]
    assert all(i["source"] in ("memory", "procedure") for i in found["items"])
    assert "Maria" not in found["context"]  # private to Maria: not this request's


def test_a_session_named_without_its_user_brings_its_summary(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    # Given: a summarized session of the travel user and agent
    session_id = converse(api)
    SummaryService(local_db.app, lambda: None).refresh_queued(tenant.tenant_id)

    # When: the context names the session but neither its user nor its agent
    answered = api.post("/v1/context", {"query": "Oslo flight", "session_id": session_id})

    # Then: the conversation's summary is part of it, as its messages are
    assert answered.status == 200, answered.json
    sources = [i["source"] for i in answered.json["items"]]
    assert "summary" in sources and "message" in sources


def test_an_unknown_plan_is_a_404_as_an_unknown_session_is(api: Api) -> None:
    missing = api.post("/v1/context", {"query": "hi", "plan_id": "no-such-plan"})

    assert missing.status == 404 and "plan no-such-plan not found" in missing.json["error"]["message"]


def test_memory_items_come_in_the_order_of_their_scores(
    api: Api, tenant: IssuedKey, local_db: LocalDatabase
) -> None:
    _seed(api, tenant, local_db)

    items = _context(api, query="what does Maria like when she flies?")["items"]

    scores = [i["score"] for i in items if i["source"] == "memory"]
    assert len(scores) >= 2 and scores == sorted(scores, reverse=True)


def test_an_unknown_session_is_a_404_and_bad_input_a_422(api: Api) -> None:
    missing = api.post(
        "/v1/context", {"query": "hi", "session_id": "00000000-0000-4000-8000-000000000000", "user_id": USER}
    )
    assert missing.status == 404 and missing.json["error"]["code"] == "not_found"
    assert_invalid(api.post("/v1/context", {"query": ""}), "query")
    assert_invalid(api.post("/v1/context", {"query": "hi", "max_tokens": 10}), "max_tokens")
    assert_invalid(api.post("/v1/context", {"query": "hi", "plan_id": "no spaces"}), "plan_id")


@pytest.mark.parametrize(
    "body", [{"query": "   "}, {"query": "\n", "user_id": "carol"}, {"query": "\u3000"}, {"query": "\t "}]
)
def test_a_query_of_only_whitespace_is_a_422_naming_query_as_search_answers(api: Api, body: dict) -> None:
    answered = api.post("/v1/context", body)

    assert_invalid(answered, "query")
    assert answered.json["error"] == api.post("/v1/search", body).json["error"]


def _erin(api: Api) -> str:
    """Erin's memories, one of them stored in three containers, and a procedure for the query below."""
    for container in ("home", "work", "travel"):
        _remember(api, "name: Erin; city: Lisbon.", container=container, user_id="erin")
    _remember(api, "Erin prefers trains to planes", "preference", user_id="erin")
    _remember(api, "Erin's cat is called Miso", user_id="erin")
    for note in ("Planning meetings happen on Mondays", "Trip reports go to the finance team"):
        _remember(api, note, "episode")
    rule = {"trigger": "planning a trip for Erin", "content": "ask whether she wants the train"}
    return str(api.post("/v1/procedures", rule).json["id"])


def test_the_same_content_from_several_memories_appears_once(api: Api) -> None:
    # Given: "name: Erin; city: Lisbon." stored in three containers
    _erin(api)

    # When: the context is asked for with room for everything
    found = _context(api, query="planning a trip for Erin", user_id="erin", max_tokens=2000)

    # Then: it is one line, the best-scored of them, and every line says something else
    texts = [i["text"].removeprefix("(fact) ").casefold() for i in found["items"]]
    assert texts.count("name: erin; city: lisbon.") == 1
    assert len(texts) == len(set(texts))
    assert found["context"].count("name: Erin; city: Lisbon.") == 1


def test_a_small_budget_keeps_the_procedure_that_matched_over_lower_scored_memories(api: Api) -> None:
    # Given: Erin's memories and a procedure whose trigger is the query itself
    rule = _erin(api)

    # When: the budget holds the procedure or two of the memories, not all three
    found = _context(api, query="planning a trip for Erin", user_id="erin", max_tokens=50)

    # Then: the procedure (score 1.0) is kept: no lower-scored line took its place
    kept = {i["id"]: i["score"] for i in found["items"]}
    assert kept.get(rule) == 1.0, found["context"]
    assert found["token_estimate"] <= 50 and found["omitted"] > 0


def test_a_memory_that_begins_later_says_when_in_the_context(api: Api) -> None:
    # Given: today's rent, and the rent from a date still to come (found by QA: the later one read as today's)
    now = _remember(api, "The Lisbon office rent is 4000 EUR per month", container="office")
    _remember(
        api,
        "The Lisbon office rent is 5000 EUR per month",
        container="office",
        supersedes=now,
        valid_from="2999-01-01T00:00:00Z",
    )
    _remember(api, "The Lisbon office has twelve desks", container="office")

    # When: the context is asked for, as a prompt
    found = _context(api, query="Lisbon office rent", container="office", user_id=None, agent_id=None)

    # Then: the later fact carries its start, and a fact already in force carries none
    lines = {i["text"] for i in found["items"] if i["source"] == "memory"}
    assert "The Lisbon office rent is 5000 EUR per month (from 2999-01-01)" in lines
    assert "The Lisbon office has twelve desks" in lines
    assert "(from 2999-01-01)" in found["context"]


def test_the_same_procedure_stored_twice_appears_once(api: Api) -> None:
    # Found by QA: two procedures with the same trigger and steps were two lines of the context
    rule = {"trigger": "booking a restaurant", "content": "ask about allergies first"}
    ids = [api.post("/v1/procedures", rule).json["id"] for _ in range(2)]

    found = _context(api, query="booking a restaurant for dinner", user_id=None, agent_id=None)

    shown = [i["id"] for i in found["items"] if i["source"] == "procedure"]
    assert len(shown) == 1 and shown[0] in ids, found["context"]
    assert found["context"].count("ask about allergies first") == 1


def test_a_trigger_that_starts_with_when_is_not_said_twice(api: Api) -> None:
    # Found by QA: "when When a guest books a table: ..." in the context
    api.post("/v1/procedures", {"trigger": "When a guest books a table", "content": "confirm the time"})

    found = _context(api, query="a guest books a table", user_id=None, agent_id=None)

    (line,) = [i["text"] for i in found["items"] if i["source"] == "procedure"]
    assert line == "When a guest books a table: confirm the time"
