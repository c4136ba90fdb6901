"""The sparse tensors: COO (indices + values) and CSR (row pointers + column indices + values).

A sparse tensor holds dense ferro tensors on its device: its index tensors (int64) and its values, which
carry autograd, so that the gradient reaching a sparse tensor is the gradient of its values (the pattern
kept). Every conversion (coalescing, COO <-> CSR, to and from dense) is written in dense ops (sort /
unique, segment sums by ``index_add``, ``searchsorted``), so it runs on every backend and is
differentiable with respect to the values. The base ``Tensor`` fields hold only the shape (``_Pattern``):
no kernel ever sees a sparse tensor, the layout layer sends every op call with one to its rule
(``_rules``) or refuses it, naming the op and the layout.
"""

from __future__ import annotations

import math
from typing import Any

from .._core.layouts import LayoutTensor, sparse_coo, sparse_csr, track
from .._core.records import ops
from .._core.tensor import Tensor, _new
from .._creation import arange, zeros
from .._ops.sparse import csr_rows
from ..errors import UnsupportedLayoutError

__all__ = ["SparseCOO", "SparseCSR", "make_coo", "make_csr", "coo_from_dense", "linear_index", "transpose", "to"]


class _Pattern:
    """A sparse tensor's ``_data``: its shape only (what shape, ndim and numel read)."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getattr__(self, name: str) -> Any:  # a function without a sparse rule handed it to a dense kernel
        raise TypeError(f"a sparse tensor reached a dense kernel (which read '{name}'): the function called has no "
                        "rule for the sparse layouts; call .to_dense() first to run the dense function")


def _start(cls: type, shape: tuple[int, ...], values: Tensor) -> Any:
    t = _new(cls)
    t._data = _Pattern(tuple(int(s) for s in shape))
    t._dtype, t._device = values._dtype, values._device
    t._rg, t.grad_fn = False, None
    return t


class _Sparse(LayoutTensor):
    """What both sparse layouts share: autograd through the values, refusal of host reads."""

    __slots__ = ()
    way_out = ".to_dense()"
    _v: Tensor

    @property
    def requires_grad(self) -> bool:  # type: ignore[override]
        """Whether the stored values require grad."""
        return self._v._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Set whether the values (a leaf) record ops; returns self."""
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """Whether the values are a leaf of the graph."""
        return self._v.grad_fn is None

    @property
    def grad(self) -> Any:  # type: ignore[override]
        """The gradient: a sparse tensor of the same pattern holding the values' gradient (None before)."""
        g = self._v._grad
        return None if g is None else self._with_values(g)

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            raise ValueError("a sparse tensor's grad is its values' grad; set .values().grad or None")
        self._v._grad = None

    def _with_values(self, values: Tensor) -> Any:
        raise NotImplementedError

    def to_dense(self, dtype: Any = None) -> Tensor:
        """The dense tensor (differentiable with respect to the values)."""
        raise NotImplementedError

    def _nnz(self) -> int:
        """The number of stored entries."""
        return int(self._v.shape[0])

    def detach(self) -> Any:
        """The same pattern with detached values."""
        return self._with_values(self._v.detach())

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """The sparse tensor on another device or of another dtype (``Tensor.to``'s arguments; the dtype is the
        values')."""
        return to(self, *args, **kwargs)

    def cpu(self) -> Any:
        """The sparse tensor on the CPU."""
        return self.to("cpu")

    def t(self) -> Any:
        """The transpose of a 2-D sparse tensor (see :func:`ferro.sparse.transpose`)."""
        return transpose(self, 0, 1) if self.ndim == 2 else self

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Two sparse dimensions swapped (see :func:`ferro.sparse.transpose`)."""
        return transpose(self, dim0, dim1)

    @property
    def T(self) -> Any:
        """The transpose of a 2-D sparse tensor."""
        return self.t()

    def _refused(self, what: str) -> Any:
        raise UnsupportedLayoutError(what, "self", self.describes, self.way_out)

    def numpy(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: call ``.to_dense()`` first (a sparse tensor is never densified silently)."""
        return self._refused("numpy")

    def tolist(self) -> Any:
        """Refused: call ``.to_dense()`` first."""
        return self._refused("tolist")

    def item(self) -> Any:
        """Refused: call ``.to_dense()`` first."""
        return self._refused("item")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        return self._refused("__array__")

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._refused("__dlpack__")


