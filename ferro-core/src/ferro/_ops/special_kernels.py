"""``torch.special``'s functions that are one kernel each: Bessel functions, Airy's Ai, the orthogonal polynomials,
Hurwitz's zeta, the regularized incomplete gamma functions, ``erfcx``.

Each is an elementwise op with an expression (its C: ``ferro/_core/c_special.py``), from which the OpenCL and
CUDA backends generate kernels; the CPU backend calls SciPy (the polynomials: NumPy, ``backends/_polynomials.py``).
Gradients are PyTorch's: ``i0``, ``i0e``, ``i1``, ``i1e``, ``erfcx``, and ``zeta`` / ``gammainc`` / ``gammaincc``
in their second argument; the others (and those first arguments) raise at backward, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.c_special import BESSEL, ERFCX, IGAMMA, IGAMMAC, POLYNOMIALS, SPHERICAL_J0, ZETA
from .._core.expr import Expr
from .._core.node import OUT
from .._core.records import OpDef, register
from .._core.tensor import Tensor
from .elementwise import build_binary, build_unary, where

__all__ = ["FUNCTIONS", "UNARY_NAMES", "BINARY_NAMES"]

X, Y = 0, 1
_2_SQRT_PI = 2 / math.sqrt(math.pi)


def _fn(name: str) -> Callable[..., Tensor]:
    return FUNCTIONS[name]


def _no_grad_of(op: str, arg: str) -> Callable[..., Any]:
    """A backward formula that refuses: PyTorch has no derivative of ``op`` in ``arg``."""
    def fail(*_: Any, **__: Any) -> Any:
        raise RuntimeError(f"the derivative for '{op}: {arg}' is not implemented")
    return fail


def _i1_over_x(x: Tensor, i1x: Tensor) -> Tensor:
    """``i1(x) / x`` with its limit 1/2 at 0 (no 0 / 0 in the value or its gradient)."""
    zero = x == 0
    return where(zero, 0.5, i1x / where(zero, 1.0, x))


def _i1_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * (_fn("i0")(x) - _i1_over_x(x, _fn("i1")(x)))


def _i1e_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * (_fn("i0e")(x) - x.sign() * _fn("i1e")(x) - _i1_over_x(x, _fn("i1e")(x)))


def _igamma_density(a: Any, x: Tensor) -> Tensor:
    """``x^(a-1) e^-x / Gamma(a)``, the derivative of ``gammainc(a, x)`` in ``x``."""
    lg = a.lgamma() if isinstance(a, Tensor) else math.lgamma(a)
    return ((a - 1) * x.log() - x - lg).exp()


#: (name, saves, grads or None: not differentiable, doc); the expressions are in _EXPRS
_UNARY: list[tuple[str, tuple[Any, ...], tuple[Callable[..., Any], ...] | None, str]] = [
    ("i0", (X,), (lambda g, x: g * _fn("i1")(x),), "The modified Bessel function of the first kind of order 0."),
    ("i0e", (X, OUT), (lambda g, x, out: g * (_fn("i1e")(x) - x.sign() * out),),
     "The exponentially scaled modified Bessel function of the first kind of order 0, exp(-|x|) i0(x)."),
    ("i1", (X,), (_i1_grad,), "The modified Bessel function of the first kind of order 1."),
    ("i1e", (X,), (_i1e_grad,), "The exponentially scaled modified Bessel function of order 1, exp(-|x|) i1(x)."),
    ("modified_bessel_k0", (), None, "The modified Bessel function of the second kind of order 0."),
    ("modified_bessel_k1", (), None, "The modified Bessel function of the second kind of order 1."),
    ("scaled_modified_bessel_k0", (), None, "exp(x) modified_bessel_k0(x)."),
    ("scaled_modified_bessel_k1", (), None, "exp(x) modified_bessel_k1(x)."),
    ("bessel_j0", (), None, "The Bessel function of the first kind of order 0."),
    ("bessel_j1", (), None, "The Bessel function of the first kind of order 1."),
    ("bessel_y0", (), None, "The Bessel function of the second kind of order 0."),
    ("bessel_y1", (), None, "The Bessel function of the second kind of order 1."),
    ("spherical_bessel_j0", (), None, "The spherical Bessel function of the first kind of order 0, sin(x) / x."),
    ("airy_ai", (), None, "Airy's function Ai(x)."),
    ("erfcx", (X, OUT), (lambda g, x, out: g * (2 * x * out - _2_SQRT_PI),), "The scaled complementary error "
     "function exp(x^2) erfc(x)."),
]
_EXPRS: dict[str, Expr] = {
    **{n: Expr(e, helpers=h) for n, (e, h) in BESSEL.items()},
    "spherical_bessel_j0": Expr("ferro_spherical_j0(a)", helpers=(SPHERICAL_J0,)),
    "erfcx": Expr("ferro_erfcx(a)", helpers=(ERFCX,)),
    **{n: Expr(e, helpers=h) for n, (e, h) in POLYNOMIALS.items()},
    "zeta": Expr("ferro_zeta(a, b)", helpers=(ZETA,)),
    "gammainc": Expr(IGAMMA[0], helpers=IGAMMA[1]), "gammaincc": Expr(IGAMMAC[0], helpers=IGAMMAC[1]),
}

_POLY_DOC = {
    "chebyshev_polynomial_t": "The Chebyshev polynomial of the first kind T_n(x).",
    "chebyshev_polynomial_u": "The Chebyshev polynomial of the second kind U_n(x).",
    "chebyshev_polynomial_v": "The Chebyshev polynomial of the third kind V_n(x).",
    "chebyshev_polynomial_w": "The Chebyshev polynomial of the fourth kind W_n(x).",
    "hermite_polynomial_h": "The physicists' Hermite polynomial H_n(x).",
    "hermite_polynomial_he": "The probabilists' Hermite polynomial He_n(x).",
    "laguerre_polynomial_l": "The Laguerre polynomial L_n(x).",
    "legendre_polynomial_p": "The Legendre polynomial P_n(x).",
}
_BINARY: list[tuple[str, tuple[Any, ...], tuple[Callable[..., Any], ...] | None, str]] = [
    *((n, (), None, _POLY_DOC.get(n) or f"The shifted {_POLY_DOC[n[8:]][4:-1]} at 2x - 1 (n truncated to an integer).")
      for n in POLYNOMIALS),
    ("zeta", (X, Y), (_no_grad_of("zeta", "self"), lambda g, x, q: -g * x * _fn("zeta")(x + 1, q)),
     "The Hurwitz zeta function sum over k >= 0 of (q + k)^-x."),
    ("gammainc", (X, Y), (_no_grad_of("igamma", "input"), lambda g, a, x: g * _igamma_density(a, x)),
     "The regularized lower incomplete gamma function P(a, x)."),
    ("gammaincc", (X, Y), (_no_grad_of("igammac", "input"), lambda g, a, x: -g * _igamma_density(a, x)),
     "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."),
]


def _register() -> dict[str, Callable[..., Any]]:
    fns: dict[str, Callable[..., Any]] = {}
    for name, saves, grads, doc in _UNARY:
        op = register(OpDef(name, "unary", doc, dtype_rule="real_float", saves=saves, grads=grads, expr=_EXPRS[name]))
        op.fn = fns[name] = build_unary(op)
    for name, saves, grads, doc in _BINARY:
        op = register(OpDef(name, "binary", doc, dtype_rule="real_float", saves=saves, grads=grads,
                            expr=_EXPRS[name]))
        op.fn = fns[name] = build_binary(op)
    return fns


FUNCTIONS: dict[str, Callable[..., Any]] = _register()
UNARY_NAMES = [n for n, *_ in _UNARY]
BINARY_NAMES = [n for n, *_ in _BINARY]
