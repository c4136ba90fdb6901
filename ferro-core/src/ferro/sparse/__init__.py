"""Sparse tensors (``ferro.sparse_coo``, ``ferro.sparse_csr``) and their ops, as ``torch.sparse``.

Loaded on first use (``ferro.sparse_coo_tensor``, ``Tensor.to_sparse()``, ``ferro.sparse.mm``...), not by
``import ferro``. The products run on each backend's CSR kernels (the ``spmm_csr`` / ``spmv_csr`` ops);
everything else is written in dense ops on the index and value tensors. See ``docs/sparse.md``.
"""

from __future__ import annotations

from . import _rules  # noqa: F401  (registers the layout rules)
from ._construct import sparse_coo_tensor, sparse_csr_tensor
from ._functions import log_softmax, mm, softmax, sum
from ._tensors import SparseCOO, SparseCSR, coo_from_dense

__all__ = ["mm", "sum", "softmax", "log_softmax", "addmm", "sparse_coo_tensor", "sparse_csr_tensor", "SparseCOO",
           "SparseCSR", "to_sparse", "to_sparse_csr"]


def addmm(input: object, mat1: object, mat2: object, *, beta: float = 1, alpha: float = 1) -> object:
    """``beta * input + alpha * (mat1 @ mat2)`` with ``mat1`` sparse and ``input`` / ``mat2`` dense."""
    return input * beta + mm(mat1, mat2) * alpha  # type: ignore[operator]


def to_sparse(x: object, sparse_dim: int | None = None) -> SparseCOO:
    """``x.to_sparse()``: the COO form of a dense or sparse tensor."""
    if isinstance(x, (SparseCOO, SparseCSR)):
        return x.to_sparse(sparse_dim)
    return coo_from_dense(x, sparse_dim)  # type: ignore[arg-type]


def to_sparse_csr(x: object) -> SparseCSR:
    """``x.to_sparse_csr()``: the CSR form of a 2-D dense or sparse tensor."""
    if isinstance(x, (SparseCOO, SparseCSR)):
        return x.to_sparse_csr()
    if getattr(x, "ndim", None) != 2:
        raise ValueError(f"to_sparse_csr(): expected a 2-D tensor, got shape {list(getattr(x, 'shape', ()))}")
    return coo_from_dense(x).to_sparse_csr()  # type: ignore[arg-type]
