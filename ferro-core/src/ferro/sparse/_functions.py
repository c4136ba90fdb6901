"""What ops do with sparse tensors: products (on the backends' CSR kernels), sums, softmax over the stored
values, scaling, addition and transposition. Every result keeps the gradient path to the values."""

from __future__ import annotations

from typing import Any

from .._core.records import ops
from .._core.tensor import Tensor
from .._creation import zeros
from .._ops.sparse import spmm_csr, spmv_csr
from ..errors import ShapeError
from ._tensors import SparseCOO, SparseCSR, _Sparse, linear_index, make_coo, to, transpose

__all__ = ["mm", "matmul", "sum", "softmax", "log_softmax", "mul", "div", "add", "transpose", "neg", "clone", "to"]


def _csr(a: Any) -> SparseCSR:
    return a if isinstance(a, SparseCSR) else a.to_sparse_csr()


def mm(mat1: Any, mat2: Tensor) -> Tensor:
    """A 2-D sparse matrix (COO or CSR) times a dense matrix, or a vector: a dense tensor, differentiable with
    respect to the sparse values and to the dense operand.

    >>> import ferro
    >>> s = ferro.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> ferro.sparse.mm(s, ferro.ones(2, 3))
    tensor([[2., 2., 2.],
            [3., 3., 3.]])
    """
    if not isinstance(mat1, _Sparse):
        raise TypeError(f"sparse.mm(): argument 'mat1' must be a sparse tensor, got {type(mat1).__name__}")
    if isinstance(mat2, _Sparse):
        raise TypeError(f"sparse.mm(): argument 'mat2' is a {mat2.describes} tensor; sparse @ sparse is not "
                        "supported, call .to_dense() on one of them")
    if mat1.ndim != 2 or mat2.ndim not in (1, 2) or mat1.shape[1] != mat2.shape[0]:
        raise ShapeError(f"sparse.mm(): cannot multiply a {list(mat1.shape)} sparse matrix by a {list(mat2.shape)} "
                         "dense operand")
    c = _csr(mat1)
    kernel = spmm_csr if mat2.ndim == 2 else spmv_csr
    return kernel(c._crow, c._col, c._v, mat2)


def matmul(a: Any, b: Any) -> Tensor:
    """``a @ b`` with ``a`` sparse (``sparse @ dense``, ``sparse @ vector``), or ``dense @ sparse`` computed as
    ``(sparse.T @ dense.T).T``."""
    if isinstance(a, _Sparse):
        return mm(a, b)
    if isinstance(b, _Sparse) and isinstance(a, Tensor) and a.ndim in (1, 2):
        out = mm(transpose(b, 0, 1), a.t() if a.ndim == 2 else a)
        return out.t() if a.ndim == 2 else out
    raise TypeError(f"matmul(): cannot multiply {type(a).__name__} by {type(b).__name__}")


def _coo(a: Any) -> SparseCOO:
    return a if isinstance(a, SparseCOO) else a.to_sparse()


