"""GET /v1/graph pages against a breadth-first walk done here: a page reads only the first few of a hub's
relations (engram.graph.repo.walk), so every page, at every page size, must still be exactly the
(depth, id) order of the whole walk."""

from __future__ import annotations

import random
from collections import deque
from uuid import UUID, uuid4

import pytest

from engram import deps
from engram.graph.models import EntityRef, RelationCreate
from engram.tenants.service import IssuedKey
from tests.conftest import Api
from tests.integration.test_graph_traversal import walk_all


def build_hubby_graph(tenant: IssuedKey, seed: int) -> dict[UUID, set[UUID]]:
    """40 entities, three of them hubs, relations both ways and several types between one pair;
    returns the undirected adjacency."""
    rng = random.Random(seed)
    names = [f"Node {i:02d}" for i in range(40)]
    hubs = names[:3]
    pairs: list[tuple[str, str, str]] = []
    for name in names[3:]:
        pairs.append((name, rng.choice(hubs), "member_of"))  # every node hangs off a hub
        if rng.random() < 0.5:
            pairs.append((rng.choice(hubs), name, "knows"))  # the other direction, another type
    for _ in range(30):
        a, b = rng.sample(names[3:], 2)
        pairs.append((a, b, rng.choice(("knows", "likes"))))
    adjacency: dict[UUID, set[UUID]] = {}
    service = deps.graph_service()
    for source, target, kind in pairs:
        relation, _ = service.create_relation(
            tenant.tenant_id,
            RelationCreate(source=EntityRef(name=source), relation_type=kind, target=EntityRef(name=target)),
        )
        adjacency.setdefault(relation.source.id, set()).add(relation.target.id)
        adjacency.setdefault(relation.target.id, set()).add(relation.source.id)
    return adjacency


def expected_order(adjacency: dict[UUID, set[UUID]], root: UUID, depth: int) -> list[tuple[int, UUID]]:
    distance = {root: 0}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        if distance[node] == depth:
            continue
        for neighbour in adjacency.get(node, ()):
            if neighbour not in distance:
                distance[neighbour] = distance[node] + 1
                queue.append(neighbour)
    return sorted((d, node) for node, d in distance.items())  # UUIDs sort as PostgreSQL sorts them


@pytest.mark.parametrize("seed", [1, 2])
def test_every_page_size_pages_through_the_exact_breadth_first_order(
    api: Api, tenant: IssuedKey, seed: int
) -> None:
    adjacency = build_hubby_graph(tenant, seed)
    leaf = next(node for node, near in adjacency.items() if len(near) <= 2)

    for root in (leaf, max(adjacency, key=lambda node: len(adjacency[node]))):
        for depth in (2, 3):
            expected = expected_order(adjacency, root, depth)
            for limit in (1, 3, 7, 200):
                nodes, _, pages = walk_all(api, f"entity={root}&depth={depth}&limit={limit}")
                assert [(n["depth"], UUID(n["id"])) for n in nodes] == expected, (root, depth, limit)
                assert pages == -(-len(expected) // limit)


def test_a_first_page_next_to_hubs_is_not_truncated_and_promises_more(api: Api, tenant: IssuedKey) -> None:
    adjacency = build_hubby_graph(tenant, 3)
    root = next(node for node, near in adjacency.items() if len(near) <= 2)

    page = api.get(f"/v1/graph?entity={root}&depth=3&limit=5").json

    assert [(n["depth"], UUID(n["id"])) for n in page["nodes"]] == expected_order(adjacency, root, 3)[:5]
    assert page["truncated"] is False and page["next_cursor"] is not None


def test_an_id_that_names_no_entity_is_a_404_naming_it(api: Api) -> None:
    unknown = uuid4()

    response = api.get(f"/v1/graph?entity={unknown}&depth=3")

    assert response.status == 404 and str(unknown) in str(response.json)
