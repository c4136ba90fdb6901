"""The standard's element-wise functions, mapped onto ferro's registry ops.

Most functions are one row of :data:`UNARY` or :data:`BINARY`: the standard's
name, ferro's op, and a docstring. Binary functions promote their operands
by the standard's rules first (:func:`._dtypes.promote`), so the op sees one
dtype. The rest are written below in ferro ops where the standard's
semantics differ from PyTorch's (integer division by zero, complex ``sign``,
``copysign``, ``signbit``, ``clip``...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _api as ferro
from .._core.tensor import Tensor
from ._dtypes import check_array, iinfo, promote, scalar_array

#: standard name -> (ferro op, doc)
UNARY: dict[str, tuple[str, str]] = {
    "abs": ("abs", "Absolute value (complex: magnitude, a real array)."),
    "acos": ("acos", "Inverse cosine."),
    "acosh": ("acosh", "Inverse hyperbolic cosine."),
    "asin": ("asin", "Inverse sine."),
    "asinh": ("asinh", "Inverse hyperbolic sine."),
    "atan": ("atan", "Inverse tangent."),
    "atanh": ("atanh", "Inverse hyperbolic tangent."),
    "bitwise_invert": ("bitwise_not", "Bitwise NOT of integer or bool arrays."),
    "ceil": ("ceil", "Smallest integer not less than each element."),
    "cos": ("cos", "Cosine."),
    "cosh": ("cosh", "Hyperbolic cosine."),
    "exp": ("exp", "Exponential."),
    "floor": ("floor", "Largest integer not greater than each element."),
    "isfinite": ("isfinite", "Whether each element is finite."),
    "isinf": ("isinf", "Whether each element is infinite."),
    "isnan": ("isnan", "Whether each element is NaN."),
    "log": ("log", "Natural logarithm."),
    "log1p": ("log1p", "``log(1 + x)``, accurate near zero."),
    "log2": ("log2", "Base-2 logarithm."),
    "log10": ("log10", "Base-10 logarithm."),
    "logical_not": ("logical_not", "Logical NOT."),
    "negative": ("neg", "Numerical negative."),
    "positive": ("positive", "Numerical positive (a copy of the values)."),
    "reciprocal": ("reciprocal", "``1 / x``."),
    "sin": ("sin", "Sine."),
    "sinh": ("sinh", "Hyperbolic sine."),
    "sqrt": ("sqrt", "Square root."),
    "square": ("square", "``x * x``."),
    "tan": ("tan", "Tangent."),
    "trunc": ("trunc", "Each element rounded toward zero."),
}

#: standard name -> (ferro op, doc)
BINARY: dict[str, tuple[str, str]] = {
    "add": ("add", "``x1 + x2``."),
    "atan2": ("atan2", "Inverse tangent of ``x1 / x2`` in the right quadrant."),
    "bitwise_and": ("bitwise_and", "Bitwise AND."),
    "bitwise_or": ("bitwise_or", "Bitwise OR."),
    "bitwise_xor": ("bitwise_xor", "Bitwise XOR."),
    "divide": ("div", "True division ``x1 / x2``."),
    "equal": ("eq", "``x1 == x2``."),
    "greater": ("gt", "``x1 > x2``."),
    "greater_equal": ("ge", "``x1 >= x2``."),
    "hypot": ("hypot", "``sqrt(x1**2 + x2**2)`` without undue overflow."),
    "less": ("lt", "``x1 < x2``."),
    "less_equal": ("le", "``x1 <= x2``."),
    "logaddexp": ("logaddexp", "``log(exp(x1) + exp(x2))``, computed stably."),
    "logical_and": ("logical_and", "Logical AND."),
    "logical_or": ("logical_or", "Logical OR."),
    "logical_xor": ("logical_xor", "Logical XOR."),
    "maximum": ("maximum", "Element-wise maximum (NaN propagates)."),
    "minimum": ("minimum", "Element-wise minimum (NaN propagates)."),
    "multiply": ("mul", "``x1 * x2``."),
    "not_equal": ("ne", "``x1 != x2``."),
    "subtract": ("sub", "``x1 - x2``."),
}


def _unary(name: str, op: str, doc: str) -> Callable[[Tensor], Tensor]:
    f = getattr(ferro, op)

    def fn(x: Tensor, /) -> Tensor:
        return f(check_array(x, name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(name: str, op: str, doc: str) -> Callable[[Any, Any], Tensor]:
    f = getattr(ferro, op)

    def fn(x1: Tensor | complex, x2: Tensor | complex, /) -> Tensor:
        return f(*promote(x1, x2, name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    **{n: _unary(n, op, doc) for n, (op, doc) in UNARY.items()},
    **{n: _binary(n, op, doc) for n, (op, doc) in BINARY.items()},
}


def _int_safe(op: Callable[[Tensor, Tensor], Tensor], x1: Tensor, x2: Tensor) -> Tensor:
    # ferro (as PyTorch) raises on an integer division by zero; the standard leaves the value
    # unspecified but must not raise: such elements give 0, as in NumPy.
    if x1.dtype.kind not in "ui":
        return op(x1, x2)
    zero = ferro.eq(x2, 0)
    safe = ferro.where(zero, scalar_array(1, x2.dtype, x2), x2)
    return ferro.where(zero, scalar_array(0, x1.dtype, x1), op(x1, safe))


def floor_divide(x1: Tensor | int | float, x2: Tensor | int | float, /) -> Tensor:
    """``x1 // x2`` rounded toward negative infinity (integer division by zero gives 0)."""
    a, b = promote(x1, x2, "floor_divide")
    out = _int_safe(ferro.floor_divide, a, b)
    if a.dtype.kind != "f":
        return out
    # The standard's special cases that PyTorch's floor_divide (NaN for inf // finite, -1 for -1 // inf)
    # does not meet: there the quotient is already the answer (+-inf, or a signed zero).
    inf_case = ferro.logical_xor(ferro.isinf(a), ferro.isinf(b)) & ferro.logical_not(ferro.isnan(a) | ferro.isnan(b))
    return ferro.where(inf_case & (ferro.isinf(a) | ferro.ne(a, 0)), ferro.div(a, b), out)


