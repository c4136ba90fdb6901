"""Custom differentiable ops: subclass :class:`Function`, as in PyTorch."""

from __future__ import annotations

from typing import Any

from . import _mode
from ._node import Node

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: save tensors and values for backward."""

    def __init__(self) -> None:
        self.saved_tensors: tuple[Any, ...] = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self._versions: tuple[int, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for backward; in-place changes to them are caught there."""
        self.saved_tensors = tensors
        self._versions = tuple(t._vc[0] if t is not None else -1 for t in tensors)

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Accepted for compatibility: outputs of non-float dtypes never get gradients anyway."""


class _FunctionNode(Node):
    __slots__ = ("ctx", "fn_cls")

    def apply(self, grad: Any) -> tuple[Any, ...]:
        if self.released:
            self.unpack()  # raises the "backward twice" error
        ctx = self.ctx
        for t, v in zip(ctx.saved_tensors, ctx._versions):
            if t is not None and t._vc[0] != v:
                from ._node import _raise_modified
                _raise_modified(self, t._dtype, t._data, t._vc[0], v)
        grads = self.fn_cls.backward(ctx, grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(self.next):
            raise RuntimeError(f"function {self.fn_cls.__name__}.backward returned {len(grads)} gradients, "
                               f"expected {len(self.next)} (one per forward input)")
        return grads

    def release(self) -> None:
        super().release()
        self.ctx.saved_tensors = ()


class Function:
    """Base class of custom ops: implement ``forward(ctx, *args)`` and ``backward(ctx, grad)``.

    >>> import ferro
    >>> class Square(ferro.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = ferro.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).backward(ferro.ones(1)); x.grad
    tensor([6.])
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """Compute the output from the inputs (runs with grad mode off)."""
        raise NotImplementedError("subclasses of ferro.autograd.Function must implement forward()")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        """Gradients of the inputs (one per forward argument, None for non-tensors)."""
        raise NotImplementedError("subclasses of ferro.autograd.Function must implement backward()")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run forward and, when an input requires grad, record backward in the graph."""
        from .._tensor import Tensor
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        prev = _mode._state.enabled
        _mode._state.enabled = False
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            _mode._state.enabled = prev
        if not (prev and any(ctx.needs_input_grad)):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        nxt = tuple((a.grad_fn or a) if (isinstance(a, Tensor) and a._rg) else None for a in args)
        meta = tuple((a.shape, a._dtype) if isinstance(a, Tensor) else None for a in args)
        node = _FunctionNode(cls.__name__, (), nxt, (), meta, None)
        node.fn_cls, node.ctx = cls, ctx
        for o in outs:
            if isinstance(o, Tensor) and (o._dtype.is_floating_point or o._dtype.is_complex):
                if o.grad_fn is not None or any(o is a for a in args):
                    o = o.detach()
                o.grad_fn, o._rg = node, True
                break  # a single differentiable output is supported
        return outs[0] if not isinstance(out, tuple) else tuple(outs)
