"""Gather, scatter and index ops, composed from ``getitem`` and ``index_put``.

``gather`` and ``scatter`` along ``dim`` become advanced indexing with the
index tensor at ``dim`` and ``arange`` grids elsewhere, which gives PyTorch's
semantics (the index may be smaller than the input in other dimensions) and
gradients through the primitives. Reductions other than sum and mean use the
``index_reduce`` kernel, with gradients written in ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.dtypes import bool_
from .._core.naming import not_a_tensor
from .._core.records import OpDef, register, register_composites
from .._core.tensor import Tensor, _wrap_dim
from ..autograd._function import Function
from ..dispatch._dispatch import kernel
from ..errors import DTypeError, ShapeError
from .elementwise import where

__all__ = ["FUNCTIONS", "METHODS"]


def _check_index(op: str, index: Tensor) -> None:
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu":
        raise DTypeError(f"{op}: expected an integer index tensor, got "
                         f"{getattr(index, 'dtype', type(index).__name__)}")


def refuse_negative(op: str, index: Tensor, dim: int, size: int) -> Tensor:
    """``index`` for an op that refuses negative indices, as PyTorch's gather, scatter, index_select,
    index_add, index_copy and embedding do (``getitem``, which they are written in, wraps them).

    On the host the check is free and raises now, naming the index; elsewhere a negative entry is
    replaced by ``size``, out of range, so the device kernel's own bounds check reports it (at the next
    synchronization where its errors are deferred) without a host round-trip here.
    """
    if not index.numel():
        return index
    if index._device.type != "cpu":
        name_late_errors(index, f"{op}: argument 'index' (dimension {dim} of size {size})")
        return index if index._dtype.kind == "u" else where(index < 0, size, index)
    if index._dtype.kind != "u":
        low = int(index.amin().item())
        if low < 0:
            raise IndexError(f"{op}: index {low} is out of bounds for dimension {dim} with size {size} "
                             "(negative indices are not wrapped by this op)")
    return index


def name_late_errors(index: Tensor, label: str) -> None:
    """Name the op and argument (``label``) in the IndexError that ``index``'s backend reports at the next
    synchronization where its device kernels cannot raise (OpenCL's); nothing where errors are immediate."""
    dev = index._device
    dev.backend.name_deferred_errors(dev.index, label)


def _grid_key(x: Tensor, dim: int, index: Tensor, op: str) -> tuple[Any, ...]:
    """The advanced-indexing key that reads ``x`` along ``dim`` at ``index`` (``gather``'s key)."""
    from .._creation import arange
    _check_index(op, index)
    d = _wrap_dim(dim, x.ndim, op)
    index = refuse_negative(op, index, d, x.shape[d]) if x.ndim else index
    if index.ndim != x.ndim:
        raise ShapeError(f"{op}: index {list(index.shape)} and input {list(x.shape)} must have the same number of "
                         "dimensions")
    for k in range(x.ndim):
        if k != d and index.shape[k] > x.shape[k]:
            raise ShapeError(f"{op}: index {list(index.shape)} is larger than input {list(x.shape)} in dimension {k}")
    key = []
    for k in range(x.ndim):
        if k == d:
            key.append(index)
        else:
            shape = [1] * x.ndim
            shape[k] = index.shape[k]
            key.append(arange(index.shape[k], device=x.device).reshape(shape))
    return tuple(key)


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j][k] = x[index[i][j][k]][j][k]`` for ``dim == 0`` (and so on)."""
    return x[_grid_key(x, dim, index, "gather")]


def take_along_dim(x: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` with broadcasting of ``indices`` and ``x`` in the other dimensions."""
    if dim is None:  # PyTorch refuses negative indices here (and wraps them along a dim)
        flat = x.reshape(-1)
        return flat[refuse_negative("take_along_dim", indices.reshape(-1), 0, flat.shape[0])]
    d = _wrap_dim(dim, x.ndim, "take_along_dim")
    shape_x, shape_i = list(x.shape), list(indices.shape)
    shape_x[d] = shape_i[d] = 1
    import builtins

    from .._ops.shape import expand
    common = [builtins.max(a, b) for a, b in zip(shape_x, shape_i)]
    xi = list(common)
    xi[d] = x.shape[d]
    ii = list(common)
    ii[d] = indices.shape[d]
    if indices._dtype.kind == "i":  # take_along_dim wraps negative indices (gather refuses them)
        indices = where(indices < 0, indices + x.shape[d], indices)
    return gather(expand(x, *xi), d, expand(indices, *ii))


