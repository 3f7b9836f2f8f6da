"""Input that cannot be stored exactly as sent is refused with a 422 naming the field: never a 500,
never a silent rewrite (issue 14's findings, one by one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram.fields import MAX_JSON_DEPTH
from tests.conftest import Api, ApiResponse
from tests.integration.documents_helpers import wait_final


def refused(response: ApiResponse, field: str) -> str:
    assert response.status == 422, (response.status, response.json)
    error = response.json["error"]
    assert error["code"] == "validation_error"
    assert error["field"] == field, error
    return str(error["message"])


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


# --- NUL characters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/entities", {"name": "N\u0000ame"}, "name"),
        ("/v1/entities", {"name": "Alice", "aliases": ["A\u0000"]}, "aliases[0]"),
        (
            "/v1/relations",
            {"source": {"name": "X\u0000y"}, "relation_type": "knows", "target": {"name": "B"}},
            "source.EntityRef.name",
        ),
        (
            "/v1/memories",
            {"content": "x", "embedding": [0.1, 0.5, 0.5], "embedding_model": "m\u0000"},
            "embedding_model",
        ),
        ("/v1/memories", {"content": "x", "metadata": {"k\u0000": 1}}, "metadata"),
        ("/v1/memories", {"content": "x", "tags": ["a\u0000b"]}, "tags[0]"),
        ("/v1/documents", {"content": "a\u0000b"}, "content"),
        ("/v1/procedures/match", {"situation": "s\u0000"}, "situation"),
    ],
)
def test_nul_characters_are_refused_never_rewritten(api: Api, path: str, body: dict, field: str) -> None:
    message = refused(api.post(path, body), field)

    assert "NUL" in message
    assert api.get("/v1/entities").json["entities"] == []  # nothing stored, "N ame" included


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/entities?q=a%00b", "q"),
        ("/v1/entities?type=a%00", "type"),
        ("/v1/entities?cursor=%00", "cursor"),
        ("/v1/graph?entity=a%00b", "entity"),
        ("/v1/sessions?user_id=u&cursor=%00", "cursor"),
        ("/v1/procedures?cursor=%00", "cursor"),
        ("/v1/profile?user_id=u&q=a%00", "q"),
        ("/v1/memories/00000000-0000-0000-0000-000000000000?user_id=%00", "user_id"),
    ],
)
def test_nul_characters_in_query_parameters_are_refused(api: Api, path: str, field: str) -> None:
    refused(api.get(path), field)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/profile?q=", "q"),
        ("/v1/profile?user_id=", "user_id"),
        ("/v1/profile?user_id=carol&container=", "container"),
        ("/v1/sessions?user_id=", "user_id"),
        ("/v1/stats?user_id=", "user_id"),
    ],
)
def test_an_empty_query_parameter_is_refused_as_empty(api: Api, path: str, field: str) -> None:
    message = refused(api.get(path), field)

    assert message == f"{field}: must not be empty (leave the parameter out, or give it a value)"


@pytest.mark.parametrize(
    ("path", "body", "field", "problem"),
    [
        ("/v1/memories", {"content": "x", "user_id": ""}, "user_id", "must not be empty"),
        ("/v1/memories", {"content": "x", "tags": [""]}, "tags[0]", "must not be empty"),
        (
            "/v1/memories",
            {"content": "x", "user_id": "u" * 256},
            "user_id",
            "must have at most 255 characters, not 256",
        ),
    ],
)
def test_a_strings_length_is_worded_in_characters_not_items(
    api: Api, path: str, body: dict, field: str, problem: str
) -> None:
    assert refused(api.post(path, body), field) == f"{field}: {problem}"


# --- numbers -------------------------------------------------------------------------------------


def test_a_metadata_number_beyond_double_precision_is_refused(api: Api) -> None:
    message = refused(api.post("/v1/memories", raw=b'{"content": "x", "metadata": {"n": 1e400}}'), "metadata")

    assert "n is not a finite number" in message
    for constant in (b"NaN", b"Infinity", b"-Infinity"):  # not JSON, though Python's decoder reads them
        malformed = api.post("/v1/memories", raw=b'{"content": "x", "metadata": {"n": ' + constant + b"}}")
        assert malformed.status == 400 and malformed.json["error"]["code"] == "malformed_json"
    digits = b"1" * 5000
    too_long = api.post("/v1/memories", raw=b'{"content": "x", "metadata": {"n": ' + digits + b"}}")
    assert too_long.status == 422 and "too long" in too_long.json["error"]["message"]
    assert api.post("/v1/memories/list", raw=b'{"limit": ' + digits + b"}").status == 422
    put = api.put("/v1/working/plan-1/k", raw=b'{"value": [1, -1e400]}')
    assert "[1] is not a finite number" in refused(put, "value")


def test_a_number_too_small_for_a_double_is_refused_not_stored_as_zero(api: Api) -> None:
    # Given a confidence that a double holds only as 0.0
    # When the memory is posted
    response = api.post("/v1/memories", raw=b'{"content": "x", "confidence": 1e-400}')

    # Then it is a 422 naming confidence and what it would have become, and nothing is stored
    assert "would be stored as 0.0" in refused(response, "confidence")
    assert api.get("/v1/stats").json["total"] == 0


def test_an_inexact_number_in_a_vector_is_refused_at_its_index(api: Api) -> None:
    # Given a search embedding whose second number underflows, When the search is posted
    raw = b'{"query": "x", "embedding": [0.5, 1e-400, 0.5], "embedding_model": "m3"}'

    # Then the element is named
    refused(api.post("/v1/search", raw=raw), "embedding[1]")


def test_a_vector_outside_float4_is_refused(api: Api) -> None:
    body = {"content": "x", "embedding": [1e39, 0.5, 0.5], "embedding_model": "m3"}

    refused(api.post("/v1/memories", body), "embedding[0]")
    search = {"query": "x", "embedding": [0.5, -3.5e38, 0.5], "embedding_model": "m3"}
    refused(api.post("/v1/search", search), "embedding[1]")
    largest = {**body, "embedding": [3.4e38, 0.5, 0.5]}
    assert api.post("/v1/memories", largest).status == 201


def test_a_vector_of_zeros_is_refused_where_a_memory_or_a_query_takes_one(api: Api) -> None:
    zeros = {"embedding": [0.0, 0.0, -0.0], "embedding_model": "m3"}

    stored = api.post("/v1/memories", {"content": "Zero vector row", **zeros})
    searched = api.post("/v1/search", {"query": "x", **zeros})
    batch = api.post("/v1/memories/batch", {"memories": [{"content": "fine"}, {"content": "zero", **zeros}]})

    assert "all zeros" in refused(stored, "embedding")
    assert "all zeros" in refused(searched, "embedding")
    assert batch.status == 422 and "all zeros" in batch.json["error"]["message"]
    assert api.post("/v1/memories/list", {}).json["memories"] == []


@pytest.mark.parametrize("element", [True, "0.5", None, {"x": 1}])
def test_a_vector_element_that_is_not_a_number_is_refused_as_any_number_is(api: Api, element: Any) -> None:
    body = {"content": "x", "embedding": [0.5, element, 0.5], "embedding_model": "m3"}
    message = refused(api.post("/v1/memories", body), "embedding[1]")
    assert message == "embedding[1]: must be a JSON number (not true/false, not a string)"
    search = {"query": "x", "embedding": [element, 0.5, 0.5], "embedding_model": "m3"}
    message = refused(api.post("/v1/search", search), "embedding[0]")
    assert message == "embedding[0]: must be a JSON number (not true/false, not a string)"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "confidence": True}, "confidence"),
        ({"content": "x", "confidence": "0.5"}, "confidence"),
        ({"content": "x", "valid_from": 12345}, "valid_from"),
        ({"content": "x", "expires_at": 1.5e9}, "expires_at"),
        ({"content": "x", "valid_from": "12345"}, "valid_from"),
        ({"content": "x", "embedding": [True, 0.5, 0.5], "embedding_model": "m3"}, "embedding[0]"),
    ],
)
def test_types_are_strict_no_bool_for_a_number_no_number_for_a_date(api: Api, body: dict, field: str) -> None:
    refused(api.post("/v1/memories", body), field)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/search", {"query": "x", "limit": True}, "limit"),
        ("/v1/search", {"query": "x", "include_history": "yes"}, "include_history"),
        ("/v1/memories/list", {"limit": "5"}, "limit"),
        ("/v1/procedures/match", {"situation": "s", "min_similarity": False}, "min_similarity"),
        (
            "/v1/relations",
            {"source": {"name": "A"}, "relation_type": "knows", "target": {"name": "B"}, "confidence": True},
            "confidence",
        ),
    ],
)
def test_strict_types_hold_on_every_route(api: Api, path: str, body: dict, field: str) -> None:
    refused(api.post(path, body), field)


def test_a_key_sent_twice_is_refused_and_nothing_stored(api: Api) -> None:
    # Given a body that sends content twice, When it is posted
    response = api.post("/v1/memories", raw=b'{"content": "a", "content": "b"}')

    # Then it is a 422 naming content, and neither value is stored
    message = refused(response, "content")
    assert "more than once" in message
    assert api.get("/v1/stats").json["total"] == 0


def test_a_key_sent_twice_in_metadata_is_refused_at_its_path(api: Api) -> None:
    # Given metadata that holds a key twice, When the memory is posted
    response = api.post("/v1/memories", raw=b'{"content": "a", "metadata": {"k": 1, "k": 2}}')

    # Then the key's path is named
    refused(response, "metadata.k")


def test_an_integral_float_is_still_an_integer(api: Api) -> None:
    # JSON Schema's integer admits 5.0; only true/false and strings are refused.
    assert api.post("/v1/memories/list", {"limit": 5.0}).status == 200


# --- dates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stamp",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00Z"],
)
def test_timestamps_out_of_range_are_refused(api: Api, stamp: str) -> None:
    assert "out of range" in refused(
        api.post("/v1/memories", {"content": "x", "valid_from": stamp}), "valid_from"
    )
    assert refused(api.post("/v1/documents", {"content": "x", "document_date": stamp}), "document_date")
    relation = {
        "source": {"name": "A"},
        "relation_type": "knows",
        "target": {"name": "B"},
        "valid_from": stamp,
    }
    refused(api.post("/v1/relations", relation), "valid_from")
    refused(api.get(f"/v1/graph?entity=A&as_of={stamp.replace('+', '%2B')}"), "as_of")


@pytest.mark.parametrize("stamp", ["0001-01-02T00:00:00Z", "9999-12-30T23:59:59.999999Z"])
def test_timestamps_at_the_edges_of_the_range_are_stored_and_read_back_exactly(api: Api, stamp: str) -> None:
    starting = api.post("/v1/memories", {"content": "x", "valid_from": stamp})
    expiring = api.post("/v1/memories", {"content": "y", "expires_at": stamp})

    assert starting.status == 201, starting.json
    assert api.get(f"/v1/memories/{starting.json['id']}").json["valid_from"] == stamp
    if stamp.startswith("0001"):  # it would expire before the memory begins (now): refused
        assert expiring.status == 422 and expiring.json["error"]["field"] == "expires_at"
    else:
        assert expiring.status == 201, expiring.json
        assert api.get(f"/v1/memories/{expiring.json['id']}").json["expires_at"] == stamp


def test_a_utc_offset_beyond_postgresqls_is_stored_as_its_instant(api: Api) -> None:
    # Found by the fuzz gate: an offset of +20:38 (RFC 3339 allows up to 23:59; PostgreSQL only 15:59)
    # was a 500 wherever a timestamp reached SQL.
    stamp, instant = "2000-01-01T00:00:19+20:38", "1999-12-31T03:22:19Z"

    created = api.post("/v1/memories", {"content": "far east", "valid_from": stamp})
    searched = api.post("/v1/search", {"query": "far east", "as_of": stamp})
    graph = api.get("/v1/graph?entity=A&as_of=2000-01-01T00:00:19-19:00")

    assert created.status == 201, created.json
    assert api.get(f"/v1/memories/{created.json['id']}").json["valid_from"] == instant
    assert searched.status == 200, searched.json
    assert graph.status in (200, 404), graph.json


def test_a_confidence_is_stored_to_the_last_digit_sent(api: Api) -> None:
    # Found by the fuzz gate's read-back: single precision kept 0.6224882154995234 as 0.6224882.
    confidence = 0.6224882154995234
    memory = api.post("/v1/memories", {"content": "precise", "confidence": confidence})
    relation_body = {"source": {"name": "A"}, "relation_type": "knows", "target": {"name": "B"}}
    relation = api.post("/v1/relations", {**relation_body, "confidence": confidence})

    assert memory.status == 201 and memory.json["confidence"] == confidence
    assert api.get(f"/v1/memories/{memory.json['id']}").json["confidence"] == confidence
    assert relation.status == 201 and relation.json["confidence"] == confidence


def test_a_timestamp_more_precise_than_a_microsecond_is_refused(api: Api) -> None:
    message = refused(
        api.post("/v1/memories", {"content": "x", "valid_from": "2024-01-01T00:00:00.1234567Z"}), "valid_from"
    )

    assert "microsecond" in message
    padded = api.post("/v1/memories", {"content": "x", "valid_from": "2024-01-01T00:00:00.123456000Z"})
    assert padded.status == 201 and padded.json["valid_from"] == "2024-01-01T00:00:00.123456Z"


def test_a_relation_that_ended_in_the_past_needs_its_start(api: Api) -> None:
    body = {"source": {"name": "A"}, "relation_type": "knows", "target": {"name": "B"}}

    message = refused(api.post("/v1/relations", {**body, "valid_to": "2001-01-01T00:00:00Z"}), "body")

    assert "valid_from" in message
    assert api.get("/v1/entities").json["entities"] == []  # nothing written
    ended = api.post(
        "/v1/relations", {**body, "valid_from": "2000-01-01T00:00:00Z", "valid_to": "2001-01-01T00:00:00Z"}
    )
    assert ended.status == 201 and ended.json["current"] is False


# --- nesting -------------------------------------------------------------------------------------


def test_json_nested_2000_deep_is_refused_naming_the_field(api: Api) -> None:
    raw = '{"content": "x", "metadata": ' + '{"a": ' * 2000 + "1" + "}" * 2001

    message = refused(api.post("/v1/memories", raw=raw.encode()), "metadata")

    assert str(MAX_JSON_DEPTH) in message
    working = '{"value": ' + "[" * 5000 + "]" * 5000 + "}"
    refused(api.put("/v1/working/plan-1/k", raw=working.encode()), "value")
    assert api.post("/v1/search", raw=("[" * 3000 + "]" * 3000).encode()).status == 422


def test_nesting_is_refused_beyond_the_stated_depth_and_kept_within_it(api: Api) -> None:
    too_deep = api.post("/v1/memories", {"content": "x", "metadata": nested(MAX_JSON_DEPTH + 1)})
    deepest = api.post("/v1/memories", {"content": "x", "metadata": nested(MAX_JSON_DEPTH)})

    assert f"deeper than {MAX_JSON_DEPTH} levels" in refused(too_deep, "metadata")
    assert deepest.status == 201 and deepest.json["metadata"] == nested(MAX_JSON_DEPTH)
    search = {"query": "x", "filters": {"metadata": nested(MAX_JSON_DEPTH + 1)}}
    refused(api.post("/v1/search", search), "filters.metadata")


# --- nothing trimmed, nothing ignored ------------------------------------------------------------


@pytest.mark.parametrize("tag", [" a", "a ", "\ta", "a\n"])
def test_a_tag_with_whitespace_at_either_end_is_refused_not_trimmed(api: Api, tag: str) -> None:
    assert "whitespace" in refused(api.post("/v1/memories", {"content": "x", "tags": [tag]}), "tags[0]")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/sessions", {"user_id": " alice"}, "user_id"),
        ("/v1/sessions", {"agent_id": "planner\n"}, "agent_id"),
        ("/v1/memories", {"content": "x", "user_id": "alice "}, "user_id"),
        ("/v1/memories", {"content": "x", "agent_id": "\tplanner"}, "agent_id"),
        ("/v1/memories", {"content": "x", "conversation_id": "c-1 "}, "conversation_id"),
        ("/v1/memories/batch", {"memories": [{"content": "x", "user_id": " "}]}, "memories[0].user_id"),
        ("/v1/search", {"query": "x", "filters": {"user_id": "alice "}}, "filters.user_id"),
        ("/v1/procedures", {"trigger": "t", "content": "c", "agent_id": " planner"}, "agent_id"),
    ],
)
def test_an_id_with_whitespace_at_either_end_is_refused_not_trimmed(
    api: Api, path: str, body: dict, field: str
) -> None:
    # When an id (a party: user_id, agent_id; conversation_id) comes with whitespace at either end
    message = refused(api.post(path, body), field)

    # Then it is refused as a label is, and nothing is stored: " alice" would be another party than "alice"
    assert message.endswith(": must not start or end with whitespace (nothing is trimmed: send it as meant)")
    _header, *records, end = [json.loads(line) for line in api.post("/v1/export").raw.decode().splitlines()]
    assert records == [] and end["record"] == "end"


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("GET", "/v1/memories/00000000-0000-0000-0000-000000000000?user_id=%20alice", "user_id"),
        ("DELETE", "/v1/memories/00000000-0000-0000-0000-000000000000?user_id=alice%20", "user_id"),
        ("GET", "/v1/sessions?agent_id=planner%09", "agent_id"),
        ("GET", "/v1/stats?user_id=alice%0A", "user_id"),
        ("DELETE", "/v1/users/%20alice?confirm=true", "user_id"),
    ],
)
def test_an_id_with_whitespace_at_either_end_is_refused_in_the_query_and_path(
    api: Api, method: str, path: str, field: str
) -> None:
    response = api.get(path) if method == "GET" else api.delete(path)

    assert "must not start or end with whitespace" in refused(response, field)


def test_an_id_is_kept_exactly_as_sent_with_whitespace_inside(api: Api) -> None:
    created = api.post("/v1/memories", {"content": "x", "user_id": "Alice Smith", "agent_id": "a\tb"})

    assert created.status == 201, created.json
    assert (created.json["user_id"], created.json["agent_id"]) == ("Alice Smith", "a\tb")


def test_tags_are_kept_exactly_as_sent(api: Api) -> None:
    created = api.post("/v1/memories", {"content": "x", "tags": ["two words", "Ünïcode", "a\tb"]})

    assert created.status == 201
    assert created.json["tags"] == ["two words", "Ünïcode", "a\tb"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "filename": " notes.txt"}, "filename"),
        ({"content": "x", "title": "Notes "}, "title"),
        ({"url": " https://example.com/a"}, "url"),
    ],
)
def test_document_labels_are_not_trimmed(api: Api, body: dict, field: str) -> None:
    refused(api.post("/v1/documents", body), field)
    assert api.post("/v1/documents/list", {}).json["documents"] == []


def test_instructions_are_kept_exactly_as_sent(api: Api) -> None:
    text = "  Record diets as preferences.\n"

    put = api.put("/v1/extraction-instructions", {"instructions": text})

    assert put.status == 201 and put.json["instructions"] == text
    refused(api.put("/v1/extraction-instructions", {"instructions": " \n "}), "instructions")


@pytest.mark.parametrize(
    ("name", "stored"),
    [("Alice  Smith", "Alice Smith"), (" Alice", "Alice"), ("Al\u0007ice", "Al ice"), ("ﬁnance", "finance")],
)
def test_an_entity_name_that_would_be_rewritten_is_refused(api: Api, name: str, stored: str) -> None:
    message = refused(api.post("/v1/entities", {"name": name}), "name")

    assert repr(stored) in message
    assert api.get("/v1/entities").json["entities"] == []


@pytest.mark.parametrize(("value", "canonical"), [("Person", "person"), ("org", "organization")])
def test_an_entity_type_not_in_its_stored_form_is_refused(api: Api, value: str, canonical: str) -> None:
    assert repr(canonical) in refused(
        api.post("/v1/entities", {"name": "Acme", "entity_type": value}), "entity_type"
    )


def test_upsert_refuses_supersedes_instead_of_ignoring_it(api: Api) -> None:
    old = api.post("/v1/memories", {"content": "Alice lives in Paris"}).json

    message = refused(
        api.post("/v1/memories/upsert", {"content": "Alice lives in Berlin now", "supersedes": old["id"]}),
        "supersedes",
    )

    assert "POST /v1/memories" in message
    assert api.get(f"/v1/memories/{old['id']}").json["is_latest"] is True
    assert len(api.post("/v1/memories/list", {}).json["memories"]) == 1


# --- documents -----------------------------------------------------------------------------------


def test_a_document_of_only_control_characters_fails_as_empty(api: Api) -> None:
    response = api.post("/v1/documents", {"content": "\x01\x02\x03\x1b\x7f" * 2000, "filename": "c.txt"})

    doc = wait_final(api, response.json["id"])

    assert doc["status"] == "failed" and doc["error"]["code"] == "empty_content"
    assert doc["chunk_count"] == doc["memory_count"] == 0


# --- content types -------------------------------------------------------------------------------

JSON_BODY_ROUTES = [
    ("POST", "/v1/memories", {"content": "x"}),
    ("POST", "/v1/search", {"query": "x"}),
    ("POST", "/v1/memories/list", {}),
    ("POST", "/v1/entities", {"name": "Alice"}),
    ("POST", "/v1/sessions", {"user_id": "u"}),
    ("PUT", "/v1/working/plan-1/k", {"value": 1}),
    ("POST", "/v1/procedures", {"trigger": "t", "content": "c"}),
    ("POST", "/v1/containers", {"name": "a"}),
    ("POST", "/v1/documents", {"content": "x"}),
    ("POST", "/v1/export", {}),
]


@pytest.mark.parametrize(
    "content_type", ["multipart/form-data", "multipart/form-data; boundary=x", "text/plain"]
)
@pytest.mark.parametrize(("method", "path", "body"), JSON_BODY_ROUTES, ids=[r[1] for r in JSON_BODY_ROUTES])
def test_a_json_route_reads_json_whatever_the_content_type_says(
    api: Api, method: str, path: str, body: dict, content_type: str
) -> None:
    response = api.call(method, path, body, headers={"Content-Type": content_type})

    assert response.status < 300, response.json
    if path == "/v1/documents":
        wait_final(api, response.json["id"])


def test_a_multipart_upload_without_a_boundary_is_a_422(api: Api) -> None:
    response = api.post(
        "/v1/documents/upload", raw=b"--x\r\n", headers={"Content-Type": "multipart/form-data"}
    )

    assert response.status == 422 and "boundary" in response.json["error"]["message"]
