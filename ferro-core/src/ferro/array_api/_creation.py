"""The standard's creation functions over ferro's (``ferro.full``, ``arange``, ``tensor``...)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import _api as ferro
from .._core import dtypes as _d
from .._core.dtypes import DType
from .._core.tensor import Tensor
from ._dtypes import builtins_bool, check_array, result_type

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
           "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _fill_dtype(value: Any) -> DType:
    """The default dtype of a Python scalar fill value."""
    return result_type(value)


def asarray(obj: Any, /, *, dtype: DType | None = None, device: Any = None,
            copy: builtins_bool | None = None) -> Tensor:
    """An array from an array, a (nested) sequence of Python scalars, a buffer or a DLPack-capable object.

    ``copy=True`` always copies; ``copy=False`` never does (ValueError where it would have to); ``None``
    copies only when needed.
    """
    if isinstance(obj, Tensor):
        out = obj
        if device is not None and ferro.device(device) is not obj.device:
            if copy is False:
                raise ValueError(f"asarray: moving from {obj.device} to {device} needs a copy, but copy=False")
            out = out.to(device)
        if dtype is not None and dtype is not out.dtype:
            if copy is False:
                raise ValueError(f"asarray: converting {obj.dtype} to {dtype} needs a copy, but copy=False")
            out = out.to(dtype)
        if copy:
            return out.clone() if out is obj else out
        # The same memory, as a new array object: a view (writes and gradients go through to obj).
        return out[...] if out is obj and type(obj) is Tensor else out
    if copy is False:
        if hasattr(obj, "__dlpack__"):
            return from_dlpack(obj, device=device, copy=False) if dtype is None else \
                _no_copy_error(f"converting to {dtype}")
        _no_copy_error(f"making an array from a {type(obj).__name__}")
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__"):
        out = from_dlpack(obj, device=device, copy=True)
        return out if dtype is None or out.dtype is dtype else out.to(dtype)
    if dtype is None and type(obj) in (builtins_bool, int, float, complex):  # NumPy scalars keep their dtype
        dtype = _fill_dtype(obj)
    elif dtype is None and isinstance(obj, (list, tuple)):
        dtype = _sequence_dtype(obj)
    if dtype is not None and dtype.kind in "ui":
        _check_ints(obj, dtype)
    return ferro.tensor(obj, dtype=dtype, device=device)


def _no_copy_error(what: str) -> Any:
    raise ValueError(f"asarray: {what} needs a copy, but copy=False")


def _flat(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat(o)
    else:
        yield obj


def _sequence_dtype(obj: Sequence[Any]) -> DType | None:
    """The standard's dtype for nested Python scalars (None: leave it to ferro, e.g. arrays inside)."""
    kinds = set()
    for v in _flat(obj):
        if isinstance(v, Tensor):
            if v.ndim:
                return None
            kinds.add(v.dtype)
        elif type(v) in (builtins_bool, int, float, complex):
            kinds.add(_fill_dtype(v))
        else:
            return None
    if not kinds:
        return _d.get_default_dtype()
    out = None
    for k in kinds:
        out = k if out is None else _d.promote_types(out, k)
    return out


def _check_ints(obj: Any, dtype: DType) -> None:
    from ._dtypes import iinfo
    info = iinfo(dtype)
    for v in _flat(obj):
        if type(v) is int and not info.min <= v <= info.max:
            raise OverflowError(f"asarray: {v} is out of range of {dtype}")


