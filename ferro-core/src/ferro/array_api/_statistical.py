"""The standard's statistical and utility reductions over ferro's (``sum``, ``amax``, ``var``, ``all``...).

Reductions over an empty axis tuple return the input (cast as the function
says); reductions over every axis of a 0-d array are the array itself.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from .. import _api as ferro
from .._core import dtypes as _d
from .._core.dtypes import DType
from .._core.tensor import Tensor
from ._axes import keep_shape, normalize_axes, one_axis
from ._dtypes import builtins_bool, check_array

__all__ = ["max", "min", "mean", "prod", "sum", "std", "var", "cumulative_sum", "cumulative_prod", "all", "any",
           "diff"]


def _reduce(fn: str, x: Tensor, axis: Any, keepdims: builtins_bool,
            op: Callable[[Tensor, tuple[int, ...]], Tensor], empty: Callable[[Tensor], Tensor]) -> Tensor:
    check_array(x, fn)
    axes = normalize_axes(axis, x.ndim, fn)
    if not axes:
        return empty(x)
    out = op(x, axes)
    return out.reshape(keep_shape(tuple(x.shape), axes)) if keepdims else out


def _identity_reduction(name: str, ferro_op: Callable[..., Tensor], doc: str) -> Callable[..., Tensor]:
    def fn(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: builtins_bool = False) -> Tensor:
        if check_array(x, name).numel() == 0 and (axis is None or any(x.shape[a] == 0 for a in
                                                                       normalize_axes(axis, x.ndim, name))):
            raise ValueError(f"{name}: zero-size reduction has no identity")
        return _reduce(name, x, axis, keepdims, lambda t, ax: ferro_op(t, dim=ax), lambda t: ferro.clone(t))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


max = _identity_reduction("max", ferro.amax, "The largest element along ``axis`` (NaN propagates).")
min = _identity_reduction("min", ferro.amin, "The smallest element along ``axis`` (NaN propagates).")


def _sum_dtype(x: Tensor, dtype: DType | None) -> DType:
    if dtype is not None:
        return dtype
    if x.dtype.kind in "bi":
        return _d.int64
    return x.dtype


def sum(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None,
        keepdims: builtins_bool = False) -> Tensor:
    """The sum along ``axis`` (signed integers and bool accumulate in int64, unsigned in their own dtype)."""
    dt = _sum_dtype(check_array(x, "sum"), dtype)
    return _reduce("sum", x, axis, keepdims, lambda t, ax: ferro.sum(t, dim=ax, dtype=dt), lambda t: t.to(dt).clone())


def prod(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None,
         keepdims: builtins_bool = False) -> Tensor:
    """The product along ``axis`` (integers accumulate as :func:`sum`)."""
    dt = _sum_dtype(check_array(x, "prod"), dtype)

    def op(t: Tensor, ax: tuple[int, ...]) -> Tensor:
        for a in sorted(ax, reverse=True):  # ferro.prod reduces one dim at a time, as torch.prod
            t = ferro.prod(t, dim=a, dtype=dt)
        return t.to(dt)  # ferro (as PyTorch before 2.x) multiplies integers in int64 whatever dtype says
    return _reduce("prod", x, axis, keepdims, op, lambda t: t.to(dt).clone())


def mean(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: builtins_bool = False) -> Tensor:
    """The arithmetic mean along ``axis`` (floating arrays)."""
    return _reduce("mean", x, axis, keepdims, lambda t, ax: ferro.mean(t, dim=ax), lambda t: t.clone())


def _moment(name: str, op: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def fn(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0,
           keepdims: builtins_bool = False) -> Tensor:
        return _reduce(name, x, axis, keepdims, lambda t, ax: op(t, dim=ax, correction=correction),
                       lambda t: (t - t) / (1 - correction))  # one sample each: 0, NaN where not finite
    fn.__name__ = fn.__qualname__ = name
    return fn


std = _moment("std", ferro.std)
std.__doc__ = "The standard deviation along ``axis`` with ``correction`` degrees of freedom removed (0: population)."
var = _moment("var", ferro.var)
var.__doc__ = "The variance along ``axis`` with ``correction`` degrees of freedom removed (0: population)."


def _scan_axis(x: Tensor, axis: int | None, fn: str) -> int:
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fn}: axis is required for arrays of more than one dimension")
        return 0
    return one_axis(axis, x.ndim, fn)


def _cumulative(name: str, op: Callable[..., Tensor], initial: int) -> Callable[..., Tensor]:
    def fn(x: Tensor, /, *, axis: int | None = None, dtype: DType | None = None,
           include_initial: builtins_bool = False) -> Tensor:
        check_array(x, name)
        if x.ndim == 0:
            raise ValueError(f"{name}: expected an array of at least one dimension")
        ax = _scan_axis(x, axis, name)
        dt = _sum_dtype(x, dtype)
        out = op(x, ax, dtype=dt).to(dt) if x.shape[ax] else x.to(dt).clone()  # ferro scans integers in int64
        if include_initial:
            shape = list(x.shape)
            shape[ax] = 1
            out = ferro.cat([ferro.full(shape, initial, dtype=dt, device=x.device), out], dim=ax)
        return out
    fn.__name__ = fn.__qualname__ = name
    return fn


cumulative_sum = _cumulative("cumulative_sum", ferro.cumsum, 0)
cumulative_sum.__doc__ = "The running sum along ``axis`` (with a leading 0 if ``include_initial``)."
cumulative_prod = _cumulative("cumulative_prod", ferro.cumprod, 1)
cumulative_prod.__doc__ = "The running product along ``axis`` (with a leading 1 if ``include_initial``)."


def all(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: builtins_bool = False) -> Tensor:
    """Whether every element along ``axis`` is true (non-zero)."""
    return _reduce("all", x, axis, keepdims, lambda t, ax: ferro.all(t, dim=ax), lambda t: t.to(_d.bool_).clone())


def any(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: builtins_bool = False) -> Tensor:
    """Whether any element along ``axis`` is true (non-zero)."""
    return _reduce("any", x, axis, keepdims, lambda t, ax: ferro.any(t, dim=ax), lambda t: t.to(_d.bool_).clone())


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``axis`` (``prepend``/``append`` joined first)."""
    check_array(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: expected an array of at least one dimension")
    ax = one_axis(axis, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        from ._manipulation import concat
        x = concat(parts, axis=ax)
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    for _ in range(n):
        m = x.shape[ax]
        k = builtins.max(m - 1, 0)
        hi, lo = x.narrow(ax, 1, k), x.narrow(ax, 0, k)
        x = ferro.logical_xor(hi, lo) if x.dtype is _d.bool_ else hi - lo
    return x
