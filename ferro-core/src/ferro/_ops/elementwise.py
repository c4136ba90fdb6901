"""Elementwise ops: one table row per op, and the builders of their functions.

Each row gives the op's name, dtype rule (see ``_registry.DTYPE_RULES``),
what its backward saves and one formula per input, written in ferro ops so
that double backward works. ``x``, ``y`` are the inputs (a binary op's input
may be a Python scalar), ``out`` the op's output, ``g`` its incoming gradient.
The engine sums a gradient back over broadcast dimensions and casts it to the
input's dtype, so the formulas ignore both.
"""

from __future__ import annotations

import cmath
import functools
import math
from collections.abc import Callable
from typing import Any

from .._core.c_helpers import DIGAMMA, ERFINV, FFLOORDIV, FREM, IFLOORDIV, IPOW, IREM, LOGADDEXP, SIGMOID
from .._core.dtypes import bfloat16, bool_, result_type
from .._core.expr import Expr, floating, same
from .._core.grad_mode import _state
from .._core.modes import ARMED, layered
from .._core.node import OUT
from .._core.records import OpDef, register
from .._core.tensor import Tensor, _wrap
from .._core.tensor import _new as _new_object
from ..dispatch._dispatch import check_devices, record, record1, record2, resolve, run_elsewhere, shape_error
from ..errors import DTypeError
from .output_grads import by_output

__all__ = ["UNARY", "BINARY", "build_unary", "build_binary", "where"]


def _zero(g: Tensor, *_: Any) -> Tensor:
    return g * 0


def _c(v: Any) -> Any:
    """The conjugate of a complex tensor or number; anything real unchanged.

    Complex gradients are conjugate Wirtinger derivatives (PyTorch's convention): for a holomorphic
    ``f``, ``grad_x = g * conj(f'(x))``, so every formula below conjugates the derivative it multiplies.
    """
    if isinstance(v, Tensor):
        return v.conj() if v._dtype.kind == "c" else v
    return v.conjugate() if isinstance(v, complex) else v


def _mul_grad(g: Tensor, x: Any, y: Any) -> Tensor:
    """mul's gradient for ``x``, ``g * _c(y)``, in one frame (the formula of ``y`` swaps the operands)."""
    if isinstance(y, Tensor):
        return g * (y.conj() if y._dtype.kind == "c" else y)
    return g * (y.conjugate() if isinstance(y, complex) else y)


def _div_grad(g: Tensor, x: Any, y: Any) -> Tensor:
    """div's gradient for ``x``, ``g / _c(y)``; a real divisor (``t / 3.0``, a real tensor) without ``_c``'s frame."""
    if type(y) is float or (isinstance(y, Tensor) and y._dtype.kind != "c"):
        return g / y
    return g / _c(y)


def _abs_grad(g: Tensor, x: Tensor) -> Tensor:
    # sgn(x) = x / |x| for complex x (0 at 0), as PyTorch: g is real, the gradient complex.
    return g * (x.sgn() if x._dtype.is_complex else x.sign())


def _log(x: Any) -> Any:
    return x.log() if isinstance(x, Tensor) else math.log(x)


def _pow_grad_base(g: Tensor, x: Any, y: Any) -> Tensor:
    # d/dx x**y = y * x**(y - 1); 0 where y == 0 (PyTorch), not 0 * inf = nan at x == 0.
    if not isinstance(y, Tensor):
        return g * 0.0 if y == 0 else g * _c(y * x ** (y - 1))
    return where(y == 0, 0.0, g * _c(y * x ** (y - 1)))


def _pow_grad_exponent(g: Tensor, x: Any, y: Any) -> Tensor:
    # d/dy x**y = x**y * log(x); PyTorch masks x == 0 with y >= 0 to 0 (x == 0 with y < 0 gives -inf).
    # x**y is computed again rather than saved, so that the output may change in place (as in PyTorch).
    out = x ** y
    if out._dtype.is_complex:
        return g * _c(out * (x.log() if isinstance(x, Tensor) else cmath.log(x)))
    if isinstance(x, Tensor):
        return where((x == 0) & (y >= 0), 0.0, g * out * x.log())
    if x == 0:
        return where(y >= 0, 0.0, g * out * -math.inf)
    return g * out * (math.log(x) if x > 0 else math.nan)


