"""BaseMemoryStore: one suite, run against InMemoryMemoryStore and EngramMemoryStore alike, plus what
only Engram does (the conversation is a session whose messages are searchable, and a longer version
appends only the new messages)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from engram_client import Engram, InvalidInputError
from engram_client.memory_store import (
    BaseMemoryStore,
    ConversationContext,
    EngramMemoryStore,
    InMemoryMemoryStore,
    Message,
)

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["in-memory", "engram"])
def store(request: pytest.FixtureRequest, engram: Engram) -> Iterator[BaseMemoryStore]:
    yield InMemoryMemoryStore() if request.param == "in-memory" else EngramMemoryStore(engram)


def _talk(session_id: str, *turns: tuple[str, str], **fields: object) -> ConversationContext:
    messages = [
        Message(role=role, content=content, timestamp=T0 + timedelta(minutes=n), metadata={"n": n})
        for n, (role, content) in enumerate(turns)
    ]
    return ConversationContext(session_id=session_id, messages=messages, **fields)  # type: ignore[arg-type]


def test_a_conversation_is_stored_and_retrieved_as_it_was(store: BaseMemoryStore) -> None:
    conversation = _talk(
        "s-1",
        ("user", "I'd like to fly to Oslo"),
        ("assistant", "When?"),
        ("planner", "Checking flights"),  # an agent's own role
        metadata={"channel": "web"},
        agent_participants=["assistant", "planner"],
    )

    store.store_conversation("s-1", "ann", conversation)

    assert store.retrieve_conversation("s-1") == conversation
    assert store.retrieve_conversation("never") is None


def test_a_conversation_grows_across_three_stores(store: BaseMemoryStore) -> None:
    turns = [
        ("user", "Hi"),
        ("assistant", "Hello!"),
        ("user", "Book Oslo"),
        ("assistant", "Done"),
        ("user", "Thanks"),
    ]

    for size in (1, 3, 5):
        store.store_conversation("s-2", "ann", _talk("s-2", *turns[:size], metadata={"size": size}))

    retrieved = store.retrieve_conversation("s-2")
    assert retrieved == _talk("s-2", *turns, metadata={"size": 5})


def test_a_rewritten_history_replaces_the_stored_one(store: BaseMemoryStore) -> None:
    store.store_conversation("s-3", "ann", _talk("s-3", ("user", "Hi"), ("assistant", "Hello")))

    store.store_conversation(
        "s-3", "ann", _talk("s-3", ("user", "Hey"), ("assistant", "Hi there"), ("user", "x"))
    )

    retrieved = store.retrieve_conversation("s-3")
    assert retrieved is not None and [m.content for m in retrieved.messages] == ["Hey", "Hi there", "x"]


def test_deleting_a_conversation_is_true_whether_or_not_it_existed(store: BaseMemoryStore) -> None:
    store.store_conversation("s-4", "ann", _talk("s-4", ("user", "Hi")))

    assert store.delete_conversation("s-4") is True
    assert store.retrieve_conversation("s-4") is None
    assert store.delete_conversation("s-4") is True


def test_a_users_conversations_are_listed_newest_first_without_messages(store: BaseMemoryStore) -> None:
    for n in range(3):
        store.store_conversation(
            f"u-{n}", "bob", _talk(f"u-{n}", ("user", f"message {n}"), metadata={"n": n})
        )
    store.store_conversation("other", "carol", _talk("other", ("user", "not bob's")))

    listed = store.list_conversations_for_user("bob")
    page = store.list_conversations_for_user("bob", limit=1, offset=1)

    assert [c["session_id"] for c in listed] == ["u-2", "u-1", "u-0"]
    assert [c["session_id"] for c in page] == ["u-1"]
    assert (
        listed[0]["message_count"] == 1 and listed[0]["metadata"] == {"n": 2} and "messages" not in listed[0]
    )
    assert (
        isinstance(listed[0]["last_updated"], datetime) and store.list_conversations_for_user("nobody") == []
    )


def test_agent_state_is_scoped_by_agent_and_owner(store: BaseMemoryStore) -> None:
    store.store_agent_state("planner", "ann", "step", {"n": 1, "todo": ["book"]})
    store.store_agent_state("planner", "ann", "step", {"n": 2, "todo": []})
    store.store_agent_state("planner", "ann", "odd key / ü", [1, 2])
    store.store_agent_state("planner", "bob", "step", "bob's")
    store.store_agent_state("an agent/with:odd id", "ann", "step", None)

    assert store.retrieve_agent_state("planner", "ann", "step") == {"n": 2, "todo": []}
    assert store.get_all_agent_states("planner", "ann") == {
        "step": {"n": 2, "todo": []},
        "odd key / ü": [1, 2],
    }
    assert store.get_all_agent_states("planner", "bob") == {"step": "bob's"}
    assert store.get_all_agent_states("an agent/with:odd id", "ann") == {"step": None}
    assert store.retrieve_agent_state("planner", "carol", "step") is None


def test_deleting_agent_state_is_true_whether_or_not_it_existed(store: BaseMemoryStore) -> None:
    store.store_agent_state("a", "o", "k", 1)

    assert store.delete_agent_state("a", "o", "k") is True
    assert store.retrieve_agent_state("a", "o", "k") is None
    assert store.delete_agent_state("a", "o", "k") is True


def test_state_that_is_not_json_is_refused(store: BaseMemoryStore) -> None:
    with pytest.raises(TypeError, match="JSON"):
        store.store_agent_state("a", "o", "k", {"when": datetime.now(UTC)})


def test_a_message_needs_only_role_and_content() -> None:
    message = Message(role="user", content="hi")

    assert message.metadata == {} and message.timestamp.tzinfo is not None


def test_in_engram_a_conversation_is_a_searchable_session_and_grows_by_appending(engram: Engram) -> None:
    store = EngramMemoryStore(engram)
    turns = [
        ("user", "My passport number ends in 4521"),
        ("assistant", "Noted"),
        ("user", "And I fly on May 3"),
    ]
    store.store_conversation("s-5", "dan", _talk("s-5", *turns[:2]))
    (listed,) = engram.list_sessions(user_id="dan").sessions
    first_ids = [m.id for m in engram.get_session(listed.id, user_id="dan").messages]

    store.store_conversation("s-5", "dan", _talk("s-5", *turns))

    messages = engram.get_session(listed.id, user_id="dan").messages
    assert [m.id for m in messages[:2]] == first_ids and [m.seq for m in messages] == [1, 2, 3]
    found = engram.search(query="passport number", scope="messages", user_id="dan")
    assert found.results[0].content == "My passport number ends in 4521"


def test_in_engram_erasing_a_user_leaves_nothing_of_their_conversations_in_the_store(engram: Engram) -> None:
    # Given a conversation of henry's, with metadata about him, and his agent state
    store = EngramMemoryStore(engram)
    store.store_conversation(
        "s-6", "henry", _talk("s-6", ("user", "My SSN is 123"), metadata={"p": "+1 555"})
    )
    store.store_agent_state("planner", "henry", "step", {"x": 1})

    # When henry is erased
    engram.erase_user("henry", confirm=True)

    # Then no index entry of the store names him any more, and his conversation is gone
    assert [i.key for i in engram.iter_working(store._index) if i.value["user_id"] == "henry"] == []
    assert store.retrieve_conversation("s-6") is None
    assert store.get_all_agent_states("planner", "henry") == {}


def test_in_engram_a_conversation_taken_over_by_another_user_is_stored_anew_for_them(engram: Engram) -> None:
    store = EngramMemoryStore(engram)
    store.store_conversation("s-7", "ann", _talk("s-7", ("user", "Hi")))

    store.store_conversation("s-7", "bea", _talk("s-7", ("user", "Hello")))

    assert [m.content for m in store.retrieve_conversation("s-7").messages] == ["Hello"]  # type: ignore[union-attr]
    assert engram.get_working(store._index, "s-7").user_id == "bea"
    assert engram.list_sessions(user_id="ann").sessions == []


@pytest.mark.parametrize(
    ("content", "problem"), [("bad \x00 nul", "NUL"), ("   ", "only whitespace"), ("x" * 102_401, "100 KB")]
)
def test_a_message_engram_would_refuse_is_refused_before_anything_is_stored(
    store: BaseMemoryStore, content: str, problem: str
) -> None:
    # Given 150 good messages and a bad one at index 150
    messages = [Message(role="user", content=f"msg {n}") for n in range(150)]
    conversation = ConversationContext(
        session_id="s-8", messages=[*messages, Message(role="user", content=content)]
    )

    # When it is stored
    with pytest.raises(ValueError, match=rf"messages\[150\]\.content: .*{problem}"):
        store.store_conversation("s-8", "gus", conversation)

    # Then nothing was stored, and nothing is left to delete
    assert store.retrieve_conversation("s-8") is None
    assert store.list_conversations_for_user("gus") == []
    if isinstance(store, EngramMemoryStore):
        assert store.client.list_sessions(user_id="gus").sessions == []


def test_in_engram_an_error_engram_finds_in_a_message_names_its_index_in_the_conversation(
    engram: Engram,
) -> None:
    # Given a conversation whose message 150 has a time Engram cannot store (the client does not check it)
    messages = [Message(role="user", content=f"msg {n}") for n in range(151)]
    messages[150].timestamp = datetime(1, 1, 1, tzinfo=UTC)
    store = EngramMemoryStore(engram)

    # When it is stored, Engram's error names the message by its index in the conversation, not its batch
    with pytest.raises(InvalidInputError) as raised:
        store.store_conversation("s-9", "ivy", ConversationContext(session_id="s-9", messages=messages))
    assert raised.value.field == "messages[150].occurred_at"


def test_in_engram_a_conversation_whose_session_was_deleted_is_stored_anew(engram: Engram) -> None:
    # Given a stored conversation whose session was then deleted through the API
    store = EngramMemoryStore(engram)
    store.store_conversation("s-10", "jay", _talk("s-10", ("user", "Hi")))
    engram.delete_session(engram.get_working(store._index, "s-10").value["session"], user_id="jay")

    # When it is stored again
    store.store_conversation("s-10", "jay", _talk("s-10", ("user", "Hi"), ("assistant", "Hello")))

    # Then it is there, whole, in a new session
    assert [m.content for m in store.retrieve_conversation("s-10").messages] == ["Hi", "Hello"]  # type: ignore[union-attr]
    assert len(engram.list_sessions(user_id="jay").sessions) == 1


def test_in_engram_a_store_retried_after_failing_part_way_appends_only_what_is_missing(
    engram: Engram,
) -> None:
    # Given a first store that failed after its first batch of 100 messages (Engram refused message 150)
    messages = [Message(role="user", content=f"msg {n}", timestamp=T0) for n in range(151)]
    late = messages[150].timestamp
    messages[150].timestamp = datetime(1, 1, 1, tzinfo=UTC)
    store = EngramMemoryStore(engram)
    with pytest.raises(InvalidInputError):
        store.store_conversation("s-11", "kim", ConversationContext(session_id="s-11", messages=messages))

    # When the store is retried with the message put right
    messages[150].timestamp = late
    store.store_conversation("s-11", "kim", ConversationContext(session_id="s-11", messages=messages))

    # Then the conversation is whole, once, in one session
    assert [m.content for m in store.retrieve_conversation("s-11").messages] == [m.content for m in messages]  # type: ignore[union-attr]
    assert [s.message_count for s in engram.list_sessions(user_id="kim").sessions] == [151]


def test_in_engram_deleting_a_conversation_removes_every_session_the_store_made_for_it(
    engram: Engram,
) -> None:
    # Given a conversation, and a second session a concurrent first store made for it
    store = EngramMemoryStore(engram)
    store.store_conversation("s-12", "lou", _talk("s-12", ("user", "Hi")))
    marker = {"memory_store": {"namespace": store.namespace, "session_id": "s-12"}}
    engram.create_session(user_id="lou", metadata=marker)
    other = engram.create_session(user_id="lou", metadata={"mine": True})

    # When it is deleted
    assert store.delete_conversation("s-12") is True

    # Then no session of it is left; the user's other sessions stay
    assert [s.id for s in engram.list_sessions(user_id="lou").sessions] == [other.id]
