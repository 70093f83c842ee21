"""A minimum vertex cut between values that must be stored and values the reverse sweep needs.

Nodes are values; `roots` cannot be recomputed, `required` are needed, and an edge u -> v says
that v is recomputed from u. Storing a set of nodes that separates every root from every
required node lets the reverse sweep recompute all it needs; the cut chosen has the smallest
total weight (bytes stored), and among equal cuts the one nearest the required values, which
leaves the least to recompute (the same for every maximum flow). Max-flow by Dinic's algorithm
(blocking flows along shortest paths) on the split graph, where each node is an arc in -> out
weighted by its cost; vertices and arcs are numbered, the arcs in flat lists (a plan of llm.c's
GPT-2, some 1,000 nodes, took 0.13 s as shortest augmenting paths over dicts of tuples)."""

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


class _Network:
    """Vertices 0..n-1; arc k goes to `head[k]` with `capacity[k]` left, arc k ^ 1 is its reverse."""

    def __init__(self, n: int):
        self.arcs: list[list[int]] = [[] for _ in range(n)]
        self.head: list[int] = []
        self.capacity: list[float] = []

    def arc(self, u: int, v: int, capacity: float) -> None:
        self.arcs[u].append(len(self.head))
        self.head.append(v)
        self.capacity.append(capacity)
        self.arcs[v].append(len(self.head))
        self.head.append(u)
        self.capacity.append(0.0)

    def levels(self, source: int, sink: int, infinite_only: bool = False) -> list[int] | None:
        """Each vertex's distance from the source over arcs with capacity left (only infinite
        ones, with `infinite_only`), or None where the sink is not reached."""
        level = [-1] * len(self.arcs)
        level[source] = 0
        queue = deque([source])
        head, capacity = self.head, self.capacity
        while queue:
            u = queue.popleft()
            for k in self.arcs[u]:
                v = head[k]
                if level[v] < 0 and (capacity[k] == INF if infinite_only else capacity[k] > 0):
                    level[v] = level[u] + 1
                    queue.append(v)
        return level if level[sink] >= 0 else None

    def blocking_flow(self, source: int, sink: int, level: list[int]) -> None:
        """Augments along shortest paths until none is left in the level graph (iteratively, with
        each vertex's next arc to try)."""
        head, capacity, arcs = self.head, self.capacity, self.arcs
        nxt = [0] * len(arcs)
        while True:
            path: list[int] = []  # arcs from the source
            u = source
            while u != sink:
                out = arcs[u]
                while nxt[u] < len(out):
                    k = out[nxt[u]]
                    v = head[k]
                    if capacity[k] > 0 and level[v] == level[u] + 1:
                        break
                    nxt[u] += 1
                else:  # a dead end: back off one arc
                    if not path:
                        return
                    level[u] = -1
                    u = head[path.pop() ^ 1]
                    nxt[u] += 1
                    continue
                path.append(out[nxt[u]])
                u = head[path[-1]]
            flow = min(capacity[k] for k in path)
            for k in path:
                capacity[k] -= flow
                capacity[k ^ 1] += flow


def min_vertex_cut(nodes: dict[Hashable, float], edges: set[tuple[Hashable, Hashable]], roots: set[Hashable],
                   required: set[Hashable]) -> set[Hashable]:
    """The nodes to store. `nodes` maps each node to its weight (INF: never store it)."""
    if not roots or not required:
        return set()
    order = list(nodes)
    number = {n: i for i, n in enumerate(order)}
    source, sink = 2 * len(order), 2 * len(order) + 1  # node i: in-vertex 2i, out-vertex 2i + 1
    net = _Network(2 * len(order) + 2)
    for i, n in enumerate(order):
        net.arc(2 * i, 2 * i + 1, nodes[n])
    for u, v in edges:
        net.arc(2 * number[u] + 1, 2 * number[v], INF)
    for r in roots:
        net.arc(source, 2 * number[r], INF)
    into_sink = {}
    for r in required:
        into_sink[2 * number[r] + 1] = r
        net.arc(2 * number[r] + 1, sink, INF)
    infinite = net.levels(source, sink, infinite_only=True)
    if infinite is not None:  # the nearest required node on a path of arcs no cut may take
        reached = [(infinite[v], k, r) for k, (v, r) in enumerate(into_sink.items()) if infinite[v] >= 0]
        raise NoCut(min(reached)[2])
    while (level := net.levels(source, sink)) is not None:
        net.blocking_flow(source, sink, level)
    # the vertices that can still reach the sink: the cut nearest the required values borders them
    near = [False] * len(net.arcs)
    near[sink] = True
    queue = deque([sink])
    while queue:
        v = queue.popleft()
        for k in net.arcs[v]:  # arc k leaves v: its reverse k ^ 1 enters v from head[k]
            u = net.head[k]
            if not near[u] and net.capacity[k ^ 1] > 0:
                near[u] = True
                queue.append(u)
    return {n for i, n in enumerate(order) if not near[2 * i] and near[2 * i + 1]}