def _atan2_grads() -> tuple[Callable[..., Any], Callable[..., Any]]:
    # d atan2(x, y) = (y dx - x dy) / (x**2 + y**2); 0 at the origin, as PyTorch.
    def inv(x: Any, y: Any) -> Tensor:
        d = x * x + y * y
        zero = d == 0
        return where(zero, 0.0, 1 / where(zero, 1.0, d))
    return (lambda g, x, y: g * y * inv(x, y), lambda g, x, y: -g * x * inv(x, y))


def _trigamma(x: Tensor) -> Tensor:
    """polygamma(1, x), the derivative of digamma, in ferro ops (so it differentiates again).

    Six steps of the recurrence psi1(z) = psi1(z + 1) + 1 / z**2, then the
    asymptotic series at z + 6 >= 6.5 (error below 1e-11); below 0.5 the
    reflection psi1(x) = pi**2 / sin(pi x)**2 - psi1(1 - x). Both branches see
    only safe arguments, so ``where`` passes no inf or nan into a gradient.
    """
    neg = x < 0.5
    z = where(neg, 1 - x, x)
    acc = None
    for k in range(6):
        term = 1 / ((z + k) * (z + k))
        acc = term if acc is None else acc + term
    iw = 1 / (z + 6)
    iw2 = iw * iw
    series = iw + iw2 / 2 + iw * iw2 * (1 / 6 + iw2 * (-1 / 30 + iw2 * (1 / 42 + iw2 * (-1 / 30 + iw2 * 5 / 66))))
    t = acc + series
    s = (where(neg, x, 0.25) * math.pi).sin()
    return where(neg, math.pi ** 2 / (s * s) - t, t)


def _max_grad(g: Tensor, x: Any, y: Any) -> Tensor:
    return where(x > y, g, where(x == y, g / 2, 0.0))


X, Y = 0, 1

