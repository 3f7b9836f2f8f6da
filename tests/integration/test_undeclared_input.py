"""What a route does not read is refused, not dropped: a query parameter it does not declare is a 422
naming it, and so are a body sent to a route that reads none and a query parameter sent more than once
(each takes one value), on every route of engram.api.routes, read from the resolvers themselves, so a new
route is covered without a new test."""

from __future__ import annotations

import pytest

from engram.api.app import route_of
from engram.api.routes import ROUTES, Route
from engram.local.functions import load_function
from tests.conftest import Api, assert_invalid
from tests.integration.route_paths import PATH_VALUES


def _url(route: Route, query: str) -> str:
    path = route.path
    for name, value in PATH_VALUES.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, f"no example value for a path parameter of {route.path}: add it to PATH_VALUES"
    return f"{path}?{query}"


def _takes_no_body(route: Route) -> bool:
    found = route_of(load_function(route.function).app, route.method, route.path)
    assert found is not None
    return not found.dependant.body_params and not route.streamed_body


NO_BODY_ROUTES = [r for r in ROUTES if r.authorized and _takes_no_body(r)]


def _declared(route: Route) -> list[str]:
    found = route_of(load_function(route.function).app, route.method, route.path)
    assert found is not None
    return [field.alias for field in found.dependant.query_params]


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_every_route_of_the_table_is_found_in_its_resolver(route: Route) -> None:
    # Given a route of the table, When its function's resolver is asked for it by method and resource
    found = route_of(load_function(route.function).app, route.method, route.path)

    # Then it is there: the checks made before resolving apply to every route
    assert found is not None


@pytest.mark.parametrize("route", [r for r in ROUTES if r.authorized], ids=lambda r: f"{r.method} {r.path}")
def test_an_undeclared_query_parameter_is_refused_on_every_route(api: Api, route: Route) -> None:
    # Given a query parameter no route declares
    # When any route is called with it
    response = api.call(route.method, _url(route, "bogus=1"))

    # Then it is a 422 naming it and listing what the route takes
    assert_invalid(response, "bogus")
    declared = _declared(route)
    takes = f"it takes {', '.join(declared)}" if declared else "it takes none"
    assert response.json["error"]["message"] == (
        f"bogus: not a query parameter of {route.method} {route.path}; {takes}"
    )


def test_the_health_check_refuses_an_undeclared_query_parameter_too(anonymous_api: Api) -> None:
    # Given the one route that needs no key, When it is called with a parameter it does not take
    response = anonymous_api.get("/health?verbose=true")

    # Then it is refused as on every other route
    assert_invalid(response, "verbose")


def test_a_typo_of_a_query_parameter_is_refused_not_answered_with_the_default(api: Api) -> None:
    # Given a memory
    memory = api.post("/v1/memories", {"content": "Alice lives in Paris"}).json

    # When its neighbours are asked for with ?dept= (meaning ?depth=)
    response = api.get(f"/v1/memories/{memory['id']}/related?dept=3")

    # Then the typo is named, with the parameters the route does take
    assert_invalid(response, "dept")
    assert "it takes depth, limit, user_id" in response.json["error"]["message"]


def test_a_misspelt_user_id_is_a_422_not_a_misleading_404(api: Api) -> None:
    # Given a private memory of zoe
    body = {"content": "Zoe likes tea", "user_id": "zoe", "visibility": "private"}
    memory = api.post("/v1/memories", body).json

    # When it is read with ?userid=zoe
    response = api.get(f"/v1/memories/{memory['id']}?userid=zoe")

    # Then userid is named as unknown, rather than the memory being "not found"
    assert_invalid(response, "userid")


def test_every_undeclared_query_parameter_is_listed(api: Api) -> None:
    # Given a request with a known parameter and two unknown ones
    # When it is sent
    response = api.get("/v1/profile?user_id=zoe&bogus=1&other=2")

    # Then the first unknown is the field, and both are listed
    assert_invalid(response, "bogus")
    assert [e["field"] for e in response.json["error"]["errors"]] == ["bogus", "other"]


def test_a_repeated_declared_parameter_is_not_undeclared(api: Api) -> None:
    # Given a declared parameter sent twice (multiValueQueryStringParameters holds both)
    # When the route is called
    response = api.get("/v1/sessions?user_id=a&user_id=a")

    # Then it is not called undeclared (it is refused as sent twice: see the last section)
    assert "not a query parameter" not in response.json.get("error", {}).get("message", ""), response.json


def test_declared_parameters_are_still_read(api: Api) -> None:
    # Given a memory, When its neighbours are asked for with the parameters the route declares
    memory = api.post("/v1/memories", {"content": "Alice lives in Paris"}).json
    response = api.get(f"/v1/memories/{memory['id']}/related?depth=2&limit=5")

    # Then they are read
    assert response.status == 200, response.json


