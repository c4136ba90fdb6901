"""Sparse kernels on cuSPARSE through ``cupyx.scipy.sparse``: a CSR matrix times a dense matrix or vector
(``spmm_csr``, ``spmv_csr`` of ``ferro/_ops/sparse.py``). cuSPARSE has no 16-bit floats here: float16 and
bfloat16 compute in float32 and are stored back in their dtype. ``cupyx`` is imported on the first call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["sparse_kernels"]


def _cupyx_sparse() -> Any:
    import cupyx.scipy.sparse
    return cupyx.scipy.sparse


def sparse_kernels(xp: Any, sparse: Callable[[], Any] = _cupyx_sparse) -> dict[str, Callable[..., Any]]:
    """The CSR product kernels on array module ``xp`` (CuPy) and its SciPy-compatible ``sparse()`` module
    (``cupyx.scipy.sparse``; the tests pass NumPy and ``scipy.sparse``, which share the interface)."""

    def product(crow: Any, col: Any, values: Any, dense: Any) -> Any:
        out_dtype = values.dtype
        compute = xp.float32 if out_dtype.itemsize == 2 else out_dtype
        m = sparse().csr_matrix((values.astype(compute, copy=False), col, crow),
                                shape=(crow.shape[0] - 1, dense.shape[0]))
        return xp.asarray(m @ dense.astype(compute, copy=False)).astype(out_dtype, copy=False)

    return {"spmm_csr": product, "spmv_csr": product}
