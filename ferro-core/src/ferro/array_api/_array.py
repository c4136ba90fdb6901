"""The namespace's array type: a ferro tensor whose Python operators follow the standard.

:class:`ferro.Tensor`'s operators are PyTorch's: there a 0-d tensor beside an
n-d one of the same kind does not widen the result (``int32`` 0-d ``17133 +
int8 [3]`` is ``int8 [-16]``). The standard promotes every array alike
(``int32 [17136]``), as the namespace's functions do. The namespace's
functions therefore return :class:`Array`, a :class:`~ferro.Tensor` subclass
whose operators call those functions; everything else (autograd, views,
methods, devices) is the tensor's. An :class:`Array` mixed with a plain tensor
uses the standard's rules too (Python asks the subclass's reflected operator
first); two plain tensors keep PyTorch's.

Results become arrays by changing the class of the fresh tensor a function
made (no copy, no new object), never of a tensor the caller passed in.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._core.tensor import Tensor
from ._elementwise import FUNCTIONS
from ._linalg import matmul

__all__ = ["Array", "as_array", "returns_arrays"]


class Array(Tensor):
    """A :class:`ferro.Tensor` whose operators follow the array API standard (see the module's docstring).

    >>> import ferro.array_api as xp
    >>> xp.asarray(17133, dtype=xp.int32) + xp.asarray([3], dtype=xp.int8)
    tensor([17136], dtype=ferro.int32)
    """

    __slots__ = ()
    __hash__ = Tensor.__hash__

    def __getitem__(self, key: Any) -> Array:
        return as_array(Tensor.__getitem__(self, key), (self,))

    @property
    def T(self) -> Array:
        """The transpose of a 2-d array."""
        return as_array(Tensor.T.fget(self), (self,))  # type: ignore[attr-defined]

    @property
    def mT(self) -> Array:
        """The transpose of the last two dimensions."""
        return as_array(Tensor.mT.fget(self), (self,))  # type: ignore[attr-defined]

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """This array on ``device``."""
        return as_array(Tensor.to_device(self, device, stream=stream), (self,))


def as_array(out: Any, inputs: tuple[Any, ...] = ()) -> Any:
    """``out`` with each fresh plain tensor in it made an :class:`Array` (tensors in ``inputs`` are left alone)."""
    if type(out) is Tensor:
        if not any(out is a for a in inputs):
            out.__class__ = Array
        return out
    if isinstance(out, tuple):  # several results, named tuples included
        items = [as_array(o, inputs) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    if isinstance(out, list):
        return [as_array(o, inputs) for o in out]
    return out


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    found: list[Any] = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(x for x in a if isinstance(x, Tensor))
    return tuple(found)


def returns_arrays(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a namespace function, returning :class:`Array` for every tensor it makes."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return as_array(fn(*args, **kwargs), _inputs(args, kwargs))
    return wrapper


def _binary(fn: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    def forward(self: Array, other: Any) -> Any:
        if not isinstance(other, (Tensor, bool, int, float, complex)):
            return NotImplemented
        return as_array(fn(self, other), (self, other))

    def reflected(self: Array, other: Any) -> Any:
        if not isinstance(other, (Tensor, bool, int, float, complex)):
            return NotImplemented
        return as_array(fn(other, self), (self, other))

    def inplace(self: Array, other: Any) -> Array:
        # The standard: ``x1 op= x2`` is ``x1 op x2`` written into x1, allowed only when that keeps x1's dtype.
        out = fn(self, other)
        if out.dtype is not self.dtype:
            raise TypeError(f"{fn.__name__} in place: the result of {self.dtype} and "
                            f"{other.dtype if isinstance(other, Tensor) else type(other).__name__} is {out.dtype}, "
                            f"which cannot be written into an array of {self.dtype}")
        if out.shape != self.shape:
            raise ValueError(f"{fn.__name__} in place: the result's shape {tuple(out.shape)} is not the array's "
                             f"{tuple(self.shape)}")
        self.copy_(out)
        return self
    return forward, reflected, inplace


#: Python operator -> the namespace's function.
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
                "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "bitwise_invert"}


def _install() -> None:
    for dunder, name in _BINARY.items():
        forward, reflected, inplace = _binary(FUNCTIONS[name])
        setattr(Array, f"__{dunder}__", forward)
        setattr(Array, f"__r{dunder}__", reflected)
        setattr(Array, f"__i{dunder}__", inplace)
    forward, reflected, _ = _binary(matmul)
    Array.__matmul__, Array.__rmatmul__ = forward, reflected  # type: ignore[method-assign]
    for dunder, name in _COMPARISONS.items():
        setattr(Array, f"__{dunder}__", _binary(FUNCTIONS[name])[0])
    for dunder, name in _UNARY.items():
        fn = FUNCTIONS[name]
        setattr(Array, f"__{dunder}__", lambda self, fn=fn: as_array(fn(self), (self,)))


_install()
