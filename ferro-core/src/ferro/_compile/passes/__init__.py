"""The passes over a captured graph, each a small module: constant folding, common subexpressions,
dead code, fusion of elementwise chains, and the memory plan. :func:`optimize` runs them in that order."""

from __future__ import annotations

from ..graph import Graph
from . import cse, dce, fold, fusion, memory

__all__ = ["optimize"]


def optimize(graph: Graph, fuse: bool) -> tuple[Graph, dict[int, list[int]]]:
    """The graph after the passes (``fuse``: with fusion), and the memory plan's frees per node."""
    fold.run(graph)
    cse.run(graph)
    dce.run(graph)
    if fuse:
        fusion.run(graph)
        dce.run(graph)
    return graph, memory.plan(graph)