def _source(src: Any, index: Tensor, op: str = "scatter") -> Any:
    """The part of ``src`` that ``index`` reads; a ``src`` smaller than ``index`` in some dimension is refused
    (PyTorch does; it would broadcast here)."""
    if not isinstance(src, Tensor):
        return src
    if src.ndim != index.ndim or any(i > n for i, n in zip(index.shape, src.shape)):
        raise ShapeError(f"{op}: index {list(index.shape)} must be no larger than src {list(src.shape)} in every "
                         "dimension (and of the same number of dimensions)")
    return src[tuple(slice(0, n) for n in index.shape)]


def scatter(x: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """A copy of ``x`` with ``src`` (or ``value``) written at ``index`` along ``dim``."""
    if reduce is not None:
        return scatter_reduce(x, dim, index, _source(src if src is not None else value, index, "scatter"),
                              {"add": "sum", "multiply": "prod"}.get(reduce, reduce))
    data = src if src is not None else value
    if data is None:
        raise TypeError("scatter(): needs src or value")
    return x.index_put(_grid_key(x, dim, index, "scatter"), _source(data, index, "scatter"))


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
    return x.index_put(_grid_key(x, dim, index, "scatter_add"), _source(src, index, "scatter_add"),
                       accumulate=True)


class _IndexReduce(Function):
    """amax / amin / prod of scattered values (the ``index_reduce`` kernel), gradients in ops."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, key: tuple[Any, ...], src: Tensor, how: str, include_self: bool) -> Tensor:
        from .._core.tensor import _wrap
        dev = x._device
        data = kernel(dev, "clone")(x._data)
        native = tuple(k._data if isinstance(k, Tensor) else k for k in key)
        kernel(dev, "index_reduce")(data, native, src.to(x.dtype)._data, how, include_self)
        out = _wrap(data, x._dtype, dev)
        ctx.save_for_backward(x, src, out)
        ctx.key, ctx.how, ctx.include_self = key, how, include_self
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Any, ...]:
        x, src, out = ctx.saved_tensors
        key = ctx.key
        picked = out[key]
        if ctx.how == "prod":
            gx = g * out / x if ctx.include_self else g * (1 - (x * 0).index_put(key, 1.0))
            return gx, None, (g[key] * picked / src), None, None
        hit_src = (src == picked).to(g.dtype)
        if ctx.include_self:
            hit_x = (x == out).to(g.dtype)
        else:  # x only survives where nothing was scattered
            hit_x = 1 - (x * 0).index_put(key, 1.0)
        count = hit_x.index_put(key, hit_src, accumulate=True)
        count = count + (count == 0).to(g.dtype)
        share = g / count
        return share * hit_x, None, share[key] * hit_src, None, None


def scatter_reduce(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                   include_self: bool = True) -> Tensor:
    """A copy of ``x`` where ``src`` values are reduced (sum, prod, mean, amax, amin) into ``index`` along ``dim``."""
    key = _grid_key(x, dim, index, "scatter_reduce")
    src = _source(src, index, "scatter_reduce")
    if reduce == "sum":
        base = x if include_self else x.index_put(key, 0)
        return base.index_put(key, src, accumulate=True)
    if reduce == "mean":
        from .._creation import ones_like
        base = x if include_self else x.index_put(key, 0)
        total = base.index_put(key, src, accumulate=True)
        count = (ones_like(x) if include_self else ones_like(x) * 0).index_put(key, ones_like(src), accumulate=True)
        count = count + (count == 0).to(count.dtype)
        out = total / count
        return out if x.dtype.is_floating_point else out.floor().to(x.dtype)
    if reduce in ("amax", "amin", "prod"):
        return _IndexReduce.apply(x, key, src, reduce, include_self)
    raise ValueError(f"scatter_reduce: reduce must be sum, prod, mean, amax or amin, got {reduce!r}")


def _dim_key(x: Tensor, dim: int, index: Tensor, op: str, wrap: bool = False) -> tuple[Any, ...]:
    """The key of ``index`` along ``dim``; negative entries are refused unless ``wrap`` (index_fill)."""
    _check_index(op, index)
    if index.ndim > 1:
        raise ShapeError(f"{op}: index must be 1-D, got shape {list(index.shape)}")
    d = _wrap_dim(dim, x.ndim, op)
    if not wrap and x.ndim:
        index = refuse_negative(op, index, d, x.shape[d])
    return (slice(None),) * d + (index,)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries ``index`` of dimension ``dim``."""
    return x[_dim_key(x, dim, index, "index_select")]


def _check_source(op: str, x: Tensor, dim: int, index: Tensor, source: Any) -> None:
    """``source`` must have ``x``'s shape with ``index.numel()`` along ``dim`` (PyTorch refuses others; the
    write would broadcast them). A 0-d source goes with a single index, as in PyTorch's index_copy."""
    if not isinstance(source, Tensor) or not x.ndim:
        return
    d = _wrap_dim(dim, x.ndim, op)
    expected = list(x.shape)
    expected[d] = index.numel()
    if list(source.shape) != expected and not (op == "index_copy" and source.ndim == 0 and index.numel() == 1):
        raise ShapeError(f"{op}: source of shape {list(source.shape)} must have shape {expected} (the input's, "
                         f"with the {index.numel()} indices along dimension {d})")


def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``x`` with ``alpha * source`` added at ``index`` of ``dim`` (repeats add up)."""
    key = _dim_key(x, dim, index, "index_add")
    _check_source("index_add", x, dim, index, source)
    return x.index_put(key, source * alpha if alpha != 1 else source, accumulate=True)


def index_copy(x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``x`` with ``source`` written at ``index`` of ``dim``."""
    key = _dim_key(x, dim, index, "index_copy")
    _check_source("index_copy", x, dim, index, source)
    return x.index_put(key, source)


def index_fill(x: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``x`` with ``value`` at ``index`` of ``dim``."""
    return x.index_put(_dim_key(x, dim, index, "index_fill", wrap=True), value)


def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` (broadcast) is True, else ``x``."""
    try:
        out = where(mask, value, x)
    except ShapeError:  # the mask's shape, named under the user's op rather than the inner where
        raise ShapeError(f"masked_fill: mask of shape {list(mask.shape)} does not broadcast with the input's shape "
                         f"{list(x.shape)}") from None
    return out if out.dtype is x.dtype else out.to(x.dtype)


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``x`` where ``mask`` (broadcast with ``x``) is True, as a 1-D tensor."""
    import builtins
    n = builtins.max(x.ndim, mask.ndim)
    xs, ms = (1,) * (n - x.ndim) + tuple(x.shape), (1,) * (n - mask.ndim) + tuple(mask.shape)
    shape = [builtins.max(a, b) for a, b in zip(xs, ms)]
    return x.reshape(xs).expand(*shape)[mask.reshape(ms).expand(*shape)]


def masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``x`` with consecutive elements of ``source`` where ``mask`` is True."""
    m = mask.expand(*x.shape) if mask.shape != x.shape else mask
    n = int(m.sum().item())
    if source.numel() < n:
        raise ShapeError(f"masked_scatter: the mask selects {n} elements but source has {source.numel()}")
    return x.index_put((m,), source.reshape(-1)[:n])


def take(x: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``x`` at ``index`` (in ``index``'s shape)."""
    if isinstance(index, Tensor) and index._device.type != "cpu":
        name_late_errors(index, f"take: argument 'index' (input of {x.numel()} elements)")
    return x.reshape(-1)[index]


_NONZERO = register(OpDef("nonzero", "indexing", "Indices of the nonzero elements, one row each (int64)."))


def nonzero(x: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dimension."""
    from .._core.dtypes import int64
    from .._core.tensor import _wrap
    from ..dispatch._dispatch import kernel_for, run_elsewhere
    try:
        k = kernel_for(_NONZERO, x._device, x._dtype)
    except AttributeError:
        raise not_a_tensor("nonzero", "input", x) from None
    if k is None:
        return run_elsewhere(_NONZERO, x._device, x._dtype, (x,), {"as_tuple": as_tuple})
    idx = _wrap(k(x._data), int64, x._device)
    if as_tuple:
        return tuple(idx[:, i] for i in range(x.ndim)) if x.ndim else (idx.reshape(-1),)
    return idx


def index_reduce(x: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of ``x`` where the slices of ``source`` along ``dim`` are reduced (prod, mean, amax, amin) into
    the slices ``index`` names."""
    if x._dtype is bool_ or x._dtype.is_complex:
        raise DTypeError(f"index_reduce: not defined for dtype {x._dtype}; it takes real numeric dtypes (not bool or "
                         "complex)")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce(): reduce argument must be either prod, mean, amax or amin, got {reduce}")
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise ShapeError("index_reduce(): index must be a vector (a 1-D tensor)")
    d = _wrap_dim(dim, max(x.ndim, 1), "index_reduce")
    src = source if source.ndim else source.reshape(1)
    if src.ndim and src.shape[d] != index.numel():
        raise ShapeError(f"index_reduce(): the source's size {src.shape[d]} along dim {dim} must match the "
                         f"index's length {index.numel()}")
    shape = [1] * src.ndim
    shape[d] = index.numel()
    idx = index.reshape(shape).expand(src.shape)
    return scatter_reduce(x, d, idx, src, reduce, include_self)


def put(x: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``x`` with ``source`` written at the flat positions ``index`` (added with ``accumulate``)."""
    flat = x.reshape(-1)
    pos = index.reshape(-1)
    pos = where(pos < 0, pos + flat.numel(), pos)
    return flat.index_put((pos,), source.reshape(-1), accumulate).reshape(x.shape)


def _scatter_into(x: Tensor, src: Tensor, view: Callable[[Tensor], Tensor]) -> Tensor:
    out = x.clone()
    view(out).copy_(src)
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.select(dim, index)``."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` along ``dim``."""
    d = _wrap_dim(dim, max(input.ndim, 1), "slice_scatter")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into(input, src, lambda t: t[key])


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.diagonal(offset, dim1, dim2)``."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def as_strided_scatter(input: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.as_strided(size, stride, storage_offset)``."""
    return _scatter_into(input, src, lambda t: t.as_strided(size, stride, storage_offset))


_NONZERO.fn = nonzero
_NONZERO.table = {d: (d, d) for d in _NONZERO.table}  # the result is int64 whatever the input

_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("gather", gather),
    ("take_along_dim", take_along_dim),
    ("scatter", scatter),
    ("scatter_add", scatter_add),
    ("scatter_reduce", scatter_reduce),
    ("index_select", index_select),
    ("index_add", index_add),
    ("index_copy", index_copy),
    ("index_fill", index_fill),
    ("masked_fill", masked_fill),
    ("masked_select", masked_select),
    ("masked_scatter", masked_scatter),
    ("take", take),
    ("put", put),
    ("select_scatter", select_scatter),
    ("slice_scatter", slice_scatter),
    ("diagonal_scatter", diagonal_scatter),
    ("as_strided_scatter", as_strided_scatter),
]


#: ``index_reduce`` is scatter_reduce's: a function, not an op of its own (its name is the raw kernel's that
#: scatter_reduce's decomposition calls).
FUNCTIONS = {"nonzero": nonzero, **register_composites("composite", _ROWS), "index_reduce": index_reduce}
METHODS = list(FUNCTIONS)
