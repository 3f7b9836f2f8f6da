"""Page cursors over every paginated listing: an empty cursor is refused, never read as the first page."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, ApiResponse, assert_invalid


def _entity(api: Api, name: str, entity_type: str = "person") -> str:
    response = api.post("/v1/entities", {"name": name, "entity_type": entity_type})
    assert response.status in (200, 201), response.json
    return str(response.json["id"])


def _send(api: Api, method: str, path: str, body: dict[str, Any] | None) -> ApiResponse:
    return api.post(path, body) if method == "POST" else api.get(path)


# (method, path with {entity} for an entity's id, body, the cursor's field): each with an empty cursor.
EMPTY_CURSORS = [
    ("POST", "/v1/memories/list", {"cursor": ""}, "cursor"),
    ("POST", "/v1/documents/list", {"cursor": ""}, "cursor"),
    ("GET", "/v1/sessions?user_id=u&cursor=", None, "cursor"),
    ("GET", "/v1/procedures?cursor=", None, "cursor"),
    ("GET", "/v1/plans?cursor=", None, "cursor"),
    ("GET", "/v1/task-context?cursor=", None, "cursor"),
    ("GET", "/v1/entities?cursor=", None, "cursor"),
    ("GET", "/v1/entities/{entity}?observations_cursor=", None, "observations_cursor"),
    ("GET", "/v1/entities/{entity}?relations_cursor=", None, "relations_cursor"),
    ("GET", "/v1/graph?entity={entity}&cursor=", None, "cursor"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), EMPTY_CURSORS)
def test_an_empty_cursor_is_422_not_the_first_page(
    api: Api, method: str, path: str, body: dict[str, Any] | None, field: str
) -> None:
    # Given an entity, so the routes about one find it
    ada = _entity(api, "Ada")

    # When the cursor is sent empty
    response = _send(api, method, path.format(entity=ada), body)

    # Then it is refused, naming the cursor, and saying to leave it out instead
    assert_invalid(response, field)
    assert "leave it out for the first page" in response.json["error"]["message"]
