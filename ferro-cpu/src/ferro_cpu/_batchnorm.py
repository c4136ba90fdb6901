"""Fused batch_norm on NumPy (the contract is in ``ferro/_ops/fused.py``).

The decomposition takes about a dozen ferro ops forward (mean, sub, pow, mean,
the running-statistics updates, sub, add, sqrt, div, mul, add) and as many
backward, each a NumPy pass and a graph node. These kernels read the input as
(N, C, L), the per-channel statistics over N and L: forward is a mean, one
subtraction into the output buffer, an ``einsum`` for the variance (no squared
temporary) and the affine map in place; backward is two ``einsum`` reductions
(``sum(g)`` and ``sum(g * x)``, from which the weight's gradient follows
without forming ``x_hat``) and ``dx = g * a + x * b + c`` per channel. The
running statistics are updated in place (the caller bumps their versions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["batchnorm_kernels"]

_REPEAT_UP_TO = 1024  # spatial sizes whose per-channel operands are repeated


def batchnorm_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``batch_norm_forward`` and ``batch_norm_backward`` over NumPy ``np``, large outputs from ``pool``."""

    def as_ncl(a: Any) -> Any:
        return a.reshape(a.shape[0], a.shape[1], -1)

    def per_channel(v: Any, xs: Any) -> Any:
        """``v`` (C,) against ``xs`` (N, C, L): repeated to (C, L) where L is short, which NumPy runs as one loop
        of C * L per sample (a (C, 1) operand makes a loop of L per row: ~2x slower at L = 16)."""
        n, c, length = xs.shape
        return np.repeat(v, length).reshape(c, length) if length <= _REPEAT_UP_TO and n > 1 else v.reshape(-1, 1)

    def batch_norm_forward(x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, training: bool,
                           momentum: float, eps: float) -> tuple[Any, Any, Any]:
        xs = as_ncl(x)
        if training:
            n = xs.shape[0] * xs.shape[2]
            mean = np.einsum("ncl->c", xs) / n
            y = np.subtract(xs, per_channel(mean, xs), out=pool.empty(xs.shape, x.dtype))
            var = np.einsum("ncl,ncl->c", y, y) / n
            if running_mean is not None:
                running_mean *= 1 - momentum
                running_mean += momentum * mean
            if running_var is not None:
                running_var *= 1 - momentum
                running_var += (momentum * n / max(n - 1, 1)) * var
        else:
            mean, var = running_mean, running_var
            y = np.subtract(xs, per_channel(mean, xs), out=pool.empty(xs.shape, x.dtype))
        rstd = 1 / np.sqrt(var + eps)
        scale = rstd if weight is None else rstd * weight
        y *= per_channel(scale.astype(x.dtype, copy=False), xs)
        if bias is not None:
            y += per_channel(bias, xs)
        return y.reshape(x.shape), mean.astype(x.dtype, copy=False), rstd.astype(x.dtype, copy=False)

    def batch_norm_backward(g: Any, x: Any, weight: Any, mean: Any, rstd: Any, training: bool,
                            needs: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
        gs, xs = as_ncl(g), as_ncl(x)
        n = xs.shape[0] * xs.shape[2]
        db = np.einsum("ncl->c", gs)
        # sum(g * x_hat) = rstd * (sum(g * x) - mean * sum(g))
        dw = (np.einsum("ncl,ncl->c", gs, xs) - mean * db) * rstd
        a = rstd if weight is None else rstd * weight  # dx = g * a  (+ x * b + c in training)
        dx = None
        if needs[0]:
            dx = np.multiply(gs, per_channel(a, gs), out=pool.empty(gs.shape, g.dtype))
            if training:
                # dx = a * (g - sum(g) / n - x_hat * sum(g * x_hat) / n)
                b = -a * rstd * dw / n
                c = -a * db / n - b * mean
                dx += np.multiply(xs, per_channel(b, xs), out=pool.empty(xs.shape, x.dtype))
                dx += per_channel(c, xs)
            dx = dx.reshape(x.shape)
        return dx, dw if needs[1] else None, db if needs[2] else None

    return {"batch_norm_forward": batch_norm_forward, "batch_norm_backward": batch_norm_backward}
