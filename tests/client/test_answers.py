"""Every failure a call meets is an EngramError: an answer the client cannot read (a proxy's page, JSON
of another shape, a status the operation does not answer), API Gateway's own {"message": ...}, and a
value JSON cannot carry, refused before anything is sent."""

from __future__ import annotations

import math

import httpx
import pytest

from engram_client import (
    Engram,
    InvalidInputError,
    RateLimitError,
    UnexpectedResponse,
)


def answering(response: httpx.Response) -> tuple[list[httpx.Request], Engram]:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return response

    return calls, Engram("http://engram.test", "key", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html><body>Sign in to the corporate portal</body></html>"),
        httpx.Response(200, json={"foo": 1}),
    ],
    ids=["html", "another-shape"],
)
def test_a_success_the_client_cannot_read_is_an_unexpected_response(response: httpx.Response) -> None:
    _, client = answering(response)

    with pytest.raises(UnexpectedResponse) as raised:
        client.get_health()

    assert raised.value.status == 200 and "GET /health" in raised.value.message
    assert raised.value.excerpt and raised.value.excerpt[:6] in response.text


def test_a_status_the_operation_does_not_answer_is_an_unexpected_response() -> None:
    _, client = answering(httpx.Response(201, json={}))

    with pytest.raises(UnexpectedResponse) as raised:
        client.get_health()

    assert (raised.value.status, raised.value.code) == (201, "unexpected_status")


def test_api_gateways_own_message_is_the_errors_message() -> None:
    _, client = answering(httpx.Response(429, json={"message": "Too Many Requests"}))

    with pytest.raises(RateLimitError) as raised:
        client.get_health()

    assert (raised.value.message, raised.value.code) == ("Too Many Requests", "throttled")


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_number_json_cannot_carry_is_refused_before_anything_is_sent(value: float) -> None:
    calls, client = answering(httpx.Response(201, json={}))

    with pytest.raises(InvalidInputError) as raised:
        client.create_memory(content="x", confidence=value)

    assert raised.value.field == "confidence" and raised.value.status is None
    assert calls == []


def test_a_nested_number_json_cannot_carry_is_named_by_its_place() -> None:
    calls, client = answering(httpx.Response(201, json={}))

    with pytest.raises(InvalidInputError) as raised:
        client.create_memory(content="x", metadata={"scores": [1.0, math.nan]})

    assert raised.value.field == "metadata.scores.1" and calls == []
