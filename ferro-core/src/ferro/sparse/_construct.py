"""Making sparse tensors from their parts, as ``torch.sparse_coo_tensor`` / ``torch.sparse_csr_tensor``.

The parts are checked here, at construction (``check_invariants=True``, the default): shapes, dtypes,
and every index inside the size, so that an out-of-range index is a clear error now, never a crash in a
kernel later. The check reads the indices' extremes back to the host (one small transfer).
"""

from __future__ import annotations

from typing import Any

from .._core.dtypes import int32, int64
from .._core.records import ops
from .._core.tensor import Tensor
from .._creation import as_tensor
from ..errors import DTypeError, ShapeError
from ._tensors import SparseCOO, SparseCSR, make_coo, make_csr

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor"]


def _index_tensor(op: str, arg: str, x: Any, device: Any) -> Tensor:
    t = x if isinstance(x, Tensor) else as_tensor(x, device=device)
    if t.dtype not in (int32, int64):
        raise DTypeError(f"{op}(): argument '{arg}' must be an integer tensor (int32 or int64), got {t.dtype}")
    return t if device is None else t.to(device)


def _values(values: Any, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    v = values if isinstance(values, Tensor) else as_tensor(values, dtype=dtype, device=device)
    if dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    if device is not None:
        v = v.to(device)
    if requires_grad:
        v = v.detach().requires_grad_()  # the sparse tensor's own leaf: its .grad is the values' grad
    return v


def _extremes(op: str, arg: str, idx: Tensor, sizes: tuple[int, ...], check: bool) -> list[int]:
    """The largest index per row of ``idx`` (2-D), checked against ``sizes`` when ``check``."""
    if not idx.shape[1]:
        return [-1] * idx.shape[0]
    hi = [int(v) for v in idx.amax(1).tolist()]
    if check:
        lo = [int(v) for v in idx.amin(1).tolist()]
        for d, size in enumerate(sizes):
            if lo[d] < 0 or hi[d] >= size:
                bad = lo[d] if lo[d] < 0 else hi[d]
                raise IndexError(f"{op}(): argument '{arg}' holds index {bad} in dimension {d}, out of range "
                                 f"for size {size}")
    return hi


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseCOO:
    """A sparse COO tensor: ``values[k]`` at position ``indices[:, k]`` (duplicates sum), of shape ``size``
    (default: the smallest holding every index, then ``values``' trailing dimensions).

    Indices outside ``size`` are rejected here unless ``check_invariants=False``.

    >>> import ferro
    >>> s = ferro.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
    """
    op = "sparse_coo_tensor"
    v = _values(values, dtype, device, requires_grad)
    idx = _index_tensor(op, "indices", indices, v.device).to(int64)
    if idx.ndim != 2:
        raise ShapeError(f"{op}(): argument 'indices' must be 2-D (sparse_dim, nnz), got shape {list(idx.shape)}")
    if v.ndim < 1 or v.shape[0] != idx.shape[1]:
        raise ShapeError(f"{op}(): argument 'values' must have one row per index column ({idx.shape[1]}), got "
                         f"shape {list(v.shape)}")
    if idx.device != v.device:
        raise ValueError(f"{op}(): 'indices' is on {idx.device} and 'values' on {v.device}; they must share a device")
    nsparse = idx.shape[0]
    if size is None:
        hi = _extremes(op, "indices", idx, (), False)
        shape = (*(h + 1 for h in hi), *v.shape[1:])
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != nsparse + v.ndim - 1 or tuple(shape[nsparse:]) != tuple(v.shape[1:]):
            raise ShapeError(f"{op}(): size {list(shape)} does not fit indices of {nsparse} sparse dimensions and "
                             f"values of shape {list(v.shape)} (expected {nsparse} sizes then {list(v.shape[1:])})")
        _extremes(op, "indices", idx, shape[:nsparse], check_invariants is not False)
    return make_coo(idx, v, shape, bool(is_coalesced) or v.shape[0] <= 1)


def sparse_csr_tensor(crow_indices: Any, col_indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> SparseCSR:
    """A 2-D sparse CSR tensor: row ``r`` holds ``values[crow_indices[r]:crow_indices[r + 1]]`` at columns
    ``col_indices[...]``; shape ``size`` (default: ``len(crow_indices) - 1`` rows, the largest column + 1).

    The row pointers and column indices are checked here unless ``check_invariants=False``.

    >>> import ferro
    >>> ferro.sparse_csr_tensor([0, 1, 3], [2, 0, 2], [3.0, 4.0, 5.0], (2, 3)).to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
    """
    op = "sparse_csr_tensor"
    v = _values(values, dtype, device, requires_grad)
    crow = _index_tensor(op, "crow_indices", crow_indices, v.device)
    col = _index_tensor(op, "col_indices", col_indices, v.device)
    if crow.dtype is not col.dtype:
        raise DTypeError(f"{op}(): 'crow_indices' and 'col_indices' must have the same dtype, got {crow.dtype} and "
                         f"{col.dtype}")
    if crow.ndim != 1 or col.ndim != 1 or v.ndim != 1 or col.shape[0] != v.shape[0]:
        raise ShapeError(f"{op}(): expected 1-D crow_indices, and 1-D col_indices and values of one length; got "
                         f"shapes {list(crow.shape)}, {list(col.shape)} and {list(v.shape)}")
    nrows = crow.shape[0] - 1
    if size is None:
        ncols = (int(col.amax()) + 1) if col.shape[0] else 0
        shape = (nrows, ncols)
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != 2 or shape[0] != nrows:
            raise ShapeError(f"{op}(): size {list(shape)} does not fit crow_indices of length {crow.shape[0]} "
                             f"(expected ({nrows}, ncols))")
    if check_invariants is not False:
        nnz = col.shape[0]
        ends = crow.tolist()
        if nrows < 0 or ends[0] != 0 or ends[-1] != nnz:
            raise ValueError(f"{op}(): 'crow_indices' must start at 0 and end at nnz ({nnz}), got {ends[0]} .. "
                             f"{ends[-1]}")
        if nrows and bool((ops.diff(crow) < 0).any()):
            raise ValueError(f"{op}(): 'crow_indices' must be non-decreasing")
        _extremes(op, "col_indices", col.reshape(1, -1), shape[1:], True)
    return make_csr(crow, col, v, shape)
