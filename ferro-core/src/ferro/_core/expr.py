"""An elementwise op's expression: the C from which device backends generate its kernels.

An :class:`Expr` is part of an op's record (``OpDef.expr``). It gives one C
expression per kind of dtype (``floating``, ``integer``, and ``boolean``
where bool needs its own; None: the op has no kernel for that kind) over
the operands ``a``, ``b``, ``c`` in the op's compute type ``$T``, and the
:class:`Helper` functions the expressions call. The C is the subset OpenCL C
and CUDA C share: C casts, the C99 math functions (``fabs``, ``fmod``,
``isnan``, ``lgamma``, ``erf``...), integer ``abs`` / ``min`` / ``max``,
``INFINITY`` and ``NAN``. What differs between the two languages (the
qualifier of a helper function, the type of the error flag) is a
:class:`Dialect`'s, and :func:`helper_source` writes the helpers out in one.

An expression that can fail where a kernel cannot raise (integer division by
zero) passes ``err``, the device's error flag, to a helper, which sets
``*err = 2`` (``ZeroDivisionError`` at the next synchronization) and gives 0.
A result stored as bool is ``(expr) != 0``.

>>> from ferro._core.expr import OPENCL, Expr, substitute
>>> Expr("fabs(a)", "($T)abs(a)").text("i")
'($T)abs(a)'
>>> print(substitute("($T)0 < a", "double", OPENCL))
(double)0 < a
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["Expr", "Helper", "Dialect", "OPENCL", "CUDA", "BUILTINS", "substitute", "helper_source", "uses_flag",
           "calls", "used_helpers", "same", "floating"]

#: The functions OpenCL C and CUDA C both have, with the same names and meaning, that expressions and helpers
#: may call (at float and double; ``abs``, ``min``, ``max`` at integer types).
BUILTINS = frozenset({
    "fabs", "fmod", "fmax", "fmin", "copysign", "signbit", "isnan", "isinf", "isfinite", "floor", "ceil", "trunc",
    "rint", "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "hypot", "erf", "erfc", "lgamma",
    "abs", "min", "max",
})


class Helper(NamedTuple):
    """A C function an expression calls: ``name`` and its definition, written with ``$FN`` for the function
    qualifier, ``$T`` for the compute type and ``$ERR`` for the type of the error-flag pointer::

        Helper("ferro_sq", "$FN $T ferro_sq($T x) { return x * x; }")

    A helper may call the other helpers of its ``Expr``: the generator defines each before its callers.
    """

    name: str
    source: str


class Expr(NamedTuple):
    """The C expressions of one elementwise op per kind of dtype, and the helper functions they call."""

    floating: str | None
    integer: str | None = None
    #: bool inputs, where the integer expression does not fit (None: the integer one is used)
    boolean: str | None = None
    helpers: tuple[Helper, ...] = ()

    def text(self, kind: str) -> str | None:
        """The expression for a dtype of NumPy kind ``kind`` (``"f"``, ``"i"``, ``"u"``, ``"b"``); None where
        the op has none."""
        if kind == "f":
            return self.floating
        if kind == "b" and self.boolean is not None:
            return self.boolean
        return self.integer if kind in "iub" else None


def same(text: str) -> Expr:
    """One expression for every dtype."""
    return Expr(text, text)


def floating(text: str, *helpers: Helper) -> Expr:
    """An expression for floating dtypes only."""
    return Expr(text, None, None, helpers)


class Dialect(NamedTuple):
    """What a language needs said its own way: the qualifier of a helper function, the type of the error-flag
    pointer, and the lines in front of the helpers."""

    name: str
    function: str
    flag: str
    prelude: str


OPENCL = Dialect("OpenCL C", "inline", "volatile __global int *", "")
#: NVRTC compiles without the C headers: INFINITY and NAN are defined here (as in ferro-cuda's common.cuh).
#: One expression serves signed and unsigned types, so ``b < 0`` is pointless for some: NVRTC is told not to warn
#: (186, 514: comparisons of an unsigned value with zero or a negative constant).
CUDA = Dialect("CUDA C", "__device__ inline", "int *",
               "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
               "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
               "#pragma nv_diag_suppress 186\n#pragma nv_diag_suppress 514\n")


def substitute(text: str, ctype: str, dialect: Dialect) -> str:
    """``text`` (an expression or a helper) with ``$T``, ``$FN`` and ``$ERR`` filled in for ``dialect``."""
    from string import Template  # here: only kernel generation needs it, not ``import ferro``
    return Template(text).substitute(T=ctype, FN=dialect.function, ERR=dialect.flag)


#: A call in C source; compiled on first use (re caches it), not at ``import ferro``.
_CALL = r"\b([A-Za-z_]\w*)\s*\("


def _used(text: str, helpers: Iterable[Helper]) -> list[Helper]:
    """The helpers ``text`` calls, directly or through other helpers, each before those that call it."""
    by_name = {h.name: h for h in helpers}
    out: list[Helper] = []

    def visit(src: str, seen: frozenset[str]) -> None:
        for name in re.findall(_CALL, src):
            h = by_name.get(name)
            if h is None or h in out or name in seen:
                continue
            visit(h.source.replace(f"{name}(", "", 1), seen | {name})  # its own name first: not a call
            out.append(h)
    visit(text, frozenset())
    return out


def used_helpers(text: str, helpers: Iterable[Helper]) -> list[Helper]:
    """The helpers of ``helpers`` that ``text`` calls, directly or through others, each after those it calls
    (a generator that writes several expressions into one kernel defines each helper once)."""
    return _used(text, helpers)


def calls(text: str) -> set[str]:
    """The names of the functions C ``text`` calls (builtins and helpers; ``sizeof``-like keywords aside)."""
    return set(re.findall(_CALL, text)) - {"if", "while", "for", "return", "sizeof"}


def helper_source(text: str, helpers: Iterable[Helper], ctype: str, dialect: Dialect) -> str:
    """The definitions, in ``dialect`` at compute type ``ctype``, of the helpers expression ``text`` needs
    (the dialect's prelude first). A kernel has one compute type, so each helper is defined once in it."""
    used = _used(text, helpers)
    return dialect.prelude + "".join(substitute(h.source, ctype, dialect) + "\n" for h in used)


def uses_flag(text: str) -> bool:
    """Whether an expression reports errors through the device's error flag ``err``."""
    return re.search(r"\berr\b", text) is not None
