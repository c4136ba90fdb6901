"""Axis arguments as the standard spells them (``axis=None | int | tuple``), normalized once."""

from __future__ import annotations

import operator
from typing import Any


def normalize_axes(axis: int | tuple[int, ...] | None, ndim: int, fn: str) -> tuple[int, ...]:
    """``axis`` as a tuple of non-negative axes of an ``ndim``-d array (None: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = []
    n = max(ndim, 1) if ndim == 0 and axes else ndim
    for a in axes:
        a = operator.index(a)
        if not -n <= a < n:
            raise IndexError(f"{fn}: axis {a} is out of range for an array of {ndim} dimensions")
        a = a + n if a < 0 else a
        if a in out:
            raise ValueError(f"{fn}: axis {a} repeated in {axis}")
        out.append(a)
    return tuple(out)


def keep_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with ``axes`` reduced to size 1 (the shape of a ``keepdims=True`` result)."""
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def one_axis(axis: Any, ndim: int, fn: str) -> int:
    """One axis, normalized (0-d arrays take axis 0 or -1)."""
    return normalize_axes(operator.index(axis), max(ndim, 1), fn)[0]
