"""Mixed precision: ``autocast`` regions (the ops of PyTorch's policy in 16 bits or float32), loss scaling
(:class:`GradScaler`) and the fused gradient check it runs (``amp_unscale_``)."""

from __future__ import annotations

from .._core.lazy import attributes
from ._autocast import (
    autocast,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from ._unscale import amp_unscale_  # registers the op, so: not lazily

__getattr__ = attributes(__name__, {"GradScaler": ".grad_scaler", "OptState": ".grad_scaler"})

__all__ = ["GradScaler", "OptState", "amp_unscale_", "autocast", "get_autocast_dtype", "is_autocast_enabled",
           "set_autocast_enabled", "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled"]
