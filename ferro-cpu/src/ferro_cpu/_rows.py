"""Fused softmax, log_softmax and layer_norm on NumPy (the contract is in ``ferro/_ops/fused.py``).

The decompositions take five to eight ferro ops each way (amax, a finiteness
check, a where, sub, exp, sum, div... and as many graph nodes); these make
the same NumPy passes into one buffer with ``out=``: softmax is max, one
subtraction, ``exp`` in place, a sum and a division in place. The shift by
the maximum is PyTorch's kernels' (a row holding +inf is NaN, where the
decomposition, which does not shift by an infinite maximum, gives NaN only
at the +inf). float16
computes in float32 and rounds once at the end. ``layer_norm`` reads its
input as (rows, the normalized trailing elements) and keeps each row's mean
and 1/std for the backward.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._pool import MIN_BYTES

__all__ = ["row_kernels", "last_axis_sums"]

#: Rows up to this long are summed by BLAS (see last_axis_sums); longer ones by NumPy's pairwise sum.
BLAS_ROW = 4096


def last_axis_sums(np: Any) -> Callable[[Any, bool], Any]:
    """``sums(x, keepdim)``: the sums along the last axis of a C-contiguous float32 or float64 array of several
    rows of at most :data:`BLAS_ROW` elements, as one matrix-vector product with ones (BLAS, with its several
    accumulators, runs it several times faster than ``np.add.reduce``, which pays per row); None for any
    other array (the caller reduces it as usual)."""
    floats = (np.dtype(np.float32), np.dtype(np.float64))
    ones: dict[tuple[int, Any], Any] = {}

    def sums(x: Any, keepdim: bool) -> Any:
        shape = x.shape
        n = shape[-1] if shape else 0
        if not 0 < n <= BLAS_ROW or x.size == n or x.dtype not in floats or not x.flags.c_contiguous:
            return None
        v = ones.get((n, x.dtype))
        if v is None:
            v = ones[n, x.dtype] = np.ones(n, x.dtype)
        if len(shape) == 2 and not keepdim:  # (ndarray.dot: no reshapes, no matmul's gufunc steps)
            return x.dot(v)
        r = x.reshape(-1, n).dot(v)
        return r.reshape((*shape[:-1], 1) if keepdim else shape[:-1])
    return sums


def row_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``softmax``, ``log_softmax``, their backward kernels and the ``layer_norm`` pair over NumPy ``np``;
    their outputs come from ``pool`` (large buffers reused, without page faults)."""
    f16, f32 = np.dtype(np.float16), np.float32
    add, maximum = np.add.reduce, np.maximum.reduce
    quiet = np.errstate(all="ignore")  # inf - inf and NaN inputs give NaN, as PyTorch, without NumPy's warnings

    def wide(x: Any) -> Any:
        return x.astype(f32) if x.dtype == f16 else x

    def back(y: Any, dtype: Any) -> Any:
        return y.astype(dtype) if y.dtype != dtype else y

    ones: dict[tuple[int, Any], Any] = {}

    def row_sum(a: Any, dim: int) -> Any:
        """``a``'s sum along ``dim`` (kept as a dim of 1): along the last dim of a C-contiguous float array, a
        matrix-vector product with ones, which BLAS runs several times faster than ``np.add.reduce``."""
        n = a.shape[-1]
        if dim not in (-1, a.ndim - 1) or not a.flags.c_contiguous or a.dtype.kind != "f" or n == 0:
            return add(a, axis=dim, keepdims=True)
        v = ones.get((n, a.dtype))
        if v is None:
            v = ones[n, a.dtype] = np.ones(n, a.dtype)
        return (a.reshape(-1, n) @ v).reshape((*a.shape[:-1], 1))

    def new(like: Any) -> Any:
        return np.empty_like(like) if like.nbytes < MIN_BYTES else pool.empty(like.shape, like.dtype)

    #: per float dtype: |x| below which exp(x) is a normal number and a row's sum of up to 2**20 of them finite
    bound = {np.dtype(f32): 60.0, np.dtype(np.float64): 600.0}
    lo_of, hi_of = np.minimum.reduce, maximum

    def unshifted(x: Any, dim: int) -> bool:
        """Whether softmax may skip the shift by each row's maximum: along the last dim of a C-contiguous array
        of moderate finite values (two whole-array reductions, where the row maxima and the subtraction are two
        passes more). exp(x) / sum(exp(x)) then equals the shifted quotient to rounding: no exp overflows,
        none underflows below the normal numbers."""
        b = bound.get(x.dtype)
        if b is None or dim not in (-1, x.ndim - 1) or not x.flags.c_contiguous or x.shape[-1] > 1 << 20:
            return False
        return bool(-b < lo_of(x, axis=None) and hi_of(x, axis=None) < b)  # NaN: False

    def shifted(x: Any, dim: int) -> Any:
        """``x - max(x)`` along ``dim``, a new array (a row holding +inf or only -inf gives NaN, as PyTorch's)."""
        return np.subtract(x, maximum(x, axis=dim, keepdims=True), out=new(x))

    def softmax(x: Any, dim: int) -> Any:
        if x.size == 0:
            return x.copy()
        xw = wide(x)
        if unshifted(xw, dim):
            y = np.exp(xw, out=new(xw))
            s = row_sum(y, dim)
            np.multiply(y, np.reciprocal(s, out=s), out=y)  # PyTorch's kernels multiply by 1 / sum too
            return back(y, x.dtype)
        return shifted_softmax(xw, dim, x.dtype)

    @quiet
    def shifted_softmax(xw: Any, dim: int, dtype: Any) -> Any:
        y = shifted(xw, dim)
        np.exp(y, out=y)
        np.divide(y, row_sum(y, dim), out=y)
        return back(y, dtype)

    @quiet
    def softmax_backward(g: Any, y: Any, dim: int) -> Any:  # y * (g - sum(g * y))
        gw, yw = wide(g), wide(y)
        t = np.multiply(gw, yw, out=new(yw))
        s = row_sum(t, dim)
        np.subtract(gw, s, out=t)
        np.multiply(t, yw, out=t)
        return back(t, y.dtype)

    @quiet
    def log_softmax(x: Any, dim: int) -> Any:  # (x - max) - log(sum(exp(x - max))), as the decomposition
        if x.size == 0:
            return x.copy()
        sh = shifted(wide(x), dim)
        e = np.exp(sh, out=new(sh))
        s = row_sum(e, dim)
        np.log(s, out=s)
        np.subtract(sh, s, out=sh)
        return back(sh, x.dtype)

    @quiet
    def log_softmax_backward(g: Any, y: Any, dim: int) -> Any:  # g - exp(y) * sum(g)
        gw = wide(g)
        yw = wide(y)
        e = np.exp(yw, out=new(yw))
        np.multiply(e, row_sum(gw, dim), out=e)
        np.subtract(gw, e, out=e)
        return back(e, y.dtype)

    def as_rows(x: Any, shape: tuple[int, ...]) -> tuple[Any, int]:
        cols = math.prod(shape)
        return wide(x).reshape(-1, cols), cols

    @quiet
    def layer_norm_forward(x: Any, shape: tuple[int, ...], weight: Any, bias: Any, eps: float) -> Any:
        xr, cols = as_rows(x, shape)
        if xr.size == 0:
            empty = np.zeros((xr.shape[0], 1), xr.dtype)
            return x.copy(), empty, empty
        mean = row_sum(xr, 1)
        mean /= cols
        y = np.subtract(xr, mean, out=new(xr))
        var = np.einsum("ij,ij->i", y, y)[:, None]  # one pass, no squared temporary
        var /= cols
        var += eps
        rstd = np.sqrt(var, out=var)
        np.reciprocal(rstd, out=rstd)
        y *= rstd
        if weight is not None:
            y *= wide(weight).reshape(-1)
        if bias is not None:
            y += wide(bias).reshape(-1)
        return back(y.reshape(x.shape), x.dtype), mean, rstd

    @quiet
    def layer_norm_backward(g: Any, x: Any, shape: tuple[int, ...], weight: Any, mean: Any, rstd: Any) -> Any:
        xr, cols = as_rows(x, shape)
        gr = wide(g).reshape(-1, cols)
        xhat = np.subtract(xr, mean, out=new(xr))
        xhat *= rstd
        db = add(gr, axis=0)
        dw = None if weight is None else np.einsum("ij,ij->j", gr, xhat)
        gw = gr if weight is None else gr * wide(weight).reshape(-1)
        # dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), per row
        a = row_sum(gw, 1) / cols
        b = np.einsum("ij,ij->i", gw, xhat)[:, None] / cols
        dx = np.multiply(xhat, b, out=new(xhat))
        np.subtract(gw, dx, out=dx)
        dx -= a
        dx *= rstd
        dt = x.dtype
        return (back(dx.reshape(x.shape), dt), None if dw is None else back(dw.reshape(shape), dt),
                back(db.reshape(shape), dt))

    return {"softmax": softmax, "softmax_backward": softmax_backward, "log_softmax": log_softmax,
            "log_softmax_backward": log_softmax_backward, "layer_norm_forward": layer_norm_forward,
            "layer_norm_backward": layer_norm_backward}
