"""The standard's manipulation and indexing functions over ferro's (``reshape``, ``permute``, ``cat``...)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

from .. import _api as ferro
from .._core.tensor import Tensor
from .._ops.shape import broadcast_shapes as _broadcast_shapes
from ._axes import normalize_axes, one_axis
from ._dtypes import builtins_bool, check_array, result_type

__all__ = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
           "reshape", "roll", "squeeze", "stack", "tile", "unstack", "take", "take_along_axis", "broadcast_shapes"]


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape all ``shapes`` broadcast to (a ValueError naming them if they do not)."""
    return tuple(_broadcast_shapes(*shapes))


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The arrays broadcast to one shape."""
    shape = broadcast_shapes(*(tuple(check_array(a, "broadcast_arrays", "arrays").shape) for a in arrays))
    return [ferro.broadcast_to(a, shape) for a in arrays]


def broadcast_to(x: Tensor, /, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape``."""
    check_array(x, "broadcast_to")
    shape = tuple(shape)
    if broadcast_shapes(tuple(x.shape), shape) != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(x.shape)} to {shape}")
    return ferro.broadcast_to(x, shape)


def _same_dtype(arrays: Sequence[Tensor], fn: str) -> list[Tensor]:
    arrays = [check_array(a, fn, "arrays") for a in arrays]
    if not arrays:
        raise ValueError(f"{fn}: expected at least one array")
    dt = result_type(*arrays)
    return [a if a.dtype is dt else a.to(dt) for a in arrays]


def concat(arrays: tuple[Tensor, ...] | list[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along ``axis`` (flattened first if None), promoted to one dtype."""
    arrays = _same_dtype(arrays, "concat")
    if axis is None:
        return ferro.cat([a.reshape(-1) for a in arrays])
    return ferro.cat(arrays, dim=one_axis(axis, arrays[0].ndim, "concat"))


def stack(arrays: tuple[Tensor, ...] | list[Tensor], /, *, axis: int = 0) -> Tensor:
    """The arrays joined along a new axis ``axis``, promoted to one dtype."""
    arrays = _same_dtype(arrays, "stack")
    return ferro.stack(arrays, dim=one_axis(axis, arrays[0].ndim + 1, "stack"))


def expand_dims(x: Tensor, /, axis: int = 0) -> Tensor:
    """``x`` with a new axis of size 1 at ``axis`` (in ``-x.ndim-1 .. x.ndim``)."""
    check_array(x, "expand_dims")
    n = x.ndim + 1
    axis = operator.index(axis)
    if not -n <= axis < n:
        raise IndexError(f"expand_dims: axis {axis} is out of range for an array of {x.ndim} dimensions")
    return ferro.unsqueeze(x, axis)


def flip(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None) -> Tensor:
    """``x`` with the order of elements along ``axis`` reversed (all axes if None)."""
    check_array(x, "flip")
    axes = normalize_axes(axis, x.ndim, "flip")
    return ferro.flip(x, list(axes)) if axes else x.clone()


def moveaxis(x: Tensor, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> Tensor:
    """``x`` with axes ``source`` moved to ``destination``."""
    check_array(x, "moveaxis")
    src = normalize_axes(source, x.ndim, "moveaxis")
    dst = normalize_axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
    return ferro.moveaxis(x, list(src), list(dst))


def permute_dims(x: Tensor, /, axes: tuple[int, ...]) -> Tensor:
    """``x`` with its axes reordered to ``axes``."""
    check_array(x, "permute_dims")
    if sorted(normalize_axes(axes, x.ndim, "permute_dims")) != list(range(x.ndim)) or len(axes) != x.ndim:
        raise ValueError(f"permute_dims: axes {axes} is not a permutation of {x.ndim} axes")
    return ferro.permute(x, tuple(axes))


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (flattened first if None)."""
    check_array(x, "repeat")
    if axis is None:
        x, axis = x.reshape(-1), 0
    ax = one_axis(axis, x.ndim, "repeat")
    if isinstance(repeats, Tensor):
        if repeats.dtype.kind not in "ui":
            raise TypeError(f"repeat: repeats must be an integer array, got {repeats.dtype}")
        repeats = repeats.to(ferro.int64)
        if repeats.ndim == 0 or repeats.shape[0] == 1:  # an array broadcasts to the axis, as in NumPy
            repeats = ferro.broadcast_to(repeats.reshape(1), (x.shape[ax],)).clone()
        if repeats.numel() == 0 or x.shape[ax] == 0:  # nothing to repeat: ferro's index would be empty floats
            shape = list(x.shape)
            shape[ax] = 0
            return ferro.empty(tuple(shape), dtype=x.dtype, device=x.device)
    return ferro.repeat_interleave(x, repeats, dim=ax)


def reshape(x: Tensor, /, shape: tuple[int, ...], *, copy: builtins_bool | None = None) -> Tensor:
    """``x`` with a new shape (``copy=False`` refuses when it would need a copy)."""
    check_array(x, "reshape")
    shape = tuple(operator.index(s) for s in shape)
    if copy is False:
        try:
            return ferro.view(x, shape)
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"reshape: {tuple(x.shape)} -> {shape} needs a copy, but copy=False ({e})") from None
    out = ferro.reshape(x, shape)
    return out.clone() if copy else out


def roll(x: Tensor, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Tensor:
    """``x`` rotated by ``shift`` along ``axis`` (flattened, then reshaped back, if None)."""
    check_array(x, "roll")
    if axis is None:
        return ferro.roll(x.reshape(-1), shift).reshape(tuple(x.shape))
    axes = normalize_axes(axis, x.ndim, "roll")
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} differ in length")
    return ferro.roll(x, shifts, list(axes))


def squeeze(x: Tensor, /, axis: int | tuple[int, ...]) -> Tensor:
    """``x`` without the size-1 axes ``axis`` (ValueError if one is not size 1)."""
    check_array(x, "squeeze")
    axes = normalize_axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return ferro.squeeze(x, axes) if axes else x


def tile(x: Tensor, repetitions: tuple[int, ...], /) -> Tensor:
    """``x`` repeated ``repetitions[i]`` times along each axis."""
    return ferro.tile(check_array(x, "tile"), tuple(repetitions))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``."""
    check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: expected an array of at least one dimension")
    return tuple(ferro.unbind(x, one_axis(axis, x.ndim, "unstack")))


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements of ``x`` at ``indices`` along ``axis`` (``x`` must be 1-d if None)."""
    check_array(x, "take")
    check_array(indices, "take", "indices")
    if axis is None:
        if x.ndim > 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    # x[..., indices, ...]: the standard's take counts negative indices from the end (index_select refuses them)
    return x[(slice(None),) * one_axis(axis, x.ndim, "take") + (indices,)]


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """The elements of ``x`` at ``indices``, matched along ``axis`` (``indices`` broadcasts elsewhere)."""
    check_array(x, "take_along_axis")
    check_array(indices, "take_along_axis", "indices")
    return ferro.take_along_dim(x, indices, dim=one_axis(axis, x.ndim, "take_along_axis"))
