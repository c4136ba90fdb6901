"""Mixed precision: loss scaling (:class:`GradScaler`) and the fused gradient check it runs (``amp_unscale_``)."""

from __future__ import annotations

from ._unscale import amp_unscale_
from .grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState", "amp_unscale_"]