def from_dlpack(x: Any, /, *, device: Any = None, copy: builtins_bool | None = None) -> Tensor:
    """An array viewing a DLPack-capable object (NumPy, CuPy, PyTorch, another ferro tensor...)."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not implement __dlpack__")
    if isinstance(x, Tensor):
        out = x if device is None else x.to(device)
        return out.clone() if copy and out is x else out
    dev = None
    if device is None:
        dev_type, dev_id = x.__dlpack_device__()
        dev = {1: "cpu", 2: f"cuda:{dev_id}"}.get(int(dev_type))
    out = ferro.from_dlpack(x, device=dev or device)
    if device is not None and out.device is not ferro.device(device):
        if copy is False:
            raise ValueError(f"from_dlpack: moving to {device} needs a copy, but copy=False")
        out = out.to(device)
    return out.clone() if copy else out


def _default(dtype: DType | None, fallback: DType) -> DType:
    return fallback if dtype is None else dtype


def empty(shape: int | Sequence[int], *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """An uninitialized array (ferro's default float dtype unless ``dtype``)."""
    return ferro.empty(_shape(shape), dtype=_default(dtype, _d.get_default_dtype()), device=device)


def zeros(shape: int | Sequence[int], *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """An array of zeros."""
    return ferro.zeros(_shape(shape), dtype=_default(dtype, _d.get_default_dtype()), device=device)


def ones(shape: int | Sequence[int], *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """An array of ones."""
    return ferro.ones(_shape(shape), dtype=_default(dtype, _d.get_default_dtype()), device=device)


def full(shape: int | Sequence[int], fill_value: complex, *, dtype: DType | None = None,
         device: Any = None) -> Tensor:
    """An array filled with ``fill_value`` (dtype from the value unless given)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return ferro.full(_shape(shape), fill_value, dtype=_default(dtype, _fill_dtype(fill_value)), device=device)


def _like(x: Tensor, dtype: DType | None, device: Any) -> tuple[DType, Any]:
    check_array(x, "*_like")
    return _default(dtype, x.dtype), x.device if device is None else device


def empty_like(x: Tensor, /, *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """An uninitialized array of ``x``'s shape (and dtype and device unless given)."""
    dt, dev = _like(x, dtype, device)
    return ferro.empty(tuple(x.shape), dtype=dt, device=dev)


def zeros_like(x: Tensor, /, *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """Zeros of ``x``'s shape (and dtype and device unless given)."""
    dt, dev = _like(x, dtype, device)
    return ferro.zeros(tuple(x.shape), dtype=dt, device=dev)


def ones_like(x: Tensor, /, *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """Ones of ``x``'s shape (and dtype and device unless given)."""
    dt, dev = _like(x, dtype, device)
    return ferro.ones(tuple(x.shape), dtype=dt, device=dev)


def full_like(x: Tensor, /, fill_value: complex, *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """``fill_value`` in ``x``'s shape (and dtype and device unless given)."""
    dt, dev = _like(x, dtype, device)
    return ferro.full(tuple(x.shape), fill_value, dtype=dt, device=dev)


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: DType | None = None, device: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; ``arange(n)`` is ``0 .. n-1``."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        dtype = _d.get_default_dtype() if any(isinstance(v, float) for v in (start, stop, step)) else _d.int64
    n = max(0, math.ceil((stop - start) / step))
    if n == 0:
        return ferro.empty((0,), dtype=dtype, device=device)
    if dtype.kind == "f" and any(isinstance(v, float) for v in (start, stop, step)):
        # start + i * step, as the standard states, keeps the length exact for float steps.
        i = ferro.arange(n, dtype=_d.float64, device=device)
        return (i * step + start).to(dtype)
    return ferro.arange(start, start + n * step, step, dtype=dtype, device=device)[:n]


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DType | None = None,
        device: Any = None) -> Tensor:
    """A 2-D array with ones on diagonal ``k`` and zeros elsewhere."""
    m = n_rows if n_cols is None else n_cols
    dt = _default(dtype, _d.get_default_dtype())
    if k == 0:
        return ferro.eye(n_rows, m, dtype=dt, device=device)
    rows = ferro.arange(n_rows, device=device).reshape(-1, 1)
    cols = ferro.arange(m, device=device).reshape(1, -1)
    return ferro.eq(rows + k, cols).to(dt)


def linspace(start: complex, stop: complex, /, num: int, *, dtype: DType | None = None, device: Any = None,
             endpoint: builtins_bool = True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive unless ``endpoint=False``)."""
    if dtype is None:
        dtype = _d.get_default_complex_dtype() if isinstance(start, complex) or isinstance(stop, complex) \
            else _d.get_default_dtype()
    if num == 0:
        return ferro.empty((0,), dtype=dtype, device=device)
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div else 0.0
    i = ferro.arange(num, dtype=_d.float64, device=device)
    out = i * step + start if not isinstance(step, complex) else i.to(_d.complex128) * step + start
    if endpoint and num > 1:
        out[-1] = stop
    return out.to(dtype)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-D arrays (``indexing='xy'`` swaps the first two axes, as NumPy)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    n = len(arrays)
    if n == 0:
        return []
    for a in arrays:
        check_array(a, "meshgrid", "arrays")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: expected 1-D arrays, got shape {tuple(a.shape)}")
    dt = result_type(*arrays)
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n > 1 and i < 2:
            axis = 1 - i
        view = [1] * n
        view[axis] = a.shape[0]
        out.append(ferro.broadcast_to(a.to(dt).reshape(view), shape))
    return out


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the last two axes (below diagonal ``k``), zeros elsewhere."""
    return ferro.tril(check_array(x, "tril"), k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the last two axes (above diagonal ``k``), zeros elsewhere."""
    return ferro.triu(check_array(x, "triu"), k)
