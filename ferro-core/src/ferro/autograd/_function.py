"""Custom differentiable ops: subclass :class:`Function`, as in PyTorch."""

from __future__ import annotations

from typing import Any

from .._core import grad_mode as _mode
from .._core.node import Node, _raise_modified
from .._core.tensor import Tensor, _new, full
from ._views import VIEW_OPS, refresh

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: save tensors and values for backward."""

    def __init__(self) -> None:
        self.saved_tensors: tuple[Any, ...] = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self._versions: tuple[int, ...] = ()
        self.materialize_grads = True

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zeros (True, the default) or None for outputs that received no gradient,
        as PyTorch's: a backward that takes None saves making and reading those zeros."""
        self.materialize_grads = bool(value)

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for backward; in-place changes to them are caught there."""
        self.saved_tensors = tensors
        self._versions = tuple(t._vc[0] if t is not None else -1 for t in tensors)

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Accepted for compatibility: outputs of non-float dtypes never get gradients anyway."""


class _FunctionNode(Node):
    __slots__ = ("ctx", "fn_cls", "layout")

    def apply(self, grad: Any) -> tuple[Any, ...]:
        if self.released:
            self.unpack()  # raises the "backward twice" error
        ctx = self.ctx
        for t, v in zip(ctx.saved_tensors, ctx._versions):
            if t is not None and t._vc[0] != v:
                _raise_modified(self, t._dtype, t._data, t._vc[0], v)
        name = self.fn_cls.__name__
        grads = self.fn_cls.backward(ctx, *(_unpack(grad, self.layout, ctx.materialize_grads) if self.layout
                                            else (grad,)))
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(self.next):
            raise RuntimeError(f"function {name}.backward returned {len(grads)} gradients, "
                               f"expected {len(self.next)} (one per forward input)")
        for i, (g, meta) in enumerate(zip(grads, self.meta)):
            if g is None or meta is None or self.next[i] is None:
                continue
            shape = tuple(meta[0])
            gshape = tuple(getattr(g, "shape", ()))
            if not hasattr(g, "_data"):
                raise RuntimeError(f"function {name}.backward returned a {type(g).__name__} as the gradient at "
                                   f"index {i}; expected a Tensor or None")
            if gshape != shape and not _sums_to(gshape, shape):
                raise RuntimeError(f"function {name}.backward returned an invalid gradient at index {i} - got "
                                   f"{list(gshape)} but expected shape compatible with {list(shape)}")
        return grads

    def release(self) -> None:
        if self.ctx.saved_tensors:
            self.saved = None  # released: a second backward through it is refused
            self.ctx.saved_tensors = ()


def _sums_to(gshape: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether a gradient of ``gshape`` is ``shape`` broadcast (and can be summed back to it)."""
    if len(gshape) < len(shape):
        return False
    return all(s == 1 or s == gs for s, gs in zip(shape[::-1], gshape[::-1]))


class _Grads(Tensor):
    """The gradients of a multi-output Function's outputs on their way to its node: ``parts`` maps an output's
    index to its gradient. Each output's own node sends one (its tensor fields are that gradient's, so the
    engine's checks of shape and dtype pass it as is); the engine adds those arriving at the Function's node,
    which here merges the maps. No array of all outputs' gradients, no zeros for outputs without one."""

    __slots__ = ("parts",)

    def __add__(self, other: Any) -> _Grads:
        parts = dict(self.parts)
        for i, g in other.parts.items():
            prev = parts.get(i)
            parts[i] = g if prev is None else prev + g
        return _carry(parts, self)


def _carry(parts: dict[int, Any], like: Any) -> _Grads:
    t = _new(_Grads)
    t._data, t._dtype, t._device, t._vc = like._data, like._dtype, like._device, like._vc
    t._rg, t.grad_fn = like._rg, like.grad_fn
    t._grad = t._base = t._hooks = t._retains = t._view = None
    t.parts = parts
    return t


def _part(g: Any, *, index: int) -> _Grads:
    """The gradient of output ``index`` sent on to the Function's node."""
    return _carry({index: g}, g)


def _unpack(grads: Any, slots: tuple[Any, ...], materialize: bool) -> tuple[Any, ...]:
    """One gradient per output, of its shape and dtype; outputs without one get zeros (``materialize``) or
    None, and those that carry none (not floating) None."""
    parts = grads.parts
    out = []
    for i, slot in enumerate(slots):
        g = parts.get(i)
        if slot is None:
            g = None
        elif g is None:
            if materialize:
                g = full(slot[0], 0, slot[1], grads._device)
        else:
            if g._data.shape != slot[0]:
                g = g.reshape(slot[0])
            if g._dtype is not slot[1]:
                g = g.to(slot[1])
        out.append(g)
    return tuple(out)


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
        ctx = FunctionCtx()
        needs = [isinstance(a, Tensor) and a._rg for a in args]
        ctx.needs_input_grad = tuple(needs)
        prev = _mode._state.enabled
        _mode._state.enabled = False
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            _mode._state.enabled = prev
        if not (prev and True in needs):
            return out
        nxt = []
        meta = []
        for a, rg in zip(args, needs):
            if rg:
                gf = a.grad_fn
                if gf is not None and gf.name in VIEW_OPS:
                    refresh(a)  # a view whose base changed in place since its graph position was set
                    gf = a.grad_fn
                nxt.append(a if gf is None else gf)
            else:
                nxt.append(None)
            meta.append((a._data.shape, a._dtype) if isinstance(a, Tensor) else None)
        node = _FunctionNode.new(cls.__name__, (), tuple(nxt), (), tuple(meta), None)
        node.fn_cls, node.ctx, node.layout = cls, ctx, None
        if not isinstance(out, tuple):  # one output
            if isinstance(out, Tensor) and out._dtype.category >= 2:  # floating or complex: differentiable
                if out.grad_fn is not None or any([out is a for a in args]):
                    out = out.detach()  # an input returned as is: a new tensor
                out.grad_fn, out._rg = node, True
            return out
        outs = list(out)
        diff = [i for i, o in enumerate(outs)
                if isinstance(o, Tensor) and (o._dtype.is_floating_point or o._dtype.is_complex)]
        for i in diff:
            o = outs[i]
            if o.grad_fn is not None or any(o is a for a in args) or any(o is outs[j] for j in range(i)):
                outs[i] = o = o.detach()  # an input (or a repeated output) returned as is: a new tensor
        if not diff:
            return out
        # Several outputs: each gets a small node that sends its gradient on to the Function's node, tagged with
        # the output's index (``_Grads``), so that backward runs once with one gradient per output.
        node.layout = tuple((tuple(o._data.shape), o._dtype) if i in diff else None for i, o in enumerate(outs))
        for i in diff:
            o = outs[i]
            part = Node.new(cls.__name__, (_part,), (node,), (), (None,), {"index": i})
            o.grad_fn, o._rg = part, True
        return tuple(outs)
