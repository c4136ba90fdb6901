"""Graph nodes: one per op output that needs a gradient.

A node holds, for each input of its op, the formula that turns the output's
gradient into that input's (``fns``), and where that gradient goes next
(``next``: the input's own node, the input itself if it is a leaf that
requires grad, or None). It keeps only the tensors its formulas need
(``saved``), with their version numbers at save time, so that an in-place
change to one of them is caught at backward rather than giving a wrong answer.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["Node", "OUT"]


class _Out:
    """Marker in ``saved``: the op's own output (kept without a reference cycle)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OUT"


#: Put this in an op's saved tuple to save its output.
OUT = _Out()

_Tensor: Any = None  # set by ferro._core.tensor, to build tensors without an import cycle


class Node:
    """A recorded op, ready to run its backward formulas."""

    __slots__ = (
        "__weakref__",
        "attrs",
        "fns",
        "hooks",
        "meta",
        "name",
        "next",
        "out",
        "released",
        "retain",
        "saved",
        "versions",
    )

    def __init__(self, name: str, fns: Sequence[Callable[..., Any] | None],
                 nxt: tuple[Any, ...], saved: tuple[Any, ...],
                 meta: tuple[tuple[Any, Any], ...], attrs: dict[str, Any] | None) -> None:
        self.name = name
        self.fns = fns
        self.next = nxt
        self.saved = saved
        self.versions = tuple([s._vc[0] if isinstance(s, _Tensor) else -1 for s in saved]) if saved else ()
        self.meta = meta  # per input: (shape, dtype) to unbroadcast and cast its gradient
        self.attrs = attrs
        self.out: Any = None  # (data, dtype, device, version counter, version) when OUT is saved
        self.hooks: list[Callable[[Tensor], Tensor | None]] | None = None
        self.retain: weakref.ref[Tensor] | None = None
        self.released = False

    # -- public, PyTorch-style ------------------------------------------------

    def name_(self) -> str:
        return self.name

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """Where gradients flow next: ``(node or AccumulateGrad leaf or None, 0)`` per input."""
        return tuple((n, 0) for n in self.next)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> None:
        """Run ``hook(grad)`` on this node's incoming gradient; a returned tensor replaces it."""
        if self.hooks is None:
            self.hooks = []
        self.hooks.append(hook)

    def __repr__(self) -> str:
        return f"<{self.type_name}>"

    @property
    def type_name(self) -> str:
        """PyTorch's name for the node: ``MulBackward0`` for op ``mul``."""
        return "".join(p[:1].upper() + p[1:] for p in self.name.split("_")) + "Backward0"

    # -- running ----------------------------------------------------------------

    def unpack(self) -> tuple[Any, ...]:
        """The saved values, checked against in-place changes since they were saved."""
        if self.released:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {self!r}), or to use "
                "saved tensors after they were freed. Pass retain_graph=True to backward() or "
                "autograd.grad() the first time if you need to backward twice.")
        out = []
        for s, v in zip(self.saved, self.versions):
            if s is OUT:
                data, dtype, device, vc, version = self.out
                if vc[0] != version:
                    _raise_modified(self, dtype, data, vc[0], version)
                t = _Tensor._wrap(data, dtype, device)
                t._vc = vc
                t.grad_fn = self
                t._rg = True
                out.append(t)
            else:
                if v >= 0 and s._vc[0] != v:  # a Python value saved as is has v == -1
                    _raise_modified(self, s._dtype, s._data, s._vc[0], v)
                out.append(s)
        return tuple(out)

    def apply(self, grad: Tensor) -> tuple[Tensor | None, ...]:
        """Gradients of the op's inputs from the gradient of its output."""
        saved = self.unpack() if self.saved or self.released else ()
        attrs = self.attrs or {}
        return tuple([None if (f is None or n is None) else f(grad, *saved, **attrs)
                      for f, n in zip(self.fns, self.next)])

    def release(self) -> None:
        """Drop saved tensors after a backward without ``retain_graph``.

        A node that saved nothing can run again (as in PyTorch): only the use
        of freed saved values is an error.
        """
        if self.out is not None or self.versions.count(-1) != len(self.versions):  # tensors, not Python numbers
            self.saved = ()
            self.out = None
            self.released = True


def _raise_modified(node: Node, dtype: Any, data: Any, now: int, then: int) -> None:
    shape = list(getattr(data, "shape", ()))
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{dtype} {shape}], which is output 0 of or saved by {node!r}, is at version "
        f"{now}; expected version {then} instead. Use .clone() before the in-place op, or do it out of place.")
