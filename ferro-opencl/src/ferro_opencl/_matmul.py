"""matmul on ``kernels/matmul.cl``: a tiled, local-memory kernel, batched with NumPy's broadcasting rules.

Operands are read through their strides, so ``x @ y.T`` copies nothing; a
1-D operand is a row (left) or a column (right) whose dimension is dropped
from the result, as in NumPy. The tile size and the block of outputs per
work-item are compile-time constants
(``FERRO_OPENCL_MATMUL_TILE=TS,RM,RN`` overrides them for tuning).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import layout
from ._runtime import Runtime, ctype, read_source

__all__ = ["matmul_kernel"]

_I64 = np.int64


def _tile() -> tuple[int, int, int]:
    """(tile, rows, columns per work-item): ``FERRO_OPENCL_MATMUL_TILE=TS,RM,RN`` overrides the default."""
    raw = os.environ.get("FERRO_OPENCL_MATMUL_TILE", "").strip()
    if raw:
        ts, rm, rn = (int(v) for v in raw.split(","))
        if ts % rm or ts % rn:
            raise ValueError(f"FERRO_OPENCL_MATMUL_TILE={raw!r}: the tile must be a multiple of both block sides")
        return ts, rm, rn
    return 64, 8, 8  # the fastest on PoCL's CPU device among those tried (benchmarks/opencl.py)


def matmul_kernel(rt: Runtime) -> Callable[..., Any]:
    """The ``matmul(x, y)`` kernel of ``rt``'s device."""
    ts, rm, rn = _tile()
    types = [None, None, _I64, _I64, _I64, None, _I64, _I64, _I64, _I64, _I64, _I64, None]

    local_mem = rt.device.local_mem_size

    built: dict[Any, tuple[Any, int]] = {}

    def kernel_for(dt: Any) -> tuple[Any, int]:
        got = built.get(dt)
        if got is None:
            got = built[dt] = _build(dt)
        return got

    def _build(dt: Any) -> tuple[Any, int]:
        st, ct = ctype(dt)
        tile = ts
        while tile > max(rm, rn) and 2 * tile * (tile + 1) * np.dtype(dt).itemsize > local_mem:
            tile //= 2  # two tiles must fit in local memory (double on a GPU with 48 KiB)

        def source() -> str:
            return Template(read_source("matmul.cl")).substitute(
                T=st, ACC=ct, TS=tile, RM=rm, RN=rn, load="LD_H" if st == "half" else "LD",
                store="ST_H" if st == "half" else "ST")
        return rt.kernel(("matmul", dt.name, tile, rm, rn), "matmul", source, types), tile

    def matmul(x: CLArray, y: CLArray) -> CLArray:
        if x.ndim == 0 or y.ndim == 0:
            raise ValueError("matmul: both operands need at least one dimension")
        xv = x.view((1, *x.shape), (0, *x.strides)) if x.ndim == 1 else x
        yv = y.view((*y.shape, 1), (*y.strides, 0)) if y.ndim == 1 else y
        m, k = xv.shape[-2:]
        k2, n = yv.shape[-2:]
        if k != k2:
            raise ValueError(f"matmul: shapes {list(x.shape)} and {list(y.shape)} cannot be multiplied "
                             f"({m}x{k} and {k2}x{n})")
        batch = np.broadcast_shapes(xv.shape[:-2], yv.shape[:-2])
        shape = (*batch, m, n)
        if x.ndim == 1:
            shape = shape[:-2] + shape[-1:]
        if y.ndim == 1:
            shape = shape[:-1]
        out = rt.empty(shape, x.dtype)
        nb = int(np.prod(batch, dtype=np.int64))
        if out.size == 0:
            return out
        if k == 0:
            from ._elementwise import copy_into
            copy_into(out, 0)
            return out
        bx = xv.view(batch, _batch_strides(xv, batch), 0)
        by = yv.view(batch, _batch_strides(yv, batch), 0)
        meta = rt.meta(layout(batch, [bx, bx, by]))
        kern, tile = kernel_for(x.dtype)
        gsize = (-(-m // tile) * (tile // rm), -(-n // tile) * (tile // rn), nb)
        kern(rt.queue, gsize, (tile // rm, tile // rn, 1), out.buffer,
                            xv.buffer, xv.offset, xv.strides[-2], xv.strides[-1],
                            yv.buffer, yv.offset, yv.strides[-2], yv.strides[-1], m, n, k, meta)
        return out
    return matmul


def _batch_strides(a: CLArray, batch: tuple[int, ...]) -> tuple[int, ...]:
    """``a``'s batch strides aligned to ``batch`` (0 where it broadcasts)."""
    own = a.shape[:-2]
    pad = len(batch) - len(own)
    return (0,) * pad + tuple(0 if n == 1 else s for n, s in zip(own, a.strides[:-2]))
