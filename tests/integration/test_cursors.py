"""Page cursors over every paginated listing: a cursor pages only the listing it came from (same route,
same filters; the page size may change), and an empty cursor is refused, never read as the first page."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest

from engram.local.gateway import LocalGateway
from engram.local.stack import LocalDatabase
from engram.tenants import service as tenants
from tests.conftest import Api, ApiResponse, assert_invalid
from tests.integration.documents_helpers import ingest

ANOTHER_LISTING = "belongs to another listing"


def _entity(api: Api, name: str, entity_type: str = "person") -> str:
    response = api.post("/v1/entities", {"name": name, "entity_type": entity_type})
    assert response.status in (200, 201), response.json
    return str(response.json["id"])


def _send(api: Api, method: str, path: str, body: dict[str, Any] | None) -> ApiResponse:
    return api.post(path, body) if method == "POST" else api.get(path)


# --- an empty cursor --------------------------------------------------------------------------

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


# --- a cursor belongs to its listing ----------------------------------------------------------


@dataclass(frozen=True)
class Paged:
    """One paginated listing as a client calls it: its route, the filters that define it, and another
    filter for the same route (another sequence)."""

    method: str
    path: str  # {ada}: the seeded entity's id
    filters: dict[str, Any]
    other: dict[str, Any]
    items: str
    key: str = "id"
    cursor: str = "cursor"
    next: str = "next_cursor"


LISTINGS = {
    "memories": Paged(
        "POST", "/v1/memories/list", {"container": "c.one"}, {"container": "c.two"}, "memories"
    ),
    "documents": Paged(
        "POST",
        "/v1/documents/list",
        {"container": "d.one"},
        {"container": "d.one", "status": "done"},
        "documents",
    ),
    "sessions": Paged("GET", "/v1/sessions", {"user_id": "u1"}, {"user_id": "u2"}, "sessions"),
    "procedures": Paged("GET", "/v1/procedures", {"kind": "rule"}, {"kind": "example"}, "procedures"),
    "plans": Paged("GET", "/v1/plans", {"status": "pending"}, {"status": "running"}, "plans", key="plan_id"),
    "task contexts": Paged(
        "GET", "/v1/task-context", {"plan_id": "p1"}, {"plan_id": "p2"}, "task_contexts", key="task_id"
    ),
    "entities": Paged("GET", "/v1/entities", {"type": "place"}, {"type": "person"}, "entities"),
    "observations": Paged(
        "GET",
        "/v1/entities/{ada}",
        {},
        {"user_id": "u1"},
        "observations",
        key="memory_id",
        cursor="observations_cursor",
        next="observations_next_cursor",
    ),
    "relations": Paged(
        "GET",
        "/v1/entities/{ada}",
        {},
        {"user_id": "u1"},
        "relations",
        cursor="relations_cursor",
        next="relations_next_cursor",
    ),
    "graph": Paged("GET", "/v1/graph", {"entity": "Ada", "depth": 1}, {"entity": "Ada", "depth": 2}, "nodes"),
}


@dataclass(frozen=True)
class Seeded:
    api: Api
    ada: str

    def page(
        self,
        listing: Paged,
        *,
        limit: int,
        cursor: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> ApiResponse:
        sent = {**(listing.filters if filters is None else filters), "limit": limit}
        if cursor is not None:
            sent[listing.cursor] = cursor
        path = listing.path.format(ada=self.ada)
        if listing.method == "POST":
            return self.api.post(path, sent)
        return self.api.get(f"{path}?{urlencode(sent)}")

    def first_cursor(self, listing: Paged) -> str:
        response = self.page(listing, limit=1)
        assert response.status == 200 and response.json[listing.next], response.json
        return str(response.json[listing.next])

    def keys(self, listing: Paged, response: ApiResponse) -> list[str]:
        assert response.status == 200, response.json
        return [item[listing.key] for item in response.json[listing.items]]


def _created(api: Api, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, body)
    assert response.status == 201, response.json
    created: dict[str, Any] = response.json
    return created


@pytest.fixture(scope="module")
def seeded(local_db: LocalDatabase, gateway: LocalGateway) -> Seeded:
    """One tenant with three or more rows in every listing (read only by the tests below)."""
    api = Api(gateway, tenants.issue_key(local_db.admin, f"c-{uuid.uuid4().hex[:12]}").plaintext)
    for n in range(3):
        _created(api, "/v1/memories", {"content": f"note {n}", "container": "c.one", "extract": "none"})
        ingest(api, {"content": f"Document number {n} talks about the number {n}.", "container": "d.one"})
        _created(api, "/v1/sessions", {"user_id": "u1"})
        _created(api, "/v1/procedures", {"kind": "rule", "trigger": f"when {n}", "content": f"do {n}"})
        _created(api, "/v1/plans", {"plan_id": f"plan-{n}", "goal_event": "trip.requested"})
        _created(
            api, "/v1/task-context", {"task_id": f"task-{n}", "plan_id": "p1", "event_type": "hotel.book"}
        )
    ada = _entity(api, "Ada")
    for n, city in enumerate(("Paris", "Lyon", "Nice")):
        fact = _created(
            api, "/v1/memories", {"content": f"Ada fact {n}", "container": "c.obs", "extract": "none"}
        )
        _created(api, f"/v1/entities/{ada}/observations", {"memory_id": fact["id"]})
        _created(
            api,
            "/v1/relations",
            {"source": ada, "relation_type": "visited", "target": {"name": city, "entity_type": "place"}},
        )
    return Seeded(api, ada)


@pytest.mark.parametrize("name", LISTINGS)
def test_every_other_listing_refuses_the_cursor(seeded: Seeded, name: str) -> None:
    # Given a next_cursor from one listing
    cursor = seeded.first_cursor(LISTINGS[name])

    # When it is sent to every other listing (other routes, or the other cursor of the same route)
    refused = {
        other: seeded.page(listing, limit=1, cursor=cursor)
        for other, listing in LISTINGS.items()
        if other != name
    }

    # Then each refuses it, naming its cursor field and saying it belongs to another listing
    for other, response in refused.items():
        assert_invalid(response, LISTINGS[other].cursor)
        assert ANOTHER_LISTING in response.json["error"]["message"], other


@pytest.mark.parametrize("name", LISTINGS)
def test_the_same_route_with_other_filters_refuses_the_cursor(seeded: Seeded, name: str) -> None:
    # Given a next_cursor from a listing with its filters
    listing = LISTINGS[name]
    cursor = seeded.first_cursor(listing)

    # When the next page is asked for with another filter
    response = seeded.page(listing, limit=1, cursor=cursor, filters=listing.other)

    # Then it is refused, naming the cursor
    assert_invalid(response, listing.cursor)
    assert ANOTHER_LISTING in response.json["error"]["message"]


@pytest.mark.parametrize("name", LISTINGS)
def test_the_same_listing_with_another_page_size_goes_on_where_it_stopped(seeded: Seeded, name: str) -> None:
    # Given the whole listing in one page, and its first row in a page of one
    listing = LISTINGS[name]
    whole = seeded.keys(listing, seeded.page(listing, limit=100))
    first = seeded.page(listing, limit=1)

    # When the rest is asked for with a larger page
    rest = seeded.page(listing, limit=100, cursor=first.json[listing.next])

    # Then the two pages are the listing, each row once
    assert seeded.keys(listing, first) + seeded.keys(listing, rest) == whole
    assert len(whole) >= 3 and rest.json[listing.next] is None


@pytest.mark.parametrize("name", LISTINGS)
def test_paging_one_row_at_a_time_returns_every_row_once(seeded: Seeded, name: str) -> None:
    # Given the whole listing in one page
    listing = LISTINGS[name]
    whole = seeded.keys(listing, seeded.page(listing, limit=100))

    # When it is read a row at a time, following next_cursor
    seen: list[str] = []
    cursor: str | None = None
    while True:
        response = seeded.page(listing, limit=1, cursor=cursor)
        seen += seeded.keys(listing, response)
        if not (cursor := response.json[listing.next]):
            break

    # Then every row comes once, in the listing's order
    assert seen == whole and len(whole) >= 3


def test_entities_with_the_longest_names_in_any_script_page_on(api: Api) -> None:
    # Given entities whose names are as long as a name may be, in accented and CJK letters (found while
    # tying cursors to listings: a name written into the cursor with \u escapes outgrew its 400 characters)
    from engram.graph.names import MAX_NAME_CHARS

    names = ["é" * MAX_NAME_CHARS, "名" * MAX_NAME_CHARS, "z" * MAX_NAME_CHARS]
    for name in names:
        _entity(api, name, "thing")

    # When they are listed one a page
    seen, cursor = [], None
    for _ in range(len(names) + 1):
        query = {"type": "thing", "limit": 1, **({"cursor": cursor} if cursor else {})}
        page = api.get(f"/v1/entities?{urlencode(query)}")
        assert page.status == 200, page.json
        seen += [e["name"] for e in page.json["entities"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break

    # Then each comes once
    assert sorted(seen) == sorted(names)
