"""The passes over a captured graph, each a small module: constant folding, common subexpressions,
dead code, copy elision, fusion of elementwise chains, planned buffers, multi-tensor optimizer steps, and the memory
plan. :func:`optimize` runs them in that order."""

from __future__ import annotations

from typing import Any

from ..graph import Graph
from . import buffers, copies, cse, dce, fold, fusion, memory, steps

__all__ = ["optimize"]


def optimize(graph: Graph, fuse: bool, shapes: dict[int, Any] | None = None,
             arrays: dict[int, Any] | None = None) -> tuple[Graph, dict[int, list[int]]]:
    """The graph after the passes (``fuse``: with fusion, which needs each value's captured ``(shape, dtype)``;
    copy elision runs where each value's captured array is given), and the memory plan's frees per node."""
    fold.run(graph)
    cse.run(graph)
    dce.run(graph)
    if arrays is not None:
        copies.run(graph, arrays)
    if fuse and shapes is not None:
        fusion.run(graph, shapes)
    if arrays is not None:
        buffers.run(graph, arrays)
    steps.run(graph)
    return graph, memory.plan(graph)
