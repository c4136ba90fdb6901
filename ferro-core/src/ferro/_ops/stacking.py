"""Joining, broadcasting and turning tensors, written in ops: ``hstack`` / ``vstack`` / ``dstack`` /
``column_stack``, ``atleast_1d/2d/3d``, ``meshgrid``, ``broadcast_tensors``, ``fliplr`` / ``flipud``, ``rot90``.

The functions taking several tensors accept them as separate arguments or as one sequence, as PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._core.records import register_composites
from .._core.tensor import Tensor, _wrap_dim
from ..errors import ShapeError
from .shape import broadcast_shapes, cat

__all__ = ["FUNCTIONS", "METHODS"]


def _tensors(name: str, tensors: tuple[Any, ...]) -> list[Tensor]:
    """The tensors of a call given as arguments or as one list or tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected Tensors, got {type(t).__name__} at position {i}")
    return list(tensors)


def _at_least(name: str, n: int, tensors: tuple[Any, ...]) -> Any:
    ts = _tensors(name, tensors)
    out = []
    for t in ts:
        if t.ndim >= n:
            out.append(t)
        elif n == 3 and t.ndim == 2:  # PyTorch (and NumPy): a matrix becomes (rows, cols, 1)
            out.append(t.unsqueeze(-1))
        elif n == 3 and t.ndim == 1:
            out.append(t.reshape(1, -1, 1))
        else:
            out.append(t.reshape((1,) * (n - t.ndim) + tuple(t.shape)))
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dim (a 0-d tensor becomes shape (1,)); one tensor in, one out."""
    return _at_least("atleast_1d", 1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dims, new dims in front."""
    return _at_least("atleast_2d", 2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dims (a vector (n,) becomes (1, n, 1), a matrix (r, c) becomes (r, c, 1))."""
    return _at_least("atleast_3d", 3, tensors)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1 (dim 0 for 1-D tensors)."""
    ts = list(_at_least("hstack", 1, (_tensors("hstack", (tensors,)),)))
    return _cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 0, 1-D tensors as rows."""
    return _cat(list(_at_least("vstack", 2, (_tensors("vstack", (tensors,)),))), 0)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 2, after making each at least 3-D."""
    return _cat(list(_at_least("dstack", 3, (_tensors("dstack", (tensors,)),))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1, 0-D and 1-D tensors as columns."""
    ts = _tensors("column_stack", (tensors,))
    return _cat([t.reshape(-1, 1) if t.ndim < 2 else t for t in ts], 1)


def _cat(ts: list[Tensor], dim: int) -> Tensor:
    return cat(ts, dim)


def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views)."""
    ts = _tensors("broadcast_tensors", tensors)
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(t if tuple(t.shape) == tuple(shape) else t.expand(shape) for t in ts)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: with ``indexing='ij'`` (the default, as PyTorch's) grid ``i`` varies
    along dim ``i``; with ``'xy'`` the first two dims are swapped (Cartesian, as NumPy's default)."""
    ts = _tensors("meshgrid", tensors)
    if indexing not in (None, "ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in ts:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expected 0-D or 1-D tensors, got shape {list(t.shape)}")
    flat = [t.reshape(-1) for t in ts]
    shape = [t.shape[0] for t in flat]
    n = len(flat)
    grids = [t.reshape([-1 if j == i else 1 for j in range(n)]).expand(shape) for i, t in enumerate(flat)]
    if indexing == "xy" and n >= 2:  # Cartesian: the first two dims swapped
        grids = [g.transpose(0, 1) for g in grids]
    return tuple(grids)


def fliplr(input: Tensor) -> Tensor:
    """Reverse dim 1 (left to right); needs at least 2 dims."""
    if input.ndim < 2:
        raise ShapeError(f"fliplr: the input must have at least 2 dims, got shape {list(input.shape)}")
    return input.flip(1)


def flipud(input: Tensor) -> Tensor:
    """Reverse dim 0 (up to down); needs at least 1 dim."""
    if input.ndim < 1:
        raise ShapeError("flipud: the input must have at least 1 dim, got a 0-d tensor")
    return input.flip(0)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first dim toward the second."""
    if len(dims) != 2:
        raise ValueError(f"rot90: expected total rotation dims == 2, got {len(dims)}")
    if input.ndim < 2:
        raise ShapeError(f"rot90: expected total dims >= 2, got {input.ndim}")
    d0, d1 = (_wrap_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise ValueError(f"rot90: the rotation dims must differ, got {list(dims)}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("atleast_1d", atleast_1d, ("reshape",)), ("atleast_2d", atleast_2d, ("reshape",)),
    ("atleast_3d", atleast_3d, ("reshape",)), ("hstack", hstack, ("cat", "reshape")),
    ("vstack", vstack, ("cat", "reshape")), ("dstack", dstack, ("cat", "reshape")),
    ("column_stack", column_stack, ("cat", "reshape")), ("broadcast_tensors", broadcast_tensors, ("expand",)),
    ("meshgrid", meshgrid, ("reshape", "expand", "permute")), ("fliplr", fliplr, ("flip",)),
    ("flipud", flipud, ("flip",)), ("rot90", rot90, ("flip", "permute", "clone")),
]

FUNCTIONS: dict[str, Callable[..., Any]] = register_composites("shape", _ROWS)
#: Ops that are also Tensor methods, as in PyTorch.
METHODS: list[str] = ["fliplr", "flipud", "rot90"]
