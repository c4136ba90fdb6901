"""Reductions: sum, mean, amax, amin, max, min, argmax, argmin (with ``dim`` and ``keepdim``)."""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from .._core import grad_mode as _mode
from .._core.dtypes import DType, as_dtype, int64
from .._core.modes import ARMED, entry, numpy_keywords
from .._core.naming import RENAMED, in_op, not_a_tensor
from .._core.node import OUT, Node
from .._core.records import REGISTRY, OpDef, register
from .._core.tensor import Tensor, _new, _wrap, _wrap_dim
from ..autograd._views import VIEW_OPS, refresh
from ..dispatch._dispatch import finish, kernel_for, record1, run_elsewhere, view_result
from ..errors import ShapeError

__all__ = ["reduce_dims", "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin"]

#: ``(values, indices)`` returned by max / min with a ``dim``.
MaxMin = namedtuple("MaxMin", ["values", "indices"])


def reduce_dims(x: Tensor, dim: int | Sequence[int] | None, op: str) -> tuple[int, ...] | None:
    """The sorted, non-negative dims a reduction ``op`` of ``x`` runs over (None: all of them).

    The one check of every reduction's ``dim``: an int, a tuple or list of ints, or None; a wrong type
    is a TypeError and a dim out of range an IndexError, both naming ``op``.
    """
    if dim is None:
        return None
    n = len(x._data.shape)
    if type(dim) is int and -n <= dim < n:  # the usual case (a 0-d tensor takes the general path)
        return (dim + n if dim < 0 else dim,)
    ds = (dim,) if not isinstance(dim, (tuple, list)) else tuple(dim)
    norm = tuple(_wrap_dim(d, n, op) for d in ds)
    if len(set(norm)) != len(norm):
        raise ShapeError(f"{op}: dim {list(ds)} appears multiple times in the list of dims")
    if not norm or n == 0:  # dim=() reduces everything (PyTorch); a 0-d tensor accepts dim 0 / -1
        return None
    return tuple(sorted(norm))


def _refuse_empty(op: str, x: Tensor, dims: tuple[int, ...] | None) -> None:
    """PyTorch's IndexError for a reduction without identity (max, argmin...) over an empty dim."""
    empty = [d for d in (range(x.ndim) if dims is None else dims) if x.shape[d] == 0]
    if dims is None:
        raise IndexError(f"{op}(): expected a reduction dim to be specified for an empty input of shape "
                         f"{list(x.shape)} (the operation has no identity)")
    if empty:
        raise IndexError(f"{op}(): expected reduction dim {empty[0]} to have non-zero size, input of shape "
                         f"{list(x.shape)} (the operation has no identity)")


@functools.lru_cache(maxsize=256)  # (a backward step reads it: the generator costs a third of sum's formula)
def _keep_shape(in_shape: tuple[int, ...], dims: tuple[int, ...] | None) -> tuple[int, ...]:
    if dims is None:
        return (1,) * len(in_shape)
    return tuple(1 if i in dims else s for i, s in enumerate(in_shape))


