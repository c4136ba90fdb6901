"""The few matrix routines the multivariate distributions need (Cholesky factor, triangular solve, log
determinant), run by ``ferro.linalg`` where the tensor's backend has the kernel and otherwise composed of
matmuls and elementwise ops column by column (``n`` steps for an ``n x n`` matrix), so that they run, with
gradients, on every backend."""

from __future__ import annotations

from .. import _api as api
from .. import backends, linalg
from .._api import Tensor

__all__ = ["cholesky", "cholesky_inverse", "is_positive_definite", "logdet_pd", "solve_lower"]


def _native(op: str, x: Tensor) -> bool:
    """Whether ``x``'s backend runs ``op`` itself."""
    return backends.get(x.device.type).supports(op, x.dtype, x.device.index)


def cholesky(a: Tensor) -> Tensor:
    """The lower Cholesky factor of the positive-definite matrices ``a`` (last two dims)."""
    if _native("linalg.cholesky", a):
        return linalg.cholesky(a)
    return _composed_cholesky(a)


def _composed_cholesky(a: Tensor) -> Tensor:
    """Cholesky-Crout, one column per step; a matrix that is not positive definite gets NaN on the
    diagonal instead of an error."""
    n = a.shape[-1]
    rows = api.arange(n, device=a.device)
    cols: list[Tensor] = []
    for j in range(n):
        v = a[..., :, j]
        if cols:
            done = api.stack(cols, -1)  # (..., n, j)
            v = v - (done @ done[..., j, :].unsqueeze(-1)).squeeze(-1)
        d = v[..., j:j + 1].sqrt()
        cols.append(api.where(rows >= j, v / d, 0.0))
    return api.stack(cols, -1)


def solve_lower(lower: Tensor, b: Tensor) -> Tensor:
    """``X`` with ``lower @ X = b`` for lower-triangular ``lower`` (``b``'s last two dims are ``n x k``)."""
    if _native("linalg.solve_triangular", lower):
        return linalg.solve_triangular(lower, b, upper=False)
    n = lower.shape[-1]
    xs: list[Tensor] = []
    for i in range(n):
        r = b[..., i, :]
        if xs:
            done = api.stack(xs, -2)  # (..., i, k)
            r = r - (lower[..., i:i + 1, :i] @ done).squeeze(-2)
        xs.append(r / lower[..., i, i:i + 1])
    return api.stack(xs, -2)


def cholesky_inverse(lower: Tensor) -> Tensor:
    """``(L L^T)^-1`` from the Cholesky factor ``L``."""
    eye = api.eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
    inv = solve_lower(lower, eye.expand(lower.shape))
    return inv.transpose(-2, -1) @ inv


def logdet_pd(a: Tensor) -> Tensor:
    """``log det a`` of positive-definite matrices, from their Cholesky factor."""
    return 2 * cholesky(a).diagonal(dim1=-2, dim2=-1).log().sum(-1)


def is_positive_definite(a: Tensor) -> Tensor:
    """True for each positive-definite matrix of ``a`` (its Cholesky factorization succeeds)."""
    with api.no_grad():
        diag = _composed_cholesky(a.detach()).diagonal(dim1=-2, dim2=-1)
        return (diag > 0).all(-1)
