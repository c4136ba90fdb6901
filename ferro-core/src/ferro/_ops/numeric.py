"""Small numeric ops PyTorch users reach for, written in ops: ``deg2rad`` / ``rad2deg``, ``logit``,
``aminmax``, ``diff``, ``nansum`` / ``nanmean``, ``normalize`` (``nn.functional.normalize``), and the rest of
PyTorch's small tensor functions: ``renorm``, ``gradient``, ``vander``, ``combinations``, ``unravel_index``,
``cross``, ``adjoint``, ``fill``, ``nonzero_static``."""

from __future__ import annotations

import itertools
import math
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .._core.dtypes import get_default_dtype, int64
from .._core.records import register_composites
from .._core.tensor import Tensor, _wrap_dim
from .._creation import arange, full, full_like, tensor
from ..errors import ShapeError
from ._rules import check_rule
from .elementwise import where
from .linalg_ext import FUNCTIONS as _LINALG
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


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to ``maxnorm``."""
    check_rule("renorm", input)
    if input.ndim < 2:
        raise ShapeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise ValueError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise ValueError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _wrap_dim(dim, input.ndim, "renorm")
    others = [i for i in range(input.ndim) if i != d]
    norm = input.abs().pow(p).sum(others, keepdim=True).pow(1 / p) if p != math.inf else \
        input.abs().amax(others, keepdim=True)
    return input * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def _coordinates(spacing: Any, n: int, ref: Tensor, name: str) -> Tensor:
    if isinstance(spacing, Tensor):
        if spacing.ndim != 1 or spacing.numel() != n:
            raise ShapeError(f"{name}: expected each tensor of spacing to be 1-D with the size of its dimension "
                             f"({n}), got shape {list(spacing.shape)}")
        return spacing.to(ref.dtype)
    return arange(n, dtype=ref.dtype, device=ref.device) * spacing


def _gradient_along(f: Tensor, x: Tensor, d: int, edge_order: int) -> Tensor:
    n = f.shape[d]
    shape = [1] * f.ndim
    shape[d] = -1

    def at(t: Tensor, start: int, length: int) -> Tensor:
        return t.narrow(0 if t is x else d, start, length)

    def col(t: Tensor) -> Tensor:
        return t.reshape(shape)
    dx = x[1:] - x[:-1]
    a_dx, b_dx = dx[:-1], dx[1:]  # the steps below and above each interior point
    inner = (col(-b_dx / (a_dx * (a_dx + b_dx))) * at(f, 0, n - 2)
             + col((b_dx - a_dx) / (a_dx * b_dx)) * at(f, 1, n - 2)
             + col(a_dx / (b_dx * (a_dx + b_dx))) * at(f, 2, n - 2))
    if edge_order == 1:
        first = (at(f, 1, 1) - at(f, 0, 1)) / col(dx[:1])
        last = (at(f, n - 1, 1) - at(f, n - 2, 1)) / col(dx[-1:])
    else:
        d1, d2 = col(dx[:1]), col(dx[1:2])
        first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * at(f, 0, 1) + (d1 + d2) / (d1 * d2) * at(f, 1, 1)
                 - d1 / (d2 * (d1 + d2)) * at(f, 2, 1))
        d1, d2 = col(dx[-2:-1]), col(dx[-1:])
        last = (d2 / (d1 * (d1 + d2)) * at(f, n - 3, 1) - (d1 + d2) / (d1 * d2) * at(f, n - 2, 1)
                + (2 * d2 + d1) / (d2 * (d1 + d2)) * at(f, n - 1, 1))
    return cat([first, inner, last], d)


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """The derivative of the samples ``input`` along each of ``dim`` (every dimension by default) by central
    differences inside and one-sided differences of order ``edge_order`` (1 or 2) at the ends. ``spacing``: the
    step (one number, or one per dimension) or each dimension's sample coordinates (1-D tensors)."""
    check_rule("gradient", input)
    if edge_order not in (1, 2):
        raise ValueError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.ndim, "gradient") for d in dims]
    steps = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(steps) != len(dims):
        raise ValueError(f"torch.gradient expected spacing to be unspecified, a scalar or a list of length "
                         f"{len(dims)} (one per dimension), got a list of length {len(steps)}")
    f = input if (input.dtype.is_floating_point or input.dtype.is_complex) else input.to(get_default_dtype())
    out = []
    for d, step in zip(dims, steps):
        n = f.shape[d]
        if n < edge_order + 1:
            raise ShapeError(f"torch.gradient expected each dimension size to be at least edge_order+1, got size {n} "
                             f"along dim {d}")
        out.append(_gradient_along(f, _coordinates(step, n, f, "gradient"), d, edge_order))
    return tuple(out)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** (N - 1) ... x ** 0`` (ascending with
    ``increasing``)."""
    check_rule("vander", x)
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be a one-dimensional tensor, got shape {list(x.shape)}")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    powers = arange(n, device=x.device)
    if not increasing:
        powers = powers.flip(0)
    base = x if x.dtype.kind in "fc" or x.dtype.kind in "iu" else x.to(int64)
    return base.unsqueeze(-1) ** powers.to(base.dtype)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the 1-D ``input``'s elements, one per row (as ``itertools``)."""
    check_rule("combinations", input)
    if input.ndim != 1:
        raise ShapeError(f"combinations: expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise ValueError(f"combinations: expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input.new_empty((0, r))
    idx = tensor(rows, dtype=int64, device=input.device)
    return input[idx.reshape(-1)].reshape(len(rows), r)


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (negative ones count from the end)."""
    idx = indices if isinstance(indices, Tensor) else tensor(indices)
    check_rule("unravel_index", idx)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    total = math.prod(dims)
    idx = idx.to(int64)
    if idx.numel() and bool(((idx < -total).logical_or(idx >= total)).any()):
        raise IndexError(f"unravel_index: 'indices' must be in the range [-{total}, {total - 1}] for shape {dims}")
    flat = where(idx < 0, idx + total, idx)
    out = []
    for size in reversed(dims):
        out.append(flat.remainder(size) if size else flat * 0)
        flat = flat // size if size else flat
    return tuple(reversed(out))


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (None: the first dimension of size 3)."""
    check_rule("cross", input, other)
    if dim is None:
        shape = (input * 0 + other * 0).shape if input.shape != other.shape else input.shape
        sizes = [i for i, n in enumerate(shape) if n == 3]
        if not sizes:
            raise ShapeError(f"cross: no dimension of size 3 in input (shapes {list(input.shape)} and "
                             f"{list(other.shape)})")
        dim = sizes[0] - len(shape)  # from the end: the operands may have fewer dimensions than their broadcast
    return _LINALG["cross"](input, other, dim=dim)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (a view)."""
    if input.ndim < 2:
        raise ShapeError(f"adjoint: tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                         f"{input.ndim}-D tensor.")
    t = input.transpose(-2, -1)
    return t.conj() if t.dtype.is_complex else t


def fill(input: Tensor, value: Any) -> Tensor:
    """A tensor like ``input`` filled with ``value`` (a number, or a 0-d tensor that receives the gradient)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} "
                             "dimensions.")
        return value.to(input.dtype).expand(input.shape).clone()
    return full_like(input, value)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """The indices of the nonzero elements (as ``nonzero``), truncated or padded with ``fill_value`` to ``size``
    rows."""
    if size < 0:
        raise ValueError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    idx = input.nonzero()
    n = idx.shape[0]
    if n >= size:
        return idx[:size]
    pad = full((size - n, input.ndim), fill_value, dtype=int64, device=input.device)
    return cat([idx, pad], 0)


