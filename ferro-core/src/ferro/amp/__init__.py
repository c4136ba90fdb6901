"""Mixed precision: ``autocast`` regions (ops of PyTorch's policy in 16 bits or float32)."""

from ._autocast import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_enabled"]
