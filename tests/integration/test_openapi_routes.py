"""Every route in the route table is served by its function and documented in the OpenAPI file."""

from __future__ import annotations

from engram.api.routes import ROUTES
from tests.conftest import Api


def test_openapi_documents_every_route(api: Api) -> None:
    response = api.get("/openapi.json")

    assert response.status == 200
    paths = response.json["paths"]
    for route in ROUTES:
        assert route.method.lower() in paths.get(route.path, {}), f"{route.method} {route.path}"


def test_every_operation_declares_the_422_every_route_can_answer(api: Api) -> None:
    # Every route refuses a query parameter it does not take, and a body it does not read, with a 422
    # (engram.api.app.resolve); QA found three operations that did not say so (no parameters, no JSON body).
    paths = api.get("/openapi.json").json["paths"]

    undeclared = [
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "422" not in operation["responses"]
    ]

    assert undeclared == []
    refused = api.get("/v1/containers?foo=1")
    assert refused.status == 422 and refused.json["error"]["field"] == "foo"
    assert api.get("/health?foo=1").status == 422


def test_every_429_and_503_declares_its_retry_after_header_in_seconds(api: Api) -> None:
    paths = api.get("/openapi.json").json["paths"]

    refusals = {
        f"{status} of {method.upper()} {path}": response.get("headers", {}).get("Retry-After")
        for path, operations in paths.items()
        for method, operation in operations.items()
        for status, response in operation["responses"].items()
        if status in ("429", "503")
    }

    assert any(where.startswith("429") for where in refusals)
    in_seconds = {"type": "integer", "minimum": 0}
    assert [where for where, header in refusals.items() if not header or header["schema"] != in_seconds] == []
