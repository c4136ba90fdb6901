"""PyTorch's fused multiply-adds, written in ops: ``addmm``, ``addmv``, ``addr``, ``baddbmm``, ``addbmm``
(``beta * input + alpha * product``), ``addcmul`` / ``addcdiv`` (``input + value * t1 op t2``), and ``trace``.

As in PyTorch, ``beta=0`` ignores ``input`` (NaN and inf in it do not propagate), and ``addcdiv`` refuses
integer tensors. Each has an in-place method (``addmm_``...) through its record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.records import register_composites
from .._core.tensor import Tensor
from ..errors import DTypeError, ShapeError
from ._rules import check_rule

__all__ = ["FUNCTIONS", "METHODS", "INPLACE"]


def _check(name: str, **args: tuple[Any, int]) -> None:
    """Each argument a tensor of the given number of dims."""
    for arg, (t, nd) in args.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, not {type(t).__name__}")
        if nd and t.ndim != nd:
            raise ShapeError(f"{name}: {arg} must be a {nd}-D tensor, got shape {list(t.shape)}")


def _scaled_sum(name: str, input: Any, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """``beta * input + alpha * product``; ``input`` must broadcast to the product's shape."""
    _check(name, input=(input, 0))
    try:
        inp = input.broadcast_to(product.shape)
    except ValueError:
        raise ShapeError(f"{name}: input of shape {list(input.shape)} does not broadcast to the product's shape "
                         f"{list(product.shape)}") from None
    out = product if alpha == 1 else product * alpha
    if beta == 0:  # PyTorch: input is ignored, its NaN and inf too
        return out
    return out + (inp if beta == 1 else inp * beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices (``input`` broadcast to the product)."""
    check_rule("addmm", input, mat1, mat2)
    _check("addmm", mat1=(mat1, 2), mat2=(mat2, 2))
    return _scaled_sum("addmm", input, mat1 @ mat2, beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    check_rule("addmv", input, mat, vec)
    _check("addmv", mat=(mat, 2), vec=(vec, 1))
    return _scaled_sum("addmv", input, mat @ vec, beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    check_rule("addr", input, vec1, vec2)
    _check("addr", vec1=(vec1, 1), vec2=(vec2, 1))
    return _scaled_sum("addr", input, vec1.unsqueeze(-1) * vec2, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    check_rule("baddbmm", input, batch1, batch2)
    _check("baddbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return _scaled_sum("baddbmm", input, batch1 @ batch2, beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_i(batch1[i] @ batch2[i])``."""
    check_rule("addbmm", input, batch1, batch2)
    _check("addbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return _scaled_sum("addbmm", input, (batch1 @ batch2).sum(0), beta, alpha)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcast)."""
    check_rule("addcmul", input, tensor1, tensor2)
    prod = tensor1 * tensor2
    return input + (prod if value == 1 else prod * value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast); integer tensors are refused, as in PyTorch."""
    if all(isinstance(t, Tensor) and t.dtype.kind in "bui" for t in (tensor1, tensor2)):
        raise DTypeError("addcdiv: integer division with addcdiv is not supported (PyTorch refuses it too); "
                         "use (input + value * (tensor1 / tensor2)) or a floating dtype")
    quot = tensor1 / tensor2
    return input + (quot if value == 1 else quot * value)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix."""
    check_rule("trace", input)
    _check("trace", input=(input, 2))
    return input.diagonal().sum()


#: (name, function, the ops it uses, dtype rule)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...], str]] = [
    ("addmm", addmm, ("matmul", "mul", "add"), "numeric"), ("addmv", addmv, ("matmul", "mul", "add"), "numeric"),
    ("addr", addr, ("mul", "add"), "numeric"), ("baddbmm", baddbmm, ("matmul", "mul", "add"), "numeric"),
    ("addbmm", addbmm, ("matmul", "sum", "mul", "add"), "numeric"), ("addcmul", addcmul, ("mul", "add"), "numeric"),
    ("addcdiv", addcdiv, ("div", "mul", "add"), "floating"), ("trace", trace, ("diagonal", "sum"), "numeric"),
]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: fn for row in _ROWS
    for name, fn in register_composites("linalg", [row[:3]], dtype_rule=row[3]).items()}
#: Ops that are also Tensor methods (all of them, as in PyTorch).
METHODS: list[str] = list(FUNCTIONS)
#: Ops with an in-place method (not trace).
INPLACE: list[str] = [n for n in FUNCTIONS if n != "trace"]
