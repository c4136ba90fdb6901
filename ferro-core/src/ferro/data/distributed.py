"""``DistributedSampler``: each process of a distributed job visits its own shard of a dataset.

The order is PyTorch's exactly (``torch.utils.data.distributed.DistributedSampler``):
a permutation drawn by PyTorch's ``randperm`` algorithm from an MT19937 generator
seeded with ``seed + epoch`` (so a job that mixes ferro and PyTorch processes, or
moves from one to the other, sees the same shards), padded by repeating its head
to a multiple of the number of replicas (or cut, with ``drop_last``), then every
``num_replicas``-th index from ``rank`` on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from .._core.host import np
from .sampler import Sampler

__all__ = ["DistributedSampler", "torch_randperm"]


def torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``, without PyTorch.

    PyTorch's CPU generator is MT19937 seeded with the seed's low 32 bits; for
    ``n`` below 2**32 / 20 its randperm swaps element ``i`` with element
    ``i + random() % (n - i)``.
    """
    draws = np().random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, size=max(n - 1, 0), dtype=np().uint32)
    order = list(range(n))
    for i, r in enumerate(draws.tolist()):
        j = i + r % (n - i)
        order[i], order[j] = order[j], order[i]
    return order


class DistributedSampler(Sampler[int]):
    """The indices of ``dataset`` this rank visits: ``len(dataset) / num_replicas`` of them, rounded up
    (padded with repeats) or, with ``drop_last``, down. Call :meth:`set_epoch` at the start of each
    epoch to draw a new order (every rank must pass the same epoch and seed)."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from .. import distributed as dist  # the data layer needs the world only when not told
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be at least 1, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Draw the next :meth:`__iter__`'s order for ``epoch`` (the same on every rank)."""
        self.epoch = epoch
