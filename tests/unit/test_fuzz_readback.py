"""The fuzz gate's read-back: which GET shows what a write stored, and what counts as stored otherwise
than sent. It must be able to fail: each rule is shown catching a change."""

from __future__ import annotations

from typing import Any

from tests.gates.fuzz.readback import Exchange, Read, Readback

ITEM = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "content": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "metadata": {"type": "object", "additionalProperties": True},
        "valid_from": {"type": "string", "format": "date-time"},
        "source": {
            "anyOf": [
                {"type": "object", "properties": {"name": {"type": "string"}, "kind": {"type": "string"}}},
                {"type": "null"},
            ]
        },
        "version": {"type": "integer"},
    },
}


def _get(schema: str = "Item", parameters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "parameters": parameters or [],
        "responses": {
            "200": {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}
        },
    }


DOCUMENT: dict[str, Any] = {
    "paths": {
        "/v1/items": {"post": {}},
        "/v1/items/upsert": {"post": {}},
        "/v1/items/list": {"post": {}},
        "/v1/items/{id}": {"get": _get(parameters=[{"name": "user_id", "in": "query"}]), "patch": {}},
        "/v1/slots/{scope}/{key}": {"get": _get(), "put": {}},
    },
    "components": {"schemas": {"Item": ITEM}},
}
readback = Readback(DOCUMENT)


def _sent(method: str, path: str, body: Any, answer: Any, status: int = 201, **query: str) -> Exchange:
    return Exchange(method, path, query, body, status, answer)


def test_the_read_is_the_items_get_found_from_the_write() -> None:
    created = _sent("POST", "/v1/items", {"content": "x", "user_id": "u1"}, {"id": "a1"})
    upserted = _sent("POST", "/v1/items/upsert", {"content": "x"}, {"status": "created", "id": "a2"})
    patched = _sent("PATCH", "/v1/items/a3", {"content": "y"}, {"id": "a3"}, 200)
    put = _sent("PUT", "/v1/slots/s/k", {"value": 1}, {"version": 1}, 200)

    assert readback.plan(created) == Read("/v1/items/a1", {"user_id": "u1"}, ITEM)
    assert readback.plan(upserted) == Read("/v1/items/a2", {}, ITEM)
    assert readback.plan(patched) == Read("/v1/items/a3", {}, ITEM)
    assert readback.plan(put) == Read("/v1/slots/s/k", {}, ITEM)


def test_nothing_is_read_for_a_read_a_refusal_or_an_item_expired_at_once() -> None:
    assert readback.plan(_sent("POST", "/v1/items/list", {}, {"items": []}, 200)) is None
    assert readback.plan(_sent("POST", "/v1/items", {"content": "x"}, {"error": {}}, 422)) is None
    expired = {"content": "x", "expires_at": "2001-01-01T00:00:00Z"}
    assert readback.plan(_sent("POST", "/v1/items", expired, {"id": "a1"})) is None


def _differences(
    body: Any, stored: dict[str, Any], answer: dict[str, Any] | None = None, status: int = 201
) -> list[str]:
    sent = _sent("POST", "/v1/items", body, answer or {"id": "a1"}, status)
    read = readback.plan(sent)
    assert read is not None
    return readback.differences(sent, read, {"id": "a1", **stored})


def test_a_changed_text_list_or_document_is_caught() -> None:
    assert _differences({"content": "N\u0000ame"}, {"content": "N ame"})
    assert _differences({"tags": [" a "]}, {"tags": ["a"]})
    assert _differences({"tags": ["a", "a"]}, {"tags": ["a"]})
    assert _differences({"metadata": {"n": 1}}, {"metadata": {"n": 1, "extra": True}})
    assert _differences({"metadata": {"b": True}}, {"metadata": {"b": 1}})  # true is not 1
    assert _differences({"source": {"name": "A"}}, {"source": {"name": "a", "kind": "x"}})


def test_the_same_value_in_another_spelling_is_not_a_change() -> None:
    assert (
        _differences({"valid_from": "2000-01-01T00:00:19+20:38"}, {"valid_from": "1999-12-31T03:22:19Z"})
        == []
    )
    assert (
        _differences(
            {"metadata": {"n": 7.790416520417469e86}}, {"metadata": {"n": 7790416520417469 * 10**71}}
        )
        == []
    )
    assert (
        _differences({"source": {"name": "A"}}, {"source": {"name": "A", "kind": "x"}}) == []
    )  # a typed object: what was sent
    assert _differences({"content": "x", "unknown_field": 1}, {"content": "x"}) == []
    assert _differences({"content": None}, {"content": "default"}) == []  # null: not given


def test_another_instant_is_caught() -> None:
    assert _differences({"valid_from": "2000-01-01T00:00:00+01:00"}, {"valid_from": "2000-01-01T00:00:00Z"})


def test_the_writes_answer_must_be_what_is_stored_unless_work_goes_on() -> None:
    assert _differences({}, {"content": "b"}, {"id": "a1", "content": "a"})
    assert _differences({}, {"content": "b"}, {"id": "a1", "content": "a"}, status=202) == []


def test_an_item_another_writer_changed_meanwhile_is_not_compared() -> None:
    assert _differences({"content": "a"}, {"content": "b", "version": 3}, {"id": "a1", "version": 2}) == []
    assert _differences({"content": "a"}, {"content": "b", "version": 2}, {"id": "a1", "version": 2})
