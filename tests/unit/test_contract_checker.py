"""The contract checker itself: it must catch an undocumented status, a body off its schema, a missing
documented header and broken JSON Lines, and pass an answer that matches."""

from __future__ import annotations

from typing import Any

import httpx

from tests.contract.validation import ContractChecker

DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/things/{id}": {
            "get": {
                "operationId": "get_thing",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "description": "ok",
                        "headers": {"ETag": {"required": True, "schema": {"type": "string"}}},
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["id"],
                                    "properties": {"id": {"type": "string"}},
                                }
                            }
                        },
                    },
                    "404": {
                        "description": "missing",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                },
            }
        },
        "/export": {
            "post": {
                "operationId": "export",
                "responses": {
                    "200": {
                        "description": "lines",
                        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
    },
}


def _answer(method: str, path: str, status: int, body: bytes, **headers: str) -> httpx.Response:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body, headers=headers))
    with httpx.Client(transport=transport, base_url="http://api.test") as client:
        return client.request(method, path)


def test_a_matching_answer_has_no_problems() -> None:
    checker = ContractChecker(DOCUMENT)
    answer = _answer(
        "GET", "/things/a", 200, b'{"id": "a"}', ETag='"1"', **{"content-type": "application/json"}
    )

    assert checker.problems(answer) == [] and checker.operation_of(answer) == "get_thing"


def test_an_undocumented_status_is_a_problem() -> None:
    answer = _answer("GET", "/things/a", 500, b"{}", **{"content-type": "application/json"})

    assert ContractChecker(DOCUMENT).problems(answer)


def test_a_body_off_its_schema_is_a_problem() -> None:
    answer = _answer(
        "GET", "/things/a", 200, b'{"name": 1}', ETag='"1"', **{"content-type": "application/json"}
    )

    assert any("id" in problem for problem in ContractChecker(DOCUMENT).problems(answer))


def test_a_missing_documented_header_is_a_problem() -> None:
    answer = _answer("GET", "/things/a", 200, b'{"id": "a"}', **{"content-type": "application/json"})

    assert ContractChecker(DOCUMENT).problems(answer)


def test_json_lines_are_checked_line_by_line() -> None:
    checker = ContractChecker(DOCUMENT)
    good = _answer(
        "POST", "/export", 200, b'{"a": 1}\n{"b": 2}\n', **{"content-type": "application/x-ndjson"}
    )
    bad = _answer("POST", "/export", 200, b'{"a": 1}\nnot json\n', **{"content-type": "application/x-ndjson"})

    assert checker.problems(good) == []
    assert checker.problems(bad) == [
        "line 2 of the NDJSON body is not JSON: Expecting value: line 1 column 1 (char 0)"
    ]


def test_the_hook_records_every_exchange() -> None:
    checker = ContractChecker(DOCUMENT)
    transport = httpx.MockTransport(lambda request: httpx.Response(404, json={}))
    with httpx.Client(
        transport=transport, base_url="http://api.test", event_hooks={"response": [checker.hook()]}
    ) as c:
        c.get("/things/x")

    assert [(e.operation_id, e.status, e.problems) for e in checker.exchanges] == [("get_thing", 404, ())]
