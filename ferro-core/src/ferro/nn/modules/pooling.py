"""Pooling layers: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``, ``AdaptiveAvgPool1d/2d/3d``,
``AdaptiveMaxPool1d/2d/3d``, ``LPPool1d/2d/3d``, ``MaxUnpool1d/2d/3d``, ``FractionalMaxPool2d/3d``.

Each module holds its settings and calls the function of ``ferro.nn.functional`` (registry ops written
in ``_ops/conv.py``, which a backend may fuse); the settings at their defaults are left out of the call,
so that a backend's fused kernel for the plain case applies.
"""

from __future__ import annotations

from typing import Any

from ..._core.tensor import Tensor
from ..._ops.conv import _Geometry, adaptive_max_pool
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
           "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    _n: int
    _fn: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode
        _Geometry(self._n, type(self).__name__, kernel_size, self.stride, padding, dilation, ceil_mode)  # checks

    def forward(self, input: Tensor) -> Any:
        """The maximum of each window; with ``return_indices``, also its flat index in the input's spatial dims."""
        options = {k: v for k, v in (("ceil_mode", self.ceil_mode), ("return_indices", self.return_indices)) if v}
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation, **options)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, L) or (C, L); ``stride`` defaults to ``kernel_size``."""

    _n, _fn = 1, staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, H, W) or (C, H, W); ``stride`` defaults to ``kernel_size``.

    ``ceil_mode=True`` rounds the output size up; ``return_indices=True`` also returns where each maximum
    came from (flat indices into H * W), as PyTorch does.
    """

    _n, _fn = 2, staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, D, H, W) or (C, D, H, W)."""

    _n, _fn = 3, staticmethod(F.max_pool3d)


class _AvgPoolNd(Module):
    _n: int
    _fn: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        if divisor_override is not None and divisor_override <= 0:
            raise ValueError(f"{type(self).__name__}: divisor must be positive, got {divisor_override}")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override
        _Geometry(self._n, type(self).__name__, kernel_size, self.stride, padding, 1, ceil_mode)  # checks

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window (PyTorch's divisor: see ``count_include_pad`` and ``divisor_override``)."""
        options: dict[str, Any] = {"ceil_mode": True} if self.ceil_mode else {}
        if not self.count_include_pad:
            options["count_include_pad"] = False
        if self.divisor_override is not None:
            options["divisor_override"] = self.divisor_override
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, **options)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, L); ``count_include_pad=False`` leaves padding out of the mean."""

    _n, _fn = 1, staticmethod(F.avg_pool1d)

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, H, W); ``count_include_pad=False`` leaves padding out of the mean,
    ``divisor_override`` replaces the window size as divisor, ``ceil_mode`` rounds the output size up."""

    _n, _fn = 2, staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, D, H, W) (options as :class:`AvgPool2d`)."""

    _n, _fn = 3, staticmethod(F.avg_pool3d)


class AdaptiveAvgPool1d(Module):
    """Average pooling of (N, C, L) or (C, L) to length ``output_size``."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """Window means giving ``output_size``."""
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


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


class _AdaptiveMaxPoolNd(Module):
    _n: int

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:
        """Window maxima giving ``output_size``; with ``return_indices``, also their flat indices in the input's
        spatial dims."""
        return adaptive_max_pool(self._n, input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, L) or (C, L) to a fixed length ``output_size``; ``return_indices=True`` also
    returns where each maximum came from (indices into L), as PyTorch does."""

    _n = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, H, W) or (C, H, W) to a fixed ``output_size`` (int or pair; None keeps that input
    size); ``return_indices=True`` also returns where each maximum came from (flat indices into H * W)."""

    _n = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed ``output_size`` (int or triple; None keeps that
    input size); ``return_indices=True`` also returns flat indices into D * H * W."""

    _n = 3


class AdaptiveAvgPool3d(Module):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed ``output_size`` (int or triple)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """Window means giving ``output_size``."""
        return F.adaptive_avg_pool3d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _LPPoolNd(Module):
    _fn: Any

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """``(sum over each window of x^p)^(1/p)``."""
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling of (N, C, L): ``(sum over the window of x^p)^(1/p)``."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling of (N, C, H, W): ``(sum over the window of x^p)^(1/p)``."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling of (N, C, D, H, W): ``(sum over the window of x^p)^(1/p)``."""

    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _fn: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """Each value of ``input`` at its index (from the max pooling), zeros elsewhere."""
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool1d` (given its indices): the maxima back in place, zeros elsewhere."""

    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool2d` (given its indices): the maxima back in place, zeros elsewhere."""

    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool3d` (given its indices): the maxima back in place, zeros elsewhere."""

    _fn = staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _fn: Any

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor) -> Any:
        """The maxima of pseudo-random windows (and their flat indices with ``return_indices``)."""
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                              _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling of (N, C, H, W) over pseudo-random overlapping windows to ``output_size`` or
    ``output_ratio`` of the input (Graham's fractional max pooling)."""

    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Max pooling of (N, C, D, H, W) over pseudo-random overlapping windows (see :class:`FractionalMaxPool2d`)."""

    _fn = staticmethod(F.fractional_max_pool3d)
