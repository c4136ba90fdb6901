"""Elementwise functions of PyTorch written in other elementwise ops: ``isposinf``, ``isneginf``, ``isreal``,
``signbit``, ``copysign``, ``float_power``, ``fmax`` / ``fmin``, ``heaviside``, ``logaddexp2``, ``ldexp``,
``frexp``, ``nextafter``, ``rsub``, and the integer ``gcd`` / ``lcm`` (which also carry a C expression, so
device backends generate a kernel for them).

NaN and signed zeros follow PyTorch (``fmax`` / ``fmin`` skip a NaN operand, ``signbit(-0.0)`` is True,
``copysign`` takes the sign of ``-0.0``)."""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .._core.dtypes import bool_, complex128, float64, int32
from .._core.expr import Expr, Helper
from .._core.numeric_info import finfo
from .._core.records import OpDef, register, register_composites
from .._core.tensor import Tensor
from .._creation import ones_like, zeros_like
from ._rules import check_rule
from .elementwise import build_binary, where
from .shape import broadcast_shapes
from .stacking import broadcast_tensors

__all__ = ["FUNCTIONS", "METHODS", "INPLACE", "FrexpResult"]

#: What ``frexp`` returns: ``(mantissa, exponent)``, as ``torch.return_types.frexp``.
FrexpResult = namedtuple("FrexpResult", ["mantissa", "exponent"])


def isposinf(input: Tensor) -> Tensor:
    """True where ``input`` is +inf."""
    check_rule("isposinf", input)
    if not input._dtype.is_floating_point:
        return zeros_like(input, dtype=bool_)
    return input.isinf().logical_and(input > 0)


def isneginf(input: Tensor) -> Tensor:
    """True where ``input`` is -inf."""
    check_rule("isneginf", input)
    if not input._dtype.is_floating_point:
        return zeros_like(input, dtype=bool_)
    return input.isinf().logical_and(input < 0)


def isreal(input: Tensor) -> Tensor:
    """True where the imaginary part is 0 (everywhere for real dtypes)."""
    if input._dtype.is_complex:
        return input.imag == 0
    return ones_like(input, dtype=bool_)


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the bit set."""
    check_rule("signbit", input)
    if not input._dtype.is_floating_point:
        return input < 0
    negative_zero = (input == 0).logical_and((1 / where(input == 0, input, 1.0)) < 0)
    return (input < 0).logical_or(negative_zero)


def copysign(input: Any, other: Any) -> Tensor:
    """``|input|`` with the sign of ``other`` (the sign of -0.0 counts; integers compute in floats)."""
    x = input if isinstance(input, Tensor) else other.new_tensor(input)
    check_rule("copysign", x)
    if not x._dtype.is_floating_point:
        x = x.float()
    if isinstance(other, Tensor):
        broadcast_shapes(x.shape, other.shape)  # the error names both shapes in the caller's order
    negative = signbit(other) if isinstance(other, Tensor) else math.copysign(1.0, other) < 0
    return where(negative, -x.abs(), x.abs())


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` in double precision (complex128 for complex operands), as PyTorch."""
    check_rule("float_power", input, exponent)
    wide = complex128 if any(isinstance(v, Tensor) and v._dtype.is_complex for v in (input, exponent)) or \
        any(isinstance(v, complex) for v in (input, exponent)) else float64
    base = input.to(wide) if isinstance(input, Tensor) else input
    exp = exponent.to(wide) if isinstance(exponent, Tensor) else exponent
    if not isinstance(base, Tensor):
        base = exp.new_tensor(base)
    return base ** exp


def _nan_skipping(input: Tensor, other: Any, picked: Tensor) -> Tensor:
    """``picked`` (the maximum or minimum of ``input`` and ``other``), with the other operand where one is NaN."""
    if not input._dtype.is_floating_point:
        return picked
    o = other if isinstance(other, Tensor) else input.new_tensor(other)
    return where(input.isnan(), o, where(o.isnan(), input, picked))


def fmax(input: Tensor, other: Any) -> Tensor:
    """The larger of the two, the other operand where one is NaN."""
    check_rule("fmax", input)
    return _nan_skipping(input, other,
                         input.maximum(other) if isinstance(other, Tensor) else input.clamp(min=other))


def fmin(input: Tensor, other: Any) -> Tensor:
    """The smaller of the two, the other operand where one is NaN."""
    check_rule("fmin", input)
    return _nan_skipping(input, other,
                         input.minimum(other) if isinstance(other, Tensor) else input.clamp(max=other))


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 below zero, 1 above, ``values`` at zero."""
    check_rule("heaviside", input)
    return where(input == 0, values, (input > 0).to(input._dtype))


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2^input + 2^other)``, without overflow."""
    check_rule("logaddexp2", input)
    return (input * math.log(2)).logaddexp(other * math.log(2)) / math.log(2)


def ldexp(input: Tensor, other: Any) -> Tensor:
    """``input * 2^other`` (integers give the default float dtype)."""
    check_rule("ldexp", input)
    x = input if (input._dtype.is_floating_point or input._dtype.is_complex) else input.float()
    return x * (2.0 ** other)


