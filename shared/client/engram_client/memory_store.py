"""`BaseMemoryStore`: conversations and agent state behind one interface, with two implementations.

- `InMemoryMemoryStore()`: in this process, for tests.
- `EngramMemoryStore(client)`: in Engram, through an `Engram` client. A conversation is an Engram
  session of the user and its messages, so they stay searchable (`search(scope="messages")`) and
  extractable into memories; storing a longer version of a conversation appends only the new messages.
  Agent state lives in working memory, in one scope per (agent_id, owner_id).

Both behave alike (one test suite runs against both): values round-trip through JSON (state that is
not JSON is refused), times are timezone-aware (naive ones are taken as UTC), a conversation with a
message Engram refuses (NUL, only whitespace, over 100 KB, metadata that is not JSON, a time in the
future) is a ValueError naming `messages[i]` before anything is stored, and `delete_*` answers True when
the item is gone, whether or not it existed.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from engram_client import models
from engram_client.client import Engram
from engram_client.errors import EngramError, InvalidInputError, NotFoundError

SCHEMA_VERSION = "1.0"
ENGRAM_ROLES = frozenset({"user", "assistant", "system", "tool"})
ROLE_KEY = "engram_client.role"  # the role of a message Engram has no role for, kept in its metadata
APPEND_BATCH = 100
# The API's rules for a message (engram.sessions.models.MessageIn), checked before anything is written.
MAX_CONTENT_BYTES = 100 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_JSON_DEPTH = 32
CLOCK_SKEW = timedelta(minutes=5)
_PLAIN = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")
_IN_BATCH = re.compile(r"\bmessages\[(\d+)\]")


class Message(BaseModel):
    role: str = Field(min_length=1)
    content: str = Field(min_length=1)
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("timestamp")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class ConversationContext(BaseModel):
    session_id: str = Field(min_length=1)
    messages: list[Message] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent_participants: list[str] = Field(default_factory=list)
    version: str = SCHEMA_VERSION


class BaseMemoryStore(ABC):
    @abstractmethod
    def store_conversation(self, session_id: str, user_id: str, conversation: ConversationContext) -> None:
        """Store or update a whole conversation."""

    @abstractmethod
    def retrieve_conversation(self, session_id: str) -> ConversationContext | None:
        """The conversation, or None."""

    @abstractmethod
    def delete_conversation(self, session_id: str) -> bool:
        """True if it was deleted or did not exist, False on error."""

    @abstractmethod
    def list_conversations_for_user(
        self, user_id: str, limit: int = 100, offset: int = 0
    ) -> list[dict[str, Any]]:
        """Metadata of the user's conversations, newest first: session_id, user_id, message_count,
        created_at, last_updated, metadata, agent_participants, version (not the messages)."""

    @abstractmethod
    def store_agent_state(self, agent_id: str, owner_id: str, key: str, state_data: Any) -> None:
        """Store or replace one piece of an agent's state (JSON)."""

    @abstractmethod
    def retrieve_agent_state(self, agent_id: str, owner_id: str, key: str) -> Any | None:
        """That piece of state, or None."""

    @abstractmethod
    def delete_agent_state(self, agent_id: str, owner_id: str, key: str) -> bool:
        """True if it was deleted or did not exist, False on error."""

    @abstractmethod
    def get_all_agent_states(self, agent_id: str, owner_id: str) -> dict[str, Any]:
        """Every piece of state of the agent for this owner, by key."""


