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

__all__ = ["Node", "JointNode", "OUT"]


class _Out:
    """Marker in ``saved``: the op's own output (kept without a reference cycle)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OUT"


#: Put this in an op's saved tuple to save its output.
OUT = _Out()

_Tensor: Any = None  # set by ferro._core.tensor, to build tensors without an import cycle


class Node:
    """A recorded op, ready to run its backward formulas.

    Slots set by every recording (``dispatch.record``): ``name``, ``fns``, ``next``, ``meta`` (per input: its
    ``(shape, dtype)`` to sum a broadcast gradient back and cast it, or None where the input has the output's
    shape and dtype), ``attrs``, ``pre`` (None until a hook or ``retain_grad`` is put on the node: then
    ``[hooks or None, weak reference to the retaining tensor or None]``) and ``saved`` (None once released
    after a backward). ``versions`` and ``out`` are set only where ``saved`` holds something.
    """

    __slots__ = (
        "__weakref__",
        "attrs",
        "fns",
        "meta",
        "name",
        "next",
        "out",
        "pre",
        "saved",
        "versions",
    )

    # No ``__init__``: ``Node()`` is the cheapest way to make an instance (the recording sets the slots).

    @classmethod
    def new(cls, name: str, fns: Sequence[Callable[..., Any] | None], nxt: tuple[Any, ...],
            saved: tuple[Any, ...], meta: tuple[tuple[Any, Any] | None, ...], attrs: dict[str, Any] | None) -> Node:
        """A node of op ``name`` with its slots set (off the hot path: custom Functions, in-place on views)."""
        self = cls()
        self.name = name
        self.fns = fns
        self.next = nxt
        self.saved = saved
        if saved:
            self.versions = tuple([s._vc[0] if isinstance(s, _Tensor) else -1 for s in saved])
            self.out = None  # (data, dtype, device, version counter, version) when OUT is saved
        self.meta = meta
        self.attrs = attrs
        self.pre = None
        return self

    # -- public, PyTorch-style ------------------------------------------------

    def name_(self) -> str:
        return self.name

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """Where gradients flow next: ``(node or AccumulateGrad leaf or None, 0)`` per input."""
        return tuple((n, 0) for n in self.next)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> None:
        """Run ``hook(grad)`` on this node's incoming gradient; a returned tensor replaces it."""
        pre = self.pre
        if pre is None:
            pre = self.pre = [None, None]
        if pre[0] is None:
            pre[0] = []
        pre[0].append(hook)

    @property
    def hooks(self) -> list[Callable[[Tensor], Tensor | None]] | None:
        """The hooks on this node's incoming gradient (None where none was registered)."""
        return None if self.pre is None else self.pre[0]

    @property
    def retain(self) -> weakref.ref[Tensor] | None:
        """A weak reference to the non-leaf tensor whose ``retain_grad()`` keeps this node's gradient."""
        return None if self.pre is None else self.pre[1]

    @retain.setter
    def retain(self, ref: weakref.ref[Tensor] | None) -> None:
        if self.pre is None:
            self.pre = [None, None]
        self.pre[1] = ref

    @property
    def released(self) -> bool:
        """Whether a backward without ``retain_graph`` freed the saved values."""
        return self.saved is None

    def __repr__(self) -> str:
        return f"<{self.type_name}>"

    @property
    def type_name(self) -> str:
        """PyTorch's name for the node: ``MulBackward0`` for op ``mul``."""
        return "".join(p[:1].upper() + p[1:] for p in self.name.split("_")) + "Backward0"

    # -- running ----------------------------------------------------------------

    def unpack(self) -> tuple[Any, ...]:
        """The saved values, checked against in-place changes since they were saved."""
        saved = self.saved
        if saved is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {self!r}), or to use "
                "saved tensors after they were freed. Pass retain_graph=True to backward() or "
                "autograd.grad() the first time if you need to backward twice.")
        if not saved:
            return ()
        out = []
        for s, v in zip(saved, self.versions):
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
        saved = self.unpack()
        attrs = self.attrs or {}
        return tuple([None if (f is None or n is None) else f(grad, *saved, **attrs)
                      for f, n in zip(self.fns, self.next)])

    def release(self) -> None:
        """Drop saved tensors after a backward without ``retain_graph``.

        A node that saved nothing, or only Python numbers, can run again (as in PyTorch): only the use
        of freed saved values is an error.
        """
        saved = self.saved
        if saved and (self.out is not None or self.versions.count(-1) != len(self.versions)):
            self.saved = None
            self.out = None


class JointNode(Node):
    """A node whose one formula gives every input's gradient at once: ``fns[0](grad, *saved, **attrs)`` returns
    one gradient (or None) per input, so that a fused backward kernel computing them together runs once."""

    __slots__ = ()

    def apply(self, grad: Tensor) -> tuple[Tensor | None, ...]:
        return self.fns[0](grad, *self.unpack(), **(self.attrs or {}))


def _raise_modified(node: Node, dtype: Any, data: Any, now: int, then: int) -> None:
    shape = list(getattr(data, "shape", ()))
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{dtype} {shape}], which is output 0 of or saved by {node!r}, is at version "
        f"{now}; expected version {then} instead. Use .clone() before the in-place op, or do it out of place.")
