"""Parallel training wrappers, as ``torch.nn.parallel``: :class:`DistributedDataParallel`."""

from ._distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
