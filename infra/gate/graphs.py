"""Circles in a directed graph: the gate's resources that wait for each other, the package's modules that
import each other back (tests/unit/test_layers.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def circles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The groups of nodes that reach each other (strongly connected, by Tarjan's algorithm): each of more
    than one node, or one node with an edge to itself. Members sorted, groups in the order found; an edge
    to a node that is not a key is left out."""
    targets = {node: [other for other in after if other in edges] for node, after in edges.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in targets[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in targets[node]:
                found.append(sorted(group))

    for node in targets:
        if node not in index:
            visit(node)
    return found
