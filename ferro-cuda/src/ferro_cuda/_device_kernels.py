"""Device versions of the kernels the generic backend computes on the host (NumPy / SciPy).

The generic Array API backend gives searchsorted, unique, histc, bincount
and the special functions through a copy to the host and back; CuPy has them
on the GPU, so the CUDA backend replaces them here with the same signatures
(``docs/plugins.md``) and results. (cummax / cummin are ferro's own scan
kernel, in :mod:`._fused`: CuPy has no ``maximum.accumulate``.) ``as_strided`` and ``storage_layout``
are the views of a tensor's storage that ``Tensor.as_strided`` and ``Tensor.stride()`` need. ``matmul``
is CuPy's, computing 16-bit products in float32 where CuPy would not (:func:`widened_matmul`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferro._core.dtypes import DType, int64
from ferro.backends import with_torch_special_values

__all__ = ["device_kernels", "widened_matmul", "wrapping_cast"]

#: The unsigned dtype (ferro's only one) a floating value reaches through int64, as in PyTorch
#: (``c10::static_cast_with_inter_type<uint8_t>``) and NumPy on the host: -1.0 becomes 255, where CUDA's own
#: conversion saturates it to 0.
_THROUGH_INT64 = frozenset({"uint8"})

#: ferro op -> cupyx.scipy.special function.
_SPECIAL = {"erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "lgamma": "gammaln", "digamma": "digamma"}


def widened_matmul(cp: Any, halves: tuple[Any, ...]) -> Callable[[Any, Any], Any]:
    """``cp.matmul``, with 16-bit operands (``halves``) computed in float32 and rounded once where CuPy would
    accumulate in 16 bits.

    CuPy's 2-D float16 / bfloat16 products are cuBLAS ``GemmEx`` with ``CUBLAS_COMPUTE_32F`` (float32
    accumulation: they are left to it, tensor cores included); but a product with one element per matrix
    (a row times a column: ``tensordot_core``'s m == n == 1 case) is a multiply-sum reduction in the output
    dtype, and batched bfloat16 goes to an integer kernel accumulating in bfloat16. Those run in float32.
    """
    f32 = cp.float32

    def matmul(a: Any, b: Any) -> Any:
        if a.dtype in halves and (a.ndim > 2 or b.ndim > 2 or ((a.ndim == 1 or a.shape[-2] == 1)
                                                               and (b.ndim == 1 or b.shape[-1] == 1))):
            return cp.matmul(a.astype(f32), b.astype(f32)).astype(a.dtype)
        return cp.matmul(a, b)
    matmul.__wrapped__ = cp.matmul  # type: ignore[attr-defined]
    return matmul


def wrapping_cast(cast: Callable[[Any, DType], Any]) -> Callable[[Any, DType], Any]:
    """``cast(x, dtype)`` converting floating and complex values to uint8 through int64, so that negative values
    wrap around (``uint8(-1.0) == 255``) as on the CPU backend and in PyTorch, instead of being clamped to 0 by
    CUDA's conversion."""
    def run(x: Any, dtype: DType) -> Any:
        if dtype.name in _THROUGH_INT64 and x.dtype.kind not in "biu":
            x = cast(x, int64)
        return cast(x, dtype)
    run.__wrapped__ = cast  # type: ignore[attr-defined]
    return run


def device_kernels(cp: Any, bf16: Any = None) -> dict[str, Callable[..., Any]]:
    """The table; ``cp`` is the CuPy module, ``bf16`` its bfloat16 dtype (None where it has none)."""
    from cupyx.scipy import special

    def same_dtype(f: Any) -> Callable[..., Any]:
        def kernel(*args: Any) -> Any:  # CuPy's special functions compute float16 in float32
            out = f(*args)
            dt = next(a.dtype for a in args if hasattr(a, "dtype"))
            return out if out.dtype == dt else out.astype(dt)
        return kernel

    def searchsorted(seq: Any, values: Any, right: bool) -> Any:
        side = "right" if right else "left"
        if seq.ndim <= 1:
            return cp.searchsorted(seq, values, side=side).astype(cp.int64)
        # One sorted row per leading index: a search per row (CuPy's searchsorted is 1-d only).
        flat_s = seq.reshape(-1, seq.shape[-1])
        flat_v = values.reshape(-1, values.shape[-1])
        out = cp.stack([cp.searchsorted(s, v, side=side) for s, v in zip(flat_s, flat_v, strict=True)])
        return out.reshape(values.shape).astype(cp.int64)

    def unique(x: Any, consecutive: bool) -> tuple[Any, Any, Any]:
        flat = x.reshape(-1)
        if not consecutive:
            values, inverse, counts = cp.unique(flat, return_inverse=True, return_counts=True,
                                                equal_nan=False)  # each NaN its own value, as in PyTorch
            return values, inverse.reshape(x.shape).astype(cp.int64), counts.astype(cp.int64)
        if flat.size == 0:
            return flat, cp.zeros(x.shape, cp.int64), cp.zeros(0, cp.int64)
        starts = cp.concatenate([cp.ones(1, bool), flat[1:] != flat[:-1]])
        inverse = cp.cumsum(starts, dtype=cp.int64) - 1
        first = cp.flatnonzero(starts)
        counts = cp.diff(cp.concatenate([first, cp.asarray([flat.size])]))
        return flat[starts], inverse.reshape(x.shape), counts.astype(cp.int64)

    def histc(x: Any, bins: int, lo: float, hi: float) -> Any:
        if lo == hi == 0:
            lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        counts, _ = cp.histogram(x, bins=bins, range=(lo, hi))
        return counts.astype(x.dtype)

    def bincount(x: Any, weights: Any, minlength: int) -> Any:
        return cp.bincount(x, weights=weights, minlength=minlength)

    def as_strided(base: Any, size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> Any:
        # a view of base's memory (ferro's as_strided checked the bounds); strides and offset in elements
        item = base.itemsize
        return cp.ndarray(tuple(size), base.dtype, memptr=base.data + offset * item,
                          strides=tuple(s * item for s in stride))

    def storage_layout(base: Any, x: Any) -> tuple[tuple[int, ...], int]:
        item = x.itemsize
        return tuple(s // item for s in x.strides), (x.data.ptr - base.data.ptr) // item if x.size else 0

    table: dict[str, Callable[..., Any]] = {op: with_torch_special_values(cp, op, same_dtype(getattr(special, fn)))
                                            for op, fn in _SPECIAL.items()}
    # zeta(x, q): Hurwitz's, as scipy.special.zeta on the cpu backend (polygamma of order n >= 1 is written in it)
    table["zeta"] = same_dtype(special.zeta)
    halves = (cp.dtype(cp.float16), *(() if bf16 is None else (bf16,)))
    table.update({"searchsorted": searchsorted, "unique": unique, "histc": histc, "bincount": bincount,
                  "as_strided": as_strided, "storage_layout": storage_layout, "matmul": widened_matmul(cp, halves)})
    return table
