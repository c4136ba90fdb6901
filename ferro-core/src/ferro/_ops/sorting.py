"""Reductions, scans and sorting beyond the primitives, written in ops over a few kernels.

Kernels used: ``argsort`` (stable), ``cumsum``, ``cumprod``, ``cummax``, ``cummin``,
``searchsorted``, ``unique``, ``histc``, ``bincount``. Values of sort, topk,
kthvalue, median and cummax come from ``gather`` at the kernel's indices, so
their gradients flow through ``gather``.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import bool_, int64, result_type
from .._core.naming import not_a_tensor
from .._core.records import REGISTRY, OpDef, register
from .._core.tensor import Tensor, _wrap, _wrap_dim
from .._creation import arange, full, ones, tensor, zeros
from ..dispatch._dispatch import finish, kernel, kernel_for, run_elsewhere
from ..errors import ShapeError
from ._rules import register_ruled
from .elementwise import where
from .reduction import reduce_dims
from .shape import cat

__all__ = ["FUNCTIONS", "METHODS"]

#: ``(values, indices)`` of sort, topk, kthvalue, median, mode, cummax, cummin.
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _native(x: Tensor, name: str, *args: Any, dtype: Any = int64) -> Tensor:
    return _wrap(kernel(x._device, name)(x._data, *args), dtype, x._device)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Indices that sort ``x`` along ``dim`` (stable: equal elements keep their order)."""
    if x.ndim == 0:
        return _native(x, "argsort", 0, descending)
    return _native(x, "argsort", _wrap_dim(dim, x.ndim, "argsort"), descending)


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = True) -> ValuesIndices:
    """``(values, indices)`` of ``x`` sorted along ``dim``."""
    idx = argsort(x, dim, descending)
    return ValuesIndices(x.gather(dim, idx) if x.ndim else x.clone(), idx)


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices."""
    d = _wrap_dim(dim, x.ndim, "topk")
    if not 0 <= k <= (x.shape[d] if x.ndim else 1):
        raise ShapeError(f"topk: k ({k}) out of range for dimension {d} of size {x.shape[d] if x.ndim else 1}")
    idx = argsort(x, d, descending=largest).narrow(d, 0, k)
    return ValuesIndices(x.gather(d, idx), idx)


def kthvalue(x: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest element (1-based) along ``dim`` and its index."""
    d = _wrap_dim(dim, x.ndim, "kthvalue")
    if not 1 <= k <= x.shape[d]:
        raise ShapeError(f"kthvalue: k ({k}) out of range for dimension {d} of size {x.shape[d]}")
    idx = argsort(x, d).narrow(d, k - 1, 1)
    vals = x.gather(d, idx)
    return ValuesIndices(vals, idx) if keepdim else ValuesIndices(vals.squeeze(d), idx.squeeze(d))


