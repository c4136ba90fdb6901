"""float32's erf as NumPy passes, and the fused gelu built on it: ``gelu(x, approximate)`` and
``gelu_backward(grad, x, approximate)`` (the contract is in ``ferro/_ops/fused.py``).

The decomposition takes five ferro ops each way and, for ``approximate="none"``,
SciPy's ``erf``, which evaluates about 25 ns per element (float32 and float64
alike) where a NumPy pass takes well under one. float32 therefore evaluates
erf as Eigen's and XLA's rational approximation, ``x * P(x**2) / Q(x**2)``
on x clamped to [-4, 4] (erf is 1 in float32 beyond 3.92): within 4 float32
ulps of the exact erf over the normal float32 range, at about 25 NumPy passes,
with gelu's scale factors folded into the coefficients. float64 keeps SciPy's
erf (the approximation is float32's); 16-bit floats compute in float32 and
round once, as PyTorch does. The work runs over blocks of :data:`BLOCK` elements,
so that the scratch arrays stay in cache and no large temporary is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._blocked import BLOCK, block_runner
from ._quiet import ignoring
from ._threads import COSTLY_BLOCKS

__all__ = ["gelu_kernels", "BLOCK"]

# Eigen's generic_fast_erf_float: erf(t) = t * P(t*t) / Q(t*t) for |t| <= 4, highest power first.
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


def _scaled(coefs: tuple[float, ...], scale: float) -> tuple[float, ...]:
    """The coefficients of ``scale * C(s / 2)`` for the polynomial ``C(t)`` (highest power first): erf at
    ``x / sqrt(2)`` read as a polynomial in ``s = x**2``."""
    top = len(coefs) - 1
    return tuple(scale * c / 2.0 ** (top - i) for i, c in enumerate(coefs))


#: gelu(x) = x * (0.5 + z * P(z*z) / Q(z*z)), z = x clamped to +-4 sqrt(2): 0.5 * erf(x / sqrt(2)) in x.
_GELU_P = _scaled(_ERF_P, 0.5 / math.sqrt(2.0))
_GELU_Q = _scaled(_ERF_Q, 1.0)
_CLAMP = 4.0 * math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_K = math.sqrt(2.0 / math.pi)  # gelu_tanh(x) = x * (0.5 + 0.5 * tanh(K * x * (1 + C * x**2)))
_TANH_C = 0.044715


def gelu_kernels(np: Any, pool: Any, erf: Callable[[Any], Any]) -> dict[str, Callable[..., Any]]:
    """``gelu`` and ``gelu_backward`` over NumPy ``np``, their outputs from ``pool``; ``erf`` is the backend's
    (float64) erf kernel."""
    f32 = np.dtype(np.float32)
    wide_dtypes = (f32, np.dtype(np.float64))
    multiply, add, divide, exp = np.multiply, np.add, np.divide, np.exp
    quiet = ignoring(np)  # inf * 0 and NaN inputs give NaN, as PyTorch, without NumPy's warnings
    c32 = np.float32
    p32, q32 = tuple(map(c32, _GELU_P)), tuple(map(c32, _GELU_Q))
    clamp, half, zero, one = c32(_CLAMP), c32(0.5), c32(0), c32(1)

    def horner(s: Any, coefs: tuple[Any, ...], out: Any) -> Any:
        """coefs as a polynomial in s (highest power first), into out."""
        multiply(s, coefs[0], out=out)
        add(out, coefs[1], out=out)
        for c in coefs[2:]:
            multiply(out, s, out=out)
            add(out, c, out=out)
        return out

    def cdf32(x: Any, h: Any, s: Any, q: Any, r: Any) -> Any:
        """Phi(x) = 0.5 + 0.5 * erf(x / sqrt(2)) of a float32 block, into h (s, q, r: scratch)."""
        z = np.clip(x, -clamp, clamp, out=r)
        multiply(z, z, out=s)
        divide(horner(s, p32, h), horner(s, q32, q), out=h)
        multiply(h, z, out=h)  # z last: a subnormal z keeps what precision it has
        add(h, half, out=h)
        return np.clip(h, zero, one, out=h)  # near +-4 the approximation passes +-1 by an ulp: gelu(-30) is -0.0

    def cdf64(x: Any, h: Any) -> Any:
        multiply(x, 1.0 / math.sqrt(2.0), out=h)
        h[...] = erf(h)
        multiply(h, 0.5, out=h)
        return add(h, 0.5, out=h)

    def tanh_parts(x: Any, t: Any, u: Any) -> tuple[Any, Any]:
        """(tanh(K * x * (1 + C x**2)), its inner derivative K * (1 + 3 C x**2)) into t and u."""
        dt = x.dtype.type
        multiply(x, x, out=u)
        multiply(u, dt(_TANH_K * _TANH_C), out=t)
        add(t, dt(_TANH_K), out=t)
        multiply(t, x, out=t)
        np.tanh(t, out=t)
        multiply(u, dt(3 * _TANH_K * _TANH_C), out=u)
        add(u, dt(_TANH_K), out=u)
        return t, u

    def forward_block(x: Any, out: Any, approximate: str, s: Any, q: Any, r: Any) -> None:
        if approximate == "tanh":
            t, _ = tanh_parts(x, out, s)
            multiply(t, half if x.dtype == f32 else 0.5, out=t)
            add(t, half if x.dtype == f32 else 0.5, out=t)
        elif x.dtype == f32:
            cdf32(x, out, s, q, r)
        else:
            cdf64(x, out)
        multiply(out, x, out=out)

    def backward_block(g: Any, x: Any, out: Any, approximate: str, s: Any, q: Any, r: Any) -> None:
        dt = x.dtype.type
        if approximate == "tanh":
            # d/dx [0.5 x (1 + T)] = 0.5 (1 + T) + 0.5 x (1 - T**2) * inner', T = tanh(inner)
            t, u = tanh_parts(x, s, q)
            multiply(t, t, out=out)
            np.subtract(dt(1), out, out=out)
            multiply(out, u, out=out)
            multiply(out, x, out=out)
            add(out, t, out=out)
            add(out, dt(1), out=out)
            multiply(out, dt(0.5), out=out)
        else:  # Phi(x) + x * phi(x)
            h = cdf32(x, out, s, q, r) if x.dtype == f32 else cdf64(x, out)
            multiply(x, x, out=s)
            multiply(s, dt(-0.5), out=s)
            exp(s, out=s)
            multiply(s, x, out=s)
            multiply(s, dt(_INV_SQRT_2PI), out=s)
            add(h, s, out=h)
        multiply(out, g, out=out)

    blocked = block_runner(np, pool, least=COSTLY_BLOCKS)  # (its ~20 passes a block pay for a thread)

    def wide(x: Any) -> Any:  # float16 and bfloat16 (where the op hands it over) compute in float32
        return x if x.dtype in wide_dtypes else x.astype(f32)

    def checked(approximate: str) -> str:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return approximate

    @quiet
    def gelu(x: Any, approximate: str = "none") -> Any:
        y = blocked(forward_block, (wide(x),), checked(approximate))
        return y if y.dtype == x.dtype else y.astype(x.dtype)

    @quiet
    def gelu_backward(grad: Any, x: Any, approximate: str = "none") -> Any:
        xw = wide(x)
        g = np.broadcast_to(grad, x.shape).astype(xw.dtype, copy=False)
        dx = blocked(backward_block, (g, xw), checked(approximate))
        return dx if dx.dtype == x.dtype else dx.astype(x.dtype)

    return {"gelu": gelu, "gelu_backward": gelu_backward}
