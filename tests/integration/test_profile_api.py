"""GET /v1/profile: deduplicated facts, recent context, relevant memories, and a context string
within its token budget whose every line names its memory."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from tests.conftest import Api, assert_invalid


def _remember(
    api: Api, content: str, memory_type: str = "fact", user: str | None = "alice", **extra: Any
) -> str:
    body: dict[str, Any] = {"content": content, "memory_type": memory_type, "container": "crm", **extra}
    if user:
        body |= {"user_id": user, "visibility": "private"}
    response = api.post("/v1/memories", body)
    assert response.status == 201, response.json
    return str(response.json["id"])


def _seed(api: Api) -> dict[str, str]:
    return {
        "old_city": _remember(api, "Alice lives in Lisbon."),
        "repeat": _remember(api, "alice lives in lisbon."),
        "city": _remember(api, "Alice lives in Lisbon, Portugal."),
        "seat": _remember(api, "Alice prefers aisle seats.", "preference"),
        "trip": _remember(api, "Alice flew to Berlin for a conference last week.", "episode"),
        "todo": _remember(api, "Book Alice's hotel for the May offsite.", "task"),
        "bob": _remember(api, "Bob lives in Oslo.", user="bob"),
        "shared": _remember(api, "The company travel policy allows economy only.", user=None),
    }


def test_profile_of_a_user_has_deduplicated_facts_recent_context_and_relevant_memories(api: Api) -> None:
    ids = _seed(api)

    response = api.get("/v1/profile?user_id=alice&container=crm&q=where%20does%20alice%20live")

    assert response.status == 200, response.json
    profile = response.json
    assert profile["subject"] == {"user_id": "alice", "agent_id": None, "container": "crm"}
    assert [f["id"] for f in profile["static_facts"]] == [ids["seat"], ids["city"]]
    assert [r["id"] for r in profile["recent_context"]] == [ids["todo"], ids["trip"]]
    relevant = [r["id"] for r in profile["relevant_memories"]]
    assert relevant[0] in {ids["city"], ids["old_city"], ids["repeat"]}
    assert ids["bob"] not in relevant and ids["shared"] not in relevant
    assert profile["omitted"] == 0


def test_every_context_line_carries_the_memory_it_came_from(api: Api) -> None:
    _seed(api)

    profile = api.get("/v1/profile?user_id=alice&q=travel").json
    # without q: the recent episodes and tasks are not already lines of "Relevant to"
    without_q = api.get("/v1/profile?user_id=alice").json

    for shown in (profile, without_q):
        lines = [line for line in shown["context"].splitlines() if line.startswith("- ")]
        listed = {
            i["id"]: i["content"]
            for key in ("static_facts", "recent_context", "relevant_memories")
            for i in shown[key] or []
        }
        assert lines
        for line in lines:
            match = re.search(r"\[memory:([0-9a-f-]{36})\]$", line)
            assert match, line
            assert listed[match[1]] in line
    assert "## Facts and preferences" in profile["context"] and "## Relevant to: travel" in profile["context"]
    assert "## Facts and preferences" in without_q["context"] and "## Recent context" in without_q["context"]
    assert "(task, " in without_q["context"]


def test_the_context_fits_the_token_budget(api: Api) -> None:
    _seed(api)
    for i in range(30):
        _remember(api, f"Alice's note number {i}: " + "details " * 20)

    full = api.get("/v1/profile?user_id=alice&max_tokens=8000").json
    small = api.get("/v1/profile?user_id=alice&max_tokens=60").json

    assert full["omitted"] == 0 and full["token_estimate"] <= 8000
    assert small["token_estimate"] <= 60 and small["omitted"] > 0
    assert len(small["context"]) <= 60 * 4
    assert small["context"].count("[memory:") >= 1
    assert len(small["static_facts"]) == len(full["static_facts"])


def test_another_users_or_tenants_profile_shows_nothing_of_alice(api: Api, other_api: Api) -> None:
    ids = _seed(api)

    bob = api.get("/v1/profile?user_id=bob").json
    other = other_api.get("/v1/profile?user_id=alice&q=lisbon").json

    assert [f["id"] for f in bob["static_facts"]] == [ids["bob"]]
    assert "Lisbon" not in bob["context"]
    assert other["static_facts"] == [] and other["relevant_memories"] == [] and other["context"] == ""


def test_an_agent_profile_uses_the_agent_s_memories(api: Api) -> None:
    mine = _remember(api, "I summarise tickets in three bullet points.", user=None, agent_id="support-bot")
    _remember(api, "Unrelated tenant fact.", user=None)

    profile = api.get("/v1/profile?agent_id=support-bot").json

    assert [f["id"] for f in profile["static_facts"]] == [mine]


def test_profile_errors(api: Api) -> None:
    assert api.get("/v1/profile").json["error"]["field"] == "user_id"
    assert api.get("/v1/profile?user_id=a&max_tokens=10").json["error"]["field"] == "max_tokens"
    assert api.get("/v1/profile?user_id=a&container=bad%20name").json["error"]["field"] == "container"
    assert_invalid(api.get("/v1/profile?user_id=a&q="), "q")


def test_a_q_of_only_whitespace_is_refused_as_an_empty_one_is_not_ignored(api: Api) -> None:
    # Given: a user with a fact
    _remember(api, "Carol lives in Porto.", user="carol")

    # When: q is only whitespace (spaces, an ideographic space), or empty
    answers = [api.get(f"/v1/profile?user_id=carol&q={q}") for q in ("%20%20", "%E3%80%80", "")]

    # Then: each is a 422 naming q, never a profile that silently left q out
    for answer in answers:
        assert_invalid(answer, "q")
    assert answers[0].json["error"]["message"] == "q: must not be empty or only whitespace"


QUESTION = "Who is Fay's manager and what does she drink?"


def _line_of(profile: dict[str, Any], memory_id: str) -> str:
    return next(line for line in profile["context"].splitlines() if line.endswith(f"[memory:{memory_id}]"))


def _fay(api: Api) -> dict[str, str]:
    """QA's repro: a preference stored in two containers, and a manager change announced ahead."""
    gus = _remember(api, "Fay's manager is Gus.", user="fay")
    return {
        "tea_a": _remember(api, "Fay prefers green tea.", "preference", user="fay", container="pf.a"),
        "tea_b": _remember(api, "Fay prefers green tea.", "preference", user="fay", container="pf.b"),
        "hank": _remember(
            api, "Fay's manager is Hank.", user="fay", supersedes=gus, valid_from="2999-06-01T00:00:00Z"
        ),
    }


