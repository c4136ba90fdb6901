"""Datasets, as ``torch.utils.data``: map-style and iterable, tensors, subsets, concatenation, random splits."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .._core.tensor import Tensor
    from .._random import Generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
           "StackDataset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: implement ``__getitem__(index)`` and, for samplers and ``len(loader)``,
    ``__len__``. Adding two datasets concatenates them."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples: implement ``__iter__``. The DataLoader batches it in order (no sampler,
    no shuffle); adding two of them chains them."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Any, ...]]):
    """Samples are the rows of tensors of equal first dimension: ``dataset[i] == (t[i] for t in tensors)``.

    The DataLoader batches it by indexing each tensor once per batch with an index tensor.
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] if t.ndim else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(f"Size mismatch between tensors: TensorDataset needs tensors of equal first "
                             f"dimension, got shapes {[list(t.shape) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset[Any]):
    """Samples zipped from datasets of equal length: a tuple (positional) or a dict (keywords)."""

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError("StackDataset takes datasets as positional or keyword arguments, not both")
        self._datasets: Any = args or kwargs
        items = list(args) or list(kwargs.values())
        if not items:
            raise ValueError("StackDataset needs at least one dataset")
        lengths = {len(d) for d in items}  # type: ignore[arg-type]
        if len(lengths) != 1:
            raise ValueError(f"Size mismatch between datasets: lengths {sorted(lengths)}")
        self._length = lengths.pop()

    def __getitem__(self, index: int) -> Any:
        if isinstance(self._datasets, dict):
            return {k: d[index] for k, d in self._datasets.items()}
        return tuple(d[index] for d in self._datasets)

    def __len__(self) -> int:
        return self._length


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]  # type: ignore[index]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples at ``indices`` (in one call when the wrapped dataset has ``__getitems__``)."""
        inner = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        return getitems(inner) if callable(getitems) else [self.dataset[i] for i in inner]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after the other (negative indices count from the end)."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; use ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        if which >= len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {len(self)}")
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset[Any]):
    """Iterable datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


def _split_lengths(n: int, lengths: Sequence[float]) -> list[int]:
    """Fractions summing to 1 as lengths summing to ``n``: floors, then the remainder round-robin."""
    out = []
    for i, frac in enumerate(lengths):
        if not 0 <= frac <= 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        out.append(math.floor(n * frac))
    for i in range(n - sum(out)):
        out[i % len(out)] += 1
    for i, length in enumerate(out):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                          stacklevel=3)
    return out


def random_split(dataset: Dataset[T_co], lengths: Sequence[float],
                 generator: Generator | None = None) -> list[Subset[T_co]]:
    """Split ``dataset`` at random into non-overlapping subsets of ``lengths`` (counts, or fractions
    that sum to 1). The permutation comes from ``generator``, else from ferro's global CPU generator."""
    from .._ops.sampling import randperm
    n = len(dataset)  # type: ignore[arg-type]
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        lengths = _split_lengths(n, lengths)
    if any(int(x) != x or x < 0 for x in lengths):
        raise ValueError(f"random_split lengths must be non-negative integers or fractions summing to 1, "
                         f"got {list(lengths)}")
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths ({sum(lengths)}) does not equal the length of the input "
                         f"dataset ({n})!")
    indices = randperm(n, generator=generator).tolist()
    ends = itertools.accumulate(int(x) for x in lengths)
    return [Subset(dataset, indices[end - int(length):end]) for end, length in zip(ends, lengths)]