#: (name, dtype rule, saves, grads, doc, expression). grads None: not differentiable. The expression is the C
#: the device backends generate the op's kernels from (``ferro/_core/expr.py``; its helpers: ``c_helpers.py``).
UNARY: list[tuple[str, str, tuple[Any, ...], tuple[Callable[..., Any], ...] | None, str, Expr]] = [
    ("neg", "numeric", (), (lambda g: -g,), "Negate each element.", same("-a")),
    ("positive", "numeric", (), (lambda g: g,), "Each element unchanged (unary +).", same("a")),
    ("abs", "numeric_magnitude", (X,), (_abs_grad,), "Absolute value (the modulus for complex).",
     Expr("fabs(a)", "($T)abs(a)")),
    ("sign", "real_numeric", (), (_zero,), "-1, 0 or 1 by the sign of each element (nan for nan).",
     Expr("isnan(a) ? a : ($T)((a > 0) - (a < 0))", "($T)((a > 0) - (a < 0))")),
    ("exp", "float", (OUT,), (lambda g, out: g * (out.conj() if out._dtype.kind == "c" else out),),
     "e to the power of each element.", floating("exp(a)")),
    ("log", "float", (X,), (lambda g, x: g / _c(x),), "Natural logarithm.", floating("log(a)")),
    ("sqrt", "float", (OUT,), (lambda g, out: g / _c(out * 2),), "Square root.", floating("sqrt(a)")),
    ("sin", "float", (X,), (lambda g, x: g * _c(x.cos()),), "Sine.", floating("sin(a)")),
    ("cos", "float", (X,), (lambda g, x: -g * _c(x.sin()),), "Cosine.", floating("cos(a)")),
    ("tan", "float", (OUT,), (lambda g, out: g * _c(out * out + 1),), "Tangent.", floating("tan(a)")),
    ("tanh", "float", (OUT,), (by_output("tanh_backward", lambda g, out: g * _c(1 - out * out)),),
     "Hyperbolic tangent.", floating("tanh(a)")),
    ("sigmoid", "float", (OUT,), (by_output("sigmoid_backward", lambda g, out: g * _c(1 - out) * _c(out)),),
     "Logistic sigmoid 1 / (1 + exp(-x)).", floating("ferro_sigmoid(a)", SIGMOID)),
    # PyTorch's threshold_backward: 0 where out <= 0, else g (a NaN passes g; no inf * 0, no -0.0)
    ("relu", "real_numeric", (OUT,), (by_output("relu_backward", lambda g, out: where(out <= 0, 0.0, g)),),
     "max(x, 0).",
     Expr("(a > ($T)0 || isnan(a)) ? a : ($T)0", "a > 0 ? a : ($T)0")),
    ("square", "numeric", (X,), (lambda g, x: g * _c(x) * 2,), "x * x.", same("a * a")),
    ("log1p", "float", (X,), (lambda g, x: g / _c(x + 1),), "log(1 + x), accurate near 0.", floating("log1p(a)")),
    ("expm1", "float", (OUT,), (lambda g, out: g * _c(out + 1),), "exp(x) - 1, accurate near 0.", floating("expm1(a)")),
    ("floor", "real_numeric", (), (_zero,), "Round down.", Expr("floor(a)", "a")),
    ("ceil", "real_numeric", (), (_zero,), "Round up.", Expr("ceil(a)", "a")),
    ("trunc", "real_numeric", (), (_zero,), "Round toward zero.", Expr("trunc(a)", "a")),
    ("round", "real_numeric", (), (_zero,), "Round half to even.", Expr("rint(a)", "a")),
    ("asin", "float", (X,), (lambda g, x: g / _c((1 - x * x).sqrt()),), "Inverse sine.", floating("asin(a)")),
    ("acos", "float", (X,), (lambda g, x: -g / _c((1 - x * x).sqrt()),), "Inverse cosine.", floating("acos(a)")),
    ("atan", "float", (X,), (lambda g, x: g / _c(x * x + 1),), "Inverse tangent.", floating("atan(a)")),
    ("sinh", "float", (X,), (lambda g, x: g * _c(x.cosh()),), "Hyperbolic sine.", floating("sinh(a)")),
    ("cosh", "float", (X,), (lambda g, x: g * _c(x.sinh()),), "Hyperbolic cosine.", floating("cosh(a)")),
    ("asinh", "float", (X,), (lambda g, x: g / _c((x * x + 1).sqrt()),), "Inverse hyperbolic sine.",
     floating("asinh(a)")),
    # sqrt(x - 1) * sqrt(x + 1), not sqrt(x * x - 1): the same for real x > 1, the right branch for complex x.
    ("acosh", "float", (X,), (lambda g, x: g / _c((x - 1).sqrt() * (x + 1).sqrt()),), "Inverse hyperbolic cosine.",
     floating("acosh(a)")),
    ("atanh", "float", (X,), (lambda g, x: g / _c(1 - x * x),), "Inverse hyperbolic tangent.", floating("atanh(a)")),
    ("log2", "float", (X,), (lambda g, x: g / _c(x * math.log(2)),), "Base-2 logarithm.", floating("log2(a)")),
    ("log10", "float", (X,), (lambda g, x: g / _c(x * math.log(10)),), "Base-10 logarithm.", floating("log10(a)")),
    ("erf", "real_float", (X,), (lambda g, x: g * (-x * x).exp() * (2 / math.sqrt(math.pi)),), "Error function.",
     floating("erf(a)")),
    ("erfc", "real_float", (X,), (lambda g, x: g * (-x * x).exp() * (-2 / math.sqrt(math.pi)),),
     "Complementary error function 1 - erf(x).", floating("erfc(a)")),
    ("erfinv", "real_float", (OUT,), (lambda g, out: g * (out * out).exp() * (math.sqrt(math.pi) / 2),),
     "Inverse error function.", floating("ferro_erfinv(a)", ERFINV)),
    ("lgamma", "real_float", (X,), (lambda g, x: g * x.digamma(),), "log |Gamma(x)|.",
     floating("isinf(a) ? fabs(a) : lgamma(a)")),
    ("digamma", "real_float", (X,), (lambda g, x: g * _trigamma(x),), "The logarithmic derivative of Gamma.",
     floating("ferro_digamma(a)", DIGAMMA)),
    ("isnan", "to_bool", (), None, "Whether each element is NaN.", Expr("isnan(a)", "0")),
    ("isinf", "to_bool", (), None, "Whether each element is infinite.", Expr("isinf(a)", "0")),
    ("isfinite", "to_bool", (), None, "Whether each element is finite.", Expr("isfinite(a)", "1")),
    ("logical_not", "logical", (), None, "Logical not (zero is False).", same("a == 0")),
    ("bitwise_not", "integral", (), None, "Bitwise not (logical not for bool).", Expr(None, "~a", "a == 0")),
]

