"""Small numeric ops PyTorch users reach for, written in ops: ``deg2rad`` / ``rad2deg``, ``logit``,
``aminmax``, ``diff``, ``nansum`` / ``nanmean``, and ``normalize`` (``nn.functional.normalize``)."""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .._core.dtypes import get_default_dtype
from .._core.records import register_composites
from .._core.tensor import Tensor, _wrap_dim
from ..errors import ShapeError
from ._rules import check_rule
from .elementwise import where
from .shape import cat

__all__ = ["FUNCTIONS", "METHODS", "INPLACE", "NN_FUNCTIONS", "AminmaxResult"]

#: What ``aminmax`` returns: ``(min, max)``, as ``torch.return_types.aminmax``.
AminmaxResult = namedtuple("AminmaxResult", ["min", "max"])


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (integers give the default float dtype)."""
    check_rule("deg2rad", input)
    return input * (math.pi / 180)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees (integers give the default float dtype)."""
    check_rule("rad2deg", input)
    return input * (180 / math.pi)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    check_rule("logit", input)
    if not input._dtype.is_floating_point:
        input = input.to(get_default_dtype())
    p = input if eps is None else input.clamp(min=eps, max=1 - eps)
    return (p / (1 - p)).log()


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> AminmaxResult:
    """The minimum and maximum (of all elements, or along ``dim``), as ``(min, max)``."""
    check_rule("aminmax", input)
    if input.numel() == 0 and (dim is None or input.shape[_wrap_dim(dim, input.ndim, "aminmax")] == 0):
        raise ShapeError(f"aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                         f"identity (shape {list(input.shape)})")
    if dim is None:
        dims = tuple(range(input.ndim))
        return AminmaxResult(input.amin(dims, keepdim), input.amax(dims, keepdim))
    return AminmaxResult(input.amin(dim, keepdim), input.amax(dim, keepdim))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``prepend`` / ``append`` joined first)."""
    check_rule("diff", input)
    if input.ndim == 0:
        raise ShapeError("diff: expected the input to be at least one-dimensional")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim, "diff")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat([p if p.ndim else p.expand((*input.shape[:d], 1, *input.shape[d + 1:])) for p in parts], d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi - lo
    return x


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum, NaN counted as zero."""
    check_rule("nansum", input)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        return input.sum(dim, keepdim=keepdim, dtype=dtype)
    return where(input.isnan(), 0, input).sum(dim, keepdim=keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of the values that are not NaN (NaN where all are)."""
    check_rule("nanmean", input)
    kept = ~input.isnan()
    total = where(kept, input, 0).sum(dim, keepdim=keepdim, dtype=dtype)
    return total / kept.sum(dim, keepdim=keepdim).to(total.dtype)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim``, the norm kept at least ``eps``."""
    check_rule("normalize", input)
    if out is not None:
        raise TypeError("normalize(): out= is not supported; assign the result")
    norm = input.norm(p, dim, keepdim=True) if input.ndim else input.abs()
    return input / norm.clamp(min=eps).expand_as(input)


#: (name, function, the ops it uses, dtype rule)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...], str]] = [
    ("deg2rad", deg2rad, ("mul",), "real_float"), ("rad2deg", rad2deg, ("mul",), "real_float"),
    ("logit", logit, ("clamp", "sub", "div", "log"), "real_float"), ("aminmax", aminmax, ("amin", "amax"), "real"),
    ("diff", diff, ("cat", "narrow", "sub"), "numeric"), ("nansum", nansum, ("isnan", "where", "sum"), "numeric"),
    ("nanmean", nanmean, ("isnan", "logical_not", "where", "sum", "div"), "real_floating"),
]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: fn for row in _ROWS
    for name, fn in register_composites("elementwise", [row[:3]], dtype_rule=row[3]).items()}
#: Ops that are also Tensor methods.
METHODS: list[str] = list(FUNCTIONS)
#: Ops with an in-place method.
INPLACE: list[str] = ["deg2rad", "rad2deg", "logit"]
#: ``nn.functional`` ops.
NN_FUNCTIONS: dict[str, Callable[..., Any]] = register_composites("nn", [
    ("normalize", normalize, ("norm", "clamp", "div"))], dtype_rule="real_floating")
