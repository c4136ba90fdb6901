"""Planned buffers: kernel results that live and die inside one replay are written into buffers allocated once per
graph and reused by every replay, instead of arrays allocated (and, when large, page-faulted) at every call.

A backend opts in with ``Backend.compile_into(name, kernel, args, kwargs, out, index)``: for a call as captured
(``args``: its arrays as captured) it returns ``f(buffer, *args, **kwargs)``, which writes the kernel's result into
``buffer`` (an array as :meth:`Backend.into_buffer` made it from the captured result) and returns it, with eager's
values bitwise, or None for a call it does not take. The CPU backend takes its ufunc kernels, relu, the gradients
from an output (``relu_backward``, ``tanh_backward``, ``sigmoid_backward``) and ``matmul``.

A value is planned only where nothing outside the replay can see it: not an input or external, not returned, not
written back to a tensor, not given to a host call, nor any value that may share its memory with one of those
(through a view, or any kernel not known to return new arrays: those are the contract's reductions and products,
the fused ops' kernels such as linear, conv2d or layer_norm, and the elementwise ops). Its buffer is free for a
later value of the same shape and dtype once the last reader of any of its aliases has run; an elementwise call
whose array operand dies at that call (and has no alias) writes into that operand's buffer, in place (a bias added
to a matmul's result, an activation over it). A planned graph must not be replayed by two threads at once
(``ferro.compile`` runs a second concurrent call eagerly).
"""

from __future__ import annotations

from typing import Any

from ..._core.records import REGISTRY
from ..graph import Call, Graph, Host, Sync, V, values_in
from .effects import ALIASING, pure

__all__ = ["run"]

#: Kernels known to return new arrays that share no memory with their arguments (fused ops record their
#: forward and backward kernels under the op's name).
_FRESH_EXTRA = frozenset({"matmul", "sum", "mean", "prod", "amax", "amin", "clone", "cat", "stack", "full", "softmax",
                          "log_softmax", "softmax_backward", "log_softmax_backward", "cumsum", "cumprod", "linear",
                          "conv2d", "max_pool2d", "layer_norm", "cross_entropy", "lstm_sequence_forward",
                          "lstm_sequence_backward", "relu_backward", "tanh_backward", "sigmoid_backward"})


def _fresh(name: str) -> bool:
    if name in ALIASING:
        return False
    if name in _FRESH_EXTRA:
        return True
    op = REGISTRY.get(name)
    return op is not None and op.expr is not None and pure(name)


def _elementwise(name: str) -> bool:
    op = REGISTRY.get(name)
    return op is not None and op.expr is not None and pure(name)


class _Groups:
    """Union-find over values: values that may share memory."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, n: int) -> int:
        p = self.parent.setdefault(n, n)
        while p != self.parent.setdefault(p, p):
            p = self.parent[p]
        self.parent[n] = p
        return p

    def join(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def _analyse(graph: Graph) -> tuple[_Groups, dict[int, int], set[int]]:
    """(alias groups, group root -> index of the last node reading any member, roots of escaping groups)."""
    groups = _Groups()
    for node in graph.nodes:
        if isinstance(node, Call) and not _fresh(node.name):
            reads = values_in((node.args, node.kwargs))
            for o in node.out_values():
                for a in reads:
                    groups.join(o, a)
    escaping: set[int] = set(values_in(graph.output))
    for n, source in enumerate(graph.sources):
        if source[0] != "call":
            escaping.add(n)
    last: dict[int, int] = {}
    for i, node in enumerate(graph.nodes):
        if isinstance(node, Call):
            reads = values_in((node.args, node.kwargs)) + node.out_values()
        elif isinstance(node, Host):
            reads = values_in((node.args, node.kwargs))
            escaping.update(reads)
        elif isinstance(node, Sync):
            reads = [n for _, _, n, _, _ in node.writes if n is not None]
            escaping.update(reads)
        else:
            reads = []
        for n in reads:
            last[groups.find(n)] = i
    return groups, last, {groups.find(n) for n in escaping}


def _captured(x: Any, arrays: dict[int, Any]) -> Any:
    if isinstance(x, V):
        return arrays.get(x.n)
    if type(x) in (tuple, list):
        return type(x)(_captured(y, arrays) for y in x)
    return x


def run(graph: Graph, arrays: dict[int, Any]) -> int:
    """Plan in place; ``arrays``: value -> its array as captured. Returns how many calls write into planned
    buffers."""
    groups, last, escaping = _analyse(graph)
    free: dict[tuple[Any, ...], list[Any]] = {}  # (shape, dtype) -> buffers free now
    busy: list[tuple[int, tuple[Any, ...], Any]] = []  # (last use, key, buffer)
    holder: dict[int, Any] = {}  # planned value -> its buffer
    hooks: dict[int, Any] = {}
    sizes: dict[int, int] = {}
    for m in list(groups.parent):
        r = groups.find(m)
        sizes[r] = sizes.get(r, 0) + 1
    planned = 0
    for i, node in enumerate(graph.nodes):
        still = []
        for end, key, buf in busy:
            (free.setdefault(key, []).append(buf) if end < i else still.append((end, key, buf)))
        busy = still
        if not isinstance(node, Call) or not isinstance(node.outs, int) or node.device is None:
            continue
        v = node.outs
        root = groups.find(v)
        out = arrays.get(v)
        if root in escaping or out is None or not getattr(out, "size", 0):
            continue
        backend = getattr(node.device, "_backend", None)
        hook = hooks.get(id(backend))
        if hook is None:
            hook = hooks[id(backend)] = getattr(backend, "compile_into", None) or (lambda *a, **k: None)
        into = hook(node.name, node.kernel, _captured(node.args, arrays), _captured(node.kwargs, arrays), out,
                    node.device.index)
        if into is None:
            continue
        key = (tuple(out.shape), str(out.dtype))
        buf = None
        if _elementwise(node.name):  # in place over an operand that dies here and has no alias
            for a in values_in(node.args):
                if (a in holder and groups.find(a) == a and sizes.get(a, 1) == 1 and last.get(a) == i
                        and (tuple(arrays[a].shape), str(arrays[a].dtype)) == key):
                    buf = holder[a]
                    busy = [b for b in busy if b[2] is not buf]
                    break
        if buf is None:
            pool = free.get(key)
            buf = pool.pop() if pool else backend.into_buffer(out, node.device.index)
        holder[v] = buf
        busy.append((last.get(root, i), key, buf))
        node.kernel = into
        node.args = (buf, *node.args)
        planned += 1
    return planned
