"""A request body is decoded (engram.api.app.decode_json_body) exactly as sent or refused: a key sent twice
in one object is never read as its last value."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from engram.api.app import decode_json_body


def _refusal(text: str) -> dict[str, Any]:
    with pytest.raises(RequestValidationError) as refused:
        decode_json_body(text, ("POST", "/v1/memories"))
    errors = list(refused.value.errors())
    assert len(errors) == 1
    return dict(errors[0])


# --- keys sent twice -----------------------------------------------------------------------------


def test_a_top_level_key_sent_twice_is_refused_naming_it() -> None:
    # Given a body with content twice, When it is decoded
    error = _refusal('{"content": "a", "content": "b"}')

    # Then it is refused at that key, not read as "b"
    assert error["loc"] == ("body", "content")
    assert "more than once" in error["msg"]


def test_a_key_sent_twice_in_a_nested_object_is_refused_at_its_path() -> None:
    # Given a key repeated inside metadata, When the body is decoded
    error = _refusal('{"content": "a", "metadata": {"k": 1, "j": 2, "k": 3}}')

    # Then the refusal names the key's path
    assert error["loc"] == ("body", "metadata", "k")


def test_a_key_sent_twice_in_an_object_inside_an_array_is_refused_at_its_path() -> None:
    # Given a batch whose second memory repeats a key
    text = '{"memories": [{"content": "a"}, {"content": "b", "tags": [], "tags": ["x"]}]}'

    # When it is decoded, Then the index and the key are named
    assert _refusal(text)["loc"] == ("body", "memories", 1, "tags")


def test_the_same_key_in_different_objects_is_not_a_repeat() -> None:
    # Given the same key in sibling and nested objects, When the body is decoded
    decoded = decode_json_body('{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}', None)

    # Then it is read as sent
    assert decoded == {"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}
