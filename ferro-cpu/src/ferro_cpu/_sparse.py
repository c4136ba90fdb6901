"""Sparse kernels: a CSR matrix times a dense matrix or vector, on scipy.sparse's compiled loops.

scipy is imported on the first call, not when the backend loads. The CSR arrays are handed to scipy as
they are (no copy, no re-validation: the core checked them when the sparse tensor was made).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["sparse_kernels"]


def _csr(crow: Any, col: Any, values: Any, ncols: int) -> Any:
    from scipy.sparse import csr_matrix
    m = csr_matrix((values, col, crow), shape=(len(crow) - 1, ncols), copy=False)
    return m


def sparse_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """The kernels of the ``spmm_csr`` and ``spmv_csr`` ops (``ferro/_ops/sparse.py``)."""

    def spmm_csr(crow: Any, col: Any, values: Any, dense: Any) -> Any:
        return np.asarray(_csr(crow, col, values, dense.shape[0]) @ dense, dtype=values.dtype)

    def spmv_csr(crow: Any, col: Any, values: Any, vector: Any) -> Any:
        return np.asarray(_csr(crow, col, values, vector.shape[0]) @ vector, dtype=values.dtype)

    return {"spmm_csr": spmm_csr, "spmv_csr": spmv_csr}
