"""PyTorch's keyword arguments of the arithmetic ops: ``add/sub(alpha=)``, ``div(rounding_mode=)``,
``round(decimals=)``, and the aliases ``subtract``, ``multiply``, ``divide``.

The elementwise ops keep their two-operand hot path (``_ops/elementwise``); these functions take their
place as ``ferro.add``, ``Tensor.add``, ``Tensor.add_`` and the operators, and call it directly when the
keyword has its default. The rest is written in ops, so gradients and every backend come for free: the
rounded divisions and ``round`` have zero gradient, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.dtypes import result_type
from .._core.records import REGISTRY
from .._core.tensor import Tensor
from ..errors import DTypeError
from .elementwise import FUNCTIONS as _ELEMENTWISE

__all__ = ["add", "sub", "div", "round", "FUNCTIONS", "ALIASES", "INPLACE_ALIASES"]

_add, _sub, _mul, _div = (_ELEMENTWISE[n] for n in ("add", "sub", "mul", "div"))
_floor_divide, _round, _trunc = (_ELEMENTWISE[n] for n in ("floor_divide", "round", "trunc"))


def _dtype(v: Any) -> Any:
    """The dtype ``v`` promotes as, for the integer checks (a Python number: its own type)."""
    return v._dtype if isinstance(v, Tensor) else type(v)


def _promoted(x: Any, y: Any) -> Any:
    """The dtype ``x op y`` computes in (PyTorch's promotion: 0-d tensors and numbers are weaker)."""
    ts = [v for v in (x, y) if isinstance(v, Tensor)]
    return result_type([t._dtype for t in ts if t.ndim], [t._dtype for t in ts if not t.ndim],
                       [v for v in (x, y) if not isinstance(v, Tensor)])


def _scaled(op: str, x: Any, other: Any, alpha: Any) -> Any:
    """``alpha * other`` for ``add``/``sub``, refusing what PyTorch refuses."""
    if not isinstance(alpha, (bool, int, float, complex)):
        raise TypeError(f"{op}(): argument 'alpha' must be a number, not {type(alpha).__name__}")
    kind = _promoted(x, other).kind
    if kind in "bui" and isinstance(alpha, (float, complex)):
        raise DTypeError(f"{op}(): for integral input tensors, argument alpha must not be a floating point number, "
                         f"got alpha={alpha!r}")
    if kind != "b" and isinstance(alpha, bool):
        alpha = int(alpha)
    if kind == "b" and not isinstance(alpha, bool):
        raise DTypeError(f"{op}(): for boolean input tensors, argument alpha must be a bool, got alpha={alpha!r}")
    if isinstance(other, Tensor):
        return _mul(other, alpha) if kind != "b" else other & alpha
    return other * alpha if kind != "b" else (other and alpha)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other``."""
    if type(alpha) is int and alpha == 1:  # the default (not True, which is 1 too) takes the hot path
        return _add(input, other)
    return _add(input, _scaled("add", input, other, alpha))


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``."""
    if type(alpha) is int and alpha == 1:
        return _sub(input, other)
    return _sub(input, _scaled("sub", input, other, alpha))


_ROUNDING = (None, "trunc", "floor")


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other``: true division (a float result for integers), or rounded toward zero
    (``rounding_mode='trunc'``) or down (``'floor'``), which keep integer dtypes and have zero gradient."""
    if rounding_mode is None:
        return _div(input, other)
    if rounding_mode not in _ROUNDING:
        raise ValueError(f"div(): expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"{rounding_mode!r}")
    if _promoted(input, other).kind not in "bui":
        q = _div(input, other)
        return q.floor() if rounding_mode == "floor" else _trunc(q)
    q = _floor_divide(input, other)  # integers: floor division (raises on division by zero)
    if rounding_mode == "floor":
        return q
    # trunc differs from floor where the quotient is negative and inexact: one more
    inexact = _mul(q, other) != input
    return q + ((q < 0) & inexact).to(q.dtype)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds...)."""
    if decimals == 0:
        return _round(input)
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round(): argument 'decimals' must be an int, not {type(decimals).__name__}")
    if not isinstance(input, Tensor) or not input._dtype.is_floating_point:
        raise DTypeError(f"round(): decimals={decimals} needs a floating tensor, got "
                         f"{input._dtype if isinstance(input, Tensor) else type(input).__name__}")
    # PyTorch's formula: scale by the power of ten in the tensor's dtype, round, scale back.
    if decimals > 0:
        scale = 10.0 ** decimals
        return _div(_round(_mul(input, scale)), scale)
    scale = 10.0 ** -decimals
    return _mul(_round(_div(input, scale)), scale)


def _divide(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Alias of :func:`div`."""
    return div(input, other, rounding_mode=rounding_mode)


def _subtract(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """Alias of :func:`sub`."""
    return sub(input, other, alpha=alpha)


def _multiply(input: Any, other: Any) -> Tensor:
    """Alias of :func:`ferro.mul`."""
    return _mul(input, other)


#: Functions (and Tensor methods) replacing the elementwise ones of the same name.
FUNCTIONS: dict[str, Callable[..., Any]] = {"add": add, "sub": sub, "div": div, "round": round}
#: PyTorch's alias names -> the function they call (and, with a trailing ``_``, the in-place method).
ALIASES: dict[str, Callable[..., Any]] = {"divide": _divide, "subtract": _subtract, "multiply": _multiply}
for _alias, _fn in ALIASES.items():
    _fn.__name__ = _fn.__qualname__ = _alias
#: In-place alias methods -> the in-place methods they are.
INPLACE_ALIASES: dict[str, str] = {"divide_": "div_", "subtract_": "sub_", "multiply_": "mul_"}
for _name, _fn in FUNCTIONS.items():  # in-place methods (add_, div_...) call the op's public function
    REGISTRY[_name].fn = _fn
    _fn.__dispatches__ = True  # type: ignore[attr-defined]  # the ops it calls step into the layers
