"""The captured graph: the kernel calls of one traced call, in order, over numbered values.

A value is an input array (the ``i``-th tensor argument's data), an external array (read from a tensor
the function reached without receiving it: a parameter's data, a gradient), or the result of a call.
Arguments are kept as the kernel received them, with every array that is a value replaced by a
:class:`V`; everything else (Python numbers, dtypes, shapes, arrays made outside the trace) is a constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["V", "Call", "Check", "Host", "Sync", "Graph", "values_in"]


class V(NamedTuple):
    """A value of the graph, by number."""

    n: int


@dataclass
class Call:
    """One kernel call: ``outs`` is the value it returns (an int), the values of the arrays in the tuple it
    returns (a tuple of ints or None, by position), or None when its result is not an array."""

    name: str
    kernel: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outs: int | tuple[int | None, ...] | None
    op: str = ""
    where: str = ""
    device: Any = None

    def out_values(self) -> list[int]:
        """The values this call defines."""
        if self.outs is None:
            return []
        if isinstance(self.outs, int):
            return [self.outs]
        return [o for o in self.outs if o is not None]


@dataclass
class Sync:
    """Tensor state to write back at this point: ``(tensor, "data" | "grad", value or None, dtype, device)``."""

    writes: list[tuple[Any, str, int | None, Any, Any]]


@dataclass
class Check:
    """A guard on state at this point of the call: whether ``tensor.grad`` is None (gradients accumulate into an
    existing one, and a graph captured without one must not replay over one)."""

    tensor: Any
    grad_is_none: bool


@dataclass
class Host:
    """A Python call re-run at every replay (an optimizer's or scheduler's ``step``), its kernels not recorded."""

    fn: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass
class Graph:
    """The captured program: ``sources[n]`` says where value ``n`` comes from (``("in", i)``,
    ``("ext", tensor, "data" | "grad")`` or ``("call",)``); ``nodes`` are :class:`Call`, :class:`Sync` and
    :class:`Host` in order; ``output`` is the returned structure with tensors as ``("tensor", V, dtype,
    device)`` or ``("same", obj)``."""

    sources: list[tuple[Any, ...]] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=list)
    output: Any = None
    n_inputs: int = 0

    def new_value(self, source: tuple[Any, ...]) -> int:
        """Number a new value."""
        self.sources.append(source)
        return len(self.sources) - 1

    def calls(self) -> list[Call]:
        """The kernel calls, in order."""
        return [n for n in self.nodes if isinstance(n, Call)]


def values_in(tree: Any) -> list[int]:
    """The values an argument tree refers to."""
    if isinstance(tree, V):
        return [tree.n]
    if isinstance(tree, (tuple, list)):
        return [n for x in tree for n in values_in(x)]
    if isinstance(tree, dict):
        return [n for x in tree.values() for n in values_in(x)]
    return []
