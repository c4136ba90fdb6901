"""The int8 kernel of ferro.quantization on CUDA: ``int8_matmul`` (``kernels/int8_matmul.cu``), int8 operands
read through their strides, int32 accumulation and result (the contract's optional group ``quantized``).
CuPy is imported on first launch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .kernels import kernel

__all__ = ["quantized_kernels", "TILE"]

#: The kernel's square tile (FERRO_QTILE in int8_matmul.cu): threads per block side.
TILE = 16


def int8_matmul(x: Any, y: Any) -> Any:
    """``x @ y`` of int8 CuPy matrices (M, K) and (K, N), as an int32 (M, N) array."""
    import cupy
    import numpy as np
    (m, k), n = x.shape, y.shape[1]
    out = cupy.empty((m, n), dtype=cupy.int32)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    i64 = np.int64
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    kernel("int8_matmul", "int8_matmul", "int8")(
        grid, (TILE, TILE), (x, i64(x.strides[0]), i64(x.strides[1]), y, i64(y.strides[0]), i64(y.strides[1]),
                             out, i64(m), i64(n), i64(k)))
    return out


def quantized_kernels() -> dict[str, Callable[..., Any]]:
    """``int8_matmul``."""
    return {"int8_matmul": int8_matmul}
