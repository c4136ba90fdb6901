"""``torch.special``'s functions that ferro writes in ops: ``sinc``, ``entr``, ``ndtr``, ``ndtri``, ``log_ndtr``,
``xlog1py``, ``polygamma``, ``multigammaln`` (the others of ``ferro.special`` are ferro's elementwise ops under
PyTorch's names, and those of ``special_kernels``).

Where a formula divides by zero or takes a log of zero at some inputs, the inputs are replaced there before
the formula and the answer chosen after (``where``), so that neither the value nor the gradient of the
branch not taken can be NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.dtypes import get_default_dtype
from .._core.records import register_composites
from .._core.tensor import Tensor
from ._rules import check_rule
from .elementwise import where
from .special_kernels import FUNCTIONS as _KERNELS

__all__ = ["FUNCTIONS", "METHODS", "INPLACE"]

_SQRT2 = math.sqrt(2.0)


def _floating(name: str, x: Tensor) -> Tensor:
    """``x`` checked against the op's rule, integers and bool cast to the default float dtype."""
    check_rule(name, x)
    return x if (x._dtype.is_floating_point or x._dtype.is_complex) else x.to(get_default_dtype())


def sinc(input: Tensor) -> Tensor:
    """``sin(pi x) / (pi x)``, 1 at 0."""
    x = _floating("sinc", input)
    zero = x == 0
    px = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, px.sin() / px)


def entr(input: Tensor) -> Tensor:
    """The elementwise entropy ``-x log x``: 0 at 0, -inf below 0, NaN at NaN."""
    x = _floating("entr", input)
    pos = x > 0
    body = -x * where(pos, x, 1.0).log()
    return where(pos, body, where(x == 0, 0.0, where(x.isnan(), x, -math.inf)))


def ndtr(input: Tensor) -> Tensor:
    """The standard normal's cumulative distribution function."""
    x = _floating("ndtr", input)
    return (x * (-1 / _SQRT2)).erfc() * 0.5


def ndtri(input: Tensor) -> Tensor:
    """The inverse of :func:`ndtr`: the standard normal's quantile at ``p`` in [0, 1]."""
    p = _floating("ndtri", input)
    return (p * 2 - 1).erfinv() * _SQRT2


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(x))``, computed as ``log1p(-ndtr(-x))`` where ``ndtr(x)`` is near 1 (it keeps the small
    difference there)."""
    x = _floating("log_ndtr", input)
    low = x < -1
    lo = where(low, x, -1.0)
    hi = where(low, 0.0, x)
    return where(low, ((lo * (-1 / _SQRT2)).erfc() * 0.5).log(), (-ndtr(-hi)).log1p())


def xlog1py(input: Any, other: Any) -> Tensor:
    """``x * log1p(y)``, 0 where ``x`` is 0 (unless ``y`` is NaN)."""
    x = _floating("xlog1py", input) if isinstance(input, Tensor) else input
    y = _floating("xlog1py", other) if isinstance(other, Tensor) else other
    if not isinstance(y, Tensor):
        y = x.new_tensor(y) if isinstance(x, Tensor) else y
    zero = x == 0
    out = x * where(zero, 0.0, y).log1p()
    return where(zero, where(y.isnan(), y, 0.0), out)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of digamma: digamma at 0, else ``(-1)^(n+1) n! zeta(n + 1, x)``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma(): n must be a non-negative integer, got {n!r}")
    x = _floating("polygamma", input)
    if n == 0:
        return x.digamma()
    return _KERNELS["zeta"](float(n + 1), x) * ((-1.0) ** (n + 1) * math.factorial(n))


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum over j < p of lgamma(x - j / 2)``; every element must exceed ``(p - 1) / 2``."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError(f"multigammaln(): p has to be an integer greater than or equal to 1, got {p!r}")
    x = _floating("multigammaln", input)
    if x.numel() and not bool((x > (p - 1) / 2).all()):
        raise RuntimeError(f"multigammaln(): all elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = (x - 0.0).lgamma()
    for j in range(1, p):
        out = out + (x - j / 2).lgamma()
    return out + p * (p - 1) / 4 * math.log(math.pi)


#: (name, function, the ops it uses)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("sinc", sinc, ("eq", "where", "mul", "sin", "div")),
    ("entr", entr, ("gt", "eq", "isnan", "where", "log", "mul", "neg")),
    ("ndtr", ndtr, ("mul", "erfc")), ("ndtri", ndtri, ("mul", "sub", "erfinv")),
    ("log_ndtr", log_ndtr, ("lt", "where", "mul", "erfc", "log", "neg", "log1p")),
    ("xlog1py", xlog1py, ("eq", "isnan", "where", "log1p", "mul")),
    ("polygamma", polygamma, ("digamma", "zeta", "mul")),
    ("multigammaln", multigammaln, ("gt", "all", "sub", "lgamma", "add")),
]

FUNCTIONS: dict[str, Callable[..., Any]] = register_composites("elementwise", _ROWS, dtype_rule="real_float")
#: Ops that are also Tensor methods (``sinc``; the others are ``torch.special`` functions only).
METHODS: list[str] = ["sinc"]
#: Ops with an in-place method.
INPLACE: list[str] = ["sinc"]
