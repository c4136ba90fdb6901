"""The layout layer of the dispatcher: tensors not stored as one dense strided array (sparse, quantized).

A tensor of such a layout is an instance of a :class:`LayoutTensor` subclass, which names its ``kind``
(the key of its rules: ``"sparse_coo"``, ``"sparse_csr"``, ``"quantized"``...). What an op does with
such a tensor is a *rule*, registered per (kind, op)::

    @rule("sparse_csr", "mul")
    def _mul(a, b): ...

While at least one layout tensor is alive, the layout layer (:class:`LayoutMode`) is active on every
thread (:func:`ferro._core.modes.push_global`); it sees every op call, its composites' insides included,
and sends a call with a layout tensor among its arguments to that kind's rule, or raises
:class:`~ferro.errors.UnsupportedLayoutError` naming the op, the argument and the layout. A layout tensor
is never densified behind the user's back. While no layout tensor exists, the layer costs nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..errors import UnsupportedLayoutError
from .modes import Mode, pop_global, push_global
from .tensor import Tensor

__all__ = ["Layout", "strided", "sparse_coo", "sparse_csr", "LayoutTensor", "LayoutMode", "RULES", "rule",
           "layout_args", "track", "live"]


class Layout:
    """A tensor's memory layout, as ``torch.layout``: ``ferro.strided`` (dense), ``ferro.sparse_coo``,
    ``ferro.sparse_csr``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ferro.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickled by name: the module attribute of the same name


strided = Layout("strided")
sparse_coo = Layout("sparse_coo")
sparse_csr = Layout("sparse_csr")


class LayoutTensor(Tensor):
    """Base class of the tensors the layout layer dispatches on. A subclass sets :attr:`kind` (its rules'
    key), :attr:`describes` (how messages name it) and :attr:`way_out` (the conversion to a dense tensor),
    and calls :func:`track` on each new instance."""

    __slots__ = ()
    kind: str = ""
    describes: str = ""
    way_out: str = ".to_dense()"


#: (kind, op name) -> the rule: called with the op's arguments in place of the op.
RULES: dict[tuple[str, str], Callable[..., Any]] = {}


def rule(kind: str, *ops: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as what ops ``ops`` do when a ``kind`` tensor is among their arguments."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in ops:
            RULES[kind, name] = fn
        return fn
    return register


def layout_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[int | str, LayoutTensor]]:
    """The layout tensors among an op call's arguments (and in the lists and tuples it was given), with
    their positions or keywords."""
    found: list[tuple[int | str, LayoutTensor]] = []
    for where, a in (*enumerate(args), *kwargs.items()):
        if isinstance(a, LayoutTensor):
            found.append((where, a))
        elif isinstance(a, (list, tuple)):
            found.extend((where, x) for x in a if isinstance(x, LayoutTensor))
    return found


def _argument_name(op: Any, where: int | str) -> str:
    if isinstance(where, str):
        return where
    if op.kind in ("unary", "binary") and where < 2:  # their functions say (x, y); PyTorch's docs and errors say:
        return ("input", "other")[where]
    fn = op.fn
    while hasattr(fn, "__wrapped__"):  # the function under its wrappers (functools.wraps) names the parameters
        fn = fn.__wrapped__
    code = getattr(fn, "__code__", None)
    params = code.co_varnames[:code.co_argcount] if code is not None else ()
    return params[where] if where < len(params) else f"#{where}"


class LayoutMode(Mode):
    """The layer that sends an op call with a layout tensor among its arguments to the tensor kind's rule."""

    layer = "layout"
    inner = True

    def cares(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether a layout tensor is among the arguments (or in a list or tuple of them)."""
        for a in args:
            if isinstance(a, LayoutTensor) or (isinstance(a, (list, tuple))
                                               and any(isinstance(x, LayoutTensor) for x in a)):
                return True
        return bool(kwargs) and self.cares(tuple(kwargs.values()), {})

    def handle(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> Any:
        found = layout_args(args, kwargs)
        if not found:
            return proceed(args, kwargs)
        for _, t in found:
            fn = RULES.get((t.kind, op.name))
            if fn is not None:
                return fn(*args, **kwargs)
        where, t = found[0]
        raise UnsupportedLayoutError(op.name, _argument_name(op, where), t.describes, t.way_out)


_MODE = LayoutMode()
_count_lock = threading.RLock()  # re-entrant: a collection inside track() may run _release() on this thread
_live: list[int] = [0]


def _release() -> None:
    with _count_lock:
        _live[0] -= 1
        if _live[0] == 0:
            pop_global(_MODE)


def track(t: LayoutTensor) -> LayoutTensor:
    """Count ``t`` among the live layout tensors (the layer is active while there are any); returns ``t``."""
    with _count_lock:
        if _live[0] == 0:
            push_global(_MODE)
        _live[0] += 1
    weakref.finalize(t, _release)
    return t


def live() -> int:
    """How many layout tensors are alive (the layout layer is active while this is nonzero)."""
    return _live[0]
