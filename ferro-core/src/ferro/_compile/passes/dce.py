"""Dead-code elimination: drop pure kernel calls whose results nothing reads."""

from __future__ import annotations

from ..graph import Call, Graph, Host, Sync, values_in
from .effects import pure

__all__ = ["run"]


def run(graph: Graph) -> int:
    """Remove the dead calls in place; returns how many."""
    live = set(values_in(graph.output))
    kept = []
    removed = 0
    for node in reversed(graph.nodes):
        if isinstance(node, Call):
            outs = node.out_values()
            if pure(node.name) and not any(o in live for o in outs):
                removed += 1
                continue
            live.update(values_in((node.args, node.kwargs)))
        elif isinstance(node, Sync):
            live.update(n for _, _, n, _, _ in node.writes if n is not None)
        elif isinstance(node, Host):
            live.update(values_in((node.args, node.kwargs)))
        kept.append(node)
    graph.nodes = kept[::-1]
    return removed
