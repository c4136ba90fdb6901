"""What the passes may assume of a kernel: whether it is pure (no writes into its arguments, no random draws),
and which values a pass must not merge or precompute because something may write into them."""

from __future__ import annotations

from ..._core.records import REGISTRY
from ..graph import Call, Graph, Host, Sync, values_in

__all__ = ["pure", "ALIASING", "unsafe"]

#: Kernels of the contract that return a new result and write nothing (beyond the elementwise ops).
_PURE = frozenset({
    "gelu", "gelu_backward",  # (both recorded as "gelu": a fused op's kernels go under the op's name)
    "cast", "matmul", "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "all", "any", "reshape", "view",
    "permute", "expand", "getitem", "contiguous", "clone", "cat", "stack", "full", "arange", "linspace", "eye",
    "softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "cumsum", "cumprod", "diagonal",
    "conv2d_forward", "conv2d_backward", "cross_entropy_forward", "cross_entropy_backward", "layer_norm_forward",
    "nll_loss_forward", "nll_loss_backward", "binary_cross_entropy_forward", "binary_cross_entropy_backward",
    "layer_norm_backward", "max_pool2d_forward", "max_pool2d_backward", "real", "imag", "view_as_real",
    "linear_forward", "linear_backward", "linear",  # a fused op's kernels are recorded under the op's name too
})
#: Kernels whose result may share memory with an argument (views, and no-op conversions).
ALIASING = frozenset({"reshape", "view", "permute", "expand", "getitem", "diagonal", "as_strided", "real", "imag",
                      "view_as_real", "contiguous", "cast", "positive", "conj"})


def pure(name: str) -> bool:
    """Whether a kernel of this name writes nothing and draws nothing (unknown kernels are not)."""
    if name in _PURE:
        return True
    op = REGISTRY.get(name)
    return op is not None and op.expr is not None and not name.endswith("_")


def unsafe(graph: Graph) -> set[int]:
    """The values that something may write into, with every value that may alias them: arguments of
    impure kernels, what leaves the graph (results, gradients written back, what host calls see)."""
    written: set[int] = set()
    for node in graph.nodes:
        if isinstance(node, Call) and not pure(node.name):
            written.update(values_in((node.args, node.kwargs)))
        elif isinstance(node, Sync):
            written.update(n for _, _, n, _, _ in node.writes if n is not None)
        elif isinstance(node, Host):
            written.update(values_in((node.args, node.kwargs)))
    written.update(values_in(graph.output))
    # a value aliases the values of the aliasing calls over it, both ways
    links: dict[int, set[int]] = {}
    for node in graph.nodes:
        if isinstance(node, Call) and node.name in ALIASING:
            for o in node.out_values():
                for a in values_in((node.args, node.kwargs)):
                    links.setdefault(o, set()).add(a)
                    links.setdefault(a, set()).add(o)
    todo = list(written)
    while todo:
        for m in links.get(todo.pop(), ()):
            if m not in written:
                written.add(m)
                todo.append(m)
    return written
