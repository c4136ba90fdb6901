"""Indexing kernels: getitem, setitem, index_put (scatter, scatter-add), index_reduce.

Basic keys give views (``_movement.basic_index``). An advanced key (integer
or bool tensors) is turned into the element positions it selects: the
index tensors are read on the host (a bool mask's result size depends on
its values, so that read is unavoidable) and NumPy applies the key to
broadcast coordinate grids, which costs memory of the result's size only.
The device then gathers (``x[pos]``) or scatters (``x[pos] = v``); an
accumulating scatter adds with a compare-and-swap loop, so repeated
positions sum up, as do amax / amin / prod for ``index_reduce``.
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import copy_into, layout
from ._movement import basic_index
from ._runtime import Runtime, ctype, read_source

__all__ = ["indexing_kernels"]

_BASIC = (int, slice, type(None), type(Ellipsis), bool)
_WIDTH_UINT = {4: ("uint", "atomic_cmpxchg"), 8: ("ulong", "atom_cmpxchg")}
_REDUCE = {"add": ("a + b", "a + b"), "prod": ("a * b", "a * b"),
           "amax": ("(isnan(a) || isnan(b)) ? a + b : fmax(a, b)", "max(a, b)"),
           "amin": ("(isnan(a) || isnan(b)) ? a + b : fmin(a, b)", "min(a, b)")}


def _program(rt: Runtime, dtype: Any, how: str) -> Any:
    key = ("index", dtype.name, how)

    def source() -> str:
        st, ct = ctype(dtype)
        uint, cmpxchg = _WIDTH_UINT.get(dtype.itemsize, ("uint", "atomic_cmpxchg"))
        reduce = _REDUCE[how][0 if dtype.kind == "f" else 1]
        pragma = "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n" if dtype.itemsize == 8 else ""
        return pragma + Template(read_source("indexing.cl")).substitute(T=st, C=ct, U=uint, cmpxchg=cmpxchg,
                                                                          reduce=reduce)
    return key, source


def _kernel(rt: Runtime, dtype: Any, how: str, name: str, scalar_types: list[Any]) -> Any:
    key, source = _program(rt, dtype, how)
    return rt.kernel(key, name, source, scalar_types)


def _host_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(k.get() if type(k) is CLArray else k for k in key)


def positions(x: CLArray, key: tuple[Any, ...]) -> np.ndarray:
    """The element positions in ``x``'s buffer that ``x[key]`` selects (NumPy's advanced indexing)."""
    hk = _host_key(key)
    pos: Any = np.broadcast_to(np.int64(x.offset), x.shape)[hk]
    for d, (n, s) in enumerate(zip(x.shape, x.strides)):
        grid = np.arange(n, dtype=np.int64).reshape([-1 if i == d else 1 for i in range(x.ndim)]) * s
        pos = pos + np.broadcast_to(grid, x.shape)[hk]
    return np.array(pos, dtype=np.int64, order="C", copy=True)


def _is_basic(key: tuple[Any, ...]) -> bool:
    return all(isinstance(k, _BASIC) for k in key)


def indexing_kernels(rt: Runtime) -> dict[str, Callable[..., Any]]:
    """getitem, setitem, index_put, index_reduce on ``rt``'s device."""
    i64 = np.int64

    def gather(x: CLArray, pos: np.ndarray) -> CLArray:
        out = rt.empty(pos.shape, x.dtype)
        n = out.size
        if n:
            p = rt.from_host(pos, owned=True)
            k = _kernel(rt, x.dtype, "add", "gather", [None, None, None, i64])
            k(rt.queue, rt.grid(n), None, out.buffer, x.buffer, p.buffer, n)
        return out

    def getitem(x: CLArray, key: tuple[Any, ...]) -> CLArray:
        if _is_basic(key):
            return basic_index(x, key)
        return gather(x, positions(x, key))

    def scatter(x: CLArray, pos: np.ndarray, value: Any, how: str | None) -> None:
        n = pos.size
        if not n:
            return
        p = rt.from_host(pos, owned=True)
        if type(value) is not CLArray:
            if how is None:
                k = _kernel(rt, x.dtype, "add", "put_scalar", [None, None, x.dtype, i64])
                k(rt.queue, rt.grid(n), None, x.buffer, p.buffer, x.dtype.type(value), n)
                return
            value = rt.from_host(np.asarray(value, x.dtype))
        if value.dtype != x.dtype:
            from ._elementwise import cast_array
            value = cast_array(value, x.dtype)
        try:
            np.broadcast_shapes(value.shape, pos.shape)
        except ValueError:
            raise ValueError(f"shape mismatch: value array of shape {list(value.shape)} could not be broadcast "
                             f"to indexing result of shape {list(pos.shape)}") from None
        if len(value.shape) > len(pos.shape):
            value = value.view(value.shape[len(value.shape) - len(pos.shape):],
                               value.strides[len(value.shape) - len(pos.shape):])
        meta = layout(pos.shape, [value, value])  # operand 1: the values, broadcast to the positions
        name = "put" if how is None else "put_reduce"
        k = _kernel(rt, x.dtype, how or "add", name, [None, None, None, i64, i64, None])
        k(rt.queue, rt.grid(n), None, x.buffer, p.buffer, value.buffer, value.offset, n, meta)

    def setitem(x: CLArray, key: Any, value: Any) -> None:
        key = key if isinstance(key, tuple) else (key,)
        if _is_basic(key):
            copy_into(basic_index(x, key), value)
        else:
            scatter(x, positions(x, key), value, None)

    def index_put(x: CLArray, key: tuple[Any, ...], value: Any, accumulate: bool) -> None:
        if not accumulate:
            setitem(x, key, value)
            return
        pos = positions(x, key)
        if x.dtype.itemsize in _WIDTH_UINT:
            scatter(x, pos, value, "add")
            return
        _host_reduce(x, key, value, np.add)

    def index_reduce(x: CLArray, key: tuple[Any, ...], value: Any, how: str, include_self: bool) -> None:
        pos = positions(x, key)
        if not include_self:
            identity = {"amax": -np.inf, "amin": np.inf, "prod": 1}[how]
            if how != "prod" and x.dtype.kind in "iub":
                info = np.iinfo(x.dtype) if x.dtype.kind != "b" else None
                identity = (info.min if how == "amax" else info.max) if info else (how == "amin")
            scatter(x, pos, identity, None)
        if x.dtype.itemsize in _WIDTH_UINT:
            scatter(x, pos, value, how)
            return
        _host_reduce(x, key, value, {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[how])

    return {"getitem": getitem, "setitem": setitem, "index_put": index_put, "index_reduce": index_reduce}


def _host_reduce(x: CLArray, key: tuple[Any, ...], value: Any, ufunc: Any) -> None:
    """For 8- and 16-bit dtypes (no compare-and-swap of their width): the reduction runs on the host."""
    rt = x.rt
    host = rt.to_host(x)
    v = value.get() if type(value) is CLArray else np.asarray(value, x.dtype)
    logical = np.arange(host.size, dtype=np.int64).reshape(host.shape)[_host_key(key)]
    ufunc.at(host.reshape(-1), logical, np.broadcast_to(v, logical.shape).astype(x.dtype))
    copy_into(x, rt.from_host(host))
