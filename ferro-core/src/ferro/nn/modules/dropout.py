"""``Dropout`` and ``Dropout2d``: random zeroing in training mode, the identity in eval mode."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["Dropout", "Dropout2d"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training, zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with dropout applied (training) or unchanged (eval)."""
        out = F.dropout(input, self.p, self.training)
        return input.copy_(out) if self.inplace and out is not input else out


class Dropout2d(_DropoutNd):
    """In training, zero whole channels of (N, C, H, W) or (C, H, W) with probability ``p``."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with channel dropout applied (training) or unchanged (eval)."""
        out = F.dropout2d(input, self.p, self.training)
        return input.copy_(out) if self.inplace and out is not input else out