def frexp(input: Tensor) -> FrexpResult:
    """``input = mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1`` (0, inf and NaN keep exponent 0);
    the exponent is int32, as PyTorch's."""
    check_rule("frexp", input)
    a = input.abs()
    finite = input.isfinite().logical_and(input != 0)
    safe = where(finite, a, 1.0)

    def scaled(v: Tensor, e: Tensor) -> Tensor:  # v * 2 ** -e in two steps: 2 ** -e overflows for subnormals
        half = (e / 2).floor()
        return v * (2.0 ** -half) * (2.0 ** (half - e))

    e = safe.log2().floor() + 1
    e = where(scaled(safe, e) >= 1, e + 1, e)  # log2's rounding near powers of two
    e = where(scaled(safe, e) < 0.5, e - 1, e)
    return FrexpResult(where(finite, scaled(input, e), input), where(finite, e, 0.0).to(int32))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other``."""
    check_rule("nextafter", input)
    x, y = broadcast_tensors(input, other.to(input._dtype) if isinstance(other, Tensor) else input.new_tensor(other))
    info = finfo(x._dtype)
    p, emin = 1 - math.log2(info.eps), math.log2(info.tiny)
    a = where(x.isfinite().logical_and(x != 0), x.abs(), 1.0)
    e = a.log2().floor()
    e = where(2.0 ** e > a, e - 1, where(2.0 ** (e + 1) <= a, e + 1, e)).clamp(min=emin)
    ulp = 2.0 ** (e - (p - 1))  # the spacing above |x|; below it where |x| is a power of two (not subnormal)
    below = where((2.0 ** e == a).logical_and(e > emin), ulp / 2, ulp)
    up = y > x
    away = up == (x > 0)
    step = where(away, ulp, below)
    moved = where(up, x + step, x - step)
    tiny = 2.0 ** (emin - (p - 1))  # the smallest subnormal
    moved = where(x == 0, where(up, ones_like(x), -ones_like(x)) * tiny, moved)
    out = where(x == y, y, moved)
    return where(x.isnan().logical_or(y.isnan()), math.nan, out)


def rsub(input: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``: subtraction with the operands swapped."""
    check_rule("rsub", input)
    scaled = input if alpha == 1 else input * alpha
    return other - scaled if isinstance(other, Tensor) else (-scaled) + other


def _gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor, elementwise (Euclid's steps, as long as a pair still needs one)."""
    a, b = broadcast_tensors(input.abs(), other.abs())
    while bool((b != 0).any()):
        nonzero = b != 0
        a, b = where(nonzero, b, a), where(nonzero, a.remainder(where(nonzero, b, 1)), 0)
    return a


def _lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple, elementwise (0 where an operand is 0)."""
    g = _gcd(input, other)
    zero = g == 0
    return where(zero, 0, (input // where(zero, 1, g) * other).abs())


_GCD_C = Helper("ferro_gcd", """\
$FN $T ferro_gcd($T a, $T b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b != 0) { $T t = a % b; a = b; b = t; }
    return a; }""")
_LCM_C = Helper("ferro_lcm", """\
$FN $T ferro_lcm($T a, $T b) {
    $T g = ferro_gcd(a, b);
    if (g == 0) return 0;
    $T r = (a / g) * b; return r < 0 ? -r : r; }""")


def _integer_op(name: str, fn: Callable[..., Tensor], text: str, helpers: tuple[Helper, ...]) -> Callable[..., Tensor]:
    """A binary integer op: its decomposition runs where a backend has no kernel, device backends generate one
    from its C expression."""
    op = register(OpDef(name, "binary", (fn.__doc__ or "").split("\n")[0], dtype_rule="integer", grads=None,
                        decomposition=fn, expr=Expr(None, text, None, helpers)))
    op.fn = build_binary(op)
    return op.fn


gcd = _integer_op("gcd", _gcd, "ferro_gcd(a, b)", (_GCD_C,))
lcm = _integer_op("lcm", _lcm, "ferro_lcm(a, b)", (_GCD_C, _LCM_C))


#: (name, function, ops it uses, dtype rule)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...], str]] = [
    ("isposinf", isposinf, ("isinf", "gt", "logical_and"), "real"),
    ("isneginf", isneginf, ("isinf", "lt", "logical_and"), "real"),
    ("isreal", isreal, ("eq",), "same"),
    ("signbit", signbit, ("lt", "eq", "div", "where", "logical_or", "logical_and"), "real"),
    ("copysign", copysign, ("abs", "neg", "where", "lt", "div"), "real_numeric"),
    ("float_power", float_power, ("cast", "pow:wide"), "numeric"),
    ("fmax", fmax, ("maximum", "isnan", "where"), "real_numeric"),
    ("fmin", fmin, ("minimum", "isnan", "where"), "real_numeric"),
    ("heaviside", heaviside, ("eq", "gt", "where"), "real"),
    ("logaddexp2", logaddexp2, ("mul", "logaddexp", "div"), "real_floating"),
    ("ldexp", ldexp, ("mul", "pow"), "numeric"),
    ("frexp", frexp, (), "real_floating"),
    ("nextafter", nextafter, (), "real_floating"),
    ("rsub", rsub, (), "numeric"),
]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: fn for row in _ROWS
    for name, fn in register_composites("elementwise", [row[:3]], dtype_rule=row[3]).items()}
FUNCTIONS.update(gcd=gcd, lcm=lcm)
#: Ops that are also Tensor methods.
METHODS: list[str] = list(FUNCTIONS)
#: Ops with an in-place method, as in PyTorch.
INPLACE: list[str] = ["copysign", "heaviside", "ldexp", "nextafter", "gcd", "lcm"]
