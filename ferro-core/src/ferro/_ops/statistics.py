"""Statistics and sequence helpers of PyTorch, written in ops: ``std_mean`` / ``var_mean``, ``cov``,
``corrcoef``, ``dist``, ``msort``, ``isin``, ``trapezoid`` (``trapz``), ``cumulative_trapezoid``, ``logdet``,
``hsplit`` / ``vsplit`` / ``dsplit``, ``split_with_sizes``, ``block_diag``, ``cartesian_prod``, ``diagflat``,
``argwhere``, ``quantile`` / ``nanquantile`` and ``histogram``."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import bfloat16, bool_, float16, float32, int64
from .._core.records import register_composites
from .._core.tensor import Tensor, _wrap_dim
from .._creation import linspace, zeros
from ..errors import ShapeError
from ._rules import check_rule
from .elementwise import where
from .linalg_ext import FUNCTIONS as _LINALG
from .shape import cat, stack
from .stacking import meshgrid

__all__ = ["FUNCTIONS", "METHODS", "ALIASES", "HistogramResult", "HistogramddResult"]

#: What ``histogram`` returns: ``(hist, bin_edges)``, as ``torch.return_types.histogram``.
HistogramResult = namedtuple("HistogramResult", ["hist", "bin_edges"])
HistogramddResult = namedtuple("HistogramddResult", ["hist", "bin_edges"])
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def std_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim`` (all elements by default)."""
    check_rule("std_mean", input)
    return input.std(dim, correction=correction, keepdim=keepdim), input.mean(dim, keepdim=keepdim)


