"""argsort, searchsorted, cummax / cummin on the device (``kernels/sort.cl``); unique, histc, bincount on the host.

argsort is stable. Lines of up to ``RANK_SORT_MAX`` elements use a rank sort
(each element counts those that sort before it: one launch, n² comparisons
over n work-items); longer lines a bitonic sort of (value, index) pairs,
padded to a power of two (n log² n, one launch per pass). unique, histc and
bincount come from core's host kernels (their result size or bins depend on
the values, so they read the tensor anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import copy_contiguous, layout
from ._runtime import Runtime, ctypes, read_source

__all__ = ["sorting_kernels"]

_I64 = np.int64
_LONG = np.dtype(np.int64)
#: The longest line the rank sort takes; longer ones are sorted by the bitonic network.
RANK_SORT_MAX = 2048


def _kernel(rt: Runtime, dtype: Any, name: str, types: list[Any]) -> Any:
    c = ctypes(dtype)
    f = c.floating

    def source() -> str:
        return Template(read_source("sort.cl")).substitute(
            T=c.storage, C=c.compute, load=c.load, store=c.store,
            nan_last="|| (isnan(v) && !isnan(w))" if f else "", nan_first="|| (isnan(w) && !isnan(v))" if f else "",
            isnan_acc="isnan(acc)" if f else "0", isnan_v="isnan(v)" if f else "0")
    return rt.kernel(("sort", dtype), name, source, types)


def _lines(x: CLArray, out: CLArray, dim: int) -> tuple[int, Any]:
    kept = [d for d in range(x.ndim) if d != dim]
    kshape = tuple(x.shape[d] for d in kept)
    ov = out.view(kshape, tuple(out.strides[d] for d in kept), 0)
    xv = x.view(kshape, tuple(x.strides[d] for d in kept), 0)
    return out.size // max(x.shape[dim], 1), x.rt.meta(layout(kshape, [ov, xv]))


def sorting_kernels(rt: Runtime, host: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """argsort, searchsorted, cummax, cummin on ``rt``'s device; unique, histc, bincount from ``host``."""

    def argsort(x: CLArray, dim: int, descending: bool) -> CLArray:
        if x.ndim == 0:
            out = rt.empty((), _LONG)
            from ._elementwise import copy_into
            copy_into(out, 0)
            return out
        dim %= x.ndim
        out = rt.empty(x.shape, _LONG)
        if out.size == 0:
            return out
        lines, mo = _lines(x, out, dim)
        n = x.shape[dim]
        if n > RANK_SORT_MAX:
            bitonic(x, out, dim, lines, mo, descending)
            return out
        k = _kernel(rt, x.dtype, "argsort", [None, None, _I64, _I64, _I64, _I64, _I64, np.int32, None])
        k(rt.queue, rt.grid(lines * n), None, out.buffer, x.buffer, x.offset, n, x.strides[dim], out.strides[dim],
          lines, int(descending), mo)
        return out

    def bitonic(x: CLArray, out: CLArray, dim: int, lines: int, mo: Any, descending: bool) -> None:
        n = x.shape[dim]
        p = 1 << (n - 1).bit_length()
        keys = rt.empty((lines, p), x.dtype)
        idx = rt.empty((lines, p), _LONG)
        grid = rt.grid(lines * p)
        load = _kernel(rt, x.dtype, "bitonic_load", [None, None, None, _I64, _I64, _I64, _I64, _I64, None])
        load(rt.queue, grid, None, keys.buffer, idx.buffer, x.buffer, x.offset, n, p, x.strides[dim], lines, mo)
        step = _kernel(rt, x.dtype, "bitonic_step", [None, None, _I64, _I64, _I64, _I64, _I64, np.int32])
        k = 2
        while k <= p:
            j = k // 2
            while j:
                step(rt.queue, grid, None, keys.buffer, idx.buffer, n, p, lines, k, j, int(descending))
                j //= 2
            k *= 2
        store = _kernel(rt, x.dtype, "bitonic_store", [None, None, _I64, _I64, _I64, _I64, None])
        store(rt.queue, rt.grid(lines * n), None, out.buffer, idx.buffer, n, p, out.strides[dim], lines, mo)

    def searchsorted(seq: CLArray, values: CLArray, right: bool) -> CLArray:
        s = seq if seq.contiguous else copy_contiguous(seq)
        v = values if values.contiguous else copy_contiguous(values)
        out = rt.empty(values.shape, _LONG)
        if out.size == 0:
            return out
        n = s.shape[-1] if s.ndim else 1
        m = v.shape[-1] if v.ndim else 1
        lines = 1 if s.ndim <= 1 else s.size // max(n, 1)
        k = _kernel(rt, s.dtype, "searchsorted", [None, None, _I64, _I64, None, _I64, _I64, _I64, _I64, np.int32])
        k(rt.queue, rt.grid(out.size), None, out.buffer, s.buffer, s.offset, n, v.buffer, v.offset, out.size, m,
          lines, int(right))
        return out

    def cumextreme(is_max: bool) -> Callable[..., tuple[CLArray, CLArray]]:
        def kernel(x: CLArray, dim: int) -> tuple[CLArray, CLArray]:
            out = rt.empty(x.shape, x.dtype)
            idx = rt.empty(x.shape, _LONG)
            if out.size == 0:
                return out, idx
            xv = x if x.ndim else x.view((1,), (0,))
            ov = out if x.ndim else out.view((1,))
            dim %= xv.ndim
            lines, mo = _lines(xv, ov, dim)
            k = _kernel(rt, x.dtype, "cumextreme", [None, None, None, _I64, _I64, _I64, _I64, _I64, np.int32, None])
            k(rt.queue, rt.grid(lines), None, out.buffer, idx.buffer, xv.buffer, xv.offset, xv.shape[dim],
              ov.strides[dim], xv.strides[dim], lines, int(is_max), mo)
            return out, idx
        return kernel

    return {"argsort": argsort, "searchsorted": searchsorted, "cummax": cumextreme(True),
            "cummin": cumextreme(False), **{k: host[k] for k in ("unique", "histc", "bincount")}}
