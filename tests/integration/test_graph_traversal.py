"""GET /v1/graph: a bounded walk (depth, row limit), paginated, each entity and relation exactly once."""

from __future__ import annotations

from typing import Any

from engram import deps
from engram.graph import repo
from engram.graph.models import EntityRef, RelationCreate
from engram.tenants.service import IssuedKey
from tests.conftest import Api


def relate(tenant: IssuedKey, source: str, target: str, relation: str = "knows") -> None:
    deps.graph_service().create_relation(
        tenant.tenant_id,
        RelationCreate(source=EntityRef(name=source), relation_type=relation, target=EntityRef(name=target)),
    )


def walk_all(api: Api, query: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    pages, cursor = 0, None
    while True:
        page = api.get(f"/v1/graph?{query}" + (f"&cursor={cursor}" if cursor else "")).json
        nodes += page["nodes"]
        edges += page["edges"]
        pages += 1
        if not (cursor := page["next_cursor"]):
            return nodes, edges, pages


def test_depth_bounds_the_walk_and_relations_are_followed_both_ways(api: Api, tenant: IssuedKey) -> None:
    for source, target in (("A", "B"), ("C", "B"), ("C", "D"), ("D", "E")):  # B <- C: walked backwards too
        relate(tenant, source, target)

    by_depth = {depth: api.get(f"/v1/graph?entity=A&depth={depth}").json for depth in (1, 2, 4)}

    assert [(n["name"], n["depth"]) for n in by_depth[1]["nodes"]] == [("A", 0), ("B", 1)]
    assert [n["name"] for n in by_depth[2]["nodes"]] == ["A", "B", "C"]
    assert [(n["name"], n["depth"]) for n in by_depth[4]["nodes"]][-1] == ("E", 4)
    assert {(e["source"]["name"], e["target"]["name"]) for e in by_depth[2]["edges"]} == {
        ("A", "B"),
        ("C", "B"),
    }
    assert by_depth[4]["truncated"] is False


def test_cycles_visit_each_entity_once_at_its_shortest_distance(api: Api, tenant: IssuedKey) -> None:
    for source, target in (("A", "B"), ("B", "C"), ("C", "A"), ("C", "D")):
        relate(tenant, source, target)

    graph = api.get("/v1/graph?entity=A&depth=4").json

    assert sorted((n["name"], n["depth"]) for n in graph["nodes"]) == [("A", 0), ("B", 1), ("C", 1), ("D", 2)]
    assert len(graph["edges"]) == 4


def test_pages_cover_the_subgraph_with_every_entity_and_relation_exactly_once(
    api: Api, tenant: IssuedKey
) -> None:
    for i in range(12):
        relate(tenant, "Hub", f"Spoke {i:02d}")
        relate(tenant, f"Spoke {i:02d}", f"Leaf {i:02d}")
    for i in range(0, 12, 3):
        relate(tenant, f"Spoke {i:02d}", f"Spoke {i + 1:02d}", "next_to")

    nodes, edges, pages = walk_all(api, "entity=Hub&depth=2&limit=5")

    assert pages == 5  # 25 entities, 5 a page
    assert len(nodes) == len({n["id"] for n in nodes}) == 25
    assert [n["depth"] for n in nodes] == sorted(n["depth"] for n in nodes)  # nearest first
    assert len(edges) == len({e["id"] for e in edges}) == 12 + 12 + 4
    first_page = api.get("/v1/graph?entity=Hub&depth=2&limit=5").json
    assert first_page["nodes"][0]["name"] == "Hub" and len(first_page["nodes"]) == 5
    assert first_page["next_cursor"] is not None and not first_page["truncated"]


def test_the_walk_stops_at_its_row_limit_and_says_so(tenant: IssuedKey) -> None:
    for i in range(20):
        relate(tenant, "Center", f"Node {i:02d}")

    limited = deps.graph_service().graph(tenant.tenant_id, "Center", depth=1, limit=100, max_rows=8)
    full = deps.graph_service().graph(tenant.tenant_id, "Center", depth=1, limit=100)

    assert limited.truncated and len(limited.nodes) == 8
    assert not full.truncated and len(full.nodes) == 21


def test_a_page_with_more_relations_than_an_answer_holds_says_so(api: Api, tenant: IssuedKey) -> None:
    for i in range(12):
        relate(tenant, "Alpha", "Beta", f"relation_{i:02d}")

    page = api.get("/v1/graph?entity=Alpha&depth=1&limit=1").json  # Alpha alone: no relation yet
    second = api.get(f"/v1/graph?entity=Alpha&depth=1&limit=1&cursor={page['next_cursor']}").json

    assert page["edges"] == [] and page["edges_truncated"] is False
    assert [n["name"] for n in second["nodes"]] == ["Beta"]
    assert len(second["edges"]) == 10 and second["edges_truncated"] is True


def test_an_entity_with_no_relations_is_a_graph_of_one(api: Api) -> None:
    alone = api.post("/v1/entities", {"name": "Hermit", "entity_type": "person"}).json

    graph = api.get(f"/v1/graph?entity={alone['id']}").json

    assert [n["name"] for n in graph["nodes"]] == ["Hermit"] and graph["edges"] == []
    assert graph["next_cursor"] is None and graph["root"] == alone["id"]


def test_a_graph_page_reads_relations_with_the_columns_other_relation_reads_have(tenant: IssuedKey) -> None:
    """A relation's output columns are written twice: graph.repo's _RELATION_SELECT, and the function
    graph_edges_among (migrations/0028) that GET /v1/graph reads a page's relations with. A column added
    to one and not the other would differ here."""
    relate(tenant, "Ada", "Bob")
    relate(tenant, "Bob", "Cyd", "works_with")
    with deps.database().tenant(tenant.tenant_id) as cur:
        ids = [row["id"] for row in cur.execute("SELECT id FROM entities").fetchall()]
        among = repo.edges_among(cur, tenant.tenant_id, ids, ids, as_of=None, include_history=False, limit=10)
        listed = repo.get_relations(cur, tenant.tenant_id, [row["id"] for row in among])

    assert len(among) == 2
    assert among == listed  # the same keys, in the same order, with the same values
    assert [list(row) for row in among] == [list(row) for row in listed]