def median(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median: of all elements, or ``(values, indices)`` along ``dim``; NaN (at the first NaN's
    index) where there is a NaN, as in PyTorch (``nanmedian`` ignores them)."""
    if dim is None:
        flat = x.reshape(-1)
        if flat.numel() == 0:
            raise ShapeError("median: empty tensor")
        return median(flat, 0).values
    d = _wrap_dim(dim, x.ndim, "median")
    got = kthvalue(x, (x.shape[d] + 1) // 2, d, True)
    if x._dtype.is_floating_point:
        nan = x.isnan()
        idx = where(nan.any(d, keepdim=True), nan.to(int64).argmax(d, keepdim=True), got.indices)
        got = ValuesIndices(x.gather(d, idx), idx)
    return got if keepdim else ValuesIndices(got.values.squeeze(d), got.indices.squeeze(d))


def nanmedian(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """``median`` of the non-NaN elements (NaN where all are NaN): of all elements, or ``(values, indices)``
    along ``dim``."""
    if dim is None:
        flat = x.reshape(-1)
        if flat.numel() == 0:
            raise ShapeError("nanmedian: empty tensor")
        return nanmedian(flat, 0).values
    d = _wrap_dim(dim, x.ndim, "nanmedian")
    if not x._dtype.is_floating_point:
        return median(x, d, keepdim)
    if x.shape[d] == 0:
        raise ShapeError(f"nanmedian: dimension {d} of shape {list(x.shape)} is empty")
    order = argsort(x, d)  # NaN sort last: the lower median of the n valid values is at (n - 1) // 2
    k = ((~x.isnan()).sum(d, keepdim=True) - 1).clamp_min(0) // 2
    idx = order.gather(d, k)
    got = ValuesIndices(x.gather(d, idx), idx)
    return got if keepdim else ValuesIndices(got.values.squeeze(d), got.indices.squeeze(d))


def mode(x: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The most frequent value along ``dim`` (the smallest on ties) and an index of it."""
    d = _wrap_dim(dim, x.ndim, "mode")
    vals, idx = sort(x, d)
    # how often each sorted value occurs; the first maximal count is the smallest most frequent value
    nan = vals.isnan() if x._dtype.is_floating_point else None  # NaN counts as one value, as in PyTorch
    count = cat([((vals == v) if nan is None else (vals == v) | (nan & v.isnan())).sum(d, keepdim=True)
                 for v in (vals.narrow(d, i, 1) for i in range(x.shape[d]))], d)
    best = count.argmax(d, keepdim=True)
    out_v, out_i = vals.gather(d, best), idx.gather(d, best)
    return ValuesIndices(out_v, out_i) if keepdim else ValuesIndices(out_v.squeeze(d), out_i.squeeze(d))


_CUMSUM = register(OpDef("cumsum", "scan", "Cumulative sum along a dimension; integers accumulate in int64.",
                         dtype_rule="accumulate", grads=(lambda g, *, dim: g.flip(dim).cumsum(dim).flip(dim),)))
_CUMPROD = register(OpDef("cumprod", "scan", "Cumulative product along a dimension.", dtype_rule="accumulate",
                          saves=(0,), grads=(lambda g, x, *, dim: _cumprod_grad(g, x, dim),)))


def _cumprod_grad(g: Tensor, x: Tensor, dim: int) -> Tensor:
    # d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Without zeros: rev_cumsum(g * out) / x.
    # With zeros that division fails, so: prod_{k < i} x_k * sum_{j >= i} g_j prod_{i < k <= j} x_k, the
    # inner products from the cumprod of an (n, n) matrix. O(n^2), but made of ops, so it differentiates
    # again (PyTorch's cumprod_backward takes the same two roads).
    from .elementwise import _c

    # Complex x: the derivatives are conjugated (PyTorch's convention), hence the _c.
    if not bool((x == 0).any()):
        return g.mul(_c(x.cumprod(dim))).flip(dim).cumsum(dim).flip(dim) / _c(x)
    xm, gm = x.movedim(dim, -1), g.movedim(dim, -1)
    n = xm.shape[-1]
    later = ones(n, n, dtype=x.dtype, device=x.device).triu(1) != 0  # [i, k]: k > i
    inner = where(later, xm.unsqueeze(-2), 1.0).cumprod(-1)  # [i, j]: prod_{i < k <= j} x_k
    from_i = ~ones(n, n, dtype=x.dtype, device=x.device).tril(-1).to(dtype=later.dtype)  # [i, j]: j >= i
    right = where(from_i, gm.unsqueeze(-2) * _c(inner), 0.0).sum(-1)
    left = cat([ones(*xm.shape[:-1], 1, dtype=x.dtype, device=x.device), xm.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    return (_c(left) * right).movedim(-1, dim)


def _scan(op: OpDef, x: Tensor, dim: int, dtype: Any = None) -> Tensor:
    if dtype is not None:
        x = x.to(dtype)
    d = _wrap_dim(dim, x.ndim, op.name) if x.ndim else 0
    dev = x._device
    k = kernel_for(op, dev, x._dtype)
    if k is None:
        return run_elsewhere(op, dev, x._dtype, (x, dim), {})
    compute, out_dt = op.table[x._dtype]
    data = x._data if compute is x._dtype else dev._kernels["cast"](x._data, compute)
    if not x.ndim:
        return finish(op, dev._kernels["clone"](data), out_dt, dev, (x,), (), {"dim": 0})
    return finish(op, k(data, d), out_dt, dev, (x,), (x,) if op.saves else (), {"dim": d})


def cumsum(x: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Cumulative sum along ``dim`` (in ``dtype`` when given; integers accumulate in int64 otherwise)."""
    out = _scan(_CUMSUM, x, dim, dtype)
    return out if dtype is None or out.dtype == dtype else out.to(dtype)


def cumprod(x: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Cumulative product along ``dim`` (in ``dtype`` when given)."""
    out = _scan(_CUMPROD, x, dim, dtype)
    return out if dtype is None or out.dtype == dtype else out.to(dtype)


def _cum_extreme(x: Tensor, dim: int, name: str) -> ValuesIndices:
    d = _wrap_dim(dim, x.ndim, name)
    _, idx = kernel(x._device, name)(x._data, d)
    indices = _wrap(idx, int64, x._device)
    if x._dtype.is_floating_point and x.ndim:
        # NaN propagates (PyTorch): from the first NaN on, the running extreme is NaN, at the latest NaN's
        # index. One rule for every backend's kernel, applied here on integer scans.
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        pos = arange(x.shape[d], device=x.device).reshape(shape)
        last_nan = where(x.isnan(), pos, -1).cummax(d).values
        indices = where(last_nan >= 0, last_nan, indices)
    return ValuesIndices(x.gather(d, indices), indices)


def cummax(x: Tensor, dim: int) -> ValuesIndices:
    """Running maximum along ``dim`` and the index where it was reached."""
    return _cum_extreme(x, dim, "cummax")


def cummin(x: Tensor, dim: int) -> ValuesIndices:
    """Running minimum along ``dim`` and the index where it was reached."""
    return _cum_extreme(x, dim, "cummin")


def _logaddexp(a: Tensor, b: Tensor) -> Tensor:
    """``logaddexp``, and for complex numbers PyTorch's: shifted by the term of larger real part."""
    if not a._dtype.is_complex:
        return a.logaddexp(b)
    first = a.real >= b.real
    hi, lo = where(first, a, b), where(first, b, a)
    return hi + (lo - hi).exp().log1p()


def logcumsumexp(x: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(x))) along ``dim``, without overflow or underflow: a prefix scan of ``logaddexp``
    (log2(n) steps), so every partial sum is shifted by its own maximum. One shift by the global maximum
    would flush the terms far below it to zero (``[-1000, 0]`` gave ``[-inf, 0]``). Integer and bool inputs
    are refused by the record's rule, as PyTorch refuses them."""
    if x.ndim == 0:
        return x * 1
    d = _wrap_dim(dim, x.ndim, "logcumsumexp")
    n = x.shape[d]
    shape = [1] * x.ndim
    shape[d] = n
    pos = arange(n, device=x.device).reshape(shape)
    y, k = x, 1
    while k < n:
        # y[i] = logaddexp(y[i], y[i - k]) for i >= k; the first k entries pair with themselves, unused
        earlier = cat([y.narrow(d, 0, k), y.narrow(d, 0, n - k)], d)
        y = where(pos >= k, _logaddexp(y, earlier), y)
        k *= 2
    return y


def prod(x: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of elements (over ``dim``); integers multiply in int64."""
    if dtype is not None:
        x = x.to(dtype)
    if dim is None:
        out = cumprod(x.reshape(-1), 0, dtype=dtype)
        r = out[-1] if out.numel() else _one(x, None)
        return r.reshape((1,) * x.ndim) if keepdim else r
    d = _wrap_dim(dim, x.ndim, "prod")
    out = cumprod(x, d, dtype=dtype).narrow(d, x.shape[d] - 1, 1) if x.shape[d] else _one(x, d)
    return out if keepdim else out.squeeze(d)


def _one(x: Tensor, d: int | None) -> Tensor:
    """The empty product over ``d`` (all dims when None): ones, in the graph of ``x`` as PyTorch's (its
    gradient is the empty tensor's zero-size gradient)."""
    return x.sum(d, keepdim=d is not None, dtype=_CUMPROD.table[x._dtype][1]) * 0 + 1


def _kept(x: Tensor, d: int) -> list[int]:
    s = list(x.shape)
    s[d] = 1
    return s


def var(x: Tensor, dim: int | Sequence[int] | None = None, *, correction: float = 1, keepdim: bool = False,
        unbiased: bool | None = None) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction`` (1: the sample variance)."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    if x._dtype.name in _HALVES:
        return var(x.float(), dim, correction=correction, keepdim=keepdim).to(x._dtype)
    dims = reduce_dims(x, dim, "var")
    n = x.numel() if dims is None else math.prod(x.shape[d] for d in dims)
    mu = x.mean(dim, keepdim=True)
    return _abs2(x - mu).sum(dim, keepdim=keepdim) / max(n - correction, 0)


#: Floats that accumulate in float32 in the compositions here (as in the backends' sums, see in_float32).
_HALVES = frozenset({"float16", "bfloat16"})


def _abs2(x: Tensor) -> Tensor:
    """``|x| ** 2``: ``x * x``, or the real ``x * conj(x)`` for complex ``x`` (as PyTorch's var and norm)."""
    return (x * x.conj()).real if x._dtype.is_complex else x * x


def std(x: Tensor, dim: int | Sequence[int] | None = None, *, correction: float = 1, keepdim: bool = False,
        unbiased: bool | None = None) -> Tensor:
    """Standard deviation: the square root of :func:`var` (in float32 for 16-bit floats, rounded once)."""
    if x._dtype.name in _HALVES:
        return std(x.float(), dim, correction=correction, keepdim=keepdim, unbiased=unbiased).to(x._dtype)
    return var(x, dim, correction=correction, keepdim=keepdim, unbiased=unbiased).sqrt()


def _root(s: Tensor, p: float) -> Tensor:
    """``s ** (1 / p)`` for a sum of powers ``s >= 0``, with gradient 0 where ``s == 0`` (the
    subgradient PyTorch gives the norm of a zero vector) instead of 0 * inf = nan."""
    if p == 2 and not s._rg:  # no gradient to guard (gradient clipping's norms): the same values, one op
        return s.sqrt()
    zero = s == 0
    safe = where(zero, 1.0, s)
    return where(zero, 0.0, safe.sqrt() if p == 2 else safe ** (1.0 / p))


def norm(x: Tensor, p: Any = "fro", dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default); ``"fro"`` (or None) is the 2-norm of all entries,
    ``"nuc"`` the nuclear norm of the matrices over the two ``dim`` (the last two by default). 16-bit floats are
    summed in float32 and rounded once, as PyTorch does (their squares overflow early)."""
    if x._dtype.name in _HALVES:
        return norm(x.float(), p, dim, keepdim).to(x._dtype)
    if p is None:
        p = "fro"
    if p == "nuc":  # a matrix norm: the registry op (ferro.linalg's), looked up as it is registered later
        return REGISTRY["linalg.matrix_norm"].fn(x, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
    if p in ("fro", 2, 2.0):
        return _root(_abs2(x).sum(dim, keepdim=keepdim), 2)
    a = x.abs()
    if p in (math.inf, "inf"):
        return a.amax(dim if dim is not None else (), keepdim=keepdim)
    if p in (-math.inf, "-inf"):
        return a.amin(dim if dim is not None else (), keepdim=keepdim)
    if p == 0:  # a count: in the graph with zero gradient, as PyTorch's (the sum is never selected)
        count = (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)
        return where(count != count, a.sum(dim, keepdim=keepdim), count) if x._rg else count
    if p == 1:
        return a.sum(dim, keepdim=keepdim)
    return _root((a ** p).sum(dim, keepdim=keepdim), p)


def count_nonzero(x: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Number of nonzero elements (over ``dim``), as int64."""
    if not isinstance(x, Tensor):
        raise not_a_tensor("count_nonzero", "input", x)
    return (x != 0).sum(dim)


def searchsorted(sorted_sequence: Tensor, values: Any, *, right: bool = False, side: str | None = None) -> Tensor:
    """Insertion indices of ``values`` in the last dimension of ``sorted_sequence``.

    Both are compared in their common dtype (PyTorch's promotion, a 0-d or scalar ``values`` the weaker side):
    float values between int64 boundaries are not truncated to the boundaries' dtype first."""
    if not isinstance(values, Tensor):
        values = tensor(values, device=sorted_sequence.device)
    common = result_type([t._dtype for t in (sorted_sequence, values) if t.ndim],
                         [t._dtype for t in (sorted_sequence, values) if not t.ndim], [])
    seq, vals = (t if t._dtype is common else t.to(common) for t in (sorted_sequence, values))
    right = right or side == "right"
    return _wrap(kernel(vals._device, "searchsorted")(seq._data, vals._data, right), int64, vals._device)


def bucketize(x: Tensor, boundaries: Tensor, *, right: bool = False) -> Tensor:
    """Index of the bucket of each element: ``boundaries[i-1] < x <= boundaries[i]`` (``right``: ``<=``, ``<``)."""
    return searchsorted(boundaries, x, right=right)


def unique(x: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None) -> Any:
    """The distinct elements (sorted), optionally with the inverse indices and the counts; with ``dim``, the
    distinct slices along ``dim`` in lexicographic order."""
    if dim is not None:
        return _unique_dim(x, dim, False, return_inverse, return_counts)
    return _unique(x, False, return_inverse, return_counts)


def unique_consecutive(x: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse runs of equal consecutive elements (of the flattened tensor, or slices along ``dim``)."""
    if dim is not None:
        return _unique_dim(x, dim, True, return_inverse, return_counts)
    return _unique(x, True, return_inverse, return_counts)


def _unique_dim(x: Tensor, dim: int, consecutive: bool, inverse: bool, counts: bool) -> Any:
    """unique over slices along ``dim``, in ops: a lexicographic sort of the flattened slices (one stable
    argsort per column, last column first), then the first slice of each run of equal ones."""
    d = _wrap_dim(dim, x.ndim, "unique")
    moved = x.movedim(d, 0)
    n = moved.shape[0]
    rows = moved.reshape(n, math.prod(moved.shape[1:]))
    perm = arange(n, device=x.device)
    if not consecutive:
        for c in range(rows.shape[1] - 1, -1, -1):
            perm = perm[rows[perm, c].argsort(stable=True)]
    srt = rows[perm]
    new = ones(min(n, 1), dtype=bool_, device=x.device)
    if n > 1:
        new = cat([new, (srt[1:] != srt[:-1]).any(1)])
    group = new.to(int64).cumsum(0) - 1
    picked = srt[new]
    out = [picked.reshape(picked.shape[0], *moved.shape[1:]).movedim(0, d)]
    if inverse:
        out.append(zeros(n, dtype=int64, device=x.device).scatter(0, perm, group))
    if counts:
        starts = new.nonzero().reshape(-1)
        out.append(cat([starts[1:], full((1,), n, dtype=int64, device=x.device)]) - starts if n else starts)
    return out[0] if len(out) == 1 else tuple(out)


def _unique(x: Tensor, consecutive: bool, inverse: bool, counts: bool) -> Any:
    v, inv, cnt = kernel(x._device, "unique")(x._data, consecutive)
    out = [_wrap(v, x._dtype, x._device)]
    if inverse:
        out.append(_wrap(inv, int64, x._device))
    if counts:
        out.append(_wrap(cnt, int64, x._device))
    return out[0] if len(out) == 1 else tuple(out)


def histc(x: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0)."""
    return _wrap(kernel(x._device, "histc")(x._data, bins, min, max), x._dtype, x._device)


def bincount(x: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count of each value of a 1-D non-negative integer tensor (weighted sums with ``weights``)."""
    if x.ndim != 1:
        raise ShapeError(f"bincount: expected a 1-D integer tensor, got {x.dtype} of shape {list(x.shape)}")
    if x.numel() and int(x.amin().item()) < 0:
        raise ValueError("bincount: values must be non-negative")
    data = kernel(x._device, "bincount")(x._data, None if weights is None else weights._data, minlength)
    from .._core.dtypes import float64
    dtype = int64 if weights is None else (weights.dtype if weights.dtype.is_floating_point else float64)
    return _wrap(data, dtype, x._device)


_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("argsort", argsort),
    ("sort", sort),
    ("topk", topk),
    ("kthvalue", kthvalue),
    ("median", median),
    ("mode", mode),
    ("cummax", cummax),
    ("cummin", cummin),
    ("logcumsumexp", logcumsumexp),
    ("prod", prod),
    ("var", var),
    ("std", std),
    ("norm", norm, ("pow",)),  # p other than 0, 1, 2, inf (the samples take the default)
    ("count_nonzero", count_nonzero),
    ("searchsorted", searchsorted),
    # searchsorted runs at x's dtype promoted with the boundaries': the runs see the boundaries' (int64 in the samples)
    ("bucketize", bucketize, ("searchsorted:input",)),
    ("unique", unique),
    ("unique_consecutive", unique_consecutive),
    ("histc", histc),
    ("bincount", bincount),
]
#: The dtype rules that are not "any dtype", PyTorch CPU's.
_RULES = {"histc": "real_floating", "bincount": "integer", "logcumsumexp": "floating", "norm": "floating",
          **dict.fromkeys(("argsort", "sort", "mode"), "real"),
          **dict.fromkeys(("kthvalue", "median", "topk"), "real_numeric")}

_CUMSUM.fn, _CUMPROD.fn = cumsum, cumprod
FUNCTIONS = {"cumsum": cumsum, "cumprod": cumprod,
             **register_ruled("composite", _ROWS, _RULES, first_only=("bincount",)),
             "nanmedian": nanmedian}  # not yet a record: its OpInfo entry goes with the op database
METHODS = [n for n in FUNCTIONS if n not in ("bucketize", "searchsorted")]