class SparseCOO(_Sparse):
    """A sparse tensor in coordinate form (``ferro.sparse_coo``): ``indices`` (sparse_dim, nnz) int64 and
    ``values`` (nnz, *dense_shape); duplicates allowed until :meth:`coalesce`."""

    __slots__ = ("_coalesced", "_csr", "_i", "_v")
    kind = "sparse_coo"
    describes = "sparse_coo"
    layout = sparse_coo
    is_sparse = True
    is_sparse_csr = False

    def _with_values(self, values: Tensor) -> SparseCOO:
        return make_coo(self._i, values, tuple(self.shape), self._coalesced)

    def sparse_dim(self) -> int:
        """How many leading dimensions are sparse (indexed)."""
        return int(self._i.shape[0])

    def dense_dim(self) -> int:
        """How many trailing dimensions each stored value has."""
        return self._v.ndim - 1

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique."""
        return self._coalesced

    def _indices(self) -> Tensor:
        """The indices as stored (coalesced or not)."""
        return self._i

    def _values(self) -> Tensor:
        """The values as stored (coalesced or not)."""
        return self._v

    def indices(self) -> Tensor:
        """The (sparse_dim, nnz) indices of a coalesced tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._i

    def values(self) -> Tensor:
        """The values of a coalesced tensor (gradients flow to them)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._v

    def zero_(self) -> SparseCOO:
        """Empty the tensor in place (no stored entry left), as PyTorch's ``zero_`` of a sparse COO tensor."""
        self._i, self._v = self._i[:, :0], self._v.detach()[:0]
        self._coalesced, self._csr = True, None
        return self

    def coalesce(self) -> SparseCOO:
        """The same tensor with its indices sorted and duplicates summed (differentiable)."""
        if self._coalesced:
            return self
        sizes = tuple(self.shape[:self.sparse_dim()])
        if not self._nnz():
            return make_coo(self._i, self._v, tuple(self.shape), True)
        lin = linear_index(self._i, sizes)
        uniq, inverse = ops.unique(lin, sorted=True, return_inverse=True)
        values = zeros((uniq.shape[0], *self._v.shape[1:]), dtype=self._v._dtype,
                       device=self._v._device).index_add(0, inverse, self._v)
        return make_coo(_unravel(uniq, sizes), values, tuple(self.shape), True)

    def to_dense(self, dtype: Any = None) -> Tensor:
        """The dense tensor: duplicates summed (differentiable with respect to the values)."""
        nsparse = self.sparse_dim()
        sizes = tuple(self.shape[:nsparse])
        flat = zeros((math.prod(sizes), *self._v.shape[1:]), dtype=self._v._dtype, device=self._v._device)
        if self._nnz():
            flat = flat.index_add(0, linear_index(self._i, sizes), self._v)
        out = flat.reshape(tuple(self.shape))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim: int | None = None) -> SparseCOO:
        """Itself (already ``sparse_coo``)."""
        return self

    def to_sparse_csr(self) -> SparseCSR:
        """The CSR form of a 2-D COO tensor (coalesced first; the values keep their gradient path)."""
        if self.ndim != 2 or self.dense_dim():
            raise ValueError(f"to_sparse_csr(): only a 2-D sparse_coo tensor without dense dimensions converts to "
                             f"sparse_csr, got shape {list(self.shape)} with {self.dense_dim()} dense dimensions")
        c = self.coalesce()
        if c._csr is None:
            row, col = c._i[0], c._i[1]
            crow = ops.searchsorted(row, arange(self.shape[0] + 1, device=row._device))
            c._csr = make_csr(crow, col, c._v, tuple(self.shape), rows=row)
        return c._csr

    def __repr__(self) -> str:
        return (f"tensor(indices={self._i!r},\n       values={self._v!r},\n       size={tuple(self.shape)}, "
                f"nnz={self._nnz()}, layout=ferro.sparse_coo)")


class SparseCSR(_Sparse):
    """A 2-D sparse tensor in compressed-row form (``ferro.sparse_csr``): ``crow_indices`` (rows + 1),
    ``col_indices`` (nnz) and ``values`` (nnz)."""

    __slots__ = ("_col", "_crow", "_rows", "_v")
    kind = "sparse_csr"
    describes = "sparse_csr"
    layout = sparse_csr
    is_sparse = False  # as PyTorch: is_sparse means sparse_coo
    is_sparse_csr = True

    def _with_values(self, values: Tensor) -> SparseCSR:
        return make_csr(self._crow, self._col, values, tuple(self.shape), rows=self._rows)

    def zero_(self) -> SparseCSR:
        """Zero the stored values in place (the pattern stays), as PyTorch's ``zero_`` of a CSR tensor."""
        self._v.detach().zero_()
        return self

    def crow_indices(self) -> Tensor:
        """The row pointers: row ``r``'s entries are ``crow_indices[r]:crow_indices[r + 1]``."""
        return self._crow

    def col_indices(self) -> Tensor:
        """The column of each stored entry."""
        return self._col

    def values(self) -> Tensor:
        """The stored values (gradients flow to them)."""
        return self._v

    def row_indices(self) -> Tensor:
        """The row of each stored entry (computed once)."""
        if self._rows is None:
            self._rows = csr_rows(self._crow, self._nnz())
        return self._rows

    def sparse_dim(self) -> int:
        """2: both dimensions are sparse."""
        return 2

    def dense_dim(self) -> int:
        """0: each stored value is a scalar."""
        return 0

    def to_sparse(self, sparse_dim: int | None = None) -> SparseCOO:
        """The COO form (coalesced)."""
        return make_coo(ops.stack([self.row_indices(), self._col]), self._v, tuple(self.shape), True)

    def to_sparse_csr(self) -> SparseCSR:
        """Itself (already ``sparse_csr``)."""
        return self

    def to_dense(self, dtype: Any = None) -> Tensor:
        """The dense matrix (differentiable with respect to the values)."""
        return self.to_sparse().to_dense(dtype)

    def __repr__(self) -> str:
        return (f"tensor(crow_indices={self._crow!r},\n       col_indices={self._col!r},\n       "
                f"values={self._v!r}, size={tuple(self.shape)}, nnz={self._nnz()}, layout=ferro.sparse_csr)")