def remainder(x1: Tensor | int | float, x2: Tensor | int | float, /) -> Tensor:
    """``x1 % x2`` with the sign of ``x2`` (integer modulo zero gives 0; a zero result is signed as ``x2``)."""
    a, b = promote(x1, x2, "remainder")
    out = _int_safe(ferro.remainder, a, b)
    if a.dtype.kind != "f":
        return out
    return ferro.where(ferro.eq(out, 0), copysign(ferro.zeros_like(out), b), out)


def _shift(op: Callable[[Tensor, Tensor], Tensor], x1: Any, x2: Any, name: str, right: bool) -> Tensor:
    a, b = promote(x1, x2, name)
    out = op(a, b)
    if a.dtype.kind not in "ui":
        return out
    # Shifting by the bit width or more: every bit shifted out (NumPy's and the standard's reading);
    # OpenCL C, like the hardware, shifts by the amount modulo the width.
    wide = ferro.ge(b, a.dtype.itemsize * 8)
    zero = scalar_array(0, a.dtype, a)
    fill = ferro.where(ferro.lt(a, 0), scalar_array(-1, a.dtype, a), zero) if right and a.dtype.kind == "i" else zero
    return ferro.where(wide, fill, out)


def bitwise_left_shift(x1: Tensor | int, x2: Tensor | int, /) -> Tensor:
    """``x1 << x2`` (0 once every bit is shifted out)."""
    return _shift(ferro.bitwise_left_shift, x1, x2, "bitwise_left_shift", False)


def bitwise_right_shift(x1: Tensor | int, x2: Tensor | int, /) -> Tensor:
    """``x1 >> x2``, arithmetic for signed integers (0 or -1 once every bit is shifted out)."""
    return _shift(ferro.bitwise_right_shift, x1, x2, "bitwise_right_shift", True)


def pow(x1: Tensor | complex, x2: Tensor | complex, /) -> Tensor:
    """``x1 ** x2``."""
    a, b = promote(x1, x2, "pow")
    return ferro.pow(a, b)


def expm1(x: Tensor, /) -> Tensor:
    """``exp(x) - 1``, accurate near zero (complex: with the standard's special cases at zeros and infinities)."""
    check_array(x, "expm1")
    out = ferro.expm1(x)
    if x.dtype.kind != "c":
        return out
    a, b = real(x), imag(x)
    re, im = real(out), imag(out)
    inf = ferro.full_like(a, float("inf"))
    # imaginary part zero: the result's is that zero, and +inf stays +inf (the kernel makes NaN of inf * 0)
    zero_b = ferro.eq(b, 0)
    re = ferro.where(zero_b & ferro.eq(a, inf), inf, ferro.where(zero_b & ferro.eq(a, 0), ferro.zeros_like(a), re))
    im = ferro.where(zero_b, b, im)
    # infinite real part with an infinite or NaN imaginary part: -1 + 0j, or +inf + NaN j
    edge = ferro.isinf(a) & ferro.logical_not(ferro.isfinite(b))
    pos = ferro.gt(a, 0)
    re = ferro.where(edge, ferro.where(pos, inf, ferro.full_like(a, -1.0)), re)
    im = ferro.where(edge, ferro.where(pos, ferro.full_like(a, float("nan")), ferro.zeros_like(a)), im)
    return _complex(re, im, x.dtype)


