"""Samplers: the order in which a DataLoader visits a map-style dataset, as ``torch.utils.data``.

Random samplers draw from a :class:`ferro.Generator` when given one (reproducible and independent
of the global seed), else from ferro's global CPU generator (so ``ferro.manual_seed`` and a restored
RNG state reproduce the order). They draw when iteration starts, in the thread calling ``iter()``,
never in a DataLoader's background thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .._random import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: implement ``__iter__`` (indices) and, where known, ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _cpu_or(generator: Generator | None) -> Any:
    return generator.device if generator is not None else "cpu"


def _randperm(n: int, generator: Generator | None) -> list[int]:
    from .._ops.sampling import randperm
    return randperm(n, generator=generator, device=_cpu_or(generator)).tolist()


def _randint(high: int, size: int, generator: Generator | None) -> list[int]:
    from .._creation import randint
    return randint(0, high, (size,), generator=generator, device=_cpu_or(generator)).tolist()


#: How many indices RandomSampler draws at once with replacement (PyTorch's chunk).
_CHUNK = 32


class RandomSampler(Sampler[int]):
    """The indices of ``data_source`` shuffled: a new permutation per epoch, or ``num_samples`` draws
    with ``replacement``. More samples than the dataset holds without replacement: whole permutations
    one after another, as PyTorch."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # Drawn as the loop asks, a chunk or a permutation at a time, as PyTorch: num_samples may be far
        # more than memory holds (a "run forever" sampler), and only the indices used are ever drawn.
        n, k = len(self.data_source), self.num_samples
        if self.replacement:
            for _ in range(k // _CHUNK):
                yield from _randint(n, _CHUNK, self.generator)
            if k % _CHUNK:
                yield from _randint(n, k % _CHUNK, self.generator)
            return
        for _ in range(k // n):
            yield from _randperm(n, self.generator)
        if k % n:
            yield from _randperm(n, self.generator)[:k % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (a new one per epoch)."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        return iter([self.indices[i] for i in _randperm(len(self.indices), self.generator)])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        from .._core.dtypes import float64
        from .._creation import as_tensor
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(weights, dtype=float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        from .._ops.sampling import multinomial
        w = self.weights if self.generator is None else self.weights.to(self.generator.device)
        return iter(multinomial(w, self.num_samples, self.replacement, generator=self.generator).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Lists of ``batch_size`` indices from ``sampler``; the last one shorter, or dropped with ``drop_last``.

    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)  # now, not at the first next(): a shuffle draws when iteration starts
        return self._batches(indices)

    def _batches(self, indices: Iterator[int]) -> Iterator[list[int]]:
        size = self.batch_size
        while True:
            batch = [i for _, i in zip(range(size), indices)]
            if not batch or (len(batch) < size and self.drop_last):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
