"""Indexing: ``x[key]`` and ``x[key] = value`` (basic and advanced), and ``index_put``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.dtypes import bool_
from .._core.grad_mode import _state
from .._core.naming import not_a_tensor
from .._core.records import OpDef, register
from .._core.tensor import Tensor, _wrap
from ..autograd._views import after_inplace, check_inplace
from ..dispatch._dispatch import _unsupported, finish, kernel_for, record, run_elsewhere, view_result
from ..errors import DeviceMismatchError, ShapeError
from .inplace import refuse_overlap

__all__ = ["getitem", "setitem", "index_put"]

_BASIC = (int, slice, type(None), type(Ellipsis), bool)


def _ferro_key(x: Tensor, key: Any) -> tuple[tuple[Any, ...], bool]:
    """The key as a tuple, lists turned into tensors; and whether it is basic (a view)."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    basic = True
    for k in key:
        if isinstance(k, _BASIC):
            out.append(k)
        elif isinstance(k, Tensor):
            if k._device is not x._device and not (k.ndim == 0 and k._device.type == "cpu"):
                raise DeviceMismatchError(f"indexing: the index is on {k._device}, the tensor on {x._device}")
            if k._dtype.kind not in "iub":
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {k._dtype}")
            out.append(k)
            basic = False
        elif isinstance(k, (list, tuple, range)):
            from .._core.dtypes import int64
            from .._creation import tensor
            t = tensor(list(k) if isinstance(k, range) else k, device=x._device)
            out.append(t if t.numel() else t.to(int64))  # x[[]]: an empty int64 index, not float32
            basic = False
        elif hasattr(k, "__index__"):
            out.append(k.__index__())
        else:
            raise IndexError(f"only integers, slices (:), ellipsis (...), None, and integer or boolean tensors "
                             f"are valid indices, got {type(k).__name__}")
    return (tuple(out) if basic else _drop_empty_ellipsis(tuple(out), x.ndim)), basic


