"""Rewriting the values a node reads (what CSE and constant folding do to the calls after a merged one)."""

from __future__ import annotations

from typing import Any

from ..graph import Call, Graph, Host, Sync, V

__all__ = ["tree", "apply"]


def tree(x: Any, to: dict[int, Any]) -> Any:
    """``x`` with each value ``n`` in ``to`` replaced by ``to[n]`` (a value number, or a constant)."""
    if isinstance(x, V):
        if x.n not in to:
            return x
        new = to[x.n]
        return V(new) if isinstance(new, int) and not isinstance(new, bool) else new
    if type(x) is tuple:
        return tuple(tree(y, to) for y in x)
    if type(x) is list:
        return [tree(y, to) for y in x]
    if type(x) is dict:
        return {k: tree(v, to) for k, v in x.items()}
    return x


def apply(node: Any, to: dict[int, Any]) -> None:
    """Rewrite what ``node`` reads, in place."""
    if isinstance(node, (Call, Host)):
        node.args = tree(node.args, to)
        node.kwargs = tree(node.kwargs, to)
    elif isinstance(node, Sync):
        node.writes = [(t, a, to.get(n, n) if n is not None else None, dt, dev) for t, a, n, dt, dev in node.writes]


def output(graph: Graph, to: dict[int, Any]) -> None:
    """Rewrite the graph's result."""
    graph.output = tree(graph.output, to)
