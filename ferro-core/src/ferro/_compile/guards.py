"""Guards: what a call's arguments must match for a captured graph to replay it.

The key of a call holds, per tensor argument (nested in tuples, lists and dicts too), its shape, dtype,
device and ``requires_grad``; per other argument its value (numbers, strings, None) or its identity
(any other object); and whether grad mode is on. Equal keys replay the same graph; a new key captures
a new one (a new batch size re-traces, as ``torch.compile`` recompiles).
"""

from __future__ import annotations

from typing import Any

from .._core import grad_mode
from .._core.tensor import Tensor

__all__ = ["key"]

_PLAIN = (int, float, bool, str, type(None), complex)


def key(args: tuple[Any, ...], kwargs: dict[str, Any], tensors: list[Tensor]) -> tuple[Any, ...]:
    """The guard key of a call; appends its tensor arguments, in order, to ``tensors``."""
    parts: list[Any] = [grad_mode._state.enabled]
    _walk(args, parts, tensors)
    if kwargs:
        _walk(kwargs, parts, tensors)
    return tuple(parts)


def _walk(x: Any, parts: list[Any], tensors: list[Tensor]) -> None:
    if isinstance(x, Tensor):
        tensors.append(x)
        parts.append((x._data.shape, x._dtype, x._device, x._rg))
    elif type(x) in (tuple, list):
        parts.append((type(x), len(x)))
        for y in x:
            _walk(y, parts, tensors)
    elif type(x) is dict:
        parts.append((dict, tuple(x)))
        for y in x.values():
            _walk(y, parts, tensors)
    elif type(x) in _PLAIN:
        parts.append((type(x), x))
    else:
        parts.append(("id", id(x)))
