"""Fused leaky_relu on NumPy (the contract is in ``ferro/_ops/fused.py``).

The decomposition is a comparison, a multiplication and a ``where`` forward, and
``where``'s gradient (two more) backward; these are two passes each way:
``leaky_relu`` is ``max(x, slope * x)`` for a slope up to 1 (``min`` above 1),
which NumPy runs as one vectorized loop (a NaN propagates, as the decomposition's),
and its gradient is ``slope * g`` overwritten by ``g`` where ``x > 0`` (``x`` may be the output: for a
slope >= 0 it is positive where the input is; ``ferro/_ops/fused.py`` passes the output then). float16
multiplies in float32 and rounds once, as PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["rectifier_kernels"]


def rectifier_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``leaky_relu`` and ``leaky_relu_backward`` over NumPy ``np``, large outputs from ``pool``."""

    f16, f32 = np.dtype(np.float16), np.float32
    quiet = np.errstate(all="ignore")  # -inf * 0 is NaN, as PyTorch's, without NumPy's warning

    @quiet
    def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
        if x.dtype == f16:
            return leaky_relu(x.astype(f32), negative_slope).astype(f16)
        y = np.multiply(x, x.dtype.type(negative_slope), out=pool.empty(x.shape, x.dtype))
        return (np.maximum if negative_slope <= 1 else np.minimum)(x, y, out=y)

    @quiet
    def leaky_relu_backward(g: Any, x: Any, negative_slope: float = 0.01) -> Any:
        if g.dtype == f16:
            return leaky_relu_backward(g.astype(f32), x, negative_slope).astype(f16)
        dx = np.multiply(g, g.dtype.type(negative_slope), out=pool.empty(g.shape, g.dtype))
        np.copyto(dx, g, where=x > 0)
        return dx

    return {"leaky_relu": leaky_relu, "leaky_relu_backward": leaky_relu_backward}
