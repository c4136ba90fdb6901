"""Pooling's window geometry and adaptive max pooling, shared by ``nn.functional`` and the pooling modules."""

from __future__ import annotations

import math
from typing import Any

from .._core.tensor import Tensor
from .._creation import arange
from .._ops.conv import FUNCTIONS as _CONV
from .._ops.conv import _tuple, adaptive_windows, unfold, window_max
from .._ops.movement import pad


class _Geometry:
    """Kernel, stride, padding and dilation per spatial dim, and the pads that give PyTorch's output size."""

    def __init__(self, n: int, name: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: bool) -> None:
        self.n, self.name, self.ceil_mode = n, name, ceil_mode
        self.kernel = _tuple(kernel_size, n, "kernel_size")
        self.stride = self.kernel if stride is None else _tuple(stride, n, "stride")
        self.padding, self.dilation = _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation")
        if any(2 * p > k for p, k in zip(self.padding, self.kernel)):
            raise ValueError(f"{name}: pad should be at most half of effective kernel size, got padding "
                             f"{list(self.padding)} and kernel {list(self.kernel)}")

    def extra(self, size: int, i: int) -> int:
        """Zeros to add after dim ``i`` (of length ``size``) beyond its padding, for ``ceil_mode``."""
        k, s, p, d = self.kernel[i], self.stride[i], self.padding[i], self.dilation[i]
        span = size + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise ValueError(f"{self.name}: the kernel {list(self.kernel)} is larger than the padded input")
        out = (-(-span // s) if self.ceil_mode else span // s) + 1
        if self.ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside the input
            out -= 1
        return max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p))

    def pads(self, spatial: tuple[int, ...], regular: bool = True, extra: bool = True) -> list[int]:
        """``F.pad`` sizes (last dim first): the padding and/or the ceil-mode extra."""
        out: list[int] = []
        for i in reversed(range(self.n)):
            p = self.padding[i] if regular else 0
            out += [p, p + (self.extra(spatial[i], i) if extra else 0)]
        return out

    def windows(self, x: Tensor, pads: list[int], value: float) -> Tensor:
        return unfold(pad(x, pads, value=value), self.kernel, self.stride, self.dilation)


def _batched(x: Tensor, n: int, name: str) -> tuple[Tensor, bool]:
    if x.ndim not in (n + 1, n + 2):
        raise ValueError(f"{name}: expected {n + 1}D or {n + 2}D input, got {x.ndim}D input of shape {list(x.shape)}")
    return (x, True) if x.ndim == n + 2 else (x.unsqueeze(0), False)


def _positions(spatial: tuple[int, ...], device: Any) -> Tensor:
    """The flat index of each element of a plane of shape ``spatial``, as (1, 1, *spatial)."""
    return arange(math.prod(spatial), device=device).reshape(1, 1, *spatial)


def adaptive_max_pool(n: int, input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """``F.adaptive_max_pool1d/2d``: max pooling of (N, C, *spatial) or (C, *spatial) to ``output_size``
    (an int, or one entry per spatial dim where None keeps the input's size); with ``return_indices``
    also the flat index of each maximum in its input plane (int64), as PyTorch's."""
    name = f"adaptive_max_pool{n}d"
    x, batched = _batched(input, n, name)
    spatial = tuple(x.shape[2:])
    if 0 in spatial:
        raise ValueError(f"{name}: expected a non-empty input plane, got input of shape {list(input.shape)}")
    sizes = tuple(s if o is None else o for o, s in zip(_tuple(output_size, n, "output_size"), spatial))
    if any(o < 0 for o in sizes):
        raise ValueError(f"{name}: output_size must not be negative, got {list(sizes)}")
    if not return_indices and name in _CONV and all(sizes):  # the registry op (which a backend may fuse)
        return _CONV[name](input, sizes)
    got = window_max(adaptive_windows(x, sizes),
                      adaptive_windows(_positions(spatial, x.device), sizes) if return_indices else None, n)
    if batched:
        return got
    return tuple(t.squeeze(0) for t in got) if return_indices else got.squeeze(0)