BINARY: list[tuple[str, str, tuple[Any, ...], tuple[Callable[..., Any], ...] | None, str, Expr]] = [
    ("add", "same", (), (lambda g: g, lambda g: g), "x + y.", same("a + b")),
    ("sub", "numeric", (), (lambda g: g, lambda g: -g), "x - y.", same("a - b")),
    ("mul", "same", (X, Y), (_mul_grad, lambda g, x, y: _mul_grad(g, y, x)), "x * y.", same("a * b")),
    ("div", "float", (X, Y), (_div_grad, lambda g, x, y: -g * _c(x / (y * y))),
     "x / y (true division).", floating("a / b")),
    ("pow", "numeric", (X, Y), (_pow_grad_base, _pow_grad_exponent), "x ** y.",
     Expr("pow(a, b)", "ferro_ipow(a, b)", None, (IPOW,))),
    ("maximum", "real", (X, Y), (_max_grad, lambda g, x, y: _max_grad(g, y, x)), "Elementwise maximum.",
     Expr("(isnan(a) || isnan(b)) ? a + b : fmax(a, b)", "max(a, b)")),
    ("minimum", "real", (X, Y), (lambda g, x, y: _max_grad(g, y, x), _max_grad), "Elementwise minimum.",
     Expr("(isnan(a) || isnan(b)) ? a + b : fmin(a, b)", "min(a, b)")),
    ("atan2", "real_float", (X, Y), _atan2_grads(), "atan(x / y) by quadrant.", floating("atan2(a, b)")),
    ("floor_divide", "real_numeric", (), (_zero, _zero), "floor(x / y).",
     Expr("ferro_ffloordiv(a, b)", "ferro_ifloordiv(a, b, err)", None, (FFLOORDIV, IFLOORDIV))),
    ("remainder", "real_numeric", (X, Y), (lambda g, x, y: g, lambda g, x, y: -g * (x / y).floor()),
     "x - floor(x / y) * y (the sign of y, as Python's %).",
     Expr("ferro_frem(a, b)", "ferro_irem(a, b, err)", None, (FREM, IREM))),
    ("hypot", "real_float", (X, Y, OUT), (lambda g, x, y, out: g * x / out, lambda g, x, y, out: g * y / out),
     "sqrt(x**2 + y**2) without overflow.", floating("hypot(a, b)")),
    ("logaddexp", "real_float", (X, Y, OUT), (lambda g, x, y, out: g * (x - out).exp(),
                                              lambda g, x, y, out: g * (y - out).exp()), "log(exp(x) + exp(y)).",
     floating("ferro_logaddexp(a, b)", LOGADDEXP)),
    ("eq", "to_bool", (), None, "x == y.", same("a == b")),
    ("ne", "to_bool", (), None, "x != y.", same("a != b")),
    ("lt", "real_to_bool", (), None, "x < y.", same("a < b")),
    ("le", "real_to_bool", (), None, "x <= y.", same("a <= b")),
    ("gt", "real_to_bool", (), None, "x > y.", same("a > b")),
    ("ge", "real_to_bool", (), None, "x >= y.", same("a >= b")),
    ("logical_and", "logical", (), None, "Logical and.", same("(a != 0) && (b != 0)")),
    ("logical_or", "logical", (), None, "Logical or.", same("(a != 0) || (b != 0)")),
    ("logical_xor", "logical", (), None, "Logical xor.", same("(a != 0) != (b != 0)")),
    ("bitwise_and", "integral", (), None, "Bitwise and (logical for bool).", Expr(None, "a & b")),
    ("bitwise_or", "integral", (), None, "Bitwise or.", Expr(None, "a | b")),
    ("bitwise_xor", "integral", (), None, "Bitwise xor.", Expr(None, "a ^ b")),
    ("bitwise_left_shift", "integer", (), None, "x << y.", Expr(None, "a << b")),
    ("bitwise_right_shift", "integer", (), None, "x >> y (arithmetic for signed).", Expr(None, "a >> b")),
]

