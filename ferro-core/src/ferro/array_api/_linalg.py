"""The standard's linear algebra functions and its ``linalg`` extension over ``ferro.linalg``.

:data:`linalg` is the extension's namespace (``xp.linalg``); the functions
in the main namespace (``matmul``, ``matrix_transpose``, ``tensordot``,
``vecdot``) appear in both, as the standard asks.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Literal, NamedTuple

import ferro.linalg as _fl

from .. import _api as ferro
from .._core import dtypes as _d
from .._core.dtypes import DType
from .._core.tensor import Tensor
from ._axes import keep_shape, normalize_axes, one_axis
from ._dtypes import builtins_bool, check_array, promote
from ._elementwise import conj, real


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The matrix product (1-d operands are vectors; leading axes broadcast)."""
    check_array(x1, "matmul", "x1")
    check_array(x2, "matmul", "x2")
    return ferro.matmul(*promote(x1, x2, "matmul"))


def matrix_transpose(x: Tensor, /) -> Tensor:
    """``x`` with its last two axes swapped."""
    check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: expected at least 2 dimensions, got shape {tuple(x.shape)}")
    return x.mT


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """The sum of products over ``axes`` (the last ``axes`` of ``x1`` with the first of ``x2``, or two lists)."""
    a, b = promote(check_array(x1, "tensordot", "x1"), check_array(x2, "tensordot", "x2"), "tensordot")
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        return ferro.tensordot(a, b, dims=axes)
    return ferro.tensordot(a, b, dims=([int(i) for i in axes[0]], [int(i) for i in axes[1]]))


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis`` (``x1`` conjugated), broadcasting the rest."""
    a, b = promote(check_array(x1, "vecdot", "x1"), check_array(x2, "vecdot", "x2"), "vecdot")
    n = max(a.ndim, b.ndim)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: expected arrays of at least one dimension")
    ax = one_axis(axis, n, "vecdot") - n
    if a.shape[ax] != b.shape[ax]:
        raise ValueError(f"vecdot: axis {axis} has size {a.shape[ax]} in x1 and {b.shape[ax]} in x2")
    return ferro.sum(conj(a) * b, dim=ax, dtype=a.dtype)


class EighResult(NamedTuple):
    """``eigh``'s result."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    """``qr``'s result."""

    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    """``slogdet``'s result."""

    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    """``svd``'s result."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def cholesky(x: Tensor, /, *, upper: builtins_bool = False) -> Tensor:
    """The Cholesky factor of symmetric (Hermitian) positive-definite matrices."""
    return _fl.cholesky(check_array(x, "cholesky"), upper=upper)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis``."""
    a, b = promote(check_array(x1, "cross", "x1"), check_array(x2, "cross", "x2"), "cross")
    n = max(a.ndim, b.ndim)
    ax = one_axis(axis, n, "cross") - n
    if a.shape[ax] != 3 or b.shape[ax] != 3:
        raise ValueError(f"cross: axis {axis} must have size 3, got {a.shape[ax]} and {b.shape[ax]}")
    return _fl.cross(a, b, dim=ax)


