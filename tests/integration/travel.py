"""A travel agent's conversation (30 messages) and a user's facts: the fixture of the summary and
context tests."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api

USER, AGENT = "maria", "travel-agent"
PARTY = f"user_id={USER}&agent_id={AGENT}"

CONVERSATION: list[tuple[str, str]] = [
    ("user", "Hi, I need to plan a business trip to Oslo."),
    ("assistant", "Happy to help. When do you need to be in Oslo?"),
    ("user", "The conference starts on May 12, so I want to arrive on May 11."),
    ("assistant", "Got it. Where are you flying from?"),
    ("user", "From Lisbon. I would rather avoid connections through Frankfurt."),
    ("assistant", "Understood, I will look for routes via Amsterdam or Copenhagen."),
    ("user", "Copenhagen is fine. My budget for the flight is 600 euros."),
    ("assistant", "Noted: 600 euros for the flight."),
    ("user", "Please book a window seat, I always sit by the window."),
    ("assistant", "Window seat, noted."),
    ("user", "I also need a hotel close to the Oslo Spektrum conference centre."),
    ("assistant", "How many nights should I book?"),
    ("user", "Four nights, checking out on May 15."),
    ("assistant", "Do you have a hotel chain you prefer?"),
    ("user", "Any chain is fine, but the room must have a desk and fast wifi."),
    ("assistant", "I will filter for rooms with a desk and fast wifi."),
    ("user", "My company pays for breakfast, so include it."),
    ("assistant", "Breakfast included, okay."),
    ("user", "Can you also book a table for a client dinner on May 13?"),
    ("assistant", "Sure. How many people, and any cuisine?"),
    ("user", "Six people, seafood, somewhere near the harbour."),
    ("assistant", "I found Fiskeriet Youngstorget and Lofoten Fiskerestaurant at the harbour."),
    ("user", "Lofoten Fiskerestaurant sounds perfect, book it for 7 pm."),
    ("assistant", "Booked Lofoten Fiskerestaurant for six at 7 pm on May 13."),
    ("user", "Thanks. What about getting from the airport to the hotel?"),
    ("assistant", "The Flytoget airport express train takes 20 minutes to Oslo Central."),
    ("user", "Great, I will take the train rather than a taxi."),
    ("assistant", "I will add Flytoget tickets to your itinerary."),
    ("user", "Send the itinerary to my work email when everything is booked."),
    ("assistant", "Will do. I will confirm the flight and hotel by tomorrow."),
]


def start_session(api: Api) -> str:
    created = api.post("/v1/sessions", {"user_id": USER, "agent_id": AGENT, "container": "travel"})
    assert created.status == 201, created.json
    return str(created.json["id"])


def say(api: Api, session_id: str, messages: list[tuple[str, str]]) -> dict[str, Any]:
    body = {"messages": [{"role": role, "content": content} for role, content in messages]}
    appended = api.post(f"/v1/sessions/{session_id}/messages?{PARTY}", body)
    assert appended.status == 201, appended.json
    return dict(appended.json)


def converse(api: Api, per_append: int = 2) -> str:
    """The whole conversation, appended a turn (two messages) at a time, as an agent would."""
    session_id = start_session(api)
    for start in range(0, len(CONVERSATION), per_append):
        say(api, session_id, CONVERSATION[start : start + per_append])
    return session_id