def test_a_fact_that_begins_later_says_when_in_the_profile(api: Api) -> None:
    # Given: Fay's manager changes from Gus to Hank on a date still to come
    ids = _fay(api)

    # When: her profile is asked for, with a question about her manager
    profile = api.get(f"/v1/profile?user_id=fay&q={quote(QUESTION)}").json

    # Then: every line about Hank says from when, as POST /v1/context does; the items carry the date
    hank = [line for line in profile["context"].splitlines() if "Hank" in line]
    assert hank, profile["context"]
    for line in hank:
        assert line.endswith(f"Fay's manager is Hank. (from 2999-06-01) [memory:{ids['hank']}]"), line
    listed = [
        i for key in ("static_facts", "relevant_memories") for i in profile[key] if i["id"] == ids["hank"]
    ]
    assert listed and {i["valid_from"] for i in listed} == {"2999-06-01T00:00:00Z"}
    tea = next(i for i in profile["static_facts"] if i["id"] in (ids["tea_a"], ids["tea_b"]))
    assert tea["valid_from"] <= tea["created_at"] and "(from " not in _line_of(profile, tea["id"])


def test_a_line_shown_in_one_section_is_not_repeated_in_another(api: Api) -> None:
    # Given: QA's repro: "Fay prefers green tea." in two containers, which search finds in both
    ids = _fay(api)

    # When: her profile is asked for, with a question the preference answers
    profile = api.get(f"/v1/profile?user_id=fay&q={quote(QUESTION)}").json

    # Then: the preference is one line, under "Facts and preferences", not again under "Relevant to"
    lines = profile["context"].splitlines()
    tea = [line for line in lines if "green tea" in line]
    assert len(tea) == 1, profile["context"]
    headings = [line for line in lines[: lines.index(tea[0])] if line.startswith("## ")]
    assert headings[-1] == "## Facts and preferences"
    assert {r["id"] for r in profile["relevant_memories"]} >= {ids["tea_a"], ids["tea_b"]}
    assert len([line for line in lines if "Hank" in line]) == 1
    assert profile["omitted"] == 0
