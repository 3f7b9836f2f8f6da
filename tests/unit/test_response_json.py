"""Every handler's resolver (engram.api.build_resolver) writes its response bodies as strict JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram.api import build_resolver

EVENT = {
    "resource": "/probe",
    "path": "/probe",
    "httpMethod": "GET",
    "headers": {},
    "multiValueHeaders": {},
    "queryStringParameters": None,
    "multiValueQueryStringParameters": None,
    "pathParameters": None,
    "stageVariables": None,
    "requestContext": {"resourcePath": "/probe", "httpMethod": "GET", "stage": "local"},
    "body": None,
    "isBase64Encoded": False,
}


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _body(value: dict[str, Any]) -> str:
    app = build_resolver()

    @app.get("/probe")
    def probe() -> dict[str, Any]:
        return value

    response = app.resolve(EVENT, None)  # type: ignore[arg-type]
    assert response["statusCode"] == 200
    return str(response["body"])


def test_a_body_keeps_its_values_and_its_text_as_utf8() -> None:
    value = {"name": "Zoë, 東京", "score": 2.1816892000175683e-06, "big": 2**62, "nested": [{"a": None}]}

    body = _body(value)

    assert _strict(body) == value
    assert "Zoë, 東京" in body
    assert " " not in body.replace("Zoë, 東京", "")  # compact


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_number_json_cannot_hold_becomes_null_not_invalid_json(number: float) -> None:
    body = _body({"score": number, "kept": 1.5})

    assert _strict(body) == {"score": None, "kept": 1.5}