def make_coo(indices: Tensor, values: Tensor, shape: tuple[int, ...], coalesced: bool) -> SparseCOO:
    """A COO tensor around checked ``indices`` and ``values`` (no copy)."""
    t = _start(SparseCOO, shape, values)
    t._i, t._v, t._coalesced, t._csr = indices, values, coalesced, None
    return track(t)


def make_csr(crow: Tensor, col: Tensor, values: Tensor, shape: tuple[int, ...], rows: Tensor | None = None
             ) -> SparseCSR:
    """A CSR tensor around checked arrays (no copy); ``rows``: the entries' rows where already known."""
    t = _start(SparseCSR, shape, values)
    t._crow, t._col, t._v, t._rows = crow, col, values, rows
    return track(t)


def linear_index(indices: Tensor, sizes: tuple[int, ...]) -> Tensor:
    """Each entry's position in the row-major flattening of the sparse dimensions ``sizes``."""
    lin = indices[0]
    for d in range(1, len(sizes)):
        lin = lin * sizes[d] + indices[d]
    return lin


def _unravel(lin: Tensor, sizes: tuple[int, ...]) -> Tensor:
    rows = []
    for s in reversed(sizes):
        rows.append(lin % s)
        lin = ops.div(lin, s, rounding_mode="floor")
    return ops.stack(rows[::-1])


def coo_from_dense(x: Tensor, sparse_dim: int | None = None) -> SparseCOO:
    """The coalesced COO form of dense ``x``: its nonzero entries (its first ``sparse_dim`` dimensions
    indexed, the rest stored as dense values), differentiable with respect to ``x``."""
    nsparse = x.ndim if sparse_dim is None else sparse_dim
    if not 0 < nsparse <= x.ndim:
        raise ValueError(f"to_sparse(): sparse_dim must be in 1..{x.ndim} for a {x.ndim}-D tensor, got {sparse_dim}")
    mask = x != 0
    if nsparse < x.ndim:
        mask = mask.any(tuple(range(nsparse, x.ndim)))
    idx = ops.nonzero(mask).t().contiguous()
    return make_coo(idx, x[tuple(idx[d] for d in range(nsparse))], tuple(x.shape), True)


def transpose(input: Any, dim0: int, dim1: int) -> Any:
    """Swap two sparse dimensions: COO swaps its index rows (the result is uncoalesced, as PyTorch's); CSR
    gives the CSR of the transposed matrix (PyTorch gives CSC, a layout ferro does not have)."""
    n = input.ndim
    d0, d1 = dim0 % n, dim1 % n
    s = input if isinstance(input, SparseCOO) else input.to_sparse()
    if max(d0, d1) >= s.sparse_dim():
        raise ValueError("transpose(): only sparse dimensions of a sparse tensor can be swapped")
    order = list(range(s.sparse_dim()))
    order[d0], order[d1] = order[d1], order[d0]
    shape = list(s.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    out = make_coo(s._i[order], s._v, tuple(shape), d0 == d1 and s._coalesced)
    return out.to_sparse_csr() if isinstance(input, SparseCSR) else out


def to(input: Any, *args: Any, **kwargs: Any) -> Any:
    """The sparse tensor with its parts moved / cast by ``Tensor.to``'s arguments (dtype casts the values)."""
    v = input._v.to(*args, **kwargs)
    dev = v._device
    if isinstance(input, SparseCOO):
        return make_coo(input._i.to(dev), v, tuple(input.shape), input._coalesced)
    return make_csr(input._crow.to(dev), input._col.to(dev), v, tuple(input.shape))