def var_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim`` (all elements by default)."""
    check_rule("var_mean", input)
    return input.var(dim, correction=correction, keepdim=keepdim), input.mean(dim, keepdim=keepdim)


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (observations in its columns)."""
    check_rule("cov", input)
    if input.ndim > 2:
        raise ShapeError(f"cov(): expected input to have two or fewer dimensions but got an input with {input.ndim} "
                         "dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.float()
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        total = x.shape[1]
        avg = x.mean(1, keepdim=True)
        norm = total - correction
    else:
        total = w.sum()
        avg = (x * w).sum(1, keepdim=True) / total
        norm = total - correction * ((w * aweights.to(x.dtype)).sum() / total if aweights is not None else 1)
    centered = x - avg
    weighted = centered * w if w is not None else centered
    out = weighted @ centered.mT.conj() / norm
    return out.reshape(()) if input.ndim < 2 else out


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the rows (values clipped to [-1, 1], as PyTorch)."""
    check_rule("corrcoef", input)
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    r = c / d.unsqueeze(-1) / d
    return r.clamp(-1, 1) if not r.dtype.is_complex else r


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), over all elements."""
    check_rule("dist", input)
    return (input - other).norm(p)


def msort(input: Tensor) -> Tensor:
    """``input`` sorted along dim 0."""
    check_rule("msort", input)
    return input.sort(0).values


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is in ``test_elements``."""
    check_rule("isin", *(v for v in (elements, test_elements) if isinstance(v, Tensor)))
    e = elements if isinstance(elements, Tensor) else test_elements.new_tensor(elements)
    t = test_elements if isinstance(test_elements, Tensor) else e.new_tensor(test_elements)
    if not t.numel():
        hit = e.new_zeros(e.shape).to(bool_)
    else:
        hit = (e.unsqueeze(-1) == t.reshape(-1)).any(-1)
    return hit.logical_not() if invert else hit


def trapezoid(y: Tensor, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The trapezoid rule along ``dim``: samples ``y`` at points ``x`` (or spaced ``dx``, 1 by default)."""
    check_rule("trapezoid", y)
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    lo, hi = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if x is None:
        return (lo + hi).sum(dim) * ((1.0 if dx is None else dx) / 2)
    spacing = x.diff(dim=dim if x.ndim == y.ndim else -1)
    if x.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[dim] = -1
        spacing = spacing.reshape(shape)
    return ((lo + hi) * spacing).sum(dim) / 2


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The running trapezoid rule along ``dim`` (one fewer element than ``y``)."""
    check_rule("cumulative_trapezoid", y)
    n = y.shape[dim]
    if n == 0:
        return y
    lo, hi = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if x is None:
        return ((lo + hi) * ((1.0 if dx is None else dx) / 2)).cumsum(dim)
    spacing = x.diff(dim=dim if x.ndim == y.ndim else -1)
    if x.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[dim] = -1
        spacing = spacing.reshape(shape)
    return ((lo + hi) * spacing / 2).cumsum(dim)


def logdet(input: Tensor) -> Tensor:
    """``log(det(input))`` of real matrices: NaN for a negative determinant, -inf for a zero one, as PyTorch."""
    check_rule("logdet", input)
    if input.dtype in (float16, bfloat16):  # computed in float32, as slogdet takes it
        return logdet(input.to(float32)).to(input.dtype)
    sign, logabs = _LINALG["slogdet"](input)
    return where(sign < 0, float("nan"), logabs)


def _split_dim(name: str, input: Tensor, sections: Any, dim: int, need: int) -> tuple[Tensor, ...]:
    if input.ndim < need:
        raise ShapeError(f"torch.{name} requires a tensor with at least {need} dimension, but got a tensor with "
                         f"{input.ndim} dimensions!")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise ShapeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                         f"{input.shape[dim]} is not divisible by the split_size {sections}!")
    return input.tensor_split(sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 1 (dim 0 for 1-D tensors)."""
    return _split_dim("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 0 (at least 2-D)."""
    return _split_dim("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along dim 2 (at least 3-D)."""
    return _split_dim("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of the given sizes (they must add up to the dim's size)."""
    if sum(split_sizes) != input.shape[dim]:
        raise ShapeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[dim]} (input tensor's "
                         f"size at dimension {dim}), but got split_sizes={list(split_sizes)}")
    return tuple(input.split(list(split_sizes), dim))


def block_diag(*tensors: Tensor) -> Tensor:
    """The matrices (0-d and 1-D tensors as one row) on the diagonal of one matrix, zeros elsewhere."""
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    for t in mats:
        if t.ndim != 2:
            raise ShapeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has {t.ndim} "
                             "dimensions")
    if not mats:
        raise ValueError("block_diag: expected at least one tensor")
    cols = sum(t.shape[1] for t in mats)
    rows, start = [], 0
    for t in mats:
        left = t.new_zeros(t.shape[0], start)
        right = t.new_zeros(t.shape[0], cols - start - t.shape[1])
        rows.append(cat([left, t, right], 1))
        start += t.shape[1]
    return cat(rows, 0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each 1-D tensor, one per row (one tensor: itself)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"cartesian_prod(): expected Tensors, got {type(t).__name__} at position {i}")
        if t.ndim != 1:
            raise ShapeError(f"cartesian_prod: expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input on the ``offset`` diagonal of a square matrix."""
    return input.reshape(-1).diag(offset)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each (``nonzero``)."""
    return input.nonzero()


def _quantile(name: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              skip_nan: bool) -> Tensor:
    check_rule(name, input)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. Got '{interpolation}'")
    qs = q.to(input.dtype) if isinstance(q, Tensor) else input.new_tensor(q)
    if qs.ndim > 1:
        raise ShapeError(f"{name}() q must be a scalar or 1D tensor, got shape {list(qs.shape)}")
    if qs.numel() and bool(((qs < 0).logical_or(qs > 1)).any()):
        raise ValueError(f"{name}() q values must be in the range [0, 1]")
    if input.numel() == 0 and dim is not None and input.ndim:
        _wrap_dim(dim, input.ndim, name)
    x = input.reshape(-1) if dim is None else input.movedim(_wrap_dim(dim, max(input.ndim, 1), name), -1) \
        if input.ndim else input.reshape(1)
    s = x.sort(-1).values  # NaN sorts last
    nan = s.isnan()
    count = (~nan).sum(-1, keepdim=True).to(input.dtype) if skip_nan else input.new_tensor(float(s.shape[-1]))
    pos = qs.reshape(-1) * (count - 1).clamp(min=0)  # (..., Q): the rank of each quantile
    lo, hi = pos.floor(), pos.ceil()
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = pos.round()
    shape = (*s.shape[:-1], qs.numel())
    last = max(s.shape[-1] - 1, 0)
    take = lambda r: s.gather(-1, r.to(int64).clamp(0, last).expand(shape)) if s.shape[-1] else \
        zeros(shape, dtype=s.dtype, device=s.device) * math.nan
    low, high = take(lo), take(hi)
    if interpolation == "midpoint":
        out = low + (high - low) * 0.5
    elif interpolation == "linear":
        out = low + (high - low) * (pos - lo).expand(shape)
    else:
        out = low
    empty = (count == 0) if skip_nan else nan.any(-1, keepdim=True)
    out = where(empty.expand(shape), math.nan, out).movedim(-1, 0)
    if keepdim:
        out = out.reshape(qs.numel(), *([1] * input.ndim)) if dim is None else \
            out.unsqueeze(1 + _wrap_dim(dim, max(input.ndim, 1), name))
        if not input.ndim:
            out = out.reshape(qs.numel())
    return out[0] if qs.ndim == 0 else out


def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a float or a 1-D tensor in [0, 1]) of all elements or along ``dim``; NaN where
    the values hold a NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """:func:`quantile` ignoring NaN (NaN only where every value is NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def _edges(name: str, x: Tensor, bins: Any, lo_hi: Sequence[float] | None) -> Tensor:
    """The bin edges of 1-D values ``x``: ``bins`` itself (a 1-D tensor), or ``bins`` equal bins over ``lo_hi``
    (the data's range by default)."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 1:
            raise ShapeError(f"{name}(): bins must be a 1D tensor with at least one edge, got shape "
                             f"{list(bins.shape)}")
        return bins.to(x.dtype)
    if not isinstance(bins, int) or bins <= 0:
        raise ValueError(f"{name}(): bins must be > 0, but got {bins}")
    if lo_hi is not None:
        lo, hi = float(lo_hi[0]), float(lo_hi[1])
    elif x.numel():
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 0.0
    if lo > hi:
        raise ValueError(f"{name}(): min should not exceed max, but got min {lo} max {hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return linspace(lo, hi, bins + 1, dtype=x.dtype, device=x.device)


def _bin_of(x: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin (the last edge closes the last bin) and whether it falls in one."""
    n = edges.numel() - 1
    idx = (x.unsqueeze(-1) >= edges).sum(-1) - 1
    idx = where(x == edges[-1], n - 1, idx)
    return idx, (idx >= 0).logical_and(idx < n).logical_and(~x.isnan())


def _counts(sizes: Sequence[int], flat: Tensor, inside: Tensor, weight: Tensor | None, like: Tensor) -> Tensor:
    w = weight.reshape(-1).to(like.dtype) if weight is not None else like.new_ones(flat.shape)
    total = math.prod(sizes)
    out = zeros(total, dtype=like.dtype, device=like.device)
    if total:
        out = out.index_add(0, where(inside, flat, 0), where(inside, w, 0.0))
    return out.reshape(tuple(sizes))


def histogram(input: Tensor, bins: Any = 100, *, range: Sequence[float] | None = None,
              weight: Tensor | None = None, density: bool = False) -> HistogramResult:
    """The histogram of ``input``'s values: ``bins`` equal bins over ``range`` (the data's range by default) or
    the bin edges ``bins`` (a 1-D tensor); ``weight`` weighs each value; ``density`` normalizes to a density."""
    check_rule("histogram", input)
    x = _binned(input).reshape(-1)
    edges = _edges("histogram", x, bins, range)
    idx, inside = _bin_of(x, edges)
    hist = _counts([edges.numel() - 1], idx, inside, weight, x)
    if density and hist.numel():
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return HistogramResult(hist.to(input.dtype), edges.to(input.dtype))


def _binned(x: Tensor) -> Tensor:
    """``x`` in the dtype its bins are found in: float32 for 16-bit floats, whose rounded edges would move
    values across them."""
    return x.to(float32) if x.dtype in (float16, bfloat16) else x


def histogramdd(input: Tensor, bins: Any = 10, *, range: Sequence[float] | None = None,
                weight: Tensor | None = None, density: bool = False) -> HistogramddResult:
    """The histogram of the points in the rows of ``input`` (its last dimension: the coordinates): ``bins`` an
    int or one per coordinate (ints or 1-D edge tensors), ``range`` the flat ``[min0, max0, min1, max1...]``."""
    check_rule("histogramdd", input)
    dims = input.shape[-1] if input.ndim else 1
    pts = _binned(input).reshape(-1, dims)
    per = list(bins) if isinstance(bins, (list, tuple)) else [bins] * dims
    if len(per) != dims:
        raise ValueError(f"histogramdd(): expected {dims} sequences of bin edges (one per coordinate), got {len(per)}")
    if range is not None and len(range) != 2 * dims:
        raise ValueError(f"histogramdd(): range should have {2 * dims} elements, but got {len(range)}")
    edges = [_edges("histogramdd", pts[:, d], per[d], None if range is None else range[2 * d:2 * d + 2])
             for d in builtins.range(dims)]
    sizes = [e.numel() - 1 for e in edges]
    flat = pts.new_zeros((pts.shape[0],), dtype=int64)
    inside = flat == 0
    for d, e in enumerate(edges):
        idx, ok = _bin_of(pts[:, d], e)
        flat = flat * sizes[d] + idx
        inside = inside.logical_and(ok)
    hist = _counts(sizes, flat, inside, weight, pts)
    if density and hist.numel():
        volume = None
        for d, e in enumerate(edges):
            width = (e[1:] - e[:-1]).reshape([-1 if i == d else 1 for i in builtins.range(dims)])
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return HistogramddResult(hist.to(input.dtype), [e.to(input.dtype) for e in edges])


#: (name, function, ops it uses)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("std_mean", std_mean, ("std", "mean")), ("var_mean", var_mean, ("var", "mean")),
    ("cov", cov, ("mean", "sub", "matmul", "div")), ("corrcoef", corrcoef, ("mean", "sub", "matmul", "div", "sqrt")),
    ("dist", dist, ("sub", "norm")), ("msort", msort, ("sort",)), ("isin", isin, ("eq", "any")),
    ("trapezoid", trapezoid, ("narrow", "add", "mul", "sum")),
    ("cumulative_trapezoid", cumulative_trapezoid, ("narrow", "add", "mul", "cumsum")),
    ("logdet", logdet, ("linalg.slogdet", "where")),
    ("hsplit", hsplit, ("tensor_split",)), ("vsplit", vsplit, ("tensor_split",)),
    ("dsplit", dsplit, ("tensor_split",)), ("split_with_sizes", split_with_sizes, ("split",)),
    ("block_diag", block_diag, ("cat",)), ("cartesian_prod", cartesian_prod, ("reshape", "expand", "stack")),
    ("diagflat", diagflat, ("reshape", "diag")), ("argwhere", argwhere, ("nonzero",)),
    ("quantile", quantile, ()), ("nanquantile", nanquantile, ()), ("histogram", histogram, ()),
    ("histogramdd", histogramdd, ()),
]

#: The dtype rules that are not "same".
_RULES = {"std_mean": "floating", "var_mean": "floating", "cov": "floating", "corrcoef": "floating", "dist": "floating",
          "msort": "real", "isin": "real", "trapezoid": "numeric", "cumulative_trapezoid": "numeric",
          "logdet": "real_floating", "quantile": "real_floating", "nanquantile": "real_floating",
          "histogram": "real_floating", "histogramdd": "real_floating"}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: fn for row in _ROWS
    for name, fn in register_composites("reduction", [row], dtype_rule=_RULES.get(row[0], "same")).items()}
#: Ops that are also Tensor methods, as in PyTorch.
METHODS: list[str] = ["cov", "corrcoef", "dist", "msort", "logdet", "hsplit", "vsplit", "dsplit", "split_with_sizes",
                      "diagflat", "argwhere", "quantile", "nanquantile", "histogram"]
#: ``trapz`` is PyTorch's older name of ``trapezoid``.
ALIASES: dict[str, Callable[..., Any]] = {"trapz": FUNCTIONS["trapezoid"]}
