"""Copy elision: a ``clone`` whose source nothing reads afterwards is dropped, its result being the source itself.

Autograd clones each gradient it stores in ``.grad`` (a stored gradient must not alias another tensor); in a
replayed step the gradient is a fresh kernel result, or a view of one, that nothing else holds, so the copy only
costs time. A clone is kept where its source may be seen elsewhere: an input, an external (a parameter, a
gradient), a constant, a value an impure kernel returned, a broadcast or indexed view (possibly read-only or
overlapping), any alias of the source read after the clone or returned; and where the source, as captured, is
not row-major (the contract's ``clone`` result is), or the backend's ``contiguous`` cannot tell.
"""

from __future__ import annotations

from typing import Any

from ..graph import Call, Graph, Host, Sync, V, values_in
from . import rename
from .effects import ALIASING, pure

__all__ = ["run"]

#: Views that keep every element of their source once, writable: a fresh array seen through them stays private.
_PLAIN_VIEWS = frozenset({"permute", "view", "reshape"})


def _reads(node: Any) -> list[int]:
    if isinstance(node, (Call, Host)):
        return values_in((node.args, node.kwargs))
    if isinstance(node, Sync):
        return [n for _, _, n, _, _ in node.writes if n is not None]
    return []


def _row_major(arr: Any, device: Any) -> bool:
    """Whether ``arr`` is row-major: the contract's ``contiguous`` returns such an array itself."""
    kernels = getattr(device, "_kernels", None)
    k = None if kernels is None else kernels.get("contiguous")
    return k is not None and k(arr) is arr


def _aliases(graph: Graph) -> dict[int, set[int]]:
    """Value -> the values that may share its memory (through any aliasing call, both ways), itself included."""
    links: dict[int, set[int]] = {}
    for node in graph.nodes:
        if isinstance(node, Call) and node.name in ALIASING:
            for o in node.out_values():
                for a in values_in((node.args, node.kwargs)):
                    links.setdefault(o, set()).add(a)
                    links.setdefault(a, set()).add(o)
    groups: dict[int, set[int]] = {}
    for n in links:
        if n in groups:
            continue
        group, todo = {n}, [n]
        while todo:
            for m in links.get(todo.pop(), ()):
                if m not in group:
                    group.add(m)
                    todo.append(m)
        for m in group:
            groups[m] = group
    return groups


def _fresh(graph: Graph, producer: dict[int, Call], n: int) -> bool:
    """Whether value ``n`` is a new array of a pure kernel, or a plain view of one."""
    while True:
        maker = producer.get(n)
        if maker is None or graph.sources[n][0] != "call":
            return False
        if maker.name in _PLAIN_VIEWS and isinstance(maker.outs, int) and maker.args and isinstance(maker.args[0], V):
            n = maker.args[0].n
            continue
        return pure(maker.name) and maker.name not in ALIASING


def run(graph: Graph, arrays: dict[int, Any]) -> int:
    """Elide clones in place; ``arrays``: value -> its array as captured. Returns how many were elided."""
    nodes = graph.nodes
    producer = {o: node for node in nodes if isinstance(node, Call) for o in node.out_values()}
    last: dict[int, int] = {}
    for i, node in enumerate(nodes):
        for n in _reads(node):
            last[n] = i
    for n in values_in(graph.output):
        last[n] = len(nodes)
    aliases = _aliases(graph)
    same: dict[int, int] = {}
    kept = []
    for i, node in enumerate(nodes):
        if (isinstance(node, Call) and node.name == "clone" and isinstance(node.outs, int) and not node.kwargs
                and len(node.args) == 1 and isinstance(node.args[0], V)):
            a = node.args[0].n
            if (_fresh(graph, producer, a) and all(last.get(m, -1) <= i for m in aliases.get(a, {a}))
                    and a in arrays and _row_major(arrays[a], node.device)):
                same[node.outs] = a
                continue
        kept.append(node)
    graph.nodes = kept
    if same:
        for node in kept:
            rename.apply(node, same)
        rename.output(graph, same)
    return len(same)
