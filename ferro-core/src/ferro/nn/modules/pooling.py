"""Pooling layers over the functional pools: ``MaxPool1d/2d``, ``AvgPool1d/2d``, adaptive pools."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"]


def _unsupported(cls: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"{cls}: {what} is not implemented in ferro yet")


class _MaxPoolNd(Module):
    _fn: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        if return_indices:
            raise _unsupported(type(self).__name__, "return_indices=True")
        if ceil_mode:
            raise _unsupported(type(self).__name__, "ceil_mode=True")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """The maximum of each window."""
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, L); ``stride`` defaults to ``kernel_size``."""

    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``."""

    _fn = staticmethod(F.max_pool2d)


class _AvgPoolNd(Module):
    _fn: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        if ceil_mode:
            raise _unsupported(type(self).__name__, "ceil_mode=True")
        if divisor_override is not None:
            raise _unsupported(type(self).__name__, "divisor_override")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        fn = type(self)._fn
        out = fn(input, self.kernel_size, self.stride, self.padding)
        if self.count_include_pad or not _any(self.padding):
            return out
        # Divide by the real elements of each window: the same pool over ones gives their share.
        from ..._creation import ones
        share = fn(ones(*input.shape, dtype=input.dtype, device=input.device), self.kernel_size, self.stride,
                   self.padding)
        return out / share

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _any(padding: Any) -> bool:
    return any(padding) if isinstance(padding, (tuple, list)) else bool(padding)


class AvgPool1d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, L); ``count_include_pad=False`` leaves padding out of the mean."""

    _fn = staticmethod(F.avg_pool1d)


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, H, W); ``count_include_pad=False`` leaves padding out of the mean."""

    _fn = staticmethod(F.avg_pool2d)


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``output_size`` (int or pair; None keeps that input size)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """Window means giving ``output_size``."""
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveAvgPool2d):
    """Max pooling to a fixed ``output_size`` (int or pair; None keeps that input size)."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        if return_indices:
            raise _unsupported("AdaptiveMaxPool2d", "return_indices=True")
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Tensor:
        """Window maxima giving ``output_size``."""
        return F.adaptive_max_pool2d(input, self.output_size)
