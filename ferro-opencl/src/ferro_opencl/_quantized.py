"""The int8 kernel of ferro.quantization on OpenCL: ``int8_matmul`` (``kernels/int8_matmul.cl``), int8
operands, int32 accumulation and result (the contract's optional group ``quantized``).

One register-blocked kernel for every device, reading B's rows as int8 vectors widened once per load: B
with non-contiguous rows (a transposed view) is copied contiguous first (a quantized Linear keeps its
weight that way, so its products copy nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import copy_into
from ._runtime import Runtime, read_source

__all__ = ["quantized_kernels"]

_I64 = np.int64
#: RM rows x NV vectors of VW int32 outputs per work-item (8 vector accumulators + NV for B's row).
RM, NV, VW = 4, 2, 8
#: Work-items per group along the rows (they share the column block of B, which stays in cache).
GROUP = 8


def quantized_kernels(rt: Runtime) -> dict[str, Callable[..., Any]]:
    """``int8_matmul`` on ``rt``'s device."""
    types = [None, None, _I64, _I64, _I64, None, _I64, _I64, _I64, _I64, _I64]
    int32 = np.dtype(np.int32)

    def source() -> str:
        return Template(read_source("int8_matmul.cl")).substitute(RM=RM, NV=NV, VW=VW)

    def int8_matmul(x: CLArray, y: CLArray) -> CLArray:
        kern = rt.kernel(("int8_matmul", RM, NV, VW), "int8_matmul", source, types)
        (m, k), n = x.shape, y.shape[1]
        out = rt.empty((m, n), int32)
        if out.size == 0:
            return out
        if k == 0:
            copy_into(out, 0)
            return out
        if y.strides[1] != 1:
            y, src = rt.empty(y.shape, y.dtype), y
            copy_into(y, src)
        rows, cols = -(-m // RM), -(-n // (NV * VW))
        group = min(GROUP, rows)
        kern(rt.queue, (-(-rows // group) * group, cols), (group, 1), out.buffer, x.buffer, x.offset,
             x.strides[0], x.strides[1], y.buffer, y.offset, y.strides[0], m, n, k)
        return out
    return {"int8_matmul": int8_matmul}
