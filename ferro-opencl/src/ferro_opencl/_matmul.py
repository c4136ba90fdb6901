"""matmul, batched with NumPy's broadcasting rules, on one of two kernels chosen per device.

- CPU devices: ``kernels/matmul_cpu.cl``, a register-blocked micro-kernel
  with no local memory and no barriers (B packed into column panels first
  unless it is small and row-contiguous), as a CPU GEMM is written. On
  PoCL's CPU device it runs several times faster than the tiled kernel and
  than CLBlast (docs/opencl.md).
- Other devices (GPUs): ``kernels/matmul.cl``, tiled through local memory.

Operands are read through their strides, so ``x @ y.T`` copies nothing on a
GPU (on a CPU, packing B reads it through its strides); a 1-D operand is a
row (left) or a column (right) whose dimension is dropped from the result,
as in NumPy. ``FERRO_OPENCL_MATMUL_TILE=TS,RM,RN`` selects the tiled kernel
on any device, with that tile and block of outputs per work-item (tuning).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import copy_into, device_layout
from ._runtime import Runtime, ctype, read_source

__all__ = ["matmul_kernel"]

_I64 = np.int64
_LONGS = [_I64] * 6

#: The CPU kernel's block: RM rows x NV vectors of C per work-item, in RM * NV vector registers plus NV for B's
#: row and one broadcast (15 of AVX2's 16 with 6 x 2); GROUP row blocks per work-group share one panel of B.
#: 6 x 2 x 8 and 4 x 2 x 16 were the fastest tried on PoCL's CPU device (AMD EPYC, AVX2), ~8x the tiled kernel.
RM, NV, GROUP = 6, 2, 8
#: B of at most this many elements is read in place when its rows are contiguous and N is a multiple of NR
#: (a launch fewer); a bigger one is packed (its panels then stream through the caches at unit stride).
DIRECT_B = 1 << 16

#: compute type -> the device attribute giving its preferred vector width
_WIDTH_OF = {"float": "float", "double": "double", "int": "int", "uint": "int", "long": "long", "ulong": "long",
             "short": "short", "ushort": "short", "char": "char", "uchar": "char"}


def _tile() -> tuple[int, int, int] | None:
    """(tile, rows, columns per work-item) of ``FERRO_OPENCL_MATMUL_TILE=TS,RM,RN``, or None when unset."""
    raw = os.environ.get("FERRO_OPENCL_MATMUL_TILE", "").strip()
    if not raw:
        return None
    ts, rm, rn = (int(v) for v in raw.split(","))
    if ts % rm or ts % rn:
        raise ValueError(f"FERRO_OPENCL_MATMUL_TILE={raw!r}: the tile must be a multiple of both block sides")
    return ts, rm, rn


def _io(st: str) -> dict[str, str]:
    """The load / store macros of storage type ``st`` (half goes through vload_half / vstore_half)."""
    return {"load": "LD_H", "store": "ST_H"} if st == "half" else {"load": "LD", "store": "ST"}


def matmul_kernel(rt: Runtime) -> Callable[..., Any]:
    """The ``matmul(x, y)`` kernel of ``rt``'s device."""
    tile = _tile()
    cpu = tile is None and bool(rt.device.type & rt.cl.device_type.CPU)
    launch = _blocked(rt) if cpu else _tiled(rt, tile or (64, 8, 8))

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
        if out.size == 0:
            return out
        if k == 0:
            copy_into(out, 0)
            return out
        launch(out, xv, yv, batch, m, n, k)
        return out
    return matmul