def _json_copy(state_data: Any) -> Any:
    try:
        return json.loads(json.dumps(state_data, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"agent state must be JSON (dicts, lists, strings, numbers, booleans, None): {exc}"
        ) from exc


def _check_session(session_id: str, conversation: ConversationContext) -> None:
    if conversation.session_id != session_id:
        raise ValueError(
            f"conversation.session_id {conversation.session_id!r} is not session_id {session_id!r}"
        )


def _check_messages(conversation: ConversationContext) -> None:
    """Refuse, before anything is stored, a message the API would refuse: ValueError naming it as
    `messages[i].<field>`, i its index in the conversation."""
    now = datetime.now(UTC)
    for index, message in enumerate(conversation.messages):
        problem = _message_problem(_to_engram(message), now)
        if problem is not None:
            raise ValueError(f"messages[{index}].{problem}")


def _message_problem(message: dict[str, Any], now: datetime) -> str | None:
    content = message["content"]
    text_problem = _text_problem(content)
    if text_problem is not None:
        return f"content: {text_problem}"
    if not content.strip():
        return "content: must not be empty or only whitespace"
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        return f"content: a message holds at most {MAX_CONTENT_BYTES} bytes (100 KB)"
    metadata_problem = _json_problem(message["metadata"])
    if metadata_problem is not None:
        return f"metadata: {metadata_problem}"
    encoded = json.dumps(message["metadata"], ensure_ascii=False, allow_nan=False).encode("utf-8")
    if len(encoded) > MAX_METADATA_BYTES:
        return f"metadata: is larger than {MAX_METADATA_BYTES} bytes of JSON"
    if message["occurred_at"] > now + CLOCK_SKEW:
        return "timestamp: is in the future"
    return None


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL characters (\\u0000)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain a lone surrogate"
    return None


def _json_problem(value: Any) -> str | None:
    """What the API refuses in a JSON document: NaN or infinity, NUL or a lone surrogate in a string or a
    key, nesting deeper than MAX_JSON_DEPTH levels, a value that is not JSON."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= MAX_JSON_DEPTH:
                return f"is nested deeper than {MAX_JSON_DEPTH} levels"
            if isinstance(node, dict):
                for key, item in node.items():
                    if not isinstance(key, str):
                        return f"has a key that is not a string: {key!r}"
                    problem = _text_problem(key)
                    if problem is not None:
                        return f"a key {problem}"
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        elif isinstance(node, str):
            problem = _text_problem(node)
            if problem is not None:
                return problem
        elif isinstance(node, float) and not math.isfinite(node):
            return "numbers must be finite (no NaN or infinity)"
        elif node is not None and not isinstance(node, bool | int | float):
            return f"is not JSON: {type(node).__name__}"
    return None


def _summary(
    conversation: ConversationContext, user_id: str, created: datetime, updated: datetime
) -> dict[str, Any]:
    return {
        "session_id": conversation.session_id,
        "user_id": user_id,
        "message_count": len(conversation.messages),
        "created_at": created,
        "last_updated": updated,
        "metadata": copy.deepcopy(conversation.metadata),
        "agent_participants": list(conversation.agent_participants),
        "version": conversation.version,
    }


class InMemoryMemoryStore(BaseMemoryStore):
    def __init__(self) -> None:
        self._conversations: dict[str, tuple[str, ConversationContext, datetime, datetime]] = {}
        self._states: dict[tuple[str, str], dict[str, Any]] = {}

    def store_conversation(self, session_id: str, user_id: str, conversation: ConversationContext) -> None:
        _check_session(session_id, conversation)
        _check_messages(conversation)
        now = datetime.now(UTC)
        created = self._conversations[session_id][2] if session_id in self._conversations else now
        stored = ConversationContext.model_validate_json(conversation.model_dump_json())  # as JSON would
        self._conversations[session_id] = (user_id, stored, created, now)

    def retrieve_conversation(self, session_id: str) -> ConversationContext | None:
        found = self._conversations.get(session_id)
        return found[1].model_copy(deep=True) if found else None

    def delete_conversation(self, session_id: str) -> bool:
        self._conversations.pop(session_id, None)
        return True

    def list_conversations_for_user(
        self, user_id: str, limit: int = 100, offset: int = 0
    ) -> list[dict[str, Any]]:
        mine = [
            (c, created, updated) for u, c, created, updated in self._conversations.values() if u == user_id
        ]
        mine.sort(key=lambda item: item[1], reverse=True)
        return [
            _summary(c, user_id, created, updated) for c, created, updated in mine[offset : offset + limit]
        ]

    def store_agent_state(self, agent_id: str, owner_id: str, key: str, state_data: Any) -> None:
        self._states.setdefault((agent_id, owner_id), {})[key] = _json_copy(state_data)

    def retrieve_agent_state(self, agent_id: str, owner_id: str, key: str) -> Any | None:
        return copy.deepcopy(self._states.get((agent_id, owner_id), {}).get(key))

    def delete_agent_state(self, agent_id: str, owner_id: str, key: str) -> bool:
        self._states.get((agent_id, owner_id), {}).pop(key, None)
        return True

    def get_all_agent_states(self, agent_id: str, owner_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._states.get((agent_id, owner_id), {}))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:48]


class EngramMemoryStore(BaseMemoryStore):
    """Conversations as Engram sessions (in `container`, where extracted memories go), indexed by
    session_id in working memory under `namespace`; agent state in working memory. `extract` is the
    memory extraction asked for with each append: "none", "light" (offline) or "full" (the LLM).

    Stores of one conversation are not safe to run concurrently: two first stores may each make a
    session (the index names the last), and two appends of the same new messages may both land. A store
    retried after a failure is safe (it appends what is missing), and `delete_conversation` removes every
    session the store made for the conversation."""

    def __init__(
        self,
        client: Engram,
        *,
        namespace: str = "memory-store",
        container: str = "default",
        extract: Literal["none", "light", "full"] = "none",
    ) -> None:
        if not _PLAIN.match(namespace) or len(namespace) > 40:
            raise ValueError("namespace: 1-40 letters, digits, '_', '.' or '-'")
        self.client = client
        self.namespace = namespace
        self.container = container
        self.extract = extract

    # --- where things live ------------------------------------------------------------------------

    @property
    def _index(self) -> str:
        return f"{self.namespace}.conversations"

    def _state_scope(self, agent_id: str, owner_id: str) -> str:
        scope = f"{self.namespace}.state:{agent_id}:{owner_id}"
        if _PLAIN.match(agent_id) and _PLAIN.match(owner_id) and len(scope) <= 128:
            return scope
        return f"{self.namespace}.state-h:{_digest(agent_id, owner_id)}"  # no ':' in the readable parts

    @staticmethod
    def _key(name: str) -> str:
        return name if _PLAIN.match(name) else f"h:{_digest(name)}"

    # --- conversations ----------------------------------------------------------------------------

    def _entry(self, session_id: str) -> dict[str, Any] | None:
        try:
            item = self.client.get_working(self._index, self._key(session_id))
        except NotFoundError:
            return None
        return dict(item.value)

    def _messages(self, session: str, user_id: str) -> list[models.Message]:
        found: list[models.Message] = []
        after = 0
        while True:
            page = self.client.get_session(session, user_id=user_id, after=after, limit=1000)
            found += page.messages
            if page.next_after is None:
                return found
            after = page.next_after

    def _append(self, session: str, user_id: str, messages: list[Message], first: int) -> None:
        """Append `messages`, the conversation's from index `first` on, in batches; an error names the
        message by its index in the conversation, not in its batch."""
        for start in range(0, len(messages), APPEND_BATCH):
            batch = [_to_engram(m) for m in messages[start : start + APPEND_BATCH]]
            try:
                self.client.add_messages(session, user_id=user_id, messages=batch, extract=self.extract)
            except InvalidInputError as exc:
                raise _renumbered(exc, first + start) from exc

    def store_conversation(self, session_id: str, user_id: str, conversation: ConversationContext) -> None:
        _check_session(session_id, conversation)
        _check_messages(conversation)  # before anything is written: a refused message leaves nothing behind
        entry = self._entry(session_id)
        messages = conversation.messages
        if entry is not None and entry["user_id"] == user_id:
            try:
                stored = self._messages(entry["session"], user_id)
            except NotFoundError:  # the session was deleted (the user erased, DELETE): stored anew
                stored = None
            if (
                stored is not None
                and len(stored) <= len(messages)
                and all(_same(s, m) for s, m in zip(stored, messages, strict=False))
            ):
                self._append(entry["session"], user_id, messages[len(stored) :], len(stored))
                self._put_entry(conversation, entry["session"], user_id, entry["created_at"])
                return
        if entry is not None:  # another history, or another user: the conversation is stored anew
            self._drop_sessions(session_id, entry)
            self._drop_entry(session_id)  # it may be another user's: it is not rewritten, it goes
        marker = {"memory_store": {"namespace": self.namespace, "session_id": session_id}}
        session = self.client.create_session(user_id=user_id, container=self.container, metadata=marker)
        # The entry first: a store that fails part way leaves a session it names, so a retry appends only
        # the messages still missing, rather than storing them all again in another session.
        self._put_entry(conversation, str(session.id), user_id, session.created_at.isoformat())
        self._append(str(session.id), user_id, messages, 0)

    def _put_entry(self, conversation: ConversationContext, session: str, user_id: str, created: str) -> None:
        value = {
            "session_id": conversation.session_id,
            "session": session,
            "user_id": user_id,
            "created_at": created,
            "metadata": conversation.metadata,
            "agent_participants": conversation.agent_participants,
            "version": conversation.version,
        }
        # The entry names the user and holds the conversation's metadata: it is theirs, erased with them.
        self.client.set_working(self._index, self._key(conversation.session_id), value=value, user_id=user_id)

    def _drop_sessions(self, session_id: str, entry: dict[str, Any]) -> None:
        """The entry's session, and every other session this store made for the conversation for the
        entry's user (concurrent first stores may each have made one)."""
        user_id = entry["user_id"]
        sessions = {entry["session"]}
        sessions |= {str(s.id) for made_for, s in self._own_sessions(user_id) if made_for == session_id}
        for session in sessions:
            with contextlib.suppress(NotFoundError):  # already gone
                self.client.delete_session(session, user_id=user_id)

    def _drop_entry(self, session_id: str) -> None:
        with contextlib.suppress(NotFoundError):  # already gone
            self.client.delete_working(self._index, self._key(session_id))

    def retrieve_conversation(self, session_id: str) -> ConversationContext | None:
        entry = self._entry(session_id)
        if entry is None:
            return None
        try:
            stored = self._messages(entry["session"], entry["user_id"])
        except NotFoundError:
            return None
        return ConversationContext(
            session_id=session_id,
            messages=[_from_engram(m) for m in stored],
            metadata=entry["metadata"],
            agent_participants=entry["agent_participants"],
            version=entry["version"],
        )

    def delete_conversation(self, session_id: str) -> bool:
        try:
            entry = self._entry(session_id)
            if entry is None:
                return True
            self._drop_sessions(session_id, entry)
            self._drop_entry(session_id)
        except NotFoundError:
            return True
        except EngramError:
            return False
        return True

    def _own_sessions(self, user_id: str) -> Iterator[tuple[str, models.SessionSummary]]:
        for session in self.client.iter_sessions(user_id=user_id):
            marker = session.metadata.get("memory_store")
            if isinstance(marker, dict) and marker.get("namespace") == self.namespace:
                yield str(marker.get("session_id")), session

    def list_conversations_for_user(
        self, user_id: str, limit: int = 100, offset: int = 0
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for position, (session_id, session) in enumerate(self._own_sessions(user_id)):
            if position < offset:
                continue
            if len(found) >= limit:
                break
            entry = self._entry(session_id)
            if entry is None or entry["session"] != str(session.id):
                continue  # a session left from a conversation stored anew
            found.append(
                {
                    "session_id": session_id,
                    "user_id": user_id,
                    "message_count": session.message_count,
                    "created_at": session.created_at,
                    "last_updated": session.last_message_at or session.updated_at,
                    "metadata": entry["metadata"],
                    "agent_participants": entry["agent_participants"],
                    "version": entry["version"],
                }
            )
        return found

    # --- agent state ------------------------------------------------------------------------------

    def store_agent_state(self, agent_id: str, owner_id: str, key: str, state_data: Any) -> None:
        value = {"key": key, "value": _json_copy(state_data)}
        # The owner's state is theirs: DELETE /v1/users/{owner_id} erases it with the rest of their data.
        self.client.set_working(
            self._state_scope(agent_id, owner_id), self._key(key), value=value, user_id=owner_id
        )

    def retrieve_agent_state(self, agent_id: str, owner_id: str, key: str) -> Any | None:
        try:
            item = self.client.get_working(self._state_scope(agent_id, owner_id), self._key(key))
        except NotFoundError:
            return None
        return item.value["value"]

    def delete_agent_state(self, agent_id: str, owner_id: str, key: str) -> bool:
        try:
            self.client.delete_working(self._state_scope(agent_id, owner_id), self._key(key))
        except NotFoundError:
            return True
        except EngramError:
            return False
        return True

    def get_all_agent_states(self, agent_id: str, owner_id: str) -> dict[str, Any]:
        items = self.client.iter_working(self._state_scope(agent_id, owner_id), limit=1000)
        return {item.value["key"]: item.value["value"] for item in items}


def _renumbered(exc: InvalidInputError, first: int) -> InvalidInputError:
    """The API's error about a batch that starts at the conversation's message `first`, with each
    `messages[i]` it names renumbered to the conversation's index."""

    def shift(text: str) -> str:
        return _IN_BATCH.sub(lambda found: f"messages[{int(found.group(1)) + first}]", text)

    errors = [
        {**error, "field": shift(error["field"])} if isinstance(error.get("field"), str) else error
        for error in exc.errors
    ]
    return InvalidInputError(
        shift(exc.message),
        code=exc.code,
        status=exc.status,
        field=shift(exc.field) if exc.field else None,
        errors=errors,
        details=exc.details,
    )


def _to_engram(message: Message) -> dict[str, Any]:
    metadata = dict(message.metadata)
    role = message.role
    if role not in ENGRAM_ROLES:
        metadata[ROLE_KEY], role = role, "assistant"
    return {"role": role, "content": message.content, "metadata": metadata, "occurred_at": message.timestamp}


def _from_engram(message: models.Message) -> Message:
    metadata = dict(message.metadata)
    role = metadata.pop(ROLE_KEY, message.role)
    return Message(role=role, content=message.content, timestamp=message.occurred_at, metadata=metadata)


def _same(stored: models.Message, message: Message) -> bool:
    return _from_engram(stored) == Message.model_validate_json(message.model_dump_json())
