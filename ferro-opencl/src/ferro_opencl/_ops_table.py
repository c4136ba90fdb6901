"""The one table of elementwise ops: name -> OpenCL C expressions, from which every kernel is generated.

An entry gives the expression for floating dtypes and for integer dtypes
(None: the op refuses that kind), over the operands ``a``, ``b`` (``c``);
``$T`` is the compute type; an expression naming ``err`` gets the device's
error flag (integer division by zero). Helpers named in the entry (macros of
``kernels/common.cl``) are instantiated for ``$T`` in front of the kernel.
An op whose result is bool stores ``(expr) != 0``, as does any op on bool.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Expr", "UNARY", "BINARY", "BOOL_RESULT"]


class Expr(NamedTuple):
    """C expressions of one op per kind of dtype, and the helper macros they call."""

    floating: str | None
    integer: str | None
    helpers: tuple[str, ...] = ()
    boolean: str | None = None  # bool inputs, when the integer expression does not fit


def _f(fn: str) -> Expr:
    return Expr(f"{fn}(a)", None)


def _same(expr: str) -> Expr:
    return Expr(expr, expr)


UNARY: dict[str, Expr] = {
    "neg": _same("-a"), "positive": _same("a"), "square": _same("a * a"),
    "abs": Expr("fabs(a)", "($T)abs(a)"),
    "sign": Expr("isnan(a) ? a : ($T)((a > 0) - (a < 0))", "($T)((a > 0) - (a < 0))"),
    **{fn: _f(fn) for fn in ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "asin", "acos", "atan", "sinh",
                             "cosh", "asinh", "acosh", "atanh", "log2", "log10", "log1p", "expm1", "erf", "erfc")},
    "lgamma": Expr("isinf(a) ? fabs(a) : lgamma(a)", None),  # +inf at both infinities (C99, PyTorch)
    "digamma": Expr("digamma_$T(a)", None, ("DEF_DIGAMMA",)),
    "erfinv": Expr("erfinv_$T(a)", None, ("DEF_ERFINV",)),
    "sigmoid": Expr("sigmoid_$T(a)", None, ("DEF_SIGMOID",)),
    "relu": Expr("(a > ($T)0 || isnan(a)) ? a : ($T)0", "a > 0 ? a : ($T)0"),
    "floor": Expr("floor(a)", "a"), "ceil": Expr("ceil(a)", "a"), "trunc": Expr("trunc(a)", "a"),
    "round": Expr("rint(a)", "a"),
    "isnan": Expr("isnan(a)", "0"), "isinf": Expr("isinf(a)", "0"), "isfinite": Expr("isfinite(a)", "1"),
    "logical_not": _same("a == 0"),
    "bitwise_not": Expr(None, "~a", boolean="a == 0"),
}

BINARY: dict[str, Expr] = {
    "add": _same("a + b"), "sub": _same("a - b"), "mul": _same("a * b"), "div": Expr("a / b", None),
    "pow": Expr("pow(a, b)", "ipow_$T(a, b)", ("DEF_IPOW",)),
    "maximum": Expr("(isnan(a) || isnan(b)) ? a + b : fmax(a, b)", "max(a, b)"),
    "minimum": Expr("(isnan(a) || isnan(b)) ? a + b : fmin(a, b)", "min(a, b)"),
    "atan2": Expr("atan2(a, b)", None), "hypot": Expr("hypot(a, b)", None),
    "logaddexp": Expr("logaddexp_$T(a, b)", None, ("DEF_LOGADDEXP",)),
    "floor_divide": Expr("ffloordiv_$T(a, b)", "ifloordiv_$T(a, b, err)", ("DEF_FFLOORDIV", "DEF_IFLOORDIV")),
    "remainder": Expr("frem_$T(a, b)", "irem_$T(a, b, err)", ("DEF_FREM", "DEF_IREM")),
    "eq": _same("a == b"), "ne": _same("a != b"), "lt": _same("a < b"), "le": _same("a <= b"),
    "gt": _same("a > b"), "ge": _same("a >= b"),
    "logical_and": _same("(a != 0) && (b != 0)"), "logical_or": _same("(a != 0) || (b != 0)"),
    "logical_xor": _same("(a != 0) != (b != 0)"),
    "bitwise_and": Expr(None, "a & b"), "bitwise_or": Expr(None, "a | b"), "bitwise_xor": Expr(None, "a ^ b"),
    "bitwise_left_shift": Expr(None, "a << b"), "bitwise_right_shift": Expr(None, "a >> b"),
}

#: Ops whose result is bool whatever the input dtype.
BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                         "logical_not", "isnan", "isinf", "isfinite"})
