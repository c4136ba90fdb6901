"""Indexing kernels: getitem, setitem, index_put (scatter, scatter-add), index_reduce.

Basic keys give views (``_movement.basic_index``). An advanced key is
turned into the element positions it selects. Up to three integer index
tensors: a kernel (``kernels/positions.cl``) computes them on the device,
never reading the indices on the host (an index out of range raises at the
next synchronization). Other keys, such as bool masks, whose result size
depends on their values: the index tensors are read on the host and NumPy
applies the key to broadcast coordinate grids, which costs memory of the
result's size only. The device then gathers (``x[pos]``) or scatters
(``x[pos] = v``); an
accumulating scatter adds with a compare-and-swap loop, so repeated
positions sum up, as do amax / amin / prod for ``index_reduce``. Scatters
write nothing while the device's error flag is set: an index out of range
found by the positions kernel leaves the tensor as it was (the IndexError
comes at the next synchronization).
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import cast_array, commit_into, copy_into, layout
from ._movement import basic_index
from ._runtime import Runtime, bits_dtype, ctypes, is_half, read_source

__all__ = ["indexing_kernels"]

_BASIC = (int, slice, type(None), type(Ellipsis), bool)
_WIDTH_UINT = {4: ("uint", "atomic_cmpxchg"), 8: ("ulong", "atom_cmpxchg")}
_F32 = np.dtype(np.float32)
_REDUCE = {"add": ("a + b", "a + b"), "prod": ("a * b", "a * b"),
           "amax": ("(isnan(a) || isnan(b)) ? a + b : fmax(a, b)", "max(a, b)"),
           "amin": ("(isnan(a) || isnan(b)) ? a + b : fmin(a, b)", "min(a, b)")}


def _program(rt: Runtime, dtype: Any, how: str) -> Any:
    key = ("index", dtype, how)

    def source() -> str:
        c = ctypes(dtype)
        # gather and scatter only move elements: the 16-bit floats move as their bits (no half arithmetic
        # needed); their accumulating scatters run on the host (no compare-and-swap of 16 bits)
        half = is_half(dtype)
        st, ct = (c.bits, c.bits) if half else (c.storage, c.compute)
        uint, cmpxchg = _WIDTH_UINT.get(dtype.itemsize, ("uint", "atomic_cmpxchg"))
        reduce = _REDUCE[how][0 if c.floating and not half else 1]
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


def _expand(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    """``key`` with its Ellipsis (or the missing trailing dimensions) spelled out as full slices."""
    used = sum(1 for k in key if k is not None and k is not Ellipsis and type(k) is not bool)
    if used > ndim:
        raise IndexError(f"too many indices for a tensor of dimension {ndim}")
    fill = (slice(None),) * (ndim - used)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        return (*key[:i], *fill, *(k for k in key[i + 1:] if k is not Ellipsis))
    return (*key, *fill)


def device_positions(rt: Runtime, x: CLArray, key: tuple[Any, ...]) -> CLArray | None:
    """The positions of an advanced key of up to three integer index tensors, computed on the device without
    reading the indices (NumPy's placement of the indexed dimensions); None for other keys (bool masks)."""
    tensors = [k for k in key if type(k) is CLArray]
    if not tensors or len(tensors) > 3 or any(t.dtype.kind not in "iu" for t in tensors) or \
            any(type(k) is int for k in key):  # NumPy counts ints among the advanced indices: host path
        return None
    key = _expand(key, x.ndim)
    tdims: list[int] = []
    v = 0
    for k in key:
        if type(k) is CLArray:
            tdims.append(v)
        if type(k) is not int:  # slices, None, bools and tensors each give one dimension of the basic view
            v += 1
    view = basic_index(x, tuple(slice(None) if type(k) is CLArray else k for k in key))
    bshape = tuple(np.broadcast_shapes(*(t.shape for t in tensors)))
    rest = [d for d in range(view.ndim) if d not in tdims]
    adjacent = tdims == list(range(tdims[0], tdims[0] + len(tdims)))
    if adjacent:
        order = [("v", d) for d in rest if d < tdims[0]] + [("b", j) for j in range(len(bshape))] + \
                [("v", d) for d in rest if d > tdims[-1]]
    else:
        order = [("b", j) for j in range(len(bshape))] + [("v", d) for d in rest]
    shape = tuple(view.shape[i] if kind == "v" else bshape[i] for kind, i in order)
    out = rt.empty(shape, np.dtype(np.int64))
    if out.size == 0:
        return out
    idx = [t if t.dtype == np.int64 else cast_array(t, np.dtype(np.int64)) for t in tensors]
    operands = [out.view(shape, tuple(view.strides[i] if kind == "v" else 0 for kind, i in order), 0)]
    for t in idx:
        pad = len(bshape) - t.ndim
        tst = [0] * pad + [0 if n == 1 else st for n, st in zip(t.shape, t.strides)]
        operands.append(t.view(shape, tuple(tst[i] if kind == "b" else 0 for kind, i in order), 0))
    while len(operands) < 4:
        operands.append(operands[1])
    args: list[Any] = []
    for j in range(3):
        if j < len(idx):
            args += [idx[j].buffer, idx[j].offset, view.shape[tdims[j]], view.strides[tdims[j]]]
        else:  # unused: reads a valid element, adds nothing
            args += [idx[0].buffer, idx[0].offset, 1 << 62, 0]
    k = rt.kernel(("positions",), "positions", lambda: read_source("positions.cl"),
                  [None, np.int64, np.int64, None] + [None, np.int64, np.int64, np.int64] * 3 + [None])
    k(rt.queue, rt.grid(out.size), None, out.buffer, out.size, view.offset, rt.meta(layout(shape, operands)), *args,
      rt.error_flag)
    return out


def _is_basic(key: tuple[Any, ...]) -> bool:
    return all(isinstance(k, _BASIC) for k in key)


def indexing_kernels(rt: Runtime) -> dict[str, Callable[..., Any]]:
    """getitem, setitem, index_put, index_reduce on ``rt``'s device."""
    i64 = np.int64

    def locate(x: CLArray, key: tuple[Any, ...]) -> CLArray:
        """The positions ``x[key]`` selects, on the device."""
        got = device_positions(rt, x, key)
        return got if got is not None else rt.from_host(positions(x, key))

    def gather(x: CLArray, p: CLArray) -> CLArray:
        out = rt.empty(p.shape, x.dtype)
        n = out.size
        if n:
            k = _kernel(rt, x.dtype, "add", "gather", [None, None, None, i64])
            k(rt.queue, rt.grid(n), None, out.buffer, x.buffer, p.buffer, n)
        return out

    def getitem(x: CLArray, key: tuple[Any, ...]) -> CLArray:
        if _is_basic(key):
            return basic_index(x, key)
        return gather(x, locate(x, key))

    def scatter(x: CLArray, pos: CLArray, value: Any, how: str | None) -> None:
        n = pos.size
        if not n:
            return
        if type(value) is not CLArray:
            if how is None:
                bits = bits_dtype(x.dtype)
                k = _kernel(rt, x.dtype, "add", "put_scalar", [None, None, bits, i64, None])
                k(rt.queue, rt.grid(n), None, x.buffer, pos.buffer, np.asarray(value, x.dtype).view(bits)[()], n,
                  rt.error_flag)
                return
            value = rt.from_host(np.asarray(value, x.dtype))
        if value.dtype != x.dtype or value.buffer is x.buffer:  # a copy: the scatter must not read what it writes
            value = cast_array(value, x.dtype)
        try:
            np.broadcast_shapes(value.shape, pos.shape)
        except ValueError:
            raise ValueError(f"shape mismatch: value array of shape {list(value.shape)} could not be broadcast "
                             f"to indexing result of shape {list(pos.shape)}") from None
        if len(value.shape) > len(pos.shape):
            value = value.view(value.shape[len(value.shape) - len(pos.shape):],
                               value.strides[len(value.shape) - len(pos.shape):])
        meta = rt.meta(layout(pos.shape, [value, value]))  # operand 1: the values, broadcast to the positions
        name = "put" if how is None else "put_reduce"
        k = _kernel(rt, x.dtype, how or "add", name, [None, None, None, i64, i64, None, None])
        k(rt.queue, rt.grid(n), None, x.buffer, pos.buffer, value.buffer, value.offset, n, meta, rt.error_flag)

    def setitem(x: CLArray, key: Any, value: Any) -> None:
        key = key if isinstance(key, tuple) else (key,)
        if _is_basic(key):
            commit_into(basic_index(x, key), value)
        else:
            scatter(x, locate(x, key), value, None)

    def in_float32(x: CLArray, key: tuple[Any, ...], value: Any, how: str) -> None:
        """The accumulating scatter into a 16-bit float ``x`` on a float32 copy (whose 32-bit words have a
        compare-and-swap), each element's result rounded once when copied back."""
        wide = cast_array(x, _F32)
        scatter(wide, locate(wide, key), value, how)
        copy_into(x, wide)

    def index_put(x: CLArray, key: tuple[Any, ...], value: Any, accumulate: bool) -> None:
        if not accumulate:
            setitem(x, key, value)
            return
        if is_half(x.dtype):
            in_float32(x, key, value, "add")
            return
        if x.dtype.itemsize in _WIDTH_UINT:
            scatter(x, locate(x, key), value, "add")
            return
        _host_reduce(x, key, value, np.add)

    def index_reduce(x: CLArray, key: tuple[Any, ...], value: Any, how: str, include_self: bool) -> None:
        pos = locate(x, key)
        if not include_self:
            identity = {"amax": -np.inf, "amin": np.inf, "prod": 1}[how]
            if how != "prod" and x.dtype.kind in "iub":
                info = np.iinfo(x.dtype) if x.dtype.kind != "b" else None
                identity = (info.min if how == "amax" else info.max) if info else (how == "amin")
            scatter(x, pos, identity, None)
        if is_half(x.dtype):
            in_float32(x, key, value, how)
            return
        if x.dtype.itemsize in _WIDTH_UINT:
            scatter(x, pos, value, how)
            return
        _host_reduce(x, key, value, {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[how])

    return {"getitem": getitem, "setitem": setitem, "index_put": index_put, "index_reduce": index_reduce}


def _host_reduce(x: CLArray, key: tuple[Any, ...], value: Any, ufunc: Any) -> None:
    """For 8- and 16-bit integer dtypes and bool (no compare-and-swap of their width): the reduction runs on the
    host."""
    rt = x.rt
    host = rt.to_host(x)
    v = value.get() if type(value) is CLArray else np.asarray(value, x.dtype)
    logical = np.arange(host.size, dtype=np.int64).reshape(host.shape)[_host_key(key)]
    ufunc.at(host.reshape(-1), logical, np.broadcast_to(v, logical.shape).astype(x.dtype))
    copy_into(x, rt.from_host(host))
