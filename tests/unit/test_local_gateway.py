"""The events and answers of the local API Gateway stand-in."""

from __future__ import annotations

import json

from engram.api.routes import ROUTES
from engram.local.gateway import HttpResponse, match_route, proxy_event, to_http


def _route(method: str, path: str) -> object:
    return next(r for r in ROUTES if (r.method, r.path) == (method, path))


def test_repeated_headers_keep_every_value_and_the_last_is_the_single_value() -> None:
    route = _route("POST", "/v1/search")
    headers = [("Accept", "text/plain"), ("X-Tag", "a"), ("x-tag", "b"), ("Content-Type", "application/json")]

    event = proxy_event(route, "POST", "/v1/search", "", headers, b"{}", {})  # type: ignore[arg-type]

    assert event["multiValueHeaders"] == {
        "Accept": ["text/plain"],
        "X-Tag": ["a", "b"],
        "Content-Type": ["application/json"],
    }
    assert event["headers"]["X-Tag"] == "b"


def test_path_parameters_are_decoded_and_an_encoded_slash_stays_in_its_segment() -> None:
    matched = match_route("PUT", "/v1/working/plan%3A7/step%2Done")
    assert not isinstance(matched, HttpResponse)
    assert matched.route.path == "/v1/working/{scope}/{key}"
    assert matched.params == {"scope": "plan:7", "key": "step-one"}
    assert matched.path == "/v1/working/plan:7/step-one"

    slashed = match_route("DELETE", "/v1/working/a%2Fb")
    assert not isinstance(slashed, HttpResponse)
    assert slashed.route.path == "/v1/working/{scope}"  # not /v1/working/{scope}/{key}
    assert slashed.params == {"scope": "a/b"} and slashed.path == "/v1/working/a%2Fb"


def test_unrouted_methods_and_paths_get_json_errors() -> None:
    for method, path, status, code in (
        ("TRACE", "/v1/search", 405, "method_not_allowed"),
        ("QUERY", "/v1/search", 405, "method_not_allowed"),
        ("GET", "/v1/nowhere", 404, "not_found"),
    ):
        answer = match_route(method, path)
        assert isinstance(answer, HttpResponse) and answer.status == status
        assert answer.headers["Content-Type"] == "application/json"
        assert json.loads(answer.body)["error"]["code"] == code


def test_a_405_names_the_methods_the_path_allows_in_allow() -> None:
    # RFC 9110 15.5.6: a 405 MUST carry Allow (schemathesis' unsupported_method check found it missing)
    for method in ("TRACE", "QUERY", "PATCH"):
        answer = match_route(method, "/v1/working/plan/step")
        assert isinstance(answer, HttpResponse) and answer.status == 405
        assert answer.headers["Allow"] == "PUT, GET, DELETE"
    assert "Allow" not in _as_response(match_route("GET", "/v1/nowhere")).headers


def test_a_literal_path_is_its_own_resource_as_in_api_gateway() -> None:
    # /v1/memories/list is not /v1/memories/{id} with id "list": GET on it is a 405 naming POST alone
    # (found by the fuzz gate: Allow listed GET, PATCH and DELETE, which the document does not)
    for method, path, allowed in (
        ("GET", "/v1/memories/list", "POST"),
        ("DELETE", "/v1/documents/upload", "POST"),
        ("OPTIONS", "/v1/procedures/match", "POST"),
    ):
        answer = _as_response(match_route(method, path))
        assert (answer.status, answer.headers["Allow"]) == (405, allowed)
    matched = match_route("GET", "/v1/memories/lists")
    assert not isinstance(matched, HttpResponse) and matched.route.path == "/v1/memories/{id}"


def _as_response(answer: object) -> HttpResponse:
    assert isinstance(answer, HttpResponse)
    return answer


def test_multi_value_response_headers_go_out_one_line_per_value() -> None:
    response = to_http(
        {
            "statusCode": 200,
            "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
            "body": "{}",
        }
    )
    assert response.lines() == (
        ("Content-Type", "application/json"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
    )