#: Ops without a primitive kernel, written in other ops (backends may still supply one).
DECOMPOSITIONS: list[tuple[str, str, tuple[Any, ...], tuple[Callable[..., Any], ...], Callable[..., Any], str,
                           Expr]] = [
    ("reciprocal", "float", (OUT,), (lambda g, out: -g * _c(out * out),), lambda x: 1 / x, "1 / x.",
     floating("($T)1 / a")),
    ("rsqrt", "float", (OUT,), (lambda g, out: g * _c(out * out * out) * -0.5,), lambda x: 1 / x.sqrt(),
     "1 / sqrt(x).", floating("($T)1 / sqrt(a)")),
    ("exp2", "float", (OUT,), (lambda g, out: g * _c(out) * math.log(2),), lambda x: 2.0 ** x, "2 ** x.",
     floating("exp2(a)")),
    ("frac", "real_floating", (), (lambda g: g,), lambda x: x - x.trunc(),
     "The fractional part x - trunc(x).", floating("a - trunc(a)")),
]


def _saved(spec: tuple[Any, ...], inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    if not spec:  # add, sub, neg...: nothing to keep (and no generator to run)
        return ()
    if spec == (0, 1) or (spec == (0,) and len(inputs) == 1):  # the inputs as given (mul, div, sin...)
        return inputs
    return tuple(OUT if s is OUT else inputs[s] for s in spec)


def build_unary(op: OpDef) -> Callable[[Tensor], Tensor]:
    """The public function of a unary elementwise op (the hot path)."""
    name, saves = op.name, op.saves
    fixed = X not in saves  # what the node saves is the same for every call (nothing, or the output)

    def fn(x: Tensor) -> Tensor:
        try:
            dt = x._dtype
            dev = x._device
            k, table = dev._fast[name]
            compute, out_dt = table[dt]
        except (AttributeError, KeyError, TypeError):
            return _unary_slow(op, x)
        # _wrap, inlined: this is the hot path.
        r = _new_object(Tensor)
        r._data = k(x._data if compute is dt else dev._kernels["cast"](x._data, compute))
        r._dtype, r._device, r.grad_fn, r._vc = out_dt, dev, None, [0]
        r._grad = r._base = r._hooks = r._retains = r._view = None
        if x._rg and _state.enabled:
            record1(r, op, x, saves if fixed else _saved(saves, (x,)), None, True)
        else:
            r._rg = False
        return r

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op.doc
    fn.__dispatches__ = True  # type: ignore[attr-defined]  # its slow path steps into the layers
    return fn


def _unary_slow(op: OpDef, x: Any) -> Tensor:
    if ARMED[0] and (r := layered(op, functools.partial(_unary_run, op), (x,))) is not None:
        return r
    return _unary_run(op, x)


def _unary_run(op: OpDef, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    dev = x._device
    dev.backend  # binds the device  # noqa: B018
    k, compute, out_dt = resolve(op, dev, x._dtype)
    if k is None:
        return run_elsewhere(op, dev, x._dtype, (x,), {})
    data = x._data if compute is x._dtype else dev._kernels["cast"](x._data, compute)
    r = _wrap(k(data), out_dt, dev)
    if x._rg and _state.enabled:
        record1(r, op, x, _saved(op.saves, (x,)), None, True)
    return r


def build_binary(op: OpDef) -> Callable[[Any, Any], Tensor]:
    """The public function of a binary elementwise op (the hot path)."""
    name, saves = op.name, op.saves
    both = saves == (X, Y)  # the node saves the inputs as given (mul, div...)

    def fn(x: Any, y: Any) -> Tensor:
        try:
            dt = x._dtype
            dev = x._device
            k, table = dev._fast[name]
            compute, out_dt = table[dt]
            ty = type(y)
            if ty is float or ty is int:  # ``t * 2.0``: a weak number (see _binary_weak), without an exception
                if compute is not dt or dt.kind != "f" or dt is bfloat16:
                    raise KeyError
                yd, y_rg = y, False
            else:
                if y._dtype is not dt or y._device is not dev:
                    raise KeyError
                yd, y_rg = y._data, y._rg
        except (AttributeError, KeyError, TypeError):
            return _binary_slow(op, x, y)
        if compute is dt:
            xd = x._data
        else:
            cast = dev._kernels["cast"]
            xd, yd = cast(x._data, compute), cast(yd, compute)
        r = _new_object(Tensor)  # _wrap, inlined: this is the hot path.
        try:
            r._data = k(xd, yd)
        except ValueError as e:
            raise shape_error(name, [x.shape, getattr(y, "shape", ())], e, dev) from None
        r._dtype, r._device, r.grad_fn, r._vc = out_dt, dev, None, [0]
        r._grad = r._base = r._hooks = r._retains = r._view = None
        if (x._rg or y_rg) and _state.enabled:
            record2(r, op, x, y, (x, y) if both else _saved(saves, (x, y)) if saves else ())
        else:
            r._rg = False
        return r

    def reflected(self: Any, other: Any) -> Tensor:
        """``other op self`` for the tensor ``self`` on the right (``2.0 - t``): a weak number straight to
        :func:`_binary_weak`, without the exception that :func:`fn` would take first."""
        to = type(other)
        if (to is float or to is int) and (r := _binary_weak(op, other, self, self)) is not None:
            return r
        return fn(other, self)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op.doc
    fn.__dispatches__ = True  # type: ignore[attr-defined]
    reflected.__name__ = reflected.__qualname__ = f"r{name}"
    reflected.__doc__ = f"``other {name} self``."
    fn.reflected = reflected  # type: ignore[attr-defined]  # the reflected operator (Tensor.__rsub__...)
    return fn


_SCALARS = (bool, int, float, complex)


def _binary_slow(op: OpDef, x: Any, y: Any) -> Tensor:
    """Active dispatch layers, a floating tensor with a Python number, then :func:`_binary_run`."""
    if ARMED[0]:
        if (r := layered(op, functools.partial(_binary_run, op), (x, y))) is not None:
            return r
    elif (ty := type(y)) is float or ty is int:
        if (r := _binary_weak(op, x, y, x)) is not None:
            return r
    elif (tx := type(x)) is float or tx is int:
        if (r := _binary_weak(op, x, y, y)) is not None:
            return r
    return _binary_run(op, x, y)


def _binary_weak(op: OpDef, x: Any, y: Any, t: Any) -> Tensor | None:
    """``t * 2.0`` and ``2.0 - t``: a floating tensor ``t`` with a Python float or int (not bool) keeps its dtype
    (the number is "weak", as in PyTorch), so the kernel takes the number as it is; None where that does not
    hold (bfloat16, integer or complex tensors, a device without the kernel): :func:`_binary_run` decides."""
    try:
        dt = t._dtype
        if dt.kind != "f" or dt is bfloat16:  # before any table lookup: a capability trace sees none
            return None
        dev = t._device
        k, table = dev._fast[op.name]
        compute, out_dt = table[dt]
    except (AttributeError, KeyError, TypeError):
        return None
    if compute is not dt:
        return None
    r = _new_object(Tensor)  # _wrap, inlined, as on the hot path
    r._data = k(x._data if x is t else x, y._data if y is t else y)
    r._dtype, r._device, r.grad_fn, r._vc = out_dt, dev, None, [0]
    r._grad = r._base = r._hooks = r._retains = r._view = None
    if t._rg and _state.enabled:
        record2(r, op, x, y, _saved(op.saves, (x, y)))
    else:
        r._rg = False
    return r


def _binary_run(op: OpDef, x: Any, y: Any) -> Tensor:
    """Scalars, mixed dtypes, devices and missing kernels for a binary op."""
    tx, ty = isinstance(x, Tensor), isinstance(y, Tensor)
    if not (tx or ty):
        raise TypeError(f"{op.name}(): expected at least one Tensor, got {type(x).__name__} and {type(y).__name__}")
    if not (tx and ty):
        try:
            x, y = (_operand(v, y if v is x else x) for v in (x, y))
        except TypeError as e:
            raise TypeError(f"{op.name}: {e}") from None
        tx, ty = isinstance(x, Tensor), isinstance(y, Tensor)
    if tx and ty and x._device is not y._device:
        # A 0-d CPU tensor mixes with any device, as a scalar (PyTorch's rule).
        if y.ndim == 0 and y._device.type == "cpu":
            y, ty = y.item(), False
        elif x.ndim == 0 and x._device.type == "cpu":
            x, tx = x.item(), False
        else:
            check_devices(op.name, [x, y])
    tensors = [v for v in (x, y) if isinstance(v, Tensor)]
    dev = tensors[0]._device
    dev.backend  # binds the device  # noqa: B018
    dtype = result_type([t._dtype for t in tensors if t._data.shape],
                        [t._dtype for t in tensors if not t._data.shape],
                        [v for v in (x, y) if not isinstance(v, Tensor)])
    k, compute, out_dt = resolve(op, dev, dtype)
    if op.name == "sub" and any(v._dtype is bool_ if isinstance(v, Tensor) else isinstance(v, bool) for v in (x, y)):
        raise DTypeError(f"sub: subtraction with a bool operand is not supported ({_dtype_of(x)} - {_dtype_of(y)}); "
                         "to invert a mask use ~ or logical_not()")
    if k is None:
        return run_elsewhere(op, dev, dtype, (x, y), {})
    if out_dt is compute and compute.kind in "iu":  # integer arithmetic: an int wraps into the dtype, as in PyTorch
        x, y = (x if tx else _wrap_int(x, compute)), (y if ty else _wrap_int(y, compute))
    cast = dev._kernels["cast"]
    xd = (x._data if x._dtype is compute else cast(x._data, compute)) if tx else x
    yd = (y._data if y._dtype is compute else cast(y._data, compute)) if ty else y
    if compute is bfloat16:  # a Python scalar is "weak" for NumPy's own dtypes, not for ml_dtypes' bfloat16
        xd, yd = (xd if tx else _scalar_data(xd, compute, dev)), (yd if ty else _scalar_data(yd, compute, dev))
    try:
        data = k(xd, yd)
    except ValueError as e:
        raise shape_error(op.name, [getattr(v, "shape", ()) for v in (x, y)], e, dev) from None
    r = _wrap(data, out_dt, dev)
    if ((tx and x._rg) or (ty and y._rg)) and _state.enabled:
        record2(r, op, x, y, _saved(op.saves, (x, y)))
    return r


def _scalar_data(v: Any, dtype: Any, dev: Any) -> Any:
    """A Python scalar as a native 0-d array of ``dtype``."""
    return dev._kernels["full"]((), v, dtype)


def _dtype_of(v: Any) -> str:
    return str(v._dtype) if isinstance(v, Tensor) else type(v).__name__


def _wrap_int(v: Any, dtype: Any) -> Any:
    """A Python int outside ``dtype``'s range wrapped into it (``uint8 + 300`` adds 44, as PyTorch does)."""
    if type(v) is not int:
        return v
    span = 1 << (dtype.itemsize * 8)
    lo = -(span >> 1) if dtype.kind == "i" else 0
    return v if lo <= v < lo + span else (v - lo) % span + lo


def _operand(v: Any, other: Tensor) -> Any:
    """A non-tensor operand as a Python number, or a NumPy array as a tensor on ``other``'s device."""
    if isinstance(v, (Tensor, *_SCALARS)):
        return v
    if hasattr(v, "__array__") and hasattr(v, "dtype"):
        if getattr(v, "ndim", 1) == 0 and hasattr(v, "item"):
            return v.item()  # NumPy scalars behave as Python numbers
        from .._creation import as_tensor
        return as_tensor(v, device=other._device)
    raise TypeError(f"unsupported operand type {type(v).__name__}; use a Tensor or a Python number")


def _where_grads() -> tuple[Callable[..., Any] | None, ...]:
    return (None, lambda g, c: where(c, g, 0.0), lambda g, c: where(c, 0.0, g))


WHERE = register(OpDef("where", "ternary", "Elements of x where condition is True, else of y.",
                       dtype_rule="same", saves=(0,), grads=_where_grads(), expr=same("a ? b : c")))


def where(condition: Tensor, x: Any, y: Any) -> Tensor:
    """``x`` where ``condition`` is True, else ``y`` (x and y may be Python scalars)."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be a bool Tensor, not {type(condition).__name__}")
    if condition._dtype.name != "bool":
        raise TypeError(f"where(): expected condition to be a bool tensor, got {condition._dtype}")
    tensors = [condition] + [v for v in (x, y) if isinstance(v, Tensor)]
    dev = check_devices("where", tensors)
    dev.backend  # noqa: B018
    vals = [v for v in (x, y) if isinstance(v, Tensor)]
    dtype = result_type([t._dtype for t in vals if t._data.shape], [t._dtype for t in vals if not t._data.shape],
                        [v for v in (x, y) if not isinstance(v, Tensor)]) if vals else \
        result_type([], [], [x, y])
    k, compute, out_dt = resolve(WHERE, dev, dtype)
    if k is None:
        return run_elsewhere(WHERE, dev, dtype, (condition, x, y), {})
    cast = dev._kernels["cast"]

    def native(v: Any) -> Any:
        if isinstance(v, Tensor):
            return v._data if v._dtype is compute else cast(v._data, compute)
        return v if compute is not bfloat16 else _scalar_data(v, compute, dev)
    try:
        data = k(condition._data, native(x), native(y))
    except ValueError as e:
        raise shape_error("where", [getattr(v, "shape", ()) for v in (condition, x, y)], e, dev) from None
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        data = cast(data, compute)
    r = _wrap(data, out_dt, dev)
    if any(isinstance(v, Tensor) and v._rg for v in (x, y)) and _state.enabled:
        record(r, WHERE, (condition, x, y), (condition,))
    return r


WHERE.fn = where


def _register_table() -> dict[str, Callable[..., Any]]:
    fns: dict[str, Callable[..., Any]] = {"where": where}
    # An elementwise formula multiplies the incoming gradient by the derivative, so for real dtypes the
    # backward formulas are also the forward-mode rules (tangent in, tangent out).
    for name, rule, saves, grads, doc, expr in UNARY:
        op = register(OpDef(name, "unary", doc, dtype_rule=rule, saves=saves, grads=grads, jvp=grads, expr=expr))
        op.fn = fns[name] = build_unary(op)
    for name, rule, saves, grads, doc, expr in BINARY:
        op = register(OpDef(name, "binary", doc, dtype_rule=rule, saves=saves, grads=grads, jvp=grads, expr=expr))
        op.fn = fns[name] = build_binary(op)
    for name, rule, saves, grads, decomp, doc, expr in DECOMPOSITIONS:
        op = register(OpDef(name, "unary", doc, dtype_rule=rule, saves=saves, grads=grads, decomposition=decomp,
                            jvp=grads, expr=expr))
        op.fn = fns[name] = build_unary(op)
    return fns


FUNCTIONS = _register_table()
INPLACE = [n for n, *_ in UNARY if n not in ("isnan", "isinf", "isfinite", "positive")] + \
          [n for n, *_ in BINARY] + [n for n, *_ in DECOMPOSITIONS]

