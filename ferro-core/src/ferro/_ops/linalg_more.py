"""More of ``torch.linalg``, written in ferro's linalg ops: ``vecdot``, ``multi_dot``, ``matrix_power``,
``matrix_exp``, ``matrix_rank``, ``cond``, ``solve_triangular``, ``vander``, ``diagonal``, ``tensorinv``,
``tensorsolve``. Gradients are those of the ops used (``solve_triangular`` reads only its triangle, so the
gradient of ``A`` is zero outside it, as PyTorch's)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import bfloat16, float16, float32
from .._core.numeric_info import finfo
from .._core.records import register_composites
from .._core.tensor import Tensor
from .._creation import arange
from ..errors import ShapeError
from ._rules import check_rule
from .elementwise import where
from .linalg_ext import FUNCTIONS as _LINALG
from .linalg_ext import _square
from .shape import stack

__all__ = ["FUNCTIONS"]

_HALF = (float16, bfloat16)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``sum(conj(x) * y)`` along ``dim`` (broadcast)."""
    check_rule("linalg.vecdot", x, y)
    return (x.conj() * y).sum(dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of the matrices (the first may be a vector, and the last), left to right."""
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"linalg.multi_dot(): argument 'tensors' must be a list or tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    check_rule("linalg.multi_dot", *tensors)
    ts = list(tensors)
    if len(ts) < 2:
        raise ValueError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, len(ts) - 1)):
            raise ShapeError(f"multi_dot(): tensor {i} must be 2D{' or 1D' if i in (0, len(ts) - 1) else ''} but got "
                             f"{t.ndim}D")
    out = ts[0]
    for t in ts[1:]:
        out = out @ t
    return out


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (the identity at 0, the inverse's power below 0)."""
    check_rule("linalg.matrix_power", A)
    _square("matrix_power", A)
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n < 0:
        A, n = _LINALG["inv"](A), -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    if result is None:
        eye = A.new_zeros(A.shape[-1], A.shape[-1]) + _eye_like(A)
        return eye.expand(A.shape).clone()
    return result


def _eye_like(A: Tensor) -> Tensor:
    n = A.shape[-1]
    idx = A.new_tensor(list(range(n))).to(A.dtype)
    return (idx.unsqueeze(-1) == idx).to(A.dtype)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential, by scaling and squaring a degree-18 Taylor series (16-bit floats computed in
    float32)."""
    check_rule("linalg.matrix_exp", A)
    _square("matrix_exp", A)
    if A.dtype in _HALF:
        return matrix_exp(A.to(float32)).to(A.dtype)
    norm = float(A.detach().abs().sum(-2).amax()) if A.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    X = A / (2.0 ** s)
    eye = _eye_like(A).expand(A.shape)
    term, total = eye, eye
    for k in range(1, 19):
        term = term @ X / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (``rtol`` by default
    ``eps * max(m, n)`` when neither is given)."""
    check_rule("linalg.matrix_rank", A)
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_rank: expected a (batch of) matrices, got shape {list(A.shape)}")
    sv = _LINALG["svdvals"](A.to(float32) if A.dtype in _HALF else A)
    if atol is None and rtol is None:
        rtol = finfo(sv.dtype).eps * max(A.shape[-2], A.shape[-1])
    largest = sv.amax(-1, keepdim=True) if sv.shape[-1] else sv.sum(-1, keepdim=True)
    tol = largest * (rtol or 0.0)
    if atol is not None:
        tol = tol.maximum(atol if isinstance(atol, Tensor) else largest * 0 + atol)
    return (sv > tol).sum(-1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number: the ratio of the largest to the smallest singular value (``p`` None or 2, -2 its
    inverse); other ``p``: ``norm(A, p) * norm(inv(A), p)``."""
    check_rule("linalg.cond", A)
    if A.dtype in _HALF:  # computed in float32, as the decompositions it calls
        return cond(A.to(float32), p).to(A.dtype)
    if p in (None, 2, -2):
        sv = _LINALG["svdvals"](A)
        big, small = sv.amax(-1), sv.amin(-1)
        return big / small if p != -2 else small / big
    norm = _LINALG["matrix_norm"]
    return norm(A, p) * norm(_LINALG["inv"](A), p)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``; only its
    ``upper`` or lower triangle is read (and not its diagonal with ``unitriangular``)."""
    check_rule("linalg.solve_triangular", A, B)
    _square("solve_triangular", A)
    if A.dtype in _HALF or B.dtype in _HALF:  # computed in float32, as the solve it calls
        wide = solve_triangular(A.to(float32), B.to(float32), upper=upper, left=left, unitriangular=unitriangular)
        return wide.to(A.dtype)
    n = A.shape[-1]
    idx = arange(n, device=A.device)
    keep = (idx.unsqueeze(-1) < idx) if unitriangular and upper else (idx.unsqueeze(-1) > idx) if unitriangular \
        else (idx.unsqueeze(-1) <= idx) if upper else (idx.unsqueeze(-1) >= idx)
    tri = where(keep, A, 0.0)
    if unitriangular:
        tri = where(idx.unsqueeze(-1) == idx, 1.0, tri)
    solve = _LINALG["solve"]
    if left:
        return solve(tri, B)
    return solve(tri.mT, B.mT).mT


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix: columns ``x^0, x^1, ..., x^(N-1)`` (increasing powers, as ``torch.linalg``)."""
    check_rule("linalg.vander", x)
    if x.ndim < 1:
        raise ShapeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n < 1:
        raise ValueError(f"linalg.vander: N must be greater than 1, got {n}")
    acc = x.new_ones(x.shape)
    cols = [acc]
    for _ in range(n - 1):
        acc = acc * x
        cols.append(acc)
    return stack(cols, -1)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonal of each matrix (the last two dims by default)."""
    check_rule("linalg.diagonal", A)
    return A.diagonal(offset, dim1, dim2)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` as a map from its last dims to its first ``ind`` dims."""
    check_rule("linalg.tensorinv", A)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise ShapeError(f"linalg.tensorinv: expected prod(shape[:ind]) == prod(shape[ind:]), but got {rows} != {cols}")
    flat = A.reshape(rows, cols)
    inv = _LINALG["inv"](flat.to(float32)).to(A.dtype) if A.dtype in _HALF else _LINALG["inv"](flat)
    return inv.reshape(*in_shape, *out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``."""
    check_rule("linalg.tensorsolve", A, B)
    if dims is not None:
        rest = [d for d in range(A.ndim) if d not in [d % A.ndim for d in dims]]
        A = A.permute(*rest, *[d % A.ndim for d in dims])
    if A.dtype in _HALF:
        return tensorsolve(A.to(float32), B.to(float32)).to(A.dtype)
    x_shape = tuple(A.shape[B.ndim:])
    n = math.prod(x_shape)
    return _LINALG["solve"](A.reshape(-1, n), B.reshape(-1)).reshape(x_shape)


_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("vecdot", vecdot, ("conj", "mul", "sum")), ("multi_dot", multi_dot, ("matmul",)),
    ("matrix_power", matrix_power, ("matmul",)),  # (negative powers also need linalg.inv)
    ("matrix_exp", matrix_exp, ("matmul", "div", "add")),
    ("matrix_rank", matrix_rank, ("linalg.svdvals", "gt:real", "sum")),
    ("cond", cond, ("linalg.svdvals", "div", "linalg.matrix_norm", "linalg.inv")),
    ("solve_triangular", solve_triangular, ("where", "linalg.solve")), ("vander", vander, ("mul", "cat")),
    ("diagonal", diagonal, ("diagonal",)), ("tensorinv", tensorinv, ("linalg.inv", "reshape")),
    ("tensorsolve", tensorsolve, ("linalg.solve", "reshape", "permute")),
]

FUNCTIONS: dict[str, Callable[..., Any]] = register_composites("linalg", _ROWS, dtype_rule="floating", prefix="linalg.")
