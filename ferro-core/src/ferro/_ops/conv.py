"""Convolution, pooling and resampling, written in primitives.

Everything is built on :func:`unfold`, which gathers the sliding windows of an
N-d input with one advanced-indexing ``getitem`` (the index grids come from
``arange``), so it runs on every backend that has the primitives and is
differentiable through them. Convolution is then a matmul of the windows with
the flattened weight; transposed convolution is a convolution of the
zero-stuffed input with the flipped weight.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import int64
from .._core.naming import names_errors
from .._core.records import REGISTRY, ops
from .._core.tensor import Tensor
from .._creation import arange, ones, tensor, zeros
from ..errors import ShapeError
from ._rules import register_ruled
from .fused import fusable

__all__ = ["FUNCTIONS", "unfold", "window_max", "adaptive_windows", "adaptive_windows_mean", "adaptive_max_pool",
           "max_pool", "avg_pool"]


def _tuple(v: int | Sequence[int], n: int, name: str) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) else tuple(v)
    if len(t) != n:
        raise ShapeError(f"{name} must be an int or a sequence of {n} ints, got {v!r}")
    return t


def unfold(x: Tensor, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int]) -> Tensor:
    """Windows of ``x`` (N, C, *spatial): shape (N, C, *out_spatial, *kernel). ``x`` is already padded."""
    n = len(kernel)
    spatial = x.shape[2:]
    out = [(spatial[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    if any(o <= 0 for o in out):
        raise ShapeError(f"the kernel {list(kernel)} (dilation {list(dilation)}) is larger than the padded input "
                         f"{list(spatial)}")
    key: list[Any] = [slice(None), slice(None)]
    for i in range(n):
        # index of (output position o, kernel position k) in dimension i: o * stride + k * dilation
        shape_o = [1] * (2 * n)
        shape_o[i] = out[i]
        shape_k = [1] * (2 * n)
        shape_k[n + i] = kernel[i]
        o = arange(out[i], device=x.device).reshape(shape_o) * stride[i]
        k = arange(kernel[i], device=x.device).reshape(shape_k) * dilation[i]
        key.append(o + k)
    return x[tuple(key)]


def _padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int], stride: Sequence[int],
             n: int) -> list[int]:
    """``ops.pad`` sizes (last dimension first) for a padding spec: int, tuple, 'valid' or 'same'."""
    if padding == "valid":
        return [0] * (2 * n)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        pads = []
        for i in reversed(range(n)):
            total = dilation[i] * (kernel[i] - 1)
            pads += [total // 2, total - total // 2]  # the extra element goes to the end, as in PyTorch
        return pads
    p = _tuple(padding, n, "padding")
    return [v for i in reversed(range(n)) for v in (p[i], p[i])]


def _check_bias(op: str, bias: Tensor | None, c_out: int) -> None:
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != c_out):
        raise ShapeError(f"{op}: bias should have {c_out} elements (one per output channel), got shape "
                         f"{list(bias.shape)}")


def _convnd(n: int, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
            groups: int) -> Tensor:
    batched = x.ndim == n + 2
    if not batched:
        if x.ndim != n + 1:
            raise ShapeError(f"conv{n}d: expected a {n + 1}-D or {n + 2}-D input, got shape {list(x.shape)}")
        x = x.unsqueeze(0)
    c_in, c_out, kernel = x.shape[1], weight.shape[0], tuple(weight.shape[2:])
    _check_bias(f"conv{n}d", bias, c_out)
    if weight.ndim != n + 2 or c_in != weight.shape[1] * groups:
        raise ShapeError(f"conv{n}d: input {list(x.shape)} with {c_in} channels does not fit weight "
                         f"{list(weight.shape)} and groups={groups} (needs {weight.shape[1] * groups} channels)")
    if c_out % groups:
        raise ShapeError(f"conv{n}d: {c_out} output channels are not divisible by groups={groups}")
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    x = ops.pad(x, _padding(padding, kernel, dilation, stride, n))
    win = unfold(x, kernel, stride, dilation)  # (N, C, *out, *kernel)
    out_shape = win.shape[2:2 + n]
    nb = x.shape[0]
    # (N, groups, C/g, L, K) -> (N, groups, L, C/g * K)
    win = win.reshape(nb, groups, c_in // groups, math.prod(out_shape), math.prod(kernel))
    win = win.permute(0, 1, 3, 2, 4).reshape(nb, groups, math.prod(out_shape), c_in // groups * math.prod(kernel))
    w = weight.reshape(groups, c_out // groups, -1)  # (groups, C_out/g, C/g * K)
    y = win @ w.mT.unsqueeze(0)  # (N, groups, L, C_out/g)
    y = y.permute(0, 1, 3, 2).reshape(nb, c_out, *out_shape)
    if bias is not None:
        y = y + bias.reshape(1, c_out, *([1] * n))
    return y if batched else y.squeeze(0)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C, L) with (C_out, C/groups, K)."""
    return _convnd(1, x, weight, bias, stride, padding, dilation, groups)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution of (N, C, H, W) with (C_out, C/groups, kH, kW); padding int, tuple, 'same' or 'valid'."""
    return _convnd(2, x, weight, bias, stride, padding, dilation, groups)


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution of (N, C, D, H, W) with (C_out, C/groups, kD, kH, kW)."""
    return _convnd(3, x, weight, bias, stride, padding, dilation, groups)


