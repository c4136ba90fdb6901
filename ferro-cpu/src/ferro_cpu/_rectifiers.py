"""Fused leaky_relu on NumPy (the contract is in ``ferro/_ops/fused.py``).

The decomposition is a comparison, a multiplication and a ``where`` forward, and
``where``'s gradient (two more) backward; these are two passes each way:
``leaky_relu`` is ``max(x, slope * x)`` for a slope up to 1 (``min`` above 1),
which NumPy runs as one vectorized loop (a NaN propagates, as the decomposition's),
and its gradient is ``g`` times ``(x > 0) * (1 - slope) + slope``, which is exactly 1 or
``slope`` for every slope whose ``slope + (1 - slope)`` rounds to 1 (all of [0, 1]); otherwise
``slope * g`` overwritten by ``g`` where ``x > 0`` (bitwise, :func:`select_into`). ``x`` may be
the output: for a slope >= 0 it is positive where the input is, and ``ferro/_ops/fused.py``
passes the output then. float16
multiplies in float32 and rounds once, as PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["rectifier_kernels", "select_into"]

_INT = {2: "int16", 4: "int32", 8: "int64"}  # float itemsize -> the integer type of its bits


def select_into(np: Any, pool: Any, mask: Any, a: Any, out: Any) -> Any:
    """``out`` set to ``a`` where ``mask``, left where not; bitwise (``np.where`` and ``copyto(where=)`` branch
    per element, about ten times slower on a random mask). ``out`` and ``a``: float arrays of one dtype and
    shape, not sharing memory; ``mask`` a bool array of that shape; temporaries from ``pool``."""
    bits = np.dtype(_INT[out.dtype.itemsize])
    m = pool.empty(out.shape, bits)
    np.negative(np.asarray(mask).view(np.int8), out=m)  # all ones where mask (a 0-d comparison gives a scalar)
    o = out.view(bits)
    t = np.bitwise_xor(o, a.view(bits), out=pool.empty(out.shape, bits))
    t &= m
    o ^= t  # out ^ ((out ^ a) & m): a where mask
    return out


def rectifier_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """``leaky_relu`` and ``leaky_relu_backward`` over NumPy ``np``, large outputs from ``pool``."""

    f16, f32 = np.dtype(np.float16), np.float32
    quiet = np.errstate(all="ignore")  # -inf * 0 is NaN, as PyTorch's, without NumPy's warning

    def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
        if x.dtype == f16:
            return leaky_relu(x.astype(f32), negative_slope).astype(f16)
        if negative_slope == 0 or negative_slope > 1:  # (only then can the product warn: -inf * 0, overflow)
            with np.errstate(all="ignore"):
                y = np.multiply(x, x.dtype.type(negative_slope), out=pool.empty(x.shape, x.dtype))
        else:
            y = np.multiply(x, x.dtype.type(negative_slope), out=pool.empty(x.shape, x.dtype))
        return (np.maximum if negative_slope <= 1 else np.minimum)(x, y, out=y)

    @quiet
    def leaky_relu_backward(g: Any, x: Any, negative_slope: float = 0.01) -> Any:
        if g.dtype == f16:
            return leaky_relu_backward(g.astype(f32), x, negative_slope).astype(f16)
        slope = g.dtype.type(negative_slope)
        rest = g.dtype.type(1) - slope
        if slope + rest == 1:  # (x > 0) * rest + slope is then exactly 1 or slope: g * it, three passes
            factor = np.multiply(np.greater(x, 0), rest, out=pool.empty(g.shape, g.dtype))
            factor += slope
            return np.multiply(g, factor, out=factor)
        dx = np.multiply(g, slope, out=pool.empty(g.shape, g.dtype))
        return select_into(np, pool, np.greater(x, 0), g, dx)

    return {"leaky_relu": leaky_relu, "leaky_relu_backward": leaky_relu_backward}
