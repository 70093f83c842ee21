"""A minimum vertex cut between values that must be stored and values the reverse sweep needs.

Nodes are values; `roots` cannot be recomputed, `required` are needed, and an edge u -> v says
that v is recomputed from u. Storing a set of nodes that separates every root from every
required node lets the reverse sweep recompute all it needs; the cut chosen has the smallest
total weight (bytes stored), and among equal cuts the one nearest the required values, which
leaves the least to recompute. Max-flow by shortest augmenting paths (Edmonds-Karp) on the
split graph, where each node is an edge in -> out weighted by its cost."""

from __future__ import annotations

from collections import deque
from typing import Hashable

INF = float("inf")


class NoCut(Exception):
    """A required node that no finite cut separates from the roots: it, and every value it is
    recomputed from back to a root, may not be stored."""

    def __init__(self, node: Hashable):
        super().__init__(node)
        self.node = node


def min_vertex_cut(nodes: dict[Hashable, float], edges: set[tuple[Hashable, Hashable]], roots: set[Hashable],
                   required: set[Hashable]) -> set[Hashable]:
    """The nodes to store. `nodes` maps each node to its weight (INF: never store it)."""
    graph: dict[tuple, dict[tuple, float]] = {}

    def arc(u, v, capacity):
        graph.setdefault(u, {})
        graph.setdefault(v, {})
        graph[u][v] = graph[u].get(v, 0) + capacity
        graph[v].setdefault(u, 0)

    source, sink = ("source",), ("sink",)
    for n, weight in nodes.items():
        arc(("in", n), ("out", n), weight)
    for u, v in edges:
        arc(("out", u), ("in", v), INF)
    for r in roots:
        arc(source, ("in", r), INF)
    for r in required:
        arc(("out", r), sink, INF)
    if source not in graph or sink not in graph:
        return set()
    while True:
        parent = {source: None}
        queue = deque([source])
        while queue and sink not in parent:
            u = queue.popleft()
            for v, capacity in graph[u].items():
                if capacity > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            break
        path, v = [], sink
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        flow = min(graph[u][v] for u, v in path)
        if flow == INF:
            raise NoCut(path[0][0][1])  # the path's last arc leaves a required node for the sink
        for u, v in path:
            graph[u][v] -= flow
            graph[v][u] += flow
    # the nodes that can still reach the sink: the cut nearest the required values borders them
    near = {sink}
    queue = deque([sink])
    reverse: dict[tuple, list[tuple]] = {}
    for u, arcs in graph.items():
        for v, capacity in arcs.items():
            if capacity > 0:
                reverse.setdefault(v, []).append(u)
    while queue:
        v = queue.popleft()
        for u in reverse.get(v, ()):
            if u not in near:
                near.add(u)
                queue.append(u)
    return {n for n in nodes if ("in", n) not in near and ("out", n) in near}
