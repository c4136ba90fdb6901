"""Norms and distances with PyTorch's full signatures: ``ferro.linalg.norm`` and ``ferro.cdist``.

``linalg.norm`` picks a vector or a matrix norm from ``ord`` and ``dim`` as ``torch.linalg.norm`` does and
runs the registry ops ``linalg.vector_norm`` / ``linalg.matrix_norm``; ``cdist`` checks its arguments and
runs ``linalg.cdist``. Both are plain functions over those ops (their gradients are the ops'), not registry
ops of their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import as_dtype
from .._core.naming import names_errors
from .._core.tensor import Tensor, _wrap_dim
from ..errors import ShapeError
from .linalg_ext import FUNCTIONS as _LINALG

__all__ = ["norm", "cdist", "FUNCTIONS", "LINALG_FUNCTIONS"]

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def norm(A: Tensor, ord: Any = None, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """A vector or matrix norm, as ``torch.linalg.norm``: over ``dim`` (one dim: a vector norm, two: a matrix
    norm); without ``dim``, the 2-norm of all elements when ``ord`` is None, else the vector norm of a 1-D
    or the matrix norm of a 2-D ``A``. ``ord``: a number, ``inf``, ``-inf``, or ``'fro'`` / ``'nuc'``
    (matrices)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.norm(): argument 'A' must be a Tensor, not {type(A).__name__}")
    if dtype is not None:
        A = A.to(as_dtype(dtype, "linalg.norm"))
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise ValueError(f"linalg.norm: ord must be a number, inf, -inf, 'fro' or 'nuc', got {ord!r}")
    if dim is None:
        if ord is None:
            return _LINALG["vector_norm"](A, 2, None, keepdim)
        if A.ndim not in (1, 2):
            raise ShapeError(f"linalg.norm: with ord and no dim, the input must be 1-D or 2-D, got shape "
                             f"{list(A.shape)}")
        dims: tuple[int, ...] = tuple(range(A.ndim))
    else:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dims) == 1:
        if isinstance(ord, str):
            raise ValueError(f"linalg.norm: ord {ord!r} is a matrix norm and needs two dims, got dim={dim!r}")
        return _LINALG["vector_norm"](A, 2 if ord is None else ord, dims[0], keepdim)
    if len(dims) == 2:
        d0, d1 = (_wrap_dim(d, A.ndim, "linalg.norm") for d in dims)
        if d0 == d1:
            raise ShapeError(f"linalg.norm: dims must be two different dims, got {list(dims)}")
        if ord is not None and ord not in _MATRIX_ORDS:
            raise ValueError(f"linalg.norm: the matrix norm takes ord 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, "
                             f"got {ord!r}")
        return _LINALG["matrix_norm"](A, "fro" if ord is None else ord, (d0, d1), keepdim)
    raise ShapeError(f"linalg.norm: dim must be one dim (a vector norm) or two (a matrix norm), got {dim!r}")


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = _COMPUTE_MODES[0]) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M): a tensor of
    (..., P, R), batch dims broadcast. ``compute_mode`` is accepted for PyTorch's signature; the distances
    are always computed from the differences (exact, with PyTorch's zero gradient at zero distance)."""
    for arg, t in (("x1", x1), ("x2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cdist(): argument '{arg}' must be a Tensor, not {type(t).__name__}")
        if t.ndim < 2:
            raise ShapeError(f"cdist: {arg} must have at least 2 dims (..., rows, features), got shape "
                             f"{list(t.shape)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: x1 {list(x1.shape)} and x2 {list(x2.shape)} must have the same number of "
                         f"features (last dim)")
    if not isinstance(p, (int, float)) or isinstance(p, bool) or p < 0:
        raise ValueError(f"cdist: p must be a number >= 0, got {p!r}")
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"cdist: compute_mode must be one of {list(_COMPUTE_MODES)}, got {compute_mode!r}")
    return _LINALG["cdist"](x1, x2, p)


#: Top-level functions (``ferro.cdist``).
FUNCTIONS: dict[str, Callable[..., Any]] = {"cdist": names_errors("cdist", cdist)}
#: Functions of ``ferro.linalg`` (``ferro.linalg.norm``).
LINALG_FUNCTIONS: dict[str, Callable[..., Any]] = {"norm": names_errors("linalg.norm", norm)}
