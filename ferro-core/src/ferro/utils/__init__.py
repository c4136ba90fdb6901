"""Utilities: activation checkpointing (``ferro.utils.checkpoint``) and the data API under its PyTorch name
(``ferro.utils.data`` is ``ferro.data``)."""

from .. import data
from . import checkpoint

__all__ = ["checkpoint", "data"]

import sys as _sys

_sys.modules.setdefault(f"{__name__}.data", data)  # so that `from ferro.utils.data import DataLoader` works
