"""Elementwise functions of PyTorch written in other elementwise ops: ``isposinf``, ``isneginf``, ``isreal``,
``signbit``, ``copysign``, ``float_power``, ``fmax`` / ``fmin``, ``heaviside``, ``logaddexp2``, ``ldexp``.

NaN and signed zeros follow PyTorch (``fmax`` / ``fmin`` skip a NaN operand, ``signbit(-0.0)`` is True,
``copysign`` takes the sign of ``-0.0``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.dtypes import bool_, complex128, float64
from .._core.records import register_composites
from .._core.tensor import Tensor
from .._creation import ones_like, zeros_like
from ._rules import check_rule
from .elementwise import where
from .shape import broadcast_shapes

__all__ = ["FUNCTIONS", "METHODS", "INPLACE"]


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
]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: fn for row in _ROWS
    for name, fn in register_composites("elementwise", [row[:3]], dtype_rule=row[3]).items()}
#: Ops that are also Tensor methods.
METHODS: list[str] = list(FUNCTIONS)
#: Ops with an in-place method, as in PyTorch.
INPLACE: list[str] = ["copysign", "heaviside", "ldexp"]
