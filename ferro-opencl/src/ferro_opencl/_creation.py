"""Creation, random numbers, scans and the few host-side kernels.

``empty`` and ``full`` use the runtime's fill command (nothing compiled).
``arange`` / ``linspace`` / ``eye`` are computed by NumPy and uploaded
(NumPy fixes the exact values, the same on every backend), as are random
numbers: each device has a host Philox generator, so ``ferro.manual_seed``
gives the same numbers as on cpu and cuda and its state saves and restores
exactly. ``nonzero`` must know its result's size, so it reads the tensor
on the host. ``cumsum`` / ``cumprod`` run on the device (``kernels/scan.cl``).
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import layout
from ._runtime import Runtime, ctypes, read_source

__all__ = ["creation_kernels"]

_I64 = np.int64


def creation_kernels(rt: Runtime, rng: Callable[[], Any]) -> dict[str, Callable[..., Any]]:
    """empty, full, arange, linspace, eye, rand, randn, randint, nonzero, cumsum, cumprod."""
    cl = rt.cl
    nd = rt.np_dtype

    def empty(shape: tuple[int, ...], dtype: Any) -> CLArray:
        return rt.empty(tuple(shape), nd(dtype))

    def full(shape: tuple[int, ...], value: Any, dtype: Any) -> CLArray:
        out = rt.empty(tuple(shape), nd(dtype))
        if out.size:
            # NumPy converts the value, exactly as the CPU backend does; its bytes are the fill pattern.
            pattern = np.full(1, value, dtype=out.dtype)
            cl.enqueue_fill_buffer(rt.queue, out.buffer, pattern, 0, out.nbytes)
        return out

    def upload(host: Any, dtype: Any) -> CLArray:
        return rt.from_host(np.asarray(host).astype(nd(dtype), copy=False))

    def random(draw: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(shape: tuple[int, ...], dtype: Any, *args: Any) -> CLArray:
            return upload(draw(rng(), tuple(shape), *args), dtype)
        return kernel

    def nonzero(x: CLArray) -> CLArray:
        host = x.get()
        return rt.from_host(np.argwhere(host).astype(np.int64) if host.ndim else
                            np.zeros((int(bool(host)), 0), np.int64))

    def scan(op: str) -> Callable[..., CLArray]:
        def kernel(x: CLArray, dim: int) -> CLArray:
            out = rt.empty(x.shape, x.dtype)
            if out.size == 0:
                return out
            if x.ndim == 0:
                from ._elementwise import copy_into
                copy_into(out, x)
                return out
            dim %= x.ndim
            kept = [d for d in range(x.ndim) if d != dim]
            kshape = tuple(x.shape[d] for d in kept)
            ov = out.view(kshape, tuple(out.strides[d] for d in kept), 0)
            xv = x.view(kshape, tuple(x.strides[d] for d in kept), 0)
            lines = out.size // x.shape[dim]
            c = ctypes(x.dtype)

            def source() -> str:
                return Template(read_source("scan.cl")).substitute(
                    T=c.storage, IN=c.storage, ACC=c.compute, identity="0" if op == "cumsum" else "1",
                    reduce="acc + v" if op == "cumsum" else "acc * v", load=c.load, store=c.store)
            k = rt.kernel(("scan", op, x.dtype), "scan", source, [None, None, _I64, _I64, _I64, _I64, _I64, None])
            k(rt.queue, rt.grid(lines), None, out.buffer, x.buffer, x.offset, x.shape[dim], out.strides[dim],
              x.strides[dim], lines, rt.meta(layout(kshape, [ov, xv])))
            return out
        return kernel

    return {
        "empty": empty, "full": full,
        "arange": lambda start, stop, step, dtype: upload(np.arange(start, stop, step, dtype=nd(dtype)), dtype),
        "linspace": lambda start, stop, num, dtype: upload(np.linspace(start, stop, num, dtype=nd(dtype)), dtype),
        "eye": lambda n, m, dtype: upload(np.eye(n, m, dtype=nd(dtype)), dtype),
        "rand": random(lambda g, s: g.random(s)),
        "randn": random(lambda g, s: g.standard_normal(s)),
        "randint": random(lambda g, s, lo, hi: g.integers(lo, hi, s)),
        "nonzero": nonzero, "cumsum": scan("cumsum"), "cumprod": scan("cumprod"),
    }
