"""Sparse kernels: a CSR matrix times a dense matrix or vector (``spmm_csr``, ``spmv_csr`` of
``ferro/_ops/sparse.py``), from ``kernels/sparse.cl``; one program per dtype, built on first use."""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._elementwise import cast_array
from ._runtime import Runtime, ctypes, read_source

__all__ = ["sparse_kernels"]

_I64 = np.int64
_LONG = np.dtype(np.int64)
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def sparse_kernels(rt: Runtime) -> dict[str, Callable[..., Any]]:
    """The CSR product kernels of ``rt``'s device; building the table compiles nothing."""

    def kernel(dt: Any) -> Any:
        if dt.name not in _FLOATS:
            raise TypeError(f"OpenCL sparse kernels take float16, bfloat16, float32 or float64, got {dt}")
        c = ctypes(dt)

        def source() -> str:
            return Template(read_source("sparse.cl")).substitute(T=c.storage, ACC=c.compute, load=c.load,
                                                                 store=c.store)
        return rt.kernel(("sparse", dt.name), "spmm_csr", source,
                         [None, _I64, None, _I64, None, _I64, None, _I64, None, _I64])

    def contig(x: CLArray, dtype: Any = None) -> CLArray:
        dtype = x.dtype if dtype is None else dtype
        return x if x.contiguous and x.dtype == dtype else cast_array(x, dtype)

    def product(crow: CLArray, col: CLArray, values: CLArray, dense: CLArray) -> CLArray:
        rows = crow.shape[0] - 1
        k = dense.shape[1] if dense.ndim == 2 else 1
        y = rt.empty((rows, k) if dense.ndim == 2 else (rows,), values.dtype)
        if rows and k:
            cr, co, v, x = contig(crow, _LONG), contig(col, _LONG), contig(values), contig(dense, values.dtype)
            kernel(values.dtype)(rt.queue, (k, rows), None, cr.buffer, cr.offset, co.buffer, co.offset, v.buffer,
                                 v.offset, x.buffer, x.offset, y.buffer, k)
        return y

    return {"spmm_csr": product, "spmv_csr": product}
