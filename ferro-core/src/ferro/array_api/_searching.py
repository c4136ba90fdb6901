"""The standard's searching and sorting functions over ferro's (``argmax``, ``nonzero``, ``sort``...)."""

from __future__ import annotations

from typing import Any

from .. import _api as ferro
from .._core import dtypes as _d
from .._core.tensor import Tensor
from ._axes import keep_shape, normalize_axes, one_axis
from ._dtypes import builtins_bool, check_array, promote

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where", "argsort", "sort"]


def _arg(name: str, op: Any, x: Tensor, axis: int | None, keepdims: builtins_bool) -> Tensor:
    check_array(x, name)
    if x.numel() == 0:
        raise ValueError(f"{name}: empty array has no {name[3:]}")
    if axis is None:
        out = op(x.reshape(-1), dim=0)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return op(x, dim=one_axis(axis, x.ndim, name), keepdim=keepdims)


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: builtins_bool = False) -> Tensor:
    """The index of the first largest element (flattened if ``axis`` is None), as int64."""
    return _arg("argmax", ferro.argmax, x, axis, keepdims)


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: builtins_bool = False) -> Tensor:
    """The index of the first smallest element (flattened if ``axis`` is None), as int64."""
    return _arg("argmin", ferro.argmin, x, axis, keepdims)


def count_nonzero(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None,
                  keepdims: builtins_bool = False) -> Tensor:
    """The number of non-zero elements along ``axis``, as int64."""
    check_array(x, "count_nonzero")
    axes = normalize_axes(axis, x.ndim, "count_nonzero")
    nz = ferro.ne(x, 0) if x.dtype is not _d.bool_ else x
    if not axes:
        return nz.to(_d.int64)
    out = ferro.sum(nz, dim=axes, dtype=_d.int64)
    return out.reshape(keep_shape(tuple(x.shape), axes)) if keepdims else out


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the non-zero elements, one int64 array per axis."""
    check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: 0-d arrays are not allowed by the standard; reshape to 1-d first")
    return tuple(ferro.nonzero(x, as_tuple=True))


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left", sorter: Tensor | None = None) -> Tensor:
    """Where to insert ``x2``'s elements into the sorted 1-d ``x1`` to keep it sorted."""
    check_array(x1, "searchsorted", "x1")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-d, got shape {tuple(x1.shape)}")
    if sorter is not None:
        x1 = ferro.take(x1, sorter)
    a, b = promote(x1, x2, "searchsorted")
    if b.ndim == 0:
        return ferro.searchsorted(a, b.reshape(1), side=side).reshape(())
    return ferro.searchsorted(a, b, side=side)


def where(condition: Tensor, x1: Tensor | complex, x2: Tensor | complex, /) -> Tensor:
    """Elements of ``x1`` where ``condition`` is true, else of ``x2`` (promoted together)."""
    check_array(condition, "where", "condition")
    a, b = promote(x1, x2, "where")
    return ferro.where(condition, a, b)


def argsort(x: Tensor, /, *, axis: int = -1, descending: builtins_bool = False, stable: builtins_bool = True) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (stable: ties keep their order, also when descending)."""
    check_array(x, "argsort")
    if x.ndim == 0:
        return ferro.zeros((), dtype=_d.int64, device=x.device)
    ax = one_axis(axis, x.ndim, "argsort")
    if not descending:
        return ferro.argsort(x, dim=ax, stable=stable)
    # A stable descending sort: sort the reversed array ascending, then reverse and map back, so ties
    # keep their original order (torch's descending=True does not promise that).
    n = x.shape[ax]
    rev = ferro.argsort(ferro.flip(x, [ax]), dim=ax, stable=True)
    return (n - 1) - ferro.flip(rev, [ax])


def sort(x: Tensor, /, *, axis: int = -1, descending: builtins_bool = False, stable: builtins_bool = True) -> Tensor:
    """``x`` sorted along ``axis`` (NaNs last)."""
    check_array(x, "sort")
    if x.ndim == 0:
        return x.clone()
    ax = one_axis(axis, x.ndim, "sort")
    return ferro.take_along_dim(x, argsort(x, axis=ax, descending=descending, stable=stable), dim=ax)
