"""The memory plan: each value is dropped right after the last node that reads it, so that a replay holds no
more arrays than eager execution does and the backend's allocator reuses their memory for later results."""

from __future__ import annotations

from ..graph import Call, Graph, Host, Sync, values_in

__all__ = ["plan"]


def plan(graph: Graph) -> dict[int, list[int]]:
    """Node index -> the values to drop after it (never the graph's results)."""
    last: dict[int, int] = {}
    for i, node in enumerate(graph.nodes):
        if isinstance(node, (Call, Host)):
            reads = values_in((node.args, node.kwargs))
            if isinstance(node, Call):
                reads += node.out_values()  # a result nothing reads is dropped at once
        elif isinstance(node, Sync):
            reads = [n for _, _, n, _, _ in node.writes if n is not None]
        else:
            reads = []
        for n in reads:
            last[n] = i
    for n in values_in(graph.output):
        last.pop(n, None)
    frees: dict[int, list[int]] = {}
    for n, i in last.items():
        if graph.sources[n][0] != "in":
            frees.setdefault(i, []).append(n)
    return frees