def _tiled(rt: Runtime, block: tuple[int, int, int]) -> Callable[..., None]:
    """The launcher of ``matmul.cl``: TS x TS tiles through local memory, RM x RN outputs per work-item."""
    ts, rm, rn = block
    types = [None, None, _I64, _I64, _I64, None, _I64, _I64, _I64, _I64, _I64, _I64, None]
    local_mem = rt.device.local_mem_size
    built: dict[Any, tuple[Any, int]] = {}

    def build(dt: Any) -> tuple[Any, int]:
        st, ct = ctype(dt)
        tile = ts
        while tile > max(rm, rn) and 2 * tile * (tile + 1) * np.dtype(dt).itemsize > local_mem:
            tile //= 2  # two tiles must fit in local memory (double on a GPU with 48 KiB)

        def source() -> str:
            return Template(read_source("matmul.cl")).substitute(T=st, ACC=ct, TS=tile, RM=rm, RN=rn, **_io(st))
        return rt.kernel(("matmul", dt.name, tile, rm, rn), "matmul", source, types), tile

    def launch(out: CLArray, xv: CLArray, yv: CLArray, batch: tuple[int, ...], m: int, n: int, k: int) -> None:
        kern, tile = built.get(xv.dtype) or built.setdefault(xv.dtype, build(xv.dtype))
        meta, _ = device_layout(rt, batch, [_batched(xv, batch)] * 2 + [_batched(yv, batch)])
        gsize = (-(-m // tile) * (tile // rm), -(-n // tile) * (tile // rn), out.size // (m * n))
        kern(rt.queue, gsize, (tile // rm, tile // rn, 1), out.buffer,
             xv.buffer, xv.offset, xv.strides[-2], xv.strides[-1],
             yv.buffer, yv.offset, yv.strides[-2], yv.strides[-1], m, n, k, meta)
    return launch


def _blocked(rt: Runtime) -> Callable[..., None]:
    """The launcher of ``matmul_cpu.cl``: B packed into column panels (unless small and in place), then RM x NR
    register blocks of C."""
    pack_types = [None, None, *_LONGS, np.int32, None]
    mm_types = [None, None, _I64, _I64, _I64, None, *_LONGS, None]
    built: dict[Any, tuple[Any, Any, Any, int]] = {}

    def build(dt: Any) -> tuple[Any, Any, Any, int]:
        st, ct = ctype(dt)
        vw = getattr(rt.device, f"preferred_vector_width_{_WIDTH_OF[ct]}", 4) or 4
        vw = max(w for w in (2, 4, 8, 16) if w <= max(vw, 2))
        vstore = f"vstore_half{vw}_rte" if st == "half" else f"vstore{vw}"

        def source() -> str:
            return Template(read_source("matmul_cpu.cl")).substitute(T=st, ACC=ct, RM=RM, NV=NV, VW=vw,
                                                                     vstore=vstore, **_io(st))
        key = ("matmul_cpu", dt.name, RM, NV, vw)
        return (rt.kernel(key, "matmul_pack_b", source, pack_types), rt.kernel(key, "matmul_blocked", source, mm_types),
                np.dtype(np.float32 if st == "half" else dt), NV * vw)

    def launch(out: CLArray, xv: CLArray, yv: CLArray, batch: tuple[int, ...], m: int, n: int, k: int) -> None:
        pack, kern, pdt, nr = built.get(xv.dtype) or built.setdefault(xv.dtype, build(xv.dtype))
        if pdt != xv.dtype:  # float16: A in float, as the panels of B
            xv, xh = rt.empty(xv.shape, pdt), xv
            copy_into(xv, xh)
        brs, bcs = yv.strides[-2:]
        if bcs == 1 and n % nr == 0 and k * n <= DIRECT_B and pdt == yv.dtype:
            bmat, boff, bld, bpanel, inner = yv, yv.offset, brs, nr, 2
        else:
            bmat, boff, bld, bpanel, inner = pack_b(pack, yv, nr, pdt), 0, nr, k * nr, 1
        meta, _ = device_layout(rt, batch, [_batched(xv, batch)] * 2 + [_batched(bmat, batch, inner)])
        rows = -(-m // RM)
        group = min(GROUP, rows)
        kern(rt.queue, (-(-rows // group) * group, -(-n // nr), out.size // (m * n)), (group, 1, 1), out.buffer,
             xv.buffer, xv.offset, xv.strides[-2], xv.strides[-1], bmat.buffer, boff, bld, bpanel, m, n, k, meta)

    def pack_b(pack: Any, yv: CLArray, nr: int, pdt: Any) -> CLArray:
        """B's column panels, (*B's batch, panels * K * NR): column j of B is column j % NR of panel j // NR."""
        own, (k, n), (brs, bcs) = yv.shape[:-2], yv.shape[-2:], yv.strides[-2:]
        padded = -(-n // nr) * nr
        panels = rt.empty((*own, padded * k), pdt)
        own_meta, _ = device_layout(rt, own, [yv.view(own, yv.strides[:-2])])
        k_first = abs(bcs) > abs(brs)  # B's columns are the contiguous ones (a transposed view): walk along k
        gsize = (k, padded) if k_first else (padded, k)
        pack(rt.queue, (*gsize, panels.size // (padded * k)), None, panels.buffer, yv.buffer, yv.offset, brs, bcs,
             k, n, padded, int(k_first), own_meta)
        return panels
    return launch


def _batched(a: CLArray, batch: tuple[int, ...], inner: int = 2) -> CLArray:
    """``a`` seen over ``batch`` alone (its last ``inner`` dimensions dropped; stride 0 where it broadcasts)."""
    own = a.shape[:len(a.shape) - inner]
    pad = len(batch) - len(own)
    strides = (0,) * pad + tuple(0 if n == 1 else s for n, s in zip(own, a.strides[:len(own)]))
    return a.view(batch, strides, 0)
