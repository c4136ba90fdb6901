"""Datasets and data loading, as ``torch.utils.data``.

>>> import ferro
>>> from ferro.data import DataLoader, TensorDataset
>>> ds = TensorDataset(ferro.arange(6.0).reshape(3, 2), ferro.tensor([0, 1, 0]))
>>> g = ferro.Generator().manual_seed(0)
>>> len(DataLoader(ds, batch_size=2, shuffle=True, generator=g))
2
"""

from ._collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset", "ChainDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "DataLoader", "default_collate",
           "default_convert", "get_worker_info"]


def get_worker_info() -> None:
    """None: ferro's DataLoader has no worker processes (prefetching runs in one thread of this process)."""
    return None
