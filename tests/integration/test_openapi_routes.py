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
