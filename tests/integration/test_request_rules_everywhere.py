"""The input rules hold for every field of every operation in /openapi.json, read from the document
itself, so a new route or field is covered without a new test: a NUL in any string, true/false for
any number, a number for any timestamp and 1 for any boolean are each a 422 naming the field; a boolean
query parameter takes `true` or `false` only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from engram.local.gateway import LocalGateway
from tests.conftest import Api
from tests.integration.route_paths import PATH_VALUES

NUL = "a\u0000b"
BEYOND_DOUBLE = "<1e400>"  # written as the JSON number 1e400, which no double holds


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    document = LocalGateway().openapi()
    return [
        (method.upper(), path, op)
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]


def _schemas() -> dict[str, Any]:
    return dict(LocalGateway().openapi()["components"]["schemas"])


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """A $ref, or `X | None`, as the schema of X; anything else as it is."""
    if "$ref" in schema:
        return _resolve(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas)
    members = [m for m in schema.get("anyOf", []) if m.get("type") != "null"]
    if len(members) == 1:
        return _resolve(members[0], schemas)
    return schema


def _bad_values(
    schema: dict[str, Any], schemas: dict[str, Any], field: str
) -> Iterator[tuple[Any, str, str]]:
    """(value, the field the 422 must name, what is wrong) for each rule the schema's value is under."""
    schema = _resolve(schema, schemas)
    kind = schema.get("type")
    if schema.get("anyOf"):
        return  # a real union (an id or an object): its members are checked where they are models
    if kind == "string" and schema.get("format") == "date-time":
        yield 1700000000, field, "a number for a timestamp"
        yield "0001-01-01T00:00:00+01:00", field, "a timestamp out of range"
    elif kind == "string":
        yield NUL, field, "a NUL character"
        yield "\udfff", field, "a lone surrogate"
    elif kind in ("number", "integer"):
        yield True, field, "true for a number"
        yield "1", field, "a string for a number"
    elif kind == "boolean":
        yield 1, field, "1 for a boolean"
    elif kind == "array":
        for value, inner, why in _bad_values(schema.get("items", {}), schemas, f"{field}[0]"):
            yield [value], inner, why
    elif kind == "object" and "properties" in schema:
        for name, prop in schema["properties"].items():
            for value, inner, why in _bad_values(prop, schemas, f"{field}.{name}" if field else name):
                yield {name: value}, inner, why
    elif kind == "object" or not kind:  # free JSON: metadata, a working value
        yield {"k": NUL}, field, "a NUL character in JSON"
        yield {"k": "x", "n": BEYOND_DOUBLE}, field, "a number beyond double precision"
        yield {"k": "\ud800"}, field, "a lone surrogate in JSON"


def _body_cases() -> list[Any]:
    schemas = _schemas()
    cases = []
    for method, path, op in _operations():
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body is None:
            continue
        model = _resolve(body, schemas)
        for name, prop in model.get("properties", {}).items():
            for value, field, why in _bad_values(prop, schemas, name):
                cases.append(
                    pytest.param(method, path, {name: value}, field, id=f"{method} {path} {field}: {why}")
                )
    return cases


def _query_cases() -> list[Any]:
    schemas = _schemas()
    cases = []
    for method, path, op in _operations():
        for parameter in op.get("parameters", []):
            schema = _resolve(parameter.get("schema", {}), schemas)
            if parameter["in"] == "query" and schema.get("type") == "string" and "format" not in schema:
                name = parameter["name"]
                cases.append(pytest.param(method, path, name, id=f"{method} {path}?{name}"))
    return cases


def _flag_cases() -> list[Any]:
    schemas = _schemas()
    cases = []
    for method, path, op in _operations():
        for parameter in op.get("parameters", []):
            schema = _resolve(parameter.get("schema", {}), schemas)
            if parameter["in"] == "query" and schema.get("type") == "boolean":
                name = parameter["name"]
                # the route's other required parameters, so that the flag is all that is wrong
                required = "".join(
                    f"&{p['name']}=x" for p in op["parameters"] if p["in"] == "query" and p.get("required")
                )
                for word in NOT_A_FLAG:
                    query = f"{name}={word}{required}"
                    cases.append(pytest.param(method, path, name, query, id=f"{method} {path}?{query}"))
    return cases


# What pydantic alone reads as a boolean, besides true and false.
NOT_A_FLAG = ["yes", "1", "on", "y", "t", "True", "0", "off", "no", "FALSE", ""]


def _url(path: str, query: str = "") -> str:
    for name, value in PATH_VALUES.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, f"no example value for a path parameter of {path}: add it to PATH_VALUES"
    return f"{path}?{query}" if query else path


def _encode(value: Any) -> bytes:
    return json.dumps(value).replace(f'"{BEYOND_DOUBLE}"', "1e400").encode()


BODY_CASES = _body_cases()
QUERY_CASES = _query_cases()
FLAG_CASES = _flag_cases()


def test_the_document_has_fields_to_check() -> None:
    assert len(BODY_CASES) > 150 and len(QUERY_CASES) > 15
    assert {case.values[2] for case in FLAG_CASES} == {"confirm", "new_ids", "upload", "include_history"}


@pytest.mark.parametrize(("method", "path", "body", "field"), BODY_CASES)
def test_every_body_field_refuses_what_cannot_be_stored_as_sent(
    api: Api, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    response = api.call(method, _url(path), raw=_encode(body))

    assert response.status == 422, (response.status, response.json)
    error = response.json["error"]
    named = {error.get("field")} | {e["field"] for e in error.get("errors", [])}
    assert field in named, error


@pytest.mark.parametrize(("method", "path", "name"), QUERY_CASES)
def test_every_string_query_parameter_refuses_nul(api: Api, method: str, path: str, name: str) -> None:
    response = api.call(method, _url(path, f"{name}=a%00b"))

    assert response.status == 422, (response.status, response.json)
    error = response.json["error"]
    assert name in {error.get("field")} | {e["field"] for e in error.get("errors", [])}, error


@pytest.mark.parametrize(("method", "path", "name", "query"), FLAG_CASES)
def test_every_boolean_query_parameter_takes_true_or_false_only(
    api: Api, method: str, path: str, name: str, query: str
) -> None:
    # Given a boolean query parameter sent as something other than true or false
    # When the route is called
    response = api.call(method, _url(path, query))

    # Then it is a 422 naming the parameter, whatever the route would have done with it
    assert response.status == 422, (response.status, response.json)
    error = response.json["error"]
    assert (error["code"], error["field"]) == ("validation_error", name), error
    assert error["message"] == f"{name}: must be true or false"
