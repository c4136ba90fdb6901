"""PyTorch's questions about tensors: ``equal``, ``is_nonzero``, ``is_same_size``, ``is_signed``,
``is_floating_point``, ``get_device`` (Tensor methods, and functions where PyTorch has them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.tensor import Tensor

__all__ = ["FUNCTIONS", "METHODS"]


def equal(input: Tensor, other: Tensor) -> bool:
    """Whether the two have the same shape and the same values (NaN is not equal to itself)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all())


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor; a ``RuntimeError`` for any other, as PyTorch."""
    n = input.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                           "Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.reshape(()).item() != 0)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative values (not bool or uint8)."""
    return input.dtype.is_signed


def is_floating_point(input: Tensor) -> bool:
    """Whether the dtype is a floating one."""
    return input.dtype.is_floating_point


def get_device(input: Tensor) -> int:
    """The device's ordinal; -1 on the CPU backend, as PyTorch."""
    return -1 if input.device.type == "cpu" else input.device.index


#: ``ferro.<name>`` functions, as PyTorch's.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "equal": equal, "is_nonzero": is_nonzero, "is_same_size": is_same_size, "is_signed": is_signed,
    "is_floating_point": is_floating_point, "get_device": get_device,
}
#: Tensor methods (``is_floating_point`` is one already).
METHODS: dict[str, Callable[..., Any]] = {n: f for n, f in FUNCTIONS.items() if n != "is_floating_point"}
