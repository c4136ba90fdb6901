"""The DataLoader: batches of a dataset in sampler order, optionally prepared ahead in a background thread."""

from __future__ import annotations

import collections
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from .._random import Generator

__all__ = ["DataLoader"]

_END = object()  # what a stream task returns when the stream is exhausted


def _tensor_rows(dataset: Any, indices: list[int]) -> list[Any] | None:
    """The fast path: a batch of a TensorDataset (maybe inside Subsets) as each tensor indexed once
    with an index tensor, which equals ``default_collate`` of its samples. None where it does not apply."""
    while isinstance(dataset, Subset):
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    from .._core.dtypes import int64
    from .._creation import tensor
    index: dict[Any, Any] = {}
    out = []
    for t in dataset.tensors:
        idx = index.get(t._device)
        if idx is None:
            idx = index[t._device] = tensor(indices, dtype=int64, device=t._device)
        out.append(t[idx])
    return out


class DataLoader:
    """Batches of ``dataset``, as ``torch.utils.data.DataLoader``.

    ``batch_size`` samples per batch (None: samples one by one, converted with ``default_convert``);
    ``shuffle`` draws a new order every epoch from ``generator`` (a :class:`ferro.Generator`) or, without
    one, from ferro's global CPU generator; ``drop_last`` drops a short last batch; ``collate_fn``
    builds a batch from a list of samples (``default_collate``); ``sampler`` / ``batch_sampler`` give
    the order yourself.

    ``prefetch_factor=N`` prepares up to N batches ahead in one background thread (no pinned memory);
    ``num_workers > 0`` asks for the same (ferro has no worker processes; ``worker_init_fn(0)`` runs in
    that thread). Samplers still run in the calling thread, so the order does not depend on the
    thread; the dataset's ``__getitem__`` and ``collate_fn`` run in the background one.

    >>> import ferro
    >>> from ferro.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(ferro.arange(10), ferro.arange(10) * 2)
    >>> [x.tolist() for x, y in DataLoader(ds, batch_size=4)]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """

    def __init__(self, dataset: Dataset[Any] | Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler[Any] | Iterable[Any] | None = None,
                 batch_sampler: Sampler[list[Any]] | Iterable[list[Any]] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"prefetch_factor should be a positive integer, got {prefetch_factor!r}")
        if pin_memory:
            warnings.warn("ferro has no pinned memory: pin_memory=True is ignored", stacklevel=2)
        self.dataset = dataset
        self.num_workers, self.timeout, self.worker_init_fn = num_workers, timeout, worker_init_fn
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None else (2 if num_workers else None)
        self.pin_memory, self.persistent_workers, self.generator = False, persistent_workers, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self._auto_collation = batch_sampler is not None or (self._iterable and batch_size is not None)
        self._default_collate = collate_fn is None or collate_fn is default_collate
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    def __len__(self) -> int:
        """Batches per epoch (for an IterableDataset: from its ``__len__``, as PyTorch)."""
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        return _LoaderIter(self)

    def _fetch(self, indices: Any) -> Any:
        """One batch (auto-collation: ``indices`` is a list) or one converted sample."""
        if not self._auto_collation:
            return self.collate_fn(self.dataset[indices])
        if self._default_collate:
            rows = _tensor_rows(self.dataset, indices)
            if rows is not None:
                return rows
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(indices) if callable(getitems) else [self.dataset[i] for i in indices]
        return self.collate_fn(samples)


class _LoaderIter:
    """One pass over a DataLoader. Map-style: index batches come from the batch sampler in this thread
    and are fetched here or, with prefetch, in a one-thread pool that keeps ``prefetch_factor`` batches
    in flight. Iterable: the stream is read (and batched) by whoever fetches."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        self._stream: Iterator[Any] | None = iter(loader.dataset) if loader._iterable else None
        self._indices: Iterator[Any] | None = None
        if not loader._iterable:
            src = loader.batch_sampler if loader._auto_collation else loader.sampler
            self._indices = iter(src)  # type: ignore[arg-type]
        self._pending: collections.deque[Future[Any]] = collections.deque()
        self._pool: ThreadPoolExecutor | None = None
        self._exhausted = False

    def __iter__(self) -> _LoaderIter:
        return self

    def __len__(self) -> int:
        return len(self.loader)

    def _next_from_stream(self) -> Any:
        loader, stream = self.loader, self._stream
        assert stream is not None
        if not loader._auto_collation:
            item = next(stream, _END)
            return item if item is _END else loader.collate_fn(item)
        batch = [x for _, x in zip(range(loader.batch_size), stream)]  # type: ignore[arg-type]
        if not batch or (loader.drop_last and len(batch) < loader.batch_size):  # type: ignore[operator]
            return _END
        return loader.collate_fn(batch)

    def _task(self) -> Callable[[], Any] | None:
        """The work that makes the next batch, or None when the sampler is done."""
        if self._indices is None:
            return self._next_from_stream
        idx = next(self._indices, _END)
        if idx is _END:
            return None
        return lambda: self.loader._fetch(idx)

    def __next__(self) -> Any:
        if self._exhausted and not self._pending:
            raise StopIteration
        depth = self.loader.prefetch_factor
        if not depth:
            task = self._task()
            out = _END if task is None else task()
            if out is _END:
                self._exhausted = True
                raise StopIteration
            return out
        if self._pool is None:
            init = self.loader.worker_init_fn
            from concurrent.futures import ThreadPoolExecutor  # with logging and traceback: only when needed
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="ferro-dataloader",
                                            initializer=None if init is None else init, initargs=(0,))
        while not self._exhausted and len(self._pending) < depth:
            task = self._task()
            if task is None:
                self._exhausted = True
                break
            self._pending.append(self._pool.submit(task))
        if not self._pending:
            self._close()
            raise StopIteration
        try:
            out = self._pending.popleft().result(self.loader.timeout or None)
        except BaseException:
            self._close()
            raise
        if out is _END:
            self._close()
            raise StopIteration
        return out

    def _close(self) -> None:
        self._exhausted = True
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._close()