def _grad_back(g: Tensor, in_shape: tuple[int, ...], dims: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """A reduced gradient reshaped to keep its dims, then broadcast to the input's shape.

    The sizes are right by construction, so where no dispatch layer is on, the reshape is the device's ``view``
    kernel and the broadcast ``expand``'s, each with its view record and node but without the public functions'
    checks; a full reduction's 0-d gradient broadcasts as it is.
    """
    if not ARMED[0]:
        dev = g._device
        try:
            k, table = dev._fast["expand"]
        except (KeyError, TypeError):
            k = table = None
        if k is not None and g._dtype in table:
            shape = g._data.shape
            if not keepdim and dims is not None:
                keep = _keep_shape(in_shape, dims)
                view = None if dev._copies else dev._kernels.get("view")
                try:
                    data = None if view is None else view(g._data, keep)
                except (ValueError, AttributeError):
                    data = None
                g = g.reshape(keep) if data is None else view_result(REGISTRY["reshape"], data, g,
                                                                      {"in_shape": shape})
                shape = keep
            if shape == in_shape:
                return g
            return view_result(REGISTRY["expand"], k(g._data, in_shape), g, {"in_shape": shape})
    if not keepdim and dims is not None:
        g = g.reshape(_keep_shape(in_shape, dims))
    return g if g._data.shape == in_shape else g.expand(*in_shape)


def _count(in_shape: tuple[int, ...], dims: tuple[int, ...] | None) -> int:
    n = 1
    for i, s in enumerate(in_shape):
        if dims is None or i in dims:
            n *= s
    return n


def _extreme_grad(g: Tensor, x: Tensor, out: Tensor, *, in_shape: tuple[int, ...],
                  dims: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    # amax / amin spread the gradient evenly over ties, as PyTorch does.
    o = out if keepdim else out.reshape(_keep_shape(in_shape, dims))
    mask = x == o
    share = _grad_back(g, in_shape, dims, keepdim) * mask
    return share / mask.sum(dims, keepdim=True)


_SUM = register(OpDef("sum", "reduction", "Sum over dims (all by default); integers and bool sum in int64.",
                      dtype_rule="accumulate",
                      grads=(lambda g, *, in_shape, dims, keepdim: _grad_back(g, in_shape, dims, keepdim),)))
_MEAN = register(OpDef("mean", "reduction", "Mean over dims (all by default); floating dtypes only.",
                       dtype_rule="floating",
                       grads=(lambda g, *, in_shape, dims, keepdim:
                              _grad_back(g / _count(in_shape, dims), in_shape, dims, keepdim),)))
_AMAX = register(OpDef("amax", "reduction", "Maximum over dims; ties share the gradient.", dtype_rule="real",
                       saves=(0, OUT), grads=(_extreme_grad,)))
_AMIN = register(OpDef("amin", "reduction", "Minimum over dims; ties share the gradient.", dtype_rule="real",
                       saves=(0, OUT), grads=(_extreme_grad,)))


def _reduce(op: OpDef, x: Tensor, dim: Any, keepdim: bool, dtype: DType | None = None) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    dims = reduce_dims(x, dim, op.name)
    dev = x._device
    in_dt = x._dtype if dtype is None else dtype
    k = kernel_for(op, dev, in_dt)
    if k is None:
        return run_elsewhere(op, dev, in_dt, (x, dim, keepdim), {} if dtype is None else {"dtype": dtype})
    compute, out_dt = op.table[in_dt]
    if dtype is not None:  # an explicit dtype= is both the compute and the result dtype (sum(dtype=int32))
        compute = out_dt = dtype
    if (op is _AMAX or op is _AMIN) and 0 in x._data.shape:  # (0 in shape: no elements)
        _refuse_empty(op.name, x, dims)
    data = x._data if x._dtype is compute else dev._kernels["cast"](x._data, compute)
    attrs = {"in_shape": x._data.shape, "dims": dims, "keepdim": keepdim}
    result = k(data, dims, keepdim, out_dt) if op is _SUM else k(data, dims, keepdim)
    return finish(op, result, out_dt, dev, (x,), (x, OUT) if op.saves else (), attrs)


def _reduced(op: OpDef, x: Any, dim: Any, keepdim: bool) -> Tensor | None:
    """``op`` of ``x`` over ``dim`` straight by the device's kernel, where the kernel takes ``x``'s dtype as it is
    (no cast) and no dispatch layer is on: :func:`_reduce`'s steps, each done once; None where :func:`_reduce`
    must run (a missing kernel, another dtype, an empty input of max / min, no tensor: it says why)."""
    try:
        dev = x._device
        dt = x._dtype
        k, table = dev._fast[op.name]
        compute, out_dt = table[dt]
    except (AttributeError, KeyError, TypeError):
        return None
    data = x._data
    if compute is not dt or (op.saves and 0 in data.shape):
        return None
    dims = None if dim is None else reduce_dims(x, dim, op.name)
    result = k(data, dims, keepdim, out_dt) if op is _SUM else k(data, dims, keepdim)
    r = _new(Tensor)  # _wrap, inlined
    r._data = result
    r._dtype = out_dt
    r._device = dev
    r._rg = False
    r._vc = [0]
    r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
    if x._rg and _mode._state.enabled:
        record1(r, op, x, (x, OUT) if op.saves else (), {"in_shape": data.shape, "dims": dims, "keepdim": keepdim})
    return r


def sum(x: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        dtype: DType | None = None) -> Tensor:
    """Sum of elements over ``dim`` (all when None)."""
    if dtype is None and (r := _reduced(_SUM, x, dim, keepdim)) is not None:
        return r
    return _reduce(_SUM, x, dim, keepdim, as_dtype(dtype, "sum"))


def mean(x: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: DType | None = None) -> Tensor:
    """Mean of elements over ``dim`` (all when None)."""
    if dtype is None and (r := _reduced(_MEAN, x, dim, keepdim)) is not None:  # (integers miss the table)
        return r
    if dtype is not None:
        x = x.to(as_dtype(dtype, "mean"))
    try:
        floating = x._dtype.is_floating_point or x._dtype.is_complex
    except AttributeError:
        raise not_a_tensor("mean", "input", x) from None
    if not floating:
        from ..errors import DTypeError
        raise DTypeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                         f"complex dtype. Got: {x._dtype}")
    return _reduce(_MEAN, x, dim, keepdim)


def _given(kwargs: dict[str, Any], dim: Any, keepdim: Any) -> dict[str, Any]:
    """``kwargs`` with ``dim`` and ``keepdim`` where they differ from their defaults (so that ``axis=`` alone
    is not taken as given beside ``dim``)."""
    if dim is not None:
        kwargs["dim"] = dim
    if keepdim is not False:
        kwargs["keepdim"] = keepdim
    return kwargs


def _whole(op: OpDef, checked: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The public ``sum`` / ``mean`` (``op``): the reduction of every element of a tensor whose dtype the
    device's kernel takes as it is, with nothing to record and no layer on, runs here without the dispatch
    entry's frame; any other call takes the entry of ``checked`` (layers, ``axis=``, errors named)."""
    name = op.name
    is_sum = op is _SUM
    fns = op.grads

    def fn(x: Tensor, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Tensor:
        if kwargs:  # (axis= / keepdims=: the entry renames them; what was given besides goes as keywords)
            return slow(x, **_given(kwargs, dim, keepdim))
        if dim is not None:
            if type(dim) is not int:
                return slow(x, dim, keepdim)
            try:  # (one int dim: _reduced's steps, or None where the entry must run)
                r = _reduced(op, x, dim, keepdim)
            except RENAMED as e:
                in_op(name, e)
                raise
            return slow(x, dim, keepdim) if r is None else r
        try:
            dt = x._dtype
            dev = x._device
            k, table = dev._fast[name]
            compute, out_dt = table[dt]
            rg = x._rg
        except (AttributeError, KeyError, TypeError):
            return slow(x, dim, keepdim)
        if compute is not dt:
            return slow(x, dim, keepdim)
        xd = x._data
        try:
            data = k(xd, None, keepdim, out_dt) if is_sum else k(xd, None, keepdim)
        except RENAMED as e:
            in_op(name, e)
            raise
        r = _new(Tensor)  # _wrap, inlined
        r._data = data
        r._dtype = out_dt
        r._device = dev
        r._rg = False
        r._vc = [0]
        r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
        if rg and _mode._state.enabled and out_dt.category >= 2:
            # record1's steps, inlined (a node to record; no layer wants the op: _fast had it)
            gf = x.grad_fn
            if gf is not None and x._view is not None and gf.name in VIEW_OPS:  # a view whose base may have changed
                refresh(x)
                gf = x.grad_fn
            node = Node()
            node.name = name
            node.fns = fns
            node.next = (x,) if gf is None else (gf,)
            node.meta = ((xd.shape, dt),)
            node.attrs = {"in_shape": xd.shape, "dims": None, "keepdim": keepdim}
            node.pre = None
            node.saved = ()
            r.grad_fn = node
            r._rg = True
        return r

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = checked.__doc__
    slow = entry(op, checked)
    fn.__dispatches__ = True  # type: ignore[attr-defined]  # its slow path steps into the layers
    fn.__wrapped__ = checked  # type: ignore[attr-defined]  # its signature (the stubs, help()): no **kwargs
    return fn


sum = _whole(_SUM, sum)
mean = _whole(_MEAN, mean)


def amax(x: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False) -> Tensor:
    """Maximum over ``dim`` (all when empty or None)."""
    dim = dim if dim is None or type(dim) is int or dim not in ((), []) else None
    r = _reduced(_AMAX, x, dim, keepdim)
    return r if r is not None else _reduce(_AMAX, x, dim, keepdim)


def amin(x: Tensor, dim: int | Sequence[int] | None = (), keepdim: bool = False) -> Tensor:
    """Minimum over ``dim`` (all when empty or None)."""
    dim = dim if dim is None or type(dim) is int or dim not in ((), []) else None
    r = _reduced(_AMIN, x, dim, keepdim)
    return r if r is not None else _reduce(_AMIN, x, dim, keepdim)


_ANY = register(OpDef("any", "reduction", "Whether any element (over dims) is nonzero.", dtype_rule="to_bool"))
_ALL = register(OpDef("all", "reduction", "Whether every element (over dims) is nonzero.", dtype_rule="to_bool"))


def any(x: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Whether any element is nonzero, over ``dim`` (all dims by default); a bool tensor."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:  # PyTorch: any / all over no dim reduce nothing
        return x != 0
    return _reduce(_ANY, x, dim, keepdim)


def all(x: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Whether every element is nonzero, over ``dim`` (all dims by default); a bool tensor."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return x != 0
    return _reduce(_ALL, x, dim, keepdim)


_ARGMAX = register(OpDef("argmax", "reduction", "Index of the maximum (flattened when dim is None).",
                         dtype_rule="numeric_index"))
_ARGMIN = register(OpDef("argmin", "reduction", "Index of the minimum (flattened when dim is None).",
                         dtype_rule="numeric_index"))


def _arg(op: OpDef, x: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    try:
        dev = x._device
    except AttributeError:
        raise not_a_tensor(op.name, "input", x) from None
    k = kernel_for(op, dev, x._dtype)
    if k is None:
        return run_elsewhere(op, dev, x._dtype, (x, dim, keepdim), {})
    d = None if dim is None else _wrap_dim(dim, x.ndim, op.name)
    if x.numel() == 0:
        _refuse_empty(op.name, x, None if d is None or x.ndim == 0 else (d,))
    data = x._data
    if d is None and keepdim:
        r = k(data.reshape(-1) if hasattr(data, "reshape") else data, 0, False)
        return _wrap(dev._kernels["reshape"](r, (1,) * x.ndim), int64, dev)
    if d is None:
        data = dev._kernels["reshape"](data, (-1,))
        d = 0
    return _wrap(dev._kernels["cast"](k(data, d, keepdim), int64), int64, dev)


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened tensor when ``dim`` is None)."""
    return _arg(_ARGMAX, x, dim, keepdim)


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element (of the flattened tensor when ``dim`` is None)."""
    return _arg(_ARGMIN, x, dim, keepdim)


def _pick(x: Tensor, dim: int, keepdim: bool, idx: Tensor, extreme: Callable[..., Tensor]) -> MaxMin:
    if not x._rg or x.ndim == 0:
        return MaxMin(extreme(x, dim, keepdim), idx)
    # The value at the index, written as a masked sum so that its gradient goes
    # to that one element (PyTorch's max(dim) backward), not split over ties.
    from .._creation import arange
    from .elementwise import where
    pos_shape = [1] * x.ndim
    pos_shape[dim] = x.shape[dim]
    mask = arange(x.shape[dim], device=x._device).reshape(pos_shape) == (idx if keepdim else idx.unsqueeze(dim))
    return MaxMin(where(mask, x, 0).sum(dim, keepdim=keepdim), idx)


def max(x: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The largest element; with ``dim``, ``(values, indices)`` along it; with a Tensor, ``maximum``."""
    if dim is None:  # (the usual call first)
        r = _reduced(_AMAX, x, None, False)
        return r if r is not None else _reduce(_AMAX, x, None, False)
    if isinstance(dim, Tensor):
        from .elementwise import FUNCTIONS
        return FUNCTIONS["maximum"](x, dim)
    d = _wrap_dim(dim, x.ndim, "max")
    idx = argmax(x, d, keepdim)
    return _pick(x, d, keepdim, idx, amax)


def min(x: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The smallest element; with ``dim``, ``(values, indices)`` along it; with a Tensor, ``minimum``."""
    if dim is None:  # (the usual call first)
        r = _reduced(_AMIN, x, None, False)
        return r if r is not None else _reduce(_AMIN, x, None, False)
    if isinstance(dim, Tensor):
        from .elementwise import FUNCTIONS
        return FUNCTIONS["minimum"](x, dim)
    d = _wrap_dim(dim, x.ndim, "min")
    idx = argmin(x, d, keepdim)
    return _pick(x, d, keepdim, idx, amin)


def _extreme(op: OpDef, checked: Callable[..., Any]) -> Callable[..., Any]:
    """The public ``max`` / ``min`` (``checked``, reducing by ``op``): the extreme of every element of a
    non-empty tensor whose dtype the kernel takes as it is, nothing to record, runs here; any other call takes
    ``checked`` (``axis=`` / ``keepdims=`` accepted)."""
    name = op.name
    slow = numpy_keywords(checked)

    def fn(x: Tensor, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:
        if kwargs:  # (axis= / keepdims=: the entry renames them; what was given besides goes as keywords)
            return slow(x, **_given(kwargs, dim, keepdim))
        if dim is not None:
            return slow(x, dim, keepdim)
        try:
            dt = x._dtype
            dev = x._device
            k, table = dev._fast[name]
            data = x._data
            compute, out_dt = table[dt]
            if compute is not dt or 0 in data.shape or (x._rg and _mode._state.enabled):
                raise KeyError
        except (AttributeError, KeyError, TypeError):
            return slow(x, dim, keepdim)
        r = _new(Tensor)  # _wrap, inlined
        r._data = k(data, None, False)
        r._dtype = out_dt
        r._device = dev
        r._rg = False
        r._vc = [0]
        r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
        return r

    fn.__name__ = fn.__qualname__ = checked.__name__
    fn.__doc__ = checked.__doc__
    fn.__wrapped__ = checked  # type: ignore[attr-defined]  # its signature (the stubs, help()): no **kwargs
    return fn


max = _extreme(_AMAX, max)
min = _extreme(_AMIN, min)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sum": sum, "mean": mean, "amax": amax, "amin": amin, "max": max, "min": min,
    "argmax": argmax, "argmin": argmin, "any": any, "all": all,
}
for _name, _o in (("sum", _SUM), ("mean", _MEAN), ("amax", _AMAX), ("amin", _AMIN), ("argmax", _ARGMAX),
                  ("argmin", _ARGMIN), ("any", _ANY), ("all", _ALL)):
    _o.fn = FUNCTIONS[_name]
METHODS = list(FUNCTIONS)