# --- a body where the route reads none -----------------------------------------------------------


def test_the_routes_that_read_no_body_are_found() -> None:
    names = {r.operation_id for r in NO_BODY_ROUTES}
    assert {"revert_memory", "get_recent_messages", "extract_session", "archive_container"} <= names
    assert not names & {"import_tenant", "upload_document", "export", "create_memory"}


@pytest.mark.parametrize("route", NO_BODY_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_a_body_is_refused_on_every_route_that_reads_none(api: Api, route: Route) -> None:
    # Given a route that reads no body, When it is sent one
    response = api.call(route.method, _url(route, "").rstrip("?"), {"bogus": True})

    # Then it is a 422 saying so, before anything is done
    assert_invalid(response, "body")
    assert response.json["error"]["message"].startswith("body: this route takes no body")


def test_a_revert_sent_a_body_reverts_nothing(api: Api) -> None:
    # Given a memory superseded by another
    old = api.post("/v1/memories", {"content": "Alice lives in Paris"}).json
    new = api.post("/v1/memories", {"content": "Alice lives in Berlin", "supersedes": old["id"]}).json

    # When the revert is sent an array body
    response = api.post(f"/v1/memories/{old['id']}/revert", [{"content": "a"}])

    # Then it is refused, and the supersession stands
    assert_invalid(response, "body")
    assert api.get(f"/v1/memories/{new['id']}").json["is_latest"] is True


def test_a_query_parameter_sent_in_the_body_is_pointed_to_the_query_string(api: Api) -> None:
    # Given a session with two messages
    session = api.post("/v1/sessions", {"user_id": "u"}).json
    messages = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
    api.post(f"/v1/sessions/{session['id']}/messages?user_id=u", {"messages": messages})

    # When the recent messages are asked for with the limit in the body
    response = api.post(f"/v1/sessions/{session['id']}/recent?user_id=u", {"limit": 1})

    # Then it is refused, and the message says where limit goes
    assert_invalid(response, "body")
    assert response.json["error"]["message"] == (
        "body: this route takes no body; limit goes in the query string (?limit=...)"
    )


@pytest.mark.parametrize("raw", [b'"hello"', b"5", b"null", b"[]", b"{", b'{"user_id": "x", "bogus": true}'])
def test_any_body_but_an_empty_object_is_refused_where_none_is_read(api: Api, raw: bytes) -> None:
    # Given a session, When its extraction is sent a body of any other shape
    session = api.post("/v1/sessions", {"user_id": "u"}).json
    response = api.post(f"/v1/sessions/{session['id']}/extract?user_id=u", raw=raw)

    # Then it is refused as a body the route does not read, saying where its parameters go
    assert_invalid(response, "body")
    assert response.json["error"]["message"].startswith("body: this route takes no body; ")
    assert "in the query string" in response.json["error"]["message"]


@pytest.mark.parametrize("raw", [b"", b" \n", b"{}", b" { } "])
def test_a_body_that_carries_nothing_is_accepted_where_none_is_read(api: Api, raw: bytes) -> None:
    # Given a session, When its extraction is sent no body, whitespace or an empty object
    session = api.post("/v1/sessions", {"user_id": "u"}).json
    response = api.post(f"/v1/sessions/{session['id']}/extract?user_id=u", raw=raw)

    # Then nothing is dropped, and it is answered
    assert response.status == 200, response.json


# --- a query parameter sent more than once -----------------------------------------------------


QUERY_ROUTES = [r for r in ROUTES if r.authorized and _declared(r)]


@pytest.mark.parametrize("route", QUERY_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_a_single_value_query_parameter_sent_twice_is_refused_on_every_route(api: Api, route: Route) -> None:
    # Given a query parameter a route declares (each route's take one value: none declares a list)
    name = _declared(route)[0]

    # When it is sent twice
    response = api.call(route.method, _url(route, f"{name}=1&{name}=2"))

    # Then it is a 422 naming it and saying it takes one value, not pydantic's words for a list
    assert_invalid(response, name)
    assert response.json["error"]["message"] == f"{name}: sent 2 times; this query parameter takes one value"


def test_a_repeated_limit_is_refused_even_with_the_same_value(api: Api) -> None:
    # Given a memory
    memory = api.post("/v1/memories", {"content": "Alice lives in Paris"}).json

    # When its neighbours are asked for with ?limit= three times, the same value each time
    response = api.get(f"/v1/memories/{memory['id']}/related?depth=2&limit=5&limit=5&limit=5")

    # Then the repetition is named, with how many times it came
    assert_invalid(response, "limit")
    assert response.json["error"]["message"] == "limit: sent 3 times; this query parameter takes one value"
    assert response.json["error"]["errors"] == [
        {"field": "limit", "message": "sent 3 times; this query parameter takes one value"}
    ]
