"""The standard's set functions over ``ferro.unique``.

The standard counts every NaN as a distinct value; ``ferro.unique`` (as
PyTorch's) merges them. The NaNs are therefore left out of the unique call
and appended, each with a count of 1.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import _api as ferro
from .._core import dtypes as _d
from .._core.tensor import Tensor
from ._dtypes import check_array


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result."""

    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result."""

    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result."""

    values: Tensor
    inverse_indices: Tensor


def _unique(x: Tensor, fn: str) -> UniqueAllResult:
    check_array(x, fn)
    flat = x.reshape(-1)
    n = flat.shape[0]
    dev = x.device
    positions = ferro.arange(n, device=dev)
    if x.dtype.kind in "fc":
        nan = ferro.isnan(flat)
        keep = ferro.logical_not(nan)
        vals, nan_pos = flat[keep], positions[nan]
        pos = positions[keep]
    else:
        vals, pos, nan_pos = flat, positions, positions[:0]
    values, inv, counts = ferro.unique(vals, return_inverse=True, return_counts=True)
    m = values.shape[0]
    # the first position of each value: the smallest position among its occurrences
    first = ferro.full((m,), n, dtype=_d.int64, device=dev).scatter_reduce(0, inv, pos, "amin")
    k = nan_pos.shape[0]
    if k:
        values = ferro.cat([values, flat[nan_pos]])
        first = ferro.cat([first, nan_pos])
        counts = ferro.cat([counts, ferro.ones((k,), dtype=counts.dtype, device=dev)])
        inverse = ferro.zeros((n,), dtype=_d.int64, device=dev)
        inverse[pos] = inv
        inverse[nan_pos] = ferro.arange(m, m + k, device=dev)
    else:
        inverse = inv
    return UniqueAllResult(values, first, inverse.reshape(tuple(x.shape)), counts)


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """The sorted unique values, the first index of each, the inverse indices (``x``'s shape) and counts."""
    return _unique(x, "unique_all")


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The sorted unique values and how often each occurs."""
    r = _unique(x, "unique_counts")
    return UniqueCountsResult(r.values, r.counts)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The sorted unique values and, in ``x``'s shape, the index of each element among them."""
    r = _unique(x, "unique_inverse")
    return UniqueInverseResult(r.values, r.inverse_indices)


def unique_values(x: Tensor, /) -> Tensor:
    """The sorted unique values (each NaN is its own value)."""
    return _unique(x, "unique_values").values
