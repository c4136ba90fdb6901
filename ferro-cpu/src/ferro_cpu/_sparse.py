"""Sparse kernels: a CSR matrix times a dense matrix or vector, on scipy.sparse's compiled loops.

scipy is imported on the first call, not when the backend loads. The CSR arrays go to scipy's own loop
(``csr_matvecs``, what ``csr_matrix @ ndarray`` runs) as they are: no ``csr_matrix`` is built, so the arrays
are neither re-validated (the core checked them when the sparse tensor was made) nor copied to a narrower
index dtype. Where that private loop is missing (another scipy), the public ``csr_matrix`` product runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["sparse_kernels"]


def _loop() -> Any:
    try:
        from scipy.sparse._sparsetools import csr_matvecs
    except ImportError:  # pragma: no cover - a scipy without it: the public product below
        return None
    return csr_matvecs


def sparse_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """The kernels of the ``spmm_csr`` and ``spmv_csr`` ops (``ferro/_ops/sparse.py``)."""
    found: list[Any] = []

    def product(crow: Any, col: Any, values: Any, dense: Any) -> Any:
        if not found:
            found.append(_loop())
        rows, k = len(crow) - 1, (dense.shape[1] if dense.ndim == 2 else 1)
        out = values.dtype
        compute = np.float32 if out.itemsize == 2 else out  # float16, bfloat16: scipy has no 16-bit loop
        v = values.astype(compute, copy=False)
        x = np.ascontiguousarray(dense, dtype=compute)
        loop = found[0]
        if loop is None:
            from scipy.sparse import csr_matrix
            y = np.asarray(csr_matrix((v, col, crow), shape=(rows, dense.shape[0]), copy=False) @ x)
        else:
            y = np.zeros((rows, k) if dense.ndim == 2 else (rows,), dtype=compute)
            if rows and k and len(v):
                loop(rows, dense.shape[0], k, crow, col.astype(crow.dtype, copy=False), v, x.ravel(), y.ravel())
        return y.astype(out, copy=False)

    return {"spmm_csr": product, "spmv_csr": product}