#: (name, function, the ops it uses, dtype rule)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...], str]] = [
    ("deg2rad", deg2rad, ("mul",), "real_float"), ("rad2deg", rad2deg, ("mul",), "real_float"),
    ("logit", logit, ("clamp", "sub", "div", "log"), "real_float"), ("aminmax", aminmax, ("amin", "amax"), "real"),
    ("diff", diff, ("cat", "narrow", "sub"), "numeric"), ("nansum", nansum, ("isnan", "where", "sum"), "numeric"),
    ("nanmean", nanmean, ("isnan", "logical_not", "where", "sum", "div"), "real_floating"),
    ("renorm", renorm, (), "floating"), ("cross", cross, (), "floating"), ("adjoint", adjoint, (), "same"),
    ("nonzero_static", nonzero_static, (), "same"),
    # functions only (not Tensor methods), as in PyTorch
    ("gradient", gradient, (), "numeric"), ("vander", vander, (), "numeric"), ("fill", fill, (), "same"),
    ("combinations", combinations, (), "same"), ("unravel_index", unravel_index, (), "integer"),
]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: fn for row in _ROWS
    for name, fn in register_composites("elementwise", [row[:3]], dtype_rule=row[3]).items()}
#: Ops that are also Tensor methods.
METHODS: list[str] = [n for n in FUNCTIONS if n not in ("gradient", "vander", "fill", "combinations", "unravel_index")]
#: Ops with an in-place method.
INPLACE: list[str] = ["deg2rad", "rad2deg", "logit", "renorm"]
#: ``nn.functional`` ops.
NN_FUNCTIONS: dict[str, Callable[..., Any]] = register_composites("nn", [
    ("normalize", normalize, ("norm", "clamp", "div"))], dtype_rule="real_floating")
