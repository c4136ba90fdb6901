"""Fusion (``mode="max-fusion"``): runs of elementwise calls over one shape become one
:class:`ferro.backends.fusion.FusedGroup`, run as one kernel.

A run is a sequence of consecutive calls of elementwise ops (registry ops with an ``expr``) on one device
whose results all have one shape; its inputs are the values it reads from outside (and constant arrays),
its outputs the values read after it. The device's backend turns the group into a kernel with its
optional ``compile_fused(group)`` hook, else :func:`ferro.backends.fusion.replay` runs the steps through
its kernel table; where that is not available (``NotImplementedError``) the calls stay as they were.
"""

from __future__ import annotations

from typing import Any

from ..._core.dtypes import by_name
from ..._core.records import REGISTRY
from ...backends import fusion as fused
from ..graph import Call, Graph, Host, Sync, V, values_in
from ..trace import arraylike
from .effects import pure

__all__ = ["run", "group_of"]


def _elementwise(node: Any) -> bool:
    if not isinstance(node, Call) or not isinstance(node.outs, int) or node.kwargs or node.device is None:
        return False
    op = REGISTRY.get(node.name)
    return op is not None and op.expr is not None and pure(node.name)


def _dtype(arr: Any) -> Any:
    return by_name.get(getattr(arr.dtype, "name", str(arr.dtype)))


def group_of(calls: list[Call], shapes: dict[int, Any], live_after: set[int]) -> tuple[fused.FusedGroup, list[Any],
                                                                                         tuple[int, ...]] | None:
    """The group of a run of calls: (group, its inputs' arguments (values or constant arrays), the values it
    gives); None where an operand or dtype cannot be expressed."""
    index: dict[int, int] = {}
    inputs: list[fused.Input] = []
    args: list[Any] = []
    steps: list[fused.Step] = []
    consts: dict[int, int] = {}
    inside = {c.outs for c in calls}

    def operand(a: Any) -> Any:
        if isinstance(a, V):
            if a.n not in index and a.n not in inside:
                shape, dt = shapes[a.n]
                index[a.n] = len(inputs)
                inputs.append(fused.Input(shape, dt))
                args.append(a)
            return ("ref", a.n)
        if arraylike(a):
            if id(a) not in consts:
                consts[id(a)] = len(inputs)
                inputs.append(fused.Input(tuple(a.shape), _dtype(a)))
                args.append(a)
            return ("const", consts[id(a)])
        if type(a) in (bool, int, float, complex):
            return fused.Const(a)
        return None

    raw: list[tuple[str, list[Any], Any]] = []
    for c in calls:
        ops = [operand(a) for a in c.args]
        if any(o is None for o in ops):
            return None
        raw.append((c.name, ops, shapes[c.outs][1]))  # type: ignore[index]
    if any(i.dtype is None for i in inputs):
        return None
    n_in = len(inputs)
    pos = {n: i for n, i in index.items()}
    for j, c in enumerate(calls):
        pos[c.outs] = n_in + j  # type: ignore[index]
    for name, ops, dt in raw:
        operands = tuple(o if isinstance(o, fused.Const) else fused.Ref(pos[o[1]]) if o[0] == "ref"
                         else fused.Ref(o[1]) for o in ops)
        steps.append(fused.Step(name, operands, dt))
    outs = tuple(c.outs for c in calls if c.outs in live_after)  # type: ignore[misc]
    group = fused.FusedGroup(tuple(inputs), shapes[calls[-1].outs][0], tuple(steps),  # type: ignore[index]
                             tuple(pos[o] for o in outs))
    return group, args, outs


def _reads(node: Any) -> list[int]:
    if isinstance(node, (Call, Host)):
        return values_in((node.args, node.kwargs))
    if isinstance(node, Sync):
        return [n for _, _, n, _, _ in node.writes if n is not None]
    return []


def _lower(group: fused.FusedGroup, device: Any) -> Any:
    """The group's kernel on ``device`` (the backend's compile hook, else the replay), or None where the group
    is one eager execution would not run as recorded (the steps are then left as they are)."""
    try:
        fused.plan(group)
    except (TypeError, ValueError):
        return None
    return fused.lower(group, device)


def run(graph: Graph, shapes: dict[int, Any]) -> int:
    """Fuse in place; ``shapes``: value -> (shape, dtype) as captured. Returns how many groups were made."""
    nodes = graph.nodes
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(nodes):
        j = i
        while (j < len(nodes) and _elementwise(nodes[j]) and nodes[j].device is nodes[i].device
               and shapes[nodes[j].outs][0] == shapes[nodes[i].outs][0]):
            j += 1
        if j - i >= 2:
            runs.append((i, j))
        i = max(j, i + 1)
    made = 0
    for start, end in reversed(runs):
        later = {n for node in nodes[end:] for n in _reads(node)} | set(values_in(graph.output))
        found = group_of(nodes[start:end], shapes, later)
        if found is None or not found[2]:
            continue
        group, args, outs = found
        kernel = _lower(group, nodes[start].device)
        if kernel is None:
            continue
        nodes[start:end] = [Call("fused", kernel, tuple(args), {}, outs, "fused", nodes[start].where,
                                 nodes[start].device)]
        made += 1
    return made
