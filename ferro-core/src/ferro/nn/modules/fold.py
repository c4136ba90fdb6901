"""``Fold`` and ``Unfold``: sliding blocks to columns and back (``F.fold`` / ``F.unfold``)."""

from __future__ import annotations

from typing import Any

from ..._core.tensor import Tensor
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["Fold", "Unfold"]


class Unfold(Module):
    """The sliding blocks of (N, C, H, W) as columns (N, C * kH * kW, L) (im2col)."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """The columns of ``input``'s blocks."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns (N, C * kH * kW, L) summed back into (N, C, *output_size) blocks (col2im)."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """The blocks of ``input``'s columns, overlaps added."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
