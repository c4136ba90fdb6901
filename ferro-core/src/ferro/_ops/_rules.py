"""The dtype check of ops written in other ops: their record's rule refuses a dtype before any op runs."""

from __future__ import annotations

from typing import Any

from .._core.records import REGISTRY
from .._core.tensor import Tensor
from ..errors import DTypeError

__all__ = ["check_rule"]


def check_rule(name: str, *tensors: Any) -> None:
    """Raise DTypeError naming op ``name`` when a tensor's dtype is outside the op's dtype rule."""
    op = REGISTRY[name]
    for t in tensors:
        if isinstance(t, Tensor) and t._dtype not in op.table:
            raise DTypeError(f"{name}: not defined for dtype {t._dtype}; it takes {op.dtype_words}")