def _drop_empty_ellipsis(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    """``key`` without an Ellipsis that stands for no dimension: in PyTorch it does not separate the
    advanced indices around it (``x[i, ..., j]`` of a 2-D ``x`` keeps the result where the indices are),
    where NumPy, which the kernels follow, would move the result dimensions first."""
    if not any(k is Ellipsis for k in key):
        return key
    used = sum(k.ndim if isinstance(k, Tensor) and k._dtype is bool_ else 1
               for k in key if k is not None and k is not Ellipsis and type(k) is not bool)
    return tuple(k for k in key if k is not Ellipsis) if used >= ndim else key


def _torch_order(key: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """Split a key mixing integers and tensors into (basic part, tensor part), or None.

    PyTorch applies integer indices first, as basic indexing (``x[0, :, [3, 1]]``
    is ``x[0][:, [3, 1]]``, of shape [3, 2]); NumPy counts them among the
    advanced indices, which moves the advanced dimensions to the front when a
    slice separates them (shape [2, 3]). The basic part has each tensor
    replaced by full slices; the tensor part then indexes its result.
    """
    if not any(type(k) is int for k in key) or not any(isinstance(k, Tensor) for k in key):
        return None
    first: list[Any] = []
    second: list[Any] = []
    for k in key:
        if isinstance(k, Tensor):
            first.extend([slice(None)] * (k.ndim if k._dtype is bool_ else 1))
            second.append(k)
        elif type(k) is int:
            first.append(k)
        elif k is Ellipsis:
            first.append(k)
            second.append(k)
        else:  # a slice, None or a bool: its dimension stays in the basic part's result
            first.append(k)
            second.append(slice(None))
    return tuple(first), tuple(second)


def _native(key: tuple[Any, ...], dev: Any) -> tuple[Any, ...]:
    out = []
    for k in key:
        if isinstance(k, Tensor):
            if k._device is not dev:
                k = k.to(dev)
            out.append(k._data)
        else:
            out.append(k)
    return tuple(out)


def _index_error(x: Tensor, key: Any, e: Exception) -> IndexError:
    return IndexError(f"index {key!r} is out of range for a tensor of shape {list(x.shape)}: {e}")


def _getitem_grad(g: Tensor, *, key: tuple[Any, ...], in_shape: tuple[int, ...]) -> Tensor:
    from .._creation import zeros
    z = zeros(in_shape, dtype=g._dtype, device=g._device)
    if 0 not in in_shape and all([type(k) in _BASIC for k in key]):  # a view reaches no element twice: write
        # into the zeros in place (an empty one may have stride 0, which setitem refuses)
        setitem(z, key, g)  # (recorded as an index_put of g under create_graph, as index_put(z, key, g) would be)
        return z
    return index_put(z, key, g, accumulate=True)


_GETITEM = register(OpDef("getitem", "indexing", "x[key]: basic indexing gives a view, advanced a copy.",
                          grads=(_getitem_grad,)))


#: Key parts that need no conversion: a key of these alone is basic indexing, a view (bool is not among them:
#: ``x[True]`` takes the general path).
_PLAIN = frozenset((int, slice, type(None), type(Ellipsis)))
_INT = {int}


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` with PyTorch's (NumPy's) basic and advanced indexing."""
    t = type(key)
    if t is slice:
        return _basic(x, (key,), key, False)
    if t is int:
        return _basic(x, (key,), key, True)
    if t is tuple:
        types = set(map(type, key))  # (one pass answers both questions: basic indexing, one element)
        if types <= _PLAIN:
            return _basic(x, key, key, types <= _INT)
    fkey, basic = _ferro_key(x, key)
    if not basic:
        split = _torch_order(fkey)
        if split is not None:
            return getitem(getitem(x, split[0]), split[1])
    dev = x._device
    k = kernel_for(_GETITEM, dev, x._dtype)
    if k is None:
        return run_elsewhere(_GETITEM, dev, x._dtype, (x, key), {})
    native = _native(fkey, dev)
    if basic and len(fkey) == x.ndim and all(type(i) is int for i in fkey):
        native = (*native, Ellipsis)  # one element: a 0-d view (NumPy would give a scalar, a copy)
    try:
        data = k(x._data, native)
    except IndexError as e:
        raise _index_error(x, key, e) from None
    return finish(_GETITEM, data, x._dtype, dev, (x,), attrs={"key": fkey, "in_shape": x._data.shape},
                  view_of=x if basic else None)


def _basic(x: Tensor, fkey: tuple[Any, ...], key: Any, ints: bool) -> Tensor:
    """``x[key]`` for a key of ints, slices, None and Ellipsis (``fkey``: as a tuple; ``ints``: ints only): a
    view."""
    try:
        dev = x._device
        shape = x._data.shape
    except AttributeError:
        raise not_a_tensor("getitem", "input", x) from None
    try:  # kernel_for's lookup, inlined (a frame is a tenth of this op)
        k, table = dev._fast["getitem"]
        if x._dtype not in table:
            raise KeyError
    except (KeyError, TypeError):
        k = kernel_for(_GETITEM, dev, x._dtype)
        if k is None:
            return run_elsewhere(_GETITEM, dev, x._dtype, (x, key), {})
    native = fkey
    if ints and len(fkey) == len(shape):
        native = (*fkey, Ellipsis)  # one element: a 0-d view (NumPy would give a scalar, a copy)
    try:
        data = k(x._data, native)
    except IndexError as e:
        raise _index_error(x, key, e) from None
    return view_result(_GETITEM, data, x, {"key": fkey, "in_shape": shape})


def _put_grad_x(g: Tensor, *, key: tuple[Any, ...], accumulate: bool) -> Tensor:
    return g if accumulate else index_put(g, key, 0.0)


def _put_grad_v(g: Tensor, *, key: tuple[Any, ...], accumulate: bool) -> Tensor:
    return g[key]


_INDEX_PUT = register(OpDef("index_put", "indexing",
                            "A copy of x with x[key] set to (or, accumulating, increased by) values.",
                            grads=(_put_grad_x, _put_grad_v)))


def _value_native(x: Tensor, value: Any) -> Any:
    if isinstance(value, Tensor):
        if value._device is not x._device:
            if value.ndim == 0 and value._device.type == "cpu":
                return value.item()
            raise DeviceMismatchError(f"index_put: the values are on {value._device}, the tensor on {x._device}")
        return value._data if value._dtype is x._dtype else x._device._kernels["cast"](value._data, x._dtype)
    if not isinstance(value, (bool, int, float, complex)):
        raise TypeError(f"can't assign a {type(value).__name__} to a tensor; use a Tensor or a Python number")
    if isinstance(value, float) and x._dtype.kind in "iub" and x._dtype is not bool_:
        return int(value)
    return value


def _put(x_data: Any, x: Tensor, kernel: Callable[..., Any], fkey: tuple[Any, ...], value: Any,
         accumulate: bool, plain: bool = False) -> None:
    """``x_data[fkey] = value`` (``+=`` when ``accumulate``) by ``kernel``; ``plain``: ``fkey`` holds only ints,
    slices, None and Ellipsis (nothing to convert, no PyTorch order to restore)."""
    v = _value_native(x, value)
    dev = x._device
    if plain:
        try:
            kernel(x_data, fkey, v, accumulate)
            return
        except (ValueError, IndexError):  # the general steps below report it
            pass
    split = _torch_order(fkey)
    try:
        if split is not None:  # integers first (PyTorch's order): write through the basic part's view
            whole, first = x_data, _native(split[0], dev)
            x_data = dev._kernels["getitem"](whole, first)
            kernel(x_data, _native(split[1], dev), v, accumulate)
            if "getitem" in dev._copies:  # the basic part was a copy: put it back
                dev._kernels["setitem"](whole, first, x_data)
            return
        kernel(x_data, _native(fkey, dev), v, accumulate)
    except ValueError as e:
        raise ShapeError(f"index_put: values of shape {list(getattr(value, 'shape', ()))} cannot be broadcast to "
                         f"the indexed shape of a tensor of shape {list(x.shape)} ({e})") from None
    except IndexError as e:
        raise _index_error(x, fkey, e) from None


def index_put(x: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of ``x`` with ``x[indices] = values`` (``+=`` when ``accumulate``, duplicates adding up)."""
    fkey, _ = _ferro_key(x, indices)
    dev = x._device
    k = kernel_for(_INDEX_PUT, dev, x._dtype)
    if k is None:
        return run_elsewhere(_INDEX_PUT, dev, x._dtype, (x, indices, values, accumulate), {})
    data = dev._kernels["clone"](x._data)
    _put(data, x, k, fkey, values, accumulate)
    return finish(_INDEX_PUT, data, x._dtype, dev, (x, values), attrs={"key": fkey, "accumulate": accumulate})


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value`` in place; recorded by autograd as an ``index_put``."""
    refuse_overlap(x, "setitem")
    recording = _state.enabled and (x._rg or (isinstance(value, Tensor) and value._rg))
    if recording and x._rg and x.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if _state.enabled:
        check_inplace(x, "setitem")  # views: of a leaf that requires grad (refused), or stale
    t = type(key)
    plain = t is slice or t is int or (t is tuple and all([type(k) in _PLAIN for k in key]))
    fkey = (key if t is tuple else (key,)) if plain else _ferro_key(x, key)[0]
    dev = x._device
    k = kernel_for(_INDEX_PUT, dev, x._dtype)
    if k is None:
        raise _unsupported(_INDEX_PUT, x._dtype, dev, "the backend has no kernel for it")
    prev = None
    if recording:  # the graph position of x before the write
        prev = _wrap(x._data, x._dtype, dev)
        prev.grad_fn, prev._rg, prev._vc = x.grad_fn, x._rg, x._vc
    _put(x._data, x, k, fkey, value, False, plain)
    x._vc[0] += 1
    if recording:
        out = _wrap(x._data, x._dtype, dev)
        record(out, _INDEX_PUT, (prev, value), (), {"key": fkey, "accumulate": False})
        x.grad_fn, x._rg = out.grad_fn, True
    after_inplace(x)  # a view: the write goes into its base's graph too


_GETITEM.fn = getitem
_INDEX_PUT.fn = index_put
_INDEX_PUT.kernels = ("index_put", "clone")
FUNCTIONS: dict[str, Callable[..., Any]] = {"index_put": index_put}
METHODS = ["index_put"]
