"""Turning a list of samples into a batch (``default_collate``) and samples into tensors (``default_convert``)."""

from __future__ import annotations

import collections.abc
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["default_collate", "default_convert"]

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _numpy() -> Any:
    return sys.modules.get("numpy")  # a sample can only hold NumPy values if NumPy is already imported


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _rebuild(elem: Any, items: Any) -> Any:
    """A container of ``elem``'s type holding ``items``, or a plain dict/list where that type cannot be built."""
    try:
        return type(elem)(items)
    except TypeError:
        return dict(items) if isinstance(elem, collections.abc.Mapping) else list(items)


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, as PyTorch: tensors are stacked (a new first dimension),
    NumPy arrays and scalars become tensors, Python floats float64 tensors, ints (and bools) int64
    (bool) tensors; strings and bytes stay a list; dicts, named tuples and sequences are collated field
    by field (a tuple sample gives a list of batches)."""
    from .._core.dtypes import float64
    from .._core.tensor import Tensor
    from .._creation import as_tensor, tensor
    from .._ops.shape import stack
    elem = batch[0]
    np = _numpy()
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if np is not None and isinstance(elem, np.ndarray):
        if elem.dtype.kind in "SaUO":
            raise TypeError(_ERR.format(elem.dtype))
        return stack([as_tensor(b) for b in batch], 0)
    if np is not None and isinstance(elem, np.generic):
        if elem.dtype.kind in "SaUO":
            raise TypeError(_ERR.format(elem.dtype))
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if len({len(e) for e in batch}) != 1:
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(s) for s in zip(*batch)]  # (tuples: strings stay a tuple, as torch)
        return transposed if isinstance(elem, tuple) else _rebuild(elem, transposed)
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """A sample with NumPy arrays and scalars made tensors (containers converted recursively, tuples
    as lists, as PyTorch); used when a DataLoader does not batch (``batch_size=None``)."""
    from .._creation import as_tensor
    np = _numpy()
    if np is not None and isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind not in "SaUO":
        return as_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