def _conv_transposend(n: int, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                      output_padding: Any, groups: int, dilation: Any) -> Tensor:
    batched = x.ndim == n + 2
    if not batched:
        x = x.unsqueeze(0)
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    padding, output_padding = _tuple(padding, n, "padding"), _tuple(output_padding, n, "output_padding")
    c_in, kernel = x.shape[1], tuple(weight.shape[2:])
    _check_bias(f"conv_transpose{n}d", bias, weight.shape[1] * groups)
    if c_in != weight.shape[0]:
        raise ShapeError(f"conv_transpose{n}d: input {list(x.shape)} has {c_in} channels, weight "
                         f"{list(weight.shape)} expects {weight.shape[0]}")
    if any(not 0 <= o < max(s, d) for o, s, d in zip(output_padding, stride, dilation)):
        raise ShapeError(f"conv_transpose{n}d: output_padding must be smaller than stride or dilation (and not "
                         f"negative), got output_padding={list(output_padding)}, stride={list(stride)}, "
                         f"dilation={list(dilation)}")
    # Stuff stride - 1 zeros between input elements.
    if any(s > 1 for s in stride):
        spatial = [(d - 1) * s + 1 for d, s in zip(x.shape[2:], stride)]
        stuffed = zeros(x.shape[0], c_in, *spatial, dtype=x.dtype, device=x.device)
        x = stuffed.index_put((Ellipsis, *(slice(None, None, s) for s in stride)), x)
    pads: list[int] = []
    for i in reversed(range(n)):
        edge = dilation[i] * (kernel[i] - 1) - padding[i]
        pads += [edge, edge + output_padding[i]]
    x = ops.pad(x, pads)
    # weight (C_in, C_out/g, *k) -> (C_out, C_in/g, *k), flipped in space
    c_out_g = weight.shape[1]
    w = weight.reshape(groups, c_in // groups, c_out_g, *kernel).transpose(1, 2)
    w = w.reshape(groups * c_out_g, c_in // groups, *kernel).flip(tuple(range(2, 2 + n)))
    # the public convolution, so that a backend's fused conv2d kernels run it
    y = FUNCTIONS[f"conv{n}d"](x, w, bias, 1, 0, dilation, groups)
    return y if batched else y.squeeze(0)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 1-D convolution; ``weight`` is (C_in, C_out/groups, K)."""
    return _conv_transposend(1, x, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 2-D convolution; ``weight`` is (C_in, C_out/groups, kH, kW)."""
    return _conv_transposend(2, x, weight, bias, stride, padding, output_padding, groups, dilation)


def window_max(win: Tensor, where_from: Tensor | None, n: int) -> Any:
    """The maximum of each window of ``win`` (N, C, *out, *kernel) and, given ``where_from`` (the same windows
    cut from the inputs' flat positions), the flat input index it came from, as a pair.

    The first maximum of a window is taken, as PyTorch does, so that its gradient goes to that one element
    (``amax`` would share it between ties). It is selected by a mask, elementwise ops whose backward is
    elementwise too (a gather's would scatter): the other places hold -0.0, which adds nothing to any value.
    """
    k = math.prod(win.shape[2 + n:])
    flat = win.reshape(*win.shape[:2 + n], k)  # not -1: the output may be empty
    first = arange(k, device=win.device) == flat.argmax(-1, keepdim=True)
    out = ops.where(first, flat, -0.0).sum(-1)
    if where_from is None:
        return out
    return out, ops.where(first, where_from.reshape(*where_from.shape[:2 + n], k), 0).sum(-1)


def adaptive_windows(x: Tensor, out: tuple[int, ...]) -> Tensor:
    """The windows of adaptive pooling of ``x`` (N, C, *spatial) to ``out``: (N, C, *out, *kernel).

    Window ``j`` of a dim of length ``size`` spans ``[floor(j * size / o), ceil((j + 1) * size / o))`` (PyTorch's
    bounds); ``kernel`` is the longest span, and shorter windows repeat their last element, which changes
    neither their maximum nor where its first occurrence is.
    """
    n = len(out)
    key: list[Any] = [slice(None), slice(None)]
    for i, (size, o) in enumerate(zip(x.shape[2:], out)):
        bounds = [(j * size // o, -(-(j + 1) * size // o)) for j in range(o)]
        k = max((end - start for start, end in bounds), default=1)
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = o, k
        rows = [[min(start + t, end - 1) for t in range(k)] for start, end in bounds]
        key.append(tensor(rows, dtype=int64, device=x.device).reshape(shape))
    return x[tuple(key)]


class _Geometry:
    """Kernel, stride, padding and dilation per spatial dim of a pooling, and the pads that give PyTorch's
    output size (``ceil_mode`` adds an overhang after the end, where no window may start)."""

    def __init__(self, n: int, name: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: bool) -> None:
        self.n, self.name, self.ceil_mode = n, name, ceil_mode
        self.kernel = _tuple(kernel_size, n, "kernel_size")
        self.stride = self.kernel if stride is None or stride == [] else _tuple(stride, n, "stride")
        self.padding, self.dilation = _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation")
        if min(self.kernel) < 1 or min(self.stride) < 1 or min(self.dilation) < 1 or min(self.padding) < 0:
            raise ValueError(f"{name}: kernel_size, stride and dilation must be positive and padding not negative, "
                             f"got kernel_size={list(self.kernel)}, stride={list(self.stride)}, "
                             f"padding={list(self.padding)}, dilation={list(self.dilation)}")
        if any(2 * p > k for p, k in zip(self.padding, self.kernel)):
            raise ValueError(f"{name}: pad should be at most half of the kernel size, got padding "
                             f"{list(self.padding)} and kernel {list(self.kernel)}")

    def extra(self, size: int, i: int) -> int:
        """Zeros to add after dim ``i`` (of length ``size``) beyond its padding, for ``ceil_mode``."""
        k, s, p, d = self.kernel[i], self.stride[i], self.padding[i], self.dilation[i]
        span = size + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise ShapeError(f"{self.name}: the kernel {list(self.kernel)} (dilation {list(self.dilation)}) is "
                             f"larger than the padded input")
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
        return unfold(ops.pad(x, pads, value=value), self.kernel, self.stride, self.dilation)


def batched(x: Tensor, n: int, name: str) -> tuple[Tensor, bool]:
    """``x`` with a batch dim, and whether it had one; a clear error for a wrong number of dims."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError(f"{name}: expected {n + 1}D or {n + 2}D input, got {x.ndim}D input of shape "
                         f"{list(x.shape)}")
    return (x, True) if x.ndim == n + 2 else (x.unsqueeze(0), False)


def positions(spatial: tuple[int, ...], device: Any) -> Tensor:
    """The flat index of each element of a plane of shape ``spatial``, as (1, 1, *spatial)."""
    return arange(math.prod(spatial), device=device).reshape(1, 1, *spatial)


def max_pool(n: int, x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
             ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, *spatial) or (C, *spatial) over ``n`` dims, as ``F.max_pool{n}d``: the first
    maximum of each window (where its gradient goes); with ``return_indices`` also its flat index in the
    input plane (int64)."""
    name = f"max_pool{n}d"
    g = _Geometry(n, name, kernel_size, stride, padding, dilation, ceil_mode)
    x, was_batched = batched(x, n, name)
    spatial = tuple(x.shape[2:])
    win = g.windows(x, g.pads(spatial), -math.inf)
    if not return_indices:
        out = window_max(win, None, n)
        return out if was_batched else out.squeeze(0)
    out, idx = window_max(win, g.windows(positions(spatial, x.device), g.pads(spatial), -1), n)
    return (out, idx) if was_batched else (out.squeeze(0), idx.squeeze(0))


def avg_pool(n: int, x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
             count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Average pooling over ``n`` dims, as ``F.avg_pool{n}d``, with PyTorch's divisor: the window's places in
    the input, plus its padding with ``count_include_pad``, never the ceil-mode overhang; or
    ``divisor_override``."""
    name = f"avg_pool{n}d"
    if divisor_override is not None and divisor_override <= 0:
        raise ValueError(f"{name}: divisor_override must be positive, got {divisor_override}")
    g = _Geometry(n, name, kernel_size, stride, padding, 1, ceil_mode)
    x, was_batched = batched(x, n, name)
    spatial = tuple(x.shape[2:])
    dims = tuple(range(2 + n, 2 + 2 * n))
    total = g.windows(x, g.pads(spatial), 0.0).sum(dims)
    if divisor_override is not None:
        out = total / divisor_override
    elif count_include_pad and not ceil_mode:
        out = total / math.prod(g.kernel)
    else:
        pad = ops.pad
        mask = ones(1, 1, *spatial, dtype=x.dtype, device=x.device)
        if count_include_pad:
            mask = pad(pad(mask, g.pads(spatial, extra=False), value=1.0), g.pads(spatial, regular=False), value=0.0)
        else:
            mask = pad(mask, g.pads(spatial), value=0.0)
        out = total / unfold(mask, g.kernel, g.stride, g.dilation).sum(dims)
    return out if was_batched else out.squeeze(0)


def max_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of (N, C, L) or (C, L); ``stride`` defaults to ``kernel_size``;
    ``return_indices=True`` also returns where each maximum came from (indices into L)."""
    return max_pool(1, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of (N, C, H, W) or (C, H, W); ``stride`` defaults to ``kernel_size``;
    ``ceil_mode`` rounds the output size up; ``return_indices=True`` also returns flat indices into H * W."""
    return max_pool(2, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of (N, C, D, H, W) or (C, D, H, W) (options as :func:`max_pool2d`)."""
    return max_pool(3, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of (N, C, L) or (C, L); ``count_include_pad=False`` leaves the padding out."""
    return avg_pool(1, x, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of (N, C, H, W) or (C, H, W); ``count_include_pad=False`` leaves the padding
    out, ``divisor_override`` replaces the divisor, ``ceil_mode`` rounds the output size up."""
    return avg_pool(2, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of (N, C, D, H, W) or (C, D, H, W) (options as :func:`avg_pool2d`)."""
    return avg_pool(3, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_max_pool(n: int, input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """``F.adaptive_max_pool1d/2d``: max pooling of (N, C, *spatial) or (C, *spatial) to ``output_size``
    (an int, or one entry per spatial dim where None keeps the input's size); with ``return_indices``
    also the flat index of each maximum in its input plane (int64), as PyTorch's."""
    name = f"adaptive_max_pool{n}d"
    x, was_batched = batched(input, n, name)
    spatial = tuple(x.shape[2:])
    if 0 in spatial:
        raise ValueError(f"{name}: expected a non-empty input plane, got input of shape {list(input.shape)}")
    sizes = tuple(s if o is None else o for o, s in zip(_tuple(output_size, n, "output_size"), spatial))
    if any(o < 0 for o in sizes):
        raise ValueError(f"{name}: output_size must not be negative, got {list(sizes)}")
    if not return_indices and name in FUNCTIONS and all(sizes):  # the registry op (which a backend may fuse)
        return FUNCTIONS[name](input, sizes)
    got = window_max(adaptive_windows(x, sizes),
                     adaptive_windows(positions(spatial, x.device), sizes) if return_indices else None, n)
    if was_batched:
        return got
    return tuple(t.squeeze(0) for t in got) if return_indices else got.squeeze(0)


def _adaptive_mean(x: Tensor, output_size: Any) -> Tensor:
    out = _tuple(output_size, 2, "output_size")
    h, w = x.shape[-2], x.shape[-1]
    out = (out[0] or h, out[1] or w)
    rows = []
    for i in range(out[0]):
        r0, r1 = (i * h) // out[0], -(-((i + 1) * h) // out[0])
        cols = []
        for j in range(out[1]):
            c0, c1 = (j * w) // out[1], -(-((j + 1) * w) // out[1])
            cols.append(x[..., r0:r1, c0:c1].mean((-2, -1)))
        rows.append(ops.stack(cols, -1))
    return ops.stack(rows, -2)


def adaptive_windows_mean(x: Tensor, out: Sequence[int]) -> Tensor:
    """Average pooling of (N, C, *spatial) to ``out`` with PyTorch's adaptive windows, one averaging matrix per
    dim (the windows are separable)."""
    for d, o in enumerate(out):
        size = x.shape[2 + d]
        rows = [[0.0] * o for _ in range(size)]
        for j in range(o):
            start, end = j * size // o, -(-(j + 1) * size // o)
            for i in range(start, end):
                rows[i][j] = 1.0 / (end - start)
        weights = tensor(rows, dtype=x.dtype, device=x.device).reshape(size, o)
        x = (x.movedim(2 + d, -1) @ weights).movedim(-1, 2 + d)
    return x


def adaptive_avg_pool2d(x: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed output size, with PyTorch's window bounds."""
    return _adaptive_mean(x, output_size)


def adaptive_max_pool2d(x: Tensor, output_size: Any) -> Tensor:
    """Max pooling to a fixed output size, with PyTorch's window bounds (0 keeps the input's size)."""
    out = _tuple(output_size, 2, "output_size")
    batched = x.ndim == 4
    x = x if batched else x.unsqueeze(0)
    y = window_max(adaptive_windows(x, (out[0] or x.shape[-2], out[1] or x.shape[-1])), None, 2)
    return y if batched else y.squeeze(0)


#: The modes of ``F.interpolate`` and the number of spatial dims each takes (None: any).
_MODES = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2, "bicubic": 2,
          "trilinear": 3}


def _cubic_weights(t: float) -> list[float]:
    """PyTorch's cubic convolution weights (A = -0.75) of the 4 neighbours at offsets -1..2 from ``floor(src)``."""
    a = -0.75

    def near(x: float) -> float:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: float) -> float:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resampling(mode: str, size: int, out: int, scale: float, align_corners: bool, like: Tensor) -> Tensor:
    """The (size, out) matrix whose column ``j`` holds the weights of output ``j``'s input samples along one dim,
    as PyTorch computes them for ``linear`` (the linear modes are separable) and ``bicubic``."""
    rows = [[0.0] * out for _ in range(size)]
    for j in range(out):
        if align_corners:
            src = j * (size - 1) / (out - 1) if out > 1 else 0.0
        else:
            src = scale * (j + 0.5) - 0.5
            if mode == "linear":
                src = max(src, 0.0)
        low = math.floor(src)
        t = src - low
        if mode == "linear":
            low = min(low, size - 1)
            high = min(low + 1, size - 1)
            rows[low][j] += 1 - t
            rows[high][j] += t
        else:
            for k, w in zip(range(low - 1, low + 3), _cubic_weights(t)):
                rows[min(max(k, 0), size - 1)][j] += w
    return tensor(rows, dtype=like.dtype, device=like.device).reshape(size, out)


def interpolate(x: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, ...): ``nearest``, ``nearest-exact`` and ``area`` (any dims),
    ``linear`` (1-D), ``bilinear`` / ``bicubic`` (2-D), ``trilinear`` (3-D), with PyTorch's source coordinates
    (``align_corners``; a ``scale_factor`` is used as given unless ``recompute_scale_factor``)."""
    n = x.ndim - 2
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode must be one of {list(_MODES)}, got {mode!r}")
    if _MODES[mode] not in (None, n):
        raise ValueError(f"interpolate: mode {mode!r} takes a {_MODES[mode] + 2}-D input, got {x.ndim}-D "
                         f"{list(x.shape)}")
    if align_corners is not None and mode not in ("linear", "bilinear", "bicubic", "trilinear"):
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by ferro")
    in_size = x.shape[2:]
    if size is not None:
        if scale_factor is not None:
            raise ValueError("only one of size or scale_factor should be defined")
        out = _tuple(size, n, "size")
        scales = [i / o for i, o in zip(in_size, out)]
    elif scale_factor is not None:
        sf = (scale_factor,) * n if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        out = tuple(math.floor(i * s) for i, s in zip(in_size, sf))
        scales = [i / o for i, o in zip(in_size, out)] if recompute_scale_factor else [1 / s for s in sf]
    else:
        raise ValueError("interpolate: either size or scale_factor must be given")
    if mode == "area":
        return adaptive_windows_mean(x, out)
    if mode in ("nearest", "nearest-exact"):
        key: list[Any] = [slice(None), slice(None)]
        for d in range(n):
            if mode == "nearest":
                idx = [min(math.floor(o * scales[d]), in_size[d] - 1) for o in range(out[d])]
            else:
                idx = [min(math.floor((o + 0.5) * scales[d]), in_size[d] - 1) for o in range(out[d])]
            shape = [1] * n
            shape[d] = out[d]
            key.append(tensor(idx, device=x.device).reshape(shape))
        return x[tuple(key)]
    if mode != "bilinear":  # linear, trilinear, bicubic: one resampling matrix per dim
        kind = "cubic" if mode == "bicubic" else "linear"
        y = x
        for d in range(n):
            weights = _resampling(kind, in_size[d], out[d], scales[d], bool(align_corners), x)
            y = (y.movedim(2 + d, -1) @ weights).movedim(-1, 2 + d)
        return y
    out_h, out_w = out

    def coords(o: int, i: int, scale: float) -> tuple[Tensor, Tensor, Tensor]:
        if align_corners:
            src = [p * (i - 1) / (o - 1) if o > 1 else 0.0 for p in range(o)]
        else:
            src = [max((p + 0.5) * scale - 0.5, 0.0) for p in range(o)]
        lo = [min(math.floor(s), i - 1) for s in src]
        hi = [min(v + 1, i - 1) for v in lo]
        frac = [s - v for s, v in zip(src, lo)]
        return (tensor(lo, device=x.device), tensor(hi, device=x.device),
                tensor(frac, dtype=x.dtype, device=x.device))

    scale_h = (in_size[0] / out_h) if size is not None else scales[0]
    scale_w = (in_size[1] / out_w) if size is not None else scales[1]
    y0, y1, fy = coords(out_h, in_size[0], scale_h)
    x0, x1, fx = coords(out_w, in_size[1], scale_w)
    top = x[:, :, y0.reshape(-1, 1), x0] * (1 - fx) + x[:, :, y0.reshape(-1, 1), x1] * fx
    bottom = x[:, :, y1.reshape(-1, 1), x0] * (1 - fx) + x[:, :, y1.reshape(-1, 1), x1] * fx
    return top * (1 - fy.reshape(-1, 1)) + bottom * fy.reshape(-1, 1)


_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("conv1d", conv1d), ("conv2d", conv2d),
    ("conv3d", conv3d),
    ("conv_transpose1d", conv_transpose1d, ("index_put",)),  # a stride > 1 (the samples have 1)
    ("conv_transpose2d", conv_transpose2d, ("index_put",)),
    ("max_pool1d", max_pool1d),
    ("max_pool2d", max_pool2d),
    ("avg_pool1d", avg_pool1d), ("avg_pool2d", avg_pool2d),
    ("adaptive_avg_pool2d", adaptive_avg_pool2d),
    ("adaptive_max_pool2d", adaptive_max_pool2d),
    ("interpolate", interpolate, ("mul", "add", "matmul", "movedim")),  # the linear modes (the samples are nearest)
]


#: The dtype rules that are not "any dtype", PyTorch CPU's.
_RULES = {"max_pool1d": "real_floating", "max_pool2d": "real_numeric", "adaptive_max_pool2d": "real_floating"}
FUNCTIONS = register_ruled("nn", _ROWS, _RULES)
# Functions of nn.functional that are not (yet) registry ops: the conformance database has no entries for them.
FUNCTIONS.update({"max_pool3d": names_errors("max_pool3d", max_pool3d),
                  "avg_pool3d": names_errors("avg_pool3d", avg_pool3d)})
# A backend's fused kernels run first where the device has them.
for _name in ("conv2d", "conv_transpose2d", "max_pool2d"):
    REGISTRY[_name].fn = FUNCTIONS[_name] = fusable(_name, FUNCTIONS[_name])