def tanh(x: Tensor, /) -> Tensor:
    """Hyperbolic tangent (complex: ``+-1 + 0j`` where the real part is infinite, as the standard says)."""
    check_array(x, "tanh")
    out = ferro.tanh(x)
    if x.dtype.kind != "c":
        return out
    re, im = real(x), imag(x)
    # C99's ctanh gives 1 + i0*sin(2y) there; the standard gives the zero the sign of y.
    edge = ferro.isinf(re) & ferro.isfinite(im)
    return ferro.where(edge, _complex(ferro.sign(re), copysign(ferro.zeros_like(im), im), x.dtype), out)


def sign(x: Tensor, /) -> Tensor:
    """-1, 0 or 1 by the sign of each element; complex: ``x / |x|`` (0 at 0)."""
    check_array(x, "sign")
    if x.dtype.kind != "c":
        return ferro.sign(x)
    mag = ferro.abs(x)
    zero = ferro.eq(mag, 0)
    return ferro.where(zero, scalar_array(0, x.dtype, x), x / ferro.where(zero, scalar_array(1, mag.dtype, mag), mag))


def round(x: Tensor, /) -> Tensor:
    """Each element rounded to the nearest integer, halves to even (complex: each part)."""
    check_array(x, "round")
    if x.dtype.kind != "c":
        return ferro.round(x)
    return _complex(ferro.round(real(x)), ferro.round(imag(x)), x.dtype)


def real(x: Tensor, /) -> Tensor:
    """The real part (a real array; real input is returned as is)."""
    return ferro.real(check_array(x, "real"))


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part (a real array; zeros for real input)."""
    check_array(x, "imag")
    return ferro.imag(x) if x.dtype.kind == "c" else ferro.zeros_like(x)


def _complex(re: Tensor, im: Tensor, dtype: Any) -> Tensor:
    """The complex array ``re + i im``, written part by part (``re + im * 1j`` makes NaN of infinities)."""
    from ._manipulation import broadcast_shapes
    out = ferro.zeros(broadcast_shapes(tuple(re.shape), tuple(im.shape)), dtype=dtype, device=re.device)
    ferro.real(out).copy_(re)
    ferro.imag(out).copy_(im)
    return out


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate (real input is returned as is)."""
    return ferro.conj(check_array(x, "conj"))


def signbit(x: Tensor, /) -> Tensor:
    """Whether the sign bit of each element is set (True for -0.0)."""
    check_array(x, "signbit")
    if x.dtype.kind in "bu":
        return ferro.zeros_like(x, dtype=ferro.bool_)
    if x.dtype.kind == "i":
        return ferro.lt(x, 0)
    # 1 / -0.0 is -inf: the one way to see the sign of a zero without reading bits.
    return ferro.lt(x, 0) | (ferro.eq(x, 0) & ferro.lt(ferro.reciprocal(x), 0))


def copysign(x1: Tensor | float, x2: Tensor | float, /) -> Tensor:
    """``|x1|`` with the sign of ``x2``."""
    a, b = promote(x1, x2, "copysign")
    mag = ferro.abs(a)
    return ferro.where(signbit(b), -mag, mag)


def nextafter(x1: Tensor | float, x2: Tensor | float, /) -> Tensor:
    """The next representable value after ``x1`` toward ``x2``."""
    a, b = promote(x1, x2, "nextafter")
    if a.dtype.kind != "f":
        raise TypeError(f"nextafter: expected real floating arrays, got {a.dtype}")
    # No registry op reads float bits; the host computes it (a rare function, not a hot path).
    from ._host import host_binary
    return host_binary("nextafter", a, b)


def clip(x: Tensor, /, min: Tensor | float | None = None, max: Tensor | float | None = None) -> Tensor:
    """``x`` limited to ``[min, max]`` (either may be None, an array or a scalar); keeps ``x``'s dtype."""
    check_array(x, "clip")
    out = x
    for bound, op in ((min, ferro.maximum), (max, ferro.minimum)):
        if bound is None:
            continue
        if isinstance(bound, Tensor):
            if bound.dtype.kind != x.dtype.kind and not (bound.dtype.kind in "ui" and x.dtype.kind in "ui"):
                raise TypeError(f"clip: bound dtype {bound.dtype} does not match x's {x.dtype}")
            b = bound.to(x.dtype)
        else:
            if isinstance(bound, float) and x.dtype.kind in "ui":
                raise TypeError(f"clip: a float bound does not combine with an array of {x.dtype}")
            if x.dtype.kind in "ui":
                info = iinfo(x.dtype)
                bound = info.min if bound < info.min else info.max if bound > info.max else bound
            b = scalar_array(bound, x.dtype, x)
        out = op(out, b)
    if out is x:
        out = ferro.clone(x)
    return out


FUNCTIONS.update({f.__name__: f for f in (floor_divide, remainder, bitwise_left_shift, bitwise_right_shift, pow,
                                          expm1, tanh, sign, round, real, imag, conj, signbit, copysign, nextafter,
                                          clip)})