def det(x: Tensor, /) -> Tensor:
    """The determinant of each square matrix."""
    return _fl.det(check_array(x, "det"))


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of each matrix (last two axes)."""
    return ferro.diagonal(check_array(x, "diagonal"), offset, -2, -1)


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric (Hermitian) matrices."""
    w, v = _fl.eigh(check_array(x, "eigh"))
    return EighResult(w, v)


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of symmetric (Hermitian) matrices."""
    return _fl.eigvalsh(check_array(x, "eigvalsh"))


def inv(x: Tensor, /) -> Tensor:
    """The inverse of each square matrix."""
    return _fl.inv(check_array(x, "inv"))


def matrix_norm(x: Tensor, /, *, keepdims: builtins_bool = False,
                ord: int | float | Literal["fro", "nuc"] | None = "fro") -> Tensor:
    """A matrix norm of each matrix (``'fro'``, ``'nuc'``, ``1``, ``2``, ``inf`` and their negatives)."""
    check_array(x, "matrix_norm")
    if ord in ("nuc", 2, -2):  # from the (real) singular values, also of complex matrices
        s = svdvals(x)
        out = ferro.sum(s, dim=-1) if ord == "nuc" else ferro.amax(s, dim=-1) if ord == 2 else ferro.amin(s, dim=-1)
        return out.reshape((*x.shape[:-2], 1, 1)) if keepdims else out
    return real(_fl.matrix_norm(x, ord="fro" if ord is None else ord, keepdim=keepdims))


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """``x`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse; 0: the identity)."""
    check_array(x, "matrix_power")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: expected square matrices, got shape {tuple(x.shape)}")
    if n == 0:
        eye = ferro.eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return ferro.broadcast_to(eye, tuple(x.shape)).clone()
    base = inv(x) if n < 0 else x
    n = abs(n)
    out = None
    while n:  # binary powering: log2(n) products
        if n & 1:
            out = base if out is None else ferro.matmul(out, base)
        n >>= 1
        if n:
            base = ferro.matmul(base, base)
    return out.clone() if out is x else out  # type: ignore[union-attr]


def _rtol(x: Tensor, rtol: float | Tensor | None, s: Tensor) -> Tensor:
    if rtol is None:
        from ._dtypes import finfo, real_dtype
        rtol = max(x.shape[-2:]) * finfo(real_dtype(x.dtype)).eps
    if isinstance(rtol, Tensor):
        rtol = rtol.to(s.dtype)[..., None]
    return ferro.amax(s, dim=-1, keepdim=True) * rtol


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The number of singular values above ``rtol`` times the largest, per matrix."""
    check_array(x, "matrix_rank")
    if x.ndim < 2:
        raise ValueError(f"matrix_rank: expected at least 2 dimensions, got shape {tuple(x.shape)}")
    s = svdvals(x)
    if s.shape[-1] == 0:
        return ferro.zeros(tuple(x.shape[:-2]), dtype=_d.int64, device=x.device)
    return ferro.sum(ferro.gt(s, _rtol(x, rtol, s)), dim=-1, dtype=_d.int64)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two vectors."""
    a, b = promote(check_array(x1, "outer", "x1"), check_array(x2, "outer", "x2"), "outer")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: expected 1-d arrays, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return ferro.outer(a, b)


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (singular values below ``rtol`` times the largest count as 0)."""
    check_array(x, "pinv")
    if rtol is None:
        return _fl.pinv(x)
    u, s, vh = svd(x, full_matrices=False)
    cut = _rtol(x, rtol, s)
    sinv = ferro.where(ferro.gt(s, cut), 1 / ferro.where(ferro.gt(s, cut), s, ferro.ones_like(s)), ferro.zeros_like(s))
    return ferro.matmul(conj(vh).mT * sinv.to(x.dtype)[..., None, :], conj(u).mT)


def qr(x: Tensor, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition of each matrix."""
    q, r = _fl.qr(check_array(x, "qr"), mode=mode)
    return QRResult(q, r)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and the log of the absolute value of each determinant."""
    s, la = _fl.slogdet(check_array(x, "slogdet"))
    return SlogdetResult(s, real(la))


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution ``X`` of ``x1 @ X = x2`` (``x2`` a vector where 1-d)."""
    a, b = promote(check_array(x1, "solve", "x1"), check_array(x2, "solve", "x2"), "solve")
    if b.ndim >= 2:  # stacks of matrices: broadcast the batch dimensions here, as the standard says
        from ._manipulation import broadcast_shapes
        batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
        a = ferro.broadcast_to(a, (*batch, *a.shape[-2:]))
        b = ferro.broadcast_to(b, (*batch, *b.shape[-2:]))
    return _fl.solve(a, b)


def svd(x: Tensor, /, *, full_matrices: builtins_bool = True) -> SVDResult:
    """The singular value decomposition ``U @ diag(S) @ Vh`` of each matrix."""
    u, s, vh = _fl.svd(check_array(x, "svd"), full_matrices=full_matrices)
    return SVDResult(u, real(s), vh)


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values (descending) of each matrix."""
    return real(_fl.svdvals(check_array(x, "svdvals")))


def trace(x: Tensor, /, *, offset: int = 0, dtype: DType | None = None) -> Tensor:
    """The sum of the ``offset`` diagonal of each matrix (integers accumulate in int64)."""
    d = diagonal(x, offset=offset)
    from ._statistical import sum as _sum
    return _sum(d, axis=-1, dtype=dtype)


def vector_norm(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: builtins_bool = False,
                ord: int | float = 2) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (all elements if None)."""
    check_array(x, "vector_norm")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    if axis is None:
        out = real(_fl.vector_norm(x.reshape(-1), ord=ord, dim=0))
        return out.reshape((1,) * x.ndim) if keepdims else out
    out = real(_fl.vector_norm(x, ord=ord, dim=axes))
    return out.reshape(keep_shape(tuple(x.shape), axes)) if keepdims else out


_LINALG = (cholesky, cross, det, diagonal, eigh, eigvalsh, inv, matmul, matrix_norm, matrix_power, matrix_rank,
           matrix_transpose, outer, pinv, qr, slogdet, solve, svd, svdvals, tensordot, trace, vecdot, vector_norm)

#: The ``linalg`` extension, ``xp.linalg``.
linalg = types.ModuleType("ferro.array_api.linalg", "The array API standard's linalg extension over ferro.linalg.")
for _f in _LINALG:
    setattr(linalg, _f.__name__, _f)
linalg.__all__ = [f.__name__ for f in _LINALG]  # type: ignore[attr-defined]

