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


# --- numbers a double cannot hold ----------------------------------------------------------------


@pytest.mark.parametrize("number", ["1e-400", "-1E-400", "0." + "0" * 400 + "1", "2.5e-1000"])
def test_a_number_a_double_holds_only_as_zero_is_refused_naming_the_field(number: str) -> None:
    # Given a confidence too small for a double (it would be stored as 0.0)
    # When the body is decoded
    error = _refusal('{"content": "x", "confidence": ' + number + "}")

    # Then it is refused at that field, saying what it would have become
    assert error["loc"] == ("body", "confidence")
    assert error["msg"] == f"{number} is too small for a double: it would be stored as 0.0"


def test_a_number_too_small_deep_in_a_document_is_refused_at_its_path() -> None:
    # Given metadata with an underflowing number in a list, When the body is decoded
    error = _refusal('{"content": "x", "metadata": {"n": [1.5, 1e-400]}}')

    # Then its path is named
    assert error["loc"] == ("body", "metadata", "n", 1)


@pytest.mark.parametrize(
    "number",
    [
        "0.1",
        "1.5",
        "1E5",
        "0.0",
        "0e-400",  # zero, exactly
        "0.0e-999",
        "-0.0",  # kept: -0.0 == 0.0, and the double keeps the sign
        "1e-300",
        "5e-324",  # the least subnormal
        "1.2345678901e-315",  # a subnormal: rounded as any double is
        "0.014398857951164246",  # a float32 as Python writes it
        "1.0000000000000000001",  # more digits than a double keeps: the nearest double (RFC 8259)
        "-1.7976931348623157e308",
    ],
)
def test_a_number_within_a_doubles_range_is_its_nearest_double(number: str) -> None:
    # Given a number a double holds (to its precision), When the body is decoded
    decoded = decode_json_body('{"confidence": ' + number + "}", None)

    # Then it is that double
    assert decoded == {"confidence": float(number)}


def test_a_number_beyond_a_double_is_left_to_the_validators_as_infinity() -> None:
    # Given 1e400 (refused later as not finite, naming the field), When the body is decoded
    decoded = decode_json_body('{"confidence": 1e400}', None)

    # Then it is infinity, as before
    assert decoded == {"confidence": float("inf")}
