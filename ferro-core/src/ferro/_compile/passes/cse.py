"""Common subexpressions: a pure call repeating an earlier one (same kernel, same arguments) reuses its result."""

from __future__ import annotations

from typing import Any

from ..graph import Call, Graph, V
from . import rename
from .effects import pure, unsafe

__all__ = ["run"]


def _key(x: Any) -> Any:
    if isinstance(x, V):
        return ("v", x.n)
    if type(x) in (tuple, list):
        return (type(x).__name__, *(_key(y) for y in x))
    if type(x) in (int, float, bool, str, complex, type(None)):
        return (type(x).__name__, x)
    return ("id", id(x))


def run(graph: Graph) -> int:
    """Merge repeated calls in place; returns how many were merged."""
    bad = unsafe(graph)
    seen: dict[Any, Call] = {}
    same: dict[int, int] = {}
    kept = []
    for node in graph.nodes:
        if same:
            rename.apply(node, same)
        if isinstance(node, Call) and pure(node.name) and not any(o in bad for o in node.out_values()):
            k = (id(node.kernel), _key(node.args), _key(tuple(sorted(node.kwargs.items()))))
            first = seen.get(k)
            if first is not None and type(first.outs) is type(node.outs):
                if isinstance(node.outs, int):
                    same[node.outs] = first.outs  # type: ignore[assignment]
                else:
                    for a, b in zip(node.outs, first.outs):  # type: ignore[arg-type]
                        if a is not None and b is not None:
                            same[a] = b
                continue
            seen[k] = node
        kept.append(node)
    graph.nodes = kept
    if same:
        graph.output = rename.tree(graph.output, same)
    return len(same)
