"""``DataParallel``, as ``torch.nn.DataParallel`` on one device: PyTorch splits a batch across the GPUs of one
process; ferro runs one device per process (``DistributedDataParallel`` for several), so the wrapper runs its
module on its device, and its state_dict keys carry PyTorch's ``module.`` prefix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Wraps ``module`` (at ``self.module``) and calls it on the inputs. ``device_ids`` may name one device
    (or none); several devices are refused in favour of ``ferro.nn.parallel.DistributedDataParallel``."""

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        ids = list(device_ids) if device_ids is not None else []
        if len(ids) > 1:
            raise NotImplementedError(f"DataParallel: ferro runs one device per process, got device_ids {ids}; use "
                                      "ferro.nn.parallel.DistributedDataParallel with `ferro run -n N` to train "
                                      "on several devices")
        self.module, self.device_ids, self.output_device, self.dim = module, ids, output_device, dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The module's output on the inputs."""
        return self.module(*inputs, **kwargs)
