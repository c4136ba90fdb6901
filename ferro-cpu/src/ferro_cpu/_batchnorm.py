"""Fused batch_norm on NumPy (the contract is in ``ferro/_ops/fused.py``).

The decomposition takes about a dozen ferro ops forward (mean, sub, pow, mean,
the running-statistics updates, sub, add, sqrt, div, mul, add) and as many
backward, each a NumPy pass and a graph node. These kernels read the input as
(N, C, L). Where L is short (up to 32: DCGAN's 4x4 maps) the per-channel sums over
N and L are two BLAS products with ones (``ones(N) @ x.reshape(N, C * L)``, then
``(C, L) @ ones(L)``): NumPy's ``einsum`` loops over L one row at a time (2x slower
at L = 16); forward is then the mean, the centered values squared in one buffer for
the variance, and PyTorch's ``x * alpha + beta`` (``alpha = rstd * weight``,
``beta = bias - mean * alpha``; eval mode is only that). Longer rows take ``einsum``,
which reads the centered values twice for the variance without writing, then scales
and shifts them in place. Backward is ``sum(g)`` and ``sum(g * x)`` (from which the
weight's gradient follows without forming ``x_hat``) and ``dx = g * a + x * b + c``
per channel. The running statistics
are updated in place (the caller bumps their versions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["batchnorm_kernels"]

_REPEAT_UP_TO = 1024  # spatial sizes whose per-channel operands are repeated
_SHORT = 32  # spatial sizes up to which the sums are products with ones (einsum loops over L, row by row)


def batchnorm_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``batch_norm_forward`` and ``batch_norm_backward`` over NumPy ``np``, large outputs from ``pool``."""

    ones_by: dict[tuple[int, Any], Any] = {}  # (length, dtype) -> a read-only vector of ones

    def ones(n: int, dtype: Any) -> Any:
        v = ones_by.get((n, dtype))
        if v is None:
            v = ones_by[(n, dtype)] = np.ones(n, dtype)
            v.flags.writeable = False
        return v

    def as_ncl(a: Any) -> Any:
        return a.reshape(a.shape[0], a.shape[1], -1)

    def channel_sums(a: Any) -> Any:
        """Per channel, the sum of (N, C, L) ``a`` over N and L: two matrix-vector products (BLAS)."""
        n, c, length = a.shape
        s = ones(n, a.dtype) @ a.reshape(n, c * length) if n > 1 else a.reshape(c * length)
        return s.reshape(c, length) @ ones(length, a.dtype) if length > 1 else s.copy()

    def per_channel(v: Any, xs: Any) -> Any:
        """``v`` (C,) against ``xs`` (N, C, L): repeated to (C, L) where L is short, which NumPy runs as one loop
        of C * L per sample (a (C, 1) operand makes a loop of L per row: ~2x slower at L = 16)."""
        n, c, length = xs.shape
        return np.repeat(v, length).reshape(c, length) if length <= _REPEAT_UP_TO and n > 1 else v.reshape(-1, 1)

    def batch_norm_forward(x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, training: bool,
                           momentum: float, eps: float) -> tuple[Any, Any, Any]:
        xs = as_ncl(x)
        short = xs.shape[2] <= _SHORT
        if short and not xs.flags.c_contiguous:
            xs = np.ascontiguousarray(xs)  # (copied once here, not by each product's reshape)
        y = pool.empty(xs.shape, x.dtype)
        if training:
            n = xs.shape[0] * xs.shape[2]
            mean = (channel_sums(xs) if short else np.einsum("ncl->c", xs)) / n
            np.subtract(xs, per_channel(mean, xs), out=y)
            if short:  # squared in place, then x * alpha + beta from x
                var = channel_sums(np.multiply(y, y, out=y)) / n
            else:  # einsum reads y twice and writes nothing; y is then scaled and shifted in place
                var = np.einsum("ncl,ncl->c", y, y) / n
            if running_mean is not None:
                running_mean *= 1 - momentum
                running_mean += momentum * mean
            if running_var is not None:
                running_var *= 1 - momentum
                running_var += (momentum * n / max(n - 1, 1)) * var
        else:
            mean, var = running_mean, running_var
            short = True
        rstd = 1 / np.sqrt(var + eps)
        alpha = rstd if weight is None else rstd * weight
        if short:
            beta = -mean * alpha if bias is None else bias - mean * alpha
            np.multiply(xs, per_channel(alpha.astype(x.dtype, copy=False), xs), out=y)
            y += per_channel(beta.astype(x.dtype, copy=False), xs)
        else:
            y *= per_channel(alpha.astype(x.dtype, copy=False), xs)
            if bias is not None:
                y += per_channel(bias, xs)
        return y.reshape(x.shape), mean.astype(x.dtype, copy=False), rstd.astype(x.dtype, copy=False)

    def batch_norm_backward(g: Any, x: Any, weight: Any, mean: Any, rstd: Any, training: bool,
                            needs: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
        gs, xs = as_ncl(g), as_ncl(x)
        n = xs.shape[0] * xs.shape[2]
        tmp = pool.empty(xs.shape, g.dtype)
        # sum(g * x_hat) = rstd * (sum(g * x) - mean * sum(g))
        if xs.shape[2] <= _SHORT:
            gs, xs = np.ascontiguousarray(gs), np.ascontiguousarray(xs)
            db = channel_sums(gs)
            gx = channel_sums(np.multiply(gs, xs, out=tmp))
        else:
            db, gx = np.einsum("ncl->c", gs), np.einsum("ncl,ncl->c", gs, xs)
        dw = (gx - mean * db) * rstd
        a = rstd if weight is None else rstd * weight  # dx = g * a  (+ x * b + c in training)
        dx = None
        if needs[0]:
            dx = np.multiply(gs, per_channel(a, gs), out=pool.empty(gs.shape, g.dtype))
            if training:
                # dx = a * (g - sum(g) / n - x_hat * sum(g * x_hat) / n)
                b = -a * rstd * dw / n
                c = -a * db / n - b * mean
                dx += np.multiply(xs, per_channel(b, xs), out=tmp)
                dx += per_channel(c, xs)
            dx = dx.reshape(x.shape)
        return dx, dw if needs[1] else None, db if needs[2] else None

    return {"batch_norm_forward": batch_norm_forward, "batch_norm_backward": batch_norm_backward}
