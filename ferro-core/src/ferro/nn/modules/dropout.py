"""``Dropout`` and the channel dropouts ``Dropout1d/2d/3d``: random zeroing in training mode, the identity
in eval mode."""

from __future__ import annotations

from ..._core.tensor import Tensor
from ..._creation import rand
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def _drop(self, input: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with dropout applied (training) or unchanged (eval)."""
        if not self.training or self.p == 0.0:
            return input
        out = self._drop(input)
        return input.copy_(out) if self.inplace else out

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training, zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""

    def _drop(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, True)


class Dropout2d(_DropoutNd):
    """In training, zero whole channels of (N, C, H, W) or (C, H, W) with probability ``p``."""

    def _drop(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, True)


class _ChannelDropout(_DropoutNd):
    _n: int  # spatial dims

    def _drop(self, input: Tensor) -> Tensor:
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"{type(self).__name__}: expected {n + 1}D or {n + 2}D input, got {input.ndim}D input "
                             f"of shape {list(input.shape)}")
        lead = input.shape[:input.ndim - n]
        if self.p == 1.0:
            return input * 0
        keep = rand(*lead, *([1] * n), dtype=input.dtype, device=input.device) >= self.p
        return input * keep / (1.0 - self.p)


class Dropout1d(_ChannelDropout):
    """In training, zero whole channels of (N, C, L) or (C, L) with probability ``p``."""

    _n = 1


class Dropout3d(_ChannelDropout):
    """In training, zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``."""

    _n = 3


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks (``F.alpha_dropout``): keeps the mean and variance of its input."""

    def _drop(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, True)


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` of whole channels (``F.feature_alpha_dropout``)."""

    def _drop(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, True)
