"""Constant folding: a pure call on constants only (``full`` of a Python scalar, a cast of it...) runs once, when
the graph is built, and its result becomes a constant of the replay."""

from __future__ import annotations

from typing import Any

from ..graph import Call, Graph, values_in
from ..trace import arraylike
from . import rename
from .effects import pure, unsafe

__all__ = ["run"]


def _arrays(x: Any) -> bool:
    """Whether ``x`` holds an array the graph does not know (made outside it: it may change between calls)."""
    if type(x) in (tuple, list):
        return any(_arrays(y) for y in x)
    if type(x) is dict:
        return any(_arrays(y) for y in x.values())
    return arraylike(x)


def run(graph: Graph) -> int:
    """Fold in place; returns how many calls were folded."""
    bad = unsafe(graph)
    consts: dict[int, Any] = {}
    kept = []
    for node in graph.nodes:
        if consts:
            rename.apply(node, consts)
        if (isinstance(node, Call) and isinstance(node.outs, int) and pure(node.name) and node.outs not in bad
                and not values_in((node.args, node.kwargs)) and not _arrays((node.args, node.kwargs))):
            consts[node.outs] = node.kernel(*node.args, **node.kwargs)
            continue
        kept.append(node)
    graph.nodes = kept
    return len(consts)
