"""The sparse kernels' ops: a CSR matrix (its three dense arrays) times a dense matrix or vector.

``spmm_csr(crow_indices, col_indices, values, dense)`` and ``spmv_csr(..., vector)`` are ordinary registry
ops on dense tensors: each backend's kernel table holds their kernels under their names (ferro-cpu on
scipy.sparse, ferro-opencl in OpenCL C, ferro-cuda on cuSPARSE), so ``Backend.supports``, ``ferro ops``
and the conformance suite see them like any op. They have no decomposition: a backend without the kernels
raises :class:`~ferro.errors.UnsupportedOperationError` naming the ``sparse_csr`` layout. Their backward
formulas are written in dense ops (gradients to the values and to the dense operand; to any order).
``ferro.sparse`` builds its sparse tensors' products on them.
"""

from __future__ import annotations

from .._core.dtypes import int32, int64, promote_types
from .._core.records import OpDef, ops, register
from .._core.tensor import Tensor
from .._creation import arange
from ..dispatch._dispatch import _unsupported, check_devices, fallback_enabled, finish, kernel_for, run_elsewhere
from ..errors import DTypeError, ShapeError

__all__ = ["spmm_csr", "spmv_csr", "csr_rows"]


def csr_rows(crow: Tensor, nnz: int) -> Tensor:
    """The row of each stored entry of a CSR matrix (its COO row indices), from its row pointers."""
    return ops.searchsorted(crow, arange(nnz, dtype=crow._dtype, device=crow._device), right=True) - 1


def _grad_values(g: Tensor, crow: Tensor, col: Tensor, values: Tensor, dense: Tensor) -> Tensor:
    rows = csr_rows(crow, values.shape[0])
    picked = ops.index_select(g, 0, rows) * ops.index_select(dense, 0, col)
    return picked.sum(-1) if dense.ndim == 2 else picked


def _grad_dense(g: Tensor, crow: Tensor, col: Tensor, values: Tensor, dense: Tensor) -> Tensor:
    # the transposed matrix times the gradient, on the same kernel: the entries sorted by column (stable, so
    # each column's entries keep their row order) give the transpose's CSR arrays
    rows = csr_rows(crow, values.shape[0]).to(int64)
    order = ops.argsort(col, stable=True)
    cols = ops.index_select(col, 0, order).to(int64)
    crow_t = ops.searchsorted(cols, arange(dense.shape[0] + 1, dtype=int64, device=col._device))
    product = spmm_csr if dense.ndim == 2 else spmv_csr
    return product(crow_t, ops.index_select(rows, 0, order), ops.index_select(values, 0, order),
                   g).to(dense._dtype)


def _check(name: str, crow: Tensor, col: Tensor, values: Tensor, dense: Tensor, dims: int) -> None:
    for arg, t in (("crow_indices", crow), ("col_indices", col)):
        if not isinstance(t, Tensor) or t._dtype not in (int32, int64) or t.ndim != 1:
            raise DTypeError(f"{name}(): argument '{arg}' must be a 1-D int32 or int64 tensor, got "
                             f"{getattr(t, 'dtype', type(t).__name__)} of {list(getattr(t, 'shape', ()))}")
    if not isinstance(values, Tensor) or values.ndim != 1 or values.shape[0] != col.shape[0]:
        raise ShapeError(f"{name}(): argument 'values' must be 1-D with one value per column index "
                         f"({col.shape[0]}), got shape {list(getattr(values, 'shape', ()))}")
    if not isinstance(dense, Tensor) or dense.ndim != dims:
        raise ShapeError(f"{name}(): the dense operand must be {dims}-D, got shape "
                         f"{list(getattr(dense, 'shape', ()))}")


def _run(op: OpDef, crow: Tensor, col: Tensor, values: Tensor, dense: Tensor, dims: int) -> Tensor:
    _check(op.name, crow, col, values, dense, dims)
    dev = check_devices(op.name, [crow, col, values, dense])
    if col._dtype is not crow._dtype:
        raise DTypeError(f"{op.name}(): 'crow_indices' and 'col_indices' must have the same dtype, got "
                         f"{crow._dtype} and {col._dtype}")
    dtype = values._dtype if values._dtype is dense._dtype else promote_types(values._dtype, dense._dtype)
    if dtype not in op.table:
        raise DTypeError(f"{op.name}(): not defined for dtype {dtype}; it takes {op.dtype_words}")
    k = kernel_for(op, dev, dtype)
    if k is None:
        if fallback_enabled() and dev.type != "cpu":  # the opt-in CPU fallback, as for every op
            return run_elsewhere(op, dev, dtype, (crow, col, values, dense), {})
        raise _unsupported(op, dtype, dev, "the backend has no kernels for the sparse_csr layout")
    compute, out = op.table[dtype]
    v, d = (t if t._dtype is compute else t.to(compute) for t in (values, dense))
    data = k(crow._data, col._data, v._data, d._data)
    return finish(op, data, out, dev, (crow, col, values, dense), (crow, col, values, dense))


def spmm_csr(crow_indices: Tensor, col_indices: Tensor, values: Tensor, dense: Tensor) -> Tensor:
    """The CSR matrix ``(crow_indices, col_indices, values)`` (rows: ``len(crow_indices) - 1``) times the
    2-D ``dense``: a dense ``(rows, dense.shape[1])`` tensor."""
    return _run(_SPMM, crow_indices, col_indices, values, dense, 2)


def spmv_csr(crow_indices: Tensor, col_indices: Tensor, values: Tensor, vector: Tensor) -> Tensor:
    """The CSR matrix ``(crow_indices, col_indices, values)`` times the 1-D ``vector``: a dense vector."""
    return _run(_SPMV, crow_indices, col_indices, values, vector, 1)


_GRADS = (None, None, _grad_values, _grad_dense)
_SPMM = register(OpDef("spmm_csr", "sparse", spmm_csr.__doc__.split("\n")[0], dtype_rule="real_floating",
                       saves=(0, 1, 2, 3), grads=_GRADS))
_SPMV = register(OpDef("spmv_csr", "sparse", spmv_csr.__doc__.split("\n")[0], dtype_rule="real_floating",
                       saves=(0, 1, 2, 3), grads=_GRADS))
_SPMM.fn, _SPMV.fn = spmm_csr, spmv_csr