def sum(input: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    """The sum of a sparse tensor: over everything (a dense 0-d tensor), or over ``dim`` (a sparse tensor
    while sparse dimensions remain, else dense), as ``torch.sparse.sum``."""
    if keepdim:
        raise ValueError("sparse.sum(): keepdim=True is not supported for sparse tensors")
    v = input._v if dtype is None else input._v.to(dtype)
    if dim is None:
        return v.sum()
    s = _coo(input)
    dims = sorted({d % s.ndim for d in ((dim,) if isinstance(dim, int) else dim)})
    nsparse = s.sparse_dim()
    dense_dims = tuple(d - nsparse + 1 for d in dims if d >= nsparse)
    values = s._v if dtype is None else s._v.to(dtype)
    if dense_dims:
        values = values.sum(dense_dims)
    keep = [d for d in range(nsparse) if d not in dims]
    if not keep:
        return values.sum(0)
    shape = tuple(n for d, n in enumerate(s.shape) if d not in dims)
    idx = s._i[keep] if len(keep) < nsparse else s._i
    return make_coo(idx, values, shape, False).coalesce()


def _groups(s: SparseCOO, dim: int) -> tuple[Tensor, int]:
    """For each stored entry, the id of its line along ``dim`` (entries that differ only in ``dim``)."""
    others = [d for d in range(s.sparse_dim()) if d != dim]
    if not others:
        return zeros(s._nnz(), dtype=s._i._dtype, device=s._i._device), 1
    sizes = tuple(s.shape[d] for d in others)
    lin = linear_index(s._i[others], sizes)
    uniq, inverse = ops.unique(lin, return_inverse=True)
    return inverse, int(uniq.shape[0])


def _log_softmax_values(s: SparseCOO, dim: int) -> Tensor:
    if not 0 <= dim < s.sparse_dim():
        raise ValueError(f"sparse.softmax(): dim {dim} is not a sparse dimension of a tensor with "
                         f"{s.sparse_dim()} of them")
    v = s._v
    if not s._nnz():
        return v
    group, n = _groups(s, dim)
    shape = (n, *v.shape[1:])
    spread = group.reshape((-1,) + (1,) * (v.ndim - 1)).expand(tuple(v.shape))
    top = ops.scatter_reduce(zeros(shape, dtype=v._dtype, device=v._device), 0, spread, v.detach(), "amax",
                             include_self=False)  # a shift for stability only: no gradient through it
    shifted = v - ops.index_select(top, 0, group)
    total = zeros(shape, dtype=v._dtype, device=v._device).index_add(0, group, shifted.exp())
    return shifted - ops.index_select(total.log(), 0, group)


def softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """Softmax over the stored values along ``dim`` (entries not stored count as -inf, so they stay zero),
    as ``torch.sparse.softmax``: a sparse tensor of the same pattern (coalesced)."""
    s = _coo(input).coalesce()
    if dtype is not None:
        s = s._with_values(s._v.to(dtype))
    out = s._with_values(_log_softmax_values(s, dim % s.ndim).exp())
    return out.to_sparse_csr() if isinstance(input, SparseCSR) else out


def log_softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """Log-softmax over the stored values along ``dim``, as ``torch.sparse.log_softmax``."""
    s = _coo(input).coalesce()
    if dtype is not None:
        s = s._with_values(s._v.to(dtype))
    out = s._with_values(_log_softmax_values(s, dim % s.ndim))
    return out.to_sparse_csr() if isinstance(input, SparseCSR) else out


def _same_pattern(a: Any, b: Any) -> bool:
    if a.layout is not b.layout or tuple(a.shape) != tuple(b.shape):
        return False
    if isinstance(a, SparseCSR):
        pairs = ((a._crow, b._crow), (a._col, b._col))
    else:
        pairs = ((a._i, b._i),)
    return all(x is y or (x.shape == y.shape and bool((x == y).all())) for x, y in pairs)


def mul(input: Any, other: Any) -> Any:
    """``input * other``: a sparse tensor times a scalar (or 0-d tensor), or two sparse tensors of the same
    pattern (values multiplied); the pattern is kept."""
    a, b = (input, other) if isinstance(input, _Sparse) else (other, input)
    if isinstance(b, _Sparse):
        if isinstance(a, SparseCOO):
            a, b = a.coalesce(), b.coalesce() if isinstance(b, SparseCOO) else b
        if not _same_pattern(a, b):
            raise ValueError("mul(): sparse * sparse needs both operands of one layout, shape and pattern "
                             "(the same indices); call .to_dense() on one of them for the general product")
        return a._with_values(a._v * b._v)
    if isinstance(b, Tensor) and b.ndim:
        raise ValueError(f"mul(): a {a.describes} tensor is multiplied by a scalar or a sparse tensor of its "
                         f"pattern, not by a dense tensor of shape {list(b.shape)}; call .to_dense() first")
    return a._with_values(a._v * b)


def div(input: Any, other: Any) -> Any:
    """``sparse / scalar``: the values divided, the pattern kept."""
    if not isinstance(input, _Sparse) or (isinstance(other, Tensor) and other.ndim):
        raise ValueError("div(): only a sparse tensor divided by a scalar is supported; call .to_dense() first")
    return input._with_values(input._v / other)


def neg(input: Any) -> Any:
    """``-sparse``: the values negated."""
    return input._with_values(-input._v)


def add(input: Any, other: Any, alpha: Any = 1) -> Any:
    """``input + alpha * other``: sparse + sparse (same shape and layout) is sparse (COO: the entries side by
    side, uncoalesced, as PyTorch); dense + sparse is dense."""
    if isinstance(input, _Sparse) and isinstance(other, _Sparse):
        if tuple(input.shape) != tuple(other.shape) or input.layout is not other.layout:
            raise ShapeError(f"add(): sparse operands of shapes {list(input.shape)} ({input.describes}) and "
                             f"{list(other.shape)} ({other.describes}) do not match")
        b = other._v if alpha == 1 else other._v * alpha
        coo_a, coo_b = _coo(input), _coo(other)
        out = make_coo(ops.cat([coo_a._i, coo_b._i], 1), ops.cat([coo_a._v, b.to(coo_a._v._dtype)]),
                       tuple(input.shape), False)
        return out if isinstance(input, SparseCOO) else out.to_sparse_csr()
    dense, sp = (input, other) if isinstance(other, _Sparse) else (other, input)
    if not isinstance(dense, Tensor):
        raise TypeError(f"add(): a {sp.describes} tensor plus a {type(dense).__name__} would fill every entry not "
                        "stored; call .to_dense() first, or add to .values()")
    if tuple(dense.shape) != tuple(sp.shape):
        raise ShapeError(f"add(): a {sp.describes} tensor of shape {list(sp.shape)} adds to a dense tensor of the "
                         f"same shape, not to {getattr(dense, 'shape', type(dense).__name__)}")
    s = _coo(sp)
    v = s._v if alpha == 1 or sp is input else s._v * alpha
    if sp is input and alpha != 1:
        dense = dense * alpha
    nsparse = s.sparse_dim()
    sizes = tuple(s.shape[:nsparse])
    flat = dense.reshape((-1, *dense.shape[nsparse:]))
    return flat.index_add(0, linear_index(s._i, sizes), v.to(flat._dtype)).reshape(tuple(dense.shape))


def clone(input: Any, **_: Any) -> Any:
    """A copy with cloned values (the indices are shared: nothing writes them)."""
    return input._with_values(input._v.clone())
