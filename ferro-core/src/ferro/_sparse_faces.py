"""The sparse layouts' faces on every tensor and in the ``ferro`` namespace, loading ``ferro.sparse`` (and
with it the sparse kernels' users) only when one is called: ``Tensor.layout``, ``Tensor.to_sparse()``,
``Tensor.to_sparse_csr()``, ``Tensor.to_dense()``, ``ferro.sparse_coo_tensor``, ``ferro.sparse_csr_tensor``."""

from __future__ import annotations

import importlib
from typing import Any

from ._core.layouts import Layout, sparse_coo, sparse_csr, strided
from ._core.tensor import Tensor

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_coo_tensor", "sparse_csr_tensor"]

layout = Layout


def _sparse() -> Any:
    return importlib.import_module("ferro.sparse")


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, **kwargs: Any) -> Any:
    """A sparse COO tensor from its indices and values (see :func:`ferro.sparse.sparse_coo_tensor`)."""
    return _sparse().sparse_coo_tensor(indices, values, size, **kwargs)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, **kwargs: Any) -> Any:
    """A sparse CSR tensor from its row pointers, column indices and values (see
    :func:`ferro.sparse.sparse_csr_tensor`)."""
    return _sparse().sparse_csr_tensor(crow_indices, col_indices, values, size, **kwargs)


def _to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout: Layout | None = None) -> Any:
    """The sparse COO form of this tensor (its nonzero entries; differentiable), or of ``layout``."""
    if layout is sparse_csr:
        return _sparse().to_sparse_csr(self)
    return _sparse().to_sparse(self, sparse_dim)


def _to_sparse_csr(self: Tensor) -> Any:
    """The sparse CSR form of this 2-D tensor."""
    return _sparse().to_sparse_csr(self)


def _to_dense(self: Tensor, dtype: Any = None) -> Tensor:
    """This tensor, dense already (a sparse tensor returns its dense form)."""
    return self if dtype is None else self.to(dtype)


def _layout(self: Tensor) -> Layout:
    """The memory layout: ``ferro.strided`` (sparse tensors' classes say ``sparse_coo`` / ``sparse_csr``)."""
    return strided


Tensor.layout = property(_layout)  # type: ignore[attr-defined]
Tensor.to_sparse = _to_sparse  # type: ignore[attr-defined]
Tensor.to_sparse_coo = _to_sparse  # type: ignore[attr-defined]
Tensor.to_sparse_csr = _to_sparse_csr  # type: ignore[attr-defined]
Tensor.to_dense = _to_dense  # type: ignore[attr-defined]
