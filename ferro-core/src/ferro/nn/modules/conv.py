"""Convolutions ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``, initialized as PyTorch initializes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._core.tensor import Tensor
from ..._creation import empty
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from ..parameter import Parameter
from ._params import optional_parameters, reset_kaiming
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v: Any, n: int) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, Sequence) else (v,) * n


class _ConvNd(Module):
    """What the convolutions share: arguments, checks, weight and bias, init and repr."""

    _n: int
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, groups: int, bias: bool, padding_mode: str, output_padding: Any = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {list(_PADDING_MODES)}, got '{padding_mode}'")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding string '{padding}', should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding: Any = padding
            totals = [d * (k - 1) if padding == "same" else 0 for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) for t in totals]
        else:
            self.padding = _ntuple(padding, n)
            pairs = [(p, p) for p in self.padding]
        # F.pad's order: last dimension first, (left, right) each.
        self._reversed_padding_repeated_twice = [v for pair in reversed(pairs) for v in pair]
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(empty(*shape, device=device, dtype=dtype))
        optional_parameters(self, {"bias": bias}, lambda _: empty(out_channels, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh initial values (PyTorch's defaults: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in)))."""
        reset_kaiming(self.weight, self.bias)

    def extra_repr(self) -> str:
        n = len(self.kernel_size)
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, 0, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = (F.conv1d, F.conv2d, F.conv3d)[self._n - 1]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        """The convolution of ``input`` with the weight, plus bias."""
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) (or unbatched (C_in, L)); weight (C_out, C_in/groups, k)."""

    _n = 1


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W); weight (C_out, C_in/groups, kH, kW).

    >>> import ferro
    >>> ferro.nn.Conv2d(3, 8, 3, padding=1)(ferro.randn(2, 3, 5, 5)).shape
    ferro.Size([2, 8, 5, 5])
    """

    _n = 2


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W); weight (C_out, C_in/groups, kD, kH, kW)."""

    _n = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple, got '{padding}'")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """The output padding that yields ``output_size`` (its last dims), as PyTorch computes it."""
        if output_size is None:
            return self.output_padding
        n = self._n
        size = list(output_size)[-n:]
        if len(size) != n:
            raise ValueError(f"output_size must have {n} or {n + 2} elements (got {len(list(output_size))})")
        pads = []
        for d in range(n):
            smallest = ((input.shape[d - n] - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= size[d] <= largest:
                raise ValueError(f"requested an output size of {size}, but valid sizes range from {smallest} to "
                                 f"{largest} (for an input of {list(input.shape[-n:])})")
            pads.append(size[d] - smallest)
        return tuple(pads)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """The transposed convolution of ``input``; ``output_size`` picks among the possible output sizes."""
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution over (N, C_in, L); weight (C_in, C_out/groups, k)."""

    _n = 1


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution over (N, C_in, H, W); weight (C_in, C_out/groups, kH, kW)."""

    _n = 2


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution over (N, C_in, D, H, W); weight (C_in, C_out/groups, kD, kH, kW)."""

    _n = 3
