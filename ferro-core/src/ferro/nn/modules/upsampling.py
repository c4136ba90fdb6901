"""``Upsample`` (and the older ``UpsamplingNearest2d`` / ``UpsamplingBilinear2d``) over ``F.interpolate``,
and ``PixelShuffle`` / ``PixelUnshuffle``."""

from __future__ import annotations

from typing import Any

from ..._core.tensor import Tensor
from ...errors import ShapeError
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle"]


class Upsample(Module):
    """Resize the spatial dims to ``size`` or by ``scale_factor`` (every mode of ``F.interpolate``)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """``input`` resized."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbor upsampling of (N, C, H, W) (``Upsample(mode='nearest')``)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with ``align_corners=True``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


def _shuffle(x: Tensor, r: int, name: str) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise ShapeError(f"{name}: {c} channels are not divisible by upscale_factor^2 = {r * r}")
    k = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def _unshuffle(x: Tensor, r: int, name: str) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    *lead, c, h, w = x.shape
    if h % r or w % r:
        raise ShapeError(f"{name}: height {h} and width {w} must be divisible by downscale_factor {r}")
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


class PixelShuffle(Module):
    """Rearrange (*, C * r^2, H, W) into (*, C, H * r, W * r), r = ``upscale_factor``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """The shuffled input."""
        return _shuffle(input, self.upscale_factor, "PixelShuffle")

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearrange (*, C, H * r, W * r) into (*, C * r^2, H, W), r = ``downscale_factor``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """The unshuffled input."""
        return _unshuffle(input, self.downscale_factor, "PixelUnshuffle")

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
