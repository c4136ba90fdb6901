"""Run a PyTorch script unchanged on ferro: an opt-in ``torch`` name that maps to ferro.

``with ferro.compat.as_torch(): import script`` (or ``runpy.run_path``) makes the
script's ``import torch``, ``import torch.nn as nn``, ``from torch.utils.data import
DataLoader`` ... bind ferro's modules; on leaving the block ``sys.modules`` is as it
was (a real torch, if one was imported, comes back). Nothing is installed and no
package named ``torch`` exists: the mapping lives only inside the block, so a program
that imports both sees each under its own name. ``docs/porting.md`` lists where the
two differ.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["TORCH_MODULES", "as_torch"]

#: ``torch`` module name -> the ferro module that stands in for it.
TORCH_MODULES: dict[str, str] = {
    "torch": "ferro",
    "torch.nn": "ferro.nn",
    "torch.nn.functional": "ferro.nn.functional",
    "torch.nn.init": "ferro.nn.init",
    "torch.nn.utils": "ferro.nn.utils",
    "torch.nn.utils.rnn": "ferro.nn.utils.rnn",
    "torch.nn.parallel": "ferro.nn.parallel",
    "torch.optim": "ferro.optim",
    "torch.optim.lr_scheduler": "ferro.optim.lr_scheduler",
    "torch.utils": "ferro.utils",
    "torch.utils.data": "ferro.utils.data",
    "torch.utils.checkpoint": "ferro.utils.checkpoint",
    "torch.autograd": "ferro.autograd",
    "torch.distributions": "ferro.distributions",
    "torch.linalg": "ferro.linalg",
    "torch.fft": "ferro.fft",
    "torch.special": "ferro.special",
    "torch.amp": "ferro.amp",
    "torch.cuda": "ferro.cuda",
    "torch.accelerator": "ferro.accelerator",
    "torch.backends": "ferro.backends",
    "torch.backends.cudnn": "ferro.backends.cudnn",
    "torch.distributed": "ferro.distributed",
    "torch.onnx": "ferro.onnx",
}


@contextmanager
def as_torch() -> Iterator[ModuleType]:
    """Inside the block, ``import torch`` (and its submodules in :data:`TORCH_MODULES`) gives ferro's."""
    saved = {name: sys.modules.get(name) for name in TORCH_MODULES}
    try:
        for name, target in TORCH_MODULES.items():
            sys.modules[name] = importlib.import_module(target)
        yield sys.modules["torch"]
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
